"""What typer imports that pitlog's commands never use, left out of a command's start (issue 19,
item 4: `pitlog --help` and `pitlog replay SHOE` within 1.5x of `import duckdb`). Written
against typer 0.29.1, the version pyproject.toml pins; tests/cli/test_cli_lean.py checks both
halves against typer's own path, so a typer that changes under them fails there.

- Drawing a help, typer imports typer.rich_utils, whose top imports rich.markdown (markdown_it)
  and rich.traceback (pygments): together about a third of an `import duckdb`. The first draws
  help only in rich_markup_mode="markdown", the second only pretty exceptions; pitlog uses
  neither (rich markup, pretty_exceptions_enable=False). `help_drawer()` imports
  typer.rich_utils with the two stood in for by placeholders that fail loudly if ever used,
  then takes the placeholders out of sys.modules, so a later real import gets the real modules.
- Converting an argument, typer builds a pydantic TypeAdapter for each parameter, even one
  left at a None default (importing pydantic costs half an `import duckdb`). `lighten(command)`
  gives each parameter typed str, a Path or a choice (an Enum or a Literal) the conversion
  typer's adapter performs, written out with typer's own helpers; any other value (and every
  error, so its message stays typer's word for word) goes to typer's adapter, built the first
  time one arrives. Ints, floats, datetimes, lists and the rest always go to typer's.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
from typer._param_types import (
    choice_coercion_annotation,
    coerce_cli_choice,
    coerce_cli_path,
    lenient_issubclass,
    routes_to_path,
)
from typer.core import TyperCommand, _TyperParameter

# What typer.rich_utils imports at its top and pitlog's help never draws with.
UNUSED_BY_HELP = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}


def _placeholder(module: str, name: str) -> ModuleType:
    def refuse(*_: Any, **__: Any) -> None:
        raise RuntimeError(f"{module}.{name} was left out of pitlog's help (cli/lean.py); "
                           f"it draws help with rich markup and no pretty exceptions")

    stand_in = ModuleType(module)
    setattr(stand_in, name, type(name, (), {"__init__": refuse}))
    return stand_in


def help_drawer() -> ModuleType:
    """typer.rich_utils, imported without the modules pitlog's help never uses."""
    if "typer.rich_utils" in sys.modules:
        return sys.modules["typer.rich_utils"]
    stood_in = {m: _placeholder(m, n) for m, n in UNUSED_BY_HELP.items() if m not in sys.modules}
    sys.modules.update(stood_in)
    try:
        import typer.rich_utils as drawer
    finally:
        for module, stand_in in stood_in.items():
            if sys.modules.get(module) is stand_in:
                del sys.modules[module]
    return drawer


class LeanCommand(TyperCommand):
    """A command whose help is drawn by `help_drawer()`'s typer.rich_utils and whose
    arguments are converted as `lighten` says."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        lighten(self, ctx)
        return super().parse_args(ctx, args)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        help_drawer()
        super().format_help(ctx, formatter)


@dataclass(frozen=True)
class _WrittenOut(RuntimeParam):
    """typer's conversion of a str, Path or choice parameter without a pydantic TypeAdapter."""

    kind: str  # "str", "path", "choice", or "typer" (typer's own for every value)
    descriptor: TypeDescriptor
    choices: tuple[Any, ...] = ()
    typers: list[RuntimeParam] = field(default_factory=list, compare=False, repr=False)

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        if self.kind == "str" and type(value) is str:
            return value  # typer's adapter: _parse_cli_str (str(value)), then a str as it is
        if self.kind == "choice":
            try:  # what typer's adapter calls; its ValueError becomes pydantic's message below
                return coerce_cli_choice(value, choices=self.choices, ctx=ctx,
                                         case_sensitive=self.parameter_info.case_sensitive)
            except ValueError:
                pass
        if self.kind == "path" and type(value) is str:
            # typer's adapter: Path(value) through pydantic, then coerce_cli_path's checks,
            # which name the file as it was typed: checked as the str, made a Path after.
            try:  # a ValueError (a NUL in the name) is pydantic's message: typer's says it
                checked = coerce_cli_path(value, self.parameter_info, path_type=str,
                                          param=param, ctx=ctx)
                return self.annotation(checked)
            except ValueError:
                pass
        if not self.typers:  # typer's own conversion (a pydantic TypeAdapter), built once
            self.typers.append(build_runtime_param(self.descriptor))
        return self.typers[0]._coerce_value(value, param, ctx)


def written_out(descriptor: TypeDescriptor) -> _WrittenOut:
    """The conversion of a parameter of this type: written out, or typer's when needed."""
    annotation, info = descriptor.annotation, descriptor.parameter_info
    base = {"parameter_info": info, "annotation": annotation, "descriptor": descriptor}
    if info.parser is not None or descriptor.file_annotation is not None:
        return _WrittenOut(kind="typer", **base)
    if annotation is str:
        return _WrittenOut(kind="str", **base)
    choice = choice_coercion_annotation(annotation, info)
    if choice is not None:
        return _WrittenOut(kind="choice", choices=choice[0], **base)
    if (lenient_issubclass(annotation, Path) and routes_to_path(annotation, info)
            and info.path_type is None and not info.allow_dash):
        return _WrittenOut(kind="path", **base)
    return _WrittenOut(kind="typer", **base)


def lighten(command: Any, ctx: Any) -> None:
    """`command`'s parameters converted without pydantic where typer's needs none: its own,
    the ones typer adds after building it (--install-completion) and click's --help."""
    for param in command.get_params(ctx):
        if isinstance(param, _TyperParameter) and param._runtime_param is None:
            param._runtime_param = written_out(param.type_descriptor)

"""cli/lean.py leaves typer's unused imports out of a command's start (issue 19, item 4) and
changes nothing a user sees: every help is drawn byte for byte as typer draws it with its
rich.markdown and rich.traceback, and every argument converts to what typer's pydantic adapter
gives, the same value or the same error. Structural, not timed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from repo_paths import REPO
from typer._click import Context
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param
from typer.core import _TyperParameter

from cli import lean
from cli.app import COMMANDS, app, load

_HELPS = """
import json, sys
if sys.argv[2] == "typer's":  # typer.rich_utils as typer imports it, the two modules real
    import rich.markdown, rich.traceback
from typer.testing import CliRunner
from cli.app import COMMANDS, app
helps, modules = {}, None
for args in [["--help"], [], *([name, "--help"] for name in COMMANDS)]:
    done = CliRunner().invoke(app, args, env={"COLUMNS": "100"})
    helps[" ".join(args)] = [done.exit_code, done.output]
    modules = modules or sorted(sys.modules)  # after `pitlog --help`
drawer = sys.modules["typer.rich_utils"]
try:
    drawer.Markdown("*x*")
    used = "drawn"
except RuntimeError as exc:
    used = str(exc)
import rich.markdown  # after the help, a real import gets the real module
json.dump({"helps": helps, "modules": modules, "placeholder": used,
           "real_after": hasattr(rich.markdown, "Heading")}, open(sys.argv[1], "w"))
"""


def _draw(tmp_path: Path, which: str) -> dict[str, Any]:
    report = tmp_path / f"{which}.json"
    proc = subprocess.run([sys.executable, "-c", _HELPS, str(report), which], cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PITLOG_DEBUG": ""})
    assert proc.returncode == 0, proc.stderr
    return json.loads(report.read_text())


def test_every_help_is_drawn_as_typer_draws_it_without_markdown_or_traceback(
        tmp_path: Path) -> None:
    lean_run, typers = _draw(tmp_path, "lean"), _draw(tmp_path, "typer's")
    assert set(lean_run["helps"]) == {"--help", "", *(f"{n} --help" for n in COMMANDS)}
    for args, (code, text) in lean_run["helps"].items():
        assert code == (2 if args == "" else 0), args  # `pitlog` alone: the help, then 2
        assert "Example: pitlog" in " ".join(text.split()), args
        assert [code, text] == typers["helps"][args], args  # byte for byte
    # What `pitlog --help` left out: rich's markdown (markdown_it), its traceback (pygments).
    left_out = {"rich.markdown", "markdown_it", "rich.traceback", "rich.syntax", "pygments"}
    assert not left_out & set(lean_run["modules"])
    assert left_out <= set(typers["modules"])  # the check can fail
    # A placeholder fails loudly if typer ever draws with it; a later import is the real one.
    assert "left out of pitlog's help" in lean_run["placeholder"]
    assert typers["placeholder"] == "drawn"
    assert lean_run["real_after"] is True


def test_pitlog_draws_help_as_the_placeholders_assume() -> None:
    """The placeholders stand in for what typer uses only in markdown mode and for pretty
    exceptions: pitlog's app uses rich markup and no pretty exceptions."""
    assert app.rich_markup_mode == "rich"
    assert app.pretty_exceptions_enable is False


def _params() -> list[tuple[str, Any, Any]]:
    """Every typer parameter of every command, with a context to convert it in."""
    found = []
    for name in COMMANDS:
        command = load(name)
        ctx = Context(command, info_name=name)
        lean.lighten(command, ctx)
        found += [(f"{name} {p.name}", p, ctx) for p in command.get_params(ctx)
                  if isinstance(p, _TyperParameter)]
    return found


PARAMS = _params()


def _outcome(convert: Any, value: Any, param: Any, ctx: Any) -> tuple[str, Any]:
    try:
        return "value", convert(value, param=param, ctx=ctx)
    except BadParameter as exc:
        return "error", exc.format_message()
    except Exception as exc:  # noqa: BLE001 - anything else must be the same too
        return type(exc).__name__, str(exc)


def _same(value: Any, param: Any, ctx: Any) -> None:
    ours = param.get_runtime_param()
    assert isinstance(ours, lean._WrittenOut)
    typers = build_runtime_param(param.type_descriptor)
    mine, theirs = _outcome(ours.coerce, value, param, ctx), _outcome(typers.coerce, value,
                                                                     param, ctx)
    assert mine == theirs, (param.name, value)
    if mine[0] == "value":
        assert type(mine[1]) is type(theirs[1])


def test_every_parameter_is_lightened_and_the_common_types_written_out() -> None:
    kinds = {label: p.get_runtime_param().kind for label, p, _ in PARAMS}
    assert kinds["replay shoe"] == "str" and kinds["replay db"] == "path"
    assert kinds["replay format"] == "choice"
    assert {"str", "path", "choice", "typer"} <= set(kinds.values())


@pytest.mark.parametrize(("label", "param", "ctx"), [
    pytest.param(*found, id=found[0]) for found in PARAMS
    if found[1].get_runtime_param().kind != "typer"])
def test_each_written_out_parameter_converts_as_typers_adapter(
        label: str, param: Any, ctx: Any, tmp_path: Path) -> None:
    (tmp_path / "a file").write_text("x")
    (tmp_path / "a dir").mkdir()
    values: list[Any] = [
        "", " ", "x", "-", "T01-S0001", "table", "TABLE", "json", "Json", "parquet", "nope",
        "a\x00b", "a\udcffb", "é", str(tmp_path / "a file"), str(tmp_path / "a dir"),
        str(tmp_path / "missing"), str(tmp_path) + "//a file/", "./x/../y", 3, 2.5, b"bytes",
        Path("p"), None, ("a", "b")]
    values += list(param.type_descriptor.choices or ())
    if isinstance(param.default, str | Enum | Path):
        values.append(param.default)
    for value in values:
        _same(value, param, ctx)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([p for p in PARAMS if p[1].get_runtime_param().kind != "typer"]),
       st.one_of(st.text(), st.text(alphabet="abcTABLEjsonparquet/.-\\ \x00"),
                 st.binary(max_size=8), st.integers()))
def test_any_value_converts_as_typers_adapter(found: tuple[str, Any, Any], value: Any) -> None:
    _, param, ctx = found
    _same(value, param, ctx)


def test_typers_adapter_is_built_only_when_a_value_needs_it_and_once() -> None:
    command = load("replay")
    ctx = Context(command, info_name="replay")
    lean.lighten(command, ctx)
    param, = [p for p in command.params if p.name == "db"]
    ours = param.get_runtime_param()
    assert ours.coerce(None, param=param, ctx=ctx) is None  # the default: nothing built
    assert ours.coerce("x.duckdb", param=param, ctx=ctx) == Path("x.duckdb")
    assert ours.typers == []
    assert ours.coerce(Path("y.duckdb"), param=param, ctx=ctx) == Path("y.duckdb")
    first, = ours.typers
    assert ours.coerce(Path("z.duckdb"), param=param, ctx=ctx) == Path("z.duckdb")
    assert ours.typers == [first]

"""The `pitlog` command: one Typer app; each command lives in a small module of its own.

Every PitlogError becomes one line, `Error: ...`, and exit code 1: never a traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import click
import typer
from typer.core import TyperGroup
from typer.models import CommandInfo

from events.errors import PitlogError
from events.text import visible

# Every command: its module, function and help panel (`pitlog --help` groups the commands by
# who uses them). A command's module is imported only when that command runs, or when the help
# lists every command (issue 19: `pitlog replay` must not pay for the simulator's, the report's
# or the server's imports). Since the help imports every command module, the pitlog modules that
# load DuckDB, fastavro, pyarrow, matplotlib or the server are imported inside the commands that
# use them, for start-up alone (tests/cli/test_cli_imports.py);
# tests/events/test_import_contract.py allows exactly those imports inside functions (START_UP).
# A module or function missing from this table's entries is an ImportError or AttributeError,
# never a command silently left out.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": ("cli.commands_core", "demo", "Operations"),
    "simulate": ("cli.commands_core", "simulate_cmd", "Operations"),
    "project": ("cli.commands_core", "project_cmd", "Operations"),
    "shoes": ("cli.commands_core", "shoes", "Surveillance"),
    "replay": ("cli.commands_core", "replay", "Surveillance"),
    "theo": ("cli.commands_core", "theo", "Audit"),
    "anomalies": ("cli.commands_surveillance", "anomalies_cmd", "Surveillance"),
    "dispute": ("cli.commands_surveillance", "dispute_cmd", "Surveillance"),
    "reconcile": ("cli.commands_audit", "reconcile_cmd", "Audit"),
    "ledger": ("cli.commands_audit", "ledger_cmd", "Audit"),
    "conservation": ("cli.commands_audit", "conservation_cmd", "Audit"),
    "sql": ("cli.commands_audit", "sql_cmd", "Audit"),
    "report": ("cli.commands_audit", "report_cmd", "Audit"),
    "verify": ("cli.commands_integrity", "verify", "Integrity"),
    "ingest": ("cli.commands_integrity", "ingest_cmd", "Operations"),
    "serve": ("cli.serve", "serve_cmd", "Operations"),
}
PANELS: dict[str, tuple[str, ...]] = {}
for _name, (_, _, _panel) in COMMANDS.items():
    PANELS[_panel] = (*PANELS.get(_panel, ()), _name)


class _LazyGroup(TyperGroup):
    """The commands of COMMANDS, each built from its function the first time it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            if cmd_name in COMMANDS:
                self.commands[cmd_name] = _load(cmd_name)
            else:  # not a command: load them all, so the "did you mean" suggestions see them
                for name in COMMANDS:
                    self.get_command(ctx, name)
        return super().get_command(ctx, cmd_name)


def _load(name: str) -> click.Command:
    module, function, panel = COMMANDS[name]
    callback = getattr(importlib.import_module(module), function)
    info = CommandInfo(name=name, callback=callback, rich_help_panel=panel)
    return typer.main.get_command_from_info(
        info, pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode)


app = typer.Typer(
    name="pitlog", no_args_is_help=True, add_completion=True, pretty_exceptions_enable=False,
    cls=_LazyGroup,
    help="Event-sourced audit and surveillance for red dog tables.\n\n"
         "Example: pitlog demo",
)


def _versions(value: bool) -> None:
    if not value:
        return
    def of(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "unknown"
    from projections.store import STORAGE_VERSION

    typer.echo(f"pitlog {of('pitlog')} (DuckDB {of('duckdb')}, database files written in "
               f"storage version {STORAGE_VERSION})")
    raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[bool, typer.Option(
        "--version", callback=_versions, is_eager=True,
        help="Print pitlog's version (and DuckDB's) and exit.")] = False,
) -> None:
    """Event-sourced audit and surveillance for red dog tables.

    Example: pitlog demo
    """


def fail(message: str) -> None:
    # Messages may quote device input: one line, no control characters (events/text.py).
    typer.echo(f"Error: {visible(message)}", err=True)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())  # type: ignore[union-attr]
    except (OSError, AttributeError, ValueError):
        pass


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning every known failure into one `Error:` line."""
    try:
        result = app(args=argv, standalone_mode=False, prog_name="pitlog")
    except PitlogError as exc:
        fail(str(exc))
        sys.exit(1)
    except typer.Abort:
        fail("interrupted")
        sys.exit(130)
    except typer.TyperException as exc:  # bad argument, missing option, no such command or file
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.exit(0)  # `pitlog` alone: the help was printed, nothing went wrong
        fail(exc.format_message())  # type: ignore[attr-defined]
        sys.exit(1)
    except KeyboardInterrupt:
        fail("interrupted")
        sys.exit(130)
    except BrokenPipeError:
        _quiet_stdout()
        sys.exit(0)
    except SystemExit as exc:
        # Click and Rich turn a closed pipe (`pitlog replay SHOE | head`) into exit code 1
        # (Click swaps stdout for its PacifyFlushWrapper, Rich raises from the BrokenPipeError);
        # the reader had all it wanted: exit 0.
        if exc.code == 1 and (type(sys.stdout).__name__ == "PacifyFlushWrapper"
                              or isinstance(exc.__context__, BrokenPipeError)):
            _quiet_stdout()
            sys.exit(0)
        raise
    except Exception as exc:  # noqa: BLE001 - a user must never see a traceback
        if os.environ.get("PITLOG_DEBUG"):
            raise
        fail(f"internal error ({type(exc).__name__}: {exc}); rerun with PITLOG_DEBUG=1 "
             f"and report the traceback")
        sys.exit(1)
    if isinstance(result, int) and result:
        if result == 130:  # Typer turns Ctrl-C into a silent exit 130: say what happened
            fail("interrupted")
        sys.exit(result)


if __name__ == "__main__":
    main()

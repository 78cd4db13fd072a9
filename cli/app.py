"""The `pitlog` command: one Typer app; each command lives in a small module of its own.

Every PitlogError becomes one line, `Error: ...`, and exit code 1: never a traceback.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import typer

from events.errors import PitlogError
from events.text import visible

app = typer.Typer(
    name="pitlog", no_args_is_help=True, add_completion=True, pretty_exceptions_enable=False,
    help="Event-sourced audit and surveillance for red dog tables.\n\n"
         "Example: pitlog demo",
)


def _register() -> None:
    # Imported here so each command module can import `app`-free helpers without cycles.
    from cli import commands_core

    commands_core.register(app)
    for name in ("commands_surveillance", "commands_audit", "commands_integrity", "serve"):
        try:
            module = __import__(f"cli.{name}", fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != f"cli.{name}":
                raise
            continue
        module.register(app)


_register()

# `pitlog --help` groups the commands by who uses them (Typer's rich help panels). A command
# not listed here (one added later) shows under "Commands" until it is.
PANELS = {
    "Surveillance": ("anomalies", "dispute", "replay", "shoes"),
    "Audit": ("reconcile", "ledger", "conservation", "report", "sql", "theo"),
    "Operations": ("demo", "simulate", "project", "ingest", "serve"),
    "Integrity": ("verify",),
}
for _info in app.registered_commands:
    _panel = next((p for p, names in PANELS.items() if _info.name in names), None)
    if not isinstance(_info.rich_help_panel, str) and _panel is not None:
        _info.rich_help_panel = _panel


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

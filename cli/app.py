"""The `pitlog` command: one Typer app; each command lives in a small module of its own.

Every PitlogError becomes one line, `Error: ...`, and exit code 1: never a traceback.
"""

from __future__ import annotations

import os
import sys

import typer

from events.errors import PitlogError

app = typer.Typer(
    name="pitlog", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
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


def fail(message: str) -> None:
    typer.echo(f"Error: {message}", err=True)


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
        sys.exit(0)
    except Exception as exc:  # noqa: BLE001 - a user must never see a traceback
        if os.environ.get("PITLOG_DEBUG"):
            raise
        fail(f"internal error ({type(exc).__name__}: {exc}); rerun with PITLOG_DEBUG=1 "
             f"and report the traceback")
        sys.exit(1)
    if isinstance(result, int) and result:
        sys.exit(result)


if __name__ == "__main__":
    main()

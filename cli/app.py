"""The `pitlog` command: one Typer app whose commands live in cli/commands/, one module per
concern, each imported only when one of its commands runs or shows its own help.

`pitlog --help` lists every command from COMMANDS alone (name, panel, one-line summary), so it
imports no command module: no DuckDB, pyarrow, numpy, fastavro or the simulator (issue 19,
item 4: a command's start pays only for what it needs; tests/cli/test_cli_imports.py). A
command module imports what it needs at its top. A command of COMMANDS whose module is missing
fails every call, `--help` included, and one whose function is missing fails when it is asked
for: never a command silently left out (issue 15). Every PitlogError becomes one line,
`Error: ...`, and exit code 1: never a traceback.
"""

from __future__ import annotations

import errno
import inspect
import os
import sys
from importlib import import_module
from importlib.util import find_spec
from typing import Annotated, Any, NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandInfo

from cli.lean import LeanCommand, help_drawer, lighten
from cli.verdict import closed_pipe_code
from events.errors import NO_ROOM, PitlogError, Terminated, first_line
from events.text import visible
from projections import localtime
from projections.defaults import STORAGE_VERSION

PACKAGE = "cli.commands"


class Entry(NamedTuple):
    module: str  # in cli/commands/
    function: str
    panel: str  # `pitlog --help` groups the commands by who uses them
    summary: str  # what `pitlog --help` shows: the first paragraph of the function's docstring


# Every command, in the order `pitlog --help` lists them within each panel. A summary is the
# first paragraph of its command's docstring on one line, checked equal by
# tests/cli/test_cli_imports.py, so the help list never drifts from the commands' own help.
COMMANDS: dict[str, Entry] = {
    "demo": Entry("demo", "demo", "Operations", (
        "Simulate a short evening at four tables, with irregularities, project it, and "
        "print the summary and the anomalies.")),
    "simulate": Entry("simulate", "simulate_cmd", "Operations", (
        "Play a seeded evening at the tables and record every event to the log.")),
    "project": Entry("project", "project_cmd", "Operations", (
        "Bring the DuckDB views up to date with the log (only new events are read). With "
        "--follow, --log-level info logs one line per committed batch (records and lag).")),
    "shoes": Entry("replay", "shoes", "Surveillance", (
        "List the shoes: table, decks, when opened and closed, rounds, cards, burns, "
        "dealers.")),
    "replay": Entry("replay", "replay", "Surveillance", (
        "Replay one shoe event by event (times, cards, announcements, wagers, "
        "settlements), then its hands in discard-rack order.")),
    "theo": Entry("theo", "theo", "Audit", (
        "The exact house edge from the combinatorics, as a fraction and a percentage.")),
    "anomalies": Entry("anomalies", "anomalies_cmd", "Surveillance", (
        "The flagged anomalies: each with its code, severity, place, the sequence numbers"
        " of the events that prove it, a one-line explanation and the rule it cites "
        "(docs/anomalies.md).")),
    "dispute": Entry("dispute", "dispute_cmd", "Surveillance", (
        "Rebuild the hand in play at a table at a moment: its cards in discard-rack order"
        " with the time each left the shoe, every announcement, every wager and raise per"
        " seat, the settlement the rules require next to the one made, and the anomalies "
        "that touch the round. Times are shown on the casino's clock (--tz or PITLOG_TZ).")),
    "reconcile": Entry("reconcile", "reconcile_cmd", "Audit", (
        "Handle, paid, collected, returned, net win and hold, against the exact "
        "theoretical win (the house edge for the shoe's decks and the table's paytable, "
        "applied to the wagers and raises actually made), with the variance in cents and "
        "in % and flags.")),
    "ledger": Entry("reconcile", "ledger_cmd", "Audit", (
        "The settlement ledger: every wager and raise with the decision the rules and the"
        " table's paytable require next to the settlements recorded; unsettled and doubly"
        " settled wagers included. The table format shows the main columns; json, csv and"
        " parquet all of them.")),
    "conservation": Entry("reconcile", "conservation_cmd", "Audit", (
        "Check money in = money out + net win, to the cent, per table and gaming day: "
        "handle = paid winnings + stakes returned to winners + voids returned + "
        "(collected - paid), with stakes still in play set aside. Exit code 1 if any "
        "group does not balance.")),
    "sql": Entry("sql", "sql_cmd", "Audit", (
        "Run one read-only query over the views (ledger, paytables, rounds, wagers, ...) "
        "on a read-only connection that cannot read files or URLs, load extensions or "
        "change its own settings, within a time and memory limit. Anything that could "
        "write is refused.")),
    "report": Entry("report", "report_cmd", "Audit", (
        "Write a self-contained HTML report for one gaming day (default: the latest): "
        "hold against theoretical by table and by dealer, anomalies over time, outcome "
        "frequencies against the combinatorics, and the conservation check. No scripts, "
        "nothing fetched.")),
    "verify": Entry("verify", "verify", "Integrity", (
        "Check every table stream on the log: gapless sequence numbers (SEQUENCE_GAP) and"
        " the hash chain (CHAIN_BROKEN), each located by partition, offset and seq; then "
        "a summary per table. Exit code 1 if anything is broken.")),
    "ingest": Entry("ingest", "ingest_cmd", "Operations", (
        "Record device JSON lines (card-reading shoes, shufflers, dealer terminals) as "
        "events. Each bad line is reported with its line number and reason and "
        "quarantined; every good line is recorded. Exit code 0 if every line was "
        "recorded, 1 if any was rejected.")),
    "serve": Entry("serve", "serve_cmd", "Operations", (
        "Follow the log into the database (as `project --follow` does) and serve it read-"
        "only over HTTP: the JSON API (/api/...), alerts as Server-Sent Events (/alerts),"
        " /health and /metrics. The query commands (shoes, anomalies, ...) use it "
        "automatically. Stop with Ctrl-C or SIGTERM. Binding beyond loopback needs "
        "PITLOG_TOKEN (sent as a bearer token).")),
}
PANELS: dict[str, tuple[str, ...]] = {}
for _name, _entry in COMMANDS.items():
    PANELS[_entry.panel] = (*PANELS.get(_entry.panel, ()), _name)


def summary_of(command: Any) -> str:
    """A command's help as COMMANDS states it: the first paragraph, on one line."""
    return _one_line(inspect.cleandoc(command.help or "").split("\n\n")[0])


def _one_line(paragraph: str) -> str:
    return " ".join(paragraph.split())


class _Listed(TyperCommand):
    """A command as `pitlog --help` and shell completion list it: name, panel and summary,
    without importing its module. Asked to run (or for its own help), it loads the real one."""

    def __init__(self, name: str, entry: Entry) -> None:
        super().__init__(name=name, help=entry.summary, short_help=entry.summary,
                         rich_help_panel=entry.panel)

    def make_context(self, info_name: str | None, args: list[str],
                     parent: Any = None, **extra: Any) -> Any:
        real = load(self.name or "")
        return real.make_context(info_name, args, parent=parent, **extra)


class _LazyGroup(TyperGroup):
    """click's lazy subcommands: each command of COMMANDS is loaded the first time it is asked
    for by name; the group's help and completion list them from COMMANDS alone."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        # Known by name from the start: "did you mean" suggestions see every command.
        self.commands.update({name: _Listed(name, entry) for name, entry in COMMANDS.items()})
        self._listing = 0
        # A packaging slip (a command module left out) fails every call, `--help` included,
        # instead of dropping a command: its file is looked for, not imported.
        for name, entry in COMMANDS.items():
            if find_spec(f"{PACKAGE}.{entry.module}") is None:
                raise ModuleNotFoundError(
                    f"the module {PACKAGE}.{entry.module} of the command {name!r} is missing: "
                    f"this installation of pitlog is incomplete, reinstall it",
                    name=f"{PACKAGE}.{entry.module}")

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        lighten(self, ctx)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = self.commands.get(cmd_name)
        if isinstance(found, _Listed) and not self._listing:
            found = self.commands[cmd_name] = load(cmd_name)
        return found

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing += 1  # the list of commands: their summaries, no module imported
        help_drawer()
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing -= 1

    def shell_complete(self, ctx: Any, incomplete: str) -> Any:
        self._listing += 1
        try:
            return super().shell_complete(ctx, incomplete)
        finally:
            self._listing -= 1


def reflowed(doc: str) -> str:
    """A docstring as its help: each paragraph's lines joined into one, which the terminal's
    width then wraps (typer keeps a later paragraph's line breaks in rich markup, so a
    docstring wrapped at 100 columns broke mid-sentence at 80), but for a line beginning
    "(or:", another example, kept on a line of its own."""
    return "\n\n".join(_one_line(paragraph).replace(" (or: ", "\n(or: ")
                       for paragraph in inspect.cleandoc(doc).split("\n\n"))


def load(name: str) -> Any:
    """The click command of COMMANDS[name], built from its function (importing its module)."""
    entry = COMMANDS[name]
    callback = getattr(import_module(f"{PACKAGE}.{entry.module}"), entry.function)
    info = CommandInfo(name=name, callback=callback, rich_help_panel=entry.panel,
                       cls=LeanCommand, help=reflowed(callback.__doc__ or ""))
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
    # importlib.metadata costs a tenth of a second: only for --version.
    from importlib.metadata import PackageNotFoundError, version

    def of(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "unknown"

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


_NO_ACCESS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.EISDIR,
              errno.ENOTDIR}


_NO_ZONE_READ = frozenset({"theo"})


def _check_zone_setting(args: list[str]) -> None:
    """A PITLOG_TZ that names no zone, refused before any command runs: the commands without
    --tz (simulate, project, ingest, demo) read it only to print their summary, after they
    had written (an outside review, session 38). Not when --tz is given, which overrides it,
    nor for help, the version, a bare `pitlog` or `theo`, which read no zone. An empty --tz
    is refused here too, before any command reads it as none given."""
    asks_help = any(a in ("--help", "-h", "--version") for a in args)
    tz_given = False
    for n, a in enumerate(args):
        tz_given = tz_given or a == "--tz" or a.startswith("--tz=")
        given = a[len("--tz="):] if a.startswith("--tz=") else \
            args[n + 1] if a == "--tz" and n + 1 < len(args) else None
        if given is not None and not given.strip() and not asks_help:
            # `--tz ""` was taken as no zone given, so PITLOG_TZ or UTC (an outside review,
            # session 39): an empty value named nothing
            raise PitlogError("--tz is empty: give the casino's zone (an IANA name such as "
                              "America/New_York, UTC, or an offset such as -05:00), or leave "
                              "the option out")
    value = os.environ.get(localtime.ENV)
    # `pitlog` alone prints the help and `theo` shows no time: neither reads the zone
    reads_no_zone = not args or args[0] in _NO_ZONE_READ
    if value and not asks_help and not reads_no_zone and not tz_given:
        try:
            localtime.parse_zone(value)
        except PitlogError as exc:
            raise PitlogError(f"{localtime.ENV}: {exc}; or unset it (UTC)") from None


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning every known failure into one `Error:` line."""
    try:
        _check_zone_setting(sys.argv[1:] if argv is None else argv)
        result = app(args=argv, standalone_mode=False, prog_name="pitlog")
    except PitlogError as exc:
        fail(str(exc))
        sys.exit(1)
    except typer.Abort as exc:  # Click's for a KeyboardInterrupt, which it wraps
        if isinstance(exc.__cause__, Terminated):
            fail("terminated")
            sys.exit(143)
        fail("interrupted")
        sys.exit(130)
    except typer.TyperException as exc:  # bad argument, missing option, no such command or file
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.exit(0)  # `pitlog` alone: the help was printed, nothing went wrong
        fail(exc.format_message())  # type: ignore[attr-defined]
        sys.exit(1)
    except KeyboardInterrupt as exc:
        fail("terminated" if isinstance(exc, Terminated) else "interrupted")
        sys.exit(143 if isinstance(exc, Terminated) else 130)
    except BrokenPipeError:
        _quiet_stdout()
        sys.exit(closed_pipe_code())
    except OSError as exc:  # the machine's answer, not a fault of pitlog: e.g. a full disk
        if os.environ.get("PITLOG_DEBUG"):
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        todo = ("; free some space or write elsewhere" if exc.errno in NO_ROOM else
                "; check the path and its permissions" if exc.errno in _NO_ACCESS else "")
        fail(f"{exc.strerror or exc}{where}{todo}")
        _quiet_stdout()  # the interpreter's last flush of stdout would fail again
        sys.exit(1)
    except SystemExit as exc:
        # Click and Rich turn a closed pipe (`pitlog replay SHOE | head`) into exit code 1
        # (Click swaps stdout for its PacifyFlushWrapper, Rich raises from the BrokenPipeError);
        # the reader had all it wanted: exit 0, or the verdict the command had already reached
        # (cli/verdict.py: verify's broken log, conservation's imbalance).
        if exc.code == 1 and (type(sys.stdout).__name__ == "PacifyFlushWrapper"
                              or isinstance(exc.__context__, BrokenPipeError)):
            _quiet_stdout()
            sys.exit(closed_pipe_code())
        raise
    except Exception as exc:  # noqa: BLE001 - a user must never see a traceback
        if os.environ.get("PITLOG_DEBUG"):
            raise
        if type(exc).__name__ == "OutOfMemoryException":  # duckdb's, not imported for a name
            fail(f"DuckDB ran out of memory ({first_line(exc)}); nothing was lost: give it "
                 f"more (--memory-limit 1GB where the command has it, or PITLOG_MEMORY_LIMIT) "
                 f"and run again")
            sys.exit(1)
        fail(f"internal error ({type(exc).__name__}: {exc}); rerun with PITLOG_DEBUG=1 "
             f"and report the traceback")
        sys.exit(1)
    if isinstance(result, int) and result:
        if result == 130 and Terminated.received:  # SIGTERM, turned into 130 by Typer too
            fail("terminated")
            sys.exit(143)
        if result == 130:  # Typer turns Ctrl-C into a silent exit 130: say what happened
            fail("interrupted")
        sys.exit(result)


if __name__ == "__main__":
    main()

"""Options shared by several commands, defined once (STYLE: sqlite-utils' shared options)."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import typer

from cli.output import Format, Summary
from events.errors import PitlogError
from events.log.base import DEFAULT_DATA_DIR, EventLog
from events.log.embedded.layout import is_log_folder
from events.log.registry import default_log_uri, open_log
from projections.localtime import casino_zone, parse_local
from projections.store_files import store_owning


def given(value: str | None) -> str | None:
    """An option's value, refused when empty (`--table ""`): on the file it names no table,
    while a running server reads an empty parameter as none given (every table): the same
    command must not answer both ways. An empty --log or --db (a script's unset variable)
    would otherwise be the default log or the current folder (an outside review, session 38)."""
    if value is not None and not value.strip():
        raise typer.BadParameter("is empty: give a value or leave the option out")
    return value


LogOpt = Annotated[str | None, typer.Option(
    "--log", envvar="PITLOG_LOG", show_default=False, callback=given,
    help="Event log: a folder / file:///path (embedded; default: the folder log in "
         "./pitlog-data) or a Kafka topic, kafka://HOST:PORT/TOPIC.")]
DbOpt = Annotated[Path | None, typer.Option(
    "--db", envvar="PITLOG_DB", show_default=False,
    help="DuckDB file of the views (default: pitlog.duckdb in ./pitlog-data).")]
FormatOpt = Annotated[Format, typer.Option(
    "--format", "-f", help="Output: table for people; json (an array of objects), jsonl (one "
                           "object a line), csv or parquet (needs --out) for machines, written "
                           "by DuckDB with the columns' own types.")]
SummaryOpt = Annotated[Summary, typer.Option(
    "--format", "-f", help="Output: table for people; json, jsonl or csv for machines.")]


def new_file(path: Path | None) -> Path | None:
    """Typer callback of every option naming a file to write: its folder must exist and it must
    not be a folder, checked when the command line is parsed, before anything is recorded."""
    if path is None:
        return None
    if path.is_dir():
        raise typer.BadParameter(f"{path} is a folder: name a file in it")
    folder = path.parent
    if not folder.is_dir():
        # The nearest of the folder and its parents that is there (a link too, even to
        # nothing): a file, or a link to no folder, is in the way, and `mkdir -p` cannot make
        # the folder (a review, session 41: it was advised).
        there = next((p for p in (folder, *folder.parents) if p.exists() or p.is_symlink()),
                     None)
        if there is not None and not there.is_dir():
            what = "a link to no folder" if there.is_symlink() else "a file, not a folder"
            raise typer.BadParameter(f"{there} is {what}, so the folder {folder} cannot be "
                                     f"made there: name a file in a folder")
        raise typer.BadParameter(f"the folder {folder} does not exist: create it first "
                                 f"(mkdir -p {folder}) or write somewhere else")
    _refuse_pitlog_data(path)
    return path


def _refuse_pitlog_data(path: Path) -> None:
    """A file to write must not be pitlog's own data: a file in an embedded event log's folder
    (its segments, index, meta.json, alerts), a DuckDB database (a store, its snapshot) or a
    store's write-ahead log or index of ids. Written over, the log loses events and the store
    its rows, with no error at the time. A symbolic link is judged by where it leads."""
    real = path.resolve()
    for folder in (path.parent, real.parent):
        if is_log_folder(folder):
            raise typer.BadParameter(f"{path} is in the event log folder {folder}, whose "
                                     f"files only pitlog writes: write to a file outside it")
    store = store_owning(path) or store_owning(real)
    if store is not None:
        what = "is the database" if store == path else "belongs to the database"
        raise typer.BadParameter(f"{path} {what} {store}: it would be overwritten; write to "
                                 f"another file")


OutOpt = Annotated[Path | None, typer.Option(
    "--out", "-o", callback=new_file,
    help="Write the rows to this file instead of the screen.")]
CreateTopicOpt = Annotated[bool, typer.Option(
    "--create-topic", help="Create the Kafka topic of --log if it does not exist (otherwise a "
                           "missing topic is an error: a typo must not start a new log).")]


def open_for_writing(uri: str, create_topic: bool) -> EventLog:
    """A writer's log: an embedded log folder is created when new; a Kafka topic only when
    --create-topic says so."""
    return open_log(uri, create=create_topic or not uri.startswith("kafka://"))


def log_uri(value: str | None) -> str:
    return value or default_log_uri()


def db_path(value: Path | None) -> Path:
    # An empty --db is Path("."), the current folder (a script's unset variable; an outside
    # review, session 38): refused here, not by a parser of its own, which would build typer's
    # converter for every command (cli/lean.py).
    if value == Path("."):
        raise PitlogError("--db names the current folder (or is empty): give a value or leave "
                          "the option out")
    return value or Path(os.environ.get("PITLOG_DB") or DEFAULT_DATA_DIR / "pitlog.duckdb")


TableOpt = Annotated[str | None, typer.Option("--table", help="Only this table, e.g. T01.",
                                              callback=given)]
ShoeOpt = Annotated[str | None, typer.Option("--shoe", help="Only this shoe, e.g. T01-S0001.",
                                             callback=given)]
DayOpt = Annotated[str | None, typer.Option(
    "--day", help="Only this gaming day, YYYY-MM-DD (from --gaming-day-start on the --tz clock "
                  "to the next day's start).")]
DayStartOpt = Annotated[str, typer.Option(
    "--gaming-day-start", help="When the gaming day begins, local HH:MM.")]
ShiftsOpt = Annotated[str, typer.Option(
    "--shifts", help="Shift start times, local HH:MM, comma-separated; each shift runs to "
                     "the next one's start.")]
TzOpt = Annotated[str | None, typer.Option(
    "--tz", envvar="PITLOG_TZ", show_default=False,
    help="The casino's time zone (default UTC): gaming days and shifts run on its clock, times "
         "given without a zone are read on it and the table format shows every time in it. An "
         "IANA name (America/New_York) or an offset (-05:00).")]
ByOpt = Annotated[list[str] | None, typer.Option(
    "--by", help="Group by table, dealer, shift, day or shoe; repeat to combine "
                 "(--by table --by day). A shift is a shift on a gaming day.")]


@dataclass(frozen=True, slots=True)
class Grouping:
    """The options of a money audit grouped by table, dealer, shift, gaming day or shoe
    (reconcile, conservation), as given; declared once, as `grouped` adds them."""

    by: ByOpt = None
    tz: TzOpt = None
    gaming_day_start: DayStartOpt = "06:00"
    shifts: ShiftsOpt = "06:00,14:00,22:00"
    day: DayOpt = None
    table: TableOpt = None


def grouped(command: Callable[..., None]) -> Callable[..., None]:
    """The command with Grouping's fields as its first options (in their order, with their
    help), handed to it as one Grouping, its first parameter: Typer reads the options from
    the signature, so they are written once, in Grouping."""
    own = list(inspect.signature(command, eval_str=True).parameters.values())[1:]
    hints = get_type_hints(Grouping, include_extras=True)  # the Annotated options themselves
    options = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                                 annotation=hints[f.name]) for f in fields(Grouping)]

    @functools.wraps(command)
    def run(**given: Any) -> None:
        command(Grouping(**{f.name: given.pop(f.name) for f in fields(Grouping)}), **given)

    parameters = [*options, *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own)]
    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    return run


def parse_time(text: str, zone: str | None, what: str) -> datetime:
    """An ISO 8601 time; one without a zone is on the casino's clock (--tz)."""
    return parse_local(text, casino_zone(zone), what)

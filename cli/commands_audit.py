"""Audit commands: reconcile, ledger, conservation, sql and report.

Each opens the database read-only (or its snapshot while a projector writes), calls one library
function from projections/, and renders the rows.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.client import ServerOpt, ask
from cli.listing import LimitOpt, limited
from cli.options import (
    DayOpt,
    DayStartOpt,
    DbOpt,
    FormatOpt,
    OutOpt,
    TableOpt,
    db_path,
    new_file,
)
from cli.output import Format, render
from cli.people import for_people
from cli.progress import progress_bar
from events.errors import PitlogError
from projections.defaults import DEFAULT_SIGMA

ByOpt = Annotated[list[str] | None, typer.Option(
    "--by", help="Group by table, dealer, shift, day or shoe; repeat to combine "
                 "(--by table --by day). A shift is a shift on a gaming day.")]
TzOpt = Annotated[str, typer.Option(
    "--tz", envvar="PITLOG_TZ",
    help="The casino's time zone for gaming days and shifts: an IANA name "
         "(America/New_York) or a fixed offset (-05:00).")]
ShiftsOpt = Annotated[str, typer.Option(
    "--shifts", help="Shift start times, local HH:MM, comma-separated; each shift runs to "
                     "the next one's start.")]

# What the table format shows (json, csv and parquet have every column).
LEDGER_SUMMARY = ["shoe_id", "round_no", "seat", "wager_kind", "amount_cents",
                  "expected_outcome", "expected_odds", "expected_net_win_cents",
                  "actual_outcome", "actual_odds", "actual_net_win_cents", "status"]
RECONCILE_SUMMARY = ["rounds", "handle_cents", "net_win_cents", "hold_pct", "theo_win_cents",
                     "theo_hold_pct", "variance_cents", "z_score", "flags"]
CONSERVATION_SUMMARY = ["money_in_cents", "money_out_cents", "net_win_cents", "open_cents",
                        "difference_cents", "balanced"]


@contextmanager
def _reading(db: Path | None) -> Iterator[Any]:  # a read-only DuckDB connection
    from projections.snapshot import open_for_reading

    con = open_for_reading(db_path(db))
    try:
        con.execute("SET enable_progress_bar = false")
        yield con
    finally:
        con.close()


def _emit(rows: list[dict[str, Any]], fmt: Format, out: Path | None, title: str,
          summary: list[str], keys: tuple[str, ...] = (), limit: int | None = None) -> None:
    """Every column for machines; the group keys and `summary` columns for people."""
    rows = limited(rows, limit, fmt, fmt is Format.table and out is None)
    if fmt is Format.table and out is None:
        shown, columns = for_people(rows, [*keys, *summary])
        render(shown, fmt, title=title, columns=columns)
    else:
        render(rows, fmt, out=out, title=title)


def reconcile_cmd(
    by: ByOpt = None,
    tz: TzOpt = "UTC",
    gaming_day_start: DayStartOpt = "06:00",
    shifts: ShiftsOpt = "06:00,14:00,22:00",
    day: DayOpt = None,
    table: TableOpt = None,
    sigma: Annotated[float, typer.Option(
        min=0.0, help="Flag HOLD_VARIANCE when the variance is beyond this many standard "
                      "deviations (see docs/auditing.md).")] = DEFAULT_SIGMA,
    limit: LimitOpt = None,
    db: DbOpt = None, format: FormatOpt = Format.table, out: OutOpt = None,
    server: ServerOpt = None,
) -> None:
    """Handle, paid, collected, returned, net win and hold, against the exact theoretical win
    (the house edge for the shoe's decks and the table's paytable, applied to the wagers and
    raises actually made), with the variance in cents and in % and flags.

    Example: pitlog reconcile --by table --by day --tz America/New_York --format csv --out hold.csv
    """
    from projections.reconcile import Calendar, group_columns, parse_day, reconcile

    calendar = Calendar.parse(tz, gaming_day_start, shifts)
    groups = by or ["table"]
    rows = ask(db_path(db), server, "/api/reconcile", by=groups, tz=tz, day=day, table=table,
               gaming_day_start=gaming_day_start, shifts=shifts, sigma=sigma)
    if rows is None:
        with _reading(db) as con:
            rows = reconcile(con, groups, calendar, day=parse_day(day), table=table,
                             sigma=sigma)
    _emit(rows, format, out, "reconciliation", RECONCILE_SUMMARY, group_columns(groups), limit)


def ledger_cmd(
    table: TableOpt = None,
    shoe: Annotated[str | None, typer.Option(help="Only this shoe, e.g. T01-S0001.")] = None,
    status: Annotated[str | None, typer.Option(
        help="Only this status: OK, REMOVED, IN_PLAY, UNSETTLED, DOUBLE_SETTLED, "
             "WRONG_OUTCOME, WRONG_AMOUNT, WRONG_ODDS, NOT_OWED, SETTLED_BEFORE_DECISION, "
             "IRREGULAR_ROUND.")]
    = None,
    exceptions: Annotated[bool, typer.Option(
        "--exceptions", help="Only the rows an auditor must look at (not OK, REMOVED or "
                             "IN_PLAY).")] = False,
    limit: LimitOpt = None,
    db: DbOpt = None, format: FormatOpt = Format.table, out: OutOpt = None,
    server: ServerOpt = None,
) -> None:
    """The settlement ledger: every wager and raise with the decision the rules and the
    table's paytable require next to the settlements recorded; unsettled and doubly settled
    wagers included. The table format shows the main columns; json, csv and parquet all of
    them.

    Example: pitlog ledger --exceptions --format csv --out exceptions.csv
    """
    from projections.reconcile import ledger_rows

    rows = ask(db_path(db), server, "/api/ledger", table=table, shoe=shoe, status=status,
               exceptions=str(exceptions).lower())
    if rows is None:
        with _reading(db) as con:
            rows = ledger_rows(con, table=table, shoe=shoe, status=status,
                               exceptions_only=exceptions)
    _emit(rows, format, out, "ledger", LEDGER_SUMMARY, limit=limit)


def conservation_cmd(
    by: ByOpt = None,
    tz: TzOpt = "UTC",
    gaming_day_start: DayStartOpt = "06:00",
    shifts: ShiftsOpt = "06:00,14:00,22:00",
    day: DayOpt = None,
    table: TableOpt = None,
    limit: LimitOpt = None,
    db: DbOpt = None, format: FormatOpt = Format.table, out: OutOpt = None,
    server: ServerOpt = None,
) -> None:
    """Check money in = money out + net win, to the cent, per table and gaming day: handle =
    paid winnings + stakes returned to winners + voids returned + (collected - paid), with
    stakes still in play set aside. Exit code 1 if any group does not balance.

    Example: pitlog conservation --tz America/New_York --format json
    """
    from projections.reconcile import Calendar, conservation, group_columns, parse_day

    calendar = Calendar.parse(tz, gaming_day_start, shifts)
    groups = by or ["table", "day"]
    rows = ask(db_path(db), server, "/api/conservation", by=groups, tz=tz, day=day,
               table=table, gaming_day_start=gaming_day_start, shifts=shifts)
    if rows is None:
        with _reading(db) as con:
            rows = conservation(con, groups, calendar, day=parse_day(day), table=table)
    _emit(rows, format, out, "conservation", CONSERVATION_SUMMARY, group_columns(groups), limit)
    if any(not r["balanced"] for r in rows):
        raise typer.Exit(code=1)


def sql_cmd(
    query: Annotated[str, typer.Argument(help="One read-only query: SELECT, WITH, DESCRIBE, "
                                              "SHOW or EXPLAIN; - reads it from stdin.")],
    limit: LimitOpt = None,
    db: DbOpt = None, format: FormatOpt = Format.table, out: OutOpt = None,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", show_default=False,
        help="Stop the query after this many seconds (default PITLOG_SQL_TIMEOUT, else 60).")
    ] = None,
    memory_limit: Annotated[str | None, typer.Option(
        "--memory-limit", show_default=False,
        help="DuckDB memory limit of the query (default PITLOG_SQL_MEMORY_LIMIT, else 1GB).")
    ] = None,
    server: ServerOpt = None,
) -> None:
    """Run one read-only query over the views (ledger, paytables, rounds, wagers, ...) on a
    read-only connection that cannot read files or URLs, load extensions or change its own
    settings, within a time and memory limit. Anything that could write is refused.

    Example: pitlog sql "SELECT status, count(*) FROM ledger GROUP BY status"
    (or: echo "SELECT * FROM shoes" | pitlog sql - --format csv)
    """
    from projections.sql_console import QueryLimits, run_query

    if query == "-":
        query = sys.stdin.read()
        if not query.strip():
            raise PitlogError("pitlog sql -: standard input held no query")
    limits = QueryLimits.from_env(timeout, memory_limit)  # bad limits: an error before asking
    answer = ask(db_path(db), server, "/api/sql", q=query)
    if answer is None:
        columns, rows = run_query(db_path(db), query, limits=limits)
    else:
        columns, rows = answer["columns"], answer["rows"]
        if answer["truncated"]:
            typer.echo(f"Warning: the server returns at most {answer['max_rows']} rows "
                       "(pitlog serve --sql-max-rows); narrow the query", err=True)
    rows = limited(rows, limit, format, format is Format.table and out is None)
    render(rows, format, out=out, columns=columns)


def report_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", callback=new_file,
                                      help="The HTML file to write.")],
    day: DayOpt = None,
    tz: TzOpt = "UTC",
    gaming_day_start: DayStartOpt = "06:00",
    shifts: ShiftsOpt = "06:00,14:00,22:00",
    db: DbOpt = None,
) -> None:
    """Write a self-contained HTML report for one gaming day (default: the latest): hold
    against theoretical by table and by dealer, anomalies over time, outcome frequencies
    against the combinatorics, and the conservation check. No scripts, nothing fetched.

    Example: pitlog report --out report.html --day 2026-11-28 --tz America/New_York
    """
    from projections.reconcile import Calendar, parse_day
    from projections.report import build_report

    if out.suffix.lower() not in (".html", ".htm"):
        raise PitlogError(f"--out {out}: the report is HTML; name the file *.html")
    calendar = Calendar.parse(tz, gaming_day_start, shifts)
    from projections.report import REPORT_STEPS

    with _reading(db) as con, progress_bar("building the report", REPORT_STEPS) as update:
        report = build_report(con, calendar, day=parse_day(day), db_label=str(db_path(db)),
                              progress=update)
    out.write_text(report.html, encoding="utf-8")
    typer.echo(f"Wrote {out} (gaming day {report.day}, {report.rounds} rounds, "
               f"{len(report.tables)} tables).")

"""The money audits: `pitlog reconcile` (hold against the theoretical win), `pitlog ledger`
(every settlement against the one the rules require) and `pitlog conservation` (money in =
money out + net win, to the cent).

Each asks a running `pitlog serve` or opens the database read-only, calls one library function
of projections/reconcile.py, and renders the rows: every column for machines, the group keys
and the main columns, named for people (cli/people.py), in the table format.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from cli import verdict
from cli.client import ServerOpt, ask
from cli.listing import LimitOpt, limited
from cli.options import (
    DayOpt,
    DayStartOpt,
    DbOpt,
    FormatOpt,
    Grouping,
    OutOpt,
    ShoeOpt,
    TableOpt,
    TzOpt,
    db_path,
    grouped,
)
from cli.output import Format, render
from cli.people import for_people
from cli.reading import reading
from projections.defaults import DEFAULT_SIGMA
from projections.localtime import casino_zone_name
from projections.reconcile import (
    Calendar,
    check_ledger_status,
    conservation,
    group_columns,
    ledger_rows,
    parse_day,
    reconcile,
)

# What the table format shows (json, csv and parquet have every column).
LEDGER_SUMMARY = ["shoe_id", "round_no", "seat", "wager_kind", "amount_cents",
                  "expected_outcome", "expected_odds", "expected_net_win_cents",
                  "actual_outcome", "actual_odds", "actual_net_win_cents", "status"]
RECONCILE_SUMMARY = ["rounds", "handle_cents", "net_win_cents", "hold_pct", "theo_win_cents",
                     "theo_hold_pct", "variance_cents", "z_score", "flags"]
CONSERVATION_SUMMARY = ["money_in_cents", "money_out_cents", "net_win_cents", "open_cents",
                        "difference_cents", "balanced"]


def _emit(rows: list[dict[str, Any]], fmt: Format, out: Path | None, title: str,
          summary: list[str], keys: tuple[str, ...] = (), limit: int | None = None) -> None:
    """Every column for machines; the group keys and `summary` columns for people."""
    rows = limited(rows, limit, fmt, fmt is Format.table and out is None)
    if fmt is Format.table and out is None:
        shown, columns = for_people(rows, [*keys, *summary])
        render(shown, fmt, title=title, columns=columns)
    else:
        render(rows, fmt, out=out, title=title)


def _grouped_rows(grouping: Grouping, default_by: list[str], path: str,
                  audit: Callable[..., list[dict[str, Any]]], db: Path | None,
                  server: str | None, **extra: Any,
                  ) -> tuple[list[str], list[dict[str, Any]]]:
    """The groups and rows of a grouped money audit (projections/reconcile.py `audit`), from a
    running `pitlog serve` at `path` or the database read-only."""
    tz = casino_zone_name(grouping.tz)  # sent: a server's own default is its zone
    calendar = Calendar.parse(tz, grouping.gaming_day_start, grouping.shifts)
    groups = grouping.by or default_by
    day = parse_day(grouping.day)  # refused before a server is asked, as the file refuses it
    group_columns(groups)  # so is a grouping it has not ('' too: the same words either way)
    rows = ask(db_path(db), server, path, by=groups, tz=tz, day=grouping.day,
               table=grouping.table, gaming_day_start=grouping.gaming_day_start,
               shifts=grouping.shifts, **extra)
    if rows is None:
        with reading(db) as con:
            rows = audit(con, groups, calendar, day=day,
                         table=grouping.table, **extra)
    return groups, rows


@grouped
def reconcile_cmd(
    grouping: Grouping,
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
    groups, rows = _grouped_rows(grouping, ["table"], "/api/reconcile", reconcile, db, server,
                                 sigma=sigma)
    _emit(rows, format, out, "reconciliation", RECONCILE_SUMMARY, group_columns(groups), limit)


def ledger_cmd(
    table: TableOpt = None,
    shoe: ShoeOpt = None,
    status: Annotated[str | None, typer.Option(
        help="Only this status: OK, REMOVED, IN_PLAY, UNSETTLED, DOUBLE_SETTLED, "
             "WRONG_OUTCOME, WRONG_AMOUNT, WRONG_ODDS, NOT_OWED, SETTLED_BEFORE_DECISION, "
             "IRREGULAR_ROUND.")]
    = None,
    exceptions: Annotated[bool, typer.Option(
        "--exceptions", help="Only the rows an auditor must look at (not OK, REMOVED or "
                             "IN_PLAY).")] = False,
    day: DayOpt = None, gaming_day_start: DayStartOpt = "06:00", tz: TzOpt = None,
    limit: LimitOpt = None,
    db: DbOpt = None, format: FormatOpt = Format.table, out: OutOpt = None,
    server: ServerOpt = None,
) -> None:
    """The settlement ledger: every wager and raise with the decision the rules and the
    table's paytable require next to the settlements recorded; unsettled and doubly settled
    wagers included. The table format shows the main columns; json, csv and parquet all of
    them.

    Example: pitlog ledger --exceptions --day 2026-11-28 --format csv --out exceptions.csv
    """
    zone = casino_zone_name(tz)  # sent: a server's own default is its zone
    calendar = Calendar.parse(zone, gaming_day_start)
    asked_day = parse_day(day)  # refused before a server is asked, as the file refuses it
    check_ledger_status(status)  # so is a status the ledger has not ('' too)
    rows = ask(db_path(db), server, "/api/ledger", table=table, shoe=shoe, status=status,
               exceptions=str(exceptions).lower(), day=day, tz=zone,
               gaming_day_start=gaming_day_start)
    if rows is None:
        with reading(db) as con:
            rows = ledger_rows(con, table=table, shoe=shoe, status=status,
                               exceptions_only=exceptions, day=asked_day,
                               calendar=calendar)
    _emit(rows, format, out, "ledger", LEDGER_SUMMARY, limit=limit)


@grouped
def conservation_cmd(
    grouping: Grouping,
    limit: LimitOpt = None,
    db: DbOpt = None, format: FormatOpt = Format.table, out: OutOpt = None,
    server: ServerOpt = None,
) -> None:
    """Check money in = money out + net win, to the cent, per table and gaming day: handle =
    paid winnings + stakes returned to winners + voids returned + (collected - paid), with
    stakes still in play set aside. Exit code 1 if any group does not balance.

    Example: pitlog conservation --tz America/New_York --format json
    """
    groups, rows = _grouped_rows(grouping, ["table", "day"], "/api/conservation", conservation,
                                 db, server)
    if any(not r["balanced"] for r in rows):
        verdict.found()  # exit 1 even if the reader closes the pipe before the rows end
    _emit(rows, format, out, "conservation", CONSERVATION_SUMMARY, group_columns(groups), limit)
    if any(not r["balanced"] for r in rows):
        raise typer.Exit(code=1)

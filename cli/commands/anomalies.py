"""`pitlog anomalies`: the flagged anomalies, filtered by code, place, time or severity
(projections/anomalies.py; the catalogue is events/reddog/catalogue.py)."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.client import ServerOpt, ask
from cli.listing import LimitOpt, limited
from cli.options import (
    DayOpt,
    DayStartOpt,
    DbOpt,
    FormatOpt,
    OutOpt,
    ShiftsOpt,
    ShoeOpt,
    TableOpt,
    TzOpt,
    db_path,
    parse_time,
)
from cli.output import Format, render
from cli.progress import progress_bar
from cli.reading import reading
from events.errors import PitlogError
from events.reddog.catalogue import Severity
from projections.anomalies import COLUMNS, AnomalyFilter, EmptyWindow, list_anomalies
from projections.localtime import casino_zone, casino_zone_name, check_gaming_day
from projections.reconcile import Calendar, hhmm, parse_day

ANOMALY_SUMMARY = ["occurred_at", "code", "severity", "table_id", "shoe_id", "round_no", "seqs",
                   "explanation"]


def _calendar_params(calendar: Calendar) -> dict[str, str]:
    """The calendar for /api/anomalies, always, its zone included: a server without `tz=`
    reads its own zone (`serve --tz`), which may not be this command's (PITLOG_TZ or UTC), and
    the answer must be the file's. (It was sent only when not the default, so a server on New
    York's clock judged a UTC command's HOLD_VARIANCE on New York's days: session 41.)"""
    return {"tz": calendar.tz, "gaming_day_start": hhmm(calendar.day_start),
            "shifts": ",".join(hhmm(s) for s in calendar.shift_starts)}


def _codes(given: list[str]) -> tuple[str, ...]:
    """--code's values, each split at its commas as the server's `code` parameter is (so the
    file and a running server answer `--code A,B` alike; an outside review, session 37: the
    file refused it as one unknown code); an empty one is refused, not read as every code."""
    codes = tuple(c.strip() for value in given for c in value.split(","))
    if "" in codes:
        raise typer.BadParameter(f"an empty code in {', '.join(map(repr, given))}: name each "
                                 f"code, e.g. LATE_RAISE,WRONG_PAYOUT", param_hint="--code")
    return codes


def anomalies_cmd(
    code: Annotated[list[str] | None, typer.Option(
        "--code", help="Only this anomaly code (repeatable, or comma-separated), e.g. "
                       "LATE_RAISE or LATE_RAISE,WRONG_PAYOUT.")] = None,
    table: TableOpt = None,
    shoe: ShoeOpt = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="Only anomalies at or after this time (ISO 8601).")] = None,
    until: Annotated[str | None, typer.Option(
        "--until", help="Only anomalies before this time (ISO 8601).")] = None,
    day: DayOpt = None,
    gaming_day_start: DayStartOpt = "06:00",
    shifts: ShiftsOpt = "06:00,14:00,22:00",
    severity: Annotated[Severity | None, typer.Option(
        "--severity", help="Only this severity and above: low, medium or high.")] = None,
    # One flag, not a --statistics/--no-statistics pair: typer gives the pair's second name a
    # column of its own, which cut the options' help at 80 columns; --statistics (the default)
    # is still accepted, hidden.
    no_statistics: Annotated[bool, typer.Option(
        "--no-statistics",
        help="Leave out HOLD_VARIANCE and OUTCOME_FREQUENCY (statistics over many rounds).")
    ] = False,
    _statistics: Annotated[bool, typer.Option("--statistics", hidden=True)] = False,
    tz: TzOpt = None,
    limit: LimitOpt = None,
    db: DbOpt = None, format: FormatOpt = Format.table, out: OutOpt = None,
    server: ServerOpt = None,
) -> None:
    """The flagged anomalies: each with its code, severity, place, the sequence numbers of the
    events that prove it, a one-line explanation and the rule it cites (docs/anomalies.md).

    --day takes the gaming day as reconcile, conservation and report do (--gaming-day-start on
    the --tz clock to the next day's); with --since or --until too, both apply.
    HOLD_VARIANCE judges each table, gaming day and shift of that calendar (--tz,
    --gaming-day-start, --shifts), as `pitlog reconcile` groups them.

    Example: pitlog anomalies --code LATE_RAISE --table T03 --since 2026-11-28T21:00
    (or: pitlog anomalies --day 2026-11-28 --tz America/New_York)
    """
    statistics = not no_statistics
    calendar = Calendar.parse(casino_zone_name(tz), gaming_day_start, shifts)
    first = parse_time(since, tz, "--since") if since else None
    last = parse_time(until, tz, "--until") if until else None
    try:
        f = AnomalyFilter(
            codes=_codes(code or []), table=table, shoe=shoe, since=first, until=last,
            severity=severity.value if severity else None, statistics=statistics,
            day=check_gaming_day(parse_day(day)) if day is not None else None)  # type: ignore[arg-type]
    except EmptyWindow as exc:  # checked here before a --server is asked: on the --tz clock
        raise PitlogError(exc.describe(casino_zone(tz))) from None
    found = ask(db_path(db), server, "/api/anomalies", code=list(f.codes), table=table,
                shoe=shoe, since=f.since, until=f.until, severity=f.severity,
                statistics=str(statistics).lower(), day=day, **_calendar_params(calendar))
    if found is None:
        with reading(db) as con, progress_bar("finding anomalies", 2) as update:
            found = list_anomalies(con, f, calendar=calendar, progress=update)
    found = limited(found, limit, format, format is Format.table and out is None, "anomalies")
    if format is Format.table and out is None:
        render(found, format, title="anomalies", columns=ANOMALY_SUMMARY, tz=casino_zone(tz))
    else:
        render(found, format, out=out, columns=list(COLUMNS))

"""Surveillance commands: anomalies and dispute.

Each opens the database read-only (or its snapshot while a projector writes), calls one library
function from projections/, and renders the rows.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import typer

from cli.listing import LimitOpt, limited
from cli.options import DbOpt, FormatOpt, OutOpt, db_path
from cli.output import Format, cents, render
from cli.progress import progress_bar
from events.errors import PitlogError


class Severity(StrEnum):
    low = "low"
    medium = "medium"
    high = "high"


TzOpt = Annotated[str, typer.Option(
    "--tz", envvar="PITLOG_TZ",
    help="Time zone of times given without one: an IANA name (America/New_York) or an offset "
         "(-05:00).")]
TableOpt = Annotated[str | None, typer.Option("--table", help="Only this table, e.g. T01.")]

ANOMALY_SUMMARY = ["occurred_at", "code", "severity", "table_id", "shoe_id", "round_no", "seqs",
                   "explanation"]


def register(app: typer.Typer) -> None:
    app.command(name="anomalies")(anomalies_cmd)
    app.command(name="dispute")(dispute_cmd)


def parse_zone(name: str) -> tzinfo:
    """'UTC', 'America/New_York', '-05:00' or '+0530' as a tzinfo."""
    text = name.strip()
    sign = text[:1]
    if sign in "+-" and text[1:].replace(":", "").isdigit():
        digits = text[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
        if hours > 18 or minutes > 59:
            raise PitlogError(f"--tz {name!r}: an offset runs from -18:00 to +18:00")
        offset = timedelta(hours=hours, minutes=minutes)
        return timezone(-offset if sign == "-" else offset)
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise PitlogError(f"unknown time zone {name!r}: give an IANA name such as "
                          f"America/New_York, UTC, or an offset such as -05:00") from None


def parse_time(text: str, zone: str, what: str) -> datetime:
    """An ISO 8601 time; one without a zone is on the wall clock of `zone`."""
    try:
        at = datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    except ValueError:
        raise PitlogError(f"{what} {text!r} is not a time: write it as ISO 8601, e.g. "
                          f"2026-11-28T21:14:00 or 2026-11-28T21:14:00-05:00") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=parse_zone(zone))
    return at.astimezone(UTC)


def _for_people(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The table format shows cents as dollars; json, csv and parquet keep exact cents."""
    return [{k: cents(v) if k.endswith("_cents") and isinstance(v, int)
             and not isinstance(v, bool) else v for k, v in r.items()} for r in rows]


def _reading(db: Path | None) -> Any:
    from projections.snapshot import open_for_reading

    con = open_for_reading(db_path(db))
    con.execute("SET enable_progress_bar = false")
    return con


def anomalies_cmd(
    code: Annotated[list[str] | None, typer.Option(
        "--code", help="Only this anomaly code (repeatable), e.g. LATE_RAISE.")] = None,
    table: TableOpt = None,
    shoe: Annotated[str | None, typer.Option(
        "--shoe", help="Only this shoe, e.g. T01-S0003.")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="Only anomalies at or after this time (ISO 8601).")] = None,
    until: Annotated[str | None, typer.Option(
        "--until", help="Only anomalies before this time (ISO 8601).")] = None,
    severity: Annotated[Severity | None, typer.Option(
        "--severity", help="Only this severity and above: low, medium or high.")] = None,
    statistics: Annotated[bool, typer.Option(
        "--statistics/--no-statistics",
        help="Include HOLD_VARIANCE and OUTCOME_FREQUENCY (statistics over many rounds).")] = True,
    tz: TzOpt = "UTC",
    limit: LimitOpt = None,
    db: DbOpt = None, format: FormatOpt = Format.table, out: OutOpt = None,
) -> None:
    """The flagged anomalies: each with its code, severity, place, the sequence numbers of the
    events that prove it, a one-line explanation and the rule it cites (docs/anomalies.md).

    Example: pitlog anomalies --code LATE_RAISE --table T03 --since 2026-11-28T21:00
    """
    from projections.anomalies import AnomalyFilter, list_anomalies

    f = AnomalyFilter(
        codes=tuple(code or ()), table=table, shoe=shoe,
        since=parse_time(since, tz, "--since") if since else None,
        until=parse_time(until, tz, "--until") if until else None,
        severity=severity.value if severity else None, statistics=statistics)
    con = _reading(db)
    try:
        with progress_bar("finding anomalies", 2) as update:
            found = list_anomalies(con, f, progress=update)
    finally:
        con.close()
    from projections.anomalies import COLUMNS

    found = limited(found, limit, format, format is Format.table and out is None, "anomalies")
    if format is Format.table and out is None:
        render(found, format, title="anomalies", columns=ANOMALY_SUMMARY)
    else:
        render(found, format, out=out, columns=list(COLUMNS))


def _round_id(text: str) -> tuple[str, int]:
    shoe, sep, number = text.rpartition(":")
    if not sep or not shoe or not number.isdigit():
        raise PitlogError(f"--round {text!r}: write SHOE:ROUND, e.g. --round T07-S0012:31")
    return shoe, int(number)


def dispute_cmd(
    table: Annotated[str, typer.Option("--table", help="The table, e.g. T07.")],
    at: Annotated[str | None, typer.Option(
        "--at", help="The moment in question (ISO 8601): the round in play then is shown.")] = None,
    round_: Annotated[str | None, typer.Option(
        "--round", help="Or the round itself, as SHOE:ROUND (e.g. T07-S0012:31).")] = None,
    seat: Annotated[int | None, typer.Option(
        "--seat", min=1, help="Only this seat's wagers and settlements.")] = None,
    tz: TzOpt = "UTC",
    db: DbOpt = None, format: FormatOpt = Format.table, out: OutOpt = None,
) -> None:
    """Rebuild the hand in play at a table at a moment: its cards in discard-rack order with the
    time each left the shoe, every announcement, every wager and raise per seat, the settlement
    the rules require next to the one made, and the anomalies that touch the round.

    Example: pitlog dispute --table T07 --at 2026-11-28T21:14:00-05:00 --seat 3
    """
    from projections.dispute import dispute

    if (at is None) == (round_ is None):
        raise PitlogError("give either --at TIME or --round SHOE:ROUND")
    con = _reading(db)
    try:
        if at is not None:
            d = dispute(con, table, at=parse_time(at, tz, "--at"), seat=seat)
        else:
            shoe, number = _round_id(round_ or "")
            d = dispute(con, table, shoe=shoe, round_no=number, seat=seat)
    finally:
        con.close()
    sections: list[tuple[str, str, list[dict[str, Any]]]] = [
        ("round", "the round", [d.round]),
        ("card", "cards in discard-rack order", d.cards),
        ("announcement", "announcements", d.announcements),
        ("wager", "wagers, raises and choices", d.wagers),
        ("settlement", "settlement required and made", d.settlements),
        ("anomaly", "anomalies", d.anomalies)]
    r = d.round
    if format is Format.table and out is None:
        where = f"table {r['table_id']}, shoe {r['shoe_id']}, round {r['round_no']}"
        render([{"field": k, "value": v} for k, v in r.items()], format, title=where)
        for _, title, rows in sections[1:]:
            render(_for_people(rows), format, title=f"{where}: {title}")
        return
    flat = [{"section": name, **row} for name, _, rows in sections for row in rows]
    columns = list(dict.fromkeys(k for row in flat for k in row))
    render(flat, format, out=out, columns=columns)

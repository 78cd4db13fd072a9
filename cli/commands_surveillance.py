"""Surveillance commands: anomalies and dispute.

Each opens the database read-only (or its snapshot while a projector writes), calls one library
function from projections/, and renders the rows.
"""

from __future__ import annotations

import os
from datetime import datetime
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
    TzOpt,
    db_path,
    new_file,
)
from cli.output import Format, render
from cli.progress import progress_bar
from events.errors import PitlogError
from events.reddog.catalogue import Severity
from projections.localtime import casino_zone, gaming_day_bounds, parse_local

ANOMALY_SUMMARY = ["occurred_at", "code", "severity", "table_id", "shoe_id", "round_no", "seqs",
                   "explanation"]


def parse_time(text: str, zone: str | None, what: str) -> datetime:
    """An ISO 8601 time; one without a zone is on the casino's clock (--tz)."""
    return parse_local(text, casino_zone(zone), what)


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
    day: DayOpt = None,
    gaming_day_start: DayStartOpt = "06:00",
    severity: Annotated[Severity | None, typer.Option(
        "--severity", help="Only this severity and above: low, medium or high.")] = None,
    statistics: Annotated[bool, typer.Option(
        "--statistics/--no-statistics",
        help="Include HOLD_VARIANCE and OUTCOME_FREQUENCY (statistics over many rounds).")] = True,
    tz: TzOpt = None,
    limit: LimitOpt = None,
    db: DbOpt = None, format: FormatOpt = Format.table, out: OutOpt = None,
    server: ServerOpt = None,
) -> None:
    """The flagged anomalies: each with its code, severity, place, the sequence numbers of the
    events that prove it, a one-line explanation and the rule it cites (docs/anomalies.md).

    --day takes the gaming day as reconcile, conservation and report do (--gaming-day-start on
    the --tz clock to the next day's); with --since or --until too, the narrower window wins.

    Example: pitlog anomalies --code LATE_RAISE --table T03 --since 2026-11-28T21:00
    (or: pitlog anomalies --day 2026-11-28 --tz America/New_York)
    """
    from projections.anomalies import AnomalyFilter, list_anomalies

    first = parse_time(since, tz, "--since") if since else None
    last = parse_time(until, tz, "--until") if until else None
    if day is not None:
        from projections.reconcile import parse_day, parse_hhmm

        begins, ends = gaming_day_bounds(parse_day(day),  # type: ignore[arg-type]
                                         parse_hhmm(gaming_day_start, "--gaming-day-start"),
                                         casino_zone(tz))
        first, last = max(first or begins, begins), min(last or ends, ends)
    f = AnomalyFilter(
        codes=tuple(code or ()), table=table, shoe=shoe, since=first, until=last,
        severity=severity.value if severity else None, statistics=statistics)
    found = ask(db_path(db), server, "/api/anomalies", code=list(f.codes), table=table,
                shoe=shoe, since=f.since, until=f.until, severity=f.severity,
                statistics=str(statistics).lower())
    if found is None:
        con = _reading(db)
        try:
            with progress_bar("finding anomalies", 2) as update:
                found = list_anomalies(con, f, progress=update)
        finally:
            con.close()
    from projections.anomalies import COLUMNS

    found = limited(found, limit, format, format is Format.table and out is None, "anomalies")
    if format is Format.table and out is None:
        render(found, format, title="anomalies", columns=ANOMALY_SUMMARY, tz=casino_zone(tz))
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
        "--at", help="The moment in question (ISO 8601; without a zone, on the --tz clock): "
                     "the round in play then is shown.")] = None,
    round_: Annotated[str | None, typer.Option(
        "--round", help="Or the round itself, as SHOE:ROUND (e.g. T07-S0012:31).")] = None,
    seat: Annotated[int | None, typer.Option(
        "--seat", min=1, help="Only this seat's wagers and settlements.")] = None,
    tz: TzOpt = None,
    db: DbOpt = None, format: FormatOpt = Format.table, out: Annotated[Path | None, typer.Option(
        "--out", "-o", callback=new_file,
        help="Write to this file: FILE.html is the printable incident report (the console's "
             "page); otherwise the rows as --format.")] = None,
    server: ServerOpt = None,
) -> None:
    """Rebuild the hand in play at a table at a moment: its cards in discard-rack order with the
    time each left the shoe, every announcement, every wager and raise per seat, the settlement
    the rules require next to the one made, and the anomalies that touch the round. Times are
    shown on the casino's clock (--tz or PITLOG_TZ).

    A moment in no round (between rounds or shoes, before the table opened, after it closed),
    an unknown table or a seat that did not play is an error (exit 1) naming the rounds just
    before and after, with their times: never another hand.

    Example: pitlog dispute --table T07 --at 2026-11-28T21:14:00 --tz America/New_York --seat 3
    """
    from projections.dispute import Dispute, dispute
    from projections.moment import OutsideRound

    zone = casino_zone(tz)
    if (at is None) == (round_ is None):
        raise PitlogError("give either --at TIME or --round SHOE:ROUND")
    moment = parse_time(at, tz, "--at") if at is not None else None
    shoe, number = _round_id(round_) if round_ is not None else (None, None)
    found = ask(db_path(db), server, "/api/dispute", table=table, at=moment, shoe=shoe,
                round=number, seat=seat,
                tz=tz or os.environ.get("PITLOG_TZ"))
    if found is not None:
        d = Dispute(**found)
    else:
        con = _reading(db)
        try:
            d = dispute(con, table, at=moment, shoe=shoe, round_no=number, seat=seat)
        except OutsideRound as exc:
            raise PitlogError(exc.describe(zone)) from None
        finally:
            con.close()
    if out is not None and out.suffix.lower() in (".html", ".htm"):
        from projections.serve.templates.incident import incident_page

        out.write_text(incident_page(d, zone, at=moment, seat=seat))
        return
    if format is Format.table and out is None:
        from cli.dispute_table import render_dispute

        render_dispute(d, zone)
        return
    sections: list[tuple[str, list[dict[str, Any]]]] = [
        ("round", [d.round]), ("card", d.cards), ("announcement", d.announcements),
        ("wager", d.wagers), ("settlement", d.settlements), ("anomaly", d.anomalies)]
    flat = [{"section": name, **row} for name, rows in sections for row in rows]
    columns = list(dict.fromkeys(k for row in flat for k in row))
    render(flat, format, out=out, columns=columns)

"""`pitlog report`: one gaming day as a self-contained HTML page for auditors
(projections/report.py; its charts need matplotlib, which no other command imports)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.options import DayOpt, DayStartOpt, DbOpt, ShiftsOpt, TzOpt, db_path, new_file
from cli.progress import progress_bar
from cli.reading import reading
from events.errors import PitlogError
from projections.localtime import casino_zone_name
from projections.reconcile import Calendar, parse_day
from projections.report import REPORT_STEPS, build_report


def report_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", callback=new_file,
                                      help="The HTML file to write.")],
    day: DayOpt = None,
    tz: TzOpt = None,
    gaming_day_start: DayStartOpt = "06:00",
    shifts: ShiftsOpt = "06:00,14:00,22:00",
    db: DbOpt = None,
) -> None:
    """Write a self-contained HTML report for one gaming day (default: the latest): hold
    against theoretical by table and by dealer, anomalies over time, outcome frequencies
    against the combinatorics, and the conservation check. No scripts, nothing fetched.

    Example: pitlog report --out report.html --day 2026-11-28 --tz America/New_York
    """
    if out.suffix.lower() not in (".html", ".htm"):
        raise PitlogError(f"--out {out}: the report is HTML; name the file *.html")
    calendar = Calendar.parse(casino_zone_name(tz), gaming_day_start, shifts)
    with reading(db) as con, progress_bar("building the report", REPORT_STEPS) as update:
        report = build_report(con, calendar, day=parse_day(day), db_label=str(db_path(db)),
                              progress=update)
    out.write_text(report.html, encoding="utf-8")
    typer.echo(f"Wrote {out} (gaming day {report.day}, {report.rounds} rounds, "
               f"{len(report.tables)} tables).")

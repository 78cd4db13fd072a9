"""`pitlog demo`: a short evening on the embedded default, simulated, projected and summed up.

The demo writes only into a new or empty folder; it never deletes anything it did not write.
`--replace` removes an earlier demo's folder, and only while every file in it is byte for byte
what that demo wrote (`demo.json` lists them with their SHA-256).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.options import SummaryOpt
from cli.output import Format, Summary, render
from cli.people import for_people
from cli.progress import phase, progress_bar, progress_tasks
from events.errors import PitlogError
from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections.anomalies import list_anomalies
from projections.export import columns_of
from projections.projector import project
from projections.snapshot import open_for_reading
from projections.summary import demo_summary

MARKER = "demo.json"
EXAMPLES = 8  # anomalies shown in full; `pitlog anomalies` lists them all
# Four tables, one per profile and a second NJ casino table, ~100 rounds each: a short evening.
DEMO_CONFIG = SimConfig(tables=4, rounds=100, decks=6, irregularities=0.01,
                        profiles=("nj-casino", "nj-casino-night", "gaming-authority", "nj-casino"))


@dataclass
class DemoReport:
    data_dir: Path
    log_uri: str
    db: Path
    events: int
    rounds: int
    shoes: int
    injected: int
    seconds: float
    summary: list[dict[str, Any]] = field(default_factory=list)
    anomalies: list[dict[str, Any]] = field(default_factory=list)  # counts by code
    examples: list[dict[str, Any]] = field(default_factory=list)  # the first few, in full


def _files(data_dir: Path) -> dict[str, str]:
    """Every file under the folder but the marker, with its SHA-256."""
    return {str(p.relative_to(data_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(data_dir.rglob("*")) if p.is_file() and p.name != MARKER}


def _earlier_demo_intact(data_dir: Path) -> bool:
    """True when the folder holds exactly what an earlier demo wrote, byte for byte."""
    try:
        made = json.loads((data_dir / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(made, dict) and made.get("files") == _files(data_dir)


def _claim(data_dir: Path, replace: bool) -> None:
    """Make the folder the demo's, deleting nothing the demo did not write.

    A folder with anything in it is refused, unless `replace` is set and it holds an earlier
    demo's files exactly as that demo left them (demo.json lists them with their SHA-256): an
    event ingested, a database projected again, any file added or changed, and it is refused.
    """
    if data_dir.exists() and not data_dir.is_dir():
        raise PitlogError(f"{data_dir} is a file, not a folder: pass --data-dir DIR")
    if data_dir.exists() and any(data_dir.iterdir()):
        intact = _earlier_demo_intact(data_dir)
        if not intact:
            raise PitlogError(
                f"{data_dir} already holds data the demo did not write (or an earlier demo's "
                f"data changed since); nothing was touched: run the demo elsewhere with "
                f"--data-dir DIR")
        if not replace:
            raise PitlogError(
                f"{data_dir} holds an earlier demo; nothing was touched: pass --replace to "
                f"replace it, or run the demo elsewhere with --data-dir DIR")
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)


def _sign(data_dir: Path) -> None:
    """Record what this run wrote, so a later --replace deletes only that."""
    (data_dir / MARKER).write_text(json.dumps({"made_by": "pitlog demo",
                                               "files": _files(data_dir)}, indent=1))


def run_demo(data_dir: Path, *, seed: int, replace: bool = False) -> DemoReport:
    started = time.perf_counter()
    _claim(data_dir, replace)
    config = SimConfig(**{**DEMO_CONFIG.__dict__, "seed": seed})
    log = EmbeddedLog(data_dir / "log")
    with progress_bar("simulating rounds", config.tables * config.rounds) as update:
        sim = simulate(log, config, round_progress=update)
    db = data_dir / "pitlog.duckdb"
    with progress_tasks() as task:
        project(log, db, progress=task("projecting events", sim.events),
                anomaly_progress=phase(task, "storing anomaly rows"),
                money_progress=phase(task, "storing round money rows"))
    with open_for_reading(db) as con:
        summary, anomalies = demo_summary(con)
        examples = list_anomalies(con)[:EXAMPLES]
    _sign(data_dir)
    return DemoReport(data_dir, log.uri, db, sim.events, sim.rounds, sim.shoes, len(sim.truth),
                      time.perf_counter() - started, summary, anomalies, examples)


def print_report(report: DemoReport, fmt: Format | Summary) -> None:
    if fmt != Format.table:
        render([{"data_dir": str(report.data_dir), "log": report.log_uri, "db": str(report.db),
                 "events": report.events, "rounds": report.rounds, "shoes": report.shoes,
                 "irregularities_injected": report.injected, "seconds": round(report.seconds, 2),
                 "summary": report.summary, "anomalies": report.anomalies,
                 "examples": report.examples}], fmt)
        return
    print(f"Simulated {report.rounds} rounds at {len(report.summary)} tables "
          f"({report.shoes} shoes, {report.events} events, {report.injected} irregularities "
          f"injected) and projected them in {report.seconds:.1f} s.")
    tables, columns = for_people(report.summary, columns_of(report.summary))
    render(tables, Format.table, title="tables", columns=columns)
    render(report.anomalies, Format.table, title="anomalies by code")
    render([{k: r[k] for k in ("code", "table_id", "shoe_id", "round_no", "explanation")}
            for r in report.examples], Format.table,
           title=f"the first {len(report.examples)} anomalies (all of them: pitlog anomalies)")
    print(f"Event log: {report.log_uri}")
    print(f"Views:     {report.db}  (open it in DuckDB 1.4.4 or later, or try `pitlog shoes`, "
          f"`pitlog replay {report.summary[0]['first_shoe'] if report.summary else 'SHOE'}`)")


def demo(
    # A folder, not --log/--db as elsewhere: the demo writes both, and its promise never to
    # delete what it did not write (run_demo) is kept by claiming one whole folder.
    data_dir: Annotated[
        Path, typer.Option(
            "--data-dir", help="The folder the demo writes, new or empty: its log goes to DIR/log "
                               "and its database to DIR/pitlog.duckdb, which the other commands "
                               "take as --log DIR/log --db DIR/pitlog.duckdb (the default "
                               "folder is their default too).")
    ] = Path("pitlog-data"),
    seed: Annotated[
        int, typer.Option(help="Simulator seed; the same seed gives the same evening.")
    ] = 2026,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace an earlier demo in --data-dir, if its "
                                             "files are unchanged; other data is never touched.")
    ] = False,
    format: SummaryOpt = Summary.table,
) -> None:
    """Simulate a short evening at four tables, with irregularities, project it, and print
    the summary and the anomalies.

    Example: pitlog demo
    """
    print_report(run_demo(data_dir, seed=seed, replace=replace), format)

"""`pitlog demo`: a short evening on the embedded default, simulated, projected and summed up.

The demo owns its data folder only when the folder is new or was made by an earlier demo (a
`demo.json` marker says so): real data in the same place is never overwritten.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cli.output import Format, Summary, cents, render
from cli.progress import progress_bar
from events.embedded_log import EmbeddedLog
from events.errors import PitlogError
from events.simulator import SimConfig, simulate

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


def _claim(data_dir: Path) -> None:
    marker = data_dir / MARKER
    if data_dir.exists() and any(data_dir.iterdir()):
        if not marker.exists():
            raise PitlogError(
                f"{data_dir} already holds data that the demo did not make; "
                f"run the demo elsewhere with --data-dir DIR")
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"made_by": "pitlog demo"}))


def run_demo(data_dir: Path, *, seed: int) -> DemoReport:
    from projections.anomalies import list_anomalies
    from projections.projector import project
    from projections.queries import demo_summary
    from projections.snapshot import open_for_reading

    started = time.perf_counter()
    _claim(data_dir)
    config = SimConfig(**{**DEMO_CONFIG.__dict__, "seed": seed})
    log = EmbeddedLog(data_dir / "log")
    with progress_bar("simulating", None) as update:
        sim = simulate(log, config, progress=update)
    db = data_dir / "pitlog.duckdb"
    with progress_bar("projecting", sim.events) as update:
        project(log, db, progress=update)
    with open_for_reading(db) as con:
        summary, anomalies = demo_summary(con)
        examples = list_anomalies(con)[:EXAMPLES]
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
    tables = [{k.removesuffix("_cents"): cents(v) if k.endswith("_cents") else v
               for k, v in row.items()} for row in report.summary]
    render(tables, Format.table, title="tables")
    render(report.anomalies, Format.table, title="anomalies by code")
    render([{k: r[k] for k in ("code", "table_id", "shoe_id", "round_no", "explanation")}
            for r in report.examples], Format.table,
           title=f"the first {len(report.examples)} anomalies (all of them: pitlog anomalies)")
    print(f"Event log: {report.log_uri}")
    print(f"Views:     {report.db}  (open it in DuckDB 1.4.4 or later, or try `pitlog shoes`, "
          f"`pitlog replay {report.summary[0]['first_shoe'] if report.summary else 'SHOE'}`)")

"""Anomaly detection: precision and recall per code against the simulator's ground truth, the
time each stage takes, and the statistics' false-alarm rates on clean evenings.

    python benchmarks/bench_detection.py [--tables 8] [--rounds 12500] [--workers 2]
                                         [--clean-tables 200] [--clean-rounds 500]
                                         [--out benchmarks/detection.md]

1. Injected evening: `--tables` tables of `--rounds` rounds (seats 2; the three profiles in
   turn) with every injectable code at the rates of tests/projections/test_detection.py,
   simulated by `--workers` processes into one embedded log, projected, and judged by the
   anomaly views.
   Precision and recall per code over distinct (table, shoe, round) places.
2. Clean evening: `--clean-tables` tables with no injection; every HOLD_VARIANCE and
   OUTCOME_FREQUENCY test is run and its statistic kept, so the false-alarm rate is measured at
   the documented threshold and at looser ones (where alarms are frequent enough to count).

Writes a markdown report (default benchmarks/detection.md) and prints it. Measured here, never
in a timed test (docs/architecture.md, principle 5).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sys
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

from events.log.embedded.log import EmbeddedLog  # noqa: E402
from events.reddog.catalogue import INJECTABLE  # noqa: E402
from events.simulation.irregularities import TruthLabel  # noqa: E402
from events.simulation.simulator import SimConfig, simulate  # noqa: E402
from projections.anomalies import AnomalyFilter, list_anomalies, score  # noqa: E402
from projections.projector import project  # noqa: E402
from projections.statistics import (  # noqa: E402
    HOLD_Z,
    OUTCOME_ALPHA,
    hold_variance,
    outcome_frequency,
)

PROFILES = ("nj-casino", "nj-casino-night", "gaming-authority")


def _rates() -> dict[str, float]:
    from detection_support import RATES  # one set of rates for the tests and the benchmark

    return dict(RATES)


def _play(args: tuple[Path, SimConfig, list[int]]) -> tuple[int, int, list[TruthLabel]]:
    folder, config, tables = args
    with EmbeddedLog(folder) as log:
        report = simulate(log, config, only=tables)
    return report.rounds, report.events, report.truth


def simulate_parallel(folder: Path, config: SimConfig,
                      workers: int) -> tuple[int, int, list[TruthLabel]]:
    EmbeddedLog(folder).close()
    shares = [list(range(i, config.tables, workers)) for i in range(workers)]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        parts = pool.map(_play, [(folder, config, share) for share in shares if share])
    return (sum(p[0] for p in parts), sum(p[1] for p in parts),
            [t for p in parts for t in p[2]])


def injected(work: Path, a: argparse.Namespace) -> list[str]:
    config = SimConfig(seed=a.seed, tables=a.tables, rounds=a.rounds, seats=2,
                       profiles=PROFILES, per_code=_rates())
    t0 = time.perf_counter()
    rounds, events, truth = simulate_parallel(work / "log", config, a.workers)
    t1 = time.perf_counter()
    with EmbeddedLog(work / "log") as log:
        project(log, work / "db.duckdb")
    t2 = time.perf_counter()
    with duckdb.connect(str(work / "db.duckdb"), read_only=True) as con:
        found = list_anomalies(con, AnomalyFilter(statistics=False))
        t3 = time.perf_counter()
        stats = list_anomalies(con, AnomalyFilter(codes=("HOLD_VARIANCE", "OUTCOME_FREQUENCY")))
        t4 = time.perf_counter()
    scores = score(truth, found, codes=INJECTABLE)
    lines = [
        f"## Injected evening: {a.tables} tables, {rounds:,} rounds, {events:,} events",
        "",
        f"{len(truth):,} ground-truth labels; {len(found):,} rule and integrity anomaly rows "
        f"({len({(r['code'], r['table_id'], r['shoe_id'], r['round_no']) for r in found}):,} "
        f"distinct code-and-round places); {len(stats)} statistical rows.",
        "",
        "| stage | seconds | rate |",
        "|---|---:|---:|",
        f"| simulate ({a.workers} processes, one log) | {t1 - t0:.1f} | "
        f"{events / (t1 - t0):,.0f} events/s |",
        f"| project | {t2 - t1:.1f} | {events / (t2 - t1):,.0f} events/s |",
        f"| detect: `anomalies` view, every rule and integrity code | {t3 - t2:.1f} | "
        f"{rounds / (t3 - t2):,.0f} rounds/s |",
        f"| detect: HOLD_VARIANCE and OUTCOME_FREQUENCY | {t4 - t3:.1f} | |",
        "",
        "| code | injected | found | true positives | precision | recall |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {s.code} | {s.truth} | {s.found} | {s.true_positives} | "
              f"{s.precision:.3f} | {s.recall:.3f} |" for s in scores]
    return lines


def clean(work: Path, a: argparse.Namespace) -> list[str]:
    config = SimConfig(seed=a.seed + 1, tables=a.clean_tables, rounds=a.clean_rounds,
                       profiles=PROFILES)
    rounds, events, truth = simulate_parallel(work / "clean-log", config, a.workers)
    with EmbeddedLog(work / "clean-log") as log:
        project(log, work / "clean.duckdb")
    with duckdb.connect(str(work / "clean.duckdb"), read_only=True) as con:
        rules = [r for r in list_anomalies(con, AnomalyFilter(statistics=False))]
        holds = [g for g in hold_variance(con) if g["grouping"] == "table"]
        freqs = outcome_frequency(con)
    zs = [abs(float(g["z_score"])) for g in holds]
    ps = [float(g["p_value"]) for g in freqs]
    lines = [
        "", f"## Clean evening: {a.clean_tables} tables, {rounds:,} rounds, {events:,} events",
        "", f"Rule and integrity anomalies: {len(rules)} (expected 0).", "",
        "False alarms of the statistical tests, one test per table (the day and shift tests "
        "add a few more per evening):", "",
        "| test | threshold | nominal rate | alarms | tests | observed rate |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for z, nominal in ((1.96, 0.05), (2.576, 0.01), (HOLD_Z, 0.001)):
        n = sum(1 for v in zs if v > z)
        lines.append(f"| HOLD_VARIANCE | abs(z) > {z} | {nominal} | {n} | {len(zs)} | "
                     f"{n / len(zs) if zs else 0:.4f} |")
    for alpha in (0.05, 0.01, OUTCOME_ALPHA):
        n = sum(1 for p in ps if p < alpha)
        lines.append(f"| OUTCOME_FREQUENCY | p < {alpha} | {alpha} | {n} | {len(ps)} | "
                     f"{n / len(ps) if ps else 0:.4f} |")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", type=int, default=8)
    p.add_argument("--rounds", type=int, default=12_500)
    p.add_argument("--clean-tables", type=int, default=200)
    p.add_argument("--clean-rounds", type=int, default=500)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/pitlog-bench-detection"))
    p.add_argument("--out", type=Path, default=HERE / "detection.md")
    a = p.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    a.workdir.mkdir(parents=True)
    load = os.getloadavg()[0]
    lines = ["# Anomaly detection", "",
             f"`python benchmarks/bench_detection.py` on this machine ({os.cpu_count()} cores); "
             "see docs/anomalies.md for how each code is decided.", ""]
    lines += injected(a.workdir, a)
    if a.clean_tables:
        lines += clean(a.workdir, a)
    lines += ["", f"Load average (1 min) at the start: {load:.1f}; at the end: "
              f"{os.getloadavg()[0]:.1f}. Other processes on the machine slow every stage."]
    text = "\n".join(lines) + "\n"
    a.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

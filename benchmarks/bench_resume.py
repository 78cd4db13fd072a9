"""The fixed cost of a `project` run, out of a live follower's loop (issue 16; the test suite's
many small runs): a fresh store, a reopened store with nothing new, a reopened store with a
batch. Each run opens the store afresh (a new connection), as `pitlog project` and a restart do.

    python benchmarks/bench_resume.py [--tables 3] [--rounds 40] [--workdir /tmp/pitlog-resume]

Prints one JSON line per run: its seconds, and the seconds inside the detection steps
(refresh_stored_anomalies: the whole evaluation; Detector plan / evaluate / apply). Numbers in
benchmarks/results.md ("Live detection", session 9).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from timing import time_calls  # noqa: E402

import projections.incremental as incremental  # noqa: E402
from events.log.embedded.log import EmbeddedLog  # noqa: E402
from events.simulation.simulator import SimConfig, simulate  # noqa: E402
from projections.projector import project  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/pitlog-resume"))
    args = ap.parse_args()
    work = args.workdir
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    src = EmbeddedLog(work / "src")
    simulate(src, SimConfig(seed=3, tables=args.tables, rounds=args.rounds,
                            irregularities=0.05))
    records = [(r.key, r.value) for batch in src.read() for r in batch]
    src.close()
    spent: dict[str, float] = {}
    for name in ("plan", "evaluate", "apply"):
        time_calls(incremental.Detector, name, spent)
    time_calls(incremental, "refresh_stored_anomalies", spent)
    log = EmbeddedLog(work / "log")
    half = len(records) // 2
    for run, (start, stop) in (("fresh store, half the log", (0, half)),
                               ("reopened, nothing new", (half, half)),
                               ("reopened, the other half", (half, len(records)))):
        if stop > start:
            log.append(records[start:stop])
        spent.clear()
        t = time.perf_counter()
        report = project(log, str(work / "v.duckdb"), publish_alerts=False)
        print(json.dumps({"run": run, "events": report.events, "batches": report.batches,
                          "seconds": round(time.perf_counter() - t, 3),
                          **{k: round(v, 3) for k, v in spent.items()},
                          "load_average": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()

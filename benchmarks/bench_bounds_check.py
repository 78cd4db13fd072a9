"""The projector's load with and without the bounds check (projections/bounds.py), one process
per run, alternating: the whole load's CPU and wall time, and the seconds spent in the check.

Usage: benchmarks/bench_bounds_check.py --log LOG [--repeats 2]
(a log of ~200k events: pitlog simulate --tables 8 --rounds 1500 --log LOG)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from events.log.embedded.log import EmbeddedLog  # noqa: E402
from projections import bounds, projector  # noqa: E402
from projections.store import open_store  # noqa: E402


def one(log: Path, check: bool) -> None:
    spent = [0.0]
    split = bounds.split

    def timed(table):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            return split(table)
        finally:
            spent[0] += time.perf_counter() - start

    projector._bounds.split = timed if check else (lambda table: (table, []))  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "s.duckdb"
        open_store(db).close()  # the views made before the clock starts
        cpu, wall = time.process_time(), time.perf_counter()
        report = projector.project(EmbeddedLog(log), db, store_anomalies=False)
        print(f"{'with' if check else 'without'} check: {report.events} events, "
              f"{report.quarantined} quarantined, cpu {time.process_time() - cpu:.2f} s, "
              f"wall {time.perf_counter() - wall:.2f} s, in the check {spent[0]:.3f} s",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--one", choices=("with", "without"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one(args.log, args.one == "with")
        return
    for _ in range(args.repeats):
        for variant in ("without", "with"):
            subprocess.run([sys.executable, __file__, "--log", str(args.log), "--one", variant],
                           check=True)


if __name__ == "__main__":
    main()

"""Building the stored round_money rows whole, as the first read-write open of a store that
lacks them does (projections/round_money.py ensure_current), issue 19 item 5.

    python benchmarks/bench_round_money_build.py /work/stores/hround/s10m/pitlog.duckdb

The store is opened as the projector opens it (store.open_store: the writer's memory limit),
its round_money table dropped if present, then ensure_current builds it. Prints one JSON object:
wall and CPU seconds of the build, the process's peak RSS, the rows and the table's size. It
writes to the store: run it on a copy.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

from projections import round_money
from projections.reconcile import ROUND_MONEY
from projections.store import open_store


def _cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    args = ap.parse_args()
    with open_store(args.db) as con:
        con.execute(f"DROP TABLE IF EXISTS {ROUND_MONEY}")
        ((limit,),) = con.execute("SELECT current_setting('memory_limit')").fetchall()
        cpu, wall = _cpu(), time.perf_counter()
        built = round_money.ensure_current(con)
        wall, cpu = time.perf_counter() - wall, _cpu() - cpu
        ((rows,),) = con.execute(f"SELECT count(*) FROM {ROUND_MONEY}").fetchall()
    peak = 0.0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
    print(json.dumps({"db": args.db, "built": built, "memory_limit": limit,
                      "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                      "peak_rss_mb": round(peak, 1), "rounds": rows}))


if __name__ == "__main__":
    main()

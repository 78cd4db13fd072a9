"""Session 35 (benchmarks/results.md, "Session 35"): what planning each anomaly family costs a
live batch, on an empty window, so the time is DuckDB binding the family's statement and its
views, not evaluating rows; as a plain statement and as SQL `PREPARE` / `EXECUTE`.

    python benchmarks/bench_family_planning.py --db STORE.duckdb [--runs 3]

The store is opened by a detector as the projector opens it (incremental.Detector: the window
catalogs attached, the family statements made) and each family's statement is run on its own
cursor with an empty scope, `--runs` times each way, one after another. Nothing is written to
the store: the statements insert into the detector's in-memory scratch tables. Prints one JSON
line: per family, the wall seconds of every run, each way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import duckdb  # noqa: E402

from projections.incremental import Detector  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    con = duckdb.connect(str(args.db))
    detector = Detector(con)
    detector._ready()  # the catalogs and statements, as the first batch with events makes them
    out: dict[str, dict[str, list[float]]] = {}
    for i, family in enumerate(detector.families):
        cur = detector.cursors[i]
        plain = []
        for _ in range(args.runs):
            started = time.perf_counter()
            cur.execute(detector.inserts[i])
            plain.append(time.perf_counter() - started)
        cur.execute(f"PREPARE pitlog_bench_{i} AS {detector.inserts[i]}")
        prepared = []
        for _ in range(args.runs):
            started = time.perf_counter()
            cur.execute(f"EXECUTE pitlog_bench_{i}")
            prepared.append(time.perf_counter() - started)
        out[family] = {"plain": plain, "prepared": prepared}
    ((events,),) = con.execute("SELECT count(*) FROM events").fetchall()
    detector.close()
    con.close()
    print(json.dumps({"db": str(args.db), "events": events, "runs": args.runs,
                      "load": os.getloadavg(), "duckdb": duckdb.__version__,
                      "families": out}))


if __name__ == "__main__":
    main()

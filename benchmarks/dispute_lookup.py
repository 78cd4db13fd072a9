"""Dispute lookups on an existing store, after the projector has stored the anomaly rows.

    python benchmarks/dispute_lookup.py /tmp/pitlog-bench/10000000   # LOG and DB inside

Projects whatever is new (which stores the anomalies afresh), then times 20 dispute lookups at
the start times of 20 sampled rounds and prints p50 and p95. The suite's own dispute line
(benchmarks/run.py, `queries` group) is the one results.md reports.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import duckdb

from events.log.embedded.log import EmbeddedLog
from projections.dispute import dispute
from projections.projector import project


def main(folder: Path, lookups: int = 20) -> None:
    db = folder / "pitlog.duckdb"
    started = time.perf_counter()
    project(EmbeddedLog(folder / "log"), db)
    print(f"project + store anomalies: {time.perf_counter() - started:.1f} s")
    with duckdb.connect(str(db), read_only=True) as con:
        sample = con.execute(  # an int, not user text: SAMPLE takes no parameter
            f"SELECT table_id, started_at FROM rounds USING SAMPLE {int(lookups)} ROWS").fetchall()
        took = []
        for table, at in sample:
            t = time.perf_counter()
            dispute(con, table, at=at)
            took.append(time.perf_counter() - t)
    took.sort()
    print(f"dispute p50 {took[len(took) // 2]:.3f} s, p95 {took[int(len(took) * 0.95) - 1]:.3f} s")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

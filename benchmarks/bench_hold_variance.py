"""HOLD_VARIANCE's read (projections/statistics.py `hold_variance`), the checkout given.

    python benchmarks/bench_hold_variance.py /work/main STORE.duckdb 30   # old
    python benchmarks/bench_hold_variance.py . STORE.duckdb 30            # new

Run old and new in turn, each in its own process, on the same store (read-only). One warm-up
call, then `repeats` calls; prints one JSON object: the p50 wall and CPU per call, and a digest
of the rows, so old and new can be seen to agree.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
import time

repo, db, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, repo)
import duckdb  # noqa: E402

from projections.statistics import hold_variance  # noqa: E402

con = duckdb.connect(db, read_only=True)
rows = hold_variance(con)
walls, cpus = [], []
for _ in range(repeats):
    wall, cpu = time.perf_counter(), time.process_time()
    hold_variance(con)
    walls.append(time.perf_counter() - wall)
    cpus.append(time.process_time() - cpu)
print(json.dumps({
    "repo": repo, "rows": len(rows),
    "digest": hashlib.sha256(json.dumps(rows, default=str, sort_keys=True).encode()
                             ).hexdigest()[:16],
    "p50_wall_ms": round(statistics.median(walls) * 1e3, 2),
    "p50_cpu_ms": round(statistics.median(cpus) * 1e3, 2), "repeats": repeats}))

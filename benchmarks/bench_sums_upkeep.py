"""The running sums' upkeep per batch, old against new (issue 16 item 1).

    python benchmarks/bench_sums_upkeep.py /work/main OLD_DB shift_money 7
    python benchmarks/bench_sums_upkeep.py . NEW_DB running_sums 7

A batch that replaces a store's 200 latest rounds of round_money by themselves, in a
transaction rolled back after each repeat: the module's `note` of the rows about to go (-1),
their delete and insert, `note` of the rows that came (+1) and `apply`. The module is the one
that keeps the sums in the checkout given (`shift_money` before outcome_counts joined the
sums, `running_sums` since). Prints one JSON object: each repeat's wall and CPU seconds and
their medians.
"""

from __future__ import annotations

import importlib
import json
import resource
import statistics
import sys
import time

repo, db, module, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path.insert(0, repo)
import duckdb  # noqa: E402

sums = importlib.import_module(f"projections.{module}")
LATEST = ("CREATE TEMP TABLE latest AS SELECT * FROM round_money "
          "ORDER BY started_at DESC, table_id LIMIT 200")
SAME = ("r.table_id = l.table_id AND r.shoe_id IS NOT DISTINCT FROM l.shoe_id "
        "AND r.round_no = l.round_no")


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


con = duckdb.connect(db)
con.execute("SET enable_progress_bar = false")
walls, cpus = [], []
for _ in range(repeats):
    con.begin()
    con.execute(LATEST)
    t, c = time.perf_counter(), cpu()
    sums.note(con, f"SELECT r.* FROM round_money AS r, latest AS l WHERE {SAME}", -1)
    con.execute(f"DELETE FROM round_money AS r USING latest AS l WHERE {SAME}")
    con.execute("INSERT INTO round_money SELECT * FROM latest")
    sums.note(con, "SELECT * FROM latest", 1)
    sums.apply(con)
    walls.append(time.perf_counter() - t)
    cpus.append(cpu() - c)
    con.rollback()
print(json.dumps({"code": sums.__file__, "db": db, "walls": walls, "cpus": cpus,
                  "p50_wall": round(statistics.median(walls), 4),
                  "p50_cpu": round(statistics.median(cpus), 4)}))

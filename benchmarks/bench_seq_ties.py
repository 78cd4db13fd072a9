"""What breaking ties of seq by log offset costs the views (session 22), old beside new in one
process.

    python benchmarks/bench_seq_ties.py STORE.duckdb OLD_CHECKOUT/projections/sql [ROUNDS]

Copies the store's events into an in-memory database (in log order) and, ROUNDS times (6 by
default), creates the views from the old .sql files and from this checkout's in turns (the
order alternating by round), materialising `anomalies` and `ledger` whole each time (CREATE
TEMP TABLE AS SELECT *: planning included). Prints one JSON object: CPU seconds per round, the
medians, new / old, and the row counts (which must agree: on a store where no two events of a
table share a seq the answers are the same).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import duckdb  # noqa: E402

from projections.views import SQL_DIR, VIEW_FILES, create_views  # noqa: E402

VIEWS = ("anomalies", "ledger")


def main(store: str, old_dir: str, rounds: int) -> None:
    con = duckdb.connect()
    con.execute(f"ATTACH '{store}' AS src (READ_ONLY)")
    con.execute("CREATE TABLE events AS SELECT * FROM src.events "
                "ORDER BY log_partition, log_offset")
    con.execute("DETACH src")
    create_views(con)  # the red dog macros, the same on both sides
    sides = {"old": Path(old_dir), "new": SQL_DIR}
    cpu: dict[str, dict[str, list[float]]] = {s: {v: [] for v in VIEWS} for s in sides}
    rows: dict[str, dict[str, int]] = {s: {} for s in sides}
    for r in range(rounds):
        for side in (("old", "new") if r % 2 == 0 else ("new", "old")):
            for name in VIEW_FILES:
                con.execute((sides[side] / name).read_text())
            for view in VIEWS:
                start = time.process_time()
                con.execute(f"CREATE OR REPLACE TEMP TABLE x AS SELECT * FROM {view}")
                cpu[side][view].append(round(time.process_time() - start, 3))
                (rows[side][view],) = con.execute("SELECT count(*) FROM x").fetchone()
    medians = {s: {v: statistics.median(cpu[s][v]) for v in VIEWS} for s in sides}
    print(json.dumps({
        "events": con.execute("SELECT count(*) FROM events").fetchone()[0],
        "cpu_s": cpu, "median_cpu_s": medians, "rows": rows,
        "new_over_old": {v: round(medians["new"][v] / medians["old"][v], 3) for v in VIEWS}}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 6)

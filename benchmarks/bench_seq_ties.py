"""What breaking ties of seq by log offset costs the views (session 22), old beside new in one
process.

    python benchmarks/bench_seq_ties.py STORE.duckdb OLD_CHECKOUT/projections/sql [ROUNDS]

Copies the store's events into an in-memory database (in log order) and, ROUNDS times (6 by
default), creates the views from the old .sql files and from this checkout's in turns (the
order alternating by round), then materialises whole (CREATE TEMP TABLE AS SELECT *: planning
included) `anomalies`, `ledger` and each anomaly family on its own, and runs DUPLICATE_EVENT's
query three ways: as main had it (picks by seq over every id), with (seq, log_offset) keys over
every id, and as this checkout has it (the ids with copies first). Prints one JSON object: CPU
seconds per round, the medians, new / old, the row counts, and for nine views the rows of
old's not in new's and new's not in old's (EXCEPT ALL each way: on a store where no two events
of a table share a seq the answers must be the same, 0 and 0).
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

FAMILIES = ("streams", "shoes", "rounds", "places", "money", "tables")
VIEWS = ("anomalies", "ledger", *(f"anomalies_found_{f}" for f in FAMILIES))
_DUPLICATES = """
SELECT table_id, event_id, arg_max(shoe_id, {key}), arg_max(round_no, {key}),
       list(seq ORDER BY seq), count(*), max(occurred_at)
FROM {rows} WHERE event_id IS NOT NULL GROUP BY table_id, event_id HAVING count(*) > 1
"""
_COPIED = ("(SELECT * FROM events SEMI JOIN (SELECT table_id, event_id FROM events WHERE "
           "event_id IS NOT NULL GROUP BY ALL HAVING count(*) > 1) USING (table_id, event_id))")
COMPARED = ("anomalies", "ledger", "shoes", "rounds", "hands", "rack", "timeline", "wagers",
            "settlements")
DUPLICATE_QUERIES = {
    "by seq, every id (old)": _DUPLICATES.format(key="seq", rows="events"),
    "by (seq, log_offset), every id": _DUPLICATES.format(key="(seq, log_offset)", rows="events"),
    "by (seq, log_offset), ids with copies (new)": _DUPLICATES.format(key="(seq, log_offset)",
                                                                      rows=_COPIED),
}


def _cpu(con: duckdb.DuckDBPyConnection, sql: str) -> float:
    start = time.process_time()
    con.execute(sql)
    return round(time.process_time() - start, 4)


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
    dup: dict[str, list[float]] = {k: [] for k in DUPLICATE_QUERIES}
    dup_rows: dict[str, int] = {}
    for r in range(rounds):
        for side in (("old", "new") if r % 2 == 0 else ("new", "old")):
            for name in VIEW_FILES:
                con.execute((sides[side] / name).read_text())
            for view in VIEWS:
                cpu[side][view].append(
                    _cpu(con, f"CREATE OR REPLACE TEMP TABLE x AS SELECT * FROM {view}"))
                (rows[side][view],) = con.execute("SELECT count(*) FROM x").fetchone()
        for way, sql in DUPLICATE_QUERIES.items():
            dup[way].append(_cpu(con, f"CREATE OR REPLACE TEMP TABLE d AS {sql}"))
            (dup_rows[way],) = con.execute("SELECT count(*) FROM d").fetchone()
    for side in sides:
        for name in VIEW_FILES:
            con.execute((sides[side] / name).read_text())
        for view in COMPARED:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {side}_{view} AS SELECT * FROM {view}")
    differ = {view: [con.execute(f"SELECT count(*) FROM (SELECT * FROM {a}_{view} EXCEPT ALL "
                                 f"SELECT * FROM {b}_{view})").fetchone()[0]
                     for a, b in (("old", "new"), ("new", "old"))] for view in COMPARED}
    medians = {s: {v: statistics.median(cpu[s][v]) for v in VIEWS} for s in sides}
    print(json.dumps({
        "events": con.execute("SELECT count(*) FROM events").fetchone()[0],
        "cpu_s": cpu, "median_cpu_s": medians, "rows": rows,
        "new_over_old": {v: round(medians["new"][v] / medians["old"][v], 3) for v in VIEWS},
        "duplicate_event_query_cpu_s": dup,
        "duplicate_event_query_median_ms": {k: round(statistics.median(v) * 1000, 1)
                                            for k, v in dup.items()},
        "duplicate_event_query_rows": dup_rows,
        "rows_old_not_new_and_new_not_old": differ}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 6)

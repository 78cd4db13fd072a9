"""Session 37 (benchmarks/results.md, "Session 37"): what a change to the rules' SQL costs a
full evaluation, old beside new. The shoes and rounds families (the two this session's rule
changes touch) evaluated whole over a store's events, with the views of the pitlog tree first
on PYTHONPATH; run it once per tree, alternating:

    PYTHONPATH=OLD_TREE python benchmarks/bench_family_rules.py STORE.duckdb
    PYTHONPATH=NEW_TREE python benchmarks/bench_family_rules.py STORE.duckdb

The store's `events` are copied into an in-memory database (the store is opened read-only and
left as it was), the tree's views made there, then each family counted: its rows, and those of
the codes changed (EXTRA_CARD, MISSING_BURN, LATE_RAISE), with the wall and process CPU
seconds it took. Prints one JSON object.

Session 39: other relations may be named after the store (e.g. `ledger anomalies_found_tables
anomaly_round_facts`); each is then read whole, with its rows and a fingerprint of their
values (the sum of each row's hash), so old and new can be compared row for row.
"""

from __future__ import annotations

import json
import resource
import sys
import time

import duckdb

from projections.views import create_views

FAMILIES = ("anomalies_found_shoes", "anomalies_found_rounds")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    store = sys.argv[1]
    con = duckdb.connect()
    con.execute("ATTACH ? AS s (READ_ONLY)", [store])
    con.execute("CREATE TABLE events AS SELECT * FROM s.events")
    con.execute("DETACH s")
    create_views(con)
    out = {}
    for relation in sys.argv[2:]:
        wall, cpu = time.perf_counter(), _cpu()
        ((rows, print_),) = con.execute(
            f"SELECT count(*), sum(hash(t)::HUGEINT) FROM {relation} AS t").fetchall()
        out[relation] = {"rows": rows, "fingerprint": str(print_),
                         "wall_s": round(time.perf_counter() - wall, 2),
                         "cpu_s": round(_cpu() - cpu, 2)}
    for family in () if sys.argv[2:] else FAMILIES:
        wall, cpu = time.perf_counter(), _cpu()
        ((rows, extra, burns, late),) = con.execute(
            f"SELECT count(*), count(*) FILTER (code = 'EXTRA_CARD'), "
            f"count(*) FILTER (code = 'MISSING_BURN'), count(*) FILTER (code = 'LATE_RAISE') "
            f"FROM {family}").fetchall()
        out[family] = {"rows": rows, "extra_card": extra, "missing_burn": burns,
                       "late_raise": late, "wall_s": round(time.perf_counter() - wall, 2),
                       "cpu_s": round(_cpu() - cpu, 2)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()

"""The views' SQL old beside new on one store: what a change to the joins (rounds dealt with no
shoe joined NULL-safe, session 25) costs the queries that read them.

    python benchmarks/bench_view_joins.py --old OLD_CHECKOUT --new NEW_CHECKOUT \
        --db STORE.duckdb [--repeats 3] [--only shoes_family places_family]

Copies the store twice into a temporary folder (the views are made over each copy by its own
checkout's `open_store`, which writes them), then in turns old and new, each in a fresh
process, runs each query whole (`SELECT count(*), a digest of every row`) and prints one JSON
line per query and variant: CPU and wall seconds p50 over the repeats, peak RSS, rows and the
digest (old and new must give the same rows where the store has no round with no shoe). A
last line gives new / old per query. Not a test: a ratio measured in one run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from children import run_child  # noqa: E402

# The ledger whole (reconcile and the round money read it), the round money query, and the
# two anomaly families whose joins changed.
QUERIES = {
    "ledger": "SELECT * FROM ledger",
    "round_money": None,  # projections.reconcile.round_money_sql() of the checkout
    "rounds_family": "SELECT * FROM anomalies_found_rounds",
    "money_family": "SELECT * FROM anomalies_found_money",
    "wagers": "SELECT * FROM wagers",
    "hands": "SELECT * FROM hands",
    # session 30: MISSING_BURN's shortfall and the face-up placements (shoes), and
    # CARD_OUTSIDE_ROUND's placements (places)
    "shoes_family": "SELECT * FROM anomalies_found_shoes",
    "places_family": "SELECT * FROM anomalies_found_places",
}

_CHILD = """
import json, sys, time
from projections.store import open_store
from projections.reconcile import round_money_sql
from projections.reconcile import load_edges
db, name, sql = sys.argv[1], sys.argv[2], sys.argv[3]
con = open_store(db)
con.execute("SET threads = 1")
if name == "round_money":
    load_edges(con)
    sql = f"SELECT * FROM ({round_money_sql()})"
before, wall = usage(), time.perf_counter()
((rows, digest),) = con.execute(
    f"SELECT count(*), coalesce(sum(hash(q)), 0)::VARCHAR FROM ({sql}) AS q").fetchall()
print(json.dumps({"cpu_s": usage() - before, "wall_s": time.perf_counter() - wall,
                  "rows": rows, "digest": digest, "peak_rss_mb": peak_rss_mb()}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="+", choices=list(QUERIES), default=list(QUERIES),
                    help="the queries to run (default: all)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=Path(args.db).parent) as tmp:
        copies = {}
        for variant in ("old", "new"):
            copies[variant] = str(Path(tmp) / f"{variant}.duckdb")
            shutil.copyfile(args.db, copies[variant])
        summary = {}
        for name in args.only:
            sql = QUERIES[name]
            runs: dict[str, list[dict]] = {"old": [], "new": []}
            for _ in range(args.repeats):
                for variant in ("old", "new"):
                    checkout = getattr(args, variant)
                    code = f"import sys; sys.path.insert(0, {checkout!r})\n" + _CHILD
                    runs[variant].append(run_child(code, [copies[variant], name, sql or ""],
                                                   f"{variant} {name}"))
            for variant, got in runs.items():
                line = {"query": name, "variant": variant,
                        "cpu_s_p50": round(statistics.median(r["cpu_s"] for r in got), 3),
                        "wall_s_p50": round(statistics.median(r["wall_s"] for r in got), 3),
                        "peak_rss_mb": max(r["peak_rss_mb"] for r in got),
                        "rows": got[0]["rows"], "digest": got[0]["digest"]}
                print(json.dumps(line), flush=True)
                summary.setdefault(name, {})[variant] = line
        print(json.dumps({"summary": {
            name: {"cpu_new_over_old": round(v["new"]["cpu_s_p50"] / v["old"]["cpu_s_p50"], 3),
                   "same_rows": (v["new"]["rows"], v["new"]["digest"])
                   == (v["old"]["rows"], v["old"]["digest"])}
            for name, v in summary.items()}}))


if __name__ == "__main__":
    main()

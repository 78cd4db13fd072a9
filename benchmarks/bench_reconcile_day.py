"""A gaming day's reconciliation, old against new in one run (issue 19, item 5).

    python benchmarks/bench_reconcile_day.py /work/stores/hround/s1m/pitlog.duckdb \
        /work/stores/hround/s10m/pitlog.duckdb --repeats 3 --old-repo /work/main

For each store the busiest gaming day (06:00 to 06:00 UTC, the default calendar, as
measure.m_reconcile_day does) is looked up in a process of its own; then for each variant one
fresh child process opens the store read-only (as the CLI does when no `pitlog serve`
answers) and times `reconcile(con, ("table",), day=D)` `--repeats` times. Variants:

- new: projections/reconcile.py of this checkout: the store's stored round_money rows when
  they are current (projections/round_money.py), the views otherwise;
- old: the code of the checkout `--old-repo` (main), imported from there by the child; it
  computes the rounds and ledger views over every round (a store's round_money table is not
  read). Without `--old-repo`: this checkout's code with the memory cap lifted (session 12's
  comparison: reconcile.DEFAULT_MEMORY_LIMIT set to 10TB in the child);
- views: this checkout's code reading through the views, as for a store whose stored rows are
  behind (reconcile.stored_money_current made to answer False in the child).

The child reports each call's wall seconds, its CPU seconds (user + system, resource), its peak
RSS (VmHWM), the code's path and the rows' digest, so old and new are shown to give the same
rows. The variants alternate order between stores. Prints one JSON object per child, then a
summary.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from children import run_child  # noqa: E402  (a sibling script's module)

REPO = Path(__file__).resolve().parent.parent

_CHILD = """
import hashlib, json, sys, time
sys.path.insert(0, sys.argv[1])
import duckdb
from projections import reconcile as rc
db, variant, repeats, own = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1"
if variant == "old" and own:
    rc.DEFAULT_MEMORY_LIMIT = "10TB"  # memory_limit_at_most never raises: no cap
if variant == "views":
    rc.stored_money_current = lambda con: False
import datetime
day = datetime.date.fromisoformat(sys.argv[6])  # the parent's look-up (busiest_day)
with duckdb.connect(db, read_only=True) as con:  # its own connection, closed: as a CLI call
    ((events,),) = con.execute("SELECT count(*) FROM events").fetchall()
con = duckdb.connect(db, read_only=True)
con.execute("SET enable_progress_bar = false")
walls, cpus = [], []
for _ in range(repeats):
    c, t = usage(), time.perf_counter()
    rows = rc.reconcile(con, ("table",), day=day)
    walls.append(time.perf_counter() - t)
    cpus.append(usage() - c)
digest = hashlib.sha256(json.dumps(list(rows), default=str, sort_keys=True).encode()).hexdigest()
peak = peak_rss_mb()
print(json.dumps({"db": db, "variant": variant, "code": rc.__file__, "events": events,
                  "day": str(day),
                  "groups": len(rows), "walls": walls, "cpus": cpus,
                  "peak_rss_mb": round(peak, 1), "rows_sha256": digest[:16]}))
"""


# The busiest gaming day, in a process of its own: its scan of every event would otherwise
# count in the measured child's peak RSS.
_DAY = """
import sys, duckdb
with duckdb.connect(sys.argv[1], read_only=True) as con:
    print(con.execute("SELECT CAST(occurred_at - INTERVAL 6 HOUR AS DATE) AS d FROM events "
                      "GROUP BY d ORDER BY count(*) DESC, d LIMIT 1").fetchall()[0][0])
"""


def busiest_day(db: str) -> str:
    out = subprocess.run([sys.executable, "-c", _DAY, db], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


def child(db: str, variant: str, repeats: int, old_repo: str | None,
          day: str) -> dict[str, object]:
    repo = old_repo if variant == "old" and old_repo else str(REPO)
    return run_child(_CHILD, [repo, db, variant, str(repeats), "0" if old_repo else "1", day],
                     f"{variant} on {db}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dbs", nargs="+")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variants", default="old,new")
    ap.add_argument("--old-repo", default=None,
                    help="a checkout of the old code (main), imported by the 'old' child")
    args = ap.parse_args()
    results = []
    for i, db in enumerate(args.dbs):
        variants = args.variants.split(",")
        day = busiest_day(db)
        for variant in variants if i % 2 == 0 else variants[::-1]:
            res = child(db, variant, args.repeats, args.old_repo, day)
            print(json.dumps(res), flush=True)
            results.append(res)
    summary = [{"db": r["db"], "variant": r["variant"], "events": r["events"],
                "day": r["day"], "p50_s": round(statistics.median(r["walls"]), 2),
                "cpu_p50_s": round(statistics.median(r["cpus"]), 2),
                "peak_rss_mb": r["peak_rss_mb"], "rows_sha256": r["rows_sha256"]}
               for r in results]
    print(json.dumps({"summary": summary}))


if __name__ == "__main__":
    main()

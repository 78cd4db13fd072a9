"""A gaming day's reconciliation, old against new in one run (issue 19, item 5).

    python benchmarks/bench_reconcile_day.py /work/stores/s1m/pitlog.duckdb \
        /work/stores/s10m/pitlog.duckdb --repeats 3

For each store and each variant, one fresh child process opens the store read-only (as the
CLI does when no `pitlog serve` answers), picks the busiest gaming day (06:00 to 06:00 UTC, the
default calendar, as measure.m_reconcile_day does), then times `reconcile(con, ("table",),
day=D)` `--repeats` times. Variants:

- new: projections/reconcile.py as it is (run_rows caps DuckDB's memory_limit at
  memory.DEFAULT_MEMORY_LIMIT and its threads at one for the query);
- old: the same code with the memory cap lifted (reconcile.DEFAULT_MEMORY_LIMIT set to 10TB
  in the child, so memory_limit_at_most never lowers anything): the read-only connection keeps
  DuckDB's default of 80% of the machine's memory, as before the cap. Its query still runs on
  one thread; for main's code itself, time `pitlog reconcile` from a main checkout.

The child reports each call's wall seconds, its CPU seconds (user + system, resource), its peak
RSS (VmHWM) and the rows' digest, so old and new are shown to give the same rows. The variants
alternate order between stores. Prints one JSON object per child, then a summary.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_CHILD = """
import hashlib, json, resource, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import duckdb
from projections import reconcile as rc
db, variant, repeats = sys.argv[2], sys.argv[3], int(sys.argv[4])
if variant == "old":
    rc.DEFAULT_MEMORY_LIMIT = "10TB"  # memory_limit_at_most never raises: no cap
with duckdb.connect(db, read_only=True) as con:  # its own connection, closed: as a CLI call
    ((day,),) = con.execute(
        "SELECT CAST(occurred_at - INTERVAL 6 HOUR AS DATE) AS d FROM events "
        "GROUP BY d ORDER BY count(*) DESC, d LIMIT 1").fetchall()
    ((events,),) = con.execute("SELECT count(*) FROM events").fetchall()
con = duckdb.connect(db, read_only=True)
con.execute("SET enable_progress_bar = false")
def usage():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime
walls, cpus = [], []
for _ in range(repeats):
    c, t = usage(), time.perf_counter()
    rows = rc.reconcile(con, ("table",), day=day)
    walls.append(time.perf_counter() - t)
    cpus.append(usage() - c)
digest = hashlib.sha256(json.dumps(list(rows), default=str, sort_keys=True).encode()).hexdigest()
peak = 0.0
for line in Path("/proc/self/status").read_text().splitlines():
    if line.startswith("VmHWM:"):
        peak = int(line.split()[1]) / 1024
print(json.dumps({"db": db, "variant": variant, "events": events, "day": str(day),
                  "groups": len(rows), "walls": walls, "cpus": cpus,
                  "peak_rss_mb": round(peak, 1), "rows_sha256": digest[:16]}))
"""


def child(db: str, variant: str, repeats: int) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(REPO), db, variant, str(repeats)],
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{variant} on {db} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dbs", nargs="+")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variants", default="old,new")
    args = ap.parse_args()
    results = []
    for i, db in enumerate(args.dbs):
        variants = args.variants.split(",")
        for variant in variants if i % 2 == 0 else variants[::-1]:
            res = child(db, variant, args.repeats)
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

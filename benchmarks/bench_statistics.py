"""OUTCOME_FREQUENCY and the statistical anomalies at read time, old against new in one run
(issue 16 item 1: "the statistical codes keep running sums ... instead of rescanning").

    python benchmarks/bench_statistics.py OLD_DB:NEW_DB [OLD_DB:NEW_DB ...] --repeats 3 \
        --old-repo /work/main

Each pair is one store twice: OLD_DB projected by the old code (main, `--old-repo`), NEW_DB
by this checkout, so that each has the stored round_money rows its own code reads (the table's
definition differs, and a reader uses the rows only when built by its own definition). For
each pair and variant, one fresh child process opens its store read-only, as a CLI call does,
and times `--repeats` calls of:

- outcome_frequency(con, min_rounds=1): the old code counts every round through the `rounds`
  and `shoes` views; the new one reads each stored round's decks and outcome (round_money);
- statistical_anomalies(con): the above and HOLD_VARIANCE, which both codes read from the
  stored round_money rows; what `pitlog anomalies` adds to its rule rows unless
  --no-statistics.

The child reports each call's wall and CPU seconds (user + system), its peak RSS (VmHWM) and
a digest of the rows, so old and new are shown to give the same answer. The variants
alternate order between pairs. Prints one JSON object per child, then a summary.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from children import run_child  # noqa: E402  (a sibling script's module)

REPO = Path(__file__).resolve().parent.parent

_CHILD = """
import hashlib, json, sys, time
sys.path.insert(0, sys.argv[1])
import duckdb
from projections import statistics as st
db, what, repeats = sys.argv[2], sys.argv[3], int(sys.argv[4])
con = duckdb.connect(db, read_only=True)
con.execute("SET enable_progress_bar = false")
((events,),) = con.execute("SELECT count(*) FROM events").fetchall()
# min_rounds=1: every table's test is computed and in the digest (a table of the 1M store has
# about 250 rounds, fewer than the 500 a flag needs, so the default returns none).
call = ((lambda con: st.outcome_frequency(con, min_rounds=1)) if what == "outcome_frequency"
        else st.statistical_anomalies)
walls, cpus = [], []
for _ in range(repeats):
    c, t = usage(), time.perf_counter()
    rows = call(con)
    walls.append(time.perf_counter() - t)
    cpus.append(usage() - c)
digest = hashlib.sha256(json.dumps(list(rows), default=str, sort_keys=True).encode()).hexdigest()
print(json.dumps({"db": db, "call": what, "code": st.__file__, "events": events,
                  "rows": len(rows), "walls": walls, "cpus": cpus,
                  "peak_rss_mb": peak_rss_mb(), "rows_sha256": digest[:16]}))
"""


def child(repo: str, db: str, what: str, repeats: int) -> dict[str, object]:
    return run_child(_CHILD, [repo, db, what, str(repeats)], f"{what} on {db}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pairs", nargs="+", help="OLD_DB:NEW_DB")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--old-repo", required=True,
                    help="a checkout of the old code (main), imported by the 'old' child")
    args = ap.parse_args()
    results = []
    for i, pair in enumerate(args.pairs):
        old_db, new_db = pair.split(":")
        variants = [("old", args.old_repo, old_db), ("new", str(REPO), new_db)]
        for what in ("outcome_frequency", "statistical_anomalies"):
            for variant, repo, db in variants if i % 2 == 0 else variants[::-1]:
                res = {"variant": variant, **child(repo, db, what, args.repeats)}
                print(json.dumps(res), flush=True)
                results.append(res)
    summary = [{"variant": r["variant"], "call": r["call"], "events": r["events"],
                "p50_s": round(statistics.median(r["walls"]), 3),
                "cpu_p50_s": round(statistics.median(r["cpus"]), 3),
                "peak_rss_mb": r["peak_rss_mb"], "rows": r["rows"],
                "rows_sha256": r["rows_sha256"]} for r in results]
    print(json.dumps({"summary": summary}))


if __name__ == "__main__":
    main()

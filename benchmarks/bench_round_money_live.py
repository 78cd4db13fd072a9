"""What keeping the stored round_money rows adds to a live batch (issue 19 item 5, issue 16),
old beside new in one run.

    python benchmarks/bench_round_money_live.py --source /work/stores/hround/live/src \
        --workdir /work/stores/hkeep14/live --history 975000 --batches 12 --events 1000 \
        --old-repo /work/main --repeats 2

`--source` is an embedded log (a copy of a simulated evening; it is only read). Its partitions
are cut at the same fraction (bench_live.split): the first `--history` records go to a fresh log
WORKDIR/h<history>/base/log and are projected once (the rebuild path: the anomalies evaluated
whole and round_money built whole, timed), and the next `--batches` x `--events` records are
kept as the feed (`--reuse`: a base already there is used as it is). Then, per variant and
repeat (the variants alternate), a fresh copy of the base (its checkpoints moved to the copy's
log) is fed in one child process: `--batches` times the next `--events` records are appended
and project() commits them as one batch. Variants:

- new: this checkout's code (projections/round_money.py: only the rounds a batch can change are
  computed again, Keeper.evaluate);
- old: the code of the checkout `--old-repo` (main), imported from there by the child.

Per batch: the detector's cost (Detector.plan + evaluate + apply) beside the round_money
keeper's (Keeper.evaluate + apply), wall seconds, and the process's CPU seconds for the whole
project() call. The child ends by comparing the stored rows with the round_money query over
the views (EXCEPT ALL both ways: `differences` 0 is exact) unless `--no-check`. Prints one JSON
object per child, then a summary; benchmarks/results.md has the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

_CHILD = r"""
import json, pickle, resource, statistics, sys, time
from pathlib import Path
repo, here, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
events, check = int(sys.argv[4]), sys.argv[5] == "1"
sys.path.insert(0, repo)
sys.path.insert(1, here)
import duckdb
from timing import time_calls
from events.log.embedded.log import EmbeddedLog
from projections import incremental, round_money
from projections.projector import project
from projections.reconcile import ROUND_MONEY, load_edges, round_money_sql, stored_money_current

spent = {}
for owner, names in ((incremental.Detector, ("plan", "evaluate", "apply")),
                     (round_money.Keeper, ("evaluate", "apply"))):
    for name in names:
        time_calls(owner, name, spent, f"{owner.__name__}.{name}")
feed = pickle.loads((work / "feed.pkl").read_bytes())
log = EmbeddedLog(work / "log")
con = duckdb.connect(str(work / "v.duckdb"))
con.execute("SET memory_limit = '512MB'")  # the read-write default (store.py)
# The copy's own log, in every table of checkpoints the code that made the base keeps (the
# store's, and those of the rows kept with it: anomalies, round money, shift sums).
for (table,) in con.execute(
        "SELECT table_name FROM duckdb_columns() WHERE column_name = 'source' "
        "AND database_name = current_database() AND schema_name = 'main' "
        "AND (table_name = 'checkpoints' OR table_name LIKE '%\\_at' ESCAPE '\\')").fetchall():
    con.execute(f"UPDATE {table} SET source = ?", [log.uri])
def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime
project(log, con, publish_alerts=False)  # nothing new: the keeper and detector made ready
batches = []
for i in range(len(feed) // events):
    log.append(feed[i * events:(i + 1) * events])
    spent.clear()
    c, t = cpu(), time.perf_counter()
    report = project(log, con, batch_size=events * 2, publish_alerts=False)
    total, used = time.perf_counter() - t, cpu() - c
    detector = sum(v for k, v in spent.items() if k.startswith("Detector."))
    keeper = sum(v for k, v in spent.items() if k.startswith("Keeper."))
    ((window,),) = con.execute("SELECT count(*) FROM pitlog_detect.main.events").fetchall()
    batches.append({"batches": report.batches, "window": window, "project_s": round(total, 3),
                    "project_cpu_s": round(used, 3), "detector_s": round(detector, 3),
                    "round_money_s": round(keeper, 3),
                    **{k: round(v, 3) for k, v in spent.items()}})
out = {"code": round_money.__file__, "current": stored_money_current(con), "batches": batches}
out["median"] = {k: round(statistics.median(b[k] for b in batches), 3)
                 for k in ("project_s", "project_cpu_s", "detector_s", "round_money_s",
                           "Keeper.evaluate", "Keeper.apply", "window")}
if check:
    load_edges(con)
    view = f"({round_money_sql()})"
    ((diff,),) = con.execute(f"SELECT count(*) FROM ((SELECT * FROM {ROUND_MONEY} EXCEPT ALL "
                             f"SELECT * FROM {view}) UNION ALL (SELECT * FROM {view} "
                             f"EXCEPT ALL SELECT * FROM {ROUND_MONEY}))").fetchall()
    ((rows,),) = con.execute(f"SELECT count(*) FROM {ROUND_MONEY}").fetchall()
    out.update(differences=diff, rows=rows)
con.close()
log.close()
print(json.dumps(out))
"""


def prepare(source: Path, base: Path, history: int, feed_records: int) -> dict[str, float]:
    """The projected history and the feed after it, in `base`."""
    sys.path.insert(0, str(REPO))
    sys.path.insert(1, str(HERE))
    import duckdb
    from bench_live import split
    from timing import time_calls

    from events.log.embedded.log import EmbeddedLog
    from projections import round_money
    from projections.projector import project

    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    feed = split(source, base / "log", history, feed_records)
    (base / "feed.pkl").write_bytes(pickle.dumps(feed))
    build: dict[str, float] = {}
    time_calls(round_money, "build_whole", build, "seconds")
    log = EmbeddedLog(base / "log")
    con = duckdb.connect(str(base / "v.duckdb"))
    con.execute("SET memory_limit = '512MB'")
    t0 = time.perf_counter()
    project(log, con, publish_alerts=False)
    history_s = time.perf_counter() - t0
    ((events,),) = con.execute("SELECT count(*) FROM events").fetchall()
    ((rounds,),) = con.execute("SELECT count(*) FROM round_money").fetchall()
    con.close()
    log.close()
    made = {"history_events": events, "rounds": rounds, "history_project_s": round(history_s, 1),
            "round_money_build_s": round(build.get("seconds", 0.0), 2)}
    (base / "made.json").write_text(json.dumps(made))
    return made


def run(variant: str, repo: str, base: Path, work: Path, events: int,
        check: bool) -> dict[str, object]:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(base, work, ignore=shutil.ignore_patterns("*.wal", "made.json"))
    load = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", _CHILD, repo, str(HERE), str(work), str(events),
                          "1" if check else "0"], capture_output=True, text=True, cwd="/")
    if out.returncode:
        raise SystemExit(f"{variant} failed:\n{out.stderr[-3000:]}")
    res = json.loads(next(line for line in reversed(out.stdout.splitlines())
                          if line.startswith("{")))
    shutil.rmtree(work, ignore_errors=True)
    return {"variant": variant, "load_before": round(load, 2),
            "load_after": round(os.getloadavg()[0], 2), **res}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--history", type=int, default=975_000)
    ap.add_argument("--batches", type=int, default=12)
    ap.add_argument("--events", type=int, default=1000)
    ap.add_argument("--old-repo", default=None, help="a checkout of the old code (main)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--variants", default="old,new")
    ap.add_argument("--reuse", action="store_true", help="use WORKDIR's prepared base as is")
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args()
    base = args.workdir / f"h{args.history}" / "base"
    if args.reuse and (base / "made.json").exists():
        made = json.loads((base / "made.json").read_text())
    else:
        made = prepare(args.source, base, args.history, args.batches * args.events)
    print(json.dumps(made), flush=True)
    repos = {"new": str(REPO), "old": args.old_repo}
    variants = [(v, repos[v]) for v in args.variants.split(",") if repos[v]]
    results = []
    for i in range(args.repeats):
        for variant, repo in variants if i % 2 == 0 else variants[::-1]:
            res = run(variant, repo, base, args.workdir / f"h{args.history}" / variant,
                      args.events, not args.no_check)
            print(json.dumps(res), flush=True)
            results.append(res)
    summary = []
    for variant, _ in variants:
        mine = [r for r in results if r["variant"] == variant]
        if not mine:
            continue
        every = [b for r in mine for b in r["batches"]]  # type: ignore[union-attr]
        summary.append({"variant": variant, "batches": len(every), **{
            f"{k}_p50": round(statistics.median(b[k] for b in every), 3)
            for k in ("project_s", "project_cpu_s", "detector_s", "round_money_s",
                      "Keeper.evaluate", "window")},
            "differences": [r.get("differences") for r in mine],
            "current": [r["current"] for r in mine]})
    print(json.dumps({"summary": summary}))


if __name__ == "__main__":
    main()

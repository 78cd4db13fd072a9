"""What keeping the stored round_money rows adds to a live batch (issue 19 item 5).

    python benchmarks/bench_round_money_live.py --source /work/stores/hround/live/src \
        --workdir /work/stores/hround/live --history 985000 --batches 5 --events 1000

`--source` is an embedded log (a copy of a simulated evening; it is only read). Its partitions
are cut at the same fraction (bench_live.split): the first `--history` records go to a fresh log
WORKDIR/h<history>/log and are projected (the rebuild path: the anomalies evaluated whole and
round_money built whole, each timed); then `--batches` times the next `--events` records are
appended and project() commits them as one batch. Per batch: the detector's cost
(Detector.plan + evaluate + apply) beside the round_money keeper's (Keeper.evaluate + apply),
wall seconds. Prints one JSON object; benchmarks/results.md has the numbers.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import duckdb  # noqa: E402
from bench_live import split  # noqa: E402
from timing import time_calls  # noqa: E402

from events.log.embedded.log import EmbeddedLog  # noqa: E402
from projections import incremental, round_money  # noqa: E402
from projections.projector import project  # noqa: E402
from projections.reconcile import stored_money_current  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--history", type=int, default=985_000)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--events", type=int, default=1000)
    args = ap.parse_args()
    work = args.workdir / f"h{args.history}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    feed = split(args.source, work / "log", args.history, args.batches * args.events)
    spent: dict[str, float] = {}
    for owner, names in ((incremental.Detector, ("plan", "evaluate", "apply")),
                         (round_money.Keeper, ("evaluate", "apply"))):
        for name in names:
            time_calls(owner, name, spent, f"{owner.__name__}.{name}")
    build: dict[str, float] = {}
    time_calls(round_money, "build_whole", build, "seconds")
    con = duckdb.connect(str(work / "v.duckdb"))
    con.execute("SET memory_limit = '512MB'")  # the read-write default (store.py)
    log = EmbeddedLog(work / "log")
    t0 = time.perf_counter()
    project(log, con, publish_alerts=False)
    history_s = time.perf_counter() - t0
    ((events,),) = con.execute("SELECT count(*) FROM events").fetchall()
    ((rounds,),) = con.execute("SELECT count(*) FROM round_money").fetchall()
    batches = []
    for i in range(args.batches):
        log.append(feed[i * args.events:(i + 1) * args.events])
        spent.clear()
        t = time.perf_counter()
        report = project(log, con, batch_size=args.events * 2, publish_alerts=False)
        total = time.perf_counter() - t
        detector = sum(v for k, v in spent.items() if k.startswith("Detector."))
        keeper = sum(v for k, v in spent.items() if k.startswith("Keeper."))
        batches.append({"batches": report.batches, "project_s": round(total, 3),
                        "detector_s": round(detector, 3), "round_money_s": round(keeper, 3),
                        **{k: round(v, 3) for k, v in spent.items()}})
    ok = stored_money_current(con)
    con.close()
    log.close()
    med = {k: round(statistics.median(b[k] for b in batches), 3)
           for k in ("project_s", "detector_s", "round_money_s")}
    print(json.dumps({"history_events": events, "rounds": rounds,
                      "history_project_s": round(history_s, 1),
                      "round_money_build_s": round(build.get("seconds", 0.0), 2),
                      "events_per_batch": args.events, "batches": batches, "median": med,
                      "round_money_current": ok}))


if __name__ == "__main__":
    main()

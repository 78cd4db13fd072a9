"""Session 33's old-beside-new measurements (benchmarks/results.md, "Session 33"): run this
file from each build's tree in turn (PYTHONPATH=<tree>, cwd <tree>), old and new alternating.

    python benchmarks/bench_money_outside.py build COPY_OF_1M.duckdb
        round_money.build_whole on a copy of a projected store (it writes: use a fresh copy each
        run); CPU and wall seconds, the rows (all, with a round)
    python benchmarks/bench_money_outside.py batches LOG NEW.duckdb [--batch 250]
        project(LOG) into a new store in batches of --batch, no alerts published; CPU, wall
    python benchmarks/bench_money_outside.py parse [--lines examples/devices.jsonl]
        parse_line over the file's lines x 3,000, five rounds: microseconds a line

The session's log for `batches`: `pitlog simulate --log LOG --tables 8 --rounds 60
--irregularities 0.02 --seed 3` (8,503 events).
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path


def _build(db: str) -> dict[str, object]:
    import duckdb

    from projections import round_money
    from projections.reconcile import ROUND_MONEY

    con = duckdb.connect(db)
    con.execute("SET memory_limit = '2GB'")
    cpu, wall = time.process_time(), time.perf_counter()
    round_money.build_whole(con)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    ((rows, rounds),) = con.execute(
        f"SELECT count(*), count(round_no) FROM {ROUND_MONEY}").fetchall()
    return {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "rows": rows, "rounds": rounds,
            "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def _batches(log_dir: str, db: str, batch: int) -> dict[str, object]:
    import duckdb

    from events.log.embedded.log import EmbeddedLog
    from projections.projector import project

    log, con = EmbeddedLog(Path(log_dir)), duckdb.connect(db)
    cpu, wall = time.process_time(), time.perf_counter()
    project(log, con, batch_size=batch, publish_alerts=False)
    return {"cpu_s": round(time.process_time() - cpu, 2),
            "wall_s": round(time.perf_counter() - wall, 2)}


def _parse(path: str) -> dict[str, object]:
    from events.recording.device_line import parse_line

    lines = [raw.rstrip(b"\n") for raw in Path(path).read_bytes().splitlines(keepends=True)]
    for raw in lines:
        parse_line(raw)
    rounds = []
    for _ in range(5):
        cpu = time.process_time()
        for _ in range(3000):
            for raw in lines:
                parse_line(raw)
        rounds.append(round((time.process_time() - cpu) / (3000 * len(lines)) * 1e6, 2))
    return {"us_per_line": rounds, "best": min(rounds)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    sub.add_parser("build").add_argument("db")
    b = sub.add_parser("batches")
    b.add_argument("log")
    b.add_argument("db")
    b.add_argument("--batch", type=int, default=250)
    sub.add_parser("parse").add_argument("--lines", default="examples/devices.jsonl")
    args = ap.parse_args()
    if args.what == "build":
        out = _build(args.db)
    elif args.what == "batches":
        out = _batches(args.log, args.db, args.batch)
    else:
        out = _parse(args.lines)
    print(json.dumps({"what": args.what, **out}))


if __name__ == "__main__":
    main()

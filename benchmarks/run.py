"""The benchmark suite: one command, every measurement in its own child process.

    python benchmarks/run.py [--sizes 1000000,10000000] [--repeats 3] [--quick]

Writes benchmarks/results.md and benchmarks/results.json (README.md explains how to read them),
and each child's raw output to benchmarks/out/. Data lives under --workdir (default
/tmp/pitlog-bench), never in the repository. Per size: simulate a casino floor into the
embedded log (that log is then the dataset of every other measurement), append it to a fresh
log, produce it to Kafka and consume it, project it (the floor, pitlog's projector, and the
projector's previous per-message decode, interleaved in each repeat so every ratio compares
runs made under the same load), then time shoe replays, dispute lookups and a gaming day's
reconciliation on the projected store. Results of earlier invocations for other sizes or
measurements are kept (use --fresh to drop them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

import report  # noqa: E402  (benchmarks/report.py)

OUT = HERE / "out"
TABLES = 40  # a large floor's red dog pit; a longer log is more hours of the same tables
GROUPS = ("simulate", "append", "kafka", "project", "ideas", "queries")


def child(name: str, args: dict[str, Any], log_name: str) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter; its JSON result, or {"error": ...}."""
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, str(HERE / "measure.py"), name, json.dumps(args)],
                          capture_output=True, text=True, cwd=REPO)
    (OUT / f"{log_name}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"  {log_name}: FAILED ({tail})", flush=True)
        return {"error": tail, "load_before": load}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["load_before"] = load
    result["child_seconds"] = time.perf_counter() - started
    print(f"  {log_name}: {report.describe(name, result)}", flush=True)
    return result


def events_per_round(work: Path) -> float:
    """A pilot simulation: how many events a round of this simulator makes."""
    res = child("simulate", {"log": str(work / "pilot"), "tables": 2, "rounds": 300}, "pilot")
    shutil.rmtree(work / "pilot", ignore_errors=True)
    return res["events"] / res["rounds"]


def run_size(size: int, slow_repeats: int, work: Path, epr: float, groups: set[str],
             bootstrap: str | None, lookups: int, batch_size: int | None,
             per_message: bool, memory_limit: str | None, variants: set[str],
             ) -> list[dict[str, Any]]:
    base = work / str(size)
    base.mkdir(parents=True, exist_ok=True)
    dataset, db = base / "log", base / "pitlog.duckdb"
    rows: list[dict[str, Any]] = []

    def record(measure: str, rep: int, res: dict[str, Any], variant: str = "") -> None:
        rows.append({"measure": measure, "variant": variant, "size": size, "repeat": rep,
                     **res})

    rounds = math.ceil(size / (TABLES * epr))
    if "simulate" in groups or not (dataset / "meta.json").exists():
        for rep in range(slow_repeats if "simulate" in groups else 1):
            record("simulate", rep, child("simulate", {"log": str(dataset), "tables": TABLES,
                                                       "rounds": rounds}, f"simulate-{size}-{rep}"))
    src = {"source": str(dataset)}
    if "append" in groups:
        for rep in range(slow_repeats):
            record("append", rep, child("append", {**src, "log": str(base / "append-log")},
                                        f"append-{size}-{rep}"))
    if "kafka" in groups and bootstrap:
        for rep in range(slow_repeats):
            topic = f"bench-{size}-{rep}-{uuid.uuid4().hex[:6]}"
            kafka = {**src, "bootstrap": bootstrap, "topic": topic}
            record("kafka_produce", rep, child("kafka_produce", kafka, f"produce-{size}-{rep}"))
            record("kafka_consume", rep, child("kafka_consume", kafka, f"consume-{size}-{rep}"))
    if "project" in groups:
        if batch_size:
            src = {**src, "batch_size": batch_size}
        # Only a run of 10M or more pauses at its first tenth (measure.m_project): a smaller
        # run is the plain baseline of the across-runs ratios, and pausing it would add a
        # second process's start-up and a second open of the store to it.
        trio = [("floor", "floor", {"db": str(base / "floor.duckdb")}),
                ("project", "batch", {"db": str(db), "first_tenth": size >= 10_000_000})]
        if memory_limit:  # the projector again, with DuckDB's buffer pool capped
            trio.append(("project", "batch_memory_limit", {
                "db": str(base / "memory-limit.duckdb"), "memory_limit": memory_limit}))
        if per_message:  # the previous decode: a reference, skipped at large sizes for time
            trio.append(("project", "per_message", {"db": str(base / "per-message.duckdb"),
                                                    "variant": "per_message"}))
        trio = [t for t in trio if t[1] in variants]
        for rep in range(slow_repeats):
            # Alternate the order, so neither side always runs first (or last) in a repeat.
            for measure, variant, extra in trio if rep % 2 == 0 else trio[::-1]:
                record(measure, rep, child(measure, {**src, **extra},
                                           f"{measure}-{variant}-{size}-{rep}"), variant)
        for other in ("per-message.duckdb", "memory-limit.duckdb"):
            if db.with_name(other).exists():
                db.with_name(other).unlink()
        if not db.exists():  # the store the query measurements read
            child("project", {**src, "db": str(db)}, f"project-store-{size}")
    if "ideas" in groups:
        ideas = {"source": str(dataset), "messages": min(size, 200_000)}
        record("decode_ideas", 0, child("decode_ideas", ideas, f"decode-ideas-{size}"))
    if "queries" in groups:
        q = {"db": str(db), "lookups": lookups}
        child("views", {"db": str(db)}, f"views-{size}")
        for measure in ("replay", "dispute", "dispute_parts"):
            record(measure, 0, child(measure, q, f"{measure}-{size}"))
        record("reconcile_day", 0, child("reconcile_day", {**q, "lookups": 5},
                                         f"reconcile-day-{size}"))
    return rows


def start_kafka(work: Path) -> Any:
    sys.path.insert(0, str(REPO / "tools"))
    import kafka_broker  # tools/ is not a package

    state = work / "kafka"
    shutil.rmtree(state, ignore_errors=True)
    return kafka_broker.start_broker(state, heap="1g")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,10000000",
                        help="events per dataset, comma separated")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each measurement")
    parser.add_argument("--once-above", type=int, default=2_000_000,
                        help="sizes above this run the slow measurements (simulate, append, "
                             "Kafka, projection) once instead of --repeats times")
    parser.add_argument("--per-message-max", type=int, default=2_000_000,
                        help="largest size at which the previous per-message projector is "
                             "also measured (a reference, not a requirement)")
    parser.add_argument("--memory-limit", default=None,
                        help="also project with DuckDB's memory_limit set to this (e.g. 512MB), "
                             "to show what of the peak RSS is DuckDB's cache of written blocks")
    parser.add_argument("--variants", default="floor,batch,per_message,batch_memory_limit",
                        help="which projections the project group runs")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 50k events, one repeat, 5 lookups")
    parser.add_argument("--only", default=",".join(GROUPS),
                        help=f"measurement groups to run, of {','.join(GROUPS)}")
    parser.add_argument("--no-kafka", action="store_true", help="skip the Kafka broker")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="projection batch (floor and projector alike); default: the "
                             "projector's DEFAULT_BATCH_SIZE")
    parser.add_argument("--lookups", type=int, default=20, help="replays and disputes per size")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/pitlog-bench"))
    parser.add_argument("--fresh", action="store_true", help="forget earlier results")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite results.md and the summary from results.json, run nothing")
    args = parser.parse_args()
    if args.report_only:
        meta = json.loads((HERE / "results.json").read_text())["meta"]
        report.write([], meta, HERE / "results.json", HERE / "results.md", keep=True)
        return
    sizes = [50_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    repeats = 1 if args.quick else args.repeats
    lookups = 5 if args.quick else args.lookups
    groups = set(args.only.split(","))
    OUT.mkdir(exist_ok=True)
    args.workdir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    broker = None
    if "kafka" in groups and not args.no_kafka:
        print("starting a Kafka broker", flush=True)
        broker = start_kafka(args.workdir)
    rows: list[dict[str, Any]] = []
    try:
        epr = events_per_round(args.workdir)
        for size in sizes:
            slow = 1 if size > args.once_above else repeats
            print(f"size {size:,} ({slow} run(s) of the slow measurements)", flush=True)
            rows += run_size(size, slow, args.workdir, epr, groups,
                             broker.bootstrap if broker else None, lookups, args.batch_size,
                             size <= args.per_message_max, args.memory_limit,
                             set(args.variants.split(",")))
    finally:
        if broker is not None:
            broker.stop()
            shutil.rmtree(args.workdir / "kafka", ignore_errors=True)
    meta = {"finished": time.strftime("%Y-%m-%d %H:%M:%S"), "minutes": (time.time() - started) / 60,
            "command": " ".join(sys.argv), "cpus": os.cpu_count(), "python": sys.version.split()[0]}
    report.write(rows, meta, HERE / "results.json", HERE / "results.md", keep=not args.fresh)


if __name__ == "__main__":
    main()

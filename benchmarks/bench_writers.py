"""The writers, old against new in one run (issue 19, item 3): `pitlog simulate` and
`pitlog ingest` events per CPU second, and the encoder alone.

    python benchmarks/bench_writers.py --tables 40 --rounds 400 --old main --repeats 3

- simulate / ingest: each run is a child process (`child` below) that imports pitlog from
  either this checkout ("new") or a `git archive` of `--old` ("old", the code before the
  compiled writers), records into a fresh embedded log and prints its CPU and wall seconds.
  Old and new take turns, the order alternating between repeats; the ratio is taken within
  each repeat (the machine is shared: absolute rates move between runs).
- The ingest input is written once, from the same simulated evening: one device line per
  event (docs/ingest.md), without an `id` (ingest derives it, as for most devices).
- encoder: in this process, the same events encoded by `codec.encode_reference` (fastavro's
  schemaless_writer and a dict per event, what `encode` was) and by the compiled writer, as
  the recorder calls it (`codec.writer(type)(...)` with integer micros); CPU µs per event,
  best of 3 rounds.

Prints one JSON object (every run and the medians) as its last line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def child(args: argparse.Namespace) -> None:
    """One timed run with pitlog imported from `args.tree` (old or new)."""
    sys.path.insert(0, args.tree)
    try:  # this tree's layout, or the flat events/ of a tree before the regrouping (issue 15)
        from events.log.embedded.log import EmbeddedLog
        from events.recording.ingest import ingest
        from events.simulation.simulator import SimConfig, simulate
    except ImportError:
        from events.embedded_log import EmbeddedLog  # type: ignore[no-redef]
        from events.ingest import ingest  # type: ignore[no-redef]
        from events.simulator import SimConfig, simulate  # type: ignore[no-redef]

    out = Path(args.log)
    shutil.rmtree(out, ignore_errors=True)
    with EmbeddedLog(out, partitions=4) as log:
        wall, cpu, times = time.perf_counter(), time.process_time(), os.times()
        if args.what == "simulate":
            n = simulate(log, SimConfig(seed=args.seed, tables=args.tables,
                                        rounds=args.rounds)).events
        else:
            with open(args.lines, "rb") as stream:
                report = ingest(stream, log, source=args.lines,
                                quarantine=out.parent / f"{out.name}-quarantine.jsonl")
            n = report.recorded
            assert report.rejected == 0, report.as_row()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        # user and system CPU apart (session 40): a busy disk's fsyncs raise the system time
        # of the code that syncs more, apart from the work it does
        end = os.times()
        user, system = end.user - times.user, end.system - times.system
    import events

    print(json.dumps({"events": n, "seconds": wall, "cpu_seconds": cpu,
                      "user_seconds": user, "system_seconds": system,
                      "tree": str(Path(events.__file__).parent.parent)}))


def _device_lines(path: Path, tables: int, rounds: int, seed: int) -> int:
    """The simulated evening as device lines, in time order; returns how many."""
    sys.path.insert(0, str(REPO))
    from dataclasses import fields
    from enum import Enum

    from events.simulation.simulator import SimConfig, generate
    from events.wire import codec

    steps, sims = generate(SimConfig(seed=seed, tables=tables, rounds=rounds))
    table_ids = {sim.index: sim.table_id for sim in sims}
    device_seq: dict[tuple[str, str], int] = {}
    n = 0
    with path.open("w") as f:
        for step in steps:
            table = table_ids[step.table_index]
            seq = device_seq[(step.actor, table)] = device_seq.get((step.actor, table), 0) + 1
            at = codec.from_micros(step.at_us).isoformat(timespec="microseconds")
            line: dict[str, Any] = {"type": type(step.event).__name__, "table": table,
                                    "shoe": step.shoe_id, "round": step.round_no, "seq": seq,
                                    "at": at.replace("+00:00", "Z"), "actor": step.actor}
            for fd in fields(step.event):
                v = getattr(step.event, fd.name)
                if v is None:
                    continue
                if isinstance(v, Enum):
                    v = v.value
                elif isinstance(v, tuple):
                    v = [{"rank": c.rank, "suit": c.suit.value} for c in v]
                line[fd.name] = v
            f.write(json.dumps(line) + "\n")
            n += 1
    return n


def _run(tree: Path, what: str, a: argparse.Namespace, work: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "child", "--tree", str(tree), "--what", what,
           "--log", str(work / f"log-{what}"), "--lines", str(work / "lines.jsonl"),
           "--tables", str(a.tables), "--rounds", str(a.rounds), "--seed", str(a.seed)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{what} in {tree} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["events_per_cpu_second"] = result["events"] / result["cpu_seconds"]
    return result


def _encoder(tables: int, rounds: int, seed: int) -> dict[str, float]:
    """CPU µs per event: fastavro reference against the compiled writer, same events."""
    sys.path.insert(0, str(REPO))
    from events.reddog import model
    from events.simulation.simulator import SimConfig, generate
    from events.wire import codec

    steps, sims = generate(SimConfig(seed=seed, tables=tables, rounds=rounds))
    table_ids = {sim.index: sim.table_id for sim in sims}
    envs = []
    for i, step in enumerate(steps):
        envs.append(model.Envelope(
            event_id=step.event_id, table_id=table_ids[step.table_index], shoe_id=step.shoe_id,
            round_no=step.round_no, seq=i + 1, occurred_at=codec.from_micros(step.at_us),
            recorded_at=codec.from_micros(step.at_us + step.delay_us), actor=step.actor,
            event=step.event))
        if len(envs) >= 50_000:
            break
    reg = codec.registry()
    args = [(e.event_id, e.table_id, e.shoe_id, e.round_no, e.seq, codec.micros(e.occurred_at),
             codec.micros(e.recorded_at), e.actor, e.prev_hash, e.hash, e.event) for e in envs]

    def reference() -> list[bytes]:
        return [codec.encode_reference(e, reg) for e in envs]

    def compiled() -> list[bytes]:
        return [codec.writer(type(x[-1]), reg)(*x) for x in args]

    assert reference() == compiled()  # the same bytes, or the comparison means nothing
    best: dict[str, float] = {}
    for _ in range(3):
        for name, fn in (("reference (fastavro, dict per event)", reference),
                         ("compiled writer", compiled)):
            cpu = time.process_time()
            fn()
            us = (time.process_time() - cpu) / len(envs) * 1e6
            best[name] = min(best.get(name, us), us)
    best["events"] = len(envs)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd")
    c = sub.add_parser("child")
    c.add_argument("--tree", required=True)
    c.add_argument("--what", choices=("simulate", "ingest"), required=True)
    for q in (p, c):
        q.add_argument("--log", default="")
        q.add_argument("--lines", default="")
        q.add_argument("--tables", type=int, default=40)
        q.add_argument("--rounds", type=int, default=400)
        q.add_argument("--seed", type=int, default=42)
    p.add_argument("--old", default="main", help="git ref of the code before (default main)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", default="encoder,simulate,ingest")
    p.add_argument("--workdir", default="/tmp/pitlog-bench/writers")
    a = p.parse_args()
    if a.cmd == "child":
        child(a)
        return
    only = a.only.split(",")
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    old_commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", a.old], check=True,
                                capture_output=True, text=True).stdout.strip()
    new_commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.strip()
    out: dict[str, Any] = {"old": f"{a.old} {old_commit}", "new": f"HEAD {new_commit}",
                           "tables": a.tables, "rounds": a.rounds, "runs": {}}
    if "encoder" in only:
        out["encoder_cpu_us_per_event"] = _encoder(a.tables, a.rounds, a.seed)
        print(json.dumps(out["encoder_cpu_us_per_event"]), file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="pitlog-old-") as old_tree:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", old_commit],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", old_tree], input=archive, check=True)
        if "ingest" in only:
            out["lines"] = _device_lines(work / "lines.jsonl", a.tables, a.rounds, a.seed)
        for what in ("simulate", "ingest"):
            if what not in only:
                continue
            runs = out["runs"][what] = []
            for r in range(a.repeats):
                trees = [("old", Path(old_tree)), ("new", REPO)]
                pair = {}
                for label, tree in trees if r % 2 == 0 else trees[::-1]:
                    pair[label] = _run(tree, what, a, work)
                    print(what, label, json.dumps(pair[label]), file=sys.stderr)
                pair["ratio_cpu"] = (pair["new"]["events_per_cpu_second"]
                                     / pair["old"]["events_per_cpu_second"])
                pair["ratio_wall"] = pair["old"]["seconds"] / pair["new"]["seconds"]
                runs.append(pair)
            out[f"{what}_median"] = {
                "old_events_per_cpu_s": statistics.median(
                    x["old"]["events_per_cpu_second"] for x in runs),
                "new_events_per_cpu_s": statistics.median(
                    x["new"]["events_per_cpu_second"] for x in runs),
                "ratio_cpu": statistics.median(x["ratio_cpu"] for x in runs),
                "ratio_wall": statistics.median(x["ratio_wall"] for x in runs),
                "per_repeat_ratio_cpu": [round(x["ratio_cpu"], 3) for x in runs]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()

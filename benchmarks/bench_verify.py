"""`pitlog verify` against its floor (raw read + SHA-256), old code beside new, in one run.

    git archive b5e6d79 events projections schemas | tar -x -C /tmp/hperf-main   # the old code
    .venv/bin/python benchmarks/bench_verify.py /tmp/h19bench/1m/log --old /tmp/hperf-main

Three ways over the same embedded log, each in its own child process, taking turns within
each repeat (the order rotates); the child times only the work, not its imports:

- floor: each partition's .idx and its segment read in batches of 5000 records, one SHA-256
  per record over its body (no parsing at all);
- old: `verify_log` of the code at --old (before issue 19: a record object at a time, and the
  index checked with a seek per record);
- new: `verify_log` of this tree (batches of bytes, envelopes with numpy); `per_record` is this
  tree's record-at-a-time path (the log wrapped so that it offers no FramedRead: what Kafka
  takes).

Prints one JSON object: per way the median wall and CPU seconds and µs per record, and the
ratios to the floor (median of the per-repeat ratios). Measured here, never in a timed test.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from array import array
from pathlib import Path

from events.integrity.verify import verify_log
from events.log.embedded.log import FRAME, EmbeddedLog

BATCH = 5000


def floor(folder: Path) -> int:
    n = 0
    sha256 = hashlib.sha256
    for idx in sorted(folder.glob("p*.idx")):
        positions = array("Q", idx.read_bytes())
        with idx.with_suffix(".seg").open("rb") as seg:
            for first in range(0, len(positions), BATCH):
                pos = positions[first:first + BATCH]
                seg.seek(pos[0])
                seg.seek(pos[-1])
                last_len = FRAME.unpack(seg.read(FRAME.size))[0]
                seg.seek(pos[0])
                buf = seg.read(pos[-1] + FRAME.size + last_len - pos[0])
                view = memoryview(buf)
                base = pos[0]
                starts = [p - base for p in pos]
                starts.append(len(buf))
                for k in range(len(pos)):
                    sha256(view[starts[k] + FRAME.size:starts[k + 1]]).digest()
                n += len(pos)
    return n


def child(way: str, folder: Path) -> None:
    wrap = None
    if way == "per_record":  # imported here: the old code has no FramedRead to import
        tests = Path(__file__).resolve().parents[1] / "tests"
        sys.path[:0] = [str(tests), str(tests / "events")]  # tests/ is not a package
        from test_verify_frames import RecordsOnly  # the equivalence test's wrapper

        wrap = RecordsOnly
    wall, cpu = time.perf_counter(), time.process_time()
    if way == "floor":
        n = floor(folder)
    else:
        log = EmbeddedLog(folder, create=False)
        if wrap is not None:
            log = wrap(log)
        report = verify_log(log, max_batch=BATCH)
        assert report.ok, report.anomalies[:3]
        n = report.records
    print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu, n,
                      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024]))


def run(way: str, folder: Path, old: Path) -> tuple[float, float, int, int]:
    here = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": f"{old if way == 'old' else here}:{here}"}
    out = subprocess.run([sys.executable, __file__, str(folder), "--child",
                          "new" if way == "old" else way],
                         env=env, check=True, capture_output=True, text=True).stdout
    wall, cpu, n, rss = json.loads(out)
    return wall, cpu, n, rss


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("log", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--old", type=Path, default=Path("/tmp/hperf-main"))
    parser.add_argument("--ways", default="floor,old,new,per_record",
                        help="which of floor,old,new,per_record to run (floor first, needed)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.log)
        return
    ways = args.ways.split(",")
    results: dict[str, list[tuple[float, float, int, int]]] = {w: [] for w in ways}
    for r in range(args.repeats):
        for way in ways[r % len(ways):] + ways[:r % len(ways)]:
            results[way].append(run(way, args.log, args.old))
    records = results["floor"][0][2]
    out: dict[str, object] = {"records": records, "repeats": args.repeats}
    for way in ways:
        wall = statistics.median(x[0] for x in results[way])
        cpu = statistics.median(x[1] for x in results[way])
        out[way] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                    "us_per_record_cpu": round(cpu / records * 1e6, 2),
                    "peak_rss_mb": max(x[3] for x in results[way])}
    for way in ways[1:]:
        for i, what in ((0, "wall"), (1, "cpu")):
            out[f"{way}/floor ({what})"] = round(statistics.median(
                a[i] / f[i] for a, f in zip(results[way], results["floor"], strict=True)), 2)
        out[f"{way}/floor (cpu), per repeat"] = [
            round(a[1] / f[1], 2) for a, f in zip(results[way], results["floor"], strict=True)]
    if "old" in results and "new" in results:
        out["old/new (cpu)"] = round(statistics.median(
            o[1] / n[1] for o, n in zip(results["old"], results["new"], strict=True)), 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

"""`parse_line`'s CPU per device line, in the trees given, one process each, alternating: what a
check added to events/recording/device_line.py costs, old beside new in one run.

Usage: benchmarks/bench_device_line.py OLD_TREE NEW_TREE [--repeats 2]
(a tree: a checkout of pitlog, e.g. `git worktree add /tmp/old integ14`); the lines are this
checkout's examples/devices.jsonl (21 lines of every kind of a round) 5,000 times over.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from timing import best_cpu

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "devices.jsonl"


def one(tree: str) -> None:
    sys.path.insert(0, tree)
    from events.recording.device_line import parse_line

    lines = [x.encode() for x in EXAMPLE.read_text().splitlines()] * 5000
    parse_line(lines[0])  # the field plans made before the clock starts
    best = best_cpu(parse_line, lines, 5)
    print(json.dumps({"tree": tree, "lines": len(lines), "cpu_s": round(best, 4),
                      "us_per_line": round(best / len(lines) * 1e6, 3)}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trees", nargs="*")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        one(a.one)
        return
    for _ in range(a.repeats):
        for tree in a.trees:
            subprocess.run([sys.executable, __file__, "--one", tree], check=True)


if __name__ == "__main__":
    main()

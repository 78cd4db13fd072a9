"""Peak RSS and wall time of `pitlog sql QUERY -f FORMAT` to stdout, two trees side by side in
one run (old beside new, alternating), and whether their outputs are byte for byte the same.

    python benchmarks/bench_sql_export.py --old /path/to/old/tree --new . --db DB [--runs 2]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time

QUERY = "select i, repeat('x',50) s from range(3000000) t(i)"


def measure(tree: str, db: str, query: str, fmt: str) -> tuple[float, float, int, str]:
    """(peak RSS MB, wall s, bytes out, sha256 of the output) of one run."""
    digest = hashlib.sha256()
    size = 0
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "cli.app", "sql", "--db", db, "-f", fmt,
                             query], cwd=tree, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": tree})
    assert proc.stdout is not None
    while chunk := proc.stdout.read(1 << 20):
        digest.update(chunk)
        size += len(chunk)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    assert os.waitstatus_to_exitcode(status) == 0, tree
    return usage.ru_maxrss / 1024, wall, size, digest.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--format", default="jsonl")
    ap.add_argument("--query", default=QUERY)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    for run in range(args.runs):
        for name, tree in (("old", args.old), ("new", args.new)):
            rss, wall, size, sha = measure(os.path.abspath(tree), args.db, args.query,
                                           args.format)
            print(f"run {run + 1} {name}: peak RSS {rss:,.0f} MB, wall {wall:.2f} s, "
                  f"{size / 1e6:,.1f} MB out, sha256 {sha[:12]}", flush=True)


if __name__ == "__main__":
    main()

"""The whole build of the stored round_money rows, old (one query) beside new (a group of tables
per step, then the step that stores them: projections/round_money.py build_whole), session 15.

    python benchmarks/bench_round_money_steps.py /work/stores/hstop/base.duckdb \
        --old /tmp/hstop-old --runs 3 --max-events 0 100000 1

`--old` is a checkout of the code before the change (git archive integ14 | tar -x -C DIR).
Each run builds, in turn, with the old code and with the new one at each `--max-events` (0:
the default group size, anomalies.GROUP_EVENTS), each in a child process on a fresh copy of
the store opened as the projector opens it (store.open_store: the writer's memory limit), its
round_money table dropped first. Prints one JSON line per build: wall and CPU seconds, the
child's peak RSS, the rows, the steps, the longest step (how long a stop waits at most; the
old build is one step) and each step's seconds, then the medians per variant.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_CHILD = """
import inspect, json, resource, sys, time
from pathlib import Path
from projections import round_money
from projections.reconcile import ROUND_MONEY
from projections.store import open_store

def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime

db, max_events = sys.argv[1], int(sys.argv[2])
marks = []
with open_store(db) as con:
    con.execute(f"DROP TABLE IF EXISTS {ROUND_MONEY}")
    kwargs = {}
    if "progress" in inspect.signature(round_money.build_whole).parameters:
        kwargs = {"progress": lambda done, total: marks.append(time.perf_counter()),
                  "max_events": max_events or None}
    c, t = cpu(), time.perf_counter()
    round_money.build_whole(con, **kwargs)
    wall, c = time.perf_counter() - t, cpu() - c
    ((rows,),) = con.execute(f"SELECT count(*) FROM {ROUND_MONEY}").fetchall()
steps = [b - a for a, b in zip([t, *marks], marks)] or [wall]
peak = [int(x.split()[1]) / 1024 for x in Path("/proc/self/status").read_text().splitlines()
        if x.startswith("VmHWM:")][0]
print(json.dumps({"code": round_money.__file__, "wall_s": round(wall, 3), "cpu_s": round(c, 3),
                  "peak_rss_mb": round(peak, 1), "rounds": rows, "steps": len(steps),
                  "longest_step_s": round(max(steps), 3),
                  "steps_s": [round(x, 2) for x in steps]}))
"""


def build(repo: Path, source: Path, work: Path, max_events: int) -> dict[str, object]:
    copy = work / "b.duckdb"
    for stale in work.glob("b.duckdb*"):
        stale.unlink() if stale.is_file() else shutil.rmtree(stale)
    shutil.copyfile(source, copy)
    # cwd: `-c` puts the working directory first on sys.path, before PYTHONPATH.
    out = subprocess.run([sys.executable, "-c", _CHILD, str(copy), str(max_events)],
                         env={"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"}, cwd=work,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db", type=Path)
    ap.add_argument("--old", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-events", type=int, nargs="+", default=[0])
    ap.add_argument("--work", type=Path, help="where the copies go (default: beside db)")
    args = ap.parse_args()
    variants = [("old", args.old, 0)] + [(f"new max_events={m or 'default'}", REPO, m)
                                         for m in args.max_events]
    seen: dict[str, list[dict[str, object]]] = {}
    with tempfile.TemporaryDirectory(dir=args.work or args.db.parent) as tmp:
        for run in range(args.runs):
            for name, repo, m in variants:  # in turn, so that load on the machine hits all
                row = {"variant": name, "run": run, **build(repo, args.db, Path(tmp), m)}
                print(json.dumps(row), flush=True)
                seen.setdefault(name, []).append(row)
    for name, rows in seen.items():
        print(json.dumps({"variant": name, "median": {
            k: statistics.median(float(r[k]) for r in rows)  # type: ignore[arg-type]
            for k in ("wall_s", "cpu_s", "peak_rss_mb", "steps", "longest_step_s")}}))


if __name__ == "__main__":
    main()

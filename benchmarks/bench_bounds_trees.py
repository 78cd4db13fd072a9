"""The projector's bounds check (projections/bounds.py) in two trees, old beside new, one run:
per tree, alternating, one process each: the whole load of a stored log (bench_load.py's `new`
variant, that tree's code), and the check alone, `bounds.split` on every batch that load
decoded, best of 7 passes, CPU.

Usage: benchmarks/bench_bounds_trees.py OLD_TREE NEW_TREE --log LOG [--repeats 3]
(a log of ~200k events: pitlog simulate --tables 8 --rounds 1500 --log LOG)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import best_cpu


def check_alone(log: Path) -> dict[str, float]:
    """In this process (the tree first on sys.path): load once, keeping each decoded batch,
    then time bounds.split over them."""
    from events.log.embedded.log import EmbeddedLog
    from projections import bounds, projector
    from projections.store import open_store

    tables, split = [], bounds.split

    def keep(table):  # type: ignore[no-untyped-def]
        tables.append(table)
        return split(table)

    projector._bounds.split = keep  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "s.duckdb"
        open_store(db).close()
        projector.project(EmbeddedLog(log), db, store_anomalies=False)
    return {"rows": sum(t.num_rows for t in tables), "check_cpu_s": best_cpu(split, tables, 7)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--log", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--alone", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.alone:
        sys.path.insert(0, a.alone)
        print(json.dumps(check_alone(a.log)))
        return
    for r in range(a.repeats):
        for name, tree in ((("old", a.old), ("new", a.new)) if r % 2 == 0 else
                           (("new", a.new), ("old", a.old))):
            env = {**os.environ, "PYTHONPATH": tree}
            with tempfile.TemporaryDirectory() as work:
                load = subprocess.run(
                    [sys.executable, str(Path(tree) / "benchmarks" / "bench_load.py"), "--one",
                     "new", "--log", str(a.log), "--work", work], env=env, check=True,
                    capture_output=True, text=True).stdout.splitlines()[-1]
            alone = subprocess.run([sys.executable, __file__, a.old, a.new, "--log",
                                    str(a.log), "--alone", tree], env=env, check=True,
                                   capture_output=True, text=True).stdout.splitlines()[-1]
            got = json.loads(load)
            print(json.dumps({"tree": name, "events": got["events"],
                              "load_wall_s": round(got["wall_s"], 3),
                              "load_cpu_s": round(got["cpu_s"], 3),
                              **json.loads(alone), "load_average": os.getloadavg()[0]}),
                  flush=True)


if __name__ == "__main__":
    main()

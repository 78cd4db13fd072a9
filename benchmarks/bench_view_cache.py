"""Session 34 (benchmarks/results.md, "Session 34"): what a projector start pays to bind its
scratch catalogs' views, made in memory at each start (the old way, which is also the fallback
when the cache folder cannot be written) beside attached from the cache folder
(projections/view_cache.py), in one run, alternating.

    python benchmarks/bench_view_cache.py --workdir W [--calls 10] [--batch 40]

A simulated evening (4 tables, 60 rounds, seed 3) is projected but for its last calls x batch
records; then each call appends `batch` records and runs one `project()` in a child process
(a fresh start, as a `pitlog project` run by a scheduler or a feed is), timing the call alone.
The two ways alternate call by call over copies of the same store; the stored rows of the
two copies are compared at the end (they must be equal). Prints one JSON line per way.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys, time
from pathlib import Path
from events.log.embedded.log import EmbeddedLog
from projections.projector import project
log = EmbeddedLog(Path(sys.argv[1]))
cpu, wall = time.process_time(), time.perf_counter()
project(log, sys.argv[2], publish_alerts=False)
print(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", required=True, type=Path)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--batch", type=int, default=40)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from events.log.embedded.log import EmbeddedLog
    from events.simulation.simulator import SimConfig, simulate

    work = args.workdir
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    source = EmbeddedLog(work / "source")
    simulate(source, SimConfig(seed=3, tables=4, rounds=60, irregularities=0.05))
    records = [(r.key, r.value) for batch in source.read() for r in batch]
    source.close()
    head = len(records) - args.calls * args.batch
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    blocked = work / "not-a-folder"
    blocked.write_text("")
    ways = {"in memory (old)": {**env, "PITLOG_CACHE_DIR": str(blocked / "views")},
            "cache (new)": {**env, "PITLOG_CACHE_DIR": str(work / "cache")}}
    logs = {}
    for i, way in enumerate(ways):
        log = EmbeddedLog(work / f"log{i}")
        log.append(records[:head])
        log.close()
        logs[way] = (work / f"log{i}", work / f"s{i}.duckdb")
        subprocess.run([sys.executable, "-c", CHILD, *map(str, logs[way])], env=ways[way],
                       check=True, capture_output=True)
    times: dict[str, list[dict[str, float]]] = {way: [] for way in ways}
    for call in range(args.calls):
        for way in ways if call % 2 == 0 else reversed(list(ways)):
            folder, db = logs[way]
            log = EmbeddedLog(folder)
            log.append(records[head + call * args.batch:head + (call + 1) * args.batch])
            log.close()
            out = subprocess.run([sys.executable, "-c", CHILD, str(folder), str(db)],
                                 env=ways[way], check=True, capture_output=True, text=True)
            times[way].append(json.loads(out.stdout.strip().splitlines()[-1]))
    import duckdb
    digests = []
    for way in ways:
        with duckdb.connect(str(logs[way][1]), read_only=True) as con:
            digests.append(con.execute(
                "SELECT count(*), md5(string_agg(md5(CAST(a AS VARCHAR)), '' ORDER BY "
                "md5(CAST(a AS VARCHAR)))) FROM anomalies_stored AS a").fetchall())
    assert digests[0] == digests[1], digests
    for way, runs in times.items():
        print(json.dumps({"way": way, "history": head, "batch": args.batch, "calls": len(runs),
                          "wall_p50": round(statistics.median(r["wall"] for r in runs), 3),
                          "cpu_p50": round(statistics.median(r["cpu"] for r in runs), 3),
                          "stored_rows": digests[0][0][0], "load": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()

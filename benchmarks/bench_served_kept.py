"""A shoe's replay and a dispute lookup through a running `pitlog serve` whose writer has kept
every closed shoe (issue 19 item 4: "and through `pitlog serve`"; projections/replay_kept.py).

    python benchmarks/bench_served_kept.py --server-db SERVED.duckdb --sample-db COPY.duckdb \
        [--lookups 40] [--repeats 2]

The server is found through SERVED.duckdb.serve.json (url and pid), as the CLI finds it; it
must be idle (caught up, its keeper's backlog done: its log says no more "kept N shoes'
replays"). COPY.duckdb is a copy of the same store (the server holds the file's lock) from
which the lookups are sampled as the in-process benchmarks sample them: `--lookups` closed
shoes (reservoir seed 1, as bench_replay_served.py) and `--lookups` rounds of closed shoes at
the middle of the round (bench_dispute_kept._picks, seed 3). One client asks in turn
`GET /api/replay/{shoe}?table=T` and `GET /api/dispute?table=T&at=ISO`, `--repeats` times.
Prints one JSON line per lookup kind: wall ms p50, p95 (the 95th percentile by rank) and max
over every call, the server's CPU ms per call (/proc/PID/stat over the calls, less its idle
use measured for 10 s before), its peak RSS (VmHWM), the load average, and a digest of the
answers (the same every repeat, or the run stops).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dispute_kept import _picks  # noqa: E402
from bench_replay_served import _cpu_s, _stats  # noqa: E402


def _peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _get(url: str) -> tuple[float, str]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        body = r.read()
    took = (time.perf_counter() - start) * 1000
    return took, hashlib.sha256(body).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--server-db", required=True)
    ap.add_argument("--sample-db", required=True)
    ap.add_argument("--lookups", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    found = json.loads(Path(a.server_db + ".serve.json").read_text())
    url, pid = found["url"], int(found["pid"])
    with duckdb.connect(a.sample_db, read_only=True) as con:
        closed = con.execute("SELECT DISTINCT table_id, shoe_id FROM events "
                             "WHERE event_type = 'ShoeClosed' ORDER BY ALL").fetchall()
    shoes = sorted(random.Random(1).sample(closed, a.lookups))
    rounds = _picks(Path(a.sample_db), a.lookups)
    urls = {
        "replay": [f"{url}/api/replay/{quote(s, safe='')}?table={quote(t, safe='')}"
                   for t, s in shoes],
        "dispute": [f"{url}/api/dispute?table={quote(t, safe='')}&at={quote(at, safe='')}"
                    for t, at, _s, _r in rounds],
    }
    idle = _cpu_s(pid)
    time.sleep(10)
    idle_per_s = (_cpu_s(pid) - idle) / 10
    for kind, wanted in urls.items():
        walls: list[float] = []
        digests: list[str] = []
        load = [os.getloadavg()[0]]
        cpu, started = _cpu_s(pid), time.perf_counter()
        for repeat in range(a.repeats):
            answers = []
            for u in wanted:
                took, digest = _get(u)
                walls.append(took)
                answers.append(digest)
            if repeat and answers != digests:
                raise SystemExit(f"{kind}: the server answered differently the second time")
            digests = answers
        spent = _cpu_s(pid) - cpu - idle_per_s * (time.perf_counter() - started)
        load.append(os.getloadavg()[0])
        print(json.dumps({
            "lookup": kind, "calls": len(walls), "wall_ms": _stats(walls),
            "server_cpu_ms_per_call": round(spent * 1000 / len(walls), 1),
            "server_peak_rss_mb": _peak_mb(pid), "load_avg": load,
            "answers": hashlib.sha256("".join(digests).encode()).hexdigest()[:16]}),
            flush=True)


if __name__ == "__main__":
    main()

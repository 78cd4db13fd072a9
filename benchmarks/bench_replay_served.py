"""A shoe's replay through `pitlog serve`, old beside new in one run (issue 19 item 4: "and
through `pitlog serve`").

    python benchmarks/bench_replay_served.py --old OLD_CHECKOUT --new NEW_CHECKOUT \
        --log LOG --old-db STORE_A.duckdb --new-db STORE_B.duckdb [--shoes 40]

Starts `pitlog serve --port 0` of each checkout on its own copy of one projected store (the new
one's copy should already hold the kept replays: benchmarks/bench_replay_kept.py makes one),
waits until both answer /health ready, then asks each for `GET /api/replay/{shoe}?table=T` of
the same closed shoes (sampled with seed 1), in turns old and new, and checks the two JSON
answers equal. Prints one JSON line: p50, p95 (the 38th of 40) and max wall ms of each, and
new / old; the servers' CPU per call from /proc/PID/stat over the calls.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import duckdb


def _serve(checkout: str, log: str, db: str) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "PYTHONPATH": checkout}
    env.pop("PITLOG_SERVER", None)
    proc = subprocess.Popen([sys.executable, "-c", "from cli.app import main; main()", "serve",
                             "--log", log, "--db", db,
                             "--port", "0"], cwd=checkout, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    found = Path(db).with_name(Path(db).name + ".serve.json")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server of {checkout} exited ({proc.returncode})")
        try:
            url = json.loads(found.read_text())["url"]
            with urllib.request.urlopen(f"{url}/health", timeout=10) as r:
                if json.load(r).get("ready"):
                    return proc, url
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    raise SystemExit(f"the server of {checkout} was not ready in 600 s")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _get(url: str) -> tuple[float, object]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        body = json.load(r)
    return (time.perf_counter() - start) * 1000, body


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 1),
            "p95": round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 1),
            "max": round(ordered[-1], 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("--old", "--new", "--log", "--old-db", "--new-db"):
        ap.add_argument(name, required=True)
    ap.add_argument("--shoes", type=int, default=40)
    a = ap.parse_args()
    with duckdb.connect(a.new_db, read_only=True) as con:
        shoes = con.execute(f"SELECT table_id, shoe_id FROM replay_shoes USING SAMPLE "
                            f"{int(a.shoes)} ROWS (reservoir, 1) ORDER BY ALL").fetchall()
    servers = {"old": _serve(a.old, a.log, a.old_db), "new": _serve(a.new, a.log, a.new_db)}
    try:
        time.sleep(5)  # past the first round's start-up work
        walls: dict[str, list[float]] = {"old": [], "new": []}
        cpu_before = {k: _cpu_s(p.pid) for k, (p, _) in servers.items()}
        for table, shoe in shoes:
            bodies = {}
            for side, (_, url) in servers.items():
                took, bodies[side] = _get(f"{url}/api/replay/{quote(shoe, safe='')}"
                                          f"?table={quote(table, safe='')}")
                walls[side].append(took)
            if bodies["old"] != bodies["new"]:
                raise SystemExit(f"the two servers answer {table} {shoe} differently")
        cpu = {k: (_cpu_s(p.pid) - cpu_before[k]) * 1000 / len(shoes)
               for k, (p, _) in servers.items()}
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(timeout=120)
    out = {side: {"wall_ms": _stats(w), "server_cpu_ms_per_call": round(cpu[side], 1)}
           for side, w in walls.items()}
    out["new_over_old_p50_wall"] = round(statistics.median(walls["new"])
                                         / statistics.median(walls["old"]), 3)
    out["new_over_old_p95_wall"] = round(_stats(walls["new"])["p95"]
                                         / _stats(walls["old"])["p95"], 3)
    out["lookups"] = len(shoes)
    out["load_avg"] = os.getloadavg()[0]
    print(json.dumps(out))


if __name__ == "__main__":
    main()

"""A dispute lookup with fewer statements, each bound once (session 26), old beside new in one
run: in process, and through `pitlog serve` (issue 19 item 4).

    PYTHONPATH=. python benchmarks/bench_dispute_statements.py KEPT.duckdb --old-repo OLD \
        [--rounds 40] [--repeats 4] [--served --log LOG]

KEPT.duckdb: a store whose sampled rounds' shoes are kept (bench_dispute_kept.py's
`kept.duckdb`, or a served store); the picks are bench_dispute_kept's (`--rounds` rounds of
closed shoes, seed 3, the middle of each round); `--open`: rounds of shoes not closed (seed 5),
whose disputes run their queries (no shoe is kept while open). OLD: a checkout of the older pitlog.

- In process (always): one child per way and repeat (bench_dispute_kept._child: every lookup
  on one read-only connection, wall and CPU per call), old and new taking turns, the order
  reversed every other repeat. The answers' digests must be equal, old and new.
- `--served`: `pitlog serve --log LOG --db KEPT.duckdb --port 0` from each checkout in turn
  (old, new, old, new), each asked every pick twice by `GET /api/dispute?table=T&at=ISO` once
  /health says ready; wall per call, and the server's CPU per call over the calls (the keeper's
  too: a served store's idle keeper keeps closed shoes meanwhile, so this is a busy server's).

One JSON line per measure. Not a test: no timing is asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dispute_kept import _child, _picks, stats  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _open_picks(db: Path, n: int) -> list[tuple[str, str, str, str]]:
    """`n` rounds of shoes not closed (the tables' current shoes, never kept): (table, the
    middle of the round, shoe, round), seed 5."""
    with duckdb.connect(str(db), read_only=True) as con:
        found = con.execute(
            "SELECT table_id, shoe_id, round_no, min(occurred_at), max(occurred_at) FROM events "
            "WHERE round_no IS NOT NULL AND shoe_id IS NOT NULL AND (table_id, shoe_id) NOT IN "
            "(SELECT (table_id, shoe_id) FROM events WHERE event_type = 'ShoeClosed') "
            "GROUP BY ALL ORDER BY ALL").fetchall()
    return [(t, str(a + (b - a) / 2), s, str(r))
            for t, s, r, a, b in random.Random(5).sample(found, n)]


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _served(repo: Path, db: Path, log: str, picks: list[tuple[str, str, str, str]],
            run: int) -> tuple[list[float], float, list[str]]:
    """Start `pitlog serve` from `repo`, ask every pick twice, stop it: walls, CPU ms per call,
    the first round's answer digests."""
    found = Path(str(db) + ".serve.json")
    found.unlink(missing_ok=True)
    server = subprocess.Popen(
        [sys.executable, "-m", "cli.app", "serve", "--log", log, "--db", str(db), "--port", "0"],
        cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)}, start_new_session=True,
        stdout=open(f"{db}.bench_serve_{run}.log", "w"), stderr=subprocess.STDOUT)
    try:
        while not found.exists():
            time.sleep(0.5)
        url = json.loads(found.read_text())["url"]
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=30) as r:
                    if json.loads(r.read()).get("ready"):
                        break
            except OSError:
                pass
            time.sleep(1)
        time.sleep(5)
        walls: list[float] = []
        digests: list[str] = []
        cpu = _cpu_s(server.pid)
        for _ in range(2):
            for table, at, _shoe, _round in picks:
                start = time.perf_counter()
                with urllib.request.urlopen(f"{url}/api/dispute?table={quote(table, safe='')}"
                                            f"&at={quote(at, safe='')}", timeout=120) as r:
                    body = r.read()
                walls.append((time.perf_counter() - start) * 1000)
                digests.append(hashlib.sha256(body).hexdigest())
        return walls, (_cpu_s(server.pid) - cpu) * 1000 / len(walls), digests[:len(picks)]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=300)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--old-repo", required=True)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--served", action="store_true")
    ap.add_argument("--log")
    ap.add_argument("--open", action="store_true", help="rounds of open shoes instead")
    a = ap.parse_args()
    db, old = Path(a.store), Path(a.old_repo)
    picks = _open_picks(db, a.rounds) if a.open else _picks(db, a.rounds)
    ways = {"old": old, "new": REPO}
    got: dict[str, list[list[object]]] = {w: [] for w in ways}
    load = [os.getloadavg()[0]]
    for repeat in range(a.repeats):
        for way in (list(ways) if repeat % 2 == 0 else list(reversed(ways))):
            got[way].extend(_child(ways[way], db, picks))
    load.append(os.getloadavg()[0])
    for way, values in got.items():
        print(json.dumps({"measure": "in_process", "way": way, "calls": len(values),
                          "wall_ms": stats([float(str(x[0])) for x in values]),
                          "cpu_ms": stats([float(str(x[1])) for x in values]),
                          "load": [round(x, 2) for x in load]}), flush=True)
    if [x[2] for x in got["old"]] != [x[2] for x in got["new"]]:
        raise SystemExit("old and new disputes differ")
    if not a.served:
        return
    answers: dict[str, list[str]] = {}
    for run, way in enumerate(("old", "new", "old", "new")):
        walls, cpu_ms, digests = _served(ways[way], db, a.log, picks, run)
        if answers.setdefault(way, digests) != digests:
            raise SystemExit(f"{way}: the server answered differently in another run")
        print(json.dumps({"measure": "served", "run": run, "way": way, "calls": len(walls),
                          "wall_ms": stats(walls), "server_cpu_ms_per_call": round(cpu_ms, 1),
                          "load": round(os.getloadavg()[0], 2)}), flush=True)
    if answers["old"] != answers["new"]:
        raise SystemExit("old and new served disputes differ")


if __name__ == "__main__":
    main()

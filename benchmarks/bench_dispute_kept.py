"""A dispute lookup from the writer's kept rows beside the same lookup by its queries, and beside
an older pitlog's, in one run on one store (issue 19 item 4; projections/dispute.py,
projections/replay_kept.py).

    PYTHONPATH=. python benchmarks/bench_dispute_kept.py STORE.duckdb --workdir W \
        [--rounds 40] [--repeats 2] [--old-repo OLD] [--open] [--seat]

Samples `--rounds` rounds of closed shoes (seed 3) and asks for each the dispute at the middle
of the round (`dispute(con, table, at=...)`, the moment a surveillance officer gives). Copies
STORE into W twice: `plain.duckdb` (as STORE: no kept rows, so a dispute runs its queries) and
`kept.duckdb`, where the writer keeps the sampled rounds' shoes (replay_kept.keep, timed: its
cost a shoe). Then, in a child process each (taking turns, `--repeats` times, the order
reversed every other repeat), every lookup on one read-only connection:

- `queries`: this pitlog on plain.duckdb;
- `kept`: this pitlog on kept.duckdb;
- `old` and `old_kept`: the pitlog at OLD (a `git archive` of an older commit) on
  plain.duckdb and on kept.duckdb, if given.

With `--open`, the rounds are of open shoes (the follower keeps them only while idle, session
45). A simulated store closes every shoe at its end, so both copies first lose each table's
last ShoeClosed (a table still dealing its last shoe); their stored anomaly rows then still
hold that event's rows, which only `anomalies` in the answers reads, alike both ways.
With `--seat`, each dispute is asked for the lowest seat that placed a wager in its round (the
surveillance officer's "table 7, seat 3, at 21:14"; session 47).

Each lookup's wall and CPU (the child's process time: DuckDB's threads included); p50, p95 (of
the lookups of every repeat, sorted: the 114th of 120 at 40 rounds and 3 repeats) and max.
Every child's answers are digested per lookup; the kept answers must equal the queries' (the
run stops if not), and old against new is reported.
One JSON line per measure, and a summary line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# What a child runs: the lookups in order, each timed, each answer digested.
_CHILD = r"""
import hashlib, json, sys, time
from datetime import datetime
import duckdb
from projections.dispute import dispute
db, picks = sys.argv[1], json.loads(sys.argv[2])
out = []
with duckdb.connect(db, read_only=True) as con:
    con.execute("SELECT count(*) FROM events").fetchall()  # open and warm the file once
    for table, at, *seat in picks:
        moment = datetime.fromisoformat(at)
        wall, cpu = time.perf_counter(), time.process_time()
        d = dispute(con, table, at=moment, seat=seat[0] if seat else None)
        took = ((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000)
        text = json.dumps([d.round, d.cards, d.announcements, d.wagers, d.settlements,
                           d.anomalies], default=str, sort_keys=True)
        out.append([took[0], took[1], hashlib.sha256(text.encode()).hexdigest()])
print(json.dumps(out))
"""


def stats(values: list[float]) -> dict[str, float]:
    """p50, p95 (the value at 95% of the sorted values) and max, to 0.01 (the benches of
    session 46 import it)."""
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 2),
            "p95": round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 2),
            "max": round(ordered[-1], 2)}


# The rounds to pick from: of closed shoes (the kept ones'), or of any shoe.
_CLOSED_SHOES_ROUNDS = (
    "SELECT r.table_id, r.shoe_id, r.round_no, r.first_seq, r.last_seq "
    "FROM round_money AS r SEMI JOIN (SELECT DISTINCT table_id, shoe_id FROM events "
    "WHERE event_type = 'ShoeClosed') USING (table_id, shoe_id) "
    "ORDER BY r.table_id, r.shoe_id, r.round_no")
_OPEN_SHOES_ROUNDS = _CLOSED_SHOES_ROUNDS.replace("SEMI JOIN", "ANTI JOIN")
# Each table's last ShoeClosed (by seq) removed: its shoe is open again (--open).
_REOPEN = ("DELETE FROM events WHERE event_type = 'ShoeClosed' AND (table_id, seq) IN "
           "(SELECT (table_id, max(seq)) FROM events WHERE event_type = 'ShoeClosed' "
           "GROUP BY table_id)")
_ANY_SHOES_ROUNDS = ("SELECT table_id, shoe_id, round_no, first_seq, last_seq FROM round_money "
                     "WHERE shoe_id IS NOT NULL ORDER BY ALL")


def _picks(db: Path, n: int, *, closed: bool = True, seed: int = 3, open_only: bool = False
           ) -> list[tuple[str, str, str, str]]:
    """`n` rounds of closed shoes (or, not `closed`, of any shoe; `open_only`, of open shoes):
    (table, moment in the middle of the round, shoe, round)."""
    with duckdb.connect(str(db), read_only=True) as con:
        found = con.execute(_OPEN_SHOES_ROUNDS if open_only else _CLOSED_SHOES_ROUNDS if closed
                            else _ANY_SHOES_ROUNDS).fetchall()
        picks = []
        for t, s, r, first, last in random.Random(seed).sample(found, n):
            ((a, b),) = con.execute(
                "SELECT min(occurred_at), max(occurred_at) FROM events WHERE table_id = $t "
                "AND round_no = $r AND seq BETWEEN $f AND $l",
                {"t": t, "r": r, "f": first, "l": last}).fetchall()
            picks.append((t, str(a + (b - a) / 2), s, str(r)))
    return picks


def _seats(db: Path, picks: list[tuple[str, str, str, str]]) -> list[int]:
    """Each pick's seat to ask about (--seat): the lowest that placed a wager in the round."""
    with duckdb.connect(str(db), read_only=True) as con:
        return [int(con.execute(
            "SELECT min(seat) FROM events WHERE table_id = $t AND shoe_id = $s "
            "AND round_no = $r AND event_type = 'WagerPlaced'",
            {"t": t, "s": s, "r": int(r)}).fetchall()[0][0]) for t, _at, s, r in picks]


def _child(repo: Path, db: Path, picks: list[tuple[str, str, str, str]],
           seats: list[int] | None = None) -> list[list[object]]:
    """Each pick's dispute (for its seat in `seats`, when given) in a child process at `repo`:
    [wall ms, CPU ms, answer digest] each."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    asked = [[t, at] for t, at, _s, _r in picks]
    for ask, seat in zip(asked, seats or [], strict=False):
        ask.append(seat)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(db), json.dumps(asked)],
                          cwd=repo, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"child at {repo} on {db} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--old-repo")
    ap.add_argument("--open", action="store_true", help="rounds of open shoes")
    ap.add_argument("--seat", action="store_true",
                    help="ask each dispute for the lowest seat that played the round")
    a = ap.parse_args()
    from projections import replay_kept

    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    plain, kept = work / "plain.duckdb", work / "kept.duckdb"
    for target in (plain, kept):
        shutil.copy(a.store, target)
        if a.open:
            with duckdb.connect(str(target)) as con:
                con.execute(_REOPEN)
    picks = _picks(plain, a.rounds, open_only=a.open)
    seats = _seats(plain, picks) if a.seat else None
    shoes = sorted({(t, s) for t, _at, s, _r in picks})
    costs = []
    with duckdb.connect(str(kept)) as con:
        replay_kept.ensure_tables(con)
        for table, shoe in shoes:
            cpu = time.process_time()
            assert replay_kept.keep(con, table, shoe, open_too=a.open) == 1, (table, shoe)
            costs.append((time.process_time() - cpu) * 1000)
    print(json.dumps({"measure": "keep", "shoes": len(shoes),
                      "cpu_ms_per_shoe": stats(costs)}), flush=True)
    ways = {"queries": (REPO, plain), "kept": (REPO, kept)}
    if a.old_repo:  # the older pitlog both ways
        ways["old"] = (Path(a.old_repo), plain)
        ways["old_kept"] = (Path(a.old_repo), kept)
    got: dict[str, list[list[object]]] = {w: [] for w in ways}
    load = [os.getloadavg()[0]]
    for repeat in range(a.repeats):
        order = list(ways) if repeat % 2 == 0 else list(reversed(ways))
        for way in order:
            got[way].extend(_child(*ways[way], picks, seats))
        load.append(os.getloadavg()[0])
    digests = {w: [str(x[2]) for x in v] for w, v in got.items()}
    if digests["kept"] != digests["queries"]:
        raise SystemExit("kept disputes differ from their queries' answers")
    summary: dict[str, object] = {"measure": "summary", "store": a.store, "open": a.open,
                                  "seat": a.seat,
                                  "rounds": len(picks),
                                  "shoes": len(shoes), "repeats": a.repeats,
                                  "load": [round(x, 2) for x in load]}
    for way, values in got.items():
        line = {"measure": way, "wall_ms": stats([float(str(x[0])) for x in values]),
                "cpu_ms": stats([float(str(x[1])) for x in values])}
        print(json.dumps(line), flush=True)
        summary[way] = line
    if "old" in digests:
        summary["old_equals_new"] = sum(
            o == n for o, n in zip(digests["old"], digests["queries"], strict=True))
        summary["old_kept_equals_new"] = sum(
            o == n for o, n in zip(digests["old_kept"], digests["kept"], strict=True))
    cpu50 = {w: statistics.median(float(str(x[1])) for x in v) for w, v in got.items()}
    summary["kept_over_queries_cpu_p50"] = round(cpu50["kept"] / cpu50["queries"], 3)
    print(json.dumps(summary), flush=True)
    digest = hashlib.sha256("".join(digests["kept"]).encode()).hexdigest()[:16]
    print(json.dumps({"measure": "answers", "kept_digest": digest}), flush=True)


if __name__ == "__main__":
    main()

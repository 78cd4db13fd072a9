"""What a `pitlog serve` request pays for reading one snapshot (ServeState.snapshot), old
beside new in one process.

    python benchmarks/bench_request_snapshot.py STORE.duckdb [CALLS]

Old is a request's cursor as before session 21 (each statement its own snapshot); new is the
same cursor inside a READ ONLY transaction (BEGIN ... ROLLBACK). Each call is a whole replay of
one shoe (`replay_shoe`: three queries) or a dispute of one round (`rebuild`: seven), taking
turns old and new over the same shoes and rounds. The yardstick is the cursor alone (open,
one trivial query, close), the floor of any request. Prints one JSON object: p50 wall and CPU
per call of each, and new / old.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import duckdb  # noqa: E402

from projections.dispute import dispute as rebuild  # noqa: E402
from projections.replay import replay_shoe  # noqa: E402
from projections.serve.state import ServeState  # noqa: E402


@contextmanager
def old_cursor(state: ServeState):  # type: ignore[no-untyped-def]
    cur = state.cursor()
    try:
        yield cur
    finally:
        cur.close()


def main() -> None:
    db, calls = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40
    con = duckdb.connect(db)
    state = ServeState(con)
    shoes = con.execute("SELECT table_id, shoe_id FROM (SELECT DISTINCT table_id, shoe_id "
                        "FROM events WHERE shoe_id IS NOT NULL) ORDER BY hash(shoe_id) "
                        f"LIMIT {calls}").fetchall()
    rounds = con.execute("SELECT table_id, shoe_id, round_no FROM round_money "
                         f"ORDER BY hash(table_id, shoe_id, round_no) LIMIT {calls}").fetchall()
    ways = {"old": lambda: old_cursor(state), "new": state.snapshot}
    work = {
        "replay": [lambda c, t=t, s=s: replay_shoe(c, s, table=t) for t, s in shoes],
        "dispute": [lambda c, t=t, s=s, r=r: rebuild(c, t, shoe=s, round_no=r)
                    for t, s, r in rounds],
        "cursor": [lambda c: c.execute("SELECT 1").fetchall()] * calls,
    }
    out: dict[str, dict[str, float]] = {}
    for name, jobs in work.items():
        times: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
        for i, job in enumerate(jobs):
            for way in (("old", "new") if i % 2 == 0 else ("new", "old")):
                wall, cpu = time.perf_counter(), time.process_time()
                with ways[way]() as cur:
                    job(cur)
                times[way].append((time.perf_counter() - wall, time.process_time() - cpu))
        row = {}
        for way, got in times.items():
            row[f"{way}_wall_ms"] = round(statistics.median(w for w, _ in got) * 1e3, 3)
            row[f"{way}_cpu_ms"] = round(statistics.median(c for _, c in got) * 1e3, 3)
        row["new_over_old_wall"] = round(row["new_wall_ms"] / row["old_wall_ms"], 3)
        row["new_over_old_cpu"] = round(row["new_cpu_ms"] / row["old_cpu_ms"], 3)
        row["calls"] = len(jobs)
        out[name] = row
    con.close()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

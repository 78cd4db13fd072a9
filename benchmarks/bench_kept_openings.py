"""The kept rows' openings check (projections/replay.py OPENINGS) as session 46 bounds it, beside
the count it replaced, in one process on one store, taking turns (issue 19 item 4).

    PYTHONPATH=. python benchmarks/bench_kept_openings.py STORE.duckdb [--shoes 40] [--repeats 4] \
        [--reopen-in W]

For `--shoes` shoes (seed 3; the last shoe of each of the sampled tables, the shoe a dispute at
the table is most often about, and the one whose count from the table's start reads the most),
times `SELECT count(*)` of the table's TableOpened with seq from the opening in force at the
shoe's first seq (OPENED_FROM) to its last (new), and from the table's start to its last
(old: session 45's OPENINGS). Both counts are printed per run, with wall p50 / p95 / max per
way. One JSON line per way, and a summary line.

A simulated table opens once, at its first seq, so there both count the same row groups. A
casino's table opens again each gaming day: `--reopen-in W` measures a copy of STORE in folder W
in which each sampled table opens again (a copy of its TableOpened, appended) at its last
shoe's first seq, as a table opened for the day just before that shoe.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path

import duckdb
from bench_dispute_kept import stats

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

OLD = ("SELECT count(*) FROM events WHERE table_id = $table AND seq <= $last "
       "AND event_type = 'TableOpened'")


def main() -> None:
    from projections import replay

    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--shoes", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--reopen-in")
    a = ap.parse_args()
    store = a.store
    with duckdb.connect(store, read_only=True) as con:
        last_shoes = con.execute(
            "SELECT table_id, arg_max(shoe_id, seq) FROM events WHERE shoe_id IS NOT NULL "
            "GROUP BY table_id ORDER BY table_id").fetchall()
    picks = random.Random(3).sample(last_shoes, min(a.shoes, len(last_shoes)))
    if a.reopen_in:
        Path(a.reopen_in).mkdir(parents=True, exist_ok=True)
        store = shutil.copy(a.store, Path(a.reopen_in) / "reopened.duckdb")
        with duckdb.connect(store) as con:
            for table, shoe in picks:
                con.execute(
                    "INSERT INTO events SELECT * REPLACE ((SELECT max(log_offset) + 1 FROM "
                    "events) AS log_offset, NULL AS event_id, (SELECT min(seq) FROM events "
                    "WHERE table_id = $t AND shoe_id = $s) AS seq) FROM events WHERE "
                    "table_id = $t AND event_type = 'TableOpened'", {"t": table, "s": shoe})
    with duckdb.connect(store, read_only=True) as con:
        spans = [replay.shoe_span(con, s, t) for t, s in picks]
        froms = [replay.opened_from(con, span) for span in spans]
        times: dict[str, list[float]] = {"old": [], "new": []}
        counts: dict[str, list[int]] = {"old": [], "new": []}
        for repeat in range(a.repeats):
            for way in (("old", "new") if repeat % 2 == 0 else ("new", "old")):
                for span, since in zip(spans, froms, strict=True):
                    sql, params = (
                        (OLD, {"table": span.table, "last": span.last}) if way == "old" else
                        (replay.OPENINGS, {"table": span.table, "last": span.last,
                                           "opened_from": 0 if since is None else since}))
                    started = time.perf_counter()
                    ((n,),) = con.execute(sql, params).fetchall()
                    times[way].append((time.perf_counter() - started) * 1000)
                    if repeat == 0:
                        counts[way].append(int(n))
    summary: dict[str, object] = {"measure": "summary", "store": a.store,
                                  "reopened": bool(a.reopen_in), "shoes": len(picks),
                                  "repeats": a.repeats, "counts": counts}
    for way, values in times.items():
        line = {"measure": way, "n": len(values), "wall_ms": stats(values)}
        print(json.dumps(line), flush=True)
        summary[way] = line
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()

"""`moment.neighbours` (the round in play at a moment, and those just before and after) of this
pitlog beside an older one's, in one process on one store, taking turns, and whether they
answer alike with no seat and with a seat (issue 19 item 4; benchmarks/results.md, session 46).

    PYTHONPATH=. python benchmarks/bench_neighbours.py STORE.duckdb PICKS.json OLD [--repeats 4]

PICKS.json: a list of [table, moment, ...] (bench_dispute_kept.py's picks); OLD: a `git archive`
of an older commit, whose projections/moment.py is loaded beside this one. One JSON line per
way (wall p50 / p95 / max), then one with the number of picks answered alike with no seat and with
seat 2 (the run stops at the first that differs).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from datetime import datetime
from pathlib import Path

import duckdb
from bench_dispute_kept import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from projections import moment as new

    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("picks")
    ap.add_argument("old")
    ap.add_argument("--repeats", type=int, default=4)
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location(
        "old_moment", Path(a.old) / "projections" / "moment.py")
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    sys.modules["old_moment"] = old  # its dataclasses look their module up
    spec.loader.exec_module(old)
    picks = [(t, datetime.fromisoformat(at)) for t, at, *_ in json.loads(Path(a.picks).read_text())]
    times: dict[str, list[float]] = {"old": [], "new": []}
    with duckdb.connect(a.store, read_only=True) as con:
        con.execute("SELECT count(*) FROM events").fetchall()
        for repeat in range(a.repeats):
            for way in (("old", "new") if repeat % 2 == 0 else ("new", "old")):
                module = old if way == "old" else new
                for table, at in picks:
                    started = time.perf_counter()
                    module.neighbours(con, table, at)
                    times[way].append((time.perf_counter() - started) * 1000)
        for table, at in picks:  # RoundSpan of either module prints alike
            for seat in (None, 2):
                got = new.neighbours(con, table, at, seat)
                want = old.neighbours(con, table, at, seat)
                if str(got) != str(want):
                    raise SystemExit(f"{table} at {at} seat {seat}: {got} != {want}")
    for way, values in times.items():
        print(json.dumps({"measure": way, "n": len(values), "wall_ms": stats(values)}))
    print(json.dumps({"measure": "alike", "picks": len(picks), "seats": [None, 2]}))


if __name__ == "__main__":
    main()

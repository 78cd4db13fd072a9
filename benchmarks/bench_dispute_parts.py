"""Where a dispute lookup's time goes: each part of projections/dispute.py's `dispute` wrapped in a
timer, in one process on one store (issue 19 item 4; benchmarks/results.md, session 46).

    PYTHONPATH=. python benchmarks/bench_dispute_parts.py STORE.duckdb PICKS.json [--repeats 3]

PICKS.json: a list of [table, moment, ...] (bench_dispute_kept.py's picks: `_picks`). Each
lookup is `dispute(con, table, at=moment)` on one read-only connection; per part, the wall p50,
p95 and max over every lookup, printed one JSON line per part, the whole lookup first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
from bench_dispute_kept import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from projections import dispute as d

    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("picks")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    picks = json.loads(Path(a.picks).read_text())
    now: dict[str, float] = {}

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                now[name] = now.get(name, 0.0) + time.perf_counter() - started
        return run

    for name in ("neighbours", "locate", "_context", "kept_round", "kept_settlements",
                 "anomalies_touching"):
        setattr(d, name, timed(name, getattr(d, name)))
    names = {d.sql.WAGERS: "WAGERS", d.sql.CARDS: "CARDS",
             d.sql.ANNOUNCEMENTS: "ANNOUNCEMENTS", d.sql.SPAN: "SPAN"}
    plain_rows = d.rows

    def rows(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object]) -> Any:
        return timed(names.get(sql, "other rows"), plain_rows)(con, sql, params)

    d.rows = rows  # type: ignore[assignment]
    spent: dict[str, list[float]] = defaultdict(list)
    with duckdb.connect(a.store, read_only=True) as con:
        con.execute("SELECT count(*) FROM events").fetchall()  # open and warm the file once
        for _ in range(a.repeats):
            for table, at, *_rest in picks:
                now.clear()
                started = time.perf_counter()
                d.dispute(con, table, at=datetime.fromisoformat(at))
                now["the whole lookup"] = time.perf_counter() - started
                for part, seconds in now.items():
                    spent[part].append(seconds * 1000)
    for part, values in sorted(spent.items(), key=lambda kv: -statistics.median(kv[1])):
        print(json.dumps({"part": part, "n": len(values), "wall_ms": stats(values)}))


if __name__ == "__main__":
    main()

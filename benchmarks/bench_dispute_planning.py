"""Session 41 (benchmarks/results.md): where a dispute about a round not kept spends its time,
statement by statement, split into DuckDB's binder (planner), optimizer, physical planner and
operator CPU (issue 19 item 4: can such a lookup answer within 100 ms at p95?).

    PYTHONPATH=. python benchmarks/bench_dispute_planning.py STORE.duckdb [--rounds 14]

STORE: a store this tree projected (its stored anomaly rows current, or the lookup evaluates
the anomaly view whole) with no shoe kept. The picks: `--rounds` rounds of any shoe, seed 5,
the middle of each round (bench_dispute_kept._picks); the first two lookups warm the caches and
are not counted. Each statement runs with DuckDB's detailed profile. Prints one line per
statement (where it ran from, mean ms per lookup) and the totals per lookup. Not a test.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
import traceback
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import duckdb  # noqa: E402
from bench_dispute_kept import _picks  # noqa: E402

from projections.dispute import dispute  # noqa: E402

WARM = 2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--rounds", type=int, default=14)
    a = ap.parse_args()
    picks = _picks(Path(a.store), a.rounds, closed=False, seed=5)
    con = duckdb.connect(a.store, read_only=True)
    execute = duckdb.DuckDBPyConnection.execute
    folder = Path(tempfile.mkdtemp(prefix="bench-dispute-planning-"))
    stats: dict[str, dict[str, float]] = collections.defaultdict(
        lambda: collections.defaultdict(float))
    on, count = [False], [0]

    def profiled(self: duckdb.DuckDBPyConnection, query: object, *args: Any,
                 **kwargs: Any) -> Any:
        if not on[0]:
            return execute(self, query, *args, **kwargs)
        caller = traceback.extract_stack(limit=3)[0]
        count[0] += 1
        out = folder / f"{count[0]}.json"
        for setting in ("SET enable_profiling = 'json'", "SET profiling_mode = 'detailed'",
                        f"SET profiling_output = '{out}'"):
            execute(self, setting)
        started = time.perf_counter()
        result = execute(self, query, *args, **kwargs)
        description, fetched = result.description, result.fetchall()
        wall = time.perf_counter() - started
        execute(self, "PRAGMA disable_profiling")
        p = json.loads(out.read_text())
        s = stats[f"{Path(caller.filename).name}:{caller.lineno}"]
        s["calls"] += 1
        s["wall_ms"] += wall * 1000
        s["planner_ms"] += p["planner"]["total_time"] * 1000
        s["optimizer_ms"] += p["optimizer"]["total_time"] * 1000
        s["physical_ms"] += p["physical_planner"]["total_time"] * 1000
        s["operators_cpu_ms"] += p["query"]["cpu_time"] * 1000

        class Fetched:  # the rows already fetched, as the caller reads them
            def fetchall(self) -> list[Any]:
                return fetched

            def fetchone(self) -> Any:
                return fetched[0] if fetched else None

        Fetched.description = description  # type: ignore[attr-defined]
        return Fetched()

    duckdb.DuckDBPyConnection.execute = profiled  # type: ignore[method-assign]
    for i, (table, at, _shoe, _round) in enumerate(picks):
        on[0] = i >= WARM
        dispute(con, table, at=datetime.fromisoformat(at))
    lookups = len(picks) - WARM
    totals: dict[str, float] = collections.defaultdict(float)
    for where, s in sorted(stats.items(), key=lambda kv: -kv[1]["wall_ms"]):
        print(json.dumps({"where": where, **{k: round(v / lookups, 1) for k, v in s.items()}}))
        for k, v in s.items():
            if k != "calls":
                totals[k] += v
    print(json.dumps({"per_lookup_ms": {k: round(v / lookups, 1) for k, v in totals.items()},
                      "lookups": lookups}))


if __name__ == "__main__":
    main()

"""Session 41 (benchmarks/results.md): what a small live batch's six family statements spend
in DuckDB's binder and optimizer against running, and whether switching optimizer passes off
(`SET disabled_optimizers`) makes them cheaper with the same rows (issue 16's floor; most of
what the test suite pays per batch).

    python benchmarks/bench_family_optimizers.py [PASSES ...]

A simulated evening (bench_small_batch.interleaved_evening: seed 12, 4 tables, 150 rounds)
into an embedded log; its first 3,000 records projected into a new store (threads 1), then
three batches of 50 records. In the third batch's detection, each family's statement runs, one
after another, once with DuckDB's detailed profile (its planner, optimizer, physical planner
and operator CPU), then six times with each PASSES set switched off ('' = none), the sets in
turn and their order reversed every other time, its thread CPU and rows compared with the rows
of the profiled run. Prints one JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import collections
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import duckdb  # noqa: E402
from bench_small_batch import interleaved_evening  # noqa: E402

import projections.incremental as incremental  # noqa: E402
from events.log.embedded.log import EmbeddedLog  # noqa: E402
from projections.projector import project  # noqa: E402

REPEATS = 6


def main() -> None:
    sets = ["", *sys.argv[1:]]
    folder = Path(tempfile.mkdtemp(prefix="bench-family-optimizers-"))
    records = interleaved_evening(folder, tables=4, rounds=150)
    log = EmbeddedLog(folder / "log")
    con = duckdb.connect(str(folder / "v.duckdb"), config={"threads": 1})
    log.append(records[:3000])
    project(log, con)
    on = [False]
    stages: dict[str, dict[str, float]] = {}
    runs: dict[str, dict[str, list[float]]] = {s: collections.defaultdict(list) for s in sets}
    same: dict[str, bool] = dict.fromkeys(sets, True)
    plain = incremental.Detector._evaluate_families

    def evaluate(self: incremental.Detector) -> None:
        if on[0]:
            rows: dict[int, list[str]] = {}
            for i, family in enumerate(self.families):
                cur = self.cursors[i]
                out = folder / f"profile_{i}.json"
                cur.execute(f"DELETE FROM {incremental.SCRATCH}.found_{i}")
                cur.execute("SET enable_profiling = 'json'")
                cur.execute("SET profiling_mode = 'detailed'")
                cur.execute(f"SET profiling_output = '{out}'")
                cur.execute(self.inserts[i])
                cur.execute("PRAGMA disable_profiling")
                p = json.loads(out.read_text())
                stages[str(family)] = {
                    "planner_ms": round(p["planner"]["total_time"] * 1000, 1),
                    "optimizer_ms": round(p["optimizer"]["total_time"] * 1000, 1),
                    "physical_ms": round(p["physical_planner"]["total_time"] * 1000, 1),
                    "operators_cpu_ms": round(p["query"]["cpu_time"] * 1000, 1)}
                rows[i] = sorted(map(str, cur.execute(
                    f"SELECT * FROM {incremental.SCRATCH}.found_{i}").fetchall()))
            for r in range(REPEATS):
                for passes in (sets if r % 2 == 0 else sets[::-1]):  # the order alternates
                    for i, family in enumerate(self.families):
                        cur = self.cursors[i]
                        cur.execute(f"SET disabled_optimizers = '{passes}'")
                        cur.execute(f"DELETE FROM {incremental.SCRATCH}.found_{i}")
                        started = time.thread_time()
                        cur.execute(self.inserts[i])
                        runs[passes][str(family)].append(time.thread_time() - started)
                        got = sorted(map(str, cur.execute(
                            f"SELECT * FROM {incremental.SCRATCH}.found_{i}").fetchall()))
                        same[passes] = same[passes] and got == rows[i]
                        cur.execute("RESET disabled_optimizers")
        plain(self)

    incremental.Detector._evaluate_families = evaluate  # type: ignore[method-assign]
    pos = 3000
    for i in range(3):
        log.append(records[pos:pos + 50])
        pos += 50
        on[0] = i == 2
        project(log, con)
    con.close()
    print(json.dumps({
        "profile_ms": stages,
        "profile_total_ms": {k: round(sum(s[k] for s in stages.values()), 1)
                             for k in next(iter(stages.values()))},
        "disabled": [{"passes": passes, "same_rows": same[passes],
                      "cpu_s_per_run": [round(sum(runs[passes][f][r] for f in runs[passes]), 3)
                                        for r in range(REPEATS)]} for passes in sets]}, indent=1))


if __name__ == "__main__":
    main()

"""A shoe's replay from the writer's kept rows beside the same replay from its queries, in one
process on one store (issue 19 item 4; projections/replay.py, projections/replay_kept.py).

    PYTHONPATH=. python benchmarks/bench_replay_kept.py STORE.duckdb --workdir W [--shoes 40] \
        [--keep-only N]

Copies STORE into W, keeps every closed shoe's replay there (ReplayKeeper, timed: the writer's
cost a shoe, and the file's growth), then replays `--shoes` closed shoes sampled with seed 1,
in turns per shoe: the queries (replay.computed, what every replay ran before), the kept rows
(replay.replay_shoe, the span check included), and the floor, DuckDB reading the shoe's event
rows straight (`SELECT * FROM events` over the shoe's table and seq range: the least any
replay must read). Each lookup's wall and CPU; p50, p95 (the 38th of 40) and max; the kept
replay is checked equal to the computed one for every shoe. One JSON line per measure, and a
summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from projections import replay, replay_kept  # noqa: E402


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 2),
            "p95": round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 2),
            "max": round(ordered[-1], 2)}


def _one(con: duckdb.DuckDBPyConnection, table: str,
         shoe: str) -> dict[str, tuple[float, float]]:
    """One shoe's replay three ways (module docstring), checked equal; wall and CPU ms each."""
    span = replay.shoe_span(con, shoe, table)
    got: dict[str, object] = {}
    took = {
        "queries": _timed(lambda: got.update(q=replay.computed(con, span))),
        "kept": _timed(lambda: got.update(k=replay.replay_shoe(con, shoe, table))),
        "floor": _timed(lambda: con.execute(
            "SELECT * FROM events WHERE table_id = $t AND seq BETWEEN $f AND $l",
            {"t": table, "f": span.first, "l": span.last}).fetchall()),
    }
    if got["q"] != got["k"]:
        raise SystemExit(f"kept replay of {table} {shoe} differs from its queries")
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--shoes", type=int, default=40)
    ap.add_argument("--reuse", action="store_true",
                    help="lookups only, on the copy an earlier run kept")
    ap.add_argument("--keep-only", type=int, metavar="N",
                    help="keep N closed shoes sampled with seed 1, not every one (a 10M "
                         "store's 7,189 shoes take about 40 minutes); the lookups read those")
    a = ap.parse_args()
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    db = work / "kept.duckdb"
    if not a.reuse:
        keep_all(a.store, db, a.keep_only)
    lookups(db, a.shoes)


def keep_all(store: str, db: Path, only: int | None = None) -> None:
    """Copy the store to `db` and keep every closed shoe's replay there (or `only` of them,
    sampled), timed."""
    shutil.copy(store, db)
    size_before = os.path.getsize(db)
    con = duckdb.connect(str(db))
    ((events,),) = con.execute("SELECT count(*) FROM events").fetchall()
    keeper = replay_kept.ReplayKeeper(con)
    wall, cpu = time.perf_counter(), time.process_time()
    if only is None:
        kept = keeper.keep_some(float("inf"), backlog=True)
    else:
        sampled = con.execute(
            "SELECT table_id, shoe_id FROM (SELECT DISTINCT table_id, shoe_id FROM events "
            f"WHERE event_type = 'ShoeClosed') USING SAMPLE {int(only)} ROWS (reservoir, 1) "
            "ORDER BY ALL").fetchall()
        kept = sum(replay_kept.keep(con, str(t), str(s)) for t, s in sampled)
    keep_wall, keep_cpu = time.perf_counter() - wall, time.process_time() - cpu
    con.execute("CHECKPOINT")
    size_after = os.path.getsize(db)
    what = "keep every closed shoe" if only is None else f"keep {only} sampled closed shoes"
    print(json.dumps({"measure": what, "events": events, "shoes": kept,
                      "wall_s": round(keep_wall, 2), "cpu_s": round(keep_cpu, 2),
                      "cpu_ms_per_shoe": round(keep_cpu * 1000 / max(kept, 1), 1),
                      "file_mb_before": round(size_before / 2**20, 1),
                      "file_mb_after": round(size_after / 2**20, 1)}), flush=True)
    con.close()


def lookups(db: Path, n: int) -> None:
    """Replays of `n` kept shoes three ways, in turns per shoe (module docstring)."""
    con = duckdb.connect(str(db), read_only=True)
    ((events,),) = con.execute("SELECT count(*) FROM events").fetchall()
    shoes = con.execute(
        f"SELECT table_id, shoe_id FROM replay_shoes USING SAMPLE {int(n)} ROWS "
        f"(reservoir, 1) ORDER BY ALL").fetchall()
    times: dict[str, list[tuple[float, float]]] = {"queries": [], "kept": [], "floor": []}
    for table, shoe in shoes:
        for name, took in _one(con, str(table), str(shoe)).items():
            times[name].append(took)
    summary: dict[str, object] = {"measure": "summary", "events": events, "lookups": len(shoes)}
    for name, pairs in times.items():
        w, c = _stats([p[0] for p in pairs]), _stats([p[1] for p in pairs])
        print(json.dumps({"measure": f"replay: {name}", "wall_ms": w, "cpu_ms": c}), flush=True)
        summary[f"{name}_p95_wall_ms"] = w["p95"]
        summary[f"{name}_p50_cpu_ms"] = c["p50"]
    q50, k50 = (statistics.median(p[1] for p in times[n]) for n in ("queries", "kept"))
    f50 = statistics.median(p[1] for p in times["floor"])
    summary["kept_over_queries_cpu_p50"] = round(k50 / q50, 3)
    summary["kept_over_floor_cpu_p50"] = round(k50 / f50, 2)
    summary["load_avg"] = os.getloadavg()[0]
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

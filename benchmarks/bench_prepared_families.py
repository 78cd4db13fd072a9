"""Session 42 (benchmarks/results.md): whether a live batch's six family statements, PREPAREd
once and run by EXECUTE, skip the binding and optimizing that session 41 found to be 78% of
their time (issue 16's floor per batch; most of what the test suite pays per batch).

    python benchmarks/bench_prepared_families.py [--repeats 7]

The store and batches of bench_family_optimizers.py (bench_small_batch.interleaved_evening: seed
12, 4 tables, 150 rounds; the first 3,000 records projected, DuckDB threads 1, then three
batches of 50 records). In the third batch's detection, each family's INSERT statement runs
`--repeats` times as written and `--repeats` times by EXECUTE of the same statement PREPAREd
once, alternating, each run's thread CPU taken and its rows compared with the first run's.
A control beside them, on a connection of its own: 30 nested subqueries, each with a window
function, over an empty table of the same shape, the same two ways; there DuckDB keeps the
prepared plan, so EXECUTE costs less than the statement written out. And single macros and
views of projections/sql over an empty `events` of the store's columns, on a connection of
their own with every view made (views.create_views), the same two ways: which of them DuckDB
plans again at every EXECUTE. Prints one JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import duckdb  # noqa: E402
from bench_small_batch import interleaved_evening  # noqa: E402

import projections.incremental as incremental  # noqa: E402
from events.log.embedded.log import EmbeddedLog  # noqa: E402
from projections.projector import project  # noqa: E402
from projections.views import create_views  # noqa: E402


def _cpu_ms(run: Callable[[], object]) -> float:
    started = time.thread_time()
    run()
    return (time.thread_time() - started) * 1000


def _median(values: list[float]) -> float:
    return round(sorted(values)[len(values) // 2], 1)


def _control(repeats: int) -> dict[str, float]:
    """The same two ways over a stack of subqueries that reads a plain table: no view, no
    macro, no attached catalog."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (seq BIGINT, table_id VARCHAR)")
    inner = "t"
    for k in range(30):
        inner = (f"(SELECT seq, table_id, row_number() OVER (PARTITION BY table_id ORDER BY seq) "
                 f"AS rn FROM {inner} WHERE seq >= {k})")
    sql = f"SELECT count(*) FROM {inner} AS x"
    con.execute(f"PREPARE control AS {sql}")
    plain: list[float] = []
    prepared: list[float] = []
    for _ in range(repeats):
        plain.append(_cpu_ms(lambda: con.execute(sql).fetchall()))
        prepared.append(_cpu_ms(lambda: con.execute("EXECUTE control").fetchall()))
    return {"plain_cpu_ms": _median(plain), "execute_cpu_ms": _median(prepared)}


_PIECES = {
    "events_in": "SELECT count(*) FROM events_in(NULL, NULL, NULL, NULL)",
    "card_events_of": "SELECT count(*) FROM card_events_of(NULL, NULL, NULL, NULL)",
    "events_once_of": "SELECT count(*) FROM events_once_of(NULL, NULL, NULL, NULL)",
    "rounds_of": "SELECT count(*) FROM rounds_of(NULL, NULL, NULL, NULL, NULL)",
    "shoes_of": "SELECT count(*) FROM shoes_of(NULL, NULL, NULL, NULL)",
    "timeline": "SELECT count(*) FROM timeline",
    "ledger": "SELECT count(*) FROM ledger",
}


def _pieces(store: Path, repeats: int) -> dict[str, dict[str, float]]:
    """Each of _PIECES written out and by EXECUTE, alternating, over an empty `events`."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{store}' AS store (READ_ONLY)")
    con.execute("CREATE TABLE events AS SELECT * FROM store.main.events LIMIT 0")
    con.execute("DETACH store")
    create_views(con)
    times: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in _PIECES}
    for k, sql in enumerate(_PIECES.values()):
        con.execute(f"PREPARE piece_{k} AS {sql}")
    for _ in range(repeats):
        for k, (name, sql) in enumerate(_PIECES.items()):
            times[name][0].append(_cpu_ms(lambda _s=sql: con.execute(_s).fetchall()))
            times[name][1].append(
                _cpu_ms(lambda _k=k: con.execute(f"EXECUTE piece_{_k}").fetchall()))
    return {name: {"plain_cpu_ms": _median(a), "execute_cpu_ms": _median(b)}
            for name, (a, b) in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-prepared-families-"))
    records = interleaved_evening(folder, tables=4, rounds=150)
    log = EmbeddedLog(folder / "log")
    con = duckdb.connect(str(folder / "v.duckdb"), config={"threads": 1})
    log.append(records[:3000])
    project(log, con)
    on = [False]
    families: dict[str, dict[str, object]] = {}
    plain_evaluate = incremental.Detector._evaluate_families

    def evaluate(self: incremental.Detector) -> None:
        if on[0]:
            for i, family in enumerate(self.families):
                cur = self.cursors[i]
                found = f"{incremental.SCRATCH}.found_{i}"

                def rows(_cur: duckdb.DuckDBPyConnection = cur, _found: str = found) -> list[str]:
                    return sorted(map(str, _cur.execute(f"SELECT * FROM {_found}").fetchall()))

                cur.execute(f"DELETE FROM {found}")
                cur.execute(self.inserts[i])
                first = rows()
                cur.execute(f"PREPARE family_{i} AS {self.inserts[i]}")
                plain: list[float] = []
                prepared: list[float] = []
                same = True
                for _ in range(args.repeats):
                    for way, into in ((self.inserts[i], plain), (f"EXECUTE family_{i}", prepared)):
                        cur.execute(f"DELETE FROM {found}")
                        into.append(_cpu_ms(lambda _w=way, _c=cur: _c.execute(_w)))
                        same = same and rows() == first
                cur.execute(f"DEALLOCATE family_{i}")
                families[str(family)] = {"plain_cpu_ms": _median(plain),
                                         "execute_cpu_ms": _median(prepared),
                                         "rows": len(first), "same_rows": same}
        plain_evaluate(self)

    incremental.Detector._evaluate_families = evaluate  # type: ignore[method-assign]
    position = 3000
    for i in range(3):
        log.append(records[position:position + 50])
        position += 50
        on[0] = i == 2
        project(log, con)
    con.close()
    total = {way: round(sum(float(f[way]) for f in families.values()), 1)  # type: ignore[arg-type]
             for way in ("plain_cpu_ms", "execute_cpu_ms")}
    print(json.dumps({"duckdb": duckdb.__version__, "repeats": args.repeats,
                      "families": families, "all_six": total,
                      "control": _control(args.repeats),
                      "pieces": _pieces(folder / "v.duckdb", args.repeats)}, indent=1))


if __name__ == "__main__":
    main()

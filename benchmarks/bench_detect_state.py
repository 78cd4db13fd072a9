"""Per-batch costs of two pieces of incremental detection (projections/incremental.py), at two
sizes of history, on synthetic tables (no log, no projector: seconds, not minutes):

- the event-id look-up DUPLICATE_EVENT would need for copies before the window (a known hole,
  docs/live-detection.md): the copies of a batch's ids read through an index on
  events.event_id, against the same query on a table without the index (a scan of the
  history); measured to decide, and the index was not built (it grows in memory with the log);
- the round-level state's upkeep (detect_rounds.advance), which every batch paid while
  ROUND_LEVEL_STRETCH was off, and no longer does.

    python benchmarks/bench_detect_state.py [--sizes 200000 2000000] [--batch 100]

Prints one line per measurement: the median of 5 runs, milliseconds.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from projections import detect_rounds

EVENTS_PER_ROUND = 20


def _median_ms(run, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        run()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def _store(path: Path, n: int, index: bool) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE events (table_id VARCHAR, event_id VARCHAR, seq BIGINT, "
                "shoe_id VARCHAR, round_no INTEGER, event_type VARCHAR)")
    if index:
        con.execute("CREATE INDEX event_ids ON events (event_id)")
    step = 100_000
    for start in range(0, n, step):  # in batches, as the projector appends
        con.execute(f"""INSERT INTO events SELECT 'T' || (i % 8), uuid()::VARCHAR, i // 8,
                        'S' || (i // 8000), ((i // 8) % 400) // {EVENTS_PER_ROUND} + 1,
                        'WagerPlaced' FROM range({start}, {min(start + step, n)}) t(i)""")
    con.execute("CHECKPOINT")
    return con


def lookup(n: int, batch: int, index: bool) -> tuple[float, str]:
    with tempfile.TemporaryDirectory() as tmp:
        con = _store(Path(tmp) / "s.duckdb", n, index)
        ids = [i for (i,) in con.execute(
            f"SELECT event_id FROM events USING SAMPLE {batch} ROWS").fetchall()]
        q = "SELECT * FROM events WHERE list_contains($ids, event_id)"
        plan = con.execute("EXPLAIN ANALYZE " + q, {"ids": ids}).fetchall()[0][1]
        how = "; ".join(x.strip() for x in re.findall(
            r"(Type: [\w ]+?|Row Groups Scanned: \d+ / \d+)\s*│", plan))
        ms = _median_ms(lambda: con.execute(q, {"ids": ids}).fetchall())
        con.close()
    return ms, how


def upkeep(n: int, batch: int) -> float:
    con = duckdb.connect()
    rounds = n // EVENTS_PER_ROUND
    con.execute(f"""CREATE TABLE {detect_rounds.ROUNDS} AS
        SELECT 'T' || (i % 8) AS table_id, 'S' || (i // 400) AS shoe_id,
               (i // 8) % 50 + 1 AS round_no, i * 20 AS first_seq, i * 20 + 19 AS last_seq
        FROM range({rounds}) t(i)""")
    con.execute(f"CREATE TABLE {detect_rounds.FAULTS} (table_id VARCHAR, shoe_id VARCHAR, "
                "round_no INTEGER, seq BIGINT)")
    con.execute(f"""CREATE TABLE pitlog_batch AS
        SELECT 'T' || (i % 8) AS table_id, 'S' || ({rounds} // 400) AS shoe_id,
               60 AS round_no, {rounds} * 20 + i AS seq, 'WagerPlaced' AS event_type
        FROM range({batch}) t(i)""")

    def run() -> None:
        con.execute("BEGIN")
        detect_rounds.advance(con)
        con.execute("ROLLBACK")

    return _median_ms(run)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[200_000, 2_000_000])
    ap.add_argument("--batch", type=int, default=100)
    a = ap.parse_args()
    for n in a.sizes:
        print(f"{n:>10,} events: round-state upkeep per batch of {a.batch} "
              f"(detect_rounds.advance, now skipped while off): {upkeep(n, a.batch):.1f} ms",
              flush=True)
        for index in (True, False):
            ms, how = lookup(n, a.batch, index)
            print(f"{n:>10,} events: look-up of {a.batch} event ids, "
                  f"{'with' if index else 'without'} the index: {ms:.1f} ms ({how})", flush=True)


if __name__ == "__main__":
    main()

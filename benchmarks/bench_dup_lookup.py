"""DUPLICATE_EVENT's look-up of earlier copies over the whole history (issue 16, item 1), on a
copy of a projected store (`pitlog simulate` + `pitlog project`, e.g. 1M events):

- the state's build (incremental.rebuild_state's part: the `detect_ids` table from `events`,
  once per store) and its size in the file;
- the look-up per batch, for the ids of a window's events from K on: the whole current shoe of
  `--tables` tables (what the shoe-level stretch re-evaluates; a first version looked these up)
  and a batch of `--batch` events (what the detector looks up, with the ids of the stretch's
  stored DUPLICATE_EVENT rows);
  old beside new: without the state, a join of those ids with `events` (a scan of the VARCHAR
  event_id column of the history), against the join of their hashes with `detect_ids` (a scan
  of int64s), both with the same answer;
- the append: a batch of `--batch` events inserted into `events` and committed, without and
  with the same batch's rows into `detect_ids` in the transaction.

    python benchmarks/bench_dup_lookup.py --store STORE.duckdb [--tables 140] [--batch 300]

Prints one line per measurement, the median of 5 runs; benchmarks/results.md has the numbers.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import duckdb
from bench_detect_state import _median_ms

from projections import incremental


def _window_ids(con: duckdb.DuckDBPyConnection, tables: int, batch: int) -> None:
    """`win_shoes`: the ids of the current shoe of `tables` tables (seq >= its first event);
    `win_batch`: the ids of the store's last `batch` events. With each: the table's partition
    and the offset of its shoe's first event (the window's start, scope.o)."""
    con.execute(f"""CREATE OR REPLACE TEMP TABLE win_shoes AS
        WITH cur AS (SELECT table_id, max(first_seq) AS k FROM detect_shoes GROUP BY ALL
                     ORDER BY table_id LIMIT {tables}),
             starts AS (SELECT e.table_id, e.log_partition, e.log_offset AS o, cur.k
                        FROM events AS e JOIN cur ON e.table_id = cur.table_id AND e.seq = cur.k)
        SELECT e.table_id, e.event_id, s.log_partition, s.o
        FROM events AS e JOIN starts AS s ON s.table_id = e.table_id AND e.seq >= s.k""")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE win_batch AS
        SELECT table_id, event_id, log_partition, log_offset AS o
        FROM events ORDER BY recorded_at DESC, log_offset DESC LIMIT {batch}""")


def _scan(src: str) -> str:  # without the state: the history's event_id column
    return f"""SELECT count(*) FROM events AS e
               JOIN {src} AS q ON e.table_id = q.table_id AND e.event_id = q.event_id
                AND e.log_partition = q.log_partition AND e.log_offset < q.o"""


def _hashed(src: str) -> str:  # with the state: int64s (incremental.Detector.earlier_copies)
    return f"""WITH q AS (SELECT DISTINCT hash(table_id, event_id) AS h, log_partition, o
                          FROM {src})
               SELECT count(*) FROM (SELECT * FROM {incremental.IDS}
                                     WHERE h IN (SELECT h FROM q)) AS i
               JOIN q ON i.h = q.h AND i.log_partition = q.log_partition AND i.log_offset < q.o"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--tables", type=int, default=140)
    ap.add_argument("--batch", type=int, default=300)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.duckdb"
        shutil.copy(a.store, path)
        con = duckdb.connect(str(path))
        ((n,),) = con.execute("SELECT count(*) FROM events").fetchall()
        con.execute(f"DROP TABLE IF EXISTS {incremental.IDS}")
        con.execute("CHECKPOINT")
        t = time.perf_counter()
        con.execute(f"CREATE TABLE {incremental.IDS} AS "
                    f"{incremental._IDS_OF.format(src='events')}")
        con.execute("CHECKPOINT")
        built = time.perf_counter() - t

        def blocks(table: str) -> int:
            return con.execute("SELECT count(DISTINCT block_id) FROM pragma_storage_info($t)",
                               {"t": table}).fetchall()[0][0]

        ((block_size,),) = con.execute("SELECT block_size FROM pragma_database_size()"
                                       ).fetchall()
        print(f"{n:,} events: detect_ids built in {built:.2f} s: {blocks(incremental.IDS)} "
              f"blocks of {block_size // 1024} KiB (events: {blocks('events')})", flush=True)
        _window_ids(con, a.tables, a.batch)
        for src in ("win_shoes", "win_batch"):
            ((ids,),) = con.execute(f"SELECT count(*) FROM {src}").fetchall()
            old, new = con.execute(_scan(src)).fetchall(), con.execute(_hashed(src)).fetchall()
            assert old[0][0] <= new[0][0], (old, new)  # the hashes find every copy
            scan, hashed = _median_ms(lambda s=src: con.execute(_scan(s)).fetchall()), \
                _median_ms(lambda s=src: con.execute(_hashed(s)).fetchall())
            print(f"{n:,} events: look-up of {ids:,} ids ({src}): scan of events.event_id "
                  f"{scan:.1f} ms, detect_ids {hashed:.1f} ms ({scan / hashed:.1f}x); "
                  f"earlier copies found: {old[0][0]} (hash matches {new[0][0]})", flush=True)
        con.execute(f"""CREATE TEMP TABLE pitlog_batch AS SELECT * REPLACE (
                            log_offset + 10000000 AS log_offset) FROM events
                        ORDER BY log_offset DESC LIMIT {a.batch}""")

        def append(ids: bool) -> None:
            con.execute("BEGIN")
            con.execute("INSERT INTO events BY NAME SELECT * FROM pitlog_batch")
            if ids:
                con.execute(f"INSERT INTO {incremental.IDS} "
                            f"{incremental._IDS_OF.format(src='pitlog_batch')}")
            con.execute("COMMIT")

        for _ in range(2):  # old, new, old, new: the second pair is printed
            plain, with_ids = _median_ms(lambda: append(False)), _median_ms(lambda: append(True))
        print(f"{n:,} events: append of {a.batch} events and commit: {plain:.1f} ms, with "
              f"detect_ids {with_ids:.1f} ms ({with_ids / plain:.2f}x)", flush=True)
        con.close()


if __name__ == "__main__":
    main()

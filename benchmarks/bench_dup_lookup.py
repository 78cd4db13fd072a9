"""DUPLICATE_EVENT's look-up of earlier copies over the whole history (issue 16), on a copy of a
projected store (`pitlog simulate` + `pitlog project`, e.g. 1M or 10M events), old beside new:

- old: `detect_ids` in the store (hash, log partition, log offset; one row per event) and its
  hashes matched by a semi join, a scan of the whole table (sessions 12-13);
- DuckDB's own index (ART) on that table, looked up by an `IN` list of constants (which DuckDB
  2.0 turns into an index scan; a join or `IN (SELECT ...)` scans the table);
- new: the SQLite index beside the store (projections/id_index.py), one B-tree search per hash.

Each is measured for `--batches` batches of `--batch` ids of the store's events (present ids:
each hash finds its event), different ids each batch: the look-up's median and the rows it read
(DuckDB's profile; SQLite's full-scan steps and the rows its searches returned); the memory it
holds (DuckDB's duckdb_memory(), by tag, after the batches; SQLite: the peak RSS of a process
that only opens the index and looks the same batches up, against one that only opens it); the
build (once per store) and the file; and the append of a batch of `--batch` events' ids and its
commit, old (into `detect_ids` in the batch's DuckDB transaction) against new (Index.append:
the SQLite transaction, inside the DuckDB one).

    python benchmarks/bench_dup_lookup.py --store STORE.duckdb [--batch 300] [--batches 10]
        [--art-limit 256MB]

Prints one line per measurement; benchmarks/results.md has the numbers.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
from bench_detect_state import _median_ms

from projections import id_index

# The old table under another name: Index.open drops an earlier pitlog's `detect_ids`.
OLD = "bench_detect_ids"


def _rows_scanned(con: duckdb.DuckDBPyConnection, sql: str, out: Path) -> int:
    con.execute("PRAGMA enable_profiling = 'json'")
    con.execute(f"SET profiling_output = '{out}'")
    con.execute(sql).fetchall()
    con.execute("PRAGMA disable_profiling")
    return int(json.loads(out.read_text())["query"]["total_rows_scanned"])


def _memory(con: duckdb.DuckDBPyConnection) -> str:
    return ", ".join(f"{tag} {mb:.0f} MB" for tag, mb in con.execute(
        "SELECT tag, memory_usage_bytes / 2**20 FROM duckdb_memory() "
        "WHERE memory_usage_bytes >= 2**20 ORDER BY 2 DESC").fetchall())


# In a process of its own, with nothing but sqlite3 imported: open the index, look the batches
# up (if asked; the look-up's statement as Index.matches makes it), print the peak RSS in MB
# (VmHWM: getrusage's would count the parent's pages the child had before its exec).
_CHILD = """
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("SELECT count(*) FROM upto").fetchall()
if sys.argv[3] == "look":
    for hashes in json.loads(open(sys.argv[2]).read()):
        for i in range(0, len(hashes), CHUNK):
            part = hashes[i:i + CHUNK]
            db.execute("SELECT h, log_partition, log_offset FROM ids WHERE h IN ("
                       + ", ".join("?" * len(part)) + ")", part).fetchall()
print(int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--batch", type=int, default=300)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--art-limit", default="256MB")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=a.store.parent) as tmp:
        path = Path(tmp) / "s.duckdb"
        shutil.copy(a.store, path)
        prof = Path(tmp) / "profile.json"
        con = duckdb.connect(str(path))
        ((n,),) = con.execute("SELECT count(*) FROM events").fetchall()
        # The ids looked up: `batches` x `batch` events' hashes, spread over the history.
        con.execute(f"""CREATE TEMP TABLE looked AS
            SELECT {id_index.HASH} AS h, (row_number() OVER () - 1) // {a.batch} AS b
            FROM (SELECT table_id, event_id FROM events WHERE event_id IS NOT NULL
                  USING SAMPLE {a.batch * a.batches} ROWS)""")
        batches = [[h for (h,) in con.execute("SELECT h FROM looked WHERE b = $b",
                                              {"b": b}).fetchall()] for b in range(a.batches)]
        con.execute("CHECKPOINT")

        # old: the table in the store, scanned
        t = time.perf_counter()
        con.execute(f"CREATE OR REPLACE TABLE {OLD} AS {id_index.IDS_OF.format(src='events')}")
        con.execute("CHECKPOINT")
        built = time.perf_counter() - t

        def semi(b: int) -> str:
            return (f"SELECT count(*) FROM {OLD} WHERE h IN "
                    f"(SELECT h FROM looked WHERE b = {b})")

        def in_list(b: int) -> str:
            return f"SELECT count(*) FROM {OLD} WHERE h IN ({', '.join(map(str, batches[b]))})"

        scanned = _rows_scanned(con, semi(0), prof)
        old_ms = _median_ms(lambda: con.execute(semi(0)).fetchall())
        print(f"{n:,} events: old, detect_ids scanned: built in {built:.2f} s; look-up of "
              f"{a.batch} ids {old_ms:.1f} ms (median of 5), rows scanned {scanned:,}; "
              f"memory after: {_memory(con)}", flush=True)

        # DuckDB's ART index on the same table
        t = time.perf_counter()
        con.execute(f"CREATE INDEX detect_ids_h ON {OLD} (h)")
        con.execute("CHECKPOINT")
        built = time.perf_counter() - t
        con.close()
        con = duckdb.connect(str(path))  # as a projector would find it: nothing loaded yet
        before = _memory(con)
        times = []
        for b in range(a.batches):
            t = time.perf_counter()
            con.execute(in_list(b)).fetchall()
            times.append((time.perf_counter() - t) * 1000)
        scanned = _rows_scanned(con, in_list(0), prof)
        ((db_mb,),) = con.execute("SELECT memory_usage FROM pragma_database_size()").fetchall()
        print(f"{n:,} events: ART index on detect_ids.h: built in {built:.2f} s; look-ups of "
              f"{a.batch} ids (IN list): first {times[0]:.1f} ms, median of the rest "
              f"{sorted(times[1:])[len(times[1:]) // 2]:.1f} ms, rows scanned {scanned:,}; "
              f"memory at open: {before or 'none'}; after {a.batches} batches: "
              f"{_memory(con)}", flush=True)
        con.close()
        # The same look-ups under a memory limit (the projector's is 512 MB by default): the
        # ART's nodes, once read, stay in memory.
        con = duckdb.connect(str(path), config={"memory_limit": a.art_limit})
        try:
            for b in range(a.batches):
                con.execute(in_list(b)).fetchall()
            limited = f"all {a.batches} batches looked up; {_memory(con)}"
        except duckdb.OutOfMemoryException as exc:
            limited = f"batch {b + 1}: {str(exc).splitlines()[0]}"
        print(f"{n:,} events: ART look-ups under memory_limit {a.art_limit}: {limited}",
              flush=True)
        con.close()
        con = duckdb.connect(str(path))
        con.execute("DROP INDEX detect_ids_h")

        # new: the SQLite index beside the store
        t = time.perf_counter()
        index = id_index.Index.open(con)
        built = time.perf_counter() - t
        file = id_index.index_path(con)
        assert file is not None
        index.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        index.close()
        index = id_index.Index.open(con)
        assert index.built == "used"
        times = []
        found = 0
        for hashes in batches:
            t = time.perf_counter()
            found += len(index.matches(hashes))
            times.append((time.perf_counter() - t) * 1000)
        scans = sum(s for sql, s in index.db.execute("SELECT sql, nscan FROM sqlite_stmt")
                    .fetchall() if " ids " in f"{sql} ")
        listed = Path(tmp) / "batches.json"
        listed.write_text(json.dumps(batches))
        code = _CHILD.replace("CHUNK", str(id_index.LOOKUP_CHUNK))
        child = {look: float(subprocess.run(
            [sys.executable, "-c", code, str(file), str(listed), "look" if look else "open"],
            check=True, capture_output=True, text=True).stdout) for look in (False, True)}
        print(f"{n:,} events: new, SQLite index: built in {built:.2f} s, "
              f"{file.stat().st_size / 2**20:.0f} MB; look-ups of {a.batch} ids: first "
              f"{times[0]:.1f} ms, median of the rest "
              f"{sorted(times[1:])[len(times[1:]) // 2]:.1f} ms; rows returned {found:,} "
              f"for {a.batch * a.batches:,} ids, full-scan steps {scans}; peak RSS of a "
              f"process that opens it {child[False]:.0f} MB, that also looks the "
              f"{a.batches} batches up {child[True]:.0f} MB", flush=True)

        # the append of a batch's ids, in the batch's transaction
        con.execute(f"""CREATE TEMP TABLE pitlog_batch AS SELECT * REPLACE (
                            log_offset + 100000000 AS log_offset) FROM events
                        ORDER BY log_offset DESC LIMIT {a.batch}""")
        shift = [0]

        def append(how: str) -> None:
            shift[0] += 1
            batch = (f"(SELECT * REPLACE (log_offset + {shift[0] * a.batch} AS log_offset) "
                     "FROM pitlog_batch)")
            con.execute("BEGIN")
            con.execute(f"INSERT INTO events BY NAME SELECT * FROM {batch}")
            if how == "old":
                con.execute(f"INSERT INTO {OLD} {id_index.IDS_OF.format(src=batch)}")
            elif how == "new":
                index.append(con, batch)
            con.execute("COMMIT")

        runs: dict[str, list[float]] = {"plain": [], "old": [], "new": []}
        for _ in range(4):  # plain, old, new in turn, four times: the median of each
            for how, got in runs.items():
                got.append(_median_ms(lambda h=how: append(h)))
        ms = {how: statistics.median(got) for how, got in runs.items()}
        print(f"{n:,} events: append of {a.batch} events and commit: {ms['plain']:.1f} ms; "
              f"with their detect_ids rows (old) {ms['old']:.1f} ms "
              f"(+{ms['old'] - ms['plain']:.1f}); with the SQLite index (new) "
              f"{ms['new']:.1f} ms (+{ms['new'] - ms['plain']:.1f})", flush=True)
        index.close()
        con.close()


if __name__ == "__main__":
    main()

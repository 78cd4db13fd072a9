"""What one live batch reads of the store (principle 7: the live cost follows what is new, not
the history): DUPLICATE_EVENT's look-up of earlier copies of an event id
(incremental.Detector.earlier_copies) in the index of ids (projections/id_index.py), counted
by SQLite's own statement counters and the rows its searches return. A count of rows, never a
timing.

benchmarks/results.md ("Session 13", "Session 14") has the look-up's cost at 1M and 9.5M ids
(benchmarks/bench_dup_lookup.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest
from live_support import feed, source_log

import projections.incremental as incremental
from events.log.embedded.log import EmbeddedLog
from projections import id_index
from projections.projector import project

BATCH = 120  # records of the one live batch measured


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, bytes]]:
    return source_log(tmp_path_factory.mktemp("source") / "log")


def _full_scan_steps(db: sqlite3.Connection) -> dict[str, int]:
    """Per statement of the index's table `ids` that the connection holds prepared: the rows
    SQLite stepped through in full scans of a table (SQLITE_STMTSTATUS_FULLSCAN_STEP, read from
    its sqlite_stmt table); a search by the key steps through none."""
    return {sql: int(n) for sql, n in db.execute(
        "SELECT sql, nscan FROM sqlite_stmt").fetchall() if " ids " in f"{sql} "}


def _batch_reads(folder: Path, records: list[tuple[bytes, bytes]], history: int,
                 monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, int]:
    """Project `history` records, then one batch of the next BATCH records: what that batch's
    look-up read of the index: (hashes searched, rows the searches returned, rows stepped
    through by full scans of `ids`)."""
    log = EmbeddedLog(folder / "log")
    feed(log, records, 0, history)
    searched, returned = [0], [0]
    with duckdb.connect(str(folder / "v.duckdb")) as con:
        project(log, con, publish_alerts=False)
        feed(log, records, history, history + BATCH)
        index = incremental._DETECTORS[con].index
        assert index is not None  # opened by the history's batches
        before = _full_scan_steps(index.db)
        matches = id_index.Index.matches

        def counted(self: id_index.Index, hashes: list[int]) -> list[tuple[int, int, int]]:
            found = matches(self, hashes)
            searched[0] += len(hashes)
            returned[0] += len(found)
            return found

        monkeypatch.setattr(id_index.Index, "matches", counted)
        report = project(log, con, publish_alerts=False)
        assert report.events == BATCH and report.batches == 1
        after = _full_scan_steps(index.db)
    log.close()
    scanned = sum(n - before.get(sql, 0) for sql, n in after.items())
    return searched[0], returned[0], scanned


def test_a_batch_looks_up_earlier_copies_in_proportion_to_its_ids_not_the_history(
        tmp_path: Path, records: list[tuple[bytes, bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = len(records) // 4, 3 * len(records) // 4
    assert large - small > 8 * BATCH  # histories far apart, each far larger than the batch
    for history in (small, large):
        searched, returned, scanned = _batch_reads(tmp_path / f"h{history}", records, history,
                                                   monkeypatch)
        assert searched, "the batch looked nothing up in the index"
        # The batch's ids (and its stored DUPLICATE_EVENT rows' ids) are what can match: a
        # look-up that follows the batch reads a few rows per id, not every event's. A search
        # reads the rows it returns and one more per hash (where it stops); a scan of the
        # index (detect_ids in DuckDB read 1,932 rows here after 1,688 records) steps through
        # every row.
        assert searched + returned + scanned <= 3 * BATCH, (history, searched, returned,
                                                             scanned)

"""What one live batch reads of the store (principle 7: the live cost follows what is new, not
the history), counted by DuckDB: every statement of the batch profiled, its table scans' rows
(query.total_rows_scanned) read from DuckDB's log. A count of rows, never a timing.

benchmarks/results.md ("Session 13") has the same count at 1M and 9.5M events
(benchmarks/bench_live.py --scans)."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest
from live_support import feed, source_log

import projections.incremental as incremental
from events.log.embedded.log import EmbeddedLog
from projections.projector import project

BATCH = 120  # records of the one live batch measured


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, bytes]]:
    return source_log(tmp_path_factory.mktemp("source") / "log")


def _profiled(cur: duckdb.DuckDBPyConnection) -> None:
    cur.execute("SET enable_profiling = 'no_output'")  # metrics into DuckDB's log, no file


def _batch_scans(folder: Path, records: list[tuple[bytes, bytes]], history: int,
                 monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Project `history` records (the rebuild path), then one batch of the next BATCH records
    with every statement profiled: (statement, rows its table scans read) of that batch."""
    log = EmbeddedLog(folder / "log")
    feed(log, records, 0, history)
    with duckdb.connect(str(folder / "v.duckdb")) as con:
        project(log, con, publish_alerts=False)
        feed(log, records, history, history + BATCH)
        ready = incremental.Detector._ready

        def profiled_ready(self: incremental.Detector) -> duckdb.DuckDBPyConnection:
            scratch = ready(self)  # made by the history's batches, or now
            for cur in (scratch, *self.cursors):  # the window catalogs' and the families'
                _profiled(cur)
            return scratch

        monkeypatch.setattr(incremental.Detector, "_ready", profiled_ready)
        con.execute("CALL enable_logging('Metrics')")
        _profiled(con)
        report = project(log, con, publish_alerts=False)
        assert report.events == BATCH and report.batches == 1
        rows = con.execute(r"""
            SELECT max(regexp_extract(message, 'query.sql, ''value'': (.*), ''start_time''',
                                      1, 's')) FILTER (message LIKE '%query.sql%'),
                   max(regexp_extract(message, 'total_rows_scanned, ''value'': (\d+)', 1))
                       FILTER (message LIKE '%query.total_rows_scanned%')
            FROM duckdb_logs WHERE type = 'Metrics'
              AND (message LIKE '%query.sql%' OR message LIKE '%query.total_rows_scanned%')
            GROUP BY context_id""").fetchall()
    log.close()
    return [(sql, int(n)) for sql, n in rows if sql and n]


def _reading(scans: list[tuple[str, int]], table: str) -> list[int]:
    """Rows scanned by the statements that read `table` (FROM or USING it, not INSERT INTO)."""
    pattern = re.compile(rf"(FROM|USING|JOIN)\s+(\S+\.)?{table}\b", re.IGNORECASE)
    return [n for sql, n in scans if pattern.search(sql)]


@pytest.mark.xfail(strict=True, reason=(
    "DUPLICATE_EVENT's look-up of earlier copies (incremental.Detector.earlier_copies) scans "
    "detect_ids whole, one row per event of the history: 9.5M rows per batch at 9.5M events "
    "(benchmarks/results.md, Session 13). A look-up by an index kept on disk would read what "
    "the batch's ids match; DuckDB's own index (ART) is held in memory"))
def test_a_batch_looks_up_earlier_copies_in_proportion_to_its_ids_not_the_history(
        tmp_path: Path, records: list[tuple[bytes, bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = len(records) // 4, 3 * len(records) // 4
    assert large - small > 8 * BATCH  # histories far apart, each far larger than the batch
    for history in (small, large):
        scans = _batch_scans(tmp_path / f"h{history}", records, history, monkeypatch)
        looked_up = _reading(scans, incremental.IDS)
        assert looked_up, "the batch looked nothing up in detect_ids"
        # The batch's ids (and its stored DUPLICATE_EVENT rows' ids) are what can match: a
        # look-up that follows the batch reads a few rows per id, not every event's.
        assert max(looked_up) <= 3 * BATCH, (history, looked_up)


"""Incremental detection (projections/incremental.py): after any sequence of batches the stored
anomaly rows are those of a full evaluation, row for row (EXCEPT ALL both ways), with every rule
code of the catalogue present; also across a SIGKILL of a projecting process; on both logs."""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pytest
from live_support import (
    assert_exact,
    differences,
    feed,
    fill,
    kill_repeatedly,
    random_cuts,
    source_log,
)

from events.log.base import EventLog
from events.log.embedded.log import EmbeddedLog
from events.log.registry import open_log
from projections.anomalies import STORED, anomaly_source
from projections.projector import project


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, bytes]]:
    return source_log(tmp_path_factory.mktemp("source") / "log")


def _grow_and_project(target: EventLog, db: Path, records: list[tuple[bytes, bytes]],
                      seed: int, pieces: int) -> None:
    rng = random.Random(seed)
    start = 0
    with duckdb.connect(str(db)) as con:
        for stop in random_cuts(len(records), pieces, seed):
            feed(target, records, start, stop)
            start = stop
            # Small, random batches: a round, a shoe, a table split anywhere.
            project(target, con, batch_size=rng.choice([250, 700, 5000]),
                    publish_alerts=False)
            assert anomaly_source(con) == STORED  # readers never fall back to the view
        assert_exact(con)


def test_stored_rows_equal_a_full_evaluation_after_random_batches(
        tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    _grow_and_project(EmbeddedLog(tmp_path / "log"), tmp_path / "v.duckdb", records, 1, 9)


def test_an_incremental_run_differs_from_the_full_evaluation_without_its_stretch(
        tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    # The comparison can fail: drop the stored rows of one stretch and it sees the hole.
    log = EmbeddedLog(tmp_path / "log")
    feed(log, records, 0, len(records))
    with duckdb.connect(str(tmp_path / "v.duckdb")) as con:
        project(log, con, publish_alerts=False)
        assert differences(con) == (0, 0)
        con.execute(f"DELETE FROM {STORED} WHERE code = 'MISSING_BURN'")
        assert differences(con)[1] > 0


def _kill_and_restart(uri: str, db: Path, seed: int) -> None:
    """A child projects in small batches; SIGKILL it at random moments, then finish here."""
    kill_repeatedly(uri, db, seed, publish=False)
    log = open_log(uri)
    try:
        with duckdb.connect(str(db)) as con:
            ((killed_at,),) = con.execute("SELECT sum(next_offset) FROM checkpoints").fetchall()
            # The children were killed part-way: some batches committed, not all.
            assert 0 < killed_at < sum(log.end_offsets().values())
            project(log, con, publish_alerts=False)
            ((checkpointed,),) = con.execute(
                "SELECT sum(next_offset) FROM checkpoints").fetchall()
            assert checkpointed == sum(log.end_offsets().values())
            assert_exact(con)
    finally:
        log.close()


def test_a_sigkilled_projector_restarts_to_the_full_evaluation(
        tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    fill(f"file://{tmp_path / 'log'}", records)
    _kill_and_restart(f"file://{tmp_path / 'log'}", tmp_path / "v.duckdb", 2)


@pytest.mark.kafka
def test_kafka_random_batches_equal_a_full_evaluation(
        tmp_path: Path, records: list[tuple[bytes, bytes]], kafka_uri: str) -> None:
    log = open_log(kafka_uri)
    try:
        _grow_and_project(log, tmp_path / "v.duckdb", records, 3, 6)
    finally:
        log.close()


@pytest.mark.kafka
def test_kafka_sigkilled_projector_restarts_to_the_full_evaluation(
        tmp_path: Path, records: list[tuple[bytes, bytes]], kafka_uri: str) -> None:
    fill(kafka_uri, records)
    _kill_and_restart(kafka_uri, tmp_path / "v.duckdb", 4)


def test_a_table_whose_stream_goes_back_in_seq_is_still_exact(
        tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    # A record replayed later (its seq repeats, behind the table's head) leaves the seq order
    # the incremental stretch relies on: that table is re-evaluated whole, and stays exact.
    log = EmbeddedLog(tmp_path / "log")
    half = len(records) // 2
    feed(log, records, 0, half)
    with duckdb.connect(str(tmp_path / "v.duckdb")) as con:
        project(log, con, publish_alerts=False)
        log.append([records[half // 3]])  # an old event of some table, again
        project(log, con, publish_alerts=False)
        assert differences(con) == (0, 0)
        ((unordered,),) = con.execute(
            "SELECT count(*) FROM detect_tables WHERE NOT ordered").fetchall()
        assert unordered == 1
        feed(log, records, half, len(records))
        project(log, con, batch_size=500, publish_alerts=False)
        assert_exact(con)

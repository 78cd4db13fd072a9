"""Incremental detection (projections/incremental.py): after any sequence of batches the stored
anomaly rows are those of a full evaluation, row for row (EXCEPT ALL both ways), with every rule
code of the catalogue present; also across a SIGKILL of a projecting process; on both logs."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest
from live_support import (
    SHORT,
    assert_exact,
    differences,
    feed,
    fill,
    kill_repeatedly,
    random_cuts,
    source_log,
)
from store_template import store_at
from table_builder import TableBuilder, recorder_for

from events.log.base import EventLog
from events.log.embedded.log import DEFAULT_PARTITIONS, EmbeddedLog, partition_for
from events.log.registry import open_log
from events.reddog.model import Box
from projections.anomalies import STORED, anomaly_source
from projections.incremental import take_recorded
from projections.projector import project


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, bytes]]:
    return source_log(tmp_path_factory.mktemp("source") / "log")


@pytest.fixture(scope="module")
def short_records(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, bytes]]:
    """The shorter evening (live_support.SHORT: every rule code still), for the tests whose
    fixed batch sizes make their cost the evening's length."""
    return source_log(tmp_path_factory.mktemp("short") / "log", SHORT)


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
        tmp_path: Path, short_records: list[tuple[bytes, bytes]]) -> None:
    _grow_and_project(EmbeddedLog(tmp_path / "log"), tmp_path / "v.duckdb", short_records, 1, 9)


def test_an_incremental_run_differs_from_the_full_evaluation_without_its_stretch(
        tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    # The comparison can fail: drop the stored rows of one stretch and it sees the hole.
    log = EmbeddedLog(tmp_path / "log")
    feed(log, records, 0, len(records))
    with duckdb.connect(str(store_at(tmp_path / "v.duckdb"))) as con:
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


@pytest.mark.slow
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


@contextmanager
def _projected(tmp_path: Path, records: list[tuple[bytes, bytes]],
               stop: int) -> Iterator[tuple[EmbeddedLog, duckdb.DuckDBPyConnection]]:
    """A log of the first `stop` records, projected whole (the rebuild path)."""
    log = EmbeddedLog(tmp_path / "log")
    feed(log, records, 0, stop)
    with duckdb.connect(str(store_at(tmp_path / "v.duckdb"))) as con:
        project(log, con, publish_alerts=False)
        yield log, con


def test_a_table_whose_stream_goes_back_in_seq_is_still_exact(
        tmp_path: Path, short_records: list[tuple[bytes, bytes]]) -> None:
    # A record replayed later (its seq repeats, behind the table's head) leaves the seq order
    # the incremental stretch relies on: that table is re-evaluated whole, and stays exact.
    records = short_records
    half = len(records) // 2
    with _projected(tmp_path, records, half) as (log, con):
        log.append([records[half // 3]])  # an old event of some table, again
        project(log, con, publish_alerts=False)
        assert differences(con) == (0, 0)
        ((unordered,),) = con.execute(
            "SELECT count(*) FROM detect_tables WHERE NOT ordered").fetchall()
        assert unordered == 1
        feed(log, records, half, len(records))
        assert project(log, con, batch_size=1200, publish_alerts=False).batches >= 2
        assert_exact(con)


def test_a_poll_commits_every_partition_in_one_batch_and_stays_exact(
        tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    # The log hands over one partition at a time; the projector gathers them, so a poll that
    # finds records in several partitions pays one detection, not one per partition.
    # The split: the first point at or after the middle whose next 90 records lie in more
    # than one partition (the source log is read a partition at a time).
    parts = [partition_for(key, DEFAULT_PARTITIONS) for key, _ in records]
    half = next(i for i in range(len(records) // 2, len(records) - 190)
                if len(set(parts[i:i + 90])) > 1)
    with _projected(tmp_path, records, half) as (log, con):
        assert log.n_partitions == DEFAULT_PARTITIONS
        before = log.end_offsets()
        feed(log, records, half, half + 90)
        grown = [p for p, end in log.end_offsets().items() if end > before[p]]
        assert len(grown) > 1  # the new records lie in several partitions
        report = project(log, con, publish_alerts=False)
        assert (report.events, report.batches) == (90, 1)
        # A batch size below the poll's records splits it, never past the batch size.
        feed(log, records, half + 90, half + 190)
        done = [sum(before.values()) + 90]
        report = project(log, con, batch_size=40, publish_alerts=False,
                         progress=done.append)
        sizes = [b - a for a, b in zip(done, done[1:], strict=False)]
        assert report.events == sum(sizes) == 100 and len(sizes) == report.batches >= 3
        assert max(sizes) <= 40
        assert differences(con) == (0, 0)


def test_each_new_alert_carries_the_recorded_at_of_its_newest_proving_event(
        tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    # pitlog serve's event-to-alert histogram reads it from the detection window
    # (Detector.take_recorded) instead of joining the alerts with the whole history.
    third = len(records) // 3
    with _projected(tmp_path, records, third) as (log, con):
        take_recorded(con)  # those of the first third: only the later ones are checked
        ((before,),) = con.execute("SELECT max(alert_seq) FROM alerts").fetchall()
        noted: dict[int, object] = {}
        start = third
        for cut in random_cuts(len(records) - third, 5, 9):
            feed(log, records, start, third + cut)
            start = third + cut
            project(log, con, batch_size=900, publish_alerts=False)
            noted.update(take_recorded(con))
        expected = dict(con.execute("""
            SELECT a.alert_seq, max(e.recorded_at)
            FROM (SELECT alert_seq, table_id, unnest(seqs) AS seq FROM alerts
                  WHERE alert_seq > $b) AS a
            LEFT JOIN events AS e USING (table_id, seq)
            GROUP BY a.alert_seq""", {"b": before}).fetchall())
        assert len(expected) > 5  # the rest of the evening raised alerts
        assert noted == expected


def _attached(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {n for (n,) in con.execute("SELECT database_name FROM duckdb_databases()").fetchall()}


def _stored_oid(con: duckdb.DuckDBPyConnection) -> int:
    ((oid,),) = con.execute("SELECT table_oid FROM duckdb_tables() WHERE table_name = $t",
                            {"t": STORED}).fetchall()
    return int(oid)


def test_a_resume_with_current_rows_neither_evaluates_whole_nor_builds_the_windows(
        tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    # Reopening a store whose stored rows and state are current (a restart, a `project` that
    # finds nothing new) must not pay the whole evaluation again (it would replace the stored
    # table: a new catalog entry), nor bind the window catalogs' views (Detector._ready) until
    # a batch has events; the next batch is then exact.
    third = len(records) // 3
    log = EmbeddedLog(tmp_path / "log")
    feed(log, records, 0, third)
    db = tmp_path / "v.duckdb"
    project(log, str(db), publish_alerts=False)
    with duckdb.connect(str(db)) as con:
        oid = _stored_oid(con)
        report = project(log, con, publish_alerts=False)
        assert (report.events, report.batches) == (0, 0)
        assert _stored_oid(con) == oid  # not evaluated whole again
        assert not {"pitlog_detect", "pitlog_detect_cards", "pitlog_detect_streams"} & set(
            _attached(con))  # no window catalog yet
        assert anomaly_source(con) == STORED
        feed(log, records, third, third + 400)
        report = project(log, con, batch_size=150, publish_alerts=False)
        assert report.events == 400 and report.batches >= 3
        assert _stored_oid(con) == oid  # incremental batches, not a whole evaluation
        assert "pitlog_detect" in _attached(con)
        assert differences(con) == (0, 0)


def test_a_card_after_a_higher_round_wholly_before_the_stretch_is_still_flagged(
        tmp_path: Path) -> None:
    # Round numbers going back (1, 7, 2, then a card for round 3): CARD_OUTSIDE_ROUND "for
    # round r after round 7 had begun" reads round 7's first card, which lies before the
    # round-level stretch (it starts at round 2, the round the batch finishes); the rounds
    # window keeps that card (detect_rounds.copy_windows, `highest`).
    log = EmbeddedLog(tmp_path / "log")
    t = TableBuilder(recorder_for(log))
    t.open_table()
    t.tap_in("D1")
    t.new_shoe("S1")
    firsts = {}
    for r, cards in ((1, "2H 9S 5D"), (7, "3H 10S 6D"), (2, "4C JS 7D")):
        t.round_no = r
        firsts[r] = t.deal_round(cards, {1: 500})["left"]
    t.flush()
    with duckdb.connect(str(store_at(tmp_path / "v.duckdb"))) as con:
        project(log, con, publish_alerts=False)
        t.round_no = 3
        late = t.draw("8H", Box.LEFT)
        t.flush()
        project(log, con, publish_alerts=False)
        assert differences(con) == (0, 0)
        flagged = {tuple(s) for (s,) in con.execute(
            f"SELECT seqs FROM {STORED} WHERE code = 'CARD_OUTSIDE_ROUND'").fetchall()}
        assert (firsts[7], late) in flagged
        assert (firsts[7], firsts[2]) in flagged

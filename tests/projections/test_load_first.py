"""A backlog loaded first and evaluated whole once (projections/projector.py,
LOAD_FIRST_RECORDS): a store whose rows are owed a whole evaluation anyway (a rebuild from
zero) and a backlog of more than that many records load every batch without detection, then
evaluate the store once. The rows, the round money and the alerts must be those of the same
log detected batch by batch; a run stopped part way resumes to the same; a store whose rows are
current is still detected batch by batch, whatever its backlog (a live feed's cost follows what
is new). The threshold is lowered here: the simulated evening is far below the default."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from live_support import (
    SHORT,
    assert_exact,
    differences,
    feed,
    follow_until_caught_up,
    source_log,
)
from store_template import store_at

from events.errors import ProjectionError
from events.log.embedded.log import EmbeddedLog
from projections import incremental, projector, round_money
from projections.anomalies import STORED, anomaly_source
from projections.id_index import index_path
from projections.projector import project
from projections.store import open_store

pytestmark = pytest.mark.slow

WINDOWS = "pitlog_detect"  # the catalog a batch's detection makes (incremental.SCRATCH)


# The shorter evening (live_support.SHORT: every rule code, 4,435 records, still over the
# lowered threshold four times): its batches of fixed sizes, each detected, are a third fewer.
@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, bytes]]:
    return source_log(tmp_path_factory.mktemp("source") / "log", SHORT)


def _attached(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {n for (n,) in con.execute("SELECT database_name FROM duckdb_databases()").fetchall()}


def _alert_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    return sorted(i for (i,) in con.execute("SELECT alert_id FROM alerts").fetchall())


def _apart(con: duckdb.DuckDBPyConnection, other: Path, table: str) -> tuple[int, int]:
    """(rows of `table` here not in the store at `other`, and the other way), EXCEPT ALL."""
    con.execute(f"ATTACH '{other}' AS other (READ_ONLY)")
    try:
        ((a, b),) = con.execute(
            f"SELECT (SELECT count(*) FROM (SELECT * FROM {table} EXCEPT ALL "
            f"SELECT * FROM other.{table})), (SELECT count(*) FROM (SELECT * FROM other.{table} "
            f"EXCEPT ALL SELECT * FROM {table}))").fetchall()
    finally:
        con.execute("DETACH other")
    return int(a), int(b)


@pytest.fixture(scope="module")
def batch_by_batch(tmp_path_factory: pytest.TempPathFactory,
                   records: list[tuple[bytes, bytes]]) -> Path:
    """The evening projected from zero with detection in every batch (the default threshold:
    the evening is below it), into a store of its own. Made once for the module: the tests
    only read it (attached or opened read-only)."""
    folder = tmp_path_factory.mktemp("reference")
    log = EmbeddedLog(folder / "reference-log")
    feed(log, records, 0, len(records))
    db = folder / "reference.duckdb"
    with duckdb.connect(str(db)) as con:
        report = project(log, con, batch_size=700, publish_alerts=False)
        assert report.batches > 1 and WINDOWS in _attached(con)  # each batch detected
    return db


def test_a_rebuild_loaded_first_equals_one_detected_batch_by_batch(
        tmp_path: Path, records: list[tuple[bytes, bytes]], batch_by_batch: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(projector, "LOAD_FIRST_RECORDS", 1_000)
    log = EmbeddedLog(tmp_path / "log")
    last = len(records) - len(records) // 50  # the rest comes later, as a live feed
    feed(log, records, 0, last)
    with duckdb.connect(str(store_at(tmp_path / "v.duckdb"))) as con:
        report = project(log, con, batch_size=700, publish_alerts=False)
        assert (report.events, report.quarantined) == (last, 0) and report.batches > 1
        assert WINDOWS not in _attached(con)  # no batch's window: evaluated whole, once
        assert anomaly_source(con) == STORED
        assert differences(con) == (0, 0)
        assert report.alerts == len(_alert_ids(con)) > 0
        # The index of event ids is caught up already, not left to the next batch
        path = index_path(con)
        assert path is not None and path.exists()
        # The rest, detected batch by batch (the rows are current now)
        feed(log, records, last, len(records))
        report = project(log, con, batch_size=700, publish_alerts=False)
        assert report.events == len(records) - last and WINDOWS in _attached(con)
        assert_exact(con)  # the full evaluation's rows, the round money, every rule code
        for table in (STORED, "round_money", "outcome_counts"):
            assert _apart(con, batch_by_batch, table) == (0, 0), table
        with duckdb.connect(str(batch_by_batch), read_only=True) as ref:
            assert _alert_ids(con) == _alert_ids(ref)  # each row raised once, the same ids


def test_a_load_stopped_part_way_resumes_to_the_same_rows(
        tmp_path: Path, records: list[tuple[bytes, bytes]], batch_by_batch: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(projector, "LOAD_FIRST_RECORDS", 1_000)
    log = EmbeddedLog(tmp_path / "log")
    feed(log, records, 0, len(records))
    db = tmp_path / "v.duckdb"
    calls: list[int] = []

    def stop_after_three(done: int) -> None:
        calls.append(done)
        if len(calls) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        project(log, db, batch_size=700, progress=stop_after_three, publish_alerts=False)
    with duckdb.connect(str(db)) as con:
        ((done,),) = con.execute("SELECT sum(next_offset) FROM checkpoints").fetchall()
        assert done == calls[-1] and 0 < done < len(records)  # three batches committed
        assert anomaly_source(con) != STORED  # the rows still owed: readers use the views
        project(log, con, batch_size=700, publish_alerts=False)
        assert WINDOWS not in _attached(con)  # the rest loaded first too, then evaluated once
        assert_exact(con)
        assert _apart(con, batch_by_batch, STORED) == (0, 0)


def test_a_store_with_current_rows_is_detected_batch_by_batch_whatever_its_backlog(
        tmp_path: Path, records: list[tuple[bytes, bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    log = EmbeddedLog(tmp_path / "log")
    tenth = len(records) // 10
    feed(log, records, 0, tenth)
    with duckdb.connect(str(store_at(tmp_path / "v.duckdb"))) as con:
        project(log, con, publish_alerts=False)
        assert anomaly_source(con) == STORED
        ((oid,),) = con.execute("SELECT table_oid FROM duckdb_tables() WHERE table_name = $t",
                                {"t": STORED}).fetchall()
        monkeypatch.setattr(projector, "LOAD_FIRST_RECORDS", 1_000)
        feed(log, records, tenth, len(records))  # nine times the history, all at once
        report = project(log, con, batch_size=2_000, publish_alerts=False)
        assert report.events == len(records) - tenth
        assert WINDOWS in _attached(con)  # each batch's window evaluated
        ((after,),) = con.execute("SELECT table_oid FROM duckdb_tables() WHERE table_name = $t",
                                  {"t": STORED}).fetchall()
        assert after == oid  # never replaced by a whole evaluation
        assert_exact(con)


def test_a_follower_detects_each_batch_so_its_readers_never_meet_stale_rows(
        tmp_path: Path, records: list[tuple[bytes, bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # `pitlog serve` and `project --follow` catching up from zero: a load first would leave the
    # stored rows stale for the whole load, and every reader would evaluate the view itself
    monkeypatch.setattr(projector, "LOAD_FIRST_RECORDS", 1_000)
    log = EmbeddedLog(tmp_path / "log")
    feed(log, records, 0, len(records))
    seen: list[str] = []
    with open_store(tmp_path / "v.duckdb") as con:  # the follower's store is made ready
        follow_until_caught_up(con, log, publish_alerts=False,
                               on_commit=lambda _: seen.append(anomaly_source(con)))
        assert seen and set(seen) == {STORED}  # current after every commit
        assert WINDOWS in _attached(con)
        assert_exact(con)


def test_duckdb_progress_bar_is_off_while_a_rebuild_evaluates_and_builds(
        tmp_path: Path, records: list[tuple[bytes, bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # DuckDB prints its bar on stdout for a statement past 2 seconds: a 10M rebuild's whole
    # evaluation and round money build put it into `pitlog project -f json`'s output (it is
    # off for the caller's connection while they run, and given back after)
    monkeypatch.setattr(projector, "LOAD_FIRST_RECORDS", 1_000)
    seen: dict[str, object] = {}

    def watched(name: str, real: Callable[..., object]) -> Callable[..., object]:
        def call(con: duckdb.DuckDBPyConnection, *args: object, **kw: object) -> object:
            ((seen[name],),) = con.execute(
                "SELECT current_setting('enable_progress_bar')").fetchall()
            return real(con, *args, **kw)
        return call

    monkeypatch.setattr(incremental, "refresh_stored_anomalies",
                        watched("whole", incremental.refresh_stored_anomalies))
    monkeypatch.setattr(round_money, "build_whole", watched("money", round_money.build_whole))
    log = EmbeddedLog(tmp_path / "log")
    feed(log, records, 0, len(records))
    with duckdb.connect(str(store_at(tmp_path / "v.duckdb"))) as con:
        con.execute("SET enable_progress_bar = true")
        project(log, con, batch_size=5_000, publish_alerts=False)
        assert seen == {"whole": False, "money": False}
        assert con.execute("SELECT current_setting('enable_progress_bar')").fetchall() == [
            (True,)]


def test_a_partition_that_cannot_be_read_leaves_the_others_loaded_and_evaluated(
        tmp_path: Path, records: list[tuple[bytes, bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # One damaged partition stops only itself (docs/operating.md): the others are loaded, and
    # their rows must be stored before the error is said, as batch by batch they were
    monkeypatch.setattr(projector, "LOAD_FIRST_RECORDS", 1_000)
    folder = tmp_path / "log"
    log = EmbeddedLog(folder)
    feed(log, records, 0, len(records))
    ends = log.end_offsets()
    partition = max(ends, key=lambda p: ends[p])
    seg, cut = log.segment_position(partition, ends[partition] // 2)
    log.close()
    with seg.open("r+b") as f:
        f.truncate(cut + 5)  # the rest of that partition is gone; its index still lists it
    with duckdb.connect(str(store_at(tmp_path / "v.duckdb"))) as con:
        with pytest.raises(ProjectionError, match=f"partition {partition} cannot be read"):
            project(EmbeddedLog(folder), con, batch_size=700, publish_alerts=False)
        ((done,),) = con.execute("SELECT sum(next_offset) FROM checkpoints").fetchall()
        assert sum(ends.values()) - ends[partition] < done < sum(ends.values())
        assert anomaly_source(con) == STORED  # evaluated: readers never evaluate the view
        assert differences(con) == (0, 0)

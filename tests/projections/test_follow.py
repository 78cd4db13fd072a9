"""`follow`: the views keep up with a growing log, readers in other processes see the published
read-only copy catch up, readers on cursors of the follower's own connection see every committed
batch, and a stop request ends it cleanly (embedded log: no broker needed;
tests/kafka/test_kafka_follower_killed.py follows a real Kafka topic in a subprocess). No test
here asserts how long anything took: the deadlines only stop a hung test."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from alert_support import Unreachable

import projections.alerts as alerts_module
from events.errors import LogError
from events.log.embedded.alerts import EmbeddedAlertLog
from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections.follow import Commit, Follower, follow
from projections.projector import ProjectionReport, project
from projections.snapshot import database_path, open_for_reading, snapshot_path
from projections.store import open_store


def _snapshot_events(db: Path) -> int:
    snap = snapshot_path(db)
    if not snap.exists():
        return -1
    con = duckdb.connect(str(snap), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM events").fetchall()[0][0])
    finally:
        con.close()


HANG_S = 120.0  # waiting longer than this means stuck, not slow


def _wait_for(db: Path, events: int) -> None:
    deadline = time.monotonic() + HANG_S
    while (seen := _snapshot_events(db)) != events:
        if time.monotonic() > deadline:
            pytest.fail(f"stuck: the snapshot has {seen} events, not {events}")
        time.sleep(0.05)


def test_readers_of_the_copy_see_new_events_and_a_stop_ends_follow_cleanly(
        tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=4)
    db = tmp_path / "live.duckdb"
    stop = threading.Event()
    result: list[ProjectionReport] = []
    done: list[int] = []
    follower = threading.Thread(target=lambda: result.append(follow(
        log, db, progress=done.append, poll_interval=0.1, stop_event=stop,
        snapshot_every=0.5)))
    first = simulate(log, SimConfig(seed=1, tables=2, rounds=15)).events
    follower.start()
    try:
        _wait_for(db, first)
        # The file itself is held by the follower; readers get the snapshot.
        reader = open_for_reading(db)
        try:
            assert database_path(reader) == snapshot_path(db)
            assert reader.execute("SELECT count(*) FROM events").fetchall() == [(first,)]
        finally:
            reader.close()
        second = simulate(log, SimConfig(seed=2, tables=3, rounds=10)).events
        _wait_for(db, first + second)
    finally:
        stop.set()
        follower.join(timeout=30)
    assert not follower.is_alive()
    (report,) = result
    assert report.events == first + second and report.quarantined == 0
    assert report.positions == log.end_offsets()
    assert done[-1] == first + second  # progress counts the records covered by checkpoints
    con = duckdb.connect(str(db))  # released: a writer can open it again
    try:
        assert con.execute("SELECT sum(next_offset) FROM checkpoints").fetchall() == \
            [(first + second,)]
    finally:
        con.close()


_OPEN_READ_WRITE = """
import sys, duckdb
try:
    duckdb.connect(sys.argv[1]).close()
except duckdb.IOException as exc:
    print("refused:", str(exc).splitlines()[0])
else:
    print("opened")
"""


def test_a_follower_keeps_its_lock_after_publishing_copies_and_reads_beside_it(
        tmp_path: Path) -> None:
    """DuckDB's lock on its file is a POSIX record lock, the process's, dropped when the process
    closes any descriptor of the file: the copy published (opened and closed here) and a reader
    of this process checking the file's header unlocked the follower's database, and a second
    writer got in (an outside review, session 38). After both, another process is still
    refused, and the follower goes on."""
    log = EmbeddedLog(tmp_path / "log", partitions=2)
    db = tmp_path / "held.duckdb"
    stop = threading.Event()
    result: list[ProjectionReport] = []
    follower = threading.Thread(target=lambda: result.append(follow(
        log, db, poll_interval=0.05, stop_event=stop, snapshot_every=0.2)))
    first = simulate(log, SimConfig(seed=3, tables=2, rounds=8)).events
    follower.start()
    try:
        _wait_for(db, first)  # a copy published
        open_for_reading(db).close()  # a reader in this process: it reads the copy
        other = subprocess.run([sys.executable, "-c", _OPEN_READ_WRITE, str(db)],
                               capture_output=True, text=True, timeout=HANG_S, check=True)
        assert other.stdout.startswith("refused: IO Error: Could not set lock on file"), \
            other.stdout
        second = simulate(log, SimConfig(seed=4, tables=3, rounds=5)).events
        _wait_for(db, first + second)  # another copy, after another batch
        other = subprocess.run([sys.executable, "-c", _OPEN_READ_WRITE, str(db)],
                               capture_output=True, text=True, timeout=HANG_S, check=True)
        assert other.stdout.startswith("refused:"), other.stdout
    finally:
        stop.set()
        follower.join(timeout=30)
    assert not follower.is_alive() and result[0].events == first + second


def test_follow_waits_for_a_reader_to_release_the_database(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=2)
    db = tmp_path / "busy.duckdb"
    events = simulate(log, SimConfig(seed=3, tables=1, rounds=5)).events
    duckdb.connect(str(db)).close()  # an empty file a reader can open
    # Another process holds the file read-only for a moment, as `pitlog shoes` would.
    reader = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(db)!r}, "
         f"read_only=True); print('open', flush=True); time.sleep(1.5)"],
        stdout=subprocess.PIPE)
    assert reader.stdout is not None and reader.stdout.readline() == b"open\n"
    stop = threading.Event()
    result: list[ProjectionReport] = []
    follower = threading.Thread(target=lambda: result.append(
        follow(log, db, poll_interval=0.1, stop_event=stop, snapshot_every=0.5)))
    follower.start()
    try:
        _wait_for(db, events)
        # The follower could only open the file after the reader let go of it.
        assert reader.poll() == 0
    finally:
        stop.set()
        follower.join(timeout=30)
        reader.wait(timeout=30)
    assert result[0].events == events


def test_cursors_of_the_followers_connection_see_each_batch_as_it_commits(
        tmp_path: Path) -> None:
    """What `pitlog serve` relies on: the loop runs on a connection it is given, in a thread,
    and a cursor of that connection sees each batch as soon as on_commit reports it."""
    log = EmbeddedLog(tmp_path / "log", partitions=3)
    db = tmp_path / "served.duckdb"
    first = simulate(log, SimConfig(seed=5, tables=2, rounds=12, irregularities=0.05,
                                    per_code={"LATE_RAISE": 0.5})).events
    con = open_store(db)
    stop = threading.Event()
    seen: list[tuple[int, int, int]] = []  # (records in checkpoints, rows a cursor sees, lag)
    rounds: list[Commit] = []

    def on_commit(c: Commit) -> None:
        cur = con.cursor()
        try:
            ((n,),) = cur.execute("SELECT count(*) FROM events").fetchall()
        finally:
            cur.close()
        seen.append((sum(c.positions.values()), int(n), sum(c.lag.values())))

    follower = Follower(con, log, stop_event=stop, poll_interval=0.05, on_commit=on_commit,
                        on_round=rounds.append)
    results: list[ProjectionReport] = []
    thread = threading.Thread(target=lambda: results.append(follower.run()))
    thread.start()
    try:
        assert follower.ready.wait(HANG_S)
        second = simulate(log, SimConfig(seed=6, tables=1, rounds=8)).events
        deadline = time.monotonic() + HANG_S
        while not seen or seen[-1][0] != first + second:
            if time.monotonic() > deadline:
                pytest.fail(f"stuck at {seen[-1:]}")
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(HANG_S)
    assert not thread.is_alive()
    try:
        # Every commit was visible to a new cursor at once: rows = records checkpointed (this
        # evening has no quarantined records), and the last batch left no lag.
        assert all(records == rows for records, rows, _ in seen)
        assert [records for records, _, _ in seen] == sorted({r for r, _, _ in seen})
        assert seen[-1] == (first + second, first + second, 0)
        assert rounds and rounds[-1].lag == dict.fromkeys(log.end_offsets(), 0)
        (report,) = results
        assert report.events == first + second and report.batches == len(seen)
        # The run's alerts are every alert of this new database.
        assert report.alerts == con.execute("SELECT count(*) FROM alerts").fetchall()[0][0] > 0
        # The loop leaves the connection open: its owner closes it.
        assert con.execute("SELECT count(*) FROM events").fetchall() == [(first + second,)]
    finally:
        con.close()


def test_alerts_a_failed_publish_left_reach_the_sink_once_it_is_back_with_no_new_batch(
        tmp_path: Path) -> None:
    """A publish fails (the broker down longer than the sink's timeout) at the follower's last
    batch; the sink is back, and no event comes: the follower, idle, publishes them at its
    next poll (projections.alerts.publish_again), each once. Until session 42 they waited for
    the next batch, which a quiet floor may not send for a long while."""
    log = EmbeddedLog(tmp_path / "log", partitions=3)
    simulate(log, SimConfig(seed=5, tables=2, rounds=12, irregularities=0.05,
                            per_code={"LATE_RAISE": 0.5}))
    sink = Unreachable(log.alert_sink())
    alerts_module._SINKS[log] = sink  # noqa: SLF001 - the sink the follower's publisher takes
    con = open_store(tmp_path / "served.duckdb")
    stop = threading.Event()
    follower = Follower(con, log, stop_event=stop, poll_interval=0.05)
    thread = threading.Thread(target=follower.run)
    thread.start()
    try:
        assert follower.ready.wait(HANG_S)  # every batch committed, each publish refused
        assert sink.refused > 0
        sink.down = False  # back; the log gets nothing new
        stored = [a for (a,) in con.cursor().execute(
            "SELECT alert_id FROM alerts ORDER BY alert_seq").fetchall()]
        deadline = time.monotonic() + HANG_S
        while len(published := [a["alert_id"] for a in EmbeddedAlertLog(log.folder).read()]) \
                < len(stored):
            if time.monotonic() > deadline:
                pytest.fail(f"{len(published)} of {len(stored)} alerts published")
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(HANG_S)
        con.close()
    assert not thread.is_alive()
    assert stored and published == stored


def test_an_idle_follower_tries_a_failing_sink_again_less_and_less_often(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A second read (session 42): publish_again tried a sink that keeps failing at every poll,
    each try a warning (18 in 10 s at a 0.5 s poll). Each failure in a row now doubles the wait
    before the next try, up to backoff.RETRY_MAX_S; a success starts again from none. The clock
    is the test's own: no timing."""
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    simulate(log, SimConfig(seed=5, tables=1, rounds=6, irregularities=0.05,
                            per_code={"LATE_RAISE": 0.5}))
    sink = Unreachable(log.alert_sink())
    alerts_module._SINKS[log] = sink  # noqa: SLF001 - the sink the publisher takes
    clock = [datetime(2026, 12, 6, 21, 0, tzinfo=UTC)]
    monkeypatch.setattr(alerts_module, "_now", lambda: clock[0])
    con = open_store(tmp_path / "served.duckdb")
    try:
        project(log, con)  # its batch's own publish: refused
        assert sink.refused == 1
        tried = []
        for tick in range(200):  # 20 s of polls every 0.1 s
            clock[0] += timedelta(seconds=0.1)
            before = sink.refused
            alerts_module.publish_again(con, log)
            if sink.refused > before:
                tried.append(tick)
        # after 1, 2, 4, 5, 5 s: ticks 9, 29, 69, 119, 169 (each 0.1 s, the first at 0.1 s)
        assert tried == [9, 29, 69, 119, 169], tried
        sink.down = False
        clock[0] += timedelta(seconds=5)
        caplog.clear()  # the failures' warnings
        with caplog.at_level(logging.INFO, logger="pitlog.alerts"):
            alerts_module.publish_again(con, log)
        # its return is said once, with the outage's count: the batch's own and the five tries
        assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
            (logging.INFO, f"alerts published to {sink.name} again after 6 failures in a row")]
        ((raised,),) = con.execute("SELECT count(*) FROM alerts").fetchall()
        assert raised > 0 and len(list(EmbeddedAlertLog(log.folder).read())) == raised
        status = alerts_module._STATUS[log]  # noqa: SLF001
        assert (status.error, status.failures, status.retry_at) == (None, 0, None)
    finally:
        con.close()


class _DownAWhile(EmbeddedLog):
    """A real embedded log whose end offsets fail `down` times in a row (a LogError, as a
    broker restart's) once `armed`."""

    def __init__(self, folder: Path, down: int) -> None:
        super().__init__(folder)
        self.down, self.armed, self.failed = down, False, 0

    def end_offsets(self) -> dict[int, int]:
        if self.armed and self.failed < self.down:
            self.failed += 1
            raise LogError("the broker is restarting (the test's)")
        return super().end_offsets()


def test_a_follower_tries_an_unreachable_log_again_within_five_seconds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After failures in a row the follower waits 1, 2, 4, then 5 s between tries
    (projections/backoff.py): it waited up to 30 s (8, 16, 30 after the third), so a broker
    back from a rolling restart was found up to 30 s later (21 s for one back 40 s after the
    first failure). Its sleeps are recorded, not
    slept: no timing."""
    folder = tmp_path / "log"
    simulate(EmbeddedLog(folder), SimConfig(seed=5, tables=1, rounds=3))
    log = _DownAWhile(folder, down=7)
    con = open_store(tmp_path / "v.duckdb")
    waits: list[float] = []
    stop = threading.Event()
    monkeypatch.setattr("projections.follow._StopFlag.sleep",
                        lambda _self, seconds: waits.append(seconds))

    def after_round(_c: Commit) -> None:
        if not log.armed:
            log.armed = True  # the first round read the log: it "goes away" now
        elif log.failed == log.down:
            stop.set()  # a round after the last failure: it is back and followed again

    try:
        Follower(con, log, stop_event=stop, poll_interval=0.01, on_round=after_round).run()
    finally:
        con.close()
    assert log.failed == 7
    # the first failure is the idle round's look for news (replay_kept's backlog check), which
    # waits the poll; the next six are the loop's reads, each followed by its backoff
    assert [w for w in waits if w != 0.01] == [1, 2, 4, 5, 5, 5]


def test_an_outage_logs_a_warning_a_minute_not_one_a_try(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Every 5 s try of an unreachable log logged a warning: 720 lines an hour of outage. Now
    the first failure in a row, every twelfth (a minute of 5 s waits) and one saying something
    new are warnings, the others DEBUG, each with its count; the return is an INFO line.
    Sleeps skipped (a no-op), not slept: no timing."""
    folder = tmp_path / "log"
    simulate(EmbeddedLog(folder), SimConfig(seed=5, tables=1, rounds=3))
    log = _DownAWhile(folder, down=30)
    con = open_store(tmp_path / "v.duckdb")
    stop = threading.Event()
    monkeypatch.setattr("projections.follow._StopFlag.sleep", lambda _self, seconds: None)

    def after_round(_c: Commit) -> None:
        if not log.armed:
            log.armed = True
        elif log.failed == log.down:
            stop.set()

    caplog.set_level(logging.DEBUG, logger="pitlog.follow")
    try:
        Follower(con, log, stop_event=stop, poll_interval=0.01, on_round=after_round).run()
    finally:
        con.close()
    tries = [(r.levelno, r.getMessage()) for r in caplog.records
             if "the broker is restarting (the test's)" in r.getMessage()]
    # the first failure is the idle round's look for news, which logs nothing of its own
    assert [m.split("(failure ")[1].split(" ")[0] for _l, m in tries] == \
        [str(n) for n in range(1, 30)]
    assert [level for level, _m in tries] == [
        logging.WARNING if n in (1, 12, 24) else logging.DEBUG for n in range(1, 30)]
    assert tries[0][1] == ("the broker is restarting (the test's); retrying in 1s (failure 1 "
                           "in a row; projected rows are safe)")
    back = [r.getMessage() for r in caplog.records if "answers again" in r.getMessage()]
    assert back == [f"the log {log.uri} answers again after 29 failures in a row: following it"]


def test_a_failing_sink_warns_at_the_first_failure_each_twelfth_and_a_new_error() -> None:
    status = alerts_module.SinkStatus("the test's sink")
    levels = [status.failed(LogError("the broker is down")) for _ in range(24)]
    assert levels == [logging.WARNING if n in (1, 12, 24) else logging.DEBUG
                      for n in range(1, 25)]
    assert status.failed(LogError("not authorized")) == logging.WARNING  # something new
    assert status.failed(LogError("not authorized")) == logging.DEBUG
    status.published()
    assert status.failed(LogError("not authorized")) == logging.WARNING  # a new outage


class _WrittenWhileProjected(EmbeddedLog):
    """A real embedded log that another writer appends `more` records to right after the
    projector has read its end offsets (the second read of a round: the follower's own is the
    first): records that arrive while a batch runs, as a device's do."""

    def __init__(self, folder: Path, more: SimConfig) -> None:
        super().__init__(folder)
        self.more, self.reads, self.appended = more, 0, 0

    def end_offsets(self) -> dict[int, int]:
        ends = super().end_offsets()
        self.reads += 1
        if self.reads == 2:
            self.appended = simulate(EmbeddedLog(self.folder), self.more).events
        return ends


def test_the_lag_after_a_commit_counts_what_arrived_while_the_batch_ran(tmp_path: Path) -> None:
    """/health, /metrics and the follower's log line take their lag from the Commit. Its end
    offsets were those read as the round began, so records written while a batch ran were
    counted nowhere: lag 0 with thousands waiting (an outside review, session 41). After each
    commit and each round the lag is the log's end now minus the checkpoints."""
    folder = tmp_path / "log"
    simulate(EmbeddedLog(folder, partitions=3),
             SimConfig(seed=5, tables=2, rounds=6))
    log = _WrittenWhileProjected(folder, SimConfig(seed=6, tables=1, rounds=4))
    con = open_store(tmp_path / "v.duckdb")
    stop = threading.Event()
    commits: list[tuple[dict[int, int], dict[int, int]]] = []  # (reported lag, lag now)
    rounds: list[tuple[dict[int, int], dict[int, int]]] = []

    def lag_now(c: Commit) -> dict[int, int]:
        return {p: end - c.positions.get(p, 0)
                for p, end in sorted(EmbeddedLog(folder).end_offsets().items())}

    follower = Follower(con, log, stop_event=stop, poll_interval=0.05,
                        on_commit=lambda c: commits.append((c.lag, lag_now(c))),
                        on_round=lambda c: rounds.append((c.lag, lag_now(c))))
    thread = threading.Thread(target=follower.run)
    thread.start()
    try:
        deadline = time.monotonic() + HANG_S
        while not rounds or sum(rounds[-1][1].values()) or not log.appended:
            if time.monotonic() > deadline:
                pytest.fail(f"stuck at {commits[-1:]}, {rounds[-1:]}")
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(HANG_S)
        con.close()
    assert not thread.is_alive()
    # The first batch held the first evening only; the second evening waited, all of it.
    assert sum(commits[0][1].values()) == log.appended > 0
    assert commits[0][0] == commits[0][1]
    assert rounds[0][0] == rounds[0][1]
    assert all(reported == now for reported, now in commits + rounds)
    assert sum(commits[-1][0].values()) == 0 and len(commits) >= 2


def _run_stopped_at_first_step(con: duckdb.DuckDBPyConnection, log: EmbeddedLog, **kwargs: bool
                               ) -> tuple[list[str], list[ProjectionReport]]:
    """A follower on `con` asked to stop as soon as it logs a step of a whole evaluation or
    build; the steps it logged and its report, once it stopped on its own (asserted)."""
    stop = threading.Event()
    steps: list[str] = []

    class StopAtFirstStep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "step" in record.getMessage():
                steps.append(record.getMessage())
                stop.set()

    handler = StopAtFirstStep()
    logger = logging.getLogger("pitlog.follow")
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.INFO)
    try:
        follower = Follower(con, log, stop_event=stop, poll_interval=0.05, **kwargs)
        results: list[ProjectionReport] = []
        thread = threading.Thread(target=lambda: results.append(follower.run()), daemon=True)
        thread.start()
        thread.join(HANG_S)
        stopped_on_its_own = not thread.is_alive()
    finally:
        stop.set()  # a follower that never logged a step is stopped too (after its evaluation)
        thread.join(HANG_S)
        logger.removeHandler(handler)
        logger.setLevel(previous)
    assert stopped_on_its_own
    return steps, results


def test_a_stop_during_the_whole_evaluation_ends_it_within_a_step_and_stores_nothing(
        tmp_path: Path) -> None:
    """A store projected without its anomaly rows is evaluated whole before the first batch
    (minutes at 10M, in groups x families steps): a stop then ends the follower after the step
    in hand, not after the whole; the next run evaluates it and stores the view's rows."""
    from live_support import follow_until_caught_up

    from projections.anomalies import STORED, anomaly_source
    from projections.projector import project

    log = EmbeddedLog(tmp_path / "log", partitions=2)
    simulate(log, SimConfig(seed=8, tables=2, rounds=20, irregularities=0.05))
    db = tmp_path / "v.duckdb"
    project(log, db, store_anomalies=False)
    con = open_store(db)
    steps, results = _run_stopped_at_first_step(con, log)
    try:
        (only,) = steps  # one step of the six families' evaluation, then the stop
        assert only.endswith("step 1 of 6"), only
        (report,) = results
        assert report.batches == 0 and report.events == 0
        assert anomaly_source(con) == "anomalies"  # nothing stored: readers use the view
        follow_until_caught_up(con, log)
        assert anomaly_source(con) == STORED
        stored = con.execute(f"SELECT * FROM {STORED} EXCEPT ALL SELECT * FROM anomalies "
                             "UNION ALL (SELECT * FROM anomalies EXCEPT ALL "
                             f"SELECT * FROM {STORED})").fetchall()
        assert stored == []
        assert con.execute(f"SELECT count(*) FROM {STORED}").fetchone()[0] > 0
    finally:
        con.close()


def test_a_stop_during_the_whole_round_money_build_ends_it_within_a_step_and_marks_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store whose per-round money was built by another definition (another pitlog) has it
    built whole before the first batch (minutes at 10M, a group of tables per step, then the
    step that stores them): a stop ends the follower after the step in hand, the old rows stay
    as they were and not current (readers use the views), and the next run builds rows equal
    to the query over the views, EXCEPT ALL both ways."""
    from live_support import assert_money_exact, follow_until_caught_up

    from projections import round_money
    from projections.projector import project
    from projections.reconcile import ROUND_MONEY, stored_money_current

    log = EmbeddedLog(tmp_path / "log", partitions=2)
    simulate(log, SimConfig(seed=8, tables=3, rounds=20, irregularities=0.05))
    db = tmp_path / "v.duckdb"
    project(log, db, publish_alerts=False)
    con = open_store(db)
    other = "pitlog round_money other"
    con.execute(f"COMMENT ON TABLE {ROUND_MONEY} IS '{other}'")
    assert not stored_money_current(con)
    old = con.execute(f"SELECT table_oid FROM duckdb_tables() WHERE table_name = "
                      f"'{ROUND_MONEY}'").fetchall()
    # A table per step (the group size is 1M events): three tables, four steps.
    monkeypatch.setattr(round_money, "GROUP_EVENTS", 1)
    steps, results = _run_stopped_at_first_step(con, log, publish_alerts=False)
    try:
        (only,) = steps  # the first table's rounds, then the stop
        assert "every round's money" in only and only.endswith("step 1 of 4"), only
        (report,) = results
        assert report.batches == 0 and report.events == 0
        assert not stored_money_current(con)  # readers use the views
        assert con.execute("SELECT table_oid, comment FROM duckdb_tables() WHERE table_name "
                           f"IN ('{ROUND_MONEY}', '{round_money.ROUND_MONEY_BUILD}')"
                           ).fetchall() == [(old[0][0], other)]
        follow_until_caught_up(con, log, publish_alerts=False)
        assert_money_exact(con)  # current, and the query's rows EXCEPT ALL both ways
    finally:
        con.close()

"""The follower's counters as /health and /metrics show them, after each committed batch."""

from __future__ import annotations

import re
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from alert_support import FaultySink, raise_in_db

import projections.alerts as alerts_module
from events.errors import LogError
from events.log.embedded.alerts import EmbeddedAlertLog
from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections.alerts import Publisher, create_tables
from projections.follow import Commit, Follower
from projections.serve.metrics import Metrics
from projections.serve.runner import Tracker
from projections.serve.state import FollowerStatus, ServeState
from projections.store import open_store

HANG_S = 300  # only a hang runs into it


def _value(text: str, name: str) -> float:
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    assert m, name
    return float(m.group(1))


class _Watched(FollowerStatus):
    """Keeps /metrics as it reads at the moment /health would first show new positions."""

    metrics: Metrics | None = None
    seen: list[str] = []

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "positions" and self.metrics is not None:
            self.seen.append(self.metrics.render())
        super().__setattr__(name, value)


def _raise(con: duckdb.DuckDBPyConnection, first: int, n: int) -> None:
    con.executemany("INSERT INTO alerts (alert_seq, alert_id, code) VALUES (?, ?, 'EARLY_RAISE')",
                    [(i, f"A{i}") for i in range(first, first + n)])


def test_metrics_count_a_batch_before_health_shows_it() -> None:
    """A client that waits for lag 0 on /health, then reads /metrics, sees the batch's records
    and alerts counted (CI once read the records but 2 of 14 alerts: the alerts were counted
    after the positions were published)."""
    con = duckdb.connect()
    create_tables(con)
    _raise(con, 1, 5)  # raised before this process: not counted
    state = ServeState(con)
    watched = _Watched()
    watched.metrics, watched.seen = state.metrics, []
    state.status = watched
    tracker = Tracker(state)
    _raise(con, 6, 14)
    tracker.on_commit(Commit(datetime.now(UTC), 40, {0: 40}, {0: 40}))
    _raise(con, 20, 3)
    tracker.on_commit(Commit(datetime.now(UTC), 9, {0: 49}, {0: 49}))
    first, second = watched.seen
    assert (_value(first, "pitlog_events_projected_total"),
            _value(first, "pitlog_alerts_raised_total"),
            _value(first, "pitlog_batches_total")) == (40, 14, 1)
    assert (_value(second, "pitlog_events_projected_total"),
            _value(second, "pitlog_alerts_raised_total"),
            _value(second, "pitlog_batches_total")) == (49, 17, 2)
    assert state.health()["lag_total"] == 0


def test_health_counts_what_arrived_during_a_round_while_the_next_rounds_batch_runs(
        tmp_path: Path) -> None:
    """/health's lag while a batch runs: the follower reads the log's ends as a round starts
    and tells the tracker (Tracker.on_ends), so records that arrived during the last round are
    counted while the next round's first batch runs (seconds at 1M). It used to show lag 0
    then, from the ends read before them. The lag is read in on_commit, before the tracker
    records the commit: what a client saw during the batch."""
    log = EmbeddedLog(tmp_path / "log", partitions=2)
    first = simulate(log, SimConfig(seed=5, tables=2, rounds=6)).events
    con = open_store(tmp_path / "served.duckdb")
    create_tables(con)  # as pitlog serve does before the first batch
    state = ServeState(con)
    tracker = Tracker(state)
    during: list[tuple[int, int]] = []  # (lag on /health during the batch, records it covers)

    def on_commit(commit: Commit) -> None:
        during.append((state.health()["lag_total"], commit.records))
        tracker.on_commit(commit)

    stop = threading.Event()
    follower = Follower(con, log, stop_event=stop, poll_interval=0.05, on_commit=on_commit,
                        on_round=tracker.on_round, on_ends=tracker.on_ends)
    thread = threading.Thread(target=follower.run)
    thread.start()
    try:
        assert follower.ready.wait(HANG_S)
        assert state.health()["lag_total"] == 0
        before = len(during)
        second = simulate(log, SimConfig(seed=6, tables=1, rounds=8)).events
        deadline = time.monotonic() + HANG_S
        while sum(state.status.positions.values()) != first + second:
            if time.monotonic() > deadline:
                pytest.fail(f"stuck at {state.status.positions}")
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(HANG_S)
    try:
        assert not thread.is_alive()
        new = during[before:]
        assert sum(records for _, records in new) == second
        # Every batch ran while its own records (at least) were pending on /health.
        assert all(lag >= records > 0 for lag, records in new), new
        assert state.health()["lag_total"] == 0
    finally:
        con.close()


class _Held(FaultySink):
    """A real sink (alerts.jsonl) whose appends wait while `held` is set and fail while `down`,
    as a publish to a broker that is restarting or gone."""

    def __init__(self, sink: Any) -> None:
        super().__init__(sink)
        self.down, self.held, self.waiting = False, threading.Event(), threading.Event()

    def append(self, alerts: Any, after: Any = None) -> None:
        if self.held.is_set():
            self.waiting.set()
            while self.held.is_set():
                time.sleep(0.01)
        if self.down:
            raise LogError("the broker is down")
        self.sink.append(alerts, after)


def test_health_tells_the_alerts_a_sink_has_not_taken_while_publishing_waits_or_fails(
        tmp_path: Path) -> None:
    """Lag 0 says the alerts were raised, not that they reached the sink: while a publish
    waits for the sink (a broker restarting) or after it failed (the broker down), /health
    counts the alerts still to publish and says why (session 42)."""
    log = EmbeddedLog(tmp_path / "log")
    sink = _Held(log.alert_sink())
    alerts_module._SINKS[log] = sink  # noqa: SLF001 - the sink the publisher takes
    con = duckdb.connect()
    create_tables(con)
    state = ServeState(con, log=log)
    assert {k: state.health()[k] for k in ("alerts_pending", "alert_sink")} == \
        {"alerts_pending": None, "alert_sink": None}  # nothing published yet
    publisher = Publisher(con, log)
    publisher()
    assert state.health()["alert_sink"]["state"] == "ok"
    raise_in_db(con, range(1, 4))
    sink.held.set()
    thread = threading.Thread(target=publisher)
    thread.start()
    try:
        assert sink.waiting.wait(HANG_S)
        health = state.health()
        assert health["alerts_pending"] == 3
        assert health["alert_sink"]["state"] == "publishing"
        assert health["alert_sink"]["since"] is not None
        sink.down = True
    finally:
        sink.held.clear()
        thread.join(HANG_S)
    health = state.health()
    assert health["alerts_pending"] == 3
    assert (health["alert_sink"]["state"], health["alert_sink"]["error"]) == \
        ("failing", "the broker is down")
    sink.down = False
    publisher()
    health = state.health()
    assert (health["alerts_pending"], health["alert_sink"]["state"],
            health["alert_sink"]["error"]) == (0, "ok", None)
    assert [a["alert_seq"] for a in EmbeddedAlertLog(log.folder).read()] == [1, 2, 3]


def test_health_answers_with_the_sinks_state_when_its_count_cannot_be_read(
        tmp_path: Path) -> None:
    """A second read (session 42): the count of alerts to publish is a query, and /health
    raised (a 500 to the healthcheck, and to every API answer of a stale server, which reads
    /health for its header) when the connection could not run it. The state the publisher
    keeps in memory is still told, the count unknown."""
    log = EmbeddedLog(tmp_path / "log")
    sink = _Held(log.alert_sink())
    sink.down = True
    alerts_module._SINKS[log] = sink  # noqa: SLF001 - the sink the publisher takes
    con = duckdb.connect()
    create_tables(con)
    raise_in_db(con, range(1, 3))
    Publisher(con, log)()
    state = ServeState(con, log=log)
    state.status.failed = True  # as a follower that stopped: the header asks /health too
    assert state.health()["alerts_pending"] == 2
    con.close()
    health = state.health()
    assert health["alerts_pending"] is None
    assert (health["alert_sink"]["state"], health["alert_sink"]["error"]) == \
        ("failing", "the broker is down")
    assert health["status"] == "failed" and health["ready"] is False

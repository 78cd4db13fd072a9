"""The follower's counters as /health and /metrics show them, after each committed batch."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import duckdb

from projections.alerts import create_tables
from projections.follow import Commit
from projections.serve.metrics import Metrics
from projections.serve.runner import Tracker
from projections.serve.state import FollowerStatus, ServeState


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

"""What the HTTP handlers share with the follower thread: the one read-write connection.

A DuckDB file has one writer process (docs/architecture.md, principle 6). `pitlog serve` is that
process: the
follower thread commits batches on `con`, and every request reads through `cursor()`, a fresh
connection to the same database, which sees every committed batch at once and never a half one.
A request reads inside one READ ONLY transaction (`snapshot()`): all its statements see the
same batches, so an answer made of several queries (a dispute's round, cards and anomalies, a
replay's events and hands) never mixes the store before a batch with the store after it.
No request copies the database.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import duckdb

from events.log.base import EventLog
from projections.alerts import sink_health, sink_state
from projections.memory import DEFAULT_MEMORY_LIMIT
from projections.serve.metrics import Metrics


@dataclass
class FollowerStatus:
    """The follower's view of its progress, updated after each committed batch."""

    ready: bool = False  # the first round reached the log's end as of the start
    last_commit: datetime | None = None
    positions: dict[int, int] = field(default_factory=dict)  # checkpoints (next offsets)
    ends: dict[int, int] = field(default_factory=dict)  # the log's end offsets, last read
    error: str | None = None  # the last error talking to the log, cleared by a success
    failed: bool = False  # the follower stopped on an error: only a restart resumes following
    # The log the store was projected from is not at its address (moved away, removed, or
    # another log made there: events.errors.LogGoneError): not ready until it is back.
    gone: bool = False

    def lag(self) -> dict[int, int]:
        """Records per partition in the log but not yet committed (end offset - checkpoint)."""
        return {p: max(0, end - self.positions.get(p, 0)) for p, end in sorted(self.ends.items())}


class ServeState:
    """Shared by the app (`request.app.state.pitlog`) and the follower thread."""

    def __init__(self, con: duckdb.DuckDBPyConnection, *, tz: tzinfo | None = None,
                 db_path: Path | None = None, source: str = "",
                 sql_timeout: float = 10.0, sql_max_rows: int = 10_000,
                 memory_limit: str = DEFAULT_MEMORY_LIMIT, log: EventLog | None = None) -> None:
        self.con = con
        self.memory_limit = memory_limit  # the database's (--memory-limit), /api/sql's too
        self.log = log  # the followed log: /health tells how publishing to its alert sink goes
        self.tz = tz or ZoneInfo("UTC")
        self.db_path = db_path
        self.source = source  # the log's uri
        self.sql_timeout = sql_timeout
        self.sql_max_rows = sql_max_rows
        self.status = FollowerStatus()
        self.metrics = Metrics()
        self.started_at = datetime.now(UTC)
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self.commits = 0  # bumped after each commit: streams compare it to their last look
        self.closing = False  # the server is stopping: alert streams end

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A fresh cursor on the writer's connection: it sees every committed batch."""
        cur = self.con.cursor()
        cur.execute("SET enable_progress_bar = false")
        return cur

    @contextmanager
    def snapshot(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A fresh cursor inside a READ ONLY transaction: each statement on it sees the batches
        committed when the first ran, none committed since, and DuckDB refuses any write. A
        failed statement ends the transaction; the cursor is then of no further use."""
        cur = self.cursor()
        try:
            cur.execute("BEGIN TRANSACTION READ ONLY")
            yield cur
        finally:
            try:
                cur.execute("ROLLBACK")
            except duckdb.Error:  # an interrupted or failed statement already ended it
                pass
            cur.close()

    # Waking alert streams: the follower calls notify() after each commit, from its thread;
    # each stream waits on its own asyncio.Event, set on the stream's own loop.

    def subscribe(self) -> asyncio.Event:
        event = asyncio.Event()
        with self._lock:
            self._waiters.add((asyncio.get_running_loop(), event))
        return event

    def unsubscribe(self, event: asyncio.Event) -> None:
        with self._lock:
            self._waiters = {w for w in self._waiters if w[1] is not event}

    def close_streams(self) -> None:
        """The server is stopping: every alert stream ends at its next wake-up (now). Called
        from a signal handler, which must not take a lock the interrupted frame may hold: the
        wake-up is sent from a thread of its own."""
        self.closing = True
        threading.Thread(target=self.notify, name="pitlog-close-streams", daemon=True).start()

    def notify(self) -> None:
        with self._lock:
            self.commits += 1
            waiters = list(self._waiters)
        for loop, event in waiters:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that loop has closed: its stream is gone
                pass

    def health(self) -> dict[str, Any]:
        s = self.status
        lag = s.lag()
        status = ("failed" if s.failed else "log_gone" if s.gone else "ready" if s.ready
                  else "starting")
        return {"ready": status == "ready", "status": status,
                "source": self.source,
                "last_commit": s.last_commit.astimezone(self.tz).isoformat()
                if s.last_commit else None,
                "lag": {str(p): n for p, n in lag.items()}, "lag_total": sum(lag.values()),
                "error": s.error, **self._alert_sink()}

    def _alert_sink(self) -> dict[str, Any]:
        """Lag 0 says the alerts were raised, not that they reached the sink (a broker down, or
        a publish waiting for it): how many are still to publish, and the sink's state."""
        if self.log is None:
            return {"alerts_pending": None, "alert_sink": None}
        cur = None
        try:
            cur = self.cursor()
            health = sink_health(cur, self.log)
        except Exception:  # noqa: BLE001 - /health answers whatever the database does
            # The count unknown (the alert tables not made yet, a connection closed): the
            # sink's state, kept in memory, is still told (a second read, session 42: /health
            # raised, a 500 for the container's healthcheck).
            health = {"alerts_pending": None, "alert_sink": sink_state(self.log)}
        finally:
            if cur is not None:
                cur.close()
        sink = health["alert_sink"]
        if sink is not None and sink["since"] is not None:
            sink["since"] = datetime.fromisoformat(sink["since"]).astimezone(self.tz).isoformat()
        return health

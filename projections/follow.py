"""`pitlog project --follow`: keep the DuckDB views up to date with a live log.

The loop calls `project()`, which reads to the log's end as of the call and commits each batch
with its checkpoint in one transaction (DESIGN, principle 3); when nothing is new it sleeps
`poll_interval` and asks again. It works the same for both backends, because it only uses the
EventLog contract.

Live readers (principle 6): this process holds the database read-write, which locks every other
process out, readers included. So while following it publishes a read-only snapshot
(`<name>.snapshot.duckdb`, see snapshot.py) at the start, then at most every `snapshot_every`
seconds while new events arrive (also in the middle of a long catch-up), and once more at the
end. `pitlog shoes`, `replay`, `sql` and the other query commands open the snapshot when the
database is locked, so what they see is at most a few seconds old. (A follower starting while a
reader has the real file open waits for it to close.) A publish copies the whole file; when that
takes long (a big database), the interval stretches to a few times the copy's duration, so
copying never takes more than about a quarter of the projector's time.

Stopping: SIGINT (Ctrl-C) and SIGTERM set a flag. The batch being projected is committed, a
last snapshot is published, the database is closed, and `follow` returns its report. A second
signal stops at once: the open transaction is rolled back, and the next run redoes that batch.
SIGKILL at any instant is also safe: DuckDB's transaction leaves the batch whole or absent.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import duckdb

from events.errors import LogError, ProjectionError
from events.log import EventLog
from projections.projector import ProjectionReport, checkpoints, project
from projections.snapshot import publish_snapshot
from projections.store import open_store

log_ = logging.getLogger("pitlog.follow")

# A publish may cost at most this fraction of the time between publishes.
SNAPSHOT_DUTY = 0.25
# How long to wait for a reader to let go of the database file before giving up.
LOCK_WAIT_S = 30.0
# Backoff while the log is unreachable (a broker restart): from 1 s, doubling, up to this.
MAX_RETRY_WAIT_S = 30.0


class _Stopped(Exception):
    """Raised from the progress callback, after a commit, to leave `project` between batches."""


class _StopFlag:
    """Set by a signal handler or by the caller's threading.Event."""

    def __init__(self, event: threading.Event | None) -> None:
        self.event = event
        self.signalled = 0

    def is_set(self) -> bool:
        return self.signalled > 0 or (self.event is not None and self.event.is_set())

    def sleep(self, seconds: float) -> None:
        # Short sleeps rather than Event.wait: a signal handler must not touch a lock that the
        # interrupted frame may hold.
        deadline = time.monotonic() + seconds
        while not self.is_set() and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(0.1, left))


@contextmanager
def _signals_set(flag: _StopFlag) -> Iterator[None]:
    """SIGINT/SIGTERM set the flag (main thread only: Python allows handlers nowhere else)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        flag.signalled += 1
        if flag.signalled > 1:  # asked twice: stop now, rolling back the open transaction
            raise KeyboardInterrupt
        log_.warning("%s received: finishing the current batch, then stopping "
                     "(send it again to stop at once)", signal.Signals(signum).name)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


class _Publisher:
    """Publishes snapshots no more often than every `every` seconds, stretched by SNAPSHOT_DUTY."""

    def __init__(self, con: duckdb.DuckDBPyConnection, db_path: Path, every: float) -> None:
        self.con = con
        self.db_path = db_path
        self.every = every
        self.interval = every
        self.last = 0.0
        self.dirty = False
        self.seconds: list[float] = []  # how long each publish took, logged at the end

    def publish(self) -> None:
        from projections.anomalies import STORED, anomaly_source, refresh_stored_anomalies

        started = time.monotonic()
        if anomaly_source(self.con) != STORED:  # readers of the snapshot get them stored
            try:
                refresh_stored_anomalies(self.con)
            except ProjectionError as exc:
                # Not a reason to stop following: readers fall back to the anomaly view while
                # the stored rows lag (anomalies.anomaly_source).
                log_.warning("%s", exc)
        publish_snapshot(self.con, self.db_path)
        took = time.monotonic() - started
        self.seconds.append(took)
        self.last = time.monotonic()
        self.interval = max(self.every, took / SNAPSHOT_DUTY)
        self.dirty = False

    def maybe(self) -> None:
        if self.dirty and time.monotonic() - self.last >= self.interval:
            self.publish()


def follow(log: EventLog, db_path: str | Path, *,
           progress: Callable[[int], None] | None = None, poll_interval: float = 0.5,
           stop_event: threading.Event | None = None,
           snapshot_every: float = 2.0, memory_limit: str | None = None) -> ProjectionReport:
    """Project `log` into `db_path` until SIGINT/SIGTERM (or `stop_event` is set); return the
    totals of the whole run. A LogError while the log is unreachable (a broker restart) is
    logged and retried with backoff, once the first round has succeeded; the first round's
    LogError is raised, since it usually means a wrong address."""
    flag = _StopFlag(stop_event)
    path = Path(db_path)
    with _signals_set(flag):
        con = _open_when_free(path, flag, memory_limit)
        try:
            return _follow(con, log, path, flag, progress, poll_interval, snapshot_every)
        finally:
            con.close()


def _open_when_free(path: Path, flag: _StopFlag,
                    memory_limit: str | None) -> duckdb.DuckDBPyConnection:
    """open_store, waiting up to LOCK_WAIT_S while another process holds the file: a reader
    that opened the real file while no projector ran (a restart) keeps it only briefly."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            return open_store(path, memory_limit=memory_limit)
        except ProjectionError as exc:
            if "lock" not in str(exc).lower() or time.monotonic() > deadline or flag.is_set():
                raise
            flag.sleep(0.2)


def _follow(con: duckdb.DuckDBPyConnection, log: EventLog, path: Path, flag: _StopFlag,
            progress: Callable[[int], None] | None, poll_interval: float,
            snapshot_every: float) -> ProjectionReport:
    started = time.perf_counter()
    source = log.uri
    counts_before = _counts(con, source)
    publisher = _Publisher(con, path, snapshot_every)
    publisher.publish()  # readers need a snapshot from the moment the file is locked
    batches = 0

    def on_batch(done: int) -> None:
        nonlocal batches
        batches += 1
        publisher.dirty = True
        if progress is not None:
            progress(done)
        publisher.maybe()  # between transactions: the batch is committed
        if flag.is_set():
            raise _Stopped

    projected: dict[int, int] | None = None  # next offset per partition after the last round
    failures = 0
    while not flag.is_set():
        try:
            ends = log.end_offsets()
            if ends != projected:
                # Storing the anomalies evaluates every rule: done at each publish instead.
                projected = project(log, con, progress=on_batch,
                                    store_anomalies=False).positions
            failures = 0
        except _Stopped:
            break
        except LogError as exc:
            if projected is None:
                raise  # never reached the log: most likely a wrong address, so report it
            failures += 1
            wait = min(MAX_RETRY_WAIT_S, 2.0 ** (failures - 1))
            log_.warning("%s; retrying in %.0fs (projected rows are safe)", exc, wait)
            flag.sleep(wait)
            continue
        publisher.maybe()
        if projected == ends:  # caught up: wait for news (else loop at once, more arrived)
            flag.sleep(poll_interval)
    if publisher.dirty:
        publisher.publish()
    log_.info("published %d snapshots of %s, the longest in %.2fs", len(publisher.seconds),
              path, max(publisher.seconds))
    events, quarantined = (after - before for after, before
                           in zip(_counts(con, source), counts_before, strict=True))
    return ProjectionReport(source, events=events, quarantined=quarantined, batches=batches,
                            positions=_positions(con, source, projected),
                            seconds=time.perf_counter() - started)


def _counts(con: duckdb.DuckDBPyConnection, source: str) -> tuple[int, int]:
    """Rows in events and in this source's quarantine: the run's totals are the difference
    (exact also when a stop interrupted a round, whose own report is then lost)."""
    ((events, quarantined),) = con.execute(
        "SELECT (SELECT count(*) FROM events), "
        "(SELECT count(*) FROM quarantine WHERE source = ?)", [source]).fetchall()
    return int(events), int(quarantined)


def _positions(con: duckdb.DuckDBPyConnection, source: str,
               projected: dict[int, int] | None) -> dict[int, int]:
    # Every partition the last round knew of, at 0 unless checkpointed.
    return {**dict.fromkeys(projected or {}, 0), **checkpoints(con, source)}

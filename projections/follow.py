"""`pitlog project --follow` and `pitlog serve`: keep the DuckDB views up to date with a live log.

The loop (`Follower`) calls `project()` on its connection, which commits each batch with its
checkpoint in one transaction (docs/architecture.md, principle 3), logs one line per batch
(time, records, lag) and calls `on_commit`; `pitlog serve` runs it in a thread and answers HTTP
through cursors of the same connection, which see each batch as it commits. `follow()` holds
the file read-write, so it publishes a read-only copy (snapshot.py) at most every
`snapshot_every` seconds and only between rounds, off the path from an event to its alert
(docs/operating.md, section 3). SIGINT/SIGTERM commit the batch under way and stop; a second
signal rolls it back; SIGKILL is safe, since DuckDB's transaction leaves a batch whole or absent.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

import duckdb

from events.errors import LogError, LogGoneError, ProjectionError
from events.log.base import EventLog
from projections.alerts import create_tables as create_alert_tables
from projections.alerts import publish_again
from projections.anomalies import STORED, anomaly_source, refresh_stored_anomalies
from projections.backoff import FailureStreak
from projections.incremental import close_detector
from projections.log_checks import check_log_holds
from projections.projector import ProjectionReport, checkpoints, project
from projections.replay_kept import IDLE_BUDGET_S, LIVE_BUDGET_S, ReplayKeeper
from projections.snapshot import publish_snapshot
from projections.store import open_store

log_ = logging.getLogger("pitlog.follow")

# A publish may cost at most this fraction of the time between publishes.
SNAPSHOT_DUTY = 0.25
# `project --follow` publishes a read-only copy at most this often (seconds, between rounds).
SNAPSHOT_EVERY_S = 10.0
# How long to wait for a reader to let go of the database file before giving up.
LOCK_WAIT_S = 30.0


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


class Publisher:
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
        log_.info("published the read-only copy of %s in %.2fs", self.db_path.name, took)

    def maybe(self) -> None:
        if self.dirty and time.monotonic() - self.last >= self.interval:
            self.publish()


@dataclass(frozen=True, slots=True)
class Commit:
    """One committed batch, as the follower saw it right after the commit."""

    at: datetime  # when the commit returned (UTC)
    records: int  # log records the batch covered (events and quarantined)
    positions: dict[int, int]  # checkpoints afterwards (next offset per partition)
    ends: dict[int, int]  # the log's end offsets as last read

    @property
    def lag(self) -> dict[int, int]:
        """Records per partition in the log but not committed (end offset minus checkpoint)."""
        return {p: max(0, end - self.positions.get(p, 0)) for p, end in sorted(self.ends.items())}


def follow(log: EventLog, db_path: str | Path, *,
           progress: Callable[[int], None] | None = None, poll_interval: float = 0.5,
           stop_event: threading.Event | None = None,
           snapshot_every: float = SNAPSHOT_EVERY_S,
           memory_limit: str | None = None, publish_alerts: bool = True) -> ProjectionReport:
    """Project `log` into `db_path` until SIGINT/SIGTERM (or `stop_event` is set), publishing a
    read-only copy for other processes (module docstring); return the totals of the whole run.
    A LogError while the log is unreachable (a broker restart) is logged and retried with
    backoff, once the first round has succeeded; the first round's LogError is raised, since it
    usually means a wrong address."""
    flag = _StopFlag(stop_event)
    path = Path(db_path)
    with _signals_set(flag):
        con = _open_when_free(path, flag, memory_limit)
        try:
            publisher = Publisher(con, path, snapshot_every)
            publisher.publish()  # readers need a copy from the moment the file is locked
            follower = Follower(con, log, flag=flag, poll_interval=poll_interval,
                                publisher=publisher, publish_alerts=publish_alerts,
                                on_commit=(lambda c: progress(sum(c.positions.values())))
                                if progress is not None else None)
            report = follower.run()
            if publisher.dirty:
                publisher.publish()
            log_.info("published %d read-only copies of %s, the longest in %.2fs",
                      len(publisher.seconds), path, max(publisher.seconds))
            return report
        finally:
            close_detector(con)
            con.close()


def open_when_free(path: str | Path, stop_event: threading.Event | None = None,
                   memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """The read-write connection, waiting up to LOCK_WAIT_S for a reader to let go."""
    return _open_when_free(Path(path), _StopFlag(stop_event), memory_limit)


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


class Follower:
    """The follow loop on a read-write connection it is given (it does not close it).

    `run()` projects until `stop_event` (or the flag) is set. After each commit it logs one line
    and calls `on_commit(Commit)`; after each round, `on_round(Commit)` (also when the log had
    nothing new, so a caller sees the lag and that the log answers). At the start of each round,
    once it has read the log's end offsets, `on_ends(ends)`: a caller's lag then counts the
    records that arrived during the last round while the next one's first batch runs (seconds
    at 1M), instead of showing 0 from the ends read before them. `ready` is set once the first
    round has reached the log's end as of the start. `on_error(message, gone)` after each
    failed round (`gone`: the log is no longer at its address, LogGoneError, rather than not
    answering) and `on_error(None, False)` after each good one.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, log: EventLog, *,
                 stop_event: threading.Event | None = None, flag: _StopFlag | None = None,
                 poll_interval: float = 0.5,
                 on_commit: Callable[[Commit], None] | None = None,
                 on_round: Callable[[Commit], None] | None = None,
                 on_error: Callable[[str | None, bool], None] | None = None,
                 on_ends: Callable[[dict[int, int]], None] | None = None,
                 publisher: Publisher | None = None, publish_alerts: bool = True) -> None:
        self.con = con
        self.publish_alerts = publish_alerts
        self.log = log
        self.flag = flag or _StopFlag(stop_event)
        self.poll_interval = poll_interval
        self.on_commit = on_commit
        self.on_round = on_round
        self.on_error = on_error
        self.on_ends = on_ends
        self.publisher = publisher
        self.ready = threading.Event()

    def run(self) -> ProjectionReport:
        con, log, flag = self.con, self.log, self.flag
        started = time.perf_counter()
        source = log.uri
        create_alert_tables(con)  # counted below, also before the first batch creates them
        counts_before = _counts(con, source)
        replays = _replay_keeper(con)
        batches = 0
        ends: dict[int, int] = {}
        done_before = sum(checkpoints(con, source).values())

        def on_batch(done: int) -> None:
            nonlocal batches, done_before, ends
            batches += 1
            positions = checkpoints(con, source)
            ends = _ends_after(log, ends, positions)
            commit = Commit(datetime.now(UTC), done - done_before, positions, ends)
            done_before = done
            lag = commit.lag
            log_.info("committed %d records; lag %d (%s)", commit.records, sum(lag.values()),
                      " ".join(f"p{p}={n}" for p, n in lag.items()),
                      extra={"records": commit.records, "lag": lag,
                             "positions": commit.positions})
            if self.publisher is not None:
                self.publisher.dirty = True
            if self.on_commit is not None:
                self.on_commit(commit)
            if flag.is_set():
                raise _Stopped

        def on_steps(what: str) -> Callable[[int, int], None]:
            # A store whose stored rows are missing or stale is evaluated whole first, in steps
            # (9 minutes at 10M), and so is its per-round money (round_money.build_whole): a
            # stop between two steps ends it, marking nothing current, so `pitlog serve` and
            # `project --follow` stop within a step, not after the whole.
            def on_step(done: int, total: int) -> None:
                if flag.is_set():
                    raise _Stopped
                log_.info("%s once (its stored rows are not current): step %d of %d", what,
                          done, total)
            return on_step

        projected: dict[int, int] | None = None  # next offset per partition after the last round
        failures = FailureStreak()  # reading the log
        away = False  # the last round found the log gone from its address (LogGoneError)
        while not flag.is_set():
            try:
                # The log must still be the one this store was projected from: a folder moved
                # away reads as an empty log (lag 0, "ready"), and one made anew at its path
                # would be projected at the old one's offsets. LogGoneError until it is back;
                # once back, its records at the checkpoints are compared again.
                if log.check_same_log():
                    check_log_holds(con, log)
                ends = log.end_offsets()
                if self.on_ends is not None:
                    self.on_ends(ends)
                if ends != projected:
                    since = checkpoints(con, source)
                    projected = project(
                        log, con, progress=on_batch,
                        anomaly_progress=on_steps("evaluating every rule over the store"),
                        money_progress=on_steps("computing every round's money over the store"),
                        publish_alerts=self.publish_alerts,
                        # each batch detected, so readers never fall back to the views
                        load_first=False).positions
                    if replays is not None and projected != since:
                        _keep_replays(replays, LIVE_BUDGET_S, since=since)
                    # what arrived while the round ran: its lag, and no wait below
                    ends = _ends_after(log, ends, projected)
                elif self.publish_alerts:
                    publish_again(con, log)  # a failed publish waits for no next batch
                if away:
                    away = False
                    log_.info("the log %s (log id %s) is back at its address: following it "
                              "again after %d failures in a row", log.uri, log.log_id,
                              failures.count)
                elif failures.count:
                    log_.info("the log %s answers again after %d failures in a row: following "
                              "it", log.uri, failures.count)
                failures.reset()
            except _Stopped:
                break
            except LogError as exc:
                if projected is None:
                    raise  # never reached the log: most likely a wrong address, so report it
                # a warning for the first failure, each twelfth and a new one, not for each
                # try (backoff.FailureStreak)
                level = failures.failed(str(exc))
                wait = failures.wait()  # projections/backoff.py: 1, 2, 4, then 5 s
                gone = away = isinstance(exc, LogGoneError)
                if gone:
                    log_.log(level, "not following: %s (looking again in %.0fs; failure %d in a "
                             "row; projected rows are safe)", exc, wait, failures.count)
                else:
                    log_.log(level, "%s; retrying in %.0fs (failure %d in a row; projected rows "
                             "are safe)", exc, wait, failures.count)
                if self.on_error is not None:
                    self.on_error(str(exc), gone)
                flag.sleep(wait)
                continue
            if self.on_error is not None:
                self.on_error(None, False)
            self.ready.set()
            if self.on_round is not None:
                self.on_round(Commit(datetime.now(UTC), 0, dict(projected), ends))
            if self.publisher is not None:
                self.publisher.maybe()  # between rounds only: a copy never delays a batch
            if projected == ends:  # caught up: wait for news (else loop at once, more arrived)
                if replays is not None and _nothing_new(log, projected):
                    _keep_replays(replays, IDLE_BUDGET_S, backlog=True)
                flag.sleep(self.poll_interval)
        events, quarantined, alerts = (after - before for after, before
                                       in zip(_counts(con, source), counts_before, strict=True))
        return ProjectionReport(source, events=events, quarantined=quarantined,
                                batches=batches, positions=_positions(con, source, projected),
                                seconds=time.perf_counter() - started, alerts=alerts)


def _ends_after(log: EventLog, last: dict[int, int], positions: dict[int, int]
                ) -> dict[int, int]:
    """The log's end offsets read again after a commit. The round's were read before it began,
    and project() reads to the end as of its own start, past them: with those, a log written
    to while a batch ran showed lag 0 in the log line, /health and /metrics however many
    records waited (an outside review, session 41). A log that does not answer now: the last
    ends, raised to the positions (the next round reads them again, and retries)."""
    try:
        return log.end_offsets()
    except LogError:
        return {p: max(last.get(p, 0), positions.get(p, 0)) for p in last.keys() | positions.keys()}


def _replay_keeper(con: duckdb.DuckDBPyConnection) -> ReplayKeeper | None:
    """The keeper of shoes' replays (projections/replay_kept.py), or None when its
    tables cannot be made (a tiny memory limit, a user's table of their name): they only speed
    replays up."""
    try:
        return ReplayKeeper(con)
    except (duckdb.Error, ProjectionError) as exc:
        log_.warning("not keeping shoes' replays (%s); `pitlog replay` runs its queries", exc)
        return None


def _nothing_new(log: EventLog, projected: dict[int, int]) -> bool:
    """No record has arrived since the round's end offsets were read: the follower is idle, so
    the backlog of replays to keep delays no event (one more end-offset read)."""
    try:
        return log.end_offsets() == projected
    except LogError:
        return False


def _keep_replays(replays: ReplayKeeper, budget_s: float, *,
                  since: dict[int, int] | None = None, backlog: bool = False) -> None:
    """One step of keeping replays, after a round's commit (never before its alerts). A
    failure is logged, not raised: a replay then runs its queries, with the same answer."""
    try:
        if since is not None:
            replays.note_new(since)
        kept = replays.keep_some(budget_s, backlog=backlog)
    except duckdb.Error as exc:
        log_.warning("could not keep a shoe's replay (%s); `pitlog replay` runs its queries "
                     "for it", exc)
        return
    if kept:
        log_.debug("kept %d shoes' replays", kept)


def _counts(con: duckdb.DuckDBPyConnection, source: str) -> tuple[int, int, int]:
    """Rows in events, in this source's quarantine and in alerts: the run's totals are the
    difference (exact also when a stop interrupted a round, whose own report is then lost)."""
    ((events, quarantined, alerts),) = con.execute(
        "SELECT (SELECT count(*) FROM events), "
        "(SELECT count(*) FROM quarantine WHERE source = ?), "
        "(SELECT count(*) FROM alerts)", [source]).fetchall()
    return int(events), int(quarantined), int(alerts)


def _positions(con: duckdb.DuckDBPyConnection, source: str,
               projected: dict[int, int] | None) -> dict[int, int]:
    # Every partition the last round knew of, at 0 unless checkpointed.
    return {**dict.fromkeys(projected or {}, 0), **checkpoints(con, source)}

"""Running `pitlog serve`: bind, open the database read-write, follow the log in a thread,
serve HTTP with uvicorn in the main thread, and clean up on SIGINT/SIGTERM.

Safety (issue 16, item 5): a non-loopback address is refused unless a token is set, so the API
is never reachable from the network without one.
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import socket
import threading
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from types import FrameType

import duckdb
import uvicorn

from events.errors import PitlogError
from events.log.base import EventLog
from projections.alerts import create_tables as create_alert_tables
from projections.follow import Commit, Follower, Publisher, open_when_free
from projections.incremental import close_detector, take_recorded
from projections.memory import DEFAULT_MEMORY_LIMIT, chosen_limit
from projections.serve import discovery
from projections.serve.app import create_app
from projections.serve.state import ServeState
from projections.sql_console import seal_writer

log_ = logging.getLogger("pitlog.serve")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8750
# Seconds between looks at the log while it has nothing new: an event waits up to this long
# before its batch starts, so it is a direct part of the event-to-alert latency (issue 16:
# under a second); a look is one end-offset read (the index files' sizes, or one broker
# request), cheap at ten a second.
POLL_INTERVAL_S = 0.1


class _Shutdown(Exception):
    """SIGTERM, turned into an exception so that the clean-up below runs."""


def is_loopback(host: str) -> bool:
    if host == "localhost":  # bound as 127.0.0.1 (bind), never looked up
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def check_bind(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise PitlogError(
            f"refusing to listen on {host} without a token: anyone on the network could read "
            f"the surveillance data. Set PITLOG_TOKEN (clients send it as "
            f"'Authorization: Bearer <token>'), or bind 127.0.0.1")


def bind(host: str, port: int) -> socket.socket:
    # "localhost" is taken as 127.0.0.1, not resolved: a hosts file or NSS mapping it to another
    # address would otherwise serve the network with no token (check_bind let it through as
    # loopback; an outside review, session 37).
    host = DEFAULT_HOST if host == "localhost" else host
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise PitlogError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
                          f"choose another --port or stop what uses it") from None
    sock.listen(2048)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = "127.0.0.1"  # a client on this machine reaches a wildcard bind through loopback
    return f"http://{shown}:{port}"


class Tracker:
    """The follower's callbacks: status, metrics, alert latency, and waking the streams."""

    def __init__(self, state: ServeState) -> None:
        self.state = state
        self.last_alert = self._max_alert_seq()

    def _max_alert_seq(self) -> int:
        cur = self.state.cursor()
        try:
            ((n,),) = cur.execute("SELECT coalesce(max(alert_seq), 0) FROM alerts").fetchall()
            return int(n)
        finally:
            cur.close()

    def on_commit(self, commit: Commit) -> None:
        s = self.state
        s.notify()  # first: the alert streams wake now, not after the metrics below
        latencies: list[float] = []
        raised = 0
        try:
            newest = self._max_alert_seq()
            latencies, raised = self._new_alert_latencies(commit.at), newest - self.last_alert
            self.last_alert = newest
        except duckdb.Error as exc:  # the batch is committed: a metric must not stop following
            log_.warning("cannot measure the new alerts' latency: %s", exc)
        # The batch's counters change together, and before /health shows its positions: a
        # client that saw lag 0 then reads /metrics with this batch's records and alerts in it.
        s.metrics.batch(commit.records, commit.lag, latencies, raised)
        s.status.last_commit = commit.at
        s.status.positions = dict(commit.positions)
        s.status.ends = dict(commit.ends)

    def on_round(self, commit: Commit) -> None:
        s = self.state
        s.status.positions = dict(commit.positions)
        s.status.ends = dict(commit.ends)
        s.status.ready = True
        s.metrics.set_lag(commit.lag)

    def on_ends(self, ends: dict[int, int]) -> None:
        """The log's end offsets as a round starts: /health's and /metrics' lag count what
        arrived since the last round while its first batch runs (Follower's docstring)."""
        s = self.state
        s.status.ends = dict(ends)
        s.metrics.set_lag(s.status.lag())

    def on_error(self, message: str | None, gone: bool) -> None:
        self.state.status.error = message
        self.state.status.gone = gone

    def _new_alert_latencies(self, committed: datetime) -> list[float]:
        """Seconds from the newest proving event's recorded_at to this commit, per alert the
        detector raised since the last commit. It read each one from its window when it raised
        the alert (incremental.Detector.take_recorded): no look-up in the history per commit.
        (Alerts of a whole evaluation, at start, are counted but have no latency.)"""
        return [max(0.0, (committed - at).total_seconds()) if at is not None else 0.0
                for seq, at in sorted(take_recorded(self.state.con)) if seq > self.last_alert]


def serve(log: EventLog, db_path: Path, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          token: str | None = None, tz: tzinfo | None = None,
          poll_interval: float = POLL_INTERVAL_S,
          snapshot_every: float = 0.0, memory_limit: str | None = None,
          sql_timeout: float = 10.0, sql_max_rows: int = 10_000,
          ready: threading.Event | None = None) -> None:
    """Serve until SIGINT/SIGTERM. Raises PitlogError before anything starts when the address
    is refused (check_bind) or taken, or the database cannot be opened."""
    check_bind(host, token)
    sock = bind(host, port)
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGTERM) if _main() else None
    try:
        if _main():
            signal.signal(signal.SIGTERM, _raise_shutdown)
        _run(log, db_path, sock, stop, token, tz, poll_interval, snapshot_every, memory_limit,
             sql_timeout, sql_max_rows, ready)
    except (KeyboardInterrupt, _Shutdown):
        pass  # a stop before uvicorn took the signals over: the clean-up below is the same
    finally:
        sock.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(log: EventLog, db_path: Path, sock: socket.socket, stop: threading.Event,
         token: str | None, tz: tzinfo | None, poll_interval: float, snapshot_every: float,
         memory_limit: str | None, sql_timeout: float, sql_max_rows: int,
         ready: threading.Event | None) -> None:
    con: duckdb.DuckDBPyConnection | None = None
    follower_thread: threading.Thread | None = None
    try:
        con = open_when_free(db_path, stop, memory_limit)
        seal_writer(con)  # /api/sql reads the views, never a file or URL (docs/integrity.md)
        create_alert_tables(con)  # so /alerts answers before the first batch
        state = ServeState(con, tz=tz, db_path=db_path, source=log.uri,
                           sql_timeout=sql_timeout, sql_max_rows=sql_max_rows,
                           memory_limit=chosen_limit(memory_limit, DEFAULT_MEMORY_LIMIT)
                           or DEFAULT_MEMORY_LIMIT, log=log)
        tracker = Tracker(state)
        publisher = Publisher(con, db_path, snapshot_every) if snapshot_every > 0 else None
        follower = Follower(con, log, stop_event=stop, poll_interval=poll_interval,
                            on_commit=tracker.on_commit, on_round=tracker.on_round,
                            on_error=tracker.on_error, on_ends=tracker.on_ends,
                            publisher=publisher)
        follower_thread = threading.Thread(target=_follow, args=(follower, state),
                                           name="pitlog-follower", daemon=True)
        follower_thread.start()
        config = uvicorn.Config(create_app(state, token), log_config=None, access_log=False,
                                timeout_graceful_shutdown=2, lifespan="off")
        server = _Server(config, state)
        url = url_of(sock)
        discovery.write(db_path, url)
        log_.info("serving %s on %s (following %s)", db_path, url, log.uri)
        if ready is not None:
            ready.set()
        try:
            server.run(sockets=[sock])
        except (KeyboardInterrupt, _Shutdown):
            pass
    finally:
        stop.set()
        discovery.remove(db_path)
        if follower_thread is not None:
            follower_thread.join()  # the batch in hand is committed first
        if con is not None:
            close_detector(con)
            con.close()
        log_.info("stopped serving %s", db_path)


class _Server(uvicorn.Server):
    """uvicorn's server that, told to stop, first ends the alert streams: an open /alerts
    stream would otherwise outlive the graceful shutdown and be cancelled, with a traceback in
    the log."""

    def __init__(self, config: uvicorn.Config, state: ServeState) -> None:
        super().__init__(config)
        self.pitlog_state = state

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.pitlog_state.close_streams()
        super().handle_exit(sig, frame)


def _follow(follower: Follower, state: ServeState) -> None:
    try:
        report = follower.run()
        log_.info("follower stopped: %d events, %d quarantined, %d batches this run",
                  report.events, report.quarantined, report.batches)
    except Exception as exc:  # noqa: BLE001 - the server keeps answering; /health says why
        log_.error("the follower stopped: %s", exc, exc_info=not isinstance(exc, PitlogError))
        state.status.failed = True
        state.status.error = f"the follower stopped: {exc}"


def _main() -> bool:
    return threading.current_thread() is threading.main_thread()


_STOPPING: list[int] = []


def _raise_shutdown(signum: int, frame: FrameType | None) -> None:
    """The first SIGTERM stops cleanly (the batch in hand is committed); a second one while that
    runs stops at once (DuckDB rolls the open transaction back; the next run redoes it)."""
    _STOPPING.append(signum)
    if len(_STOPPING) > 1:
        raise KeyboardInterrupt
    raise _Shutdown


__all__ = ["serve", "check_bind", "DEFAULT_HOST", "DEFAULT_PORT", "UTC"]

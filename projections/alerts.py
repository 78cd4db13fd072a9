"""Alerts: every new anomaly row raised exactly once, in the batch's own transaction, then
published after the commit through an outbox cursor.

- `alerts` (the live contract's DDL below): one row per distinct alert_id ever stored. The id is
  deterministic, from the code, the table and the proving seqs, so a row that the incremental
  detector deletes and inserts again (its stretch re-evaluated) keeps its id and is not raised
  twice: a row is raised only when its id is not in `alerts` yet.
- `alerts_outbox(sink, published_seq)`: how far each sink (the alert log beside the embedded
  log, or the Kafka alert topic) has been given alerts. After a commit the publisher appends
  the alerts past the cursor to the sink, then advances the cursor. Killed between the two,
  the next publisher reads the sink's last alert_seq first and starts after it: no alert is
  lost (the cursor lags) and none repeated (the sink's tail wins). An append that fails may
  still have landed, so the tail is read again before the next one; the Kafka sink fences
  earlier publishers before it reads (events/log/kafka/alerts.py).
- `alerts_held(sink, alert_id)`: empty but for a store that met a sink it did not number (a
  store restored from a backup or rebuilt: its catch-up raises the same alerts in other
  batches, numbered otherwise): the ids the sink holds that this store has not reached yet,
  read once from the sink (_read_sink). Those are not published when the store raises them;
  the others are, so each alert id reaches the sink once.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb

from events.errors import LogError, ProjectionError, first_line
from events.log.alerts import AlertSink
from events.log.base import EventLog
from projections.backoff import FailureStreak
from projections.queries import rows as query_rows
from projections.transaction import roll_back

ALERTS_DDL = """CREATE TABLE IF NOT EXISTS alerts (
    alert_seq BIGINT NOT NULL, alert_id VARCHAR NOT NULL, code VARCHAR, severity VARCHAR,
    table_id VARCHAR, shoe_id VARCHAR, round_no INTEGER, seqs BIGINT[], explanation VARCHAR,
    rule VARCHAR, occurred_at TIMESTAMPTZ, raised_at TIMESTAMPTZ)"""
OUTBOX_DDL = "CREATE TABLE IF NOT EXISTS alerts_outbox (sink VARCHAR, published_seq BIGINT)"
HELD_DDL = "CREATE TABLE IF NOT EXISTS alerts_held (sink VARCHAR, alert_id VARCHAR)"
# The id: code, table and proving seqs (the stored row's identity, as EXCEPT ALL compares it).
ALERT_ID = ("'A' || substr(md5(code || '|' || coalesce(table_id, '') || '|' || "
            "array_to_string(seqs, ',')), 1, 24)")
# Rows sharing an id (two writers' lines at one seq prove the same code) raise one alert; which
# one is decided by the row's own values, not by the order an evaluation meets them in, so two
# evaluations that meet the same rows raise the same alert (rows of one id arriving in
# different batches: the first batch's row is raised, docs/live-detection.md).
_TIE_BREAK = ("explanation, severity, rule, shoe_id NULLS FIRST, round_no NULLS FIRST, "
              "occurred_at NULLS FIRST")
_LOG = logging.getLogger("pitlog.alerts")
COLUMNS = ("alert_seq", "alert_id", "code", "severity", "table_id", "shoe_id", "round_no",
           "seqs", "explanation", "rule", "occurred_at", "raised_at")


def create_tables(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(ALERTS_DDL)
    con.execute(OUTBOX_DDL)
    con.execute(HELD_DDL)


def raise_alerts(con: duckdb.DuckDBPyConnection, rows: str) -> int:
    """Raise an alert for every row of the relation `rows` (anomaly rows) whose id is new;
    inside the caller's transaction. Returns how many were raised."""
    ((before,),) = con.execute("SELECT count(*) FROM alerts").fetchall()
    con.execute(f"""
        INSERT INTO alerts
        SELECT (SELECT coalesce(max(alert_seq), 0) FROM alerts)
                   + row_number() OVER (ORDER BY occurred_at, table_id, code, alert_id),
               alert_id, code, severity, table_id, shoe_id, round_no, seqs, explanation, rule,
               occurred_at, now()
        FROM (SELECT DISTINCT ON (alert_id) {ALERT_ID} AS alert_id, *
              FROM {rows} ORDER BY alert_id, {_TIE_BREAK}) AS r
        WHERE NOT EXISTS (SELECT 1 FROM alerts AS a WHERE a.alert_id = r.alert_id)""")
    ((after,),) = con.execute("SELECT count(*) FROM alerts").fetchall()
    return int(after - before)


def alerts_after(con: duckdb.DuckDBPyConnection, after_seq: int,
                 limit: int = 1000) -> list[dict[str, Any]]:
    """The alerts with alert_seq > after_seq, in order (at most `limit`)."""
    return query_rows(con, f"SELECT {', '.join(COLUMNS)} FROM alerts WHERE alert_seq > $a "
                           "ORDER BY alert_seq LIMIT $n", {"a": after_seq, "n": limit})


@dataclass
class _Read:
    """What a connection knows of a sink since it read its tail: the sink's last alert (as
    this publisher left it) and the ids the sink holds that this store has not reached yet."""
    tail: tuple[int, str | None]
    held: set[str]


# Per connection, the sinks whose tail was read since it opened (and not failed since).
_READ: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, _Read]] = \
    weakref.WeakKeyDictionary()


def publish_pending(con: duckdb.DuckDBPyConnection, sink: AlertSink) -> int:
    """Append the alerts past the sink's cursor to it, then advance the cursor; returns how
    many were published. The first call per connection and sink, and the first after a failed
    append, also reads the sink's tail (and, when the tail is not this store's, its ids)."""
    rows = con.execute("SELECT published_seq FROM alerts_outbox WHERE sink = ?",
                       [sink.name]).fetchall()
    cursor = int(rows[0][0]) if rows else 0
    known = _READ.setdefault(con, {})
    # Taken out while publishing: an append that fails may have landed (a lost reply), so the
    # next call reads the sink's tail again.
    read = known.pop(sink.name, None)
    if read is None:
        read, cursor = _read_sink(con, sink, cursor)
        if not rows or cursor != rows[0][0]:
            _set_cursor(con, sink.name, cursor)
    published = _publish(con, sink, read, cursor)
    known[sink.name] = read
    return published


def _publish(con: duckdb.DuckDBPyConnection, sink: AlertSink, read: _Read,
             cursor: int) -> int:
    """The alerts past `cursor`, in alert_seq order, less the ids the sink holds already."""
    published = 0
    while True:
        if read.held:  # only after a store met a sink it did not number (_read_sink)
            cursor, send, reached = _unheld_after(con, cursor, read.held)
            if not send and not reached:
                return published
        else:
            send, reached = alerts_after(con, cursor), []
            if not send:
                return published
            cursor = send[-1]["alert_seq"]
        if send:
            sink.append([{**a, "seqs": list(a["seqs"])} for a in send], read.tail)
            read.tail = (send[-1]["alert_seq"], send[-1]["alert_id"])
        published += len(send)
        _set_cursor(con, sink.name, cursor, reached)
        read.held.difference_update(reached)


def _unheld_after(con: duckdb.DuckDBPyConnection, cursor: int,
                  held: set[str]) -> tuple[int, list[dict[str, Any]], list[str]]:
    """From the alerts past `cursor`: how far this step goes, the (at most 1000) alerts in
    that stretch whose ids are not held, and the held ids in it. Only the ids are read for
    the held ones: a rebuilt store's first pass goes through all its alerts."""
    keys = con.execute("SELECT alert_seq, alert_id FROM alerts WHERE alert_seq > ? "
                       "ORDER BY alert_seq LIMIT 100000", [cursor]).fetchall()
    sending: list[int] = []
    reached: list[str] = []
    for seq, alert_id in keys:
        if alert_id in held:
            reached.append(alert_id)
        elif len(sending) == 1000:
            break
        else:
            sending.append(seq)
        cursor = seq
    send = query_rows(con, f"SELECT {', '.join(COLUMNS)} FROM alerts WHERE alert_seq IN "
                           "(SELECT unnest($s::BIGINT[])) ORDER BY alert_seq",
                      {"s": sending}) if sending else []
    return cursor, send, reached


def _read_sink(con: duckdb.DuckDBPyConnection, sink: AlertSink,
               cursor: int) -> tuple[_Read, int]:
    """Where to go on from, read from the sink; returns what was read and the cursor.

    The outbox keeps: every alert of this store at or below the cursor is in the sink, and one
    above it is in the sink exactly when its id is in `alerts_held`. The sink's last alert
    tells whether that still holds: it is this store's alert of that alert_seq and no id is
    held (the sink was published by this store or one numbered alike: the cursor moves up to
    it, in case the publisher was killed between appending and moving the cursor), or a held
    id (nothing was appended since the ids were read), or there is none. Otherwise (a store
    restored from a backup, or rebuilt, numbers its alerts in other batches than the store
    that published; another store publishes the log) every id the sink holds is read and
    held, and the cursor goes back to 0: the store's alerts that the sink lacks are then
    published, in alert_seq order, and the alerts it raises later that the sink holds already
    are not."""
    held = _held(con, sink.name)
    if held:  # ids this store reached since, at or below its cursor, are held no more
        con.execute("DELETE FROM alerts_held WHERE sink = ? AND alert_id IN "
                    "(SELECT alert_id FROM alerts WHERE alert_seq <= ?)", [sink.name, cursor])
        held = _held(con, sink.name)
    seq, alert_id = tail = sink.last()
    if not seq or alert_id in held:
        return _Read(tail, held), cursor
    here = con.execute("SELECT alert_id FROM alerts WHERE alert_seq = ?", [seq]).fetchall()
    if here and here[0][0] == alert_id and not held:
        # With ids held, this store's alerts below the tail are not a prefix of the sink:
        # another store's append of the same id at the same alert_seq proves nothing of them
        # (test_a_rebuilt_store_whose_append_another_store_beat_publishes_what_the_sink_lacks)
        return _Read(tail, held), max(cursor, seq)
    _LOG.warning("%s ends with alert %s (%s), which this store %s (a store restored or rebuilt, "
                 "or another store publishing this log): reading the ids it holds, to publish "
                 "only the alerts it lacks", sink.name, seq, alert_id,
                 f"raised as {here[0][0]}" if here else "has not raised")
    held = sink.ids()
    con.begin()
    try:
        con.execute("DELETE FROM alerts_held WHERE sink = ?", [sink.name])
        con.execute("INSERT INTO alerts_held SELECT ?, unnest(?::VARCHAR[])",
                    [sink.name, sorted(held)])
        con.execute("DELETE FROM alerts_outbox WHERE sink = ?", [sink.name])
        con.execute("INSERT INTO alerts_outbox VALUES (?, 0)", [sink.name])
        con.commit()
    except BaseException:
        roll_back(con)
        raise
    return _Read(tail, held), 0


def _held(con: duckdb.DuckDBPyConnection, sink: str) -> set[str]:
    return {r[0] for r in con.execute("SELECT alert_id FROM alerts_held WHERE sink = ?",
                                      [sink]).fetchall()}


def _set_cursor(con: duckdb.DuckDBPyConnection, sink: str, seq: int,
                reached: list[str] | None = None) -> None:
    """Move the cursor; the held ids this store reached below it are held no more."""
    con.begin()
    try:
        con.execute("DELETE FROM alerts_outbox WHERE sink = ?", [sink])
        con.execute("INSERT INTO alerts_outbox VALUES (?, ?)", [sink, seq])
        if reached:
            con.execute("DELETE FROM alerts_held WHERE sink = ? AND alert_id IN "
                        "(SELECT unnest(?::VARCHAR[]))", [sink, reached])
        con.commit()
    except BaseException:
        roll_back(con)
        raise


_SINKS: weakref.WeakKeyDictionary[EventLog, AlertSink | None] = weakref.WeakKeyDictionary()


@dataclass
class SinkStatus:
    """How publishing to a log's sink goes, for `pitlog serve`'s /health (sink_health): a
    sink that cannot take the alerts leaves them in the outbox while the projection goes on,
    and the log's lag alone would then read as all well."""
    name: str
    failing_since: datetime | None = None  # the first failure since the last success
    publishing_since: datetime | None = None  # a publish under way (it may wait for the sink)
    retry_at: datetime | None = None  # publish_again's next try, after a failure
    streak: FailureStreak = field(default_factory=FailureStreak)

    @property
    def error(self) -> str | None:
        """The last publish's failure; None once one succeeds."""
        return self.streak.error

    @property
    def failures(self) -> int:
        """In a row, since the last success."""
        return self.streak.count

    def failed(self, exc: BaseException) -> int:
        """Note the failure; the level to log it at (backoff.FailureStreak)."""
        now = _now()
        level = self.streak.failed(first_line(exc))
        self.failing_since = self.failing_since or now
        # publish_again waits (backoff.py): each try may log a warning and block the follower
        # up to the sink's timeout, so a sink failing fast (a permission, an authorization) is
        # not tried at every poll (a second read, session 42). A batch's own publish never waits.
        self.retry_at = now + timedelta(seconds=self.streak.wait())
        return level

    def published(self) -> None:
        self.failing_since = self.retry_at = None
        self.streak.reset()


def _now() -> datetime:
    return datetime.now(UTC)


_STATUS: weakref.WeakKeyDictionary[EventLog, SinkStatus] = weakref.WeakKeyDictionary()


def sink_health(con: duckdb.DuckDBPyConnection, log: EventLog) -> dict[str, Any]:
    """`alerts_pending` (raised, not yet in the sink) and `alert_sink` (its name and `state`:
    ok, publishing (a publish under way, `since` when it began), failing (`error`, `since`
    the first failure), or None before the first publish) of the sink beside `log`."""
    status = _STATUS.get(log)
    if status is None:
        return {"alerts_pending": None, "alert_sink": None}
    ((pending,),) = con.execute(
        "SELECT count(*) FROM alerts WHERE alert_seq > coalesce((SELECT max(published_seq) "
        "FROM alerts_outbox WHERE sink = $s), 0) AND alert_id NOT IN (SELECT alert_id FROM "
        "alerts_held WHERE sink = $s)", {"s": status.name}).fetchall()
    return {"alerts_pending": int(pending), "alert_sink": sink_state(log)}


def sink_state(log: EventLog) -> dict[str, Any] | None:
    """sink_health's `alert_sink` alone, from memory (no query): None before the first
    publish."""
    status = _STATUS.get(log)
    if status is None:
        return None
    since = status.publishing_since
    state = "publishing" if since is not None else "failing" if status.error else "ok"
    if state == "failing":
        since = status.failing_since
    return {"name": status.name, "state": state, "error": status.error,
            "since": since.isoformat() if since else None}


class Publisher:
    """Called after each commit: the alerts past the outbox cursor to the sink beside `log`
    (None: publish nothing). A sink that cannot take them (a broker down) leaves them in the
    outbox for the next commit; it never stops the projection."""

    def __init__(self, con: duckdb.DuckDBPyConnection, log: EventLog | None) -> None:
        self.con = con
        self.sink = None
        self.status: SinkStatus | None = None
        if log is not None:
            if log not in _SINKS:
                _SINKS[log] = log.alert_sink()
            self.sink = _SINKS[log]
            if self.sink is not None:
                self.status = _STATUS.setdefault(log, SinkStatus(self.sink.name))

    def __call__(self) -> None:
        if self.sink is None or self.status is None:
            return
        status = self.status
        status.publishing_since = _now()
        try:
            publish_pending(self.con, self.sink)
            if status.failures:
                _LOG.info("alerts published to %s again after %d failures in a row",
                          status.name, status.failures)
            status.published()
        except (LogError, duckdb.OutOfMemoryException) as exc:  # a broker down; no memory
            # a warning for the first failure, each twelfth and a new one (backoff.FailureStreak)
            _LOG.log(status.failed(exc), "alerts not published yet (failure %d in a row): %s",
                     status.failures, first_line(exc))
        except duckdb.Error as exc:
            status.failed(exc)
            # The store itself refused the outbox cursor (a folder where DuckDB cannot create
            # <db>.wal, a full disk): the batches would be refused the same way, so this is
            # the run's one Error line, not a warning before it.
            raise ProjectionError(
                f"cannot write the database ({first_line(exc)}); check the disk and that the "
                f"database's folder can be written (DuckDB keeps <db>.wal beside the file), "
                f"then run again to continue from the checkpoint") from exc
        except Exception as exc:  # noqa: BLE001 - whatever a sink does, projecting goes on
            _LOG.log(status.failed(exc), "alerts not published yet (failure %d in a row): %s: "
                     "%s", status.failures, type(exc).__name__, first_line(exc))
        finally:
            status.publishing_since = None


def publish_again(con: duckdb.DuckDBPyConnection, log: EventLog) -> None:
    """Publish again when the last publish to the sink beside `log` failed (its broker was
    down longer than the sink's timeout): a follower with nothing new to project calls this
    at each poll, so the alerts reach the sink once it is back, not with the next batch, which
    a quiet floor may not send for a while: each failure in a row doubles the wait before the
    next try, from a second up to backoff.RETRY_MAX_S. A sink that has not failed costs
    nothing."""
    status = _STATUS.get(log)
    if status is not None and status.error is not None and (
            status.retry_at is None or _now() >= status.retry_at):
        Publisher(con, log)()

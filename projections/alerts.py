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
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

import duckdb

from events.errors import LogError
from events.log.alerts import AlertSink
from events.log.base import EventLog
from projections.queries import rows as query_rows

ALERTS_DDL = """CREATE TABLE IF NOT EXISTS alerts (
    alert_seq BIGINT NOT NULL, alert_id VARCHAR NOT NULL, code VARCHAR, severity VARCHAR,
    table_id VARCHAR, shoe_id VARCHAR, round_no INTEGER, seqs BIGINT[], explanation VARCHAR,
    rule VARCHAR, occurred_at TIMESTAMPTZ, raised_at TIMESTAMPTZ)"""
OUTBOX_DDL = "CREATE TABLE IF NOT EXISTS alerts_outbox (sink VARCHAR, published_seq BIGINT)"
# The id: code, table and proving seqs (the stored row's identity, as EXCEPT ALL compares it).
ALERT_ID = ("'A' || substr(md5(code || '|' || coalesce(table_id, '') || '|' || "
            "array_to_string(seqs, ',')), 1, 24)")
_LOG = logging.getLogger("pitlog.alerts")
COLUMNS = ("alert_seq", "alert_id", "code", "severity", "table_id", "shoe_id", "round_no",
           "seqs", "explanation", "rule", "occurred_at", "raised_at")


def create_tables(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(ALERTS_DDL)
    con.execute(OUTBOX_DDL)


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
              FROM {rows} ORDER BY alert_id) AS r
        WHERE NOT EXISTS (SELECT 1 FROM alerts AS a WHERE a.alert_id = r.alert_id)""")
    ((after,),) = con.execute("SELECT count(*) FROM alerts").fetchall()
    return int(after - before)


def alerts_after(con: duckdb.DuckDBPyConnection, after_seq: int,
                 limit: int = 1000) -> list[dict[str, Any]]:
    """The alerts with alert_seq > after_seq, in order (at most `limit`)."""
    return query_rows(con, f"SELECT {', '.join(COLUMNS)} FROM alerts WHERE alert_seq > $a "
                           "ORDER BY alert_seq LIMIT $n", {"a": after_seq, "n": limit})


# Per connection, the sinks whose tail was read since it opened.
_CHECKED: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, set[str]] = \
    weakref.WeakKeyDictionary()


def publish_pending(con: duckdb.DuckDBPyConnection, sink: AlertSink) -> int:
    """Append the alerts past the sink's cursor to it, then advance the cursor; returns how
    many were published. The first call per connection and sink, and the first after a failed
    append, also reads the sink's tail."""
    rows = con.execute("SELECT published_seq FROM alerts_outbox WHERE sink = ?",
                       [sink.name]).fetchall()
    cursor = int(rows[0][0]) if rows else 0
    checked = _CHECKED.setdefault(con, set())
    if sink.name not in checked:
        # Published but not recorded (killed in between): the sink's tail says how far, and
        # the cursor is moved there at once, not at the next append (which may be batches
        # away, and would start from the old cursor).
        cursor = max(cursor, _own_tail(con, sink))
        if not rows or cursor != rows[0][0]:
            _set_cursor(con, sink.name, cursor)
        checked.add(sink.name)
    published = 0
    while True:
        batch = alerts_after(con, cursor)
        if not batch:
            break
        try:
            sink.append([{**a, "seqs": list(a["seqs"])} for a in batch])
        except BaseException:
            # It may have landed (a lost reply): the next call reads the sink's tail again.
            checked.discard(sink.name)
            raise
        cursor = batch[-1]["alert_seq"]
        published += len(batch)
        _set_cursor(con, sink.name, cursor)
    return published


def _own_tail(con: duckdb.DuckDBPyConnection, sink: AlertSink) -> int:
    """The alert_seq of the sink's last alert, if this store raised it; else LogError: the
    sink holds another store's alerts (a second store projecting the same log), or alerts
    this store no longer holds (restored from a backup), and publishing after them would skip
    or repeat alerts."""
    seq, alert_id = sink.last()
    if not seq:
        return 0
    here = con.execute("SELECT alert_id FROM alerts WHERE alert_seq = ?", [seq]).fetchall()
    if not here or here[0][0] != alert_id:
        raise LogError(
            f"{sink.name} ends with alert {seq} ({alert_id}), which this store "
            f"{'raised as ' + here[0][0] if here else 'has not raised'}: another store "
            f"publishes this log's alerts, or this store is older than the sink; this store's "
            f"alerts are not published (one store per log publishes: project a second store with "
            f"`pitlog project --no-alerts`, or move the sink aside)")
    return seq


def _set_cursor(con: duckdb.DuckDBPyConnection, sink: str, seq: int) -> None:
    con.begin()
    try:
        con.execute("DELETE FROM alerts_outbox WHERE sink = ?", [sink])
        con.execute("INSERT INTO alerts_outbox VALUES (?, ?)", [sink, seq])
        con.commit()
    except BaseException:
        con.rollback()
        raise


_SINKS: weakref.WeakKeyDictionary[EventLog, AlertSink | None] = weakref.WeakKeyDictionary()


class Publisher:
    """Called after each commit: the alerts past the outbox cursor to the sink beside `log`
    (None: publish nothing). A sink that cannot take them (a broker down) leaves them in the
    outbox for the next commit; it never stops the projection."""

    def __init__(self, con: duckdb.DuckDBPyConnection, log: EventLog | None) -> None:
        self.con = con
        self.sink = None
        if log is not None:
            if log not in _SINKS:
                _SINKS[log] = log.alert_sink()
            self.sink = _SINKS[log]

    def __call__(self) -> None:
        if self.sink is None:
            return
        try:
            publish_pending(self.con, self.sink)
        except (LogError, duckdb.Error) as exc:  # a broker down; DuckDB out of memory
            _LOG.warning("alerts not published yet: %s", exc)
        except Exception as exc:  # noqa: BLE001 - whatever a sink does, projecting goes on
            _LOG.warning("alerts not published yet: %s: %s", type(exc).__name__, exc)

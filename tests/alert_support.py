"""Alerts built by hand, and sinks that fail part-way, for the publishing tests
(tests/projections/test_alert_publish.py, test_alert_attack.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from kafka_support import read_alerts

from events.errors import LogError
from events.log.alerts import Alert, AlertSink
from events.log.embedded.alerts import EmbeddedAlertLog
from events.log.kafka.alerts import KafkaAlertTopic

AT = datetime(2026, 12, 1, 21, 14, 5, tzinfo=UTC)
SinkAndReader = tuple[Callable[[], AlertSink], Callable[[], list[int]]]


def alert(seq: int, width: int = 2) -> Alert:
    """Alert `seq`, proven by `width` seqs from `seq` on."""
    return {"alert_seq": seq, "alert_id": f"A{seq:024x}", "code": "MISSING_BURN",
            "severity": "high", "table_id": f"T{seq % 3}", "shoe_id": "S1", "round_no": seq,
            "seqs": list(range(seq, seq + width)), "explanation": f"alert {seq}",
            "rule": "13:69F-34.16(d)", "occurred_at": AT, "raised_at": AT}


def raise_in_db(con: duckdb.DuckDBPyConnection, seqs: range, width: int = 2) -> None:
    """Alerts as the projector's transaction leaves them in `alerts`."""
    for seq in seqs:
        con.execute("INSERT INTO alerts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    list(alert(seq, width).values()))


class LostReply:
    """A real sink whose append number `lost` lands and then reports a failure, as when the
    broker's reply (or the fsync's return) is lost: the alerts are in the sink, the publisher
    does not know it."""

    def __init__(self, sink: AlertSink, lost: int = 1) -> None:
        self.sink, self.name, self.lost, self.calls = sink, sink.name, lost, 0

    def append(self, alerts: Sequence[Alert]) -> None:
        self.sink.append(alerts)
        self.calls += 1
        if self.calls == self.lost:
            raise LogError("the reply was lost")

    def last(self) -> tuple[int, str | None]:
        return self.sink.last()

    def close(self) -> None:
        self.sink.close()


def sinks(request: pytest.FixtureRequest, folder: Path) -> Iterator[SinkAndReader]:
    """For a fixture parametrized "embedded" / "kafka": (make, read), `make()` a new sink of
    the one alert log (alerts.jsonl in `folder`, or the test's Kafka alert topic), `read()`
    its alert_seqs as a foreign reader reads them. Every sink made is closed at the end."""
    opened: list[AlertSink] = []
    if request.param == "embedded":
        folder.mkdir(exist_ok=True)

        def make() -> AlertSink:
            opened.append(EmbeddedAlertLog(folder))
            return opened[-1]

        def read() -> list[int]:
            return [a["alert_seq"] for a in EmbeddedAlertLog(folder).read()]
    else:
        bootstrap, topic = request.getfixturevalue("kafka_uri").removeprefix(
            "kafka://").split("/", 1)

        def make() -> AlertSink:
            opened.append(KafkaAlertTopic(bootstrap, f"{topic}.alerts"))
            return opened[-1]

        def read() -> list[int]:
            return [a["alert_seq"] for _, a in read_alerts(bootstrap, f"{topic}.alerts")]
    yield make, read
    for sink in opened:
        sink.close()

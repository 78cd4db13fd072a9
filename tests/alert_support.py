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
SinkAndReader = tuple[Callable[[], AlertSink], Callable[..., list]]


def alert(seq: int, width: int = 2) -> Alert:
    """Alert `seq`, proven by `width` seqs from `seq` on."""
    return {"alert_seq": seq, "alert_id": f"A{seq:024x}", "code": "MISSING_BURN",
            "severity": "high", "table_id": f"T{seq % 3}", "shoe_id": "S1", "round_no": seq,
            "seqs": list(range(seq, seq + width)), "explanation": f"alert {seq}",
            "rule": "13:69F-34.16(d)", "occurred_at": AT, "raised_at": AT}


def raise_in_db(con: duckdb.DuckDBPyConnection, seqs: range, width: int = 2) -> None:
    """Alerts as the projector's transaction leaves them in `alerts`."""
    raise_numbered(con, {seq: seq for seq in seqs}, width)


def raise_numbered(con: duckdb.DuckDBPyConnection, numbering: dict[int, int],
                   width: int = 2) -> None:
    """Alerts of a store that numbers them otherwise (restored from a backup, rebuilt): alert
    `k` (its row, its alert_id) as this store's alert_seq `numbering[k]`."""
    for k, seq in numbering.items():
        con.execute("INSERT INTO alerts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    list({**alert(k, width), "alert_seq": seq}.values()))


def published_by_a_store(sink: AlertSink, seqs: range) -> None:
    """What a store that raised alerts `seqs` (numbered alike) leaves in `sink`: it published
    them all, then went away (its store replaced by a backup, or a rebuild)."""
    from projections.alerts import create_tables, publish_pending

    with duckdb.connect() as store:
        create_tables(store)
        raise_in_db(store, seqs)
        assert publish_pending(store, sink) == len(seqs)


def alert_ids(ks: range | list[int]) -> list[str]:
    """The alert_ids of alerts `k` (as `alert` makes them)."""
    return [alert(k)["alert_id"] for k in ks]


class FaultySink:
    """A real sink, reached through a fault its subclass's `append` adds: everything else
    is the sink's own."""

    def __init__(self, sink: AlertSink) -> None:
        self.sink, self.name = sink, sink.name

    def last(self) -> tuple[int, str | None]:
        return self.sink.last()

    def ids(self) -> set[str]:
        return self.sink.ids()

    def close(self) -> None:
        self.sink.close()


class LostReply(FaultySink):
    """A real sink whose append number `lost` lands and then reports a failure, as when the
    broker's reply (or the fsync's return) is lost: the alerts are in the sink, the publisher
    does not know it."""

    def __init__(self, sink: AlertSink, lost: int = 1) -> None:
        super().__init__(sink)
        self.lost, self.calls = lost, 0

    def append(self, alerts: Sequence[Alert],
               after: tuple[int, str | None] | None = None) -> None:
        self.sink.append(alerts, after)
        self.calls += 1
        if self.calls == self.lost:
            raise LogError("the reply was lost")


class Unreachable(FaultySink):
    """A real sink that cannot be reached while `down`: each append then fails before anything
    lands, as a publish to a broker that stays down longer than the sink's timeout."""

    def __init__(self, sink: AlertSink) -> None:
        super().__init__(sink)
        self.down, self.refused = True, 0

    def append(self, alerts: Sequence[Alert],
               after: tuple[int, str | None] | None = None) -> None:
        if self.down:
            self.refused += 1
            raise LogError("the broker is down")
        self.sink.append(alerts, after)


def sinks(request: pytest.FixtureRequest, folder: Path) -> Iterator[SinkAndReader]:
    """For a fixture parametrized "embedded" / "kafka": (make, read), `make()` a new sink of
    the one alert log (alerts.jsonl in `folder`, or the test's Kafka alert topic), `read()`
    its alert_seqs as a foreign reader reads them (`read("alert_id")` its alert_ids). Every
    sink made is closed at the end."""
    opened: list[AlertSink] = []
    if request.param == "embedded":
        folder.mkdir(exist_ok=True)

        def make() -> AlertSink:
            opened.append(EmbeddedAlertLog(folder))
            return opened[-1]

        def read(field: str = "alert_seq") -> list:
            return [a[field] for a in EmbeddedAlertLog(folder).read()]
    else:
        bootstrap, topic = request.getfixturevalue("kafka_uri").removeprefix(
            "kafka://").split("/", 1)

        def make() -> AlertSink:
            opened.append(KafkaAlertTopic(bootstrap, f"{topic}.alerts"))
            return opened[-1]

        def read(field: str = "alert_seq") -> list:
            return [a[field] for _, a in read_alerts(bootstrap, f"{topic}.alerts")]
    yield make, read
    for sink in opened:
        sink.close()

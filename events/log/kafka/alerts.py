"""The Kafka alert topic: `<event topic>.alerts`, one partition (one total order of alerts),
each record's key the table id and its value the alert as plain Avro binary of
schemas/alerts/Alert.v1.avsc (fastavro.schemaless_writer): a consumer the project did not write
reads it with that file and fastavro.schemaless_reader, with ``isolation_level="read_committed"``.

Exactly once across kills: each publish is one transaction under one transactional.id per alert
topic (``pitlog.<alert topic>``). A publisher that starts (`last`, or the first `append`) calls
init_transactions first, which fences the publisher before it: the broker aborts that one's
open transaction and refuses any request of it still on its way (its epoch is old). So the
committed tail it then reads (`last`) is final, and the publisher continues after it. A plain
producer could not promise that: a killed publisher's last request may reach the log after the
new one has read the tail, and its alerts would be published twice. A publish that fails
part-way (broker down, a timeout) drops its producer; the next publish re-opens, fences, and
re-reads the tail (projections/alerts.py, publish_pending), so what landed is not sent again.
`ids` reads every committed record (a store that did not number the topic: projections/alerts.py,
_read_sink), also after fencing.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from typing import Any

import fastavro
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError, TopicAlreadyExistsError

from events.errors import LogError, corrupt_reason
from events.log.alerts import ALERT_SCHEMA, Alert
from events.log.kafka.fencing import (
    TRANSACTION_TIMEOUT_MS,
    discard_producer,
    end_transaction,
    stays_fenced,
)
from events.log.kafka.settings import (
    producer_settings,
    reconnect_settings,
    security_settings,
    topic_config,
)


@cache
def alert_schema() -> Any:
    return fastavro.parse_schema(json.loads(ALERT_SCHEMA.read_text()))


def encode(alert: Alert) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, alert_schema(), alert)
    return buf.getvalue()


def decode(data: bytes) -> Alert:
    alert: Alert = fastavro.schemaless_reader(io.BytesIO(data), alert_schema())  # type: ignore[assignment]  # fastavro returns a union
    return alert


# The longest a publish, or a read of the topic's tail, waits for the broker: a follower
# publishes between its batches, so an unreachable broker holds projection back at most this
# long (the alerts stay in the outbox); a log's shorter `?timeout_s=` shortens it.
ALERT_TIMEOUT_S = 60.0


class KafkaAlertTopic:
    def __init__(self, bootstrap: str, topic: str, timeout_s: float = ALERT_TIMEOUT_S,
                 settings: Mapping[str, Any] | None = None, client_id: str = "pitlog",
                 replication_factor: int = 1) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.name = f"kafka://{bootstrap}/{topic}"
        self.timeout_s = timeout_s
        # the prefix of its clients' ids, as the event log's (`?client_id=`: broker logs,
        # quotas, ACLs): `<client_id>-alerts`, `-alerts-admin`, `-alerts-reader`
        self.client_id = client_id
        # the event log's own connection settings (KafkaLog's `settings`), else PITLOG_KAFKA_*
        self._settings = dict(security_settings() if settings is None else settings)
        # replicas of the topic when this makes it: the event topic's (KafkaLog.alert_sink),
        # with min.insync.replicas=2 from three on (settings.topic_config), as for the events
        self.replication_factor = replication_factor
        self._producer: KafkaProducer | None = None
        # Made now if it can be, else before the first publish or read (`_opened`), whose
        # LogError leaves the alerts in the outbox: with the event topic's replicas it cannot
        # be made while fewer brokers are up (one of three restarting), and the projector
        # stopped there, though the events were still written (a review of session 43).
        self._made = False
        try:
            self._ensure_topic()
        except LogError:
            pass

    def _ensure_topic(self) -> None:
        if self._made:
            return
        try:
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap.split(","),
                                     client_id=f"{self.client_id}-alerts-admin",
                                     **reconnect_settings(), **self._settings)
            try:
                if self.topic not in admin.list_topics():
                    try:
                        admin.create_topics({self.topic: {
                            "num_partitions": 1, "replication_factor": self.replication_factor,
                            "configs": topic_config(self.replication_factor)}},
                            timeout_ms=30_000)
                    except TopicAlreadyExistsError:
                        pass
                    admin.wait_for_topics([self.topic], timeout_ms=int(self.timeout_s * 1000))
            finally:
                admin.close()
        except KafkaError as exc:
            up = "" if self.replication_factor == 1 else \
                f" (and {self.replication_factor} brokers, one per replica)"
            raise LogError(f"cannot create the alert topic {self.topic} on {self.bootstrap}: "
                           f"{exc}; is the broker running{up}?") from exc
        self._made = True

    def _opened(self) -> KafkaProducer:
        """The transactional producer, opened (and the previous publisher fenced) on first use."""
        self._ensure_topic()
        if self._producer is None:
            producer = stays_fenced(KafkaProducer(
                bootstrap_servers=self.bootstrap.split(","), client_id=f"{self.client_id}-alerts",
                transactional_id=f"pitlog.{self.topic}",
                transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
                **{**producer_settings(self.timeout_s), "max_block_ms": int(self.timeout_s * 1000)},
                **self._settings))
            try:
                producer.init_transactions()
            except KafkaError as exc:
                discard_producer(producer)
                raise LogError(f"cannot open the alert topic {self.topic} for publishing: "
                               f"{exc}; the alerts stay in the outbox and are published on "
                               f"the next batch") from exc
            self._producer = producer
        return self._producer

    def append(self, alerts: Sequence[Alert],
               after: tuple[int, str | None] | None = None) -> None:
        """One transaction. `after` needs no check here: a publisher that appended since this
        one read the tail fenced it, and this transaction fails (module docstring)."""
        if not alerts:
            return
        producer = self._opened()
        try:
            producer.begin_transaction()
            futures = [producer.send(self.topic, key=(a.get("table_id") or "").encode(),
                                     value=encode(a), partition=0) for a in alerts]
            producer.flush(timeout=self.timeout_s)
            for f in futures:
                f.get(timeout=0)
            end_transaction(producer, True, self.timeout_s)
        except KafkaError as exc:
            # Whether it committed is unknown: the next publisher fences this one and reads
            # the tail (module docstring).
            self._producer = None
            discard_producer(producer)
            raise LogError(f"cannot publish alerts to {self.topic}: {exc}; they stay in the "
                           f"outbox and are published on the next batch") from exc

    def _reader(self) -> tuple[KafkaConsumer, TopicPartition]:
        """A read_committed consumer of the topic's partition, opened after fencing any earlier
        publisher (module docstring): what it reads up to the end offset is final."""
        self._opened()
        tp = TopicPartition(self.topic, 0)
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap.split(","), group_id=None,
                                 client_id=f"{self.client_id}-alerts-reader",
                                 enable_auto_commit=False, isolation_level="read_committed",
                                 **reconnect_settings(), **self._settings)
        consumer.assign([tp])
        return consumer, tp

    def _values(self, consumer: KafkaConsumer, tp: TopicPartition, start: int, end: int,
                what: str) -> Iterator[bytes]:
        """The values of the committed records in [start, end), in order; LogError (reading
        `what`) when the broker serves nothing for timeout_s."""
        consumer.seek(tp, start)
        deadline = time.monotonic() + self.timeout_s
        while consumer.position(tp) < end:
            if time.monotonic() > deadline:
                raise LogError(f"cannot read {what} of {self.topic}: offsets {start}-{end} not "
                               f"served in {self.timeout_s:.0f}s; is the broker running?")
            for records in consumer.poll(timeout_ms=500).values():
                deadline = time.monotonic() + self.timeout_s
                yield from (r.value or b"" for r in records if r.offset < end)

    def last(self) -> tuple[int, str | None]:
        """alert_seq and alert_id of the topic's last committed record ((0, None) when empty),
        read after fencing any earlier publisher (module docstring)."""
        consumer, tp = self._reader()
        try:
            end = consumer.end_offsets([tp])[tp]  # read_committed: the last stable offset
            # Retention or delete-records may have removed the head: a seek before it would
            # jump to the end and find nothing.
            first = consumer.beginning_offsets([tp])[tp]
            back = 16  # the tail ends in commit markers, and maybe aborted records
            while True:
                start = max(first, end - back)
                values = list(self._values(consumer, tp, start, end, "the last alert"))
                if values:
                    try:
                        alert = decode(values[-1])
                        return int(alert["alert_seq"]), str(alert["alert_id"])
                    except Exception as exc:  # noqa: BLE001 - any bytes may be there
                        raise LogError(
                            f"the last record of {self.topic} is not an alert "
                            f"({corrupt_reason(exc)}); publishing after it could skip or "
                            f"repeat alerts: remove it (or publish to a new topic)") from exc
                if start == first:
                    return 0, None
                back *= 8
        except KafkaError as exc:
            raise LogError(f"cannot read the last alert of {self.topic}: {exc}; is the "
                           f"broker running?") from exc
        finally:
            consumer.close()

    def ids(self) -> set[str]:
        """Every alert_id of the topic's committed records, read after fencing any earlier
        publisher (as `last`); records that are not alerts hold none."""
        consumer, tp = self._reader()
        found: set[str] = set()
        try:
            end = consumer.end_offsets([tp])[tp]
            first = consumer.beginning_offsets([tp])[tp]
            for value in self._values(consumer, tp, first, end, "the alert ids"):
                try:
                    found.add(str(decode(value)["alert_id"]))
                except Exception:  # noqa: BLE001, S112 - any bytes may be there: no alert id
                    continue
        except KafkaError as exc:
            raise LogError(f"cannot read the alert ids of {self.topic}: {exc}; is the broker "
                           f"running?") from exc
        finally:
            consumer.close()
        return found

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close()
            self._producer = None

"""The Kafka alert topic: `<event topic>.alerts`, one partition (one total order of alerts),
each record's key the table id and its value the alert as plain Avro binary of
schemas/alerts/Alert.v1.avsc (fastavro.schemaless_writer): a consumer the project did not write
reads it with that file and fastavro.schemaless_reader."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from functools import cache
from typing import Any

import fastavro
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError, TopicAlreadyExistsError

from events.errors import LogError
from events.log.alerts import ALERT_SCHEMA, Alert
from events.log.kafka.settings import producer_settings, security_settings, topic_config


@cache
def alert_schema() -> Any:
    return fastavro.parse_schema(json.loads(ALERT_SCHEMA.read_text()))


def encode(alert: Alert) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, alert_schema(), alert)
    return buf.getvalue()


def decode(data: bytes) -> Alert:
    return fastavro.schemaless_reader(io.BytesIO(data), alert_schema())


class KafkaAlertTopic:
    def __init__(self, bootstrap: str, topic: str, timeout_s: float = 60.0) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.name = f"kafka://{bootstrap}/{topic}"
        self.timeout_s = timeout_s
        self._settings = security_settings()
        self._producer: KafkaProducer | None = None
        self._ensure_topic()

    def _ensure_topic(self) -> None:
        try:
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap.split(","),
                                     client_id="pitlog-alerts-admin", **self._settings)
            try:
                if self.topic not in admin.list_topics():
                    try:
                        admin.create_topics({self.topic: {
                            "num_partitions": 1, "replication_factor": 1,
                            "configs": topic_config(1)}}, timeout_ms=30_000)
                    except TopicAlreadyExistsError:
                        pass
                    admin.wait_for_topics([self.topic], timeout_ms=int(self.timeout_s * 1000))
            finally:
                admin.close()
        except KafkaError as exc:
            raise LogError(f"cannot create the alert topic {self.topic} on {self.bootstrap}: "
                           f"{exc}; is the broker running?") from exc

    def append(self, alerts: Sequence[Alert]) -> None:
        if not alerts:
            return
        if self._producer is None:
            self._producer = KafkaProducer(bootstrap_servers=self.bootstrap.split(","),
                                           client_id="pitlog-alerts",
                                           **producer_settings(self.timeout_s), **self._settings)
        futures = [self._producer.send(self.topic, key=(a.get("table_id") or "").encode(),
                                       value=encode(a), partition=0) for a in alerts]
        self._producer.flush()
        try:
            for f in futures:
                f.get(timeout=self.timeout_s)
        except KafkaError as exc:
            raise LogError(f"cannot publish alerts to {self.topic}: {exc}; they stay in the "
                           f"outbox and are published on the next batch") from exc

    def last_seq(self) -> int:
        """The alert_seq of the topic's last record (0 when empty)."""
        tp = TopicPartition(self.topic, 0)
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap.split(","), group_id=None,
                                 enable_auto_commit=False, **self._settings)
        try:
            consumer.assign([tp])
            end = consumer.end_offsets([tp])[tp]
            if end == 0:
                return 0
            consumer.seek(tp, end - 1)
            for _ in range(50):
                for records in consumer.poll(timeout_ms=1000).values():
                    if records:
                        return int(decode(records[-1].value)["alert_seq"])
            raise LogError(f"cannot read the last record of {self.topic}")
        finally:
            consumer.close()

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close()
            self._producer = None


"""End-to-end check of tools/kafka_broker.py against a real single-node KRaft broker.

Starts a broker in a tmp dir, round-trips 10 messages, restarts the broker in place (same
ports, same data) and checks the messages survived, then stops it and checks the JVM is gone.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

# One module name, tools.kafka_broker (the repository is on pytest's pythonpath), so every test
# helper in this process shares one copy and one registry of the JVMs it launched.
from tools import kafka_broker as kb

pytestmark = pytest.mark.kafka

TOPIC = "pitlog.test.broker-roundtrip"
EXPECTED: list[bytes] = [f"round-{i}".encode() for i in range(10)]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[kb.Broker]:
    # No skip when mvn/java are missing: CI must fail loudly rather than silently skip the
    # Kafka tests; deselect them locally with `-m "not kafka"` instead.
    started = kb.start_broker(tmp_path / "kafka", timeout_s=90)
    try:
        yield started
    finally:
        started.stop()  # idempotent; covers a failing assertion mid-test


def _read_all(bootstrap: str, expected_count: int, timeout_s: float = 20.0) -> list[bytes]:
    # Manual assignment, no group: we read the partition from the start without depending on
    # the group coordinator or committed offsets.
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    try:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        values: list[bytes] = []
        deadline = time.monotonic() + timeout_s
        while len(values) < expected_count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values.extend(record.value for record in records)
        # One more short poll so an unexpected extra record would show up in the assert.
        for records in consumer.poll(timeout_ms=300).values():
            values.extend(record.value for record in records)
        return values
    finally:
        consumer.close()


def _pid_exists(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        # A zombie has exited; it only waits to be reaped by its (possibly lazy) parent.
        return stat.read_text().rpartition(")")[2].split()[0] != "Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_roundtrip_restart_in_place_and_stop(broker: kb.Broker) -> None:
    state_dir = broker.state_dir
    assert (state_dir / "bootstrap").read_text().strip() == broker.bootstrap
    first_pid = broker.pid
    assert first_pid is not None and _pid_exists(first_pid)

    with KafkaAdminClient(bootstrap_servers=broker.bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        for value in EXPECTED:
            producer.send(TOPIC, value=value, key=b"table-1")
        producer.flush(timeout=30)
    finally:
        producer.close()

    assert _read_all(broker.bootstrap, len(EXPECTED)) == EXPECTED

    bootstrap_before = broker.bootstrap
    broker.restart(timeout_s=90)
    second_pid = broker.pid
    assert second_pid is not None and second_pid != first_pid
    assert not _pid_exists(first_pid)
    assert broker.bootstrap == bootstrap_before
    assert (state_dir / "bootstrap").read_text().strip() == bootstrap_before
    # Same data dir, no reformat: the records written before the restart are still there.
    assert _read_all(broker.bootstrap, len(EXPECTED)) == EXPECTED

    broker.stop()
    assert broker.pid is None
    assert not (state_dir / "broker.pid").exists()
    assert not _pid_exists(second_pid)
    broker.stop()  # idempotent
    assert kb.stop_broker(state_dir) is False

"""Publishing alerts exactly once when a sink fails part-way (projections/alerts.py,
publish_pending; events/log/kafka/alerts.py): the same contract on the alert log beside the
embedded log and on the Kafka alert topic, read back the way a foreign consumer reads it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from alert_support import (
    LostReply,
    SinkAndReader,
    alert,
    alert_ids,
    published_by_a_store,
    raise_in_db,
    raise_numbered,
    sinks,
)
from cli_support import run
from kafka.errors import KafkaError
from kafka_support import read_alerts

from events.errors import LogError
from events.log.embedded.log import EmbeddedLog
from events.log.kafka.alerts import KafkaAlertTopic, encode
from events.log.kafka.fencing import discard_producer
from events.simulation.simulator import SimConfig, simulate
from projections.alerts import create_tables, publish_pending


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def sink_and_reader(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SinkAndReader]:
    yield from sinks(request, tmp_path / "log")


def test_a_publish_whose_reply_is_lost_is_not_published_again(
        sink_and_reader: SinkAndReader) -> None:
    make, read = sink_and_reader
    sink = LostReply(make())
    with duckdb.connect() as con:
        create_tables(con)
        raise_in_db(con, range(1, 6))
        with pytest.raises(LogError, match="reply was lost"):
            publish_pending(con, sink)
        assert read() == [1, 2, 3, 4, 5]  # it landed, though the publisher was told otherwise
        raise_in_db(con, range(6, 8))
        assert publish_pending(con, sink) == 2  # the tail read again: only 6 and 7 are new
        assert publish_pending(con, sink) == 0
    assert read() == [1, 2, 3, 4, 5, 6, 7]


@pytest.mark.kafka
def test_a_killed_publishers_open_transaction_is_aborted_and_its_late_request_refused(
        kafka_uri: str) -> None:
    """The publisher stopped mid-publish is pitlog's own (its producer as `_opened` makes it):
    paused, not dead, it still has a request on its way when the next publisher starts. Its
    late request is refused and it stays fenced: kafka-python alone would take a new epoch of
    the same transactional.id and fence the live publisher in turn (CI failed so, once in
    several runs: events/log/kafka/fencing.py, stays_fenced)."""
    bootstrap, topic = kafka_uri.removeprefix("kafka://").split("/", 1)
    topic = f"{topic}.alerts"
    first = KafkaAlertTopic(bootstrap, topic)
    first.append([alert(s) for s in (1, 2, 3)])
    first.close()
    paused = KafkaAlertTopic(bootstrap, topic)
    stopped = paused._opened()  # noqa: SLF001 - the publisher's own producer, mid-publish
    stopped.begin_transaction()
    stopped.send(topic, key=b"T1", value=encode(alert(4)), partition=0)
    stopped.flush()
    restarted = KafkaAlertTopic(bootstrap, topic)
    try:
        assert restarted.last()[0] == 3  # the open transaction was aborted when it fenced
        late = stopped.send(topic, key=b"T2", value=encode(alert(5)), partition=0)
        with pytest.raises(KafkaError):
            late.get(timeout=30)
        with pytest.raises(KafkaError):
            stopped.commit_transaction()
        restarted.append([alert(s) for s in (4, 5, 6)])
        assert [a['alert_seq'] for _, a in read_alerts(bootstrap, topic)] == [1, 2, 3, 4, 5, 6]
    finally:
        restarted.close()
        discard_producer(stopped)


def test_a_store_that_numbers_the_sinks_alerts_otherwise_publishes_only_the_ids_it_lacks(
        sink_and_reader: SinkAndReader) -> None:
    """A rebuilt store (or another store of the same log): the same alerts, numbered in other
    batches. Its first publish finds the sink's last alert not its own, reads the sink's ids,
    and publishes only alert 6, under its own alert_seq 5; then it publishes as any store."""
    make, read = sink_and_reader
    published_by_a_store(make(), range(1, 6))
    with duckdb.connect() as other:
        create_tables(other)
        raise_numbered(other, {2: 1, 1: 2, 4: 3, 6: 4, 3: 5, 5: 6})
        assert publish_pending(other, make()) == 1
        raise_numbered(other, {7: 7})
        sink = make()  # a restart: its tail, 7, is this store's alert 7
        assert publish_pending(other, sink) == 1
        assert publish_pending(other, sink) == 0
    assert read("alert_id") == alert_ids(range(1, 8))  # each once; 6 and 7 after the sink's
    assert read() == [1, 2, 3, 4, 5, 4, 7]  # alert_seq is each publisher's own numbering


def test_project_no_alerts_leaves_the_sink_to_the_store_that_publishes(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log")
    simulate(log, SimConfig(seed=3, tables=2, rounds=30, irregularities=0.2))
    log.close()
    uri = f"file://{tmp_path / 'log'}"
    assert run("project", "--log", uri, "--db", str(tmp_path / "a.duckdb")).returncode == 0
    published = (tmp_path / "log" / "alerts.jsonl").read_bytes()
    assert published.count(b"\n") > 0
    second = run("project", "--log", uri, "--db", str(tmp_path / "b.duckdb"), "--no-alerts",
                 "--format", "json")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)[0]["alerts"] == published.count(b"\n")  # raised, kept
    assert (tmp_path / "log" / "alerts.jsonl").read_bytes() == published


def test_a_rebuilt_store_publishes_what_the_sink_lacks_in_its_own_order_in_steps(
        sink_and_reader: SinkAndReader) -> None:
    """1,800 alerts the sink lacks, more than one append takes (1,000), numbered backwards by
    the rebuilt store: they go out in its alert_seq order, each once, the 1,200 the sink holds
    not again."""
    make, read = sink_and_reader
    published_by_a_store(make(), range(1, 1201))
    with duckdb.connect() as rebuilt:
        create_tables(rebuilt)
        raise_numbered(rebuilt, {k: 3001 - k for k in range(1, 3001)})
        assert publish_pending(rebuilt, make()) == 1800
    assert read("alert_id") == alert_ids(range(1, 1201)) + alert_ids(range(3000, 1200, -1))

"""A broker that stops answering in the middle of a transaction's commit (paused with SIGSTOP: a
stalled JVM, a network partition) must not hang pitlog's Kafka writers: kafka-python 3.0.12's
commit_transaction has no deadline of its own (its request timeout ended it in these runs), and
events/log/kafka/fencing.end_transaction bounds it by the writer's timeout_s. The pause is
injected at the commit itself, on a broker of the test's own; the broker, the producers and the
topics are real. Afterwards every event and alert is on its topic exactly once."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from alert_support import raise_in_db
from kafka_support import dedicated_broker, read_alerts, topic_for

import events.log.kafka.alerts as kafka_alerts
import events.log.kafka.fencing as fencing
from events.errors import LogError
from events.log.kafka.alerts import KafkaAlertTopic
from events.log.registry import open_log
from events.recording.recorder import Recorder
from events.reddog import model
from events.wire import codec
from projections.alerts import create_tables, publish_pending

pytestmark = pytest.mark.kafka

START = datetime(2026, 12, 1, 21, 0, tzinfo=UTC)
# Generous: only a hang (the unbounded wait) runs into it.
HANG_S = 240


@contextmanager
def _paused_at_first_commit(broker: Any, module: Any) -> Iterator[list[bool]]:
    """`module.end_transaction`, wrapped: its first commit pauses the broker first and resumes
    it once the commit has returned or raised (the broker then answers late). Yields a list
    that holds True once the pause happened."""
    real: Callable[..., None] = module.end_transaction
    paused: list[bool] = []

    def pausing(producer: Any, commit: bool, timeout_s: float) -> None:
        if not commit or paused:
            return real(producer, commit, timeout_s)
        paused.append(True)
        os.kill(broker.pid, signal.SIGSTOP)
        _wait_stopped(broker.pid)
        try:
            return real(producer, commit, timeout_s)
        finally:
            os.kill(broker.pid, signal.SIGCONT)

    module.end_transaction = pausing
    try:
        yield paused
    finally:
        module.end_transaction = real
        if broker.pid is not None:
            os.kill(broker.pid, signal.SIGCONT)  # never leave it stopped, whatever happened


def _wait_stopped(pid: int) -> None:
    """Until every thread of the process is stopped: kill() only queues SIGSTOP, and a busy
    machine may leave a broker thread running long enough to answer the commit."""
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline:
        states = set()
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                stat = Path(f"/proc/{pid}/task/{task}/stat").read_text()
            except FileNotFoundError:  # a thread that has just ended
                continue
            states.add(stat.rsplit(")", 1)[1].split()[0])
        if states <= {"T", "t"}:
            return
        time.sleep(0.01)
    raise AssertionError(f"the broker (pid {pid}) did not stop")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One broker of the module's own (these tests pause it), started once for both."""
    with dedicated_broker(tmp_path_factory.mktemp("broker")) as started:
        yield started


def _in_thread(fn: Callable[[], Any]) -> list[BaseException | None]:
    """Run fn; the test fails if it is still waiting after HANG_S. Returns [its error or
    None]."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's assertions
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG_S)
    assert not thread.is_alive(), "the commit waited for the paused broker without end"
    return outcome


def test_an_alert_publish_whose_commit_is_not_answered_fails_and_the_next_publishes_each_once(
        broker: Any, request: pytest.FixtureRequest) -> None:
    topic = f"{topic_for(request.node.name)}.alerts"
    with duckdb.connect() as con:
        create_tables(con)
        raise_in_db(con, range(1, 4))
        assert publish_pending(con, KafkaAlertTopic(broker.bootstrap, topic)) == 3
        raise_in_db(con, range(4, 7))
        sink = KafkaAlertTopic(broker.bootstrap, topic, timeout_s=10)
        with _paused_at_first_commit(broker, kafka_alerts) as paused:
            outcome = _in_thread(lambda: publish_pending(con, sink))
        assert paused == [True]
        assert isinstance(outcome[0], LogError)
        # Either bound ended the wait: end_transaction's, or kafka-python's request
        # timeout (shortened with timeout_s), which fails the commit for good.
        assert str(outcome[0]).startswith(f"cannot publish alerts to {topic}: ")
        # The broker answered the commit late: the next publish fences, reads the tail,
        # and sends only what is not there.
        publish_pending(con, sink)
        sink.close()
    assert [a["alert_seq"] for _, a in read_alerts(broker.bootstrap, topic)] == \
        [1, 2, 3, 4, 5, 6]


def test_an_event_append_whose_commit_is_not_answered_returns_and_each_event_is_on_once(
        broker: Any, request: pytest.FixtureRequest) -> None:
    uri = (f"kafka://{broker.bootstrap}/{topic_for(request.node.name)}"
           "?partitions=2&fencing=true&timeout_s=10")
    with open_log(uri) as log:
        recorder = Recorder(log, heads={}, batch_size=10**9)  # flushed by hand
        assert log.timeout_s == 10

        def record(first: int, n: int) -> None:
            for i in range(first, first + n):
                recorder.record(f"T{i % 3:02d}", model.DealerTappedIn(dealer_id=f"D{i}"),
                                shoe_id=None, round_no=None, actor="pit",
                                occurred_at=START + timedelta(seconds=i))

        record(0, 30)
        recorder.flush()
        record(30, 30)
        with _paused_at_first_commit(broker, fencing) as paused:
            outcome = _in_thread(recorder.flush)
        assert paused == [True]
        if outcome[0] is not None:  # given up at its deadline: the retry finishes it
            assert isinstance(outcome[0], LogError)
            recorder.flush()
        seqs: dict[str, list[int]] = {}
        for batch in log.read():
            for rec in batch:
                seqs.setdefault(rec.key.decode(), []).append(codec.decode(rec.value).seq)
    # Each table's 20 events once, in order: the late-answered commit was not written again.
    assert seqs == {f"T{t:02d}": list(range(1, 21)) for t in range(3)}


@pytest.mark.parametrize("timeout_s", [5, 10, 30])
def test_a_log_address_with_a_short_timeout_appends_and_publishes(
        kafka_uri: str, tmp_path: Path, timeout_s: int) -> None:
    """`?timeout_s=S` below the producer's 30 s request timeout used to make every producer
    refuse to start (kafka-python: delivery_timeout_ms must exceed linger_ms +
    request_timeout_ms): `pitlog simulate --log kafka://...?timeout_s=10` failed. The request
    timeout now shrinks with it (events/log/kafka/settings.producer_settings)."""
    with open_log(f"{kafka_uri}?timeout_s={timeout_s}", partitions=1) as log:
        recorder = Recorder(log, heads={})
        recorder.record("T01", model.DealerTappedIn(dealer_id="D1"), shoe_id=None,
                        round_no=None, actor="pit", occurred_at=START)
        recorder.flush()
        assert [codec.decode(r.value).seq for b in log.read() for r in b] == [1]
        bootstrap, topic = kafka_uri.removeprefix("kafka://").split("/", 1)
        with duckdb.connect() as con:
            create_tables(con)
            raise_in_db(con, range(1, 3))
            # The log's own sink, as a follower opens it: it took neither the address's
            # timeout nor the log's settings (session 43); this test built the sink by hand.
            sink = log.alert_sink()
            assert isinstance(sink, KafkaAlertTopic)
            assert (sink.topic, sink.timeout_s) == (f"{topic}.alerts", timeout_s)
            assert publish_pending(con, sink) == 2
            sink.close()
        assert [a["alert_seq"] for _, a in read_alerts(bootstrap, f"{topic}.alerts")] == [1, 2]


def test_a_logs_alert_topic_clients_carry_the_addresss_client_id(kafka_uri: str) -> None:
    """`?client_id=` names every Kafka client of the log (docs/operating.md: broker logs,
    quotas, ACLs), but the log's alert sink named its producer `pitlog-alerts` and its reader
    kafka-python's default whatever the address said (a review of session 43: alert_sink
    passed the timeout and settings, not the client id)."""
    with open_log(f"{kafka_uri}?client_id=floor7", partitions=1) as log:
        sink = log.alert_sink()
        assert isinstance(sink, KafkaAlertTopic)
        try:
            reader, _ = sink._reader()  # noqa: SLF001 - as it reads the topic's tail
            try:
                ids = {"producer": sink._opened().config["client_id"],  # noqa: SLF001
                       "reader": reader.config["client_id"]}
            finally:
                reader.close()
        finally:
            sink.close()
    assert ids == {"producer": "floor7-alerts", "reader": "floor7-alerts-reader"}


def test_a_logs_alert_topic_is_made_with_the_event_topics_replicas(
        kafka_uri: str, request: pytest.FixtureRequest) -> None:
    """The alert topic was made with one replica whatever the event topic had (noticed in
    session 43): on a three-broker cluster the alerts were the one unreplicated record.
    This broker is one node, so a topic of one replica is all it can make: the log reads its
    event topic's replicas from the broker, and a sink asked for two is refused by it, which
    shows the count reaches the broker (before, the sink took no such count)."""
    with open_log(kafka_uri, partitions=1) as log:
        # as the broker describes the event topic (kafka-python's `replica_nodes`: read as
        # `replicas` at first, a key it does not have, the count was 0 and one replica made)
        assert log.replicas == 1
        sink = log.alert_sink()
        assert isinstance(sink, KafkaAlertTopic) and sink.replication_factor == 1
        sink.close()
    bootstrap = kafka_uri.removeprefix("kafka://").split("/", 1)[0]
    topic = f"{topic_for(request.node.name)}.alerts-two"
    two = KafkaAlertTopic(bootstrap, topic, timeout_s=10, replication_factor=2)
    with pytest.raises(LogError) as refused:  # at its first use: made then if it can be
        two.last()
    two.close()
    assert str(refused.value).startswith(f"cannot create the alert topic {topic} on "
                                         f"{bootstrap}: ")
    assert "InvalidReplicationFactor" in str(refused.value), refused.value
    assert str(refused.value).endswith("(and 2 brokers, one per replica)?"), refused.value


def test_an_alert_topic_not_yet_makeable_leaves_the_alerts_in_the_outbox(
        kafka_uri: str, tmp_path: Path) -> None:
    """An alert topic made with the event topic's replicas cannot be made while fewer brokers
    are up (three replicas, one broker of three restarting: the events are still written, with
    min.insync.replicas=2). The projector stopped there (`cannot create the alert topic`),
    though a sink that cannot take the alerts leaves them in the outbox and never stops the
    projection (projections/alerts.py, Publisher; a review of session 43). This broker is one
    node: an event topic said to have two replicas stands for that cluster."""
    from projections.alerts import _SINKS, sink_state
    from projections.projector import project

    with open_log(kafka_uri, partitions=1) as log:
        log.replicas = 2
        project(log, tmp_path / "p.duckdb")
        state = sink_state(log)
        assert state is not None and state["state"] == "failing", state
        assert "InvalidReplicationFactor" in state["error"], state
        sink = _SINKS[log]
        assert isinstance(sink, KafkaAlertTopic)
        with duckdb.connect() as con:
            create_tables(con)
            raise_in_db(con, range(1, 3))
            with pytest.raises(LogError, match="cannot create the alert topic"):
                publish_pending(con, sink)
            sink.replication_factor = 1  # the brokers are back: made at the next publish
            assert publish_pending(con, sink) == 2
        sink.close()
        bootstrap, topic = kafka_uri.removeprefix("kafka://").split("/", 1)
        assert [a["alert_seq"] for _, a in read_alerts(bootstrap, f"{topic}.alerts")] == [1, 2]

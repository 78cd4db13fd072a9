"""A broker restart must not hold alerts or events back once the broker is back (session 42).

Two stalls of kafka-python 3.0.12 (events/log/kafka/settings.py): a transactional producer that
tried to add a partition to its transaction while the broker was down never asked again, so a
publish (or a fenced append) begun during the outage waited out its delivery timeout, a minute,
however soon the broker was back; and every client waited up to 30 s between two attempts to
reach a broker that had been gone a while. Nothing here asserts how long anything took: the
first publish, or append, begun while the broker was down must succeed, each record landing
once; and a client's wait between attempts is bounded by its own settings. The broker is real
and of this module's own (it is stopped), nothing is mocked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
import pytest
from alert_support import raise_in_db
from kafka_support import dedicated_broker, read_alerts, topic_for

from events.log.kafka.alerts import KafkaAlertTopic
from events.log.registry import open_log
from events.recording.recorder import Recorder
from events.reddog import model
from events.wire import codec
from projections.alerts import create_tables, publish_pending

pytestmark = pytest.mark.kafka

START = datetime(2026, 12, 6, 21, 0, tzinfo=UTC)
# The sinks' and logs' timeout: what the publish or append begun during the outage may wait
# for the broker to be back (a restart takes seconds; generous for a loaded machine).
TIMEOUT_S = 90


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with dedicated_broker(tmp_path_factory.mktemp("broker")) as started:
        yield started


def _begun_while_down(broker: Any, fn: Callable[[], Any]) -> list[BaseException | None]:
    """Stop the broker, start fn in a thread, start the broker again (same ports and data);
    returns [fn's error or None] once fn returned."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's assertions
            outcome.append(exc)

    broker.stop()
    try:
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
    finally:
        broker.start()
    thread.join(TIMEOUT_S * 3)
    assert not thread.is_alive()
    return outcome


def test_an_alert_publish_begun_while_the_broker_is_down_lands_once_it_is_back(
        broker: Any, request: pytest.FixtureRequest) -> None:
    topic = f"{topic_for(request.node.name)}.alerts"
    with duckdb.connect() as con:
        create_tables(con)
        raise_in_db(con, range(1, 3))
        sink = KafkaAlertTopic(broker.bootstrap, topic, timeout_s=TIMEOUT_S)
        assert publish_pending(con, sink) == 2
        raise_in_db(con, range(3, 5))  # raised during the outage
        outcome = _begun_while_down(broker, lambda: publish_pending(con, sink))
        # The projector's first try after the commit delivered them: none waited for a later
        # batch's try (kafka-python's lost AddPartitionsToTxn failed this one at its delivery
        # timeout, whatever became of the broker meanwhile).
        assert outcome == [None]
        assert publish_pending(con, sink) == 0
        sink.close()
    assert [a["alert_seq"] for _, a in read_alerts(broker.bootstrap, topic)] == [1, 2, 3, 4]


def test_a_fenced_append_begun_while_the_broker_is_down_is_acknowledged_once_it_is_back(
        broker: Any, request: pytest.FixtureRequest) -> None:
    uri = (f"kafka://{broker.bootstrap}/{topic_for(request.node.name)}"
           f"?partitions=2&fencing=true&timeout_s={TIMEOUT_S}")
    with open_log(uri) as log:
        recorder = Recorder(log, heads={}, batch_size=10**9)  # flushed by hand

        def record(first: int, n: int) -> None:
            for i in range(first, first + n):
                recorder.record(f"T{i % 2:02d}", model.DealerTappedIn(dealer_id=f"D{i}"),
                                shoe_id=None, round_no=None, actor="pit",
                                occurred_at=START + timedelta(seconds=i))

        record(0, 4)
        recorder.flush()
        record(4, 4)
        outcome = _begun_while_down(broker, recorder.flush)
        assert outcome == [None]  # the first flush, not a retry after its timeout
        seqs: dict[str, list[int]] = {}
        for batch in log.read():
            for rec in batch:
                seqs.setdefault(rec.key.decode(), []).append(codec.decode(rec.value).seq)
    assert seqs == {"T00": [1, 2, 3, 4], "T01": [1, 2, 3, 4]}


def test_every_client_tries_a_gone_broker_again_within_a_second_however_long_it_was_gone(
        broker: Any, request: pytest.FixtureRequest) -> None:
    """kafka-python doubles the wait after each failed connect up to reconnect_backoff_max_ms
    (its default 30 s): after a restart of half a minute, the alert topic's producer reached
    the broker up to 30 s after it was back. The wait each real client would take after
    20 failures, as its own connection manager computes it (with its 20% jitter)."""
    uri = f"kafka://{broker.bootstrap}/{topic_for(request.node.name)}?partitions=1"

    def longest_wait_ms(client: Any) -> float:
        # The connection manager that keeps the client's backoff (a producer's, its sender's)
        manager = getattr(client, "_manager", None) or client._sender._client._manager  # noqa: SLF001
        return float(manager._calculate_exp_timeout("reconnect_backoff_ms", 20))  # noqa: SLF001

    sink = KafkaAlertTopic(broker.bootstrap, f"{topic_for(request.node.name)}.alerts")
    with open_log(uri) as log, open_log(f"{uri}&fencing=true") as fenced:
        log.append([(b"T01", b"not an event: opens the producer")])
        log.end_offsets()  # opens the reader
        fenced_recorder = Recorder(fenced, heads={})
        fenced_recorder.record("T02", model.DealerTappedIn(dealer_id="D2"), shoe_id=None,
                               round_no=None, actor="pit", occurred_at=START)
        fenced_recorder.flush()
        alert_reader, _ = sink._reader()  # noqa: SLF001 - as it reads the topic back
        clients = {"alert producer": sink._opened(),  # noqa: SLF001 - its producer
                   "alert reader": alert_reader,
                   "event producer": log._producer,  # noqa: SLF001
                   "event reader": log._consumer,  # noqa: SLF001
                   **{f"fenced writer {k!r}": w.producer  # noqa: SLF001
                      for k, w in fenced._fencing._writers.items()}}  # noqa: SLF001
        waits = {name: longest_wait_ms(c) for name, c in clients.items()}
        alert_reader.close()
    sink.close()
    assert len(waits) == 5
    # A second (events/log/kafka/settings.RECONNECT_BACKOFF_MAX_MS) and kafka-python's jitter
    assert all(ms <= 1000 * 1.2 for ms in waits.values()), waits

"""The ingest event id index (events/recording/event_ids.py) on Kafka: catch_up may take a
writer's own ids without reading them back only where one append writes a partition's records
in one run (the embedded log's writer lock). A Kafka producer's records are not one run: its
sends go out in many produce requests, and another producer's records land between them in a
shared partition (tables share partitions), while readers already see the first ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from table_builder import record_events

from events.log.kafka.log import KafkaLog
from events.recording.event_ids import EventIdIndex
from events.wire import codec

pytestmark = pytest.mark.kafka


def test_another_producers_record_between_a_writers_own_is_indexed(
        kafka_uri: str, tmp_path: Path) -> None:
    """The log as one ingest's append of a1..a3 leaves it when another producer's f1 lands
    between a2 and a3 and another process's index read a1 meanwhile (built here by separate
    appends, in that order, on the real broker). The 3 new records a2, f1, a3 are as many as
    the writer's 3, and the first and last are its own: catch_up took the writer's ids and never
    indexed f1, so a re-sent f1 would be recorded twice."""
    log = KafkaLog.from_uri(kafka_uri, partitions=1, create=True)
    try:
        index = EventIdIndex(log, tmp_path / "ids.sqlite")
        other = EventIdIndex(log, tmp_path / "ids.sqlite")  # another process, the same file
        record_events(log, {"T01": 1}, "a")  # a1 (the writer's append begins) ...
        assert other.catch_up() == 1  # ... another process indexes it ...
        record_events(log, {"T01": 1}, "b")  # ... a2 ...
        record_events(log, {"T02": 1}, "f")  # ... the other producer's f1 ...
        record_events(log, {"T01": 1}, "c")  # ... and a3
        ids = [codec.decode(r.value).event_id for batch in log.read() for r in batch]
        assert ids == ["a1", "b1", "f1", "c1"]
        index.catch_up([("T01", "a1"), ("T01", "b1"), ("T01", "c1")])
        assert index.recorded("T02", "f1")
        index.close()
        other.close()
    finally:
        log.close()

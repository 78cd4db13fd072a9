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


class CountingKafkaLog(KafkaLog):
    """A Kafka log counting the records its reads hand over."""

    records_read = 0

    def read(self, start=None, *, max_batch=5000):  # type: ignore[no-untyped-def]
        for batch in super().read(start, max_batch=max_batch):
            self.records_read += len(batch)
            yield batch


def _lines(table: str, first: int, n: int) -> bytes:
    import json

    return b"".join(json.dumps({
        "type": "DealerTappedIn", "table": table, "seq": first + i, "actor": "TERM-1",
        "at": f"2026-11-28T22:{(first + i) // 60 % 60:02d}:{(first + i) % 60:02d}Z",
        "dealer_id": f"D-{first + i}"}).encode() + b"\n" for i in range(n))


def test_ingest_on_a_topic_without_fencing_reads_the_heads_from_the_index_not_the_topic(
        kafka_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each `pitlog ingest` of a Kafka topic without fencing read the whole topic for the
    table heads (issue 16). The id index keeps them, current with what it has read: a second
    ingest reads only the records appended since (another writer's 40), its own 5 read back
    and the index's check, and the tables' chains continue gaplessly (pitlog verify)."""
    import io

    from events.integrity.verify import verify_log
    from events.recording.ingest import ingest

    monkeypatch.chdir(tmp_path)  # the index: pitlog-data/kafka-TOPIC-event-ids.sqlite
    base = KafkaLog.from_uri(kafka_uri, partitions=2, create=True)
    base.close()

    def run(lines: bytes) -> int:
        log = CountingKafkaLog.from_uri(kafka_uri)
        try:
            report = ingest(io.BytesIO(lines), log, source="t", quarantine=tmp_path / "q")
            assert report.rejected == 0 and report.recorded == lines.count(b"\n")
            return log.records_read
        finally:
            log.close()

    run(_lines("T01", 1, 30) + _lines("T02", 1, 30))
    other = KafkaLog.from_uri(kafka_uri)
    try:
        record_events(other, {"T03": 20, "T01": 20}, "o")  # a writer that keeps no index
    finally:
        other.close()
    # the index's check of its last record in each of the 2 partitions, the other writer's 40,
    # its own 5 read back; the heads' read of the whole topic was 100 more
    assert run(_lines("T01", 31, 3) + _lines("T02", 31, 2)) == 2 + 40 + 5
    log = KafkaLog.from_uri(kafka_uri)
    try:
        assert verify_log(log).ok
        seqs = {}
        for batch in log.read():
            for r in batch:
                seqs.setdefault(r.key, []).append(codec.decode(r.value).seq)
        assert seqs[b"T01"] == list(range(1, 54)) and seqs[b"T02"] == list(range(1, 33))
    finally:
        log.close()

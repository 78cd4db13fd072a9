"""The EventLog contract: one test class, run against the embedded log and a real Kafka broker.

Like eventsourcing's persistence tests, the backends must be interchangeable: the same appends
give the same per-partition sequences, the same reads from a checkpoint, and, through the
simulator and the projector, the same views.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka_support import POSITION_COLUMNS, WALL_CLOCK_COLUMNS, content_digests

from events.log.base import EventLog, LogRecord
from events.log.embedded.log import EmbeddedLog
from events.log.registry import open_log
from events.simulation.simulator import SimConfig, simulate
from projections.projector import project

PARTITIONS = 4
SIM = SimConfig(seed=11, tables=6, rounds=40, irregularities=0.02)


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def event_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventLog]:
    """A fresh, empty log of 4 partitions on each backend, opened through `open_log`."""
    if request.param == "embedded":
        uri = f"file://{tmp_path / 'log'}"
    else:
        uri = request.getfixturevalue("kafka_uri")
    log = open_log(uri, partitions=PARTITIONS)
    try:
        yield log
    finally:
        log.close()


# What differs by backend and says nothing of the table: log positions, wall-clock stamps, the
# order alerts were raised in (it follows each backend's batches) and where alerts were published.
BACKEND_COLUMNS = (*POSITION_COLUMNS, *WALL_CLOCK_COLUMNS, "alert_seq")
BACKEND_TABLES = ("checkpoints", "anomalies_stored_at", "alerts_outbox",
                  "round_money_at", "running_sums_at")


@pytest.fixture(scope="module")
def reference_digests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    """The simulated evening projected from the embedded log: what every backend must give."""
    folder = tmp_path_factory.mktemp("reference")
    with EmbeddedLog(folder / "log", partitions=PARTITIONS) as log:
        simulate(log, SIM)
        project(log, folder / "ref.duckdb")
    return content_digests(folder / "ref.duckdb", exclude=BACKEND_COLUMNS, skip=BACKEND_TABLES)


def _items(n: int, tables: int = 5, tag: str = "") -> list[tuple[bytes, bytes]]:
    return [(f"T{i % tables:02d}".encode(), f"{tag}event-{i:05d}".encode() * 4) for i in range(n)]


def _records(log: EventLog, start: dict[int, int] | None = None,
             max_batch: int = 5000) -> list[LogRecord]:
    return [rec for batch in log.read(start, max_batch=max_batch) for rec in batch]


class TestEventLogContract:
    """Every backend of events.log.base.EventLog passes these tests unchanged."""

    def test_append_returns_gapless_offsets_per_partition(self, event_log: EventLog) -> None:
        first = event_log.append(_items(60, tables=12))
        second = event_log.append(_items(25, tables=12, tag="b"))
        for p in range(PARTITIONS):
            offsets = [o for part, o in first + second if part == p]
            assert offsets == list(range(len(offsets)))
        assert {p for p, _ in first} <= set(range(PARTITIONS))
        ends = event_log.end_offsets()
        assert sum(ends.values()) == 85
        assert ends == {p: sum(1 for part, _ in first + second if part == p)
                        for p in range(PARTITIONS)}

    def test_each_table_keeps_its_order_in_one_partition(self, event_log: EventLog) -> None:
        items = _items(200, tables=7)
        positions = event_log.append(items)
        by_key: dict[bytes, list[bytes]] = defaultdict(list)
        partitions_of: dict[bytes, set[int]] = defaultdict(set)
        for rec in _records(event_log):
            by_key[rec.key].append(rec.value)
            partitions_of[rec.key].add(rec.partition)
        for key, values in by_key.items():
            assert values == [v for k, v in items if k == key]
            assert len(partitions_of[key]) == 1
        # The positions append reported are where the records really are.
        stored = {(r.partition, r.offset): r.value for r in _records(event_log)}
        assert [stored[pos] for pos in positions] == [v for _, v in items]

    def test_batches_hold_one_partition_in_order_and_at_most_max_batch(
            self, event_log: EventLog) -> None:
        event_log.append(_items(300, tables=9))
        seen: dict[int, int] = {}
        for batch in event_log.read(max_batch=17):
            assert 1 <= len(batch) <= 17
            assert len({r.partition for r in batch}) == 1
            p = batch[0].partition
            offsets = [r.offset for r in batch]
            assert offsets == list(range(seen.get(p, 0), seen.get(p, 0) + len(batch)))
            seen[p] = offsets[-1] + 1
        assert seen == {p: n for p, n in event_log.end_offsets().items() if n}

    def test_read_from_a_checkpoint_returns_exactly_the_later_records(
            self, event_log: EventLog) -> None:
        items = _items(120, tables=10)
        event_log.append(items)
        everything = _records(event_log)
        ends = event_log.end_offsets()
        checkpoint = {p: end // 2 for p, end in ends.items()}
        checkpoint[max(ends, key=lambda p: ends[p])] = 0  # one partition from the very start
        later = _records(event_log, checkpoint, max_batch=7)
        expected = [r for r in everything if r.offset >= checkpoint[r.partition]]
        assert sorted(later, key=lambda r: (r.partition, r.offset)) == \
            sorted(expected, key=lambda r: (r.partition, r.offset))
        assert len(later) == sum(ends[p] - checkpoint[p] for p in ends)
        # A checkpoint at the end reads nothing, and reading twice gives the same records.
        assert _records(event_log, ends) == []
        assert _records(event_log, checkpoint, max_batch=7) == later

    def test_read_stops_at_the_end_as_of_the_call(self, event_log: EventLog) -> None:
        event_log.append(_items(50, tables=4))
        before = event_log.end_offsets()
        reading = event_log.read(max_batch=5)
        first = next(reading)
        event_log.append(_items(30, tables=4, tag="late"))
        rest = [r for batch in reading for r in batch]
        got = first + rest
        assert len(got) == 50
        assert all(r.offset < before[r.partition] for r in got)
        assert not any(r.value.startswith(b"late") for r in got)
        assert len(_records(event_log, before)) == 30  # the next read picks them up

    def test_a_reopened_log_sees_every_record(self, event_log: EventLog) -> None:
        items = _items(90, tables=6)
        event_log.append(items)
        before = _records(event_log)
        uri = event_log.uri
        event_log.close()
        ends = _ends_of(before, PARTITIONS)
        with open_log(uri) as reopened:
            assert reopened.end_offsets() == ends
            assert _records(reopened) == before
            # Appending continues each partition where it ended, and T00 stays where it was.
            p = _partition_of(before, b"T00")
            assert reopened.append([(b"T00", b"after-reopen")]) == [(p, ends[p])]

    def test_many_tables_spread_over_every_partition(self, event_log: EventLog) -> None:
        keys = [f"T{i:03d}".encode() for i in range(64)]
        event_log.append([(k, b"opened") for k in keys])
        partition_of = {r.key: r.partition for r in _records(event_log)}
        assert set(partition_of) == set(keys)
        assert set(partition_of.values()) == set(range(PARTITIONS))
        counts = event_log.end_offsets()
        assert min(counts.values()) >= 4  # no partition starved: 64 keys over 4 partitions

    def test_an_empty_log_reads_nothing(self, event_log: EventLog) -> None:
        assert event_log.end_offsets() == dict.fromkeys(range(PARTITIONS), 0)
        assert list(event_log.read()) == []
        assert list(event_log.read({0: 0, 1: 0})) == []
        assert event_log.append([]) == []

    def test_simulated_evening_projects_to_the_same_views_on_every_backend(
            self, event_log: EventLog, tmp_path: Path,
            reference_digests: dict[str, tuple[int, str]]) -> None:
        report = simulate(event_log, SIM)
        projected = project(event_log, tmp_path / "views.duckdb")
        assert projected.events == report.events
        assert projected.quarantined == 0
        assert projected.positions == event_log.end_offsets()
        digests = content_digests(tmp_path / "views.duckdb", exclude=BACKEND_COLUMNS,
                                  skip=BACKEND_TABLES)
        assert digests["events"][0] == report.events
        assert {"events", "hands", "shoes", "timeline"} <= set(digests)
        assert digests == reference_digests


def _ends_of(records: list[LogRecord], partitions: int) -> dict[int, int]:
    ends = dict.fromkeys(range(partitions), 0)
    for r in records:
        ends[r.partition] = max(ends[r.partition], r.offset + 1)
    return ends


def _partition_of(records: list[LogRecord], key: bytes) -> int:
    return next(r.partition for r in records if r.key == key)

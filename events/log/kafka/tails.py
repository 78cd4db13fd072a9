"""Reading where a Kafka topic ends: each table's last committed record, and the last record a
reader can see. Used by the writer fencing (events/log/kafka/fencing.py) and
`KafkaLog.end_offsets`.

Two offsets matter with transactions. The high watermark (HW) is the end of everything written;
the last stable offset (LSO) is where the first still-open transaction starts, and a
``read_committed`` consumer reads only below it. A writer that must see every record committed
before some instant reads the HW *after* that instant, waits until the LSO reaches it (every
transaction with records below it is then committed or aborted), and reads up to it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError
from kafka.partitioner.default import murmur2

from events.errors import DecodeError, LogError
from events.log.base import LogRecord
from events.wire import codec

# KafkaLog's reader: (consumer, {partition: (first, end)}) -> batches of records.
RangeReader = Callable[[KafkaConsumer, dict[int, tuple[int, int]]], Iterator[list[LogRecord]]]
Seen = list[tuple[int, bytes]]  # (offset, value) of one key's records read
# These consumers read short ranges and then ask for offsets on the same connection, where a
# request waits behind a fetch the broker holds open (500 ms by default) when there is no data.
SHORT_FETCH_WAIT_MS = 20


def partition_of(key: bytes, partitions: int) -> int:
    """The partition kafka-python's and Java's default partitioner give a keyed record."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def is_event(value: bytes) -> bool:
    """Is it a pitlog event? Others (a foreign producer's) are skipped, as scan_heads does."""
    try:
        codec.decode(value)
    except DecodeError:
        return False
    return True


@dataclass(slots=True)
class TailCache:
    """Each key's last committed value, as far as this process has read or written.

    `upto[p]`: every key of partition p is current below this offset (read from there on);
    `through[p][key]`: this key is current below this later offset (its own commits, or a read
    of that key only). A record older than what a key is current to never replaces its value."""

    value: dict[bytes, bytes] = field(default_factory=dict)
    upto: dict[int, int] = field(default_factory=dict)
    through: dict[int, dict[bytes, int]] = field(default_factory=dict)

    def current_to(self, p: int, key: bytes) -> int:
        return max(self.upto.get(p, 0), self.through.get(p, {}).get(key, 0))

    def absorb(self, p: int, start: int, end: int, batches: Iterable[list[LogRecord]],
               watch: Iterable[bytes]) -> dict[bytes, Seen]:
        """Take in the records of partition p in [start, end); return those of `watch`."""
        base, through = self.upto.get(p, 0), self.through.setdefault(p, {})
        seen: dict[bytes, Seen] = {k: [] for k in watch}
        for batch in batches:
            for rec in batch:
                if rec.offset >= max(base, through.get(rec.key, 0)):
                    self.value[rec.key] = rec.value
                if rec.key in seen:
                    seen[rec.key].append((rec.offset, rec.value))
        if start <= base:  # read from where every key was current: all are current to `end`
            self.upto[p] = max(base, end)
            for k in [k for k, o in through.items() if o <= end]:
                del through[k]
        else:  # each watched key was current to `start` or later
            for k in seen:
                through[k] = max(through.get(k, 0), end)
        return seen

    def committed(self, p: int, key: bytes, value: bytes, offset: int) -> None:
        """This process appended `value` at `offset`: the key's last record now."""
        self.value[key] = value
        through = self.through.setdefault(p, {})
        through[key] = max(through.get(key, 0), offset + 1)


class TailReader:
    """Reads tables' last committed records into a TailCache, with its own two consumers."""

    def __init__(self, *, bootstrap: str, topic: str, partitions: int, timeout_s: float,
                 client_id: str, consumer_config: Mapping[str, Any],
                 read_ranges: RangeReader) -> None:
        self.bootstrap, self.topic, self.n_partitions = bootstrap, topic, partitions
        self.timeout_s, self.client_id = timeout_s, client_id
        self._consumer_config = dict(consumer_config)
        self._read_ranges = read_ranges
        self.cache = TailCache()
        self._committed: KafkaConsumer | None = None  # read_committed: LSO, and the records
        self._watermark: KafkaConsumer | None = None  # read_uncommitted: the high watermark

    def _readers(self) -> tuple[KafkaConsumer, KafkaConsumer]:
        if self._committed is None or self._watermark is None:
            common = {**self._consumer_config, "bootstrap_servers": self.bootstrap.split(","),
                      "bootstrap_timeout_ms": min(int(self.timeout_s * 1000), 30_000),
                      "fetch_max_wait_ms": SHORT_FETCH_WAIT_MS}
            self._committed = KafkaConsumer(client_id=f"{self.client_id}-tails", **{
                **common, "isolation_level": "read_committed"})
            self._watermark = KafkaConsumer(client_id=f"{self.client_id}-watermark", **{
                **common, "isolation_level": "read_uncommitted"})
        return self._committed, self._watermark

    def stable_end(self, p: int, deadline: float, *, patience: float | None = None) -> int | None:
        """The partition's high watermark as of now, once every transaction with records below
        it is decided (the LSO reached it); None if that takes longer than `patience`."""
        tp = TopicPartition(self.topic, p)
        give_up = deadline if patience is None else min(deadline, time.monotonic() + patience)
        committed, watermark = self._readers()
        high: int | None = None
        pause, error = 0.005, ""
        while True:
            try:
                if high is None:
                    high = int(watermark.end_offsets([tp], timeout_ms=10_000)[tp])
                if int(committed.end_offsets([tp], timeout_ms=10_000)[tp]) >= high:
                    return high
                error = f"a transaction is still open below offset {high}"
            except KafkaError as exc:
                error = str(exc)
            if time.monotonic() > give_up:
                if patience is not None:
                    return None
                raise LogError(f"topic {self.topic} partition {p} did not become readable up "
                               f"to its end in time ({error}); a writer that died "
                               f"mid-transaction is aborted after its transaction timeout, or "
                               f"at once when a writer of the same table starts")
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

    def wait_visible(self, spans: Mapping[int, tuple[int, int]], patience: float) -> bool:
        """Wait until readers see the records just committed, `spans` = {partition: (first,
        end)}: a commit returns before its markers are written, and until then the LSO stays
        inside the transaction. Not for an LSO held below `first` by another writer's open
        transaction: that is theirs to finish. False if the wait was given up."""
        tps = {TopicPartition(self.topic, p): span for p, span in spans.items()}
        give_up, pause = time.monotonic() + patience, 0.002
        while True:
            try:
                stable = self._readers()[0].end_offsets(list(tps), timeout_ms=10_000)
                if all(not first <= stable[tp] < end for tp, (first, end) in tps.items()):
                    return all(stable[tp] >= end for tp, (_, end) in tps.items())
            except KafkaError:
                pass
            if time.monotonic() > give_up:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def refresh(self, p: int, end: int, watch: Sequence[bytes]) -> dict[bytes, Seen]:
        """Read partition p up to `end` from where `watch` (or, if empty, every key) is current;
        return the watched keys' records read."""
        start = min((self.cache.current_to(p, k) for k in watch),
                    default=self.cache.upto.get(p, 0))
        batches: Iterable[list[LogRecord]] = ()
        if start < end:
            batches = self._read_ranges(self._readers()[0], {p: (start, end)})
        return self.cache.absorb(p, start, end, batches, watch)

    def last_event(self, key: bytes) -> bytes | None:
        """The key's last committed record that is a pitlog event (rare: its last is not)."""
        p = partition_of(key, self.n_partitions)
        found: bytes | None = None
        for batch in self._read_ranges(self._readers()[0], {p: (0, self.cache.current_to(p, key))}):
            for rec in batch:
                if rec.key == key and is_event(rec.value):
                    found = rec.value
        return found

    def last_values(self, partitions: Sequence[int]) -> dict[bytes, bytes]:
        """Each key's last committed value in these partitions, up to their LSOs (without
        waiting for open transactions: a writer re-reads its tables when it opens them)."""
        tps = [TopicPartition(self.topic, p) for p in partitions]
        try:
            stable = self._readers()[0].end_offsets(tps, timeout_ms=int(self.timeout_s * 1000))
        except KafkaError as exc:
            raise LogError(f"cannot read the end offsets of topic {self.topic} on "
                           f"{self.bootstrap}: {exc}; is the broker up?") from exc
        for tp in tps:  # every record below the LSO is decided: the cache may stop there
            self.refresh(tp.partition, int(stable[tp]), [])
        wanted = set(partitions)
        return {k: v for k, v in self.cache.value.items()
                if partition_of(k, self.n_partitions) in wanted}

    def close(self) -> None:
        for reader in (self._committed, self._watermark):
            if reader is not None:
                reader.close(autocommit=False)
        self._committed = self._watermark = None


class VisibleEnds:
    """Per partition, 1 + the offset of the last record below the LSO that a reader can see.

    A partition written with transactions ends with a commit marker (an offset that holds no
    record), and perhaps an aborted transaction: `KafkaLog.end_offsets` reports the end after
    its last visible record, so a projector that read every record is exactly at the end, as
    with the embedded log. Found by reading back from the LSO in widening steps, down to where
    the last call left off."""

    def __init__(self, new_consumer: Callable[[], KafkaConsumer],
                 read_ranges: RangeReader) -> None:
        self._new_consumer, self._read_ranges = new_consumer, read_ranges
        self._consumer: KafkaConsumer | None = None
        self._known: dict[int, tuple[int, int]] = {}  # partition -> (LSO, visible end)

    def end(self, p: int, stable: int) -> int:
        known_stable, known_end = self._known.get(p, (0, 0))
        if known_stable == stable:
            return known_end
        if known_stable > stable:  # the topic was recreated: start over
            known_stable, known_end = 0, 0
        if self._consumer is None:
            self._consumer = self._new_consumer()
        width, end = 16, None
        while end is None:
            first = max(known_stable, stable - width)
            for batch in self._read_ranges(self._consumer, {p: (first, stable)}):
                end = batch[-1].offset + 1
            if end is None and first == known_stable:
                end = known_end  # nothing visible since the last call
            width *= 8
        self._known[p] = (stable, end)
        return end

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close(autocommit=False)
            self._consumer = None

"""Writer concurrency on Kafka: compare-and-append per table, by transactional-producer fencing.

`KafkaLog.append_expecting(items, expected)` appends a table's events only if the table's last
committed event still ends with `expected[table]` (the hash the recorder's batch continues from;
None: the table has no events), else ConcurrencyError: the contract of the embedded log's
method of the same name (issue 6, point 5; docs/integrity.md).

How. Each table has one transactional.id, ``pitlog.<topic>.<table>``, and every writer of the
table appends through a transactional producer with that id, so the broker lets at most one of
them hold the table at a time:

1. Open (first append of a table in this process, or after a failure): a producer with the id
   calls `init_transactions`. The transaction coordinator bumps the id's epoch, which fences
   every older producer of the id (their later sends and commits fail), aborts an open
   transaction of theirs and waits for one being committed to finish. Then this writer waits
   until the partition's last stable offset (LSO) reaches its high watermark as of now (every
   transaction with records below it is decided) and reads the table's last committed record
   up to there, with a ``read_committed`` consumer, from where it last looked.
2. Check: each table's last record must end with the expected hash, else ConcurrencyError
   before anything is sent.
3. Write: one transaction per table: begin, send, flush, commit; then the table's cached last
   record is the batch's last one.

Why it holds. A commit succeeds only if the coordinator handles the EndTxn while the
producer's epoch is the newest. Take a commit by writer A of table T. Every producer of T that
called init_transactions before A is fenced for good, and none called it after A did and before
A's commit (that would have fenced A). So the records of T committed before A's commit are: the
ones committed before A's init_transactions returned, which A read in step 1 (the init waited
for them to be decided, and the read went up to a stable offset past them), plus A's own
commits, which A cached. So A's check in step 2 was against the true last record, and no one
else can commit between the check and A's commit: compare-and-append per table. The loser of
a race (fenced, or finding a new last record) gets ConcurrencyError, and nothing of its batch
becomes visible: a fenced or aborted transaction is skipped by every ``read_committed`` reader,
and every pitlog reader is one (events/kafka_log.py, consumer_settings).

The hot path reads nothing: while a writer holds a table, no one else can commit to it, so its
cache is exact. Only opening (or a failure) reads the log, and only what is new since the last
look (per partition) or since this writer's own last commit (per table).

Failures. After any error inside a transaction the producer is discarded (kafka-python may have
bumped its epoch or kept records for a later transaction), and the batch's fate is settled by
reading the log: when the error says the producer was fenced, this writer first waits for the
partition to be stable and reads, without fencing anyone back; otherwise (or if that is
inconclusive) it opens the table again (step 1). Then: the batch's last record is on the log
-> it was committed (a commit whose reply was lost): success; the table's last record is still
the expected one -> nothing happened: retry, until `timeout_s`; else -> ConcurrencyError.

Tables of one batch are separate transactions (one transactional.id each): a conflict found
before anything is committed appends nothing (checks first; a failed send aborts every
transaction of the batch), but a fence that lands while the batch's transactions commit one by
one can leave some tables appended and others not. Then ConcurrencyError.recorded names the
tables whose events were appended; the recorder keeps those and drops the rest.

Only writers that go through `append_expecting` are fenced: a plain `KafkaLog.append` (the
benchmarks) or a foreign producer on the topic is not, so run those only on tables no recorder
writes. Records that are not pitlog events (a foreign producer's) are skipped when looking for a
table's last record, as `events.recorder.scan_heads` skips them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from kafka.partitioner.default import murmur2

from events import codec
from events.errors import ConcurrencyError, DecodeError, LogError
from events.log import LogRecord

# The reader of KafkaLog: (consumer, {partition: (first, end)}) -> batches of records.
RangeReader = Callable[[KafkaConsumer, dict[int, tuple[int, int]]], Iterator[list[LogRecord]]]
# Broker default transaction.timeout.ms: an open transaction of a writer that died blocks the
# readers of its partition at most this long (a new writer of the same table aborts it at once).
TRANSACTION_TIMEOUT_MS = 60_000
FENCED_PATIENCE_S = 5.0  # fenced: how long to wait for the partition to be stable, not re-open
# A table's next transaction waits for the markers of its last one (CONCURRENT_TRANSACTIONS):
# retry sooner than kafka-python's 100 ms default, which capped small batches at ~9 a second.
RETRY_BACKOFF_MS = 20


def partition_of(key: bytes, partitions: int) -> int:
    """The partition kafka-python's and Java's default partitioner give a keyed record."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def transactional_id(topic: str, key: bytes) -> str:
    """One id per table of a topic: every writer of the table shares it, so they fence."""
    try:
        table = key.decode("utf-8")
    except UnicodeDecodeError:
        table = "0x" + key.hex()
    return f"pitlog.{topic}.{table}"


class Outcome(Enum):
    COMMITTED = "committed"  # the batch's last record is on the log
    SAME = "same"  # the table's last record is still the expected one: nothing happened
    MOVED = "moved"  # another writer appended: conflict


@dataclass(slots=True)
class _Tails:
    """Each key's last committed value, as far as this writer has read or written.

    `upto[p]`: every key of partition p is current below this offset (read from there on);
    `through[p][key]`: this key is current below this later offset (its own commits, or a read
    of that key only). A record older than what a key is current to never replaces its value."""

    value: dict[bytes, bytes] = field(default_factory=dict)
    upto: dict[int, int] = field(default_factory=dict)
    through: dict[int, dict[bytes, int]] = field(default_factory=dict)

    def current_to(self, p: int, key: bytes) -> int:
        return max(self.upto.get(p, 0), self.through.get(p, {}).get(key, 0))

    def absorb(self, p: int, start: int, end: int, batches: Iterable[list[LogRecord]],
               watch: Iterable[bytes]) -> dict[bytes, list[tuple[int, bytes]]]:
        """Take in the records of partition p in [start, end); return those of `watch`."""
        base, through = self.upto.get(p, 0), self.through.setdefault(p, {})
        seen: dict[bytes, list[tuple[int, bytes]]] = {k: [] for k in watch}
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
        """This writer committed `value` at `offset`, the key's last record."""
        self.value[key] = value
        through = self.through.setdefault(p, {})
        through[key] = max(through.get(key, 0), offset + 1)


@dataclass(slots=True)
class _Writer:
    producer: KafkaProducer
    partition: int


def _ends_with(value: bytes | None, tail: bytes | None) -> bool:
    return value is None if tail is None else value is not None and value.endswith(tail)


def _is_event(value: bytes) -> bool:
    try:
        codec.decode(value)
    except DecodeError:
        return False
    return True


def _looks_fenced(producer: KafkaProducer, exc: BaseException) -> bool:
    """Did another writer of the table take over? kafka-python reports it in several ways
    (ProducerFencedError, InvalidProducerEpochError, or an epoch bump under way)."""
    manager = getattr(producer, "_transaction_manager", None)
    last = getattr(manager, "last_error", None)
    state = getattr(getattr(manager, "_current_state", None), "name", "")
    text = f"{type(exc).__name__} {exc} {type(last).__name__} {last} {state}"
    return any(s in text for s in ("Fenced", "InvalidProducerEpoch", "BUMPING_PRODUCER_EPOCH"))


def _discard(producer: KafkaProducer) -> None:
    """Close without waiting: its records belong to a transaction that will never commit."""
    try:
        producer.close(timeout=0)
    except KafkaError:  # unfinished batches: stop its sender thread anyway (kafka-python 3.0.12)
        sender = getattr(producer, "_sender", None)
        if sender is not None:
            sender.force_close()
        producer._closed = True  # noqa: SLF001 - no public way to give up on a stuck producer


def _name(key: bytes) -> str:
    return key.decode("utf-8", "backslashreplace")


class TableFencing:
    """The transactional writers of one KafkaLog; see the module docstring."""

    def __init__(self, *, bootstrap: str, topic: str, partitions: int, timeout_s: float,
                 client_id: str, producer_config: Mapping[str, Any],
                 consumer_config: Mapping[str, Any], read_ranges: RangeReader) -> None:
        self.bootstrap, self.topic, self.n_partitions = bootstrap, topic, partitions
        self.timeout_s, self.client_id = timeout_s, client_id
        self._producer_config = dict(producer_config)
        self._consumer_config = dict(consumer_config)
        self._read_ranges = read_ranges
        self._writers: dict[bytes, _Writer] = {}
        self._tails = _Tails()
        self._committed_reader: KafkaConsumer | None = None  # read_committed: LSO, records
        self._watermark_reader: KafkaConsumer | None = None  # read_uncommitted: high watermark
        self.opened = 0  # producers initialised (each fenced the table's previous writer)

    # --- appending ------------------------------------------------------------------------------

    def append_expecting(self, items: Sequence[tuple[bytes, bytes]],
                         expected: Mapping[bytes, bytes | None] | None
                         ) -> list[tuple[int, int]]:
        expected = expected or {}
        deadline = time.monotonic() + self.timeout_s
        by_key: dict[bytes, list[int]] = {}
        for i, (key, _) in enumerate(items):
            by_key.setdefault(key, []).append(i)
        last = {key: items[idx[-1]][1] for key, idx in by_key.items()}
        result: list[tuple[int, int]] = [(-1, -1)] * len(items)
        recorded: list[bytes] = []
        todo = list(by_key)
        attempt = 0

        def done(key: bytes, offsets: Sequence[int]) -> None:
            p = partition_of(key, self.n_partitions)
            for i, offset in zip(by_key[key], offsets, strict=True):
                result[i] = (p, offset)
            recorded.append(key)
            todo.remove(key)

        def settled(key: bytes, outcome: Outcome, seen: Sequence[tuple[int, bytes]]) -> bool:
            """Record a COMMITTED outcome; True when it is a conflict."""
            if outcome is Outcome.COMMITTED:
                done(key, self._offsets_in(seen, [items[i][1] for i in by_key[key]]))
            return outcome is Outcome.MOVED

        in_txn: list[bytes] = []  # open transactions, aborted if this call fails half-way
        try:
            while True:
                # 1-2. Open the tables not held yet, then check every table before sending.
                seen = {k: self._open(k, deadline) for k in todo if k not in self._writers}
                moved = [key for key in list(todo) if settled(
                    key, *self._classify(key, last[key], seen.get(key, ()), expected))]
                if moved:
                    raise self._conflict(moved, recorded)
                if not todo:
                    return result
                # 3. One transaction per table: send all, flush all, settle failures, commit.
                futures: dict[bytes, list[Any]] = {}
                failed: dict[bytes, BaseException] = {}
                for key in todo:
                    writer = self._writers[key]
                    try:
                        writer.producer.begin_transaction()
                        in_txn.append(key)
                        futures[key] = [
                            writer.producer.send(self.topic, key=key, value=items[i][1],
                                                 partition=writer.partition)
                            for i in by_key[key]]
                    except KafkaError as exc:
                        failed[key] = exc
                for key, fs in futures.items():
                    try:
                        self._writers[key].producer.flush(
                            timeout=max(1.0, deadline - time.monotonic()))
                        for f in fs:
                            f.get(timeout=0)
                    except KafkaError as exc:
                        failed[key] = exc
                for key in failed:  # _settle discards the producer, and its transaction
                    if key in in_txn:
                        in_txn.remove(key)
                moved = [key for key, exc in failed.items()
                         if settled(key, *self._settle(key, exc, last[key], expected, deadline))]
                if moved:
                    raise self._conflict(moved, recorded)
                for key in [k for k in futures if k not in failed]:
                    writer = self._writers[key]
                    in_txn.remove(key)
                    try:
                        writer.producer.commit_transaction()
                    except KafkaError as exc:
                        if settled(key, *self._settle(key, exc, last[key], expected, deadline)):
                            raise self._conflict([key], recorded) from exc
                        continue
                    offsets = [f.get(timeout=0).offset for f in futures[key]]
                    self._tails.committed(writer.partition, key, last[key], offsets[-1])
                    done(key, offsets)
                if not todo:
                    return result
                attempt += 1  # a transient failure: those tables are open again; retry them
                if time.monotonic() > deadline:
                    raise LogError(
                        f"append to topic {self.topic} on {self.bootstrap}: tables "
                        f"{', '.join(_name(k) for k in todo)} still failing after {attempt} "
                        f"attempts in {self.timeout_s:.0f}s (last: {failed}); nothing of theirs "
                        f"is committed (of the batch's other tables: "
                        f"{', '.join(_name(k) for k in recorded) or 'none'}); is the broker up? "
                        f"Retry the flush")
                time.sleep(random.uniform(0, min(1.0, 0.02 * 2 ** attempt)))
        finally:
            self._abort([k for k in in_txn if k in self._writers])

    def _classify(self, key: bytes, last: bytes, seen: Sequence[tuple[int, bytes]],
                  expected: Mapping[bytes, bytes | None]) -> tuple[Outcome, Sequence[
                      tuple[int, bytes]]]:
        if any(value == last for _, value in seen):
            return Outcome.COMMITTED, seen
        if key not in expected or self._continues(key, expected[key]):
            return Outcome.SAME, seen
        return Outcome.MOVED, seen

    def _continues(self, key: bytes, tail: bytes | None) -> bool:
        value = self._tails.value.get(key)
        if _ends_with(value, tail):
            return True
        if value is not None and not _is_event(value):  # a foreign record: skip it
            return _ends_with(self._last_event(key), tail)
        return False

    @staticmethod
    def _offsets_in(seen: Sequence[tuple[int, bytes]], values: Sequence[bytes]) -> list[int]:
        where = {value: offset for offset, value in seen}
        return [where.get(v, -1) for v in values]

    def _settle(self, key: bytes, exc: BaseException, last: bytes,
                expected: Mapping[bytes, bytes | None], deadline: float
                ) -> tuple[Outcome, Sequence[tuple[int, bytes]]]:
        """A transaction of `key` failed: find out from the log what became of it."""
        writer = self._writers.pop(key)
        fenced = _looks_fenced(writer.producer, exc)
        _discard(writer.producer)
        if fenced:  # the new holder decides our transaction: read once it is, fence no one
            end = self._stable_end(writer.partition, deadline, patience=FENCED_PATIENCE_S)
            if end is not None:
                outcome, seen = self._classify(
                    key, last, self._refresh(writer.partition, end, [key])[key], expected)
                if outcome is not Outcome.SAME:
                    return outcome, seen
            time.sleep(random.uniform(0.05, 0.3))  # let the new holder finish before re-opening
        return self._classify(key, last, self._open(key, deadline), expected)

    def _abort(self, keys: Iterable[bytes]) -> None:
        for key in keys:
            writer = self._writers.pop(key)
            try:
                writer.producer.abort_transaction()
            except KafkaError:
                _discard(writer.producer)  # re-opened (and checked) on the next append
            else:
                self._writers[key] = writer

    def _conflict(self, moved: Sequence[bytes], recorded: Sequence[bytes]) -> ConcurrencyError:
        names = ", ".join(_name(k) for k in moved)
        if recorded:
            done = ", ".join(_name(k) for k in recorded)
            what = f"the events of {done} were appended, the others were not"
        else:
            what = "nothing was appended"
        exc = ConcurrencyError(f"{names}: another writer appended since this writer read the "
                               f"head; {what}: reload the head and retry")
        exc.recorded = tuple(recorded)  # type: ignore[attr-defined]
        return exc

    # --- opening a table: fence, then read its last record --------------------------------------

    def _open(self, key: bytes, deadline: float) -> list[tuple[int, bytes]]:
        """Become the table's only writer, then bring its last record up to date; return the
        table's records read meanwhile."""
        p = partition_of(key, self.n_partitions)
        while True:
            producer: KafkaProducer | None = None
            try:
                producer = KafkaProducer(
                    bootstrap_servers=self.bootstrap.split(","),
                    client_id=f"{self.client_id}-writer",
                    transactional_id=transactional_id(self.topic, key),
                    transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
                    **{**self._producer_config,
                       "max_block_ms": max(1000, int((deadline - time.monotonic()) * 1000)),
                       "retry_backoff_ms": RETRY_BACKOFF_MS})
                producer.init_transactions()
                end = self._stable_end(p, deadline)
                assert end is not None
                seen = self._refresh(p, end, [key])[key]
            except (KafkaError, LogError) as exc:
                if producer is not None:
                    _discard(producer)
                if time.monotonic() > deadline:
                    raise LogError(f"cannot become the writer of table {_name(key)} on topic "
                                   f"{self.topic} at {self.bootstrap}: {exc}; is the broker "
                                   f"up, with its transaction state topic?") from exc
                time.sleep(0.2)
                continue
            self._writers[key] = _Writer(producer, p)
            self.opened += 1
            return seen

    # --- reading --------------------------------------------------------------------------------

    def _readers(self) -> tuple[KafkaConsumer, KafkaConsumer]:
        if self._committed_reader is None or self._watermark_reader is None:
            common = {"bootstrap_servers": self.bootstrap.split(","),
                      "bootstrap_timeout_ms": min(int(self.timeout_s * 1000), 30_000)}
            self._committed_reader = KafkaConsumer(
                client_id=f"{self.client_id}-fencing", **common,
                **{**self._consumer_config, "isolation_level": "read_committed"})
            self._watermark_reader = KafkaConsumer(
                client_id=f"{self.client_id}-watermark", **common,
                **{**self._consumer_config, "isolation_level": "read_uncommitted"})
        return self._committed_reader, self._watermark_reader

    def _stable_end(self, p: int, deadline: float, *, patience: float | None = None) -> int | None:
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
                               f"to its end in {self.timeout_s:.0f}s ({error}); a writer that "
                               f"died mid-transaction is aborted after "
                               f"{TRANSACTION_TIMEOUT_MS // 1000}s")
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

    def _refresh(self, p: int, end: int, watch: Sequence[bytes]
                 ) -> dict[bytes, list[tuple[int, bytes]]]:
        start = min((self._tails.current_to(p, k) for k in watch),
                    default=self._tails.upto.get(p, 0))
        batches: Iterable[list[LogRecord]] = ()
        if start < end:
            batches = self._read_ranges(self._readers()[0], {p: (start, end)})
        return self._tails.absorb(p, start, end, batches, watch)

    def _last_event(self, key: bytes) -> bytes | None:
        """The table's last record that is a pitlog event (rare: its last record is not)."""
        p = partition_of(key, self.n_partitions)
        end = self._tails.current_to(p, key)
        found: bytes | None = None
        for batch in self._read_ranges(self._readers()[0], {p: (0, end)}):
            for rec in batch:
                if rec.key == key and _is_event(rec.value):
                    found = rec.value
        return found

    def last_values(self, partitions: Sequence[int]) -> dict[bytes, bytes]:
        """Each key's last committed value in these partitions (the recorder's heads)."""
        deadline = time.monotonic() + self.timeout_s
        for p in partitions:
            end = self._stable_end(p, deadline)
            assert end is not None
            self._refresh(p, end, [])
        wanted = set(partitions)
        return {k: v for k, v in self._tails.value.items()
                if partition_of(k, self.n_partitions) in wanted}

    def close(self) -> None:
        writers, self._writers = self._writers, {}
        for writer in writers.values():
            try:
                writer.producer.close(timeout=self.timeout_s)
            except KafkaError:
                _discard(writer.producer)
        for reader in (self._committed_reader, self._watermark_reader):
            if reader is not None:
                reader.close(autocommit=False)
        self._committed_reader = self._watermark_reader = None

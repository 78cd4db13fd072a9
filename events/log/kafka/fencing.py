"""Writer concurrency on Kafka: compare-and-append per table, by transactional-producer fencing.

`FencedKafkaLog.append_expecting(items, expected)` appends a table's events only if the table's last
committed event still ends with `expected[table]` (None: the table has no events), else
ConcurrencyError: the contract of the embedded log's method of the same name. Each table has one
transactional.id, ``pitlog.<topic>.<table>``, so the broker lets one writer hold a table at a time;
the steps (open, check, write), why they hold, failures and batches of several tables are in
docs/integrity.md, "Kafka: one transactional producer per table".
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from typing import Any

from kafka import KafkaProducer
from kafka.errors import (
    InvalidProducerEpochError,
    KafkaError,
    KafkaTimeoutError,
    ProducerFencedError,
)
from kafka.producer.transaction_manager import TransactionState

from events.errors import ConcurrencyError, LogError
from events.log.kafka.tails import RangeReader, Seen, TailReader, is_event, partition_of

# Broker default transaction.timeout.ms: an open transaction of a writer that died blocks the
# readers of its partition at most this long (a new writer of the same table aborts it at once).
TRANSACTION_TIMEOUT_MS = 60_000
FENCED_PATIENCE_S = 5.0  # fenced: how long to wait for the partition to be stable, not re-open
# A table's next transaction waits for the markers of its last one (CONCURRENT_TRANSACTIONS):
# retry sooner than kafka-python's 100 ms default, which capped the rate of small batches.
RETRY_BACKOFF_MS = 20
# After a commit: how long to wait for readers to see it (its markers written) before
# returning anyway (it is durable already).
VISIBLE_PATIENCE_S = 5.0
# Tables of one batch flush, commit and open in parallel, each in its own producer.
PARALLEL_TABLES = 8


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
class _Writer:
    producer: KafkaProducer
    partition: int


def _ends_with(value: bytes | None, tail: bytes | None) -> bool:
    return value is None if tail is None else value is not None and value.endswith(tail)


def _looks_fenced(producer: KafkaProducer, exc: BaseException) -> bool:
    """Did another writer of the table take over? kafka-python reports it in several ways
    (ProducerFencedError, InvalidProducerEpochError, or an epoch bump under way)."""
    manager = getattr(producer, "_transaction_manager", None)
    last = getattr(manager, "last_error", None)
    state = getattr(getattr(manager, "_current_state", None), "name", "")
    text = f"{type(exc).__name__} {exc} {type(last).__name__} {last} {state}"
    return any(s in text for s in ("Fenced", "InvalidProducerEpoch", "BUMPING_PRODUCER_EPOCH"))


def stays_fenced(producer: KafkaProducer) -> KafkaProducer:
    """Once fenced, the producer stays fenced, as a Java client's ends up (its refused bump is
    ProducerFenced). kafka-python 3.0.12 takes a produce answered INVALID_PRODUCER_EPOCH for a
    recoverable error (KIP-360): it bumps its epoch, and when the broker refuses the stale one,
    it asks for a new epoch under the same transactional.id, which fences the writer that had
    fenced it. A paused writer that wakes with a request on its way would so take the id back
    from the live one (and that one, at its next try, back again); CI failed so once, in
    tests/projections/test_alert_publish.py. Here the error is fatal and the refused bump ends
    in ProducerFencedError: the caller discards the producer, and a writer that opens again
    fences the others and reads the log's tail first (docs/integrity.md)."""
    manager = producer._transaction_manager  # noqa: SLF001 - no public way to change this
    if manager is None:
        return producer
    manager._FATAL_ERRORS = manager._FATAL_ERRORS | {InvalidProducerEpochError}  # noqa: SLF001
    manager._NEEDS_EPOCH_BUMP_ERRORS = (  # noqa: SLF001
        manager._NEEDS_EPOCH_BUMP_ERRORS - {InvalidProducerEpochError})  # noqa: SLF001

    def refuse_fresh_epoch(_timeout_ms: int, result: Any) -> None:
        # Called under the manager's lock (an RLock) when the broker refused the bump: the
        # epoch is stale because another writer holds the id.
        manager._transition_to(TransactionState.FATAL_ERROR,  # noqa: SLF001
                               error=ProducerFencedError())
        result.done(error=ProducerFencedError())

    manager._restart_epoch_bump_without_producer_id = refuse_fresh_epoch  # noqa: SLF001
    return producer


def discard_producer(producer: KafkaProducer) -> None:
    """Close without waiting: what became of its transaction is read from the log instead."""
    try:
        producer.close(timeout=0)
    except KafkaError:  # unfinished batches: stop its sender thread anyway (kafka-python 3.0.12)
        sender = getattr(producer, "_sender", None)
        if sender is not None:
            sender.force_close()
        producer._closed = True  # noqa: SLF001 - no public way to give up on a stuck producer


def end_transaction(producer: KafkaProducer, commit: bool, timeout_s: float) -> None:
    """Commit (or abort) the producer's open transaction, waiting at most `timeout_s`: else
    KafkaTimeoutError, and the caller discards the producer and reads the log to learn what
    became of the transaction, as after any failed commit. kafka-python 3.0.12's
    commit_transaction and abort_transaction wait for the broker's answer with no deadline of
    their own (their result's wait() has no timeout): only the sender's request timeout and
    retries end it, and a retried EndTxn against a broker that stops answering mid-commit
    (paused, partitioned) has no bound. This is those two methods' body with the wait bounded
    (tests/kafka/test_kafka_commit_timeout.py pauses the broker at the commit)."""
    manager = producer._transaction_manager  # noqa: SLF001 - see the docstring
    if manager is None:  # not transactional: kafka-python's own error
        (producer.commit_transaction if commit else producer.abort_transaction)()
        return
    result = manager.begin_commit() if commit else manager.begin_abort()
    producer._sender.wakeup()  # noqa: SLF001
    if not result.wait(timeout_ms=max(1, int(timeout_s * 1000))):
        raise KafkaTimeoutError(f"the transaction's {'commit' if commit else 'abort'} was not "
                                f"answered in {timeout_s:.0f}s")


def _name(key: bytes) -> str:
    return key.decode("utf-8", "backslashreplace")


def _attempt(fn: Callable[[bytes], None], key: bytes) -> KafkaError | None:
    try:
        fn(key)
    except KafkaError as exc:
        return exc
    return None


class _Batch:
    """One append_expecting call: its tables, what each must continue from, its progress."""

    def __init__(self, items: Sequence[tuple[bytes, bytes]],
                 expected: Mapping[bytes, bytes | None], deadline: float,
                 partitions: int) -> None:
        self.items, self.expected, self.deadline = items, expected, deadline
        self.partitions = partitions
        self.by_key: dict[bytes, list[int]] = {}
        for i, (key, _) in enumerate(items):
            self.by_key.setdefault(key, []).append(i)
        self.last = {key: items[idx[-1]][1] for key, idx in self.by_key.items()}
        self.result: list[tuple[int, int]] = [(-1, -1)] * len(items)
        self.todo = list(self.by_key)  # tables not appended yet
        self.recorded: list[bytes] = []  # tables appended
        self.errors: dict[bytes, BaseException] = {}  # this attempt's failures

    def values(self, key: bytes) -> list[bytes]:
        return [self.items[i][1] for i in self.by_key[key]]

    def done(self, key: bytes, offsets: Sequence[int]) -> None:
        p = partition_of(key, self.partitions)
        for i, offset in zip(self.by_key[key], offsets, strict=True):
            self.result[i] = (p, offset)
        self.recorded.append(key)
        self.todo.remove(key)

    def settled(self, key: bytes, outcome: Outcome, seen: Seen) -> bool:
        """Take in a table's outcome: COMMITTED marks it done; True when it is a conflict."""
        if outcome is Outcome.COMMITTED:
            where = {value: offset for offset, value in seen}
            self.done(key, [where.get(v, -1) for v in self.values(key)])
        return outcome is Outcome.MOVED


class TableFencing:
    """The transactional writers of one KafkaLog; see the module docstring."""

    def __init__(self, *, bootstrap: str, topic: str, partitions: int, timeout_s: float,
                 client_id: str, producer_config: Mapping[str, Any],
                 consumer_config: Mapping[str, Any], read_ranges: RangeReader) -> None:
        self.bootstrap, self.topic, self.n_partitions = bootstrap, topic, partitions
        self.timeout_s, self.client_id = timeout_s, client_id
        self._producer_config = dict(producer_config)
        self._writers: dict[bytes, _Writer] = {}
        self.tails = TailReader(bootstrap=bootstrap, topic=topic, partitions=partitions,
                                timeout_s=timeout_s, client_id=client_id,
                                consumer_config=consumer_config, read_ranges=read_ranges)
        self._pool: ThreadPoolExecutor | None = None
        self.opened = 0  # producers initialised (each fenced the table's previous writer)

    # --- appending ------------------------------------------------------------------------------

    def append_expecting(self, items: Sequence[tuple[bytes, bytes]],
                         expected: Mapping[bytes, bytes | None] | None
                         ) -> list[tuple[int, int]]:
        batch = _Batch(items, expected or {}, time.monotonic() + self.timeout_s,
                       self.n_partitions)
        attempt = 0
        while True:
            self._attempt(batch)
            if not batch.todo:
                return batch.result
            attempt += 1  # transient failures: those tables are open again; retry them
            if time.monotonic() > batch.deadline:
                raise LogError(
                    f"append to topic {self.topic} on {self.bootstrap}: tables "
                    f"{', '.join(_name(k) for k in batch.todo)} still failing after {attempt} "
                    f"attempts in {self.timeout_s:.0f}s (last: {batch.errors}); nothing of "
                    f"theirs is committed (the batch's other tables are: "
                    f"{', '.join(_name(k) for k in batch.recorded) or 'none'}); is the broker "
                    f"up? Retry the flush")
            time.sleep(random.uniform(0, min(1.0, 0.02 * 2 ** attempt)))

    def _attempt(self, batch: _Batch) -> None:
        """One try at the tables of `batch` not appended yet; ConcurrencyError on a conflict.

        No transaction of this writer stays open while it waits for a partition to be stable
        (it would wait for itself): a failure before the commits aborts the others first."""
        # 1-2. Open the tables not held yet, then check every table before sending anything.
        seen = self._open([k for k in batch.todo if k not in self._writers], batch.deadline)
        moved = [key for key in list(batch.todo)
                 if batch.settled(key, *self._classify(batch, key, seen.get(key, [])))]
        if moved:
            raise self._conflict(moved, batch.recorded)
        # 3. One transaction per table: send all, flush all; then commit all, or abort all.
        futures: dict[bytes, list[Any]] = {}
        batch.errors = {}
        try:
            for key in batch.todo:
                writer = self._writers[key]
                try:
                    writer.producer.begin_transaction()
                    futures[key] = []  # open: aborted if this attempt stops half-way
                    futures[key].extend(
                        writer.producer.send(self.topic, key=key, value=value,
                                             partition=writer.partition)
                        for value in batch.values(key))
                except KafkaError as exc:
                    batch.errors[key] = exc

            def flush(key: bytes) -> None:
                self._writers[key].producer.flush(
                    timeout=max(1.0, batch.deadline - time.monotonic()))
                for f in futures[key]:
                    f.get(timeout=0)

            self._each([k for k in futures if k not in batch.errors], flush, batch.errors)
            healthy = [k for k in futures if k not in batch.errors]
        except BaseException:
            self._abort([k for k in futures if k not in batch.errors], batch.deadline)
            raise
        if batch.errors:  # all or nothing: abort the rest, find out what became of the failed
            self._abort(healthy, batch.deadline)
            self._settle(batch)
            return
        self._each(healthy, lambda k: end_transaction(
            self._writers[k].producer, True, max(5.0, batch.deadline - time.monotonic())),
            batch.errors)
        visible: dict[int, tuple[int, int]] = {}
        for key in healthy:
            if key not in batch.errors:
                offsets = [f.get(timeout=0).offset for f in futures[key]]
                p = self._writers[key].partition
                first, end = visible.get(p, (offsets[0], offsets[-1] + 1))
                visible[p] = (min(first, offsets[0]), max(end, offsets[-1] + 1))
                self.tails.cache.committed(p, key, batch.last[key], offsets[-1])
                batch.done(key, offsets)
        if batch.errors:  # a commit failed: the others are committed, whatever comes of it
            self._settle(batch)
        if visible:  # read-your-writes: return once readers see the batch, as if plain
            self.tails.wait_visible(visible, VISIBLE_PATIENCE_S)

    def _settle(self, batch: _Batch) -> None:
        """The transactions of `batch.errors` failed: find out from the log what became of each
        (COMMITTED: done; SAME: retry; MOVED: ConcurrencyError). None of ours is open."""
        failed = {key: self._writers.pop(key) for key in batch.errors}
        fenced = all(_looks_fenced(w.producer, batch.errors[k]) for k, w in failed.items())
        for writer in failed.values():
            discard_producer(writer.producer)
        moved: list[bytes] = []
        undecided = list(failed)
        if fenced:  # the new holders decide our transactions: read once they did, fence no one
            undecided = []
            for key, writer in failed.items():
                end = self.tails.stable_end(writer.partition, batch.deadline,
                                            patience=FENCED_PATIENCE_S)
                seen = self.tails.refresh(writer.partition, end, [key])[key] if end else []
                outcome, _ = self._classify(batch, key, seen)
                if end is None or outcome is Outcome.SAME:
                    undecided.append(key)
                elif batch.settled(key, outcome, seen):
                    moved.append(key)
            if undecided:
                time.sleep(random.uniform(0.05, 0.3))  # let the new holders finish first
        if undecided:  # re-open: fences everyone, and aborts our own transaction if still open
            seen_all = self._open(undecided, batch.deadline)
            moved += [key for key in undecided
                      if batch.settled(key, *self._classify(batch, key, seen_all[key]))]
        if moved:
            raise self._conflict(moved, batch.recorded)

    def appended(self, items: Sequence[tuple[bytes, bytes]],
                 positions: Sequence[tuple[int, int]]) -> None:
        """This process appended these records without a transaction (`KafkaLog.append`, as
        the simulator does for a tampered event): they are its tables' last records now."""
        for (key, value), (p, offset) in zip(items, positions, strict=True):
            self.tails.cache.committed(p, key, value, offset)

    def forget(self, keys: Iterable[bytes]) -> None:
        """A plain append of these tables failed part-way: re-open them before the next check."""
        for key in set(keys):
            writer = self._writers.pop(key, None)
            if writer is not None:
                discard_producer(writer.producer)

    def _classify(self, batch: _Batch, key: bytes, seen: Seen
                  ) -> tuple[Outcome, Seen]:
        if any(value == batch.last[key] for _, value in seen):
            return Outcome.COMMITTED, seen
        if key not in batch.expected or self._continues(key, batch.expected[key]):
            return Outcome.SAME, seen
        return Outcome.MOVED, seen

    def _continues(self, key: bytes, tail: bytes | None) -> bool:
        value = self.tails.cache.value.get(key)
        if _ends_with(value, tail):
            return True
        if value is not None and not is_event(value):  # a foreign record: skip it
            return _ends_with(self.tails.last_event(key), tail)
        return False

    def _abort(self, keys: Sequence[bytes], deadline: float) -> None:
        def abort(key: bytes) -> None:
            end_transaction(self._writers[key].producer, False,
                            max(5.0, deadline - time.monotonic()))

        failed = list(self._each(keys, abort, {}))
        for key in failed:  # re-open: the new producer's init aborts the old one's transaction
            discard_producer(self._writers.pop(key).producer)
        self._open(failed, deadline)

    def _conflict(self, moved: Sequence[bytes], recorded: Sequence[bytes]) -> ConcurrencyError:
        names = ", ".join(_name(k) for k in moved)
        if recorded:
            done = ", ".join(_name(k) for k in recorded)
            what = f"the events of {done} were appended, the others were not"
        else:
            what = "nothing was appended"
        return ConcurrencyError(f"{names}: another writer appended since this writer read the "
                                f"head; {what}: reload the head and retry", tuple(recorded))

    # --- opening a table: fence, then read its last record --------------------------------------

    def _open(self, keys: Sequence[bytes], deadline: float
              ) -> dict[bytes, Seen]:
        """Become the only writer of these tables (fencing their previous writers), then bring
        their last records up to date; return each table's records read meanwhile."""
        if not keys:
            return {}
        producers: dict[bytes, KafkaProducer] = {}
        seen: dict[bytes, Seen] = {key: [] for key in keys}  # over every try: a read counts

        def init(key: bytes) -> None:
            producers[key] = stays_fenced(KafkaProducer(
                bootstrap_servers=self.bootstrap.split(","),
                client_id=f"{self.client_id}-writer",
                transactional_id=transactional_id(self.topic, key),
                transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
                **{**self._producer_config, "retry_backoff_ms": RETRY_BACKOFF_MS,
                   "max_block_ms": max(1000, int((deadline - time.monotonic()) * 1000))}))
            producers[key].init_transactions()

        while True:
            error: BaseException | None = next(iter(self._each(keys, init, {}).values()), None)
            if error is None:
                by_partition: dict[int, list[bytes]] = {}
                for key in keys:
                    by_partition.setdefault(partition_of(key, self.n_partitions), []).append(key)
                try:  # only now: every transaction of these tables before the fence is decided
                    for p, watch in by_partition.items():
                        end = self.tails.stable_end(p, deadline)
                        assert end is not None  # no patience given: it raises instead
                        for key, records in self.tails.refresh(p, end, watch).items():
                            seen[key].extend(records)
                except (KafkaError, LogError) as exc:
                    error = exc
            if error is None:
                for key, producer in producers.items():
                    self._writers[key] = _Writer(producer, partition_of(key, self.n_partitions))
                self.opened += len(producers)
                return seen
            for producer in producers.values():
                discard_producer(producer)
            producers.clear()
            if time.monotonic() > deadline:
                raise LogError(f"cannot become the writer of tables "
                               f"{', '.join(_name(k) for k in keys)} on topic {self.topic} at "
                               f"{self.bootstrap}: {error}; is the broker up, with its "
                               f"transaction state topic?") from error
            time.sleep(0.2)

    def _each(self, keys: Sequence[bytes], fn: Callable[[bytes], None],
              errors: dict[bytes, BaseException]) -> dict[bytes, BaseException]:
        """fn(key) for each key, in parallel when there are several; KafkaErrors into `errors`."""
        if len(keys) <= 1:
            outcomes = [_attempt(fn, key) for key in keys]
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(PARALLEL_TABLES,
                                                thread_name_prefix="pitlog-tables")
            outcomes = list(self._pool.map(lambda k: _attempt(fn, k), keys))
        for key, error in zip(keys, outcomes, strict=True):
            if error is not None:
                errors[key] = error
        return errors

    def close(self) -> None:
        writers, self._writers = self._writers, {}
        for writer in writers.values():
            try:
                writer.producer.close(timeout=self.timeout_s)
            except KafkaError:
                discard_producer(writer.producer)
        self.tails.close()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

"""Writer concurrency on Kafka: two recorders of one table never both take a sequence number
(issue 6, point 5; events/log/kafka/fencing.py).

With ``fencing=true`` every writer of a table appends through a transactional producer whose
transactional.id is the table's own: the newest writer fences the older ones, checks the table's
last committed event, and only then commits. The loser gets ConcurrencyError, nothing of its
batch is visible to readers, and recording again after the reloaded head continues the stream.
Every test runs against the real broker; a few wrap a real producer's commit to make another
writer strike at one exact instant."""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka_support import produce_raw

import events.log.kafka.fencing as fencing
from events.errors import ConcurrencyError, LogError
from events.integrity.verify import verify_log
from events.log.base import ConditionalAppend
from events.log.kafka.log import FencedKafkaLog, KafkaLog
from events.recording.recorder import Recorder
from events.reddog import model
from events.wire import codec

pytestmark = pytest.mark.kafka

T0 = datetime(2026, 11, 28, 21, 0, tzinfo=UTC)


def _fenced(uri: str, partitions: int | None = None) -> KafkaLog:
    """A log object of its own, as another process would have, with fencing on."""
    return KafkaLog.from_uri(f"{uri}?fencing=true", partitions=partitions)


@pytest.fixture
def logs(kafka_uri: str) -> Iterator[Callable[..., KafkaLog]]:
    """logs() -> a new fenced KafkaLog on this test's topic; all closed at the end."""
    opened: list[KafkaLog] = []

    def new(partitions: int | None = None) -> KafkaLog:
        opened.append(_fenced(kafka_uri, partitions))
        return opened[-1]

    yield new
    for log in opened:
        log.close()


def _record(recorder: Recorder, table: str = "T07", actor: str = "SHOE-7") -> int:
    return recorder.record(table, model.DealerTappedIn(dealer_id=actor), shoe_id=None,
                           round_no=None, actor=actor, occurred_at=T0)


def _stream(log: KafkaLog, table: str) -> list[tuple[int, str]]:
    """(seq, actor) of a table's events, in log order, as every pitlog reader sees them."""
    out = []
    for batch in log.read():
        for rec in batch:
            if rec.key == table.encode():
                env = codec.decode(rec.value)
                out.append((env.seq, env.actor))
    return out


@pytest.fixture(autouse=True)
def _restore_end_transaction() -> Iterator[None]:
    """_before_commit replaces fencing.end_transaction until it fires: put it back whatever
    the test did."""
    real = fencing.end_transaction
    yield
    fencing.end_transaction = real


def _before_commit(log: KafkaLog, table: str, strike: Callable[[], None]) -> None:
    """Run `strike` just before this log's next commit of `table`, inside its transaction:
    its records are on the broker, not yet committed. (The writer commits through
    fencing.end_transaction, which bounds kafka-python's wait.)"""
    producer = log._fencing._writers[table.encode()].producer  # type: ignore[union-attr]
    real = fencing.end_transaction

    def strike_then_commit(p: KafkaProducer, commit: bool, timeout_s: float) -> None:
        if p is producer and commit:
            fencing.end_transaction = real  # once
            strike()
        real(p, commit, timeout_s)

    fencing.end_transaction = strike_then_commit


def test_the_second_writer_of_a_seq_gets_a_conflict_and_succeeds_on_retry(
        logs: Callable[..., KafkaLog]) -> None:
    a, b = Recorder(logs(partitions=2)), Recorder(logs())
    assert (_record(a, actor="A"), _record(b, actor="B")) == (1, 1)  # both believe seq 1 is free
    a.flush()
    with pytest.raises(ConcurrencyError, match=r"T07: another writer appended .* nothing was "
                                               r"appended.*heads reloaded \(T07 at seq 1\)"):
        b.flush()
    assert b.heads["T07"].seq == 1 and b.heads["T07"].hash == a.heads["T07"].hash
    assert _record(b, actor="B") == 2  # the retry
    b.flush()
    log = logs()
    assert _stream(log, "T07") == [(1, "A"), (2, "B")]
    assert verify_log(log).ok


def test_a_writer_fenced_mid_transaction_loses_and_its_records_stay_invisible(
        logs: Callable[..., KafkaLog], kafka_broker: str) -> None:
    a_log = logs(partitions=1)
    a = Recorder(a_log)
    _record(a, actor="A")
    a.flush()
    b = Recorder(logs())  # starts now: head at seq 1
    _record(a, actor="A")  # seq 2 ...

    def b_takes_seq_2() -> None:  # ... while A's records wait for their commit
        _record(b, actor="B")
        b.flush()

    _before_commit(a_log, "T07", b_takes_seq_2)
    with pytest.raises(ConcurrencyError, match=r"T07 at seq 2\): record them again"):
        a.flush()
    reader = logs()
    assert _stream(reader, "T07") == [(1, "A"), (2, "B")]
    # A's record is on the broker, in an aborted transaction: a read_uncommitted consumer
    # would count it, which is why every pitlog reader is read_committed.
    raw = KafkaConsumer(bootstrap_servers=kafka_broker, isolation_level="read_uncommitted",
                        enable_auto_commit=False)
    try:
        tp = TopicPartition(reader.topic, 0)
        raw.assign([tp])
        raw.seek_to_beginning(tp)
        seen = [r for rs in raw.poll(timeout_ms=5000, max_records=100).values() for r in rs]
    finally:
        raw.close()
    assert [codec.decode(r.value).actor for r in seen] == ["A", "A", "B"]
    # The log ends after its last visible record (markers and aborted records hold no event).
    assert reader.end_offsets() == {0: max(r.offset for r in seen) + 1}
    assert _record(a, actor="A") == 3  # the retry, after the reloaded head
    a.flush()
    assert _stream(reader, "T07") == [(1, "A"), (2, "B"), (3, "A")]
    assert verify_log(reader).ok


def test_a_writer_fenced_while_idle_cannot_continue_from_the_head_it_read(
        logs: Callable[..., KafkaLog]) -> None:
    a_log = logs(partitions=2)
    a = Recorder(a_log)
    _record(a, actor="A")
    a.flush()  # A holds T07 and knows its head: seq 1
    b = Recorder(logs())
    _record(b, actor="B")
    b.flush()  # B fenced A and took seq 2; A's cached head is now stale
    assert _record(a, actor="A") == 2
    with pytest.raises(ConcurrencyError, match=r"heads reloaded \(T07 at seq 2\)"):
        a.flush()  # A's send or commit is refused: it was fenced
    assert _record(a, actor="A") == 3
    a.flush()  # A fences B in turn, re-reads the head, appends
    assert a_log._fencing is not None and a_log._fencing.opened == 2
    log = logs()
    assert _stream(log, "T07") == [(1, "A"), (2, "B"), (3, "A")]
    assert verify_log(log).ok


def test_a_conflict_found_before_sending_appends_none_of_the_batch(
        logs: Callable[..., KafkaLog]) -> None:
    a, b = Recorder(logs(partitions=1)), Recorder(logs())
    _record(a, "T02", "A")
    a.flush()
    _record(b, "T01", "B")
    _record(b, "T02", "B")
    with pytest.raises(ConcurrencyError, match=r"T02: .*nothing was appended.*The 2 buffered "
                                               r"event\(s\) were not recorded"):
        b.flush()
    log = logs()
    assert (_stream(log, "T01"), _stream(log, "T02")) == ([], [(1, "A")])
    assert (b.heads["T01"].seq, b.heads["T02"].seq) == (0, 1)
    _record(b, "T01", "B")
    _record(b, "T02", "B")
    b.flush()
    assert (_stream(log, "T01"), _stream(log, "T02")) == ([(1, "B")], [(1, "A"), (2, "B")])


def test_a_fence_while_a_batch_commits_keeps_the_tables_already_appended(
        logs: Callable[..., KafkaLog]) -> None:
    # Each table of a batch is its own transaction (one transactional.id per table), so a
    # fence that lands between them leaves some appended: the recorder keeps exactly those.
    a_log = logs(partitions=2)
    a = Recorder(a_log)
    for table in ("T01", "T02"):
        _record(a, table, "A")
    a.flush()
    b = Recorder(logs())
    for table in ("T01", "T02"):
        _record(a, table, "A")

    def b_takes_t02() -> None:
        _record(b, "T02", "B")
        b.flush()

    _before_commit(a_log, "T02", b_takes_t02)
    with pytest.raises(ConcurrencyError, match=r"T02: .*the events of T01 were appended.*The 1 "
                                               r"buffered event\(s\) were not recorded \(those "
                                               r"of T01 were\)") as caught:
        a.flush()
    assert caught.value.recorded == (b"T01",)  # type: ignore[attr-defined]
    assert a.recorded == 3
    assert (a.heads["T01"].seq, a.heads["T02"].seq) == (2, 2)
    log = logs()
    assert _stream(log, "T01") == [(1, "A"), (2, "A")]
    assert _stream(log, "T02") == [(1, "A"), (2, "B")]
    _record(a, "T02", "A")  # only the table that was not recorded is recorded again
    a.flush()
    assert _stream(log, "T02") == [(1, "A"), (2, "B"), (3, "A")]
    assert verify_log(log).ok


def test_the_head_check_skips_records_that_are_not_pitlog_events(
        logs: Callable[..., KafkaLog], kafka_broker: str) -> None:
    first = logs(partitions=2)
    a = Recorder(first)
    _record(a, actor="A")
    a.flush()
    produce_raw(kafka_broker, first.topic, [(b"T07", b"\x00not an event")])
    b = Recorder(logs())  # its head skips the foreign record: seq 1
    assert _record(b, actor="B") == 2
    b.flush()
    _record(a, actor="A")  # A was fenced by B: conflict, then the retry continues from B
    with pytest.raises(ConcurrencyError):
        a.flush()
    assert _record(a, actor="A") == 3
    a.flush()
    seqs = [codec.decode(r.value).seq for batch in logs().read() for r in batch
            if r.value != b"\x00not an event"]
    assert seqs == [1, 2, 3]


def _die_before_commit(uri: str) -> None:
    """A writer that opens its transaction, sends, and is killed before committing."""
    log = _fenced(uri)
    recorder = Recorder(log)
    _record(recorder, actor="DEAD")
    recorder.flush()
    _record(recorder, actor="DEAD")
    _before_commit(log, "T07", lambda: os.kill(os.getpid(), signal.SIGKILL))
    recorder.flush()


def test_a_transaction_left_open_by_a_killed_writer_is_aborted_by_the_next_writer(
        kafka_uri: str, logs: Callable[..., KafkaLog]) -> None:
    logs(partitions=1)  # the topic, before the child
    child = mp.get_context("spawn").Process(target=_die_before_commit, args=(kafka_uri,))
    child.start()
    child.join(timeout=120)
    assert child.exitcode == -signal.SIGKILL
    started = time.monotonic()
    b = Recorder(logs())  # reads up to the open transaction: seq 1
    assert _record(b, actor="B") == 2
    b.flush()  # its producer's init aborts the dead writer's transaction at once
    assert time.monotonic() - started < 30  # not the 60 s transaction timeout
    log = logs()
    assert _stream(log, "T07") == [(1, "DEAD"), (2, "B")]
    assert verify_log(log).ok


def test_fencing_is_opt_in_per_log_address(kafka_uri: str) -> None:
    plain = KafkaLog.from_uri(kafka_uri)
    fenced = _fenced(kafka_uri)
    try:  # the recorder checks heads only on a log that declares ConditionalAppend
        assert not isinstance(plain, ConditionalAppend) and not hasattr(plain, "append_expecting")
        assert isinstance(fenced, FencedKafkaLog) and isinstance(fenced, ConditionalAppend)
    finally:
        plain.close()
        fenced.close()
    with pytest.raises(LogError, match="fencing='maybe'; write fencing=true or fencing=false"):
        KafkaLog.from_uri(f"{kafka_uri}?fencing=maybe")


def _race(uri: str, writer: str, batches: int, per_batch: int, start: object,
          out: object) -> None:
    """One writer process: `batches` flushes of `per_batch` events to T07, each retried on a
    conflict after the recorder reloaded the head, with a random pause between batches so the
    two writers interleave (a device records as the game goes, not in one burst)."""
    log = _fenced(uri)
    recorder = Recorder(log)
    won: list[int] = []
    conflicts = 0
    pause = random.Random(writer)
    start.wait()  # type: ignore[attr-defined]
    for _ in range(batches):
        time.sleep(pause.uniform(0, 0.1))
        while True:
            seqs = [_record(recorder, actor=writer) for _ in range(per_batch)]
            try:
                recorder.flush()
            except ConcurrencyError:
                conflicts += 1
                continue
            won.extend(seqs)
            break
    log.close()
    out.put((writer, won, conflicts))  # type: ignore[attr-defined]


def test_two_racing_processes_each_seq_is_won_once_and_the_stream_stays_gapless(
        kafka_uri: str, logs: Callable[..., KafkaLog]) -> None:
    logs(partitions=2)  # the topic, before the writers
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(2), ctx.Queue()
    batches, per_batch = 40, 4
    procs = [ctx.Process(target=_race, args=(kafka_uri, w, batches, per_batch, start, out))
             for w in ("A", "B")]
    for p in procs:
        p.start()
    results = {w: (won, conflicts) for w, won, conflicts in (out.get(timeout=300) for _ in procs)}
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    won_a, won_b = results["A"][0], results["B"][0]
    total = 2 * batches * per_batch
    assert len(won_a) == len(won_b) == batches * per_batch
    assert set(won_a).isdisjoint(won_b)  # no seq was won twice
    assert sorted(won_a + won_b) == list(range(1, total + 1))
    log = logs()
    stream = _stream(log, "T07")
    assert [seq for seq, _ in stream] == list(range(1, total + 1))  # log order is seq order
    assert {seq for seq, actor in stream if actor == "A"} == set(won_a)  # each won by its writer
    assert verify_log(log).ok
    # They did race: the table changed hands many times, and each change cost the writer that
    # had held it a conflict (how many is up to the scheduler).
    turns = sum(1 for (_, x), (_, y) in itertools.pairwise(stream) if x != y)
    assert turns >= 5 and results["A"][1] + results["B"][1] >= turns // 2
    print(f"turns {turns}; conflicts: A {results['A'][1]}, B {results['B'][1]}")

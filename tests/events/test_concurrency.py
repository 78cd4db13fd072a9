"""Writer concurrency: two recorders of one table never both get a sequence number (issue 6).

The embedded log re-checks, under its writer flock, that each table's last record is still the
one the recorder's batch continues from; the loser gets ConcurrencyError, its heads are
reloaded, and recording again succeeds with the next free number."""

from __future__ import annotations

import multiprocessing as mp
from datetime import UTC, datetime
from pathlib import Path

import pytest

from events.errors import ConcurrencyError
from events.integrity.verify import verify_log
from events.log.embedded.log import EmbeddedLog
from events.recording.recorder import Recorder
from events.reddog import model
from events.wire import codec

T0 = datetime(2026, 11, 28, 21, 0, tzinfo=UTC)


def _record(recorder: Recorder, table: str = "T07", rank: int = 7) -> int:
    return recorder.record(table, model.CardDrawn(rank=rank, suit=model.Suit.CLUBS, face_up=True,
                                                  destination=model.Box.LEFT),
                           shoe_id=f"{table}-S0001", round_no=1, actor="SHOE-7", occurred_at=T0)


def _seqs(log: EmbeddedLog, table: str) -> list[int]:
    return [codec.decode(r.value).seq for b in log.read() for r in b if r.key == table.encode()]


def test_the_second_writer_of_a_seq_gets_a_conflict_and_succeeds_on_retry(tmp_path: Path) -> None:
    a = Recorder(EmbeddedLog(tmp_path / "log", partitions=2))
    b = Recorder(EmbeddedLog(tmp_path / "log"))  # same folder, another log object: another writer
    assert _record(a) == 1
    a.flush()
    assert _record(b) == 1  # b still believes the table is empty
    with pytest.raises(ConcurrencyError, match=r"T07: another writer appended .* heads reloaded "
                                               r"\(T07 at seq 1\): record them again"):
        b.flush()
    assert b.heads["T07"].seq == 1 and b.heads["T07"].hash == a.heads["T07"].hash
    assert _record(b, rank=8) == 2  # the retry
    b.flush()
    log = EmbeddedLog(tmp_path / "log")
    assert _seqs(log, "T07") == [1, 2]
    assert verify_log(log).ok


def test_a_conflict_on_one_table_appends_none_of_the_batch(tmp_path: Path) -> None:
    a = Recorder(EmbeddedLog(tmp_path / "log", partitions=1))
    b = Recorder(EmbeddedLog(tmp_path / "log"))
    _record(a, "T02")
    a.flush()
    _record(b, "T01")
    _record(b, "T02")
    with pytest.raises(ConcurrencyError,
                       match=r"T02: .*The 2 buffered event\(s\) were not recorded"):
        b.flush()
    log = EmbeddedLog(tmp_path / "log")
    assert log.end_offsets() == {0: 1}  # only a's event: the batch is all or nothing
    assert (b.heads["T01"].seq, b.heads["T02"].seq) == (0, 1)
    _record(b, "T01")
    _record(b, "T02")
    b.flush()
    assert (_seqs(log, "T01"), _seqs(log, "T02")) == ([1], [1, 2])


def test_writers_of_different_tables_never_conflict(tmp_path: Path) -> None:
    a = Recorder(EmbeddedLog(tmp_path / "log", partitions=1))
    b = Recorder(EmbeddedLog(tmp_path / "log"))
    for _ in range(3):
        _record(a, "T01")
        _record(b, "T02")
        a.flush()
        b.flush()
    log = EmbeddedLog(tmp_path / "log")
    assert (_seqs(log, "T01"), _seqs(log, "T02")) == ([1, 2, 3], [1, 2, 3])


def test_the_local_expected_seq_check_still_refuses_a_stale_caller(tmp_path: Path) -> None:
    recorder = Recorder(EmbeddedLog(tmp_path / "log"))
    _record(recorder)
    with pytest.raises(ConcurrencyError, match="expected to record seq 1 but the next is 2"):
        recorder.record("T07", model.CardDrawn(rank=9, suit=model.Suit.SPADES, face_up=True,
                                               destination=model.Box.RIGHT),
                        shoe_id=None, round_no=None, actor="SHOE-7", occurred_at=T0,
                        expected_seq=1)


def _race(folder: str, writer: str, n: int, start: object, out: object) -> None:
    """One writer process: record n events to T07, retrying each conflict."""
    recorder = Recorder(EmbeddedLog(Path(folder)))
    won: list[int] = []
    conflicts = 0
    start.wait()  # type: ignore[attr-defined]
    for i in range(n):
        while True:
            seq = recorder.record("T07", model.DealerTappedIn(dealer_id=f"{writer}-{i}"),
                                  shoe_id=None, round_no=None, actor=writer, occurred_at=T0)
            try:
                recorder.flush()
            except ConcurrencyError:
                conflicts += 1
                continue
            won.append(seq)
            break
    out.put((writer, won, conflicts))  # type: ignore[attr-defined]


def test_two_racing_processes_each_seq_is_won_once_and_the_stream_stays_gapless(
        tmp_path: Path) -> None:
    folder = tmp_path / "log"
    EmbeddedLog(folder, partitions=1)
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(2), ctx.Queue()
    n = 120
    procs = [ctx.Process(target=_race, args=(str(folder), w, n, start, out)) for w in ("A", "B")]
    for p in procs:
        p.start()
    results = {w: (won, conflicts) for w, won, conflicts in (out.get(timeout=120) for _ in procs)}
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    won_a, won_b = results["A"][0], results["B"][0]
    assert len(won_a) == len(won_b) == n
    assert set(won_a).isdisjoint(won_b)  # no seq was won twice
    assert sorted(won_a + won_b) == list(range(1, 2 * n + 1))
    log = EmbeddedLog(folder)
    assert _seqs(log, "T07") == list(range(1, 2 * n + 1))  # log order is seq order
    # Each event's actor is the writer that won its seq.
    actors = {codec.decode(r.value).seq: codec.decode(r.value).actor
              for b in log.read() for r in b}
    assert {s for s, a in actors.items() if a == "A"} == set(won_a)
    assert verify_log(log).ok
    # Both writers had to retry when they collided; how often is up to the scheduler.
    print(f"conflicts: A {results['A'][1]}, B {results['B'][1]}")

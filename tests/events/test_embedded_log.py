"""The embedded log: append-only, gapless per partition, durable, and repaired after a crash."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from events.errors import LogCorruptError, LogError
from events.log.embedded.log import FRAME, EmbeddedLog, partition_for


def _items(n: int, tables: int = 3) -> list[tuple[bytes, bytes]]:
    return [(f"T{i % tables:02d}".encode(), f"event-{i}".encode() * 3) for i in range(n)]


def _all(log: EmbeddedLog) -> list[tuple[int, int, bytes, bytes]]:
    return [(r.partition, r.offset, r.key, r.value) for b in log.read() for r in b]


def test_offsets_are_gapless_per_partition_and_each_table_keeps_its_order(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=2)
    items = _items(30)
    positions = log.append(items)
    for p in (0, 1):
        offsets = [o for (part, o) in positions if part == p]
        assert offsets == list(range(len(offsets)))
    by_table: dict[bytes, list[bytes]] = {}
    for _, _, key, value in _all(log):
        by_table.setdefault(key, []).append(value)
    for key, values in by_table.items():
        assert values == [v for k, v in items if k == key]
    assert positions[0][0] == partition_for(b"T00", 2)


def test_read_from_a_checkpoint_returns_only_later_records(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    log.append(_items(10))
    rest = [r.offset for b in log.read({0: 7}) for r in b]
    assert rest == [7, 8, 9]


def test_reopened_log_sees_every_appended_record(tmp_path: Path) -> None:
    EmbeddedLog(tmp_path / "log", partitions=2).append(_items(25))
    assert len(_all(EmbeddedLog(tmp_path / "log"))) == 25


def test_torn_tail_is_truncated_on_open_and_earlier_records_are_untouched(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    log.append(_items(5))
    seg = tmp_path / "log" / "p0000.seg"
    before = seg.read_bytes()
    # A crash mid-write: a frame header that promises 100 bytes, then only 7 of them.
    with seg.open("ab") as f:
        f.write(FRAME.pack(100, 0, 3) + b"T00torn")
    reopened = EmbeddedLog(tmp_path / "log")
    report = reopened.recover()
    assert report[0] == (0, FRAME.size + 7)
    assert seg.read_bytes() == before
    assert [v for *_, v in _all(reopened)] == [v for _, v in _items(5)]
    # and appending continues at offset 5
    assert reopened.append([(b"T00", b"next")]) == [(0, 5)]


def test_whole_record_written_but_not_indexed_is_kept_on_recovery(tmp_path: Path) -> None:
    import zlib

    log = EmbeddedLog(tmp_path / "log", partitions=1)
    log.append(_items(3))
    body = b"T01" + b"durable-but-unindexed"
    with (tmp_path / "log" / "p0000.seg").open("ab") as f:
        f.write(FRAME.pack(len(body), zlib.crc32(body), 3) + body)
    reopened = EmbeddedLog(tmp_path / "log")
    assert reopened.recover()[0] == (1, 0)
    assert _all(reopened)[-1] == (0, 3, b"T01", b"durable-but-unindexed")


def test_record_with_a_bad_crc_at_the_tail_is_truncated(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    log.append(_items(2))
    body = b"T00" + b"half-written garbage"
    with (tmp_path / "log" / "p0000.seg").open("ab") as f:
        f.write(FRAME.pack(len(body), 12345, 3) + body)
    reopened = EmbeddedLog(tmp_path / "log")
    assert reopened.recover()[0] == (0, FRAME.size + len(body))
    assert len(_all(reopened)) == 2


def test_partial_index_entry_is_dropped(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    log.append(_items(4))
    with (tmp_path / "log" / "p0000.idx").open("ab") as f:
        f.write(struct.pack("<I", 99))  # 4 of 8 bytes
    reopened = EmbeddedLog(tmp_path / "log")
    reopened.recover()
    assert reopened.end_offsets() == {0: 4}


def _files(folder: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir())}


def _cut_last(seg: Path, _idx: Path) -> None:
    seg.write_bytes(seg.read_bytes()[:-7])  # `truncate -s -7`: the last record cut short


def _flip_last_byte(seg: Path, _idx: Path) -> None:
    data = bytearray(seg.read_bytes())
    data[-1] ^= 0x01  # the last record whole, its CRC-32 no longer matching
    seg.write_bytes(bytes(data))


def _last_entry_to_zero(_seg: Path, idx: Path) -> None:
    idx.write_bytes(idx.read_bytes()[:-8] + bytes(8))  # the last entry names record 0's byte


REBUILD = " (or delete p0001.idx and let the next writer rebuild it from the segment)"


@pytest.mark.parametrize(("damage", "what", "fix"), [
    (_cut_last, "is cut short: the file ends at byte", ""),
    (_flip_last_byte, "is damaged: its bytes do not match the CRC-32 in its frame header", ""),
    (_last_entry_to_zero, "is not there: its entry points at byte 0", REBUILD),
])
def test_a_writer_refuses_to_append_after_an_indexed_record_that_is_not_whole(
        tmp_path: Path, damage: object, what: str, fix: str) -> None:
    """A record the .idx lists was committed and acknowledged (it is fsynced before its entry,
    and the journal undoes an append that did not commit), so a writer finding it damaged may
    not drop it: recovery dropped it (or, for an entry naming an earlier record, indexed the
    records after that one a second time) and appended another record at its offset. The
    append is refused, nothing written, not even the torn tail of another partition cut."""
    folder = tmp_path / "log"
    log = EmbeddedLog(folder, partitions=2)
    log.append(_items(12, tables=4))
    seg, idx = folder / "p0001.seg", folder / "p0001.idx"
    last = len(idx.read_bytes()) // 8 - 1
    damage(seg, idx)  # type: ignore[operator]
    _, at = log.segment_position(1, last)  # where the .idx (now) says the record is
    with (folder / "p0000.seg").open("ab") as f:  # a legitimately torn tail elsewhere
        f.write(FRAME.pack(100, 0, 3) + b"T00torn")
    before = _files(folder)
    writer = EmbeddedLog(folder)
    for attempt in (lambda: writer.append([(b"T01", b"new")]), writer.recover,
                    writer.last_values):
        with pytest.raises(LogCorruptError) as err:
            attempt()
        assert str(err.value).startswith(f"{seg}: record {last} at byte {at}, which p0001.idx "
                                          f"lists (committed and acknowledged), {what}")
        assert str(err.value).endswith(
            f"nothing was appended, as a writer never drops a committed record to append "
            f"after it: restore the log folder from a backup{fix}; `pitlog verify --log "
            f"{folder}` shows the damage")
        assert err.value.partition == 1 and "\n" not in str(err.value)
        assert _files(folder) == before


def test_recovery_after_a_crash_still_cuts_the_torn_tail_and_indexes_whole_records_again(
        tmp_path: Path) -> None:
    """What recovery may repair, beside the refusal above: past the last indexed record (whole),
    one whole record whose entry was lost and a torn one (a crash between segment and index:
    never acknowledged): the first is indexed again, the second cut, and appending goes on."""
    import zlib

    log = EmbeddedLog(tmp_path / "log", partitions=1)
    log.append(_items(3))
    body = b"T02" + b"whole-but-unindexed"
    with (tmp_path / "log" / "p0000.seg").open("ab") as f:
        f.write(FRAME.pack(len(body), zlib.crc32(body), 3) + body)
        f.write(FRAME.pack(100, 0, 3) + b"T00torn")
    reopened = EmbeddedLog(tmp_path / "log")
    assert reopened.append([(b"T00", b"next")]) == [(0, 4)]
    assert [v for *_, v in _all(reopened)][3:] == [b"whole-but-unindexed", b"next"]


def test_partition_count_is_fixed_at_creation(tmp_path: Path) -> None:
    EmbeddedLog(tmp_path / "log", partitions=2)
    with pytest.raises(LogError, match="has 2 partitions, not 3"):
        EmbeddedLog(tmp_path / "log", partitions=3)


def test_only_a_log_made_and_left_empty_is_removed_and_only_whole(tmp_path: Path) -> None:
    """remove_if_made_and_empty (`pitlog ingest` of refused lines only): the log this object
    made goes, with the folders made for it; a log with a record, one that was there before,
    and one beside another file stay whole."""
    made = EmbeddedLog(tmp_path / "new" / "log", partitions=2)
    made.last_values()  # a writer's recovery makes the partitions' files
    made.remove_if_made_and_empty()
    assert list(tmp_path.iterdir()) == []
    written = EmbeddedLog(tmp_path / "written", partitions=2)
    written.append(_items(1))
    written.remove_if_made_and_empty()
    assert len(_all(EmbeddedLog(tmp_path / "written"))) == 1
    there = EmbeddedLog(tmp_path / "empty", partitions=2)
    there.last_values()
    before = sorted(p.name for p in (tmp_path / "empty").iterdir())
    EmbeddedLog(tmp_path / "empty").remove_if_made_and_empty()  # opened, not made, here
    assert sorted(p.name for p in (tmp_path / "empty").iterdir()) == before
    (tmp_path / "empty" / "event-ids.sqlite").write_bytes(b"held by another writer")
    there.remove_if_made_and_empty()
    assert sorted(p.name for p in (tmp_path / "empty").iterdir()) == sorted(
        [*before, "event-ids.sqlite"])


def test_a_writer_that_had_a_removed_log_open_appends_nothing(tmp_path: Path) -> None:
    """Records appended after the log's meta.json went would lie in a folder no reader takes
    for a log: refused, naming it."""
    made = EmbeddedLog(tmp_path / "log", partitions=2)
    other = EmbeddedLog(tmp_path / "log")
    made.remove_if_made_and_empty()
    (tmp_path / "log").mkdir()  # made again by another hand, without a log in it
    with pytest.raises(LogError, match=f"the log at {tmp_path / 'log'} was removed while this "
                                       f"writer had it open: nothing was appended"):
        other.append(_items(1))
    assert list((tmp_path / "log").iterdir()) == []  # no segment, and no lock file made there


def test_a_writer_waiting_on_a_removed_logs_lock_does_not_write_into_a_log_made_again(
        tmp_path: Path) -> None:
    """A writer waiting for the writer lock while the log is removed (an ingest that recorded
    nothing) and made again by a third writer got the removed lock file: holding a lock no
    other writer takes, it could append beside the new log's writer (a second read, session
    41). Now it finds the lock file no longer the log's and appends nothing."""
    import os
    import threading

    folder = tmp_path / "log"
    made = EmbeddedLog(folder, partitions=2)
    waiting = EmbeddedLog(folder)
    lock = folder / "writer.lock"
    caught: list[BaseException] = []

    def append() -> None:
        try:
            waiting.append(_items(1))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            caught.append(exc)

    def lock_fds() -> int:
        fds = Path("/proc/self/fd")
        return sum(1 for fd in fds.iterdir()
                   if os.path.realpath(fd).startswith(str(lock)))

    with made._writer_lock():  # the removal holds it, as remove_if_made_and_empty does
        thread = threading.Thread(target=append)
        thread.start()
        while lock_fds() < 2 and thread.is_alive():  # the waiter has the old lock file open
            thread.join(0.01)
        for path in folder.iterdir():
            path.unlink()
        again = EmbeddedLog(folder, partitions=2)  # a third writer makes the log again
    thread.join(30)
    assert not thread.is_alive()
    assert len(caught) == 1 and isinstance(caught[0], LogError), caught
    assert str(caught[0]) == (f"the log at {folder} was removed while this writer had it "
                              f"open: nothing was appended; open it again")
    assert again.end_offsets() == {0: 0, 1: 0}


def test_removing_a_made_log_whose_folder_went_already_is_quiet(tmp_path: Path) -> None:
    """`pitlog ingest` removes the log it made when it recorded nothing, in a `finally`: a
    folder already gone (another such ingest removed it, or a hand) raised the lock's LogError
    there, which replaced the run's own report (a second read, session 41)."""
    import shutil

    made = EmbeddedLog(tmp_path / "new" / "log", partitions=2)
    shutil.rmtree(tmp_path / "new")
    made.remove_if_made_and_empty()  # nothing to do, and nothing raised
    assert not (tmp_path / "new").exists()

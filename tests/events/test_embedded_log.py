"""The embedded log: append-only, gapless per partition, durable, and repaired after a crash."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from events.errors import LogError
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


def test_partition_count_is_fixed_at_creation(tmp_path: Path) -> None:
    EmbeddedLog(tmp_path / "log", partitions=2)
    with pytest.raises(LogError, match="has 2 partitions, not 3"):
        EmbeddedLog(tmp_path / "log", partitions=3)

"""One partition of the embedded log on disk (its .seg and .idx), and the append journal.

The record format and the layout are described in events/embedded_log.py. This module knows
the bytes: framing, the crash repair of one partition, rebuilding an index from its segment
(what `verify` trusts instead of the .idx), and the undo journal that makes an append of
several records, in several partitions, all or nothing.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from array import array
from pathlib import Path
from typing import BinaryIO

FRAME = struct.Struct("<IIH")
JOURNAL = "append.pending"


class Partition:
    """A partition's two files. Nothing here creates a file except `recover` (a writer's):
    a reader, `verify` on a read-only copy among them, writes nothing."""

    def __init__(self, folder: Path, number: int) -> None:
        self.number = number
        self.seg_path = folder / f"p{number:04d}.seg"
        self.idx_path = folder / f"p{number:04d}.idx"
        # Positions rebuilt from the segment, used instead of the .idx (verify only).
        self.override: array | None = None

    def count(self) -> int:
        if self.override is not None:
            return len(self.override)
        try:
            return self.idx_path.stat().st_size // 8
        except FileNotFoundError:  # a reader sees an empty partition; verify reports it
            return 0

    def seg_size(self) -> int:
        try:
            return self.seg_path.stat().st_size
        except FileNotFoundError:
            return 0

    def positions(self, start: int, stop: int) -> array:
        if self.override is not None:
            return self.override[start:stop]
        pos = array("Q")
        with self.idx_path.open("rb") as f:
            f.seek(start * 8)
            pos.frombytes(f.read((stop - start) * 8))
        return pos

    def recover(self) -> tuple[int, int]:
        """Repair a crashed tail; return (records indexed anew, bytes truncated).

        Run after the journal's rollback (events/embedded_log.py), so a crashed append has
        left nothing past the index: whole records found there are committed records whose
        index entries were lost (a deleted or half-restored .idx) and are indexed again."""
        for p in (self.seg_path, self.idx_path):
            p.touch(exist_ok=True)
        idx_size = self.idx_path.stat().st_size
        if idx_size % 8:
            with self.idx_path.open("r+b") as f:
                f.truncate(idx_size - idx_size % 8)
        seg_size = self.seg_path.stat().st_size
        n = self.count()
        with self.seg_path.open("r+b") as seg:
            # Index entries whose record is not whole in the segment (a copied or half-restored
            # folder) are dropped.
            end = 0
            while n:
                (last,) = self.positions(n - 1, n)
                rec_end = valid_record_end(seg, last, seg_size)
                if rec_end is not None:
                    end = rec_end
                    break
                n -= 1
            if n != self.count():
                with self.idx_path.open("r+b") as f:
                    f.truncate(n * 8)
            new_positions, pos = scan_frames(seg, end, seg_size)
            truncated = seg_size - pos
            if truncated:
                seg.truncate(pos)
                seg.flush()
                os.fsync(seg.fileno())
        if new_positions:
            with self.idx_path.open("ab") as f:
                f.write(new_positions.tobytes())
                f.flush()
                os.fsync(f.fileno())
        return len(new_positions), truncated

    def truncate_to(self, seg_size: int, count: int) -> None:
        """Roll back to sizes taken before an append (never grows a file)."""
        for path, size in ((self.idx_path, count * 8), (self.seg_path, seg_size)):
            if path.exists() and path.stat().st_size > size:
                with path.open("r+b") as f:
                    f.truncate(size)
                    f.flush()
                    os.fsync(f.fileno())

    def rebuilt_index(self) -> tuple[array, int]:
        """The positions of the whole, CRC-valid records of the segment, read from the segment
        itself, and the bytes after the last of them (torn or damaged)."""
        size = self.seg_size()
        if not size:
            return array("Q"), 0
        with self.seg_path.open("rb") as seg:
            positions, end = scan_frames(seg, 0, size)
        return positions, size - end


def scan_frames(seg: BinaryIO, start: int, size: int) -> tuple[array, int]:
    """Positions of consecutive valid records from `start`; and where the first invalid one (or
    the end) is."""
    positions = array("Q")
    pos = start
    while pos < size:
        rec_end = valid_record_end(seg, pos, size)
        if rec_end is None:
            break
        positions.append(pos)
        pos = rec_end
    return positions, pos


def valid_record_end(seg: BinaryIO, pos: int, seg_size: int) -> int | None:
    if pos + FRAME.size > seg_size:
        return None
    seg.seek(pos)
    length, crc, key_len = FRAME.unpack(seg.read(FRAME.size))
    end = pos + FRAME.size + length
    if end > seg_size or key_len > length:
        return None
    body = seg.read(length)
    return end if zlib.crc32(body) == crc else None


# --- the append journal ---------------------------------------------------------------------
# Before an append writes a byte, it records each partition's sizes in `append.pending`
# (fsynced); it removes the file once every partition's segment and index are fsynced. That
# removal is the append's commit. A failed append truncates back and removes it; after a crash
# the next writer finds it and truncates back before anything else. Readers meanwhile see no
# record past the journal's sizes, so no one ever reads a record of a batch that did not commit.


def write_journal(folder: Path, sizes: dict[int, tuple[int, int]]) -> None:
    path, tmp = folder / JOURNAL, folder / (JOURNAL + ".tmp")
    with tmp.open("w") as f:
        json.dump({str(n): list(s) for n, s in sizes.items()}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(folder)


def read_journal(folder: Path) -> dict[int, tuple[int, int]] | None:
    """Partition -> (segment bytes, index entries) before the pending append; None if none."""
    try:
        raw = (folder / JOURNAL).read_text()
    except FileNotFoundError:
        return None
    return {int(n): (int(s[0]), int(s[1])) for n, s in json.loads(raw).items()}


def remove_journal(folder: Path) -> None:
    (folder / JOURNAL).unlink(missing_ok=True)
    fsync_dir(folder)


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

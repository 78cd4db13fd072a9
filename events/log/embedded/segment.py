"""One partition of the embedded log on disk (its .seg and .idx), and the append journal.

The record format and the layout are described in events/log/embedded/log.py. This module knows
the bytes: framing, the crash repair of one partition, rebuilding an index from its segment
(what `verify` trusts instead of the .idx), and the undo journal that makes an append of
several records, in several partitions, all or nothing.
"""

from __future__ import annotations

import io
import json
import os
import struct
import zlib
from array import array
from pathlib import Path
from typing import Any, BinaryIO

from events.errors import LogCorruptError, LogError

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
        try:
            f = self.idx_path.open("rb")
        except FileNotFoundError:
            # Opened again by path for each batch: gone while a read was under way (the log
            # moved away, which the caller tells by EventLog.check_same_log, or the .idx
            # removed), this partition's damage, never a bare OSError that stops a follower.
            raise LogCorruptError(f"{self.idx_path} is missing, though records of it were being "
                                  f"read: restore the log folder (or this index from a backup)",
                                  self.number) from None
        with f:
            f.seek(start * 8)
            pos.frombytes(f.read((stop - start) * 8))
        return pos

    def cut_short(self, offset: int, size: int | None = None) -> bool:
        """Whether record `offset`, not whole in the segment (`size` bytes), was cut off by a
        truncated segment. A truncation leaves the index as it was: the entry starts where the
        record before it ends (or that record is cut too, its frame header gone) and every
        later entry lies further on, past the end. Otherwise the entry is damaged (out of
        order, or not at a frame boundary) or, where a later record starts inside the file,
        the record's own frame header (its length). Read only on the way to an error (the
        whole rest of the index)."""
        size = self.seg_size() if size is None else size
        rest = self.positions(offset, self.count())
        if not rest or any(b <= a for a, b in zip(rest, rest[1:], strict=False)) \
                or (len(rest) > 1 and rest[1] < size):
            return False
        if offset == 0:
            return rest[0] == 0
        (prev,) = self.positions(offset - 1, offset)
        if prev >= rest[0]:
            return False
        if prev + FRAME.size > size:
            return True
        with self.seg_path.open("rb") as seg:
            seg.seek(prev)
            length = FRAME.unpack(seg.read(FRAME.size))[0]
        return bool(rest[0] == prev + FRAME.size + length)

    def indexed_end(self) -> int:
        """Where the last record the .idx lists ends in the segment (0: it lists none). Raises
        LogCorruptError, writing nothing, if the segment does not hold that record whole and
        CRC-valid where its entry says, after the record before it.

        Such a record is committed and was acknowledged: a writer fsyncs a record before its
        .idx entry, and the journal's rollback (events/log/embedded/log.py) has already undone
        any append that did not commit. So it was damaged afterwards (a truncated segment, a
        half-restored folder, a garbled entry or byte). Dropping it, as recovery once did,
        lost the record and let the next append put another at its offset, past a store's
        checkpoint: nothing lost, nothing invented (docs/integrity.md) forbids both."""
        n = self.count()
        if not n:
            return 0
        offset, size = n - 1, self.seg_size()
        (pos,) = self.positions(offset, n)
        try:
            seg: BinaryIO = self.seg_path.open("rb")
        except FileNotFoundError:  # a deleted segment: every record it held is cut off
            seg = io.BytesIO()
        with seg:
            length, key_len = _frame_at(seg, pos, size)
            end = valid_record_end(seg, pos, size)
            prev_pos = prev_end = 0
            if offset:
                (prev_pos,) = self.positions(offset - 1, offset)
                prev_end = prev_pos + FRAME.size + _frame_at(seg, prev_pos, size)[0]
            if length < 0 or pos + FRAME.size + length > size:  # not whole by its own length
                what = (f"cut short: the file ends at byte {size}, before the record does (the "
                        f"segment was truncated, or only partly restored, after the record was "
                        f"written)" if self.cut_short(offset, size) else
                        self._entry_damaged(pos, size))
            # As verify judges an entry (check_index): in order, and after the record before
            # it or at a valid record.
            elif (pos <= prev_pos if offset else pos != 0) or (pos != prev_end and end is None):
                what = self._entry_damaged(pos, size)
            elif end is None:
                what = ("damaged: its frame header says its key is longer than its body"
                        if key_len > length else
                        "damaged: its bytes do not match the CRC-32 in its frame header")
            else:
                return end
        fix = "restore the log folder from a backup"
        if what.startswith("not there"):
            fix += (f" (or delete {self.idx_path.name} and let the next writer rebuild it from "
                    f"the segment)")
        raise LogCorruptError(
            f"{self.seg_path}: record {offset} at byte {pos}, which {self.idx_path.name} lists "
            f"(committed and acknowledged), is {what}; nothing was appended, as a writer never "
            f"drops a committed record to append after it: {fix}; `pitlog verify --log "
            f"{self.seg_path.parent}` shows the damage", self.number)

    def _entry_damaged(self, pos: int, size: int) -> str:
        return (f"not there: its entry points at byte {pos} (the segment has {size} bytes), "
                f"not after the record before it, so the .idx entry is damaged")

    def recover(self) -> tuple[int, int]:
        """Repair a crashed tail; return (records indexed anew, bytes truncated).

        Run after the journal's rollback (events/log/embedded/log.py), so a crashed append has
        left nothing past the index: whole records found there are committed records whose
        index entries were lost (a deleted or half-restored .idx) and are indexed again, and
        bytes after them are a tail torn before its index entry was written (nothing
        acknowledged), truncated. Records the .idx lists are never touched: if the last is not
        whole, `indexed_end` refuses, before anything is written."""
        end = self.indexed_end()
        for p in (self.seg_path, self.idx_path):
            p.touch(exist_ok=True)
        idx_size = self.idx_path.stat().st_size
        if idx_size % 8:  # an entry torn mid-write: its record was never acknowledged
            with self.idx_path.open("r+b") as f:
                f.truncate(idx_size - idx_size % 8)
        seg_size = self.seg_path.stat().st_size
        with self.seg_path.open("r+b") as seg:
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

    def check_index(self, seg_limit: int | None, count_limit: int | None
                    ) -> tuple[array | None, list[tuple[int, str]]]:
        """For `verify`, which never trusts the .idx blindly: compare it with the segment's own
        framing. Returns the positions to read instead (None: the .idx is right) and the
        findings, (offset, what). `seg_limit`/`count_limit`: a pending append's sizes (its
        records are not committed, so not judged).

        An entry is wrong if it does not follow the record before it (by that record's length)
        and does not start a CRC-valid record either: a damaged length field leaves the .idx
        right (verify reports that record's framing), a damaged entry does not. Entries past
        the segment's end are a truncated segment (reported record by record by verify) only
        when `cut_short` says so; otherwise the entry is damaged, as above."""
        size = self.seg_size() if seg_limit is None else min(self.seg_size(), seg_limit)
        name = self.idx_path.name
        if not self.idx_path.exists():
            if not size:
                return None, []
            with self.seg_path.open("rb") as seg:
                walk = walk_frames(seg, 0, size)
            return walk, [(0, f"{name} is missing: the segment holds {len(walk)} records no "
                              f"reader of the log sees; the next writer (pitlog simulate or "
                              f"ingest) rebuilds it")]
        n = self.count() if count_limit is None else min(self.count(), count_limit)
        if not self.seg_path.exists():  # gone: the reading reports it, as a segment cut to 0
            return None, []
        with self.seg_path.open("rb") as seg:
            fast_end = self._back_to_back(seg, n, size)
            stored = self.positions(0, n) if fast_end is None else array("Q")
            prev_end = 0 if fast_end is None else fast_end
            for i, pos in enumerate(stored):
                if pos >= size and self.cut_short(i, size):
                    # A truncated segment: each record it lost is reported by the reading,
                    # with the log's own message (events/log/embedded/log.py, _beyond_end).
                    return None, []
                if pos >= size or (pos != prev_end and (
                        i == 0 or pos <= stored[i - 1] or
                        valid_record_end(seg, pos, size) is None)):
                    walk = walk_frames(seg, 0, size)
                    where = (f"past the segment's end ({size} bytes) where no record was cut "
                             f"off" if pos >= size else "not at a record")
                    return walk, [(i, (
                        f"{name} disagrees with the segment at offset {i}: its entry points "
                        f"at byte {pos}, {where}: the entry is damaged, not the segment; "
                        f"verify read the segment's {len(walk)} records instead. Readers go by "
                        f"{name}: restore it from a backup, or delete {name} and let the next "
                        f"writer rebuild it from the segment"))]
                seg.seek(pos)
                frame = seg.read(FRAME.size)
                prev_end = pos + FRAME.size + (FRAME.unpack(frame)[0]
                                               if len(frame) == FRAME.size else 0)
            extra, _ = scan_frames(seg, prev_end, size) if prev_end <= size else (array("Q"), 0)
        if not extra:
            return None, []
        return (stored or self.positions(0, n)) + extra, [(n, (
            f"{self.seg_path.name} holds {len(extra)} whole records after the last one "
            f"{name} lists: readers do not see them; the next writer indexes them"))]

    def _back_to_back(self, seg: BinaryIO, n: int, size: int, chunk: int = 2048) -> int | None:
        """Where the last record ends, if every .idx entry starts where the record before it ends
        (the first at 0) and inside the segment, as in every intact log; None otherwise, and the
        caller walks the entries one at a time to say where. The frames' lengths are read with
        numpy a chunk of entries at a time (issue 19: this was a seek and a read per record)."""
        import numpy as np  # verify only

        prev_end = 0
        for first in range(0, n, chunk):  # a chunk of entries and their records at a time
            p = np.frombuffer(self.positions(first, min(n, first + chunk)), np.uint64)
            p = p.astype(np.int64)
            # Damaged entries (beyond the segment, negative as int64, not increasing) are not
            # back to back: the caller walks them one at a time and says where.
            if int(p.max()) + FRAME.size > size or int(p.min()) < 0 \
                    or (len(p) > 1 and bool((np.diff(p) <= 0).any())):
                return None
            seg.seek(int(p[0]))
            b = np.frombuffer(seg.read(int(p[-1]) + FRAME.size - int(p[0])), dtype=np.uint8)
            rel = p - p[0]
            if len(b) < rel[-1] + FRAME.size:
                return None
            ends = p + FRAME.size + frame_fields(b, rel)[0]
            if p[0] != prev_end or not np.array_equal(p[1:], ends[:-1]):
                return None
            prev_end = int(ends[-1])
        return prev_end


def frame_fields(b: Any, rel: Any) -> tuple[Any, Any]:
    """The body length and key length of the frames starting at `rel` in the numpy bytes `b`
    (FRAME, little-endian), as int64 arrays: every frame of a batch at once."""
    import numpy as np

    def u(i: int) -> Any:
        return b[rel + i].astype(np.int64)

    return u(0) | u(1) << 8 | u(2) << 16 | u(3) << 24, u(8) | u(9) << 8


def _frame_at(seg: BinaryIO, pos: int, size: int) -> tuple[int, int]:
    """The body and key lengths in the frame header at `pos`; (-1, -1) if the segment ends
    before the header does."""
    if pos + FRAME.size > size:
        return -1, -1
    seg.seek(pos)
    length, _, key_len = FRAME.unpack(seg.read(FRAME.size))
    return length, key_len


def walk_frames(seg: BinaryIO, start: int, size: int) -> array:
    """Positions of the records from `start`, by their lengths alone (a record whose CRC
    fails is still a record: verify reports what is wrong inside it)."""
    positions = array("Q")
    pos = start
    while pos + FRAME.size <= size:
        seg.seek(pos)
        length, _, key_len = FRAME.unpack(seg.read(FRAME.size))
        end = pos + FRAME.size + length
        if end > size or key_len > length:
            break
        positions.append(pos)
        pos = end
    return positions


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
    """Partition -> (segment bytes, index entries) before the pending append; None if none.
    Raises LogError when the file is there but not what write_journal writes."""
    path = folder / JOURNAL
    try:
        raw = path.read_text()
    except FileNotFoundError:
        return None
    try:
        found = json.loads(raw)
        journal = {int(n): (int(s[0]), int(s[1])) for n, s in found.items()}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        journal, why = {}, f"{type(exc).__name__}: {exc}"
    else:
        why = "" if all(min(n, *s) >= 0 for n, s in journal.items()) else "a negative number"
    if why:
        # Written whole to a temporary file and renamed into place: never seen half-written.
        raise LogError(f"{path} is unreadable ({why}): it is written whole and renamed into "
                       f"place, so the folder was damaged by hand; restore the log from a backup")
    return journal


def remove_journal(folder: Path) -> None:
    (folder / JOURNAL).unlink(missing_ok=True)
    fsync_dir(folder)


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

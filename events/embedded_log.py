"""The embedded default log: append-only segment files on local disk, no server needed.

Layout of a log folder:
  meta.json        {"format": 1, "partitions": N}
  pNNNN.seg        framed records: u32 body length, u32 CRC-32 of the body, u16 key length,
                   then the body (key bytes, then value bytes)
  pNNNN.idx        u64 byte position of each record in the .seg, one per offset; it is the commit
                   marker: a record exists once its index entry does
  writer.lock      flock'd while appending, so two processes never interleave records

Durability: an append writes the records, fsyncs the segment, then writes and fsyncs the index.
A crash can leave a torn record at the segment's tail or a record with no index entry. Opening
for writing repairs both: whole, CRC-valid records past the index are indexed, and the first
torn or invalid one is truncated with everything after it. Earlier records are never touched.
"""

from __future__ import annotations

import fcntl
import json
import os
import struct
import zlib
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from events.errors import ConcurrencyError, LogCorruptError, LogError
from events.log import EventLog, LogRecord

FRAME = struct.Struct("<IIH")
FORMAT_VERSION = 1
DEFAULT_PARTITIONS = 4


def partition_for(key: bytes, partitions: int) -> int:
    """Stable across processes and machines (unlike hash())."""
    return zlib.crc32(key) % partitions


class _Partition:
    def __init__(self, folder: Path, number: int) -> None:
        self.number = number
        self.seg_path = folder / f"p{number:04d}.seg"
        self.idx_path = folder / f"p{number:04d}.idx"
        for p in (self.seg_path, self.idx_path):
            p.touch(exist_ok=True)

    def count(self) -> int:
        return self.idx_path.stat().st_size // 8

    def positions(self, start: int, stop: int) -> array:
        pos = array("Q")
        with self.idx_path.open("rb") as f:
            f.seek(start * 8)
            pos.frombytes(f.read((stop - start) * 8))
        return pos

    def recover(self) -> tuple[int, int]:
        """Repair a crashed tail; return (records indexed anew, bytes truncated)."""
        idx_size = self.idx_path.stat().st_size
        if idx_size % 8:
            with self.idx_path.open("r+b") as f:
                f.truncate(idx_size - idx_size % 8)
        seg_size = self.seg_path.stat().st_size
        n = self.count()
        with self.seg_path.open("r+b") as seg:
            # Index entries whose record is not whole in the segment (cannot happen with the
            # write order above, but a copied or half-restored folder can) are dropped.
            end = 0
            while n:
                (last,) = self.positions(n - 1, n)
                rec_end = self._valid_record_end(seg, last, seg_size)
                if rec_end is not None:
                    end = rec_end
                    break
                n -= 1
            if n != self.count():
                with self.idx_path.open("r+b") as f:
                    f.truncate(n * 8)
            new_positions = array("Q")
            pos = end
            while pos < seg_size:
                rec_end = self._valid_record_end(seg, pos, seg_size)
                if rec_end is None:
                    break
                new_positions.append(pos)
                pos = rec_end
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

    @staticmethod
    def _valid_record_end(seg: object, pos: int, seg_size: int) -> int | None:
        f = seg  # type: ignore[assignment]
        if pos + FRAME.size > seg_size:
            return None
        f.seek(pos)  # type: ignore[attr-defined]
        length, crc, key_len = FRAME.unpack(f.read(FRAME.size))  # type: ignore[attr-defined]
        end = pos + FRAME.size + length
        if end > seg_size or key_len > length:
            return None
        body = f.read(length)  # type: ignore[attr-defined]
        return end if zlib.crc32(body) == crc else None


class EmbeddedLog(EventLog):
    """Segment files in one folder; see the module docstring for the format."""

    def __init__(self, folder: Path, *, partitions: int | None = None, create: bool = True) -> None:
        self.folder = folder
        self.uri = f"file://{folder.resolve()}"
        meta_path = folder / "meta.json"
        if meta_path.exists():
            try:
                meta = json.loads(meta_path.read_text())
                self.n_partitions = int(meta["partitions"])
            except (ValueError, KeyError) as exc:
                raise LogError(
                    f"{meta_path}: unreadable ({exc}); restore it from a backup"
                ) from exc
            if partitions is not None and partitions != self.n_partitions:
                raise LogError(
                    f"{folder} has {self.n_partitions} partitions, not {partitions}: "
                    f"partitions are fixed when a log is created"
                )
        elif create:
            folder.mkdir(parents=True, exist_ok=True)
            self.n_partitions = partitions or DEFAULT_PARTITIONS
            tmp = meta_path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"format": FORMAT_VERSION, "partitions": self.n_partitions}))
            os.replace(tmp, meta_path)
        else:
            raise LogError(
                f"no event log at {folder}: run `pitlog simulate` or `pitlog ingest` first"
            )
        self._parts = [_Partition(folder, i) for i in range(self.n_partitions)]
        self._lock_path = folder / "writer.lock"
        self._recovered = False
        # Each key's last value, and per partition how many records it reflects: the
        # optimistic concurrency check reads only what other writers appended since.
        self._tails: dict[bytes, bytes] = {}
        self._tails_upto: dict[int, int] = {}

    # --- writing --------------------------------------------------------------------------------

    def recover(self) -> dict[int, tuple[int, int]]:
        """Repair torn tails in every partition (done before the first append of a process)."""
        with self._writer_lock():
            return self._recover_locked()

    def _recover_locked(self) -> dict[int, tuple[int, int]]:
        report = {p.number: p.recover() for p in self._parts}
        self._recovered = True
        return report

    def _writer_lock(self) -> _Flock:
        return _Flock(self._lock_path)

    def append(self, items: Sequence[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        return self.append_expecting(items, None)

    def append_expecting(
        self, items: Sequence[tuple[bytes, bytes]], expected: Mapping[bytes, bytes | None] | None
    ) -> list[tuple[int, int]]:
        """`append`, if each key's last value still ends with `expected[key]` (None: the key
        has no records yet); otherwise ConcurrencyError and nothing is appended.

        Optimistic concurrency for writers of one table in several processes (issue 6): the
        recorder passes the hash its batch continues from. Checked under the writer flock, so
        check and append are atomic; it costs one index stat per partition when no one else
        wrote since this object's last append."""
        by_part: dict[int, list[int]] = {}
        for i, (key, _) in enumerate(items):
            by_part.setdefault(partition_for(key, self.n_partitions), []).append(i)
        result: list[tuple[int, int]] = [(0, 0)] * len(items)
        with self._writer_lock():
            if not self._recovered:
                self._recover_locked()
            if expected:
                self._refresh_tails({partition_for(k, self.n_partitions) for k in expected})
                moved = [
                    k for k, tail in expected.items() if not _ends_with(self._tails.get(k), tail)
                ]
                if moved:
                    names = ", ".join(k.decode("utf-8", "backslashreplace") for k in moved)
                    raise ConcurrencyError(
                        f"{names}: another writer appended since this writer read the head; "
                        f"nothing was appended: reload the head and retry"
                    )
            for number, indices in by_part.items():
                part = self._parts[number]
                first = part.count()
                with part.seg_path.open("ab") as seg:
                    pos = seg.tell()
                    chunks: list[bytes] = []
                    positions = array("Q")
                    for i in indices:
                        key, value = items[i]
                        if len(key) > 0xFFFF:
                            raise LogError(f"key of {len(key)} bytes is too long (max 65535)")
                        body = key + value
                        chunks.append(FRAME.pack(len(body), zlib.crc32(body), len(key)))
                        chunks.append(body)
                        positions.append(pos)
                        pos += FRAME.size + len(body)
                    seg.write(b"".join(chunks))
                    seg.flush()
                    os.fsync(seg.fileno())
                with part.idx_path.open("ab") as idx:
                    idx.write(positions.tobytes())
                    idx.flush()
                    os.fsync(idx.fileno())
                for k, i in enumerate(indices):
                    result[i] = (number, first + k)
                if self._tails_upto.get(number) == first:  # the cache stays current for free
                    for i in indices:
                        self._tails[items[i][0]] = items[i][1]
                    self._tails_upto[number] = first + len(indices)
        return result

    def last_values(self) -> dict[bytes, bytes]:
        """Each key's last value (for the recorder's heads), read once and then kept current."""
        self._refresh_tails(range(self.n_partitions))
        return dict(self._tails)

    def _refresh_tails(self, numbers: Iterable[int]) -> None:
        for number in numbers:
            part = self._parts[number]
            upto, end = self._tails_upto.get(number, 0), part.count()
            if upto < end:
                with part.seg_path.open("rb") as seg:
                    for start in range(upto, end, 5000):
                        for rec in self._read_range(part, seg, start, min(end, start + 5000)):
                            self._tails[rec.key] = rec.value
                self._tails_upto[number] = end

    # --- reading --------------------------------------------------------------------------------

    def end_offsets(self) -> dict[int, int]:
        return {p.number: p.count() for p in self._parts}

    def read(
        self, start: Mapping[int, int] | None = None, *, max_batch: int = 5000
    ) -> Iterator[list[LogRecord]]:
        start = start or {}
        ends = self.end_offsets()
        for part in self._parts:
            offset, end = start.get(part.number, 0), ends[part.number]
            with part.seg_path.open("rb") as seg:
                while offset < end:
                    stop = min(end, offset + max_batch)
                    yield self._read_range(part, seg, offset, stop)
                    offset = stop

    def _read_range(self, part: _Partition, seg: object, start: int, stop: int) -> list[LogRecord]:
        positions = part.positions(start, stop)
        first = positions[0]
        f = seg  # type: ignore[assignment]
        f.seek(first)  # type: ignore[attr-defined]
        # One read for the whole batch: the last record ends where its own frame says.
        f.seek(positions[-1])  # type: ignore[attr-defined]
        last_frame = f.read(FRAME.size)  # type: ignore[attr-defined]
        if len(last_frame) < FRAME.size:  # a LogCorruptError below, not a struct.error here
            last_frame = FRAME.pack(0, 0, 0)
        last_len = FRAME.unpack(last_frame)[0]
        f.seek(first)  # type: ignore[attr-defined]
        buf = f.read(positions[-1] + FRAME.size + last_len - first)  # type: ignore[attr-defined]
        out: list[LogRecord] = []
        unpack = FRAME.unpack_from
        for k, pos in enumerate(positions):
            rel = pos - first
            if rel + FRAME.size > len(buf):
                raise LogCorruptError(
                    f"{part.seg_path}: record {start + k} at byte {pos} lies past "
                    f"the end of the file; the segment was truncated by hand"
                )
            length, _crc, key_len = unpack(buf, rel)
            body_start = rel + FRAME.size
            out.append(
                LogRecord(
                    part.number,
                    start + k,
                    buf[body_start : body_start + key_len],
                    buf[body_start + key_len : body_start + length],
                )
            )
        return out

    def segment_position(self, partition: int, offset: int) -> tuple[Path, int]:
        """Where a record's frame starts on disk (for error messages and tamper tests)."""
        part = self._parts[partition]
        return part.seg_path, part.positions(offset, offset + 1)[0]


def _ends_with(value: bytes | None, tail: bytes | None) -> bool:
    return value is None if tail is None else value is not None and value.endswith(tail)


class _Flock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> _Flock:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)

"""The embedded default log: append-only segment files on local disk, no server needed.

Layout of a log folder:
  meta.json        {"format": 1, "partitions": N}
  pNNNN.seg        framed records: u32 body length, u32 CRC-32 of the body, u16 key length,
                   then the body (key bytes, then value bytes)
  pNNNN.idx        u64 byte position of each record in the .seg, one per offset; it is the commit
                   marker: a record exists once its index entry does
  writer.lock      flock'd while appending, so two processes never interleave records
  append.pending   present only while an append is under way (or after one crashed): each
                   touched partition's sizes before it (events/log/embedded/segment.py)
  tails.cache      the writers' table heads as of some point, so a new writer reads only the
                   records after it (a cache, checked against the log: tails.py)

Durability and atomicity: an append first writes the journal `append.pending` (fsynced), then
the records, fsyncs the segment, then writes and fsyncs the index, in every partition it
touches, and then removes the journal: that removal commits the whole batch. An append that
fails part way (a full disk) truncates every partition back to its journalled sizes; a crash
leaves the journal, and the next writer truncates back before anything else. Readers never see
a record past a pending journal's sizes. So a batch is all or nothing, in every partition.
Opening for writing also repairs what no journal explains, past the last indexed record only: a
torn tail is truncated, and whole, CRC-valid records past the index (its entries lost, e.g. a
deleted .idx) are indexed again. Indexed records are never touched: if the last one is not whole,
the writer refuses before writing anything (segment.py, Partition.indexed_end). Readers go by
the index, so a record being appended is not there yet; one the index lists that the segment
does not hold whole was cut off afterwards and is refused (LogCorruptError naming segment,
record and byte), never handed out short.
"""

from __future__ import annotations

import fcntl
import json
import os
import uuid
import zlib
from array import array
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from itertools import takewhile
from pathlib import Path
from typing import BinaryIO

from events.errors import ConcurrencyError, LogCorruptError, LogError, LogGoneError
from events.files import remove_quietly
from events.log.alerts import AlertSink
from events.log.base import (
    ConditionalAppend,
    FrameBatch,
    FramedRead,
    IndexedLog,
    LocalFolder,
    LogRecord,
)
from events.log.embedded import tails
from events.log.embedded.alerts import EmbeddedAlertLog
from events.log.embedded.layout import META, has_meta
from events.log.embedded.segment import (
    FRAME,
    JOURNAL,
    Partition,
    frame_fields,
    fsync_dir,
    read_journal,
    remove_journal,
    write_journal,
)

__all__ = ["FRAME", "EmbeddedLog", "partition_for"]
FORMAT_VERSION = 1
DEFAULT_PARTITIONS = 4


def partition_for(key: bytes, partitions: int) -> int:
    """Stable across processes and machines (unlike hash())."""
    return zlib.crc32(key) % partitions


class EmbeddedLog(ConditionalAppend, FramedRead, IndexedLog, LocalFolder):
    """Segment files in one folder; see the module docstring for the format."""

    appends_in_one_run = True  # under the writer lock, committed whole (module docstring)

    @classmethod
    def from_uri(cls, uri: str, *, partitions: int | None = None,
                 create: bool = True) -> EmbeddedLog:
        """`file:///path` or a bare path. `create=False` (readers: project, verify): a missing
        log folder is a LogError naming it, never an empty log made on the spot."""
        folder = Path(uri.removeprefix("file://"))
        if folder.exists() and not folder.is_dir():
            raise LogError(f"--log {folder} is a file, not an event log folder: give the folder "
                           f"of an embedded log (e.g. pitlog-data/log) or kafka://HOST:PORT/TOPIC")
        if not create and not has_meta(folder):
            raise LogError(f"no event log at {folder} (no such folder, or no meta.json in it): "
                           f"check --log / PITLOG_LOG; `pitlog simulate` or `pitlog ingest` "
                           f"creates a log")
        return cls(folder, partitions=partitions, create=create)

    def alert_sink(self) -> AlertSink:
        return EmbeddedAlertLog(self.folder)

    def __init__(self, folder: Path, *, partitions: int | None = None, create: bool = True) -> None:
        self.folder = folder
        self.uri = f"file://{folder.resolve()}"
        self._meta_path = meta_path = folder / META
        self._made: list[Path] | None = None  # a log made here: its new folders, innermost first
        self._meta_seen: tuple[int, ...] | None = None  # meta.json as check_same_log last saw it
        if meta_path.exists():
            try:
                self._meta_seen = _stat_key(meta_path)
                meta = json.loads(meta_path.read_text())
                self.n_partitions = int(meta["partitions"])
            except (ValueError, KeyError, TypeError) as exc:
                raise LogError(
                    f"{meta_path}: unreadable ({exc}); restore it from a backup"
                ) from exc
            if partitions is not None and partitions != self.n_partitions:
                raise LogError(
                    f"{folder} has {self.n_partitions} partitions, not {partitions}: "
                    f"partitions are fixed when a log is created"
                )
            # Logs made before log ids get one from their next writer (_recover_locked).
            self.log_id = meta.get("log_id") if isinstance(meta.get("log_id"), str) else None
        elif create:
            made = list(takewhile(lambda p: not p.exists(), (folder, *folder.parents)))
            folder.mkdir(parents=True, exist_ok=True)
            self.n_partitions = partitions or DEFAULT_PARTITIONS
            self._write_meta(uuid.uuid4().hex)
            self._made = made
        else:
            raise LogError(
                f"no event log at {folder}: run `pitlog simulate` or `pitlog ingest` first"
            )
        self._parts = [Partition(folder, i) for i in range(self.n_partitions)]
        self._lock_path = folder / "writer.lock"
        self._recovered = False
        # Each key's last value, and per partition how many records it reflects: the
        # optimistic concurrency check reads only what other writers appended since.
        self._tails: dict[bytes, bytes] = {}
        self._tails_at: dict[bytes, int] = {}  # each tail's offset in its key's partition
        self._tails_upto: dict[int, int] = {}
        self._tails_file_read = False
        self._tails_saved_at = -1  # records the saved tails.cache reflects (-1: none saved)
        self._appended = False  # by this object: only a writer that appended saves the heads

    def _write_meta(self, log_id: str) -> None:
        """meta.json, atomically: the log id is the log's identity for the projector's
        checkpoints (a log made anew at the same path gets another one)."""
        tmp = self._meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"format": FORMAT_VERSION, "partitions": self.n_partitions,
                                   "log_id": log_id}))
        os.replace(tmp, self._meta_path)
        self.log_id = log_id
        self._meta_seen = _stat_key(self._meta_path)

    def check_same_log(self) -> bool:
        """(EventLog's.) One stat of meta.json while it is unchanged; read again when it
        changed. A folder moved away or removed, or a log made anew at this path (another log
        id: _write_meta), is LogGoneError: the partitions' paths would read the other log's
        records as this one's offsets (an outside review, session 42). A log without an id when
        opened (made before ids) takes the one its next writer gave it, and returns True: the
        caller then compares its checkpoints' records with it (log_checks.check_log_holds)."""
        # a follower waits for the log; a one-shot command has stopped and is run again
        back = ("put it back at that path (a follower goes on by itself once it is back; run "
                "any other command again then)")
        try:
            seen = _stat_key(self._meta_path)
        except OSError:
            self._meta_seen = None  # when it is back, its id is read again
            raise LogGoneError(f"the log {self.uri} (log id {self.log_id}) is gone: "
                               f"{self._meta_path} is missing (the folder was moved away or "
                               f"removed); {back}") from None
        if seen == self._meta_seen:
            return False
        try:
            meta = json.loads(self._meta_path.read_text())
            now = meta.get("log_id") if isinstance(meta, dict) else None
        except (OSError, ValueError) as exc:
            self._meta_seen = None
            raise LogGoneError(f"{self._meta_path}: unreadable ({exc}), so whether it is still "
                               f"the log {self.log_id} is unknown; {back}") from None
        if now != self.log_id and (self.log_id is not None or not isinstance(now, str)):
            self._meta_seen = None
            raise LogGoneError(f"{self.uri} is another log now: its log id is {now}, not "
                               f"{self.log_id}, the one opened (a new log was made at "
                               f"{self.folder} after that one was moved away or removed); "
                               f"{back}, or project the new log into a new database file "
                               f"(--db)")
        self.log_id = now
        self._meta_seen = seen
        return True

    # --- writing --------------------------------------------------------------------------------

    def recover(self) -> dict[int, tuple[int, int]]:
        """Roll back a pending append and repair torn tails in every partition (done under the
        writer lock before a process first appends or reads the heads)."""
        with self._writer_lock():
            return self._recover_locked()

    def _recover_locked(self) -> dict[int, tuple[int, int]]:
        self._roll_back_pending()
        for part in self._parts:  # refuse (a committed record not whole) before repairing any
            part.indexed_end()
        report = {p.number: p.recover() for p in self._parts}
        if self.log_id is None:
            self._write_meta(uuid.uuid4().hex)
        self._recovered = True
        return report

    def _roll_back_pending(self) -> None:
        """Undo an append that crashed or failed part way (its journal is still there): its
        records are truncated in every partition it touched, before anyone appends after them."""
        journal = self._journal()
        if journal is None:
            return
        for number, (seg_size, count) in journal.items():
            self._parts[number].truncate_to(seg_size, count)
            # Cached tails may hold values of the rolled-back records: read them again.
            self._tails_upto.pop(number, None)
            for key in [k for k in self._tails if partition_for(k, self.n_partitions) == number]:
                del self._tails[key]
                self._tails_at.pop(key, None)
        remove_journal(self.folder)

    def _journal(self) -> dict[int, tuple[int, int]] | None:
        """The pending append's journal (segment.read_journal), every partition it names one of
        this log's; LogError, saying to restore the log, when it is damaged."""
        journal = read_journal(self.folder)
        if stray := sorted(n for n in journal or {} if n >= self.n_partitions):
            raise LogError(f"{self.folder / JOURNAL} names partition {stray[0]}, but the log has "
                           f"{self.n_partitions}: the folder was damaged by hand; restore the log "
                           f"from a backup")
        return journal

    def _writer_lock(self) -> _Flock:
        # made only beside a log's meta.json: not again in the folder of a log removed since
        return _Flock(self._lock_path, create=self._meta_path.exists())

    def _ready_to_write(self) -> None:
        """Under the writer lock: recover once per process, and roll back a journal that a
        writer which crashed since has left (else our records would follow its)."""
        if not self._meta_path.exists():
            # removed since it was opened (remove_if_made_and_empty, by the writer that made
            # it): records written now would lie in a folder no reader takes for a log
            raise _removed(self.folder)
        if not self._recovered:
            self._recover_locked()
        elif (self.folder / JOURNAL).exists():
            self._roll_back_pending()

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
        wrote since this object's last append.

        All or nothing (see the module docstring): if it raises LogError, no record of `items`
        is in the log, in any partition, now or after a restart."""
        by_part: dict[int, list[int]] = {}
        # A batch holds a few keys (a table's id each) many times: each is checked and hashed
        # to its partition once (a recorder's batch is 2,000 events; issue 19, item 3).
        part_of: dict[bytes, int] = {}
        for i, (key, _) in enumerate(items):
            number = part_of.get(key)
            if number is None:
                if len(key) > 0xFFFF:
                    raise LogError(f"key of {len(key)} bytes is too long (max 65535); "
                                   f"nothing was appended")
                number = part_of[key] = partition_for(key, self.n_partitions)
            by_part.setdefault(number, []).append(i)
        if not items:
            return []
        with self._writer_lock():
            self._ready_to_write()
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
            before = {n: (self._parts[n].seg_size(), self._parts[n].count()) for n in by_part}
            try:
                write_journal(self.folder, before)
            except OSError as exc:
                remove_quietly(self.folder / (JOURNAL + ".tmp"))
                raise LogError(f"cannot append to {self.folder}: {exc}; nothing was "
                               f"appended: free disk space and retry") from exc
            try:
                for number, indices in by_part.items():
                    _write_records(self._parts[number], before[number][0],
                                   [items[i] for i in indices])
                (self.folder / JOURNAL).unlink()  # the commit
            except BaseException as exc:
                self._fail(exc)
                raise
            fsync_dir(self.folder)  # the commit survives a power loss too
        result: list[tuple[int, int]] = [(0, 0)] * len(items)
        for number, indices in by_part.items():
            first = before[number][1]
            for k, i in enumerate(indices):
                result[i] = (number, first + k)
            if self._tails_upto.get(number) == first:  # the cache stays current for free
                for k, i in enumerate(indices):
                    self._tails[items[i][0]] = items[i][1]
                    self._tails_at[items[i][0]] = first + k
                self._tails_upto[number] = first + len(indices)
        self._appended = True
        if self._tails_known() - max(self._tails_saved_at, 0) >= tails.SAVE_EVERY_RECORDS:
            self._save_tails()
        return result

    def _fail(self, exc: BaseException) -> None:
        """An append failed part way: truncate back now; if even that fails, the journal stays
        and the next writer does it (readers see none of the batch meanwhile)."""
        try:
            self._roll_back_pending()
        except OSError as undo:
            raise LogError(f"append to {self.folder} failed ({exc}) and could not be undone "
                           f"yet ({undo}); no reader sees its records, and the next writer "
                           f"removes them: free disk space and retry") from exc
        if isinstance(exc, OSError):
            raise LogError(f"append to {self.folder} failed: {exc}; nothing of the batch was "
                           f"appended (rolled back): free disk space and retry") from exc

    def last_values(self) -> dict[bytes, bytes]:
        """Each key's last value (for the recorder's heads), read once and then kept current.
        Recovery comes first: heads read before a crashed append's rollback would name records
        that vanish, and the first append would then see "another writer" (issue 14)."""
        with self._writer_lock():
            self._ready_to_write()
            self._refresh_tails(range(self.n_partitions))
        return dict(self._tails)

    def close(self) -> None:
        self._save_tails()

    def remove_if_made_and_empty(self) -> None:
        """(EventLog's.) Under the writer lock, so no append is under way. Any other file in
        the folder (an event id index another writer holds open, someone's file) keeps the
        log: it goes whole or not at all. The folders made for it go while empty (the
        quarantine beside it keeps its own). Quiet: what stays is an empty log, as before."""
        made = self._made
        if made is None:
            return
        own = [self._meta_path, self._lock_path,
               *(path for part in self._parts for path in (part.seg_path, part.idx_path))]
        try:
            with self._writer_lock():
                if any(part.count() or part.seg_size() for part in self._parts) or \
                        {p.name for p in self.folder.iterdir()} - {p.name for p in own}:
                    return
                for path in own:
                    path.unlink(missing_ok=True)
            self._made = None
            for folder in made:
                folder.rmdir()
        except (OSError, LogError):  # quiet: what stays is an empty log, as before
            return

    def _tails_known(self) -> int:
        """Records the in-memory tails reflect, or -1 unless every partition's are known (a
        saved file is whole: one partition's heads alone would hide the others')."""
        if len(self._tails_upto) < self.n_partitions:
            return -1
        return sum(self._tails_upto.values())

    def _save_tails(self) -> None:
        """Save the heads for the next writer if they moved since the last save, and only by a
        writer that appended: one that appends nothing (a rerun of an evening already
        recorded, an ingest whose every line is refused) writes no file, as before it."""
        known = self._tails_known()
        if not self._appended or known <= max(self._tails_saved_at, 0) or self.log_id is None:
            return
        tails.save(self.folder, self.log_id, self.n_partitions,
                   tails.SavedTails(dict(self._tails_upto), dict(self._tails),
                                    dict(self._tails_at)))
        self._tails_saved_at = known

    def _read_saved_tails(self) -> None:
        """Once per process, under the writer lock after recovery: start from tails.cache
        where it checks out against the log (tails.py says how), else from nothing."""
        self._tails_file_read = True
        saved = tails.load(self.folder, self.log_id, self.n_partitions)
        if saved is None or self._tails_upto:
            return
        by_part: dict[int, list[tuple[int, bytes]]] = {}
        for key, offset in saved.offsets.items():  # each key in its partition, before its end
            number = partition_for(key, self.n_partitions)
            if not 0 <= offset < saved.upto[number]:
                return
            by_part.setdefault(number, []).append((offset, key))
        for number, upto in saved.upto.items():
            part = self._parts[number]
            if upto > part.count():  # a log restored from before the cache: read it all
                return
            mine = sorted(by_part.get(number, []))
            if upto and (not mine or mine[-1][0] != upto - 1):  # the last record is a tail
                return
            try:
                with _open_segment(part) as seg:
                    # Each key's own record, byte for byte: another log's history (a copy that
                    # went another way) differs there (tails.py says what it cannot see).
                    for offset, key in mine:
                        rec = self._read_range(part, seg, offset, offset + 1)[0]
                        if (rec.key, rec.value) != (key, saved.values[key]):
                            return
            except (OSError, LogCorruptError):
                return
        self._tails.update(saved.values)
        self._tails_at.update(saved.offsets)
        self._tails_upto.update(saved.upto)
        self._tails_saved_at = sum(saved.upto.values())

    def _refresh_tails(self, numbers: Iterable[int]) -> None:
        if not self._tails_file_read:
            self._read_saved_tails()
        for number in numbers:
            part = self._parts[number]
            upto, end = self._tails_upto.get(number, 0), part.count()
            if upto < end:
                with _open_segment(part) as seg:
                    for start in range(upto, end, 5000):
                        for rec in self._read_range(part, seg, start, min(end, start + 5000)):
                            self._tails[rec.key] = rec.value
                            self._tails_at[rec.key] = rec.offset
            self._tails_upto[number] = end  # an empty partition's too: appends then keep it

    # --- reading --------------------------------------------------------------------------------

    def end_offsets(self) -> dict[int, int]:
        """Per partition, the records committed: the index's entries, but none past a pending
        append's journal (read after the counts, so an append that commits in between is only
        seen whole or not at all)."""
        counts = {p.number: p.count() for p in self._parts}
        try:
            journal = read_journal(self.folder)  # LogError when damaged: what is committed?
        except OSError:
            journal = None
        for number, (_, count) in (journal or {}).items():
            if number in counts:
                counts[number] = min(counts[number], count)
        return counts

    def read(
        self, start: Mapping[int, int] | None = None, *, max_batch: int = 5000
    ) -> Generator[list[LogRecord], None, None]:
        start = start or {}
        ends = self.end_offsets()
        for part in self._parts:
            offset, end = start.get(part.number, 0), ends[part.number]
            if offset >= end:
                continue
            with _open_segment(part) as seg:
                while offset < end:
                    stop = min(end, offset + max_batch)
                    yield self._read_range(part, seg, offset, stop)
                    offset = stop

    def check_index(self) -> list[tuple[int, int, str]]:
        """For `verify`: check each partition's .idx against its segment (Partition.check_index),
        read through the segment's own framing from now on where they disagree, and say where:
        (partition, first offset concerned, what). Writes nothing (verify runs on copies)."""
        journal = self._journal() or {}
        findings: list[tuple[int, int, str]] = []
        for part in self._parts:
            seg_limit, count_limit = journal.get(part.number, (None, None))
            override, found = part.check_index(seg_limit, count_limit)
            part.override = override
            findings.extend((part.number, offset, what) for offset, what in found)
        return findings

    def record_at(self, partition: int, offset: int) -> LogRecord | None:
        if not 0 <= offset < self.end_offsets().get(partition, 0):
            return None
        part = self._parts[partition]
        with _open_segment(part) as seg:
            return self._read_range(part, seg, offset, offset + 1)[0]

    def read_frames(self, partition: int, start: int, stop: int, *,
                    max_batch: int = 5000, to_next: bool | None = None
                    ) -> Iterator[FrameBatch]:
        import numpy as np  # only bulk readers pay for it (pitlog's start-up, issue 19)

        part = self._parts[partition]
        with _open_segment(part) as seg:
            for first in range(start, stop, max_batch):
                positions, buf = self._read_bytes(part, seg, first, min(stop, first + max_batch))
                u = np.frombuffer(positions, dtype=np.uint64)
                rel = (u - u[0]).view(np.int64)  # in uint64: a damaged entry may be any value
                past = np.flatnonzero(rel + FRAME.size > len(buf))
                backwards = np.flatnonzero(np.diff(rel) <= 0) + 1
                if len(backwards):  # not a truncated segment: a damaged .idx entry
                    k = int(min(backwards[0], past[0] if len(past) else backwards[0]))
                    raise _bad_index(part, first + k, positions[k])
                if len(past):
                    k = int(past[0])
                    raise _beyond_end(part, first + k, positions[k])
                length, key_len = frame_fields(np.frombuffer(buf, dtype=np.uint8), rel)
                key_at = rel + FRAME.size
                # A frame header damaged on disk, its body reaching into the next record: the
                # decoder would read one record's bytes as another's and stop on "messages
                # overlap". A key longer than its body leaves an empty value, as _read_range's
                # slices do (the decoder refuses it, verify locates it by its key).
                bad = np.flatnonzero(key_at[:-1] + length[:-1] > rel[1:])
                # the batch's last record, the same (FramedRead.read_frames: `to_next`)
                check = len(rel) > 1 if to_next is None else to_next
                after = _position_after(part, first + len(rel)) if check else None
                if (not len(bad) and after is not None and after > positions[-1]
                        and int(key_at[-1]) + int(length[-1]) > after - positions[0]):
                    bad = np.array([len(rel) - 1])
                if len(bad):
                    k = int(bad[0])
                    raise _bad_frame(part, first + k, positions[k], int(length[k]),
                                     int(key_len[k]))
                # The segment ends inside the last one: cut off (a damaged length, the body
                # running past a later record, is left to verify, as it was).
                if key_at[-1] + length[-1] > len(buf) and part.cut_short(first + len(rel) - 1):
                    raise _beyond_end(part, first + len(rel) - 1, positions[-1])
                value_at = key_at + key_len
                yield FrameBatch(partition, first, buf, key_at, value_at,
                                 np.maximum(key_at + length, value_at))

    def _read_bytes(self, part: Partition, seg: object, start: int, stop: int
                    ) -> tuple[array, bytes]:
        """Records [start, stop)'s index positions, and the bytes from the first one's frame to
        the end of the last one (one read for the whole batch)."""
        positions = part.positions(start, stop)
        first = positions[0]
        f = seg  # type: ignore[assignment]
        # Never past the segment's end: a damaged .idx entry may point at any byte up to 2^64,
        # where a seek fails (EINVAL) or a read asks for exabytes; the callers say what is
        # wrong from the bytes there are.
        size = os.fstat(f.fileno()).st_size  # type: ignore[attr-defined]
        # The last record ends where its own frame says.
        last_frame = b""
        if positions[-1] + FRAME.size <= size:
            f.seek(positions[-1])  # type: ignore[attr-defined]
            last_frame = f.read(FRAME.size)  # type: ignore[attr-defined]
        if len(last_frame) < FRAME.size:  # a LogCorruptError for the caller, not a struct.error
            last_frame = FRAME.pack(0, 0, 0)
        last_len = FRAME.unpack(last_frame)[0]
        if first >= size:
            return positions, b""
        f.seek(first)  # type: ignore[attr-defined]
        want = positions[-1] + FRAME.size + last_len - first
        buf = f.read(max(0, min(want, size - first)))  # type: ignore[attr-defined]
        return positions, buf

    def _read_range(self, part: Partition, seg: object, start: int, stop: int) -> list[LogRecord]:
        positions, buf = self._read_bytes(part, seg, start, stop)
        first = positions[0]
        # The batch's last record may not reach into the record after it either (read_frames'
        # `to_next` None): a record read alone is read as its bytes, for verify's diagnosis.
        after = _position_after(part, start + len(positions)) if len(positions) > 1 else None
        out: list[LogRecord] = []
        unpack = FRAME.unpack_from
        for k, pos in enumerate(positions):
            if k + 1 < len(positions) and positions[k + 1] <= pos:  # as read_frames
                wrong = k if pos - first + FRAME.size > len(buf) else k + 1
                raise _bad_index(part, start + wrong, positions[wrong])
            rel = pos - first
            if rel + FRAME.size > len(buf):
                raise _beyond_end(part, start + k, pos)
            length, _crc, key_len = unpack(buf, rel)
            body_start = rel + FRAME.size
            # A body reaching into the next record, as read_frames refuses it. A key longer
            # than its body is left to the decoder here (an empty value: quarantined, and
            # verify locates it at this record by its key).
            nxt = positions[k + 1] if k + 1 < len(positions) else after
            if nxt is not None and nxt > pos and body_start + length > nxt - first:
                raise _bad_frame(part, start + k, pos, length, key_len)
            if body_start + length > len(buf) and part.cut_short(start + k):  # as read_frames
                raise _beyond_end(part, start + k, pos)
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


def _stat_key(path: Path) -> tuple[int, ...]:
    """What tells one meta.json from another, or from itself rewritten (os.replace)."""
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size


def _position_after(part: Partition, offset: int) -> int | None:
    """Where record `offset` starts (the one after a batch read up to it), if the index has
    it: a batch's last record may not reach into it either."""
    if offset >= part.count():
        return None
    found = part.positions(offset, offset + 1)
    return int(found[0]) if len(found) else None


def _write_records(part: Partition, seg_size: int, records: list[tuple[bytes, bytes]]) -> None:
    """Write and fsync the records at the segment's end, then their index entries."""
    chunks: list[bytes] = []
    positions = array("Q")
    pos = seg_size
    for key, value in records:
        body = key + value
        chunks.append(FRAME.pack(len(body), zlib.crc32(body), len(key)))
        chunks.append(body)
        positions.append(pos)
        pos += FRAME.size + len(body)
    with part.seg_path.open("ab") as seg:
        seg.write(b"".join(chunks))
        seg.flush()
        os.fsync(seg.fileno())
    with part.idx_path.open("ab") as idx:
        idx.write(positions.tobytes())
        idx.flush()
        os.fsync(idx.fileno())


def _open_segment(part: Partition) -> BinaryIO:
    """The partition's segment for reading; a segment its .idx lists records of but that is
    gone is that partition's damage (LogCorruptError), as a truncated one is, not the log's."""
    try:
        return part.seg_path.open("rb")
    except FileNotFoundError:
        raise LogCorruptError(f"{part.seg_path} is missing, though {part.idx_path} lists "
                              f"{part.count()} records in it: restore the segment and its .idx "
                              f"from a backup", part.number) from None


def _beyond_end(part: Partition, offset: int, pos: int) -> LogCorruptError:
    """A record its .idx lists but the segment does not hold whole. Never a writer still
    appending: a record is indexed only after its bytes are written and fsynced (_write_records),
    so it is a truncated segment or, where the entry does not follow the record before it
    (Partition.cut_short), a damaged .idx entry."""
    size = part.seg_size()
    if not part.cut_short(offset, size):
        return _bad_index(part, offset, pos)
    return LogCorruptError(f"{part.seg_path}: record {offset} at byte {pos} is cut short: the "
                           f"file ends at byte {size}, before the record does; the segment was "
                           f"truncated after the record was written (a record is indexed only "
                           f"once it is whole on disk, so no writer is still appending it): "
                           f"restore the segment and its .idx from a backup", part.number)


def _bad_index(part: Partition, offset: int, pos: int) -> LogCorruptError:
    return LogCorruptError(f"{part.idx_path}: the entry of record {offset} points at byte "
                           f"{pos}, not after the record before it: the index is damaged; "
                           f"restore it from a backup, or delete it and let the next writer "
                           f"rebuild it from the segment (pitlog verify reads the segment)",
                           part.number)


def _bad_frame(part: Partition, offset: int, pos: int, length: int,
               key_len: int) -> LogCorruptError:
    return LogCorruptError(f"{part.seg_path}: record {offset} at byte {pos} has a damaged frame "
                           f"header (body {length} bytes, key {key_len} bytes: its body reaches "
                           f"into the next record); restore the segment from a backup",
                           part.number)


def _ends_with(value: bytes | None, tail: bytes | None) -> bool:
    return value is None if tail is None else value is not None and value.endswith(tail)


def _removed(folder: Path) -> LogError:
    """A writer's log was removed while it had it open (remove_if_made_and_empty)."""
    return LogError(f"the log at {folder} was removed while this writer had it open: nothing "
                    f"was appended; open it again")


class _Flock:
    """The writer lock: an exclusive flock on the lock file at `path`, which must still be the
    file at `path` once held. A log removed while a writer waited (remove_if_made_and_empty)
    and made again by another has a new lock file: holding the old one would let two writers
    append at once (a second read, session 41)."""

    def __init__(self, path: Path, create: bool = True) -> None:
        self.path, self.create = path, create
        self.fd = -1

    def __enter__(self) -> _Flock:
        gone = _removed(self.path.parent)
        try:
            self.fd = os.open(self.path, os.O_RDWR | (os.O_CREAT if self.create else 0), 0o644)
        except FileNotFoundError:  # the lock file or its folder is gone
            raise gone from None
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        try:
            held = os.fstat(self.fd)
            try:
                now = os.stat(self.path)
            except FileNotFoundError:
                now = None
            if now is None or (held.st_dev, held.st_ino) != (now.st_dev, now.st_ino):
                raise gone
        except BaseException:  # never left held: not by the check, not by its failure
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)

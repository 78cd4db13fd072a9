"""The event log contract, shared by the embedded log and Kafka; it imports no backend.

A log is a set of partitions; each partition is an append-only sequence of (key, value) records
at gapless offsets from 0. The key is the table id, so every table's events stay in one
partition, in order. Values are the codec's exact bytes. Only the backends know their storage;
events/log/registry.py opens one by its address. What a backend can do beyond the contract is
a type, checked with isinstance: `ConditionalAppend` (optimistic concurrency), `FramedRead`,
`IndexedLog` and `LocalFolder`.
"""

from __future__ import annotations

import hashlib
import struct
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from events.errors import LogError
from events.log.alerts import AlertSink

DEFAULT_DATA_DIR = Path("pitlog-data")


@dataclass(frozen=True, slots=True)
class LogRecord:
    partition: int
    offset: int
    key: bytes
    value: bytes


@dataclass(frozen=True, slots=True)
class FrameBatch:
    """Consecutive records of one partition as one buffer of bytes and where each lies in it:
    record k's key is buf[key_at[k]:value_at[k]], its value buf[value_at[k]:end[k]] (Python
    slice rules: a damaged frame may give positions out of order or past the buffer, and
    `record(k)` then holds what a plain read would). The arrays are numpy int64; they let a
    reader work on a batch without an object per record (issue 19)."""

    partition: int
    offset: int  # of record 0
    buf: bytes
    key_at: Any
    value_at: Any
    end: Any

    def __len__(self) -> int:
        return len(self.key_at)

    def record(self, k: int) -> LogRecord:
        key_at, value_at, end = int(self.key_at[k]), int(self.value_at[k]), int(self.end[k])
        return LogRecord(self.partition, self.offset + k, self.buf[key_at:value_at],
                         self.buf[value_at:end])


def record_digest(rec: LogRecord) -> bytes:
    """SHA-256 of a record's key and value: what a checkpoint remembers of the last record it
    covers, for any record (a quarantined one has no chain hash of its own)."""
    h = hashlib.sha256(struct.pack("<I", len(rec.key)))
    h.update(rec.key)
    h.update(rec.value)
    return h.digest()


class EventLog(ABC):
    """Append-only, partitioned by key, ordered per partition."""

    uri: str
    # A name written once when the log is created (the embedded log's meta.json), so a reader
    # can tell another log at the same address; None where the backend has none (Kafka).
    log_id: str | None = None
    # True where one append writes each partition's records in one run, no other writer's
    # between them and no reader seeing part of it (the embedded log: its writer lock and
    # journal); a Kafka producer's sends are many requests, other producers' records between.
    appends_in_one_run: bool = False

    @abstractmethod
    def append(self, items: Sequence[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        """Append (key, value) pairs in order; return each one's (partition, offset).

        Durable once it returns: fsynced (embedded) or acknowledged by all in-sync replicas
        (Kafka). A failure raises LogError and nothing after the failed record is appended."""

    @abstractmethod
    def end_offsets(self) -> dict[int, int]:
        """Next offset to be written, per partition (the log's current end)."""

    @abstractmethod
    def read(self, start: Mapping[int, int] | None = None, *,
             max_batch: int = 5000) -> Generator[list[LogRecord], None, None]:
        """Batches of records from `start` (partition -> first offset, default 0) up to the end
        as it was when reading began. Each batch holds records of one partition, in order."""

    def record_at(self, partition: int, offset: int) -> LogRecord | None:
        """The record at (partition, offset), or None when the log holds none there. Reads
        that record only (the projector checks its checkpoints with it on every run)."""
        ends = self.end_offsets()
        if partition not in ends or not 0 <= offset < ends[partition]:
            return None
        with closing(self.read({**ends, partition: offset}, max_batch=1)) as batches:
            for batch in batches:
                for rec in batch:
                    # A reader that hands over earlier records too (at least once) is
                    # followed up to the offset; its first record is the one for a true one.
                    if rec.partition == partition and rec.offset >= offset:
                        return rec if rec.offset == offset else None
        return None

    def check_same_log(self) -> bool:
        """Raise LogGoneError when the log at this address is no longer the one this object
        opened (moved away, removed, or made anew: another log id); return True when it is, but
        its identity was looked at anew since the last call (it came back, or was given its id
        by a writer), so a reader checks its checkpoints against it again. Cheap enough for
        every round of a follower. Here: a backend with no identity (Kafka) checks nothing."""
        return False

    @classmethod
    def from_uri(cls, uri: str, *, partitions: int | None = None,
                 create: bool = True) -> EventLog:
        """Open the log at `uri` (an address of this backend's scheme, events/log/registry.py).
        `create=False`: a missing log is a LogError naming it, never an empty log made.
        A backend registered by scheme overrides this; a wrapper around a log need not."""
        raise LogError(f"{cls.__name__} cannot be opened by an address ({uri!r}); open it "
                       f"with its constructor")

    def alert_sink(self) -> AlertSink | None:
        """Where this log's published alerts go, beside it (docs/architecture.md, principle 8);
        None for a backend with no alert sink."""
        return None

    def close(self) -> None:  # noqa: B027 - optional for backends with nothing to release
        """Release files, sockets and locks."""

    def remove_if_made_and_empty(self) -> None:  # noqa: B027 - optional, as close
        """Remove the log when this object created it and it holds no record, as if it had
        never been opened: a writer that recorded nothing (`pitlog ingest` of refused lines
        only) leaves no empty log, which readers would take for one that was written. A log
        that was there before is never touched. Here nothing: a Kafka topic stays."""

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ConditionalAppend(EventLog):
    """A log that can append on a condition: only if each table's last record is still the one
    the writer read. The recorder uses it so that two writers of one table never both take a
    seq (docs/integrity.md); on a log without it the recorder appends plainly."""

    @abstractmethod
    def append_expecting(self, items: Sequence[tuple[bytes, bytes]],
                         expected: Mapping[bytes, bytes | None] | None,
                         ) -> list[tuple[int, int]]:
        """`append`, if each key's last value still ends with `expected[key]` (None: the key has
        no records yet); otherwise ConcurrencyError, and nothing of a conflicting key is
        appended."""

    @abstractmethod
    def last_values(self) -> dict[bytes, bytes]:
        """Each key's last value: the recorder's table heads, without reading the whole log."""


class FramedRead(EventLog):
    """A log that can hand over its records as FrameBatch buffers (the embedded log: one read
    of a segment per batch), for readers that handle bytes in bulk (`verify`, the projector)."""

    @abstractmethod
    def read_frames(self, partition: int, start: int, stop: int, *,
                    max_batch: int = 5000, to_next: bool | None = None
                    ) -> Iterator[FrameBatch]:
        """Records [start, stop) of one partition, in batches of at most `max_batch`. Raises
        LogCorruptError where `read` would (a record past the end of its file, or reaching
        into the next record of its batch) and, with `to_next` (None: for a batch of more
        than one record, as `read`), where a batch's last record reaches into the record
        after it. A record read alone is read as its bytes, which `verify` decodes to say what
        in it is damaged."""


class IndexedLog(EventLog):
    """A log that keeps an index of its records beside them (the embedded log's .idx files).
    `verify` never trusts that index: it checks it against the records (docs/integrity.md)."""

    @abstractmethod
    def check_index(self) -> list[tuple[int, int, str]]:
        """Where the index and the records disagree, as (partition, first offset concerned,
        what); reads go through the records' own framing from there on. Writes nothing."""


class LocalFolder(EventLog):
    """A log kept in a folder on this machine: caches of what it holds (the event id index)
    live in that folder, beside it. Every backend of this type sets `folder` when it opens
    (tests/events/test_log_capabilities.py)."""

    folder: Path

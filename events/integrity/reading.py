"""How `pitlog verify` reads a partition: every record it can, and each one the log cannot
return reported at its offset, the rest still read (events/integrity/verify.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from events.errors import LogCorruptError
from events.log.base import EventLog, FrameBatch, FramedRead, LogRecord

T = TypeVar("T")


def partition_records(log: EventLog, partition: int, ends: dict[int, int], max_batch: int,
                      on_unreadable: Callable[[int, int, str], None]) -> Iterator[LogRecord]:
    """One partition's records up to `ends`. A batch the log cannot return (LogCorruptError:
    damage the log itself detects) is re-read record by record, so only the damaged ones are
    skipped and each is reported at its offset."""
    end = ends[partition]
    others = {p: e for p, e in ends.items() if p != partition}

    def read(pos: int, batch_size: int) -> Iterator[tuple[int, LogRecord]]:
        for batch in log.read({**others, partition: pos}, max_batch=batch_size):
            for rec in batch:
                if rec.partition == partition and rec.offset < end:
                    yield rec.offset + 1, rec

    return _retrying(read, partition, end, max_batch, on_unreadable)


def partition_frames(log: FramedRead, partition: int, end: int, max_batch: int,
                     on_unreadable: Callable[[int, int, str], None]) -> Iterator[FrameBatch]:
    """`partition_records` as batches of bytes (FramedRead), with the same retry."""

    def read(pos: int, batch_size: int) -> Iterator[tuple[int, FrameBatch]]:
        for fb in log.read_frames(partition, pos, end, max_batch=batch_size):
            yield fb.offset + len(fb), fb

    return _retrying(read, partition, end, max_batch, on_unreadable)


def _retrying(read: Callable[[int, int], Iterator[tuple[int, T]]], partition: int, end: int,
              max_batch: int, on_unreadable: Callable[[int, int, str], None]) -> Iterator[T]:
    """What `read(from, batch size)` yields (each item with the offset after it), from 0 up to
    `end`; where it raises LogCorruptError, again a record at a time from there, each record
    it still cannot return reported (`on_unreadable`) and skipped, then whole batches again."""
    pos = 0
    batch_size = max_batch
    while pos < end:
        try:
            for after, item in read(pos, batch_size):
                pos = after
                yield item
                if batch_size == 1 and pos < end and max_batch > 1:
                    batch_size = max_batch
                    break  # past the damage: back to whole batches
            else:
                return
        except LogCorruptError as exc:
            if batch_size > 1:
                batch_size = 1  # find which record it is
            else:
                on_unreadable(partition, pos, str(exc))
                pos += 1

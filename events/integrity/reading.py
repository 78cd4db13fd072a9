"""How `pitlog verify` reads a partition: every record it can, and each one the log cannot
return reported at its offset, the rest still read (events/integrity/verify.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from events.errors import LogCorruptError
from events.log.base import EventLog, FrameBatch, FramedRead, LogRecord


def partition_records(log: EventLog, partition: int, ends: dict[int, int], max_batch: int,
                       on_unreadable: Callable[[int, int, str], None]) -> Iterator[LogRecord]:
    """One partition's records up to `ends`. A batch the log cannot return (LogCorruptError:
    damage the log itself detects) is re-read record by record, so only the damaged ones are
    skipped and each is reported at its offset."""
    pos, end = 0, ends[partition]
    others = {p: e for p, e in ends.items() if p != partition}
    batch_size = max_batch
    while pos < end:
        try:
            for batch in log.read({**others, partition: pos}, max_batch=batch_size):
                for rec in batch:
                    if rec.partition != partition or rec.offset >= end:
                        continue
                    pos = rec.offset + 1
                    yield rec
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


def partition_frames(log: FramedRead, partition: int, end: int, max_batch: int,
                     on_unreadable: Callable[[int, int, str], None]) -> Iterator[FrameBatch]:
    """`partition_records` as batches of bytes (FramedRead), with the same retry: a batch the
    log cannot return is re-read a record at a time, each damaged one reported and skipped."""
    pos = 0
    batch_size = max_batch
    while pos < end:
        try:
            for fb in log.read_frames(partition, pos, end, max_batch=batch_size):
                pos = fb.offset + len(fb)
                yield fb
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

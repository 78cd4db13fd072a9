"""The projector's bulk path: a batch of the log as buffers of bytes with offsets (issue 19).

A log that can hand over its records as FrameBatch buffers (the embedded log) is loaded
without an object per record: `Frames` holds a batch of them as one buffer and numpy arrays
of where each record's key and value lie, and `decode_frames` turns it into the projector's
Arrow rows with events/wire/native_decode.py (polars' compiled Avro reader, the reference
decoder for whatever it does not accept). Kafka records arrive one by one: they keep the
LogRecord path, which stays the reference (projector._BatchLoader.decode).

What is loaded is the same either way, row for row: the same rows in the same order (grouped
by table id, each table's in log order), the same quarantine reasons, the same hash_ok
(tests/projections/test_frames.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from events.errors import LogCorruptError
from events.integrity.envelope_batch import grouped, key_ids
from events.log.base import FrameBatch, FramedRead, LogRecord
from events.wire.chain import HASH_LEN, verify_each, verify_split
from events.wire.native_decode import NativeDecoder

Array = np.ndarray[Any, Any]
# PITLOG_NATIVE_DECODE=0: load through the record path even from an embedded log (the
# reference, for comparisons and benchmarks/bench_load.py's "old" run).
ENV = "PITLOG_NATIVE_DECODE"


def enabled(log: object) -> bool:
    return isinstance(log, FramedRead) and os.environ.get(ENV, "1") != "0"


@dataclass(slots=True)
class Frames:
    """Consecutive FrameBatch reads, possibly of several partitions, as one batch: record k's
    key is buf[key_at[k]:value_at[k]] and its value buf[value_at[k]:end[k]]."""

    parts: list[FrameBatch]
    buf: bytes
    key_at: Array
    value_at: Array
    end: Array
    partition: Array
    offset: Array

    @classmethod
    def of(cls, parts: list[FrameBatch]) -> Frames:
        shift = np.cumsum([0] + [len(p.buf) for p in parts[:-1]])
        return cls(parts, b"".join(p.buf for p in parts),
                   np.concatenate([p.key_at + s for p, s in zip(parts, shift, strict=True)]),
                   np.concatenate([p.value_at + s for p, s in zip(parts, shift, strict=True)]),
                   np.concatenate([p.end + s for p, s in zip(parts, shift, strict=True)]),
                   np.concatenate([np.full(len(p), p.partition, np.int32) for p in parts]),
                   np.concatenate([np.arange(p.offset, p.offset + len(p), dtype=np.int64)
                                   for p in parts]))

    def __len__(self) -> int:
        return len(self.key_at)

    def __getitem__(self, k: int) -> LogRecord:
        """One record (the first and last name a refused batch in the projector's errors)."""
        k = range(len(self))[k]
        return LogRecord(int(self.partition[k]), int(self.offset[k]),
                         self.buf[int(self.key_at[k]):int(self.value_at[k])],
                         self.buf[int(self.value_at[k]):int(self.end[k])])

    def positions(self, refuse: Callable[[str], Exception]
                  ) -> tuple[dict[int, int], dict[int, int], dict[int, LogRecord]]:
        """projector._BatchLoader._positions for a batch of frames: (first offset, next offset,
        last record) per partition; a part that does not follow the one before it in its
        partition refuses the batch, as a record handed over twice does."""
        starts: dict[int, int] = {}
        nexts: dict[int, int] = {}
        at = 0
        lasts: dict[int, int] = {}
        for p in self.parts:
            if not len(p):
                continue
            before = nexts.get(p.partition)
            if before is not None and p.offset < before:
                raise refuse(f"p{p.partition}@{p.offset} comes again after "
                             f"p{p.partition}@{before - 1}")
            starts.setdefault(p.partition, p.offset)
            nexts[p.partition] = p.offset + len(p)
            at += len(p)
            lasts[p.partition] = at - 1
        return starts, nexts, {q: self[k] for q, k in lasts.items()}


def load_frames(log: FramedRead, start: dict[int, int], ends: dict[int, int],
                batch_size: int, load: Callable[[Frames], None]) -> None:
    """Every partition from `start` to `ends`, loaded in batches of at most batch_size records
    (several partitions' reads in one batch, as the record path gathers them). A partition
    the log cannot read (LogCorruptError) ends it, after loading what was read before; the
    caller's record path goes on from the checkpoints and reports it."""
    parts: list[FrameBatch] = []
    try:
        for p, end in ends.items():
            if start.get(p, 0) >= end:
                continue
            for part in log.read_frames(p, start.get(p, 0), end, max_batch=batch_size):
                if parts and sum(map(len, parts)) + len(part) > batch_size:
                    load(Frames.of(parts))
                    parts = []
                parts.append(part)
    except LogCorruptError:
        pass
    if parts:
        load(Frames.of(parts))


def key_order(frames: Frames) -> Array:
    """The records grouped by key in key order, each key's in batch order (projector._by_key).
    The keys as small ints with numpy (envelope_batch.key_ids), not a bytes object each."""
    ids, keys = key_ids(frames)
    if len(keys) <= 1:
        return np.arange(len(frames))
    rank = np.empty(len(keys), np.int64)
    rank[sorted(range(len(keys)), key=keys.__getitem__)] = np.arange(len(keys))
    return grouped(rank[ids], len(keys))


def decode_frames(decoder: NativeDecoder, frames: Frames
                  ) -> tuple[pa.Table, list[tuple[LogRecord, str]]]:
    """The projector's rows of a batch of frames, and its refusals (projector.decode's
    contract): grouped by key, log positions and hash_ok appended."""
    order = key_order(frames)
    start, end = frames.value_at[order], frames.end[order]
    result = decoder.decode(frames.buf, start, end)
    picked = order[result.rows]
    table = result.table.append_column(
        "log_partition", pa.array(frames.partition[picked])).append_column(
        "log_offset", pa.array(frames.offset[picked])).append_column(
        "hash_ok", pa.array(hash_ok(frames, picked, result.table.column("prev_hash")),
                            pa.bool_()))
    return table, [(frames[int(order[i])], reason) for i, reason in result.bad]


def hash_ok(frames: Frames, picked: Array, prev: Any) -> Array:
    """log_checks.hash_ok for the decoded rows of a batch of frames: row k is record
    picked[k], its prev_hash prev[k]. Each message's body (the bytes before its hash) and its
    hash come out of the buffer in one Arrow call: the records in buffer order are seen as one
    binary array [body, hash, gap to the next message, body, ...] over the buffer (zero-copy),
    and its to_pylist makes the bytes objects, about 3x cheaper than slicing each message
    (benchmarks/results.md, "Session 29"); chain.verify_split then checks them."""
    ok = np.zeros(len(picked), bool)
    if not len(picked):
        return ok
    by_pos = np.argsort(picked, kind="stable")
    at = picked[by_pos]
    value_at, end = frames.value_at[at], frames.end[at]
    bounds = np.empty(3 * len(at), np.int64)
    bounds[0::3], bounds[1::3], bounds[2::3] = value_at, end - HASH_LEN, end
    prevs = prev.to_numpy(zero_copy_only=False)[by_pos].tolist()
    if (np.diff(bounds) < 0).any() or bounds[0] < 0 or bounds[-1] > len(frames.buf):
        # Not one message after another (Arrow would read past its elements): slice each.
        ok[by_pos] = verify_each(prevs, map(frames.buf.__getitem__, map(
            slice, value_at.tolist(), end.tolist())))
        return ok
    parts = pa.Array.from_buffers(pa.large_binary(), len(bounds) - 1,
                                  [None, pa.py_buffer(bounds), pa.py_buffer(frames.buf)])
    items = parts.to_pylist()
    ok[by_pos] = verify_split(prevs, items[0::3], items[1::3])
    return ok

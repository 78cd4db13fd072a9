"""The envelope of a whole batch of messages at once, with numpy: what `pitlog verify` needs,
near the floor of raw read + SHA-256 (issue 19, item 6).

The same fields as events/wire/envelope.py reads one message at a time (the layout every schema
starts with: event_id, table_id, shoe_id, round_no, seq, occurred_at, recorded_at, actor,
prev_hash), read for every message of a FrameBatch together, one Avro field step at a time over
all of them (spec, "Binary Encoding": zigzag varints, length-prefixed strings, union branch
indexes, raw fixed bytes).

It only says where things are for the **regular** messages, those whose envelope
EnvelopeReader.read would read without an error and whose table_id is their record's key:
the magic and a fingerprint of a schema with that layout; varints of at most 9 bytes; string
lengths not negative; union branches null or the value; table_id and shoe_id plain ASCII (so
valid UTF-8) and table_id byte for byte the key; the envelope ending before the hash. Anything
else is marked irregular and the caller reads it the slow, exact way: this module never
decides that something is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from events.log.base import FrameBatch
from events.wire import codec
from events.wire.chain import HASH_LEN


class KeyedFrames(Protocol):
    """Records in one buffer: record k's key is buf[key_at[k]:value_at[k]] (a FrameBatch,
    or the projector's batch of several, projections/frames.py)."""

    @property
    def buf(self) -> bytes: ...
    @property
    def key_at(self) -> Any: ...
    @property
    def value_at(self) -> Any: ...


_MAX_VARINT = 9  # bytes; 63 bits fit an int64 (a 10-byte varint is left to the slow path)
_MAX_TEXT = 64  # bytes of a table or shoe id checked here; a longer one takes the slow path


@dataclass(frozen=True, slots=True)
class EnvelopeBatch:
    """Per message of the batch: regular (bool), seq, and where prev_hash starts in the
    batch's buffer (meaningful only where regular)."""

    regular: Any
    seq: Any
    prev_at: Any


def fingerprints(fast: Mapping[bytes, object]) -> Any:
    """The fast-layout schemas' fingerprints (EnvelopeReader.fast's keys) as uint64 values."""
    return np.array(sorted(int.from_bytes(fp, "little") for fp in fast), dtype=np.uint64)


def read_batch(fb: FrameBatch, fast_fps: Any) -> EnvelopeBatch:
    b = np.frombuffer(fb.buf, dtype=np.uint8)
    start, end = fb.value_at, fb.end
    # The frame itself must be sane: key before value, value inside the buffer, room for a
    # header and a hash.
    ok = (fb.key_at <= start) & (end <= len(b)) & (start + codec.HEADER_LEN + HASH_LEN <= end)

    def byte(p: Any) -> Any:
        return b.take(p, mode="clip").astype(np.int64)

    magic = codec.MAGIC
    ok &= (byte(start) == magic[0]) & (byte(start + 1) == magic[1])
    fp = np.zeros(len(start), dtype=np.uint64)
    for i in range(8):
        fp |= byte(start + 2 + i).astype(np.uint64) << np.uint64(8 * i)
    ok &= np.isin(fp, fast_fps)

    def varint(p: Any) -> tuple[Any, Any]:
        nonlocal ok
        acc = np.zeros(len(p), dtype=np.int64)
        nxt = p + 1
        going = np.ones(len(p), dtype=bool)
        for k in range(_MAX_VARINT):
            v = byte(p + k)
            acc |= np.where(going, (v & 0x7F) << (7 * k), 0)
            nxt = np.where(going, p + k + 1, nxt)
            going &= v >= 0x80
            if not going.any():
                break
        ok &= ~going
        return (acc >> 1) ^ -(acc & 1), nxt

    def string(p: Any) -> tuple[Any, Any, Any]:
        nonlocal ok
        n, p = varint(p)
        ok &= n >= 0
        return p, n, p + np.maximum(n, 0)

    def ascii(at: Any, n: Any, same_as: Any = None) -> Any:
        """Each string plain ASCII (and, with `same_as`, byte for byte the one there), read a
        byte position at a time over all of them; one longer than _MAX_TEXT is irregular."""
        good = n <= _MAX_TEXT
        for j in range(int(np.max(np.where(good, n, 0), initial=0))):
            inside = j < n
            v = byte(at + j)
            good &= ~inside | (v < 0x80)
            if same_as is not None:
                good &= ~inside | (v == byte(same_as + j))
        return good

    _, _, p = string(start + codec.HEADER_LEN)  # event_id
    table_at, table_len, p = string(p)
    key_at = fb.key_at
    ok &= (table_len == start - key_at) & ascii(table_at, table_len, key_at)
    branch = byte(p)
    ok &= (branch == 0) | (branch == 2)
    shoe_at, shoe_len, after = string(p + 1)
    ok &= (branch == 0) | ascii(shoe_at, shoe_len)
    p = np.where(branch == 2, after, p + 1)
    branch = byte(p)
    ok &= (branch == 0) | (branch == 2)
    _, after = varint(p + 1)
    p = np.where(branch == 2, after, p + 1)
    seq, p = varint(p)
    _, p = varint(p)  # occurred_at
    _, p = varint(p)  # recorded_at
    _, _, p = string(p)  # actor
    ok &= p + HASH_LEN <= end - HASH_LEN
    return EnvelopeBatch(ok, seq, p)


def key_ids(fb: KeyedFrames) -> tuple[Any, list[bytes]]:
    """Each record's key as a small int, and the keys (index = id), without a bytes object
    per record; a batch with a key longer than _MAX_TEXT has each key sliced instead. Ids
    follow no order of the keys (a key's bytes are compared as one integer)."""
    n_key = fb.value_at - fb.key_at
    width = int(n_key.max(initial=0))
    if width > _MAX_TEXT or int(n_key.min(initial=0)) < 0:
        buf = fb.buf
        seen: dict[bytes, int] = {}
        ids = np.fromiter((seen.setdefault(buf[a:z], len(seen)) for a, z in zip(
            fb.key_at.tolist(), fb.value_at.tolist(), strict=True)), np.int64, len(n_key))
        return ids, list(seen)
    b = np.frombuffer(fb.buf, dtype=np.uint8)
    span = np.arange(width)
    grid = b.take(fb.key_at[:, None] + span, mode="clip")
    grid[span >= n_key[:, None]] = 0
    rows = np.concatenate((grid, n_key.astype(np.uint8)[:, None]), axis=1)
    if width < 8:  # the usual short table id: one uint64 per key, which numpy sorts fast
        rows = np.pad(rows, ((0, 0), (0, 7 - width)))
    rows = np.ascontiguousarray(rows).view(
        np.uint64 if width < 8 else np.dtype((np.void, width + 1))).ravel()
    _, first, ids = np.unique(rows, return_index=True, return_inverse=True)
    keys = [fb.buf[int(fb.key_at[i]):int(fb.value_at[i])] for i in first.tolist()]
    return ids.ravel(), keys


def grouped(ids: Any, n_keys: int) -> Any:
    """The records' order grouped by id, each id's records in batch order."""
    # A stable sort of small ints is a radix sort in numpy: linear, not n log n.
    return np.argsort(ids.astype(np.int16) if n_keys < 2**15 else ids, kind="stable")

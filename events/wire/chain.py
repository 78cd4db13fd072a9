"""The per-table hash chain (docs/architecture.md, principle 2).

Each event's `hash` is SHA-256 over the previous event's hash followed by the event's encoded
bytes up to (not including) the hash field. `hash` is the last field of every schema and an Avro
fixed(32), so it is exactly the message's last 32 bytes: a verifier needs no decoding at all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

HASH_LEN = 32


def link(prev_hash: bytes, message: bytes) -> bytes:
    h = hashlib.sha256(prev_hash)
    h.update(memoryview(message)[:-HASH_LEN])
    return h.digest()


def seal(message: bytes, prev_hash: bytes) -> bytes:
    """The message with its last 32 bytes replaced by its chain hash."""
    return message[:-HASH_LEN] + link(prev_hash, message)


def stored_hash(message: bytes) -> bytes:
    return bytes(message[-HASH_LEN:])


def verifies(prev_hash: bytes, message: bytes) -> bool:
    return len(message) > HASH_LEN and verify_each((prev_hash,), (message,))[0]


def verify_each(prev_hashes: Iterable[bytes], messages: Iterable[Any]) -> list[bool]:
    """Per message (bytes or a memoryview of one): do its last HASH_LEN bytes equal
    SHA-256(its prev_hash || the bytes before them)? verify_split of each message cut at its
    hash: `verifies` asks it of one message, the projector's record path of every decoded row
    (projections/log_checks.py). Callers pass messages longer than HASH_LEN (a decoded event
    always is); `verifies` checks that itself."""
    n = HASH_LEN
    cut = messages if isinstance(messages, list | tuple) else list(messages)
    return verify_split(prev_hashes, [m[:-n] for m in cut], [m[-n:] for m in cut])


def verify_split(prev_hashes: Iterable[bytes], bodies: Iterable[Any],
                 hashes: Iterable[Any]) -> list[bool]:
    """The one definition of an event matching its own hash, for messages already cut in two:
    SHA-256(prev_hash || body) == hash, body being the message's bytes before its stored
    hash. One hashlib call per message in one comprehension, no Python call per message:
    SHA-256 does not vectorise (benchmarks/bench_verify_each.py). projections/frames.py gets
    both parts of a whole batch from its buffer in one Arrow call instead of slicing each."""
    sha256 = hashlib.sha256
    return [sha256(p + b).digest() == h
            for p, b, h in zip(prev_hashes, bodies, hashes, strict=True)]

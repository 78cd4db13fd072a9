"""The per-table hash chain (docs/architecture.md, principle 2).

Each event's `hash` is SHA-256 over the previous event's hash followed by the event's encoded
bytes up to (not including) the hash field. `hash` is the last field of every schema and an Avro
fixed(32), so it is exactly the message's last 32 bytes: a verifier needs no decoding at all.
"""

from __future__ import annotations

import hashlib

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
    return len(message) > HASH_LEN and stored_hash(message) == link(prev_hash, message)

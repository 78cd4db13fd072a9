"""A table's head: where its next event continues the gapless sequence and hash chain
(docs/architecture.md, principle 2). The recorder keeps them; the id index stores them."""

from __future__ import annotations

from dataclasses import dataclass

from events.errors import DecodeError
from events.reddog import model
from events.wire import chain, codec


@dataclass(slots=True)
class TableHead:
    """The last recorded event of a table: the next one continues from here."""

    seq: int = 0
    hash: bytes = model.GENESIS_HASH


def head_of(value: bytes) -> TableHead | None:
    """The head a record leaves, or None for bytes that are not a pitlog event."""
    try:
        return TableHead(codec.decode(value).seq, chain.stored_hash(value))
    except DecodeError:
        return None

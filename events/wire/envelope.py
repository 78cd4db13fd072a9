"""A message's envelope, read without decoding its body: what `pitlog verify` needs, fast.

Every schema starts with the same nine fields, event_id to prev_hash (docs/schema-evolution.md
keeps it so). Reading just those by hand from the Avro binary encoding (spec, "Binary
Encoding": zigzag varints, length-prefixed strings, union branch indexes, raw fixed bytes)
costs a few microseconds, several times less than decoding the whole record. A schema laid out
otherwise is still read, through the codec's full decode.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from events.wire import codec
from events.wire.chain import HASH_LEN

# The envelope every schema starts with: name and Avro type (logical types stripped).
_LAYOUT = (("event_id", "string"), ("table_id", "string"), ("shoe_id", ["null", "string"]),
           ("round_no", ["null", "int"]), ("seq", "long"), ("occurred_at", "long"),
           ("recorded_at", "long"), ("actor", "string"), ("prev_hash", "fixed32"))


class Envelope(NamedTuple):
    """The fields verify needs (a tuple: one is built per record, so it must be cheap)."""

    table_id: str
    shoe_id: str | None
    round_no: int | None
    seq: int
    prev_hash: bytes


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """An Avro zigzag varint (spec, "Binary Encoding"); IndexError or ValueError if damaged."""
    b = data[pos]
    if b < 0x80:  # one byte: most lengths, union branches and small numbers
        return (b >> 1) ^ -(b & 1), pos + 1
    shift = acc = 0
    while True:
        b = data[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if b < 0x80:
            return (acc >> 1) ^ -(acc & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def _length(data: bytes, pos: int) -> tuple[int, int]:
    n, pos = _varint(data, pos)
    if n < 0 or pos + n > len(data):
        raise ValueError(f"length {n} runs past the message")
    return n, pos


# Two varints skipped without decoding them (occurred_at and recorded_at): regex runs in C.
_TWO_VARINTS = re.compile(rb"[\x80-\xff]{0,9}[\x00-\x7f][\x80-\xff]{0,9}[\x00-\x7f]")


def _layout_matches(sv: codec.SchemaVersion) -> bool:
    fields = sv.raw_parsed["fields"][:len(_LAYOUT)]
    for f, (name, avro_type) in zip(fields, _LAYOUT, strict=False):
        t = f["type"]
        if isinstance(t, dict) and t.get("type") != "fixed":
            t = t["type"]  # {"type": "long"} once the logical type is stripped
        if avro_type == "fixed32":
            ok = isinstance(t, dict) and t.get("type") == "fixed" and t.get("size") == HASH_LEN
        else:
            ok = t == avro_type
        if f["name"] != name or not ok:
            return False
    return len(fields) == len(_LAYOUT)


class EnvelopeReader:
    """Parses the nine envelope fields; falls back to the codec for a schema laid out otherwise."""

    def __init__(self, reg: codec.SchemaRegistry) -> None:
        self.reg = reg
        self.fast = {fp: sv for fp, sv in reg.by_fingerprint.items() if _layout_matches(sv)}

    def read(self, data: bytes) -> Envelope:
        """The envelope, or ValueError saying why the bytes are not a readable event."""
        sv = self.fast.get(data[2:codec.HEADER_LEN]) if data[:2] == codec.MAGIC else None
        if sv is None or len(data) < codec.HEADER_LEN + HASH_LEN:
            try:
                sv = self.reg.writer_for(data)
            except Exception as exc:  # DecodeError: not the marker, or an unknown fingerprint
                raise ValueError(str(exc)) from exc
        if sv.fingerprint not in self.fast:
            try:
                _, rec = codec.decode_raw(data, self.reg)
            except Exception as exc:  # DecodeError only, but verify must never crash
                raise ValueError(str(exc)) from exc
            return Envelope(rec["table_id"], rec["shoe_id"], rec["round_no"], rec["seq"],
                             rec["prev_hash"])
        try:
            # Hot path, inlined: a varint below 64 is one byte (most lengths, union branches,
            # small numbers), so the usual record costs no call; anything longer calls _varint.
            pos = codec.HEADER_LEN
            n = data[pos]
            n, pos = (n >> 1, pos + 1) if n < 0x80 and not n & 1 else _length(data, pos)
            pos += n  # event_id: skipped
            n = data[pos]
            n, pos = (n >> 1, pos + 1) if n < 0x80 and not n & 1 else _length(data, pos)
            table_id = data[pos:pos + n].decode("utf-8")
            pos += n
            branch = data[pos]
            shoe_id = None
            if branch == 2:  # zigzag 1: the string branch
                n = data[pos + 1]
                n, pos = (n >> 1, pos + 2) if n < 0x80 and not n & 1 else _length(data, pos + 1)
                shoe_id = data[pos:pos + n].decode("utf-8")
                pos += n
            elif branch:
                raise ValueError(f"shoe_id union branch byte {branch}")
            else:
                pos += 1
            branch = data[pos]
            round_no = None
            if branch == 2:
                n = data[pos + 1]
                round_no, pos = (n >> 1, pos + 2) if n < 0x80 and not n & 1 else _varint(
                    data, pos + 1)
            elif branch:
                raise ValueError(f"round_no union branch byte {branch}")
            else:
                pos += 1
            n = data[pos]
            seq, pos = ((n >> 1) ^ -(n & 1), pos + 1) if n < 0x80 else _varint(data, pos)
            skipped = _TWO_VARINTS.match(data, pos)
            if skipped is None:
                raise ValueError("occurred_at or recorded_at is not a varint")
            pos = skipped.end()
            n = data[pos]
            n, pos = (n >> 1, pos + 1) if n < 0x80 and not n & 1 else _length(data, pos)
            pos += n  # actor: skipped
            if pos + HASH_LEN > len(data) - HASH_LEN:
                raise ValueError("the envelope runs into the hash")
            prev_hash = data[pos:pos + HASH_LEN]
        except (IndexError, ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{sv.event_type} v{sv.version}: corrupt envelope ({exc})") from exc
        return Envelope(table_id, shoe_id, round_no, seq, prev_hash)

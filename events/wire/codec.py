"""Avro codec: the only module that knows fastavro.

Wire format: Avro single-object encoding (spec, "Single object encoding"): the two marker bytes
C3 01, the 8-byte little-endian CRC-64-AVRO fingerprint of the writer schema's parsing canonical
form, then the Avro binary body. The writer schema is looked up in schemas/ by that fingerprint,
so every version ever published stays readable; the body is then resolved to the newest version
of its event type (new fields take their defaults), which is how old events are upcast.
"""

from __future__ import annotations

import io
import json
import os
import typing
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any

import fastavro
from fastavro.schema import fingerprint, to_parsing_canonical_form

from events.errors import DecodeError, EncodeError, SchemaError, corrupt_reason
from events.reddog import model
from events.wire import avro_writer, chain

MAGIC = b"\xc3\x01"
HEADER_LEN = 10
HASH_LEN = chain.HASH_LEN  # the hash field, fixed(32), ends every message
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1
_MIN_US = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // timedelta(microseconds=1)
_MAX_US = (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - _EPOCH) // timedelta(
    microseconds=1
)


def schemas_dir() -> Path:
    return Path(
        os.environ.get("PITLOG_SCHEMAS", Path(__file__).resolve().parents[2] / "schemas")
    )


@dataclass(frozen=True, slots=True)
class SchemaVersion:
    """One published .avsc file."""

    event_type: str
    version: int
    path: Path
    parsed: dict[str, Any]  # as the codec reads and writes it
    raw_parsed: dict[str, Any]  # logical types stripped: timestamps stay integer micros (fast path)
    fingerprint: bytes  # 8 bytes, little-endian CRC-64-AVRO

    @property
    def header(self) -> bytes:
        return MAGIC + self.fingerprint


def _strip_logical_types(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_logical_types(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [_strip_logical_types(v) for v in node]
    return node


class SchemaRegistry:
    """Every published schema in a folder, by fingerprint and by event type."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.by_fingerprint: dict[bytes, SchemaVersion] = {}
        self.latest: dict[str, SchemaVersion] = {}
        files = sorted(folder.glob("*.avsc"))
        if not files:
            raise SchemaError(
                f"no .avsc files in {folder}: set PITLOG_SCHEMAS to the schemas/ folder"
            )
        for path in files:
            try:
                event_type, vtag, _ = path.name.split(".")
                version = int(vtag.lstrip("v"))
                raw = json.loads(path.read_text())
                parsed = typing.cast(dict[str, Any], fastavro.parse_schema(raw))
                canonical = to_parsing_canonical_form(raw)
                # fastavro gives the fingerprint as the hex of its little-endian bytes.
                fp = bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))
                raw_parsed = typing.cast(
                    dict[str, Any], fastavro.parse_schema(_strip_logical_types(raw)))
            except (ValueError, KeyError, fastavro.schema.SchemaParseException) as exc:
                raise SchemaError(
                    f"{path}: cannot parse schema ({exc}); fix or restore the file"
                ) from exc
            if event_type not in model.EVENT_TYPES:
                raise SchemaError(f"{path}: no event type {event_type} in events/reddog/model.py")
            sv = SchemaVersion(event_type, version, path, parsed, raw_parsed, fp)
            self.by_fingerprint[fp] = sv
            if event_type not in self.latest or version > self.latest[event_type].version:
                self.latest[event_type] = sv
        missing = set(model.EVENT_TYPES) - set(self.latest)
        if missing:
            raise SchemaError(f"{folder}: no schema for {sorted(missing)}")
        # Compiled writers (events/avro_writer.py), by event class and version (None: newest).
        self.writers: dict[tuple[type, int | None], avro_writer.Writer] = {}

    def writer_for(self, data: bytes) -> SchemaVersion:
        if data[:2] != MAGIC:
            raise DecodeError(
                f"not an Avro single-object message (starts {data[:2].hex() or 'empty'}, "
                f"{len(data)} bytes); expected marker c301"
            )
        if len(data) < HEADER_LEN + HASH_LEN:  # the marker, but not a whole event
            raise DecodeError(
                f"a message cut short: {len(data)} bytes, fewer than the "
                f"{HEADER_LEN + HASH_LEN} of a pitlog event's header and hash alone; the record "
                f"was truncated on its way, or is not a pitlog event"
            )
        sv = self.by_fingerprint.get(bytes(data[2:HEADER_LEN]))
        if sv is None:
            raise DecodeError(
                f"unknown schema fingerprint {bytes(data[2:HEADER_LEN]).hex()}: no file in "
                f"{self.folder} has it; add the writer's .avsc to schemas/"
            )
        return sv


@cache
def registry() -> SchemaRegistry:
    return SchemaRegistry(schemas_dir())


# --- dataclass <-> Avro record -----------------------------------------------------------------


def _converter(tp: Any) -> Callable[[Any], Any]:
    """How to turn a decoded Avro value into the dataclass field's Python type."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) in (typing.Union, __import__("types").UnionType):
        inner = _converter(args[0])
        return lambda v: None if v is None else inner(v)
    if typing.get_origin(tp) is tuple:
        return lambda v: tuple(model.Card(rank=c["rank"], suit=model.Suit(c["suit"])) for c in v)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return tp
    return lambda v: v


@cache
def _field_converters(cls: type[Any]) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, _converter(hints[f.name])) for f in fields(cls))


def _to_avro_value(v: Any) -> Any:
    if isinstance(v, Enum):
        return v.value
    if isinstance(v, tuple):
        return [{"rank": c.rank, "suit": c.suit.value} for c in v]
    return v


def to_record(env: model.Envelope) -> dict[str, Any]:
    return record_of(env.event_id, env.table_id, env.shoe_id, env.round_no, env.seq,
                     micros(env.occurred_at), micros(env.recorded_at), env.actor, env.prev_hash,
                     env.hash, env.event)


def record_of(event_id: str, table_id: str, shoe_id: str | None, round_no: int | None, seq: int,
              occurred_at: int, recorded_at: int, actor: str, prev_hash: bytes, hash: bytes,
              event: model.DomainEvent) -> dict[str, Any]:
    """The Avro record fastavro writes (timestamps in integer micros): avro_writer.PARAMS,
    then the event's fields."""
    rec: dict[str, Any] = {
        "event_id": event_id,
        "table_id": table_id,
        "shoe_id": shoe_id,
        "round_no": round_no,
        "seq": seq,
        "occurred_at": occurred_at,
        "recorded_at": recorded_at,
        "actor": actor,
        "prev_hash": prev_hash,
        "hash": hash,
    }
    # A class is hashable; mypy 2.4 does not see a type[...] union as Hashable.
    for name, _ in _field_converters(type(event)):  # type: ignore[arg-type]
        rec[name] = _to_avro_value(getattr(event, name))
    return rec


def _is_int(t: Any) -> bool:
    """An Avro "int" type: bare, {"type": "int"}, or a branch of a union."""
    if isinstance(t, list):
        return any(_is_int(b) for b in t)
    if isinstance(t, dict):
        return t.get("type") == "int"
    return t == "int"


_INT_FIELDS: dict[bytes, tuple[tuple[str, tuple[str, ...]], ...]] = {}


def int_fields(sv: SchemaVersion) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The writer schema's "int" fields, derived once per schema (keyed by fingerprint):
    (name, ()) for a field, (name, item fields) for an array of records with int fields."""
    found = _INT_FIELDS.get(sv.fingerprint)
    if found is None:
        out: list[tuple[str, tuple[str, ...]]] = []
        for f in sv.raw_parsed["fields"]:
            t = f["type"]
            if _is_int(t):
                out.append((f["name"], ()))
            elif isinstance(t, dict) and t.get("type") == "array":
                item = t["items"]
                names = tuple(g["name"] for g in item.get("fields", ()) if _is_int(g["type"])) \
                    if isinstance(item, dict) else ()
                if names:
                    out.append((f["name"], names))
        found = _INT_FIELDS[sv.fingerprint] = tuple(out)
    return found


def _int_out_of_range(event_type: str, rec: dict[str, Any], name: str, v: Any) -> DecodeError:
    return DecodeError(
        f"{event_type} seq {rec.get('seq')}: {name} {v} is outside the Avro int range "
        f"{_I32_MIN}..{_I32_MAX}"
    )


# validate_record's bounds by field name ("array.field" inside an array of records), for the
# compiled writers: a value outside them is written by the reference path, which raises.
WRITER_BOUNDS: dict[str, tuple[int | None, int | None]] = {
    "rank": (2, 14), "cards.rank": (2, 14), "seq": (1, None),
    "occurred_at": (_MIN_US, _MAX_US), "recorded_at": (_MIN_US, _MAX_US),
}


def validate_record(
    event_type: str, rec: dict[str, Any], sv: SchemaVersion | None = None
) -> None:
    """Structural checks Avro cannot express. 13:47-20.31(a)2ii: ranks are 2 to 14.

    With `sv` (the writer schema), every "int" field must also hold a 32-bit value: fastavro
    reads an int as any varint, and the projection's int32 columns cannot hold more."""
    rank = rec.get("rank")
    if rank is not None and not 2 <= rank <= 14:
        raise DecodeError(f"{event_type} seq {rec.get('seq')}: card rank {rank} is not 2..14")
    for card in rec.get("cards") or ():
        if not 2 <= card["rank"] <= 14:
            raise DecodeError(
                f"{event_type} seq {rec.get('seq')}: racked card rank {card['rank']} is not 2..14"
            )
    if rec.get("seq", 1) < 1:
        raise DecodeError(f"{event_type}: sequence number {rec.get('seq')} is below 1")
    # decode_raw leaves timestamps as integer micros, decode makes datetimes (years 1..9999):
    # both must refuse the same bytes (a disagreement found by tests/events/test_fuzz.py).
    for name in ("occurred_at", "recorded_at"):
        us = rec.get(name)
        if isinstance(us, int) and not _MIN_US <= us <= _MAX_US:
            raise DecodeError(
                f"{event_type} seq {rec.get('seq')}: {name} {us} is not a time "
                f"between the years 1 and 9999"
            )
    if sv is not None:
        for name, items in int_fields(sv):
            if not items:
                v = rec.get(name)
                if v is not None and not _I32_MIN <= v <= _I32_MAX:
                    raise _int_out_of_range(event_type, rec, name, v)
                continue
            for item in rec.get(name) or ():
                for sub in items:
                    v = item.get(sub)
                    if v is not None and not _I32_MIN <= v <= _I32_MAX:
                        raise _int_out_of_range(event_type, rec, f"{name}.{sub}", v)


def from_record(event_type: str, rec: dict[str, Any]) -> model.Envelope:
    cls = model.EVENT_TYPES[event_type]
    payload = {name: conv(rec[name]) for name, conv in _field_converters(cls)}
    return model.Envelope(
        event_id=rec["event_id"],
        table_id=rec["table_id"],
        shoe_id=rec["shoe_id"],
        round_no=rec["round_no"],
        seq=rec["seq"],
        occurred_at=rec["occurred_at"],
        recorded_at=rec["recorded_at"],
        actor=rec["actor"],
        event=cls(**payload),
        prev_hash=rec["prev_hash"],
        hash=rec["hash"],
    )


# --- bytes -------------------------------------------------------------------------------------


def encode(
    env: model.Envelope, reg: SchemaRegistry | None = None, *, version: int | None = None
) -> bytes:
    """The exact bytes that go on the wire, written with the newest schema of the event type.

    `version` writes with an older published version instead (what an old writer still in
    service produces; tests of schema evolution need it). A field that version does not have
    must hold its default (None), or the value would be silently lost: EncodeError.

    Written by the schema's compiled writer (`writer`); the same bytes as `encode_reference`."""
    return writer(type(env.event), reg, version)(
        env.event_id, env.table_id, env.shoe_id, env.round_no, env.seq, micros(env.occurred_at),
        micros(env.recorded_at), env.actor, env.prev_hash, env.hash, env.event)


def writer(cls: type, reg: SchemaRegistry | None = None, version: int | None = None,
           ) -> avro_writer.Writer:
    """The compiled writer of event class `cls` (newest schema, or `version`), made once per
    registry: called with the values of avro_writer.PARAMS (timestamps in integer micros) and
    the event, it returns the message (the `hash` argument as its last 32 bytes)."""
    reg = reg or registry()
    found = reg.writers.get((cls, version))
    if found is not None:
        return found
    event_type = cls.__name__
    if event_type not in reg.latest:
        raise EncodeError(f"{event_type} is not an event type of events/reddog/model.py")
    sv = reg.latest[event_type]
    if version is not None and version != sv.version:
        sv = _version(reg, event_type, version)
        schema_fields = {f["name"] for f in sv.raw_parsed["fields"]}
        lost = tuple(n for n, _ in _field_converters(cls) if n not in schema_fields)
    else:
        lost = ()

    def fallback(*args: Any) -> bytes:
        return _write_reference(reg, event_type, record_of(*args), version)

    try:
        found = avro_writer.compile_writer(sv.raw_parsed, sv.header, WRITER_BOUNDS, lost,
                                           fallback)
    except avro_writer.Unsupported:
        found = fallback  # a type the compiler does not know: fastavro writes every event
    reg.writers[(cls, version)] = found
    return found


def encode_reference(
    env: model.Envelope, reg: SchemaRegistry | None = None, *, version: int | None = None
) -> bytes:
    """`encode` through fastavro's schemaless_writer and a dict per event: the reference the
    compiled writers are tested against (tests/events/test_avro_writer.py) and benchmarked
    beside."""
    return _write_reference(reg or registry(), env.event_type, to_record(env), version)


def _write_reference(reg: SchemaRegistry, event_type: str, rec: dict[str, Any],
                     version: int | None) -> bytes:
    sv = reg.latest[event_type]
    if version is not None and version != sv.version:
        sv = _version(reg, event_type, version)
        known = {f["name"] for f in sv.parsed["fields"]}
        lost = sorted(k for k, v in rec.items() if k not in known and v is not None)
        if lost:
            raise EncodeError(
                f"{event_type} v{version} has no field {', '.join(lost)}: "
                f"write it with v{reg.latest[event_type].version}"
            )
    buf = io.BytesIO()
    buf.write(sv.header)
    validate_record(event_type, rec, sv)
    try:
        # Timestamps are already integer micros, so the schema without logical types writes
        # the same bytes, faster. to_record sets every field, so no strict mode is needed.
        fastavro.schemaless_writer(buf, sv.raw_parsed, rec)
    except (ValueError, TypeError, AttributeError) as exc:
        raise EncodeError(f"{event_type} seq {rec.get('seq')}: {exc}") from exc
    return buf.getvalue()


def _version(reg: SchemaRegistry, event_type: str, version: int) -> SchemaVersion:
    for sv in reg.by_fingerprint.values():
        if sv.event_type == event_type and sv.version == version:
            return sv
    raise EncodeError(
        f"no schemas/{event_type}.v{version}.avsc: publish it or pick another version"
    )


def _read_body(
    sv: SchemaVersion, data: bytes, schema: dict[str, Any], reader: dict[str, Any] | None
) -> dict[str, Any]:
    buf = io.BytesIO(data)
    buf.seek(HEADER_LEN)
    try:
        rec = fastavro.schemaless_reader(buf, schema, reader)
    except Exception as exc:  # fastavro raises many types on corrupt input; all mean "corrupt"
        # the reason is kept with the quarantined message: the same for the same bytes
        raise DecodeError(
            f"{sv.event_type} v{sv.version}: corrupt body ({corrupt_reason(exc)})"
        ) from exc
    if buf.tell() != len(data):
        raise DecodeError(
            f"{sv.event_type} v{sv.version}: {len(data) - buf.tell()} trailing bytes after the body"
        )
    if not isinstance(rec, dict):
        raise DecodeError(f"{sv.event_type} v{sv.version}: body is not a record")
    return rec


def decode(data: bytes, reg: SchemaRegistry | None = None) -> model.Envelope:
    """Bytes to an event, resolved to the newest schema of its type; DecodeError otherwise."""
    reg = reg or registry()
    sv = reg.writer_for(data)
    latest = reg.latest[sv.event_type]
    rec = _read_body(sv, data, sv.parsed, None if latest is sv else latest.parsed)
    validate_record(sv.event_type, rec, sv)
    try:
        return from_record(sv.event_type, rec)
    except (ValueError, KeyError, TypeError) as exc:
        raise DecodeError(f"{sv.event_type} v{sv.version}: {exc}") from exc


def decode_raw(data: bytes, reg: SchemaRegistry) -> tuple[str, dict[str, Any]]:
    """The projection's hot path: a plain dict, timestamps as integer micros, no dataclasses."""
    sv = reg.writer_for(data)
    latest = reg.latest[sv.event_type]
    rec = _read_body(sv, data, sv.raw_parsed, None if latest is sv else latest.raw_parsed)
    validate_record(sv.event_type, rec, sv)
    return sv.event_type, rec


_ONE_US = timedelta(microseconds=1)  # made once: a third of micros' time made each call


def micros(ts: datetime) -> int:
    return (ts - _EPOCH) // _ONE_US


def from_micros(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)

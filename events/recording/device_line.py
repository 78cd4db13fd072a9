"""One device JSON line to a domain event: the line format of `pitlog ingest` (docs/ingest.md).

`parse_line` refuses, with LineRejected (the reason, and what to do), anything that is not a
structurally valid event: malformed JSON, an unknown type, a missing or unknown field, a value
of the wrong type or range, an invalid card (13:47-20.31(a)2ii: ranks 2 to 14, four suits),
a time without a zone. It does not judge game rules (docs/architecture.md, principle 1).

Each type's payload fields are those of its dataclass in events/reddog/model.py, checked against the
newest schema for integer ranges, so a new schema version's field is accepted as soon as the
model has it (docs/schema-evolution.md).
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from datetime import UTC, datetime
from enum import Enum
from typing import Any, NamedTuple

import orjson

from events.errors import IngestError
from events.recording import limits
from events.recording.limits import MAX_JSON_DEPTH, json_depth_exceeds
from events.reddog import model
from events.wire import codec

ENVELOPE_KEYS = {"type", "table", "shoe", "round", "seq", "at", "actor", "id"}
_INT_RANGE = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
_DOCS = "docs/ingest.md"


class LineRejected(IngestError):
    """One input line is not a structurally valid event; it is quarantined, never recorded."""

    def __init__(self, reason: str, hint: str) -> None:
        super().__init__(f"{reason}; {hint}")
        self.reason, self.hint = reason, hint


class DeviceLine(NamedTuple):
    """One good line, parsed: what the recorder needs. A NamedTuple: made once a line, it costs
    under half a frozen dataclass's construction (issue 19, item 3)."""

    table: str
    event: model.DomainEvent
    shoe: str | None
    round_no: int | None
    seq: int
    at: datetime
    actor: str
    event_id: str | None


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    kind: str  # int | bool | str | enum | cards
    required: bool
    nullable: bool
    enum: type[Enum] | None = None
    avro: str = ""  # int | long for integers: their range
    choices: dict[str, Enum] = field(default_factory=dict)  # an enum's members by value


def _avro_int(sv_fields: dict[str, Any], name: str) -> str:
    t = sv_fields[name]
    t = [b for b in t if b != "null"][0] if isinstance(t, list) else t
    return t if t in _INT_RANGE else "long"


def payload_fields() -> dict[str, tuple[_Field, ...]]:
    """Each event type's payload fields as a line carries them (docs/ingest.md lists them)."""
    reg = codec.registry()
    out: dict[str, tuple[_Field, ...]] = {}
    for name, cls in model.EVENT_TYPES.items():
        avro_types = {f["name"]: f["type"] for f in reg.latest[name].raw_parsed["fields"]}
        hints = typing.get_type_hints(cls)
        specs = []
        for f in fields(cls):
            tp = hints[f.name]
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            nullable = type(None) in typing.get_args(tp)
            inner = args[0] if nullable else tp
            required = f.default is MISSING and f.default_factory is MISSING
            if typing.get_origin(inner) is tuple:
                specs.append(_Field(f.name, "cards", required, nullable))
            elif isinstance(inner, type) and issubclass(inner, Enum):
                specs.append(_Field(f.name, "enum", required, nullable, inner,
                                    choices={m.value: m for m in inner}))
            elif inner is bool:
                specs.append(_Field(f.name, "bool", required, nullable))
            elif inner is int:
                specs.append(_Field(f.name, "int", required, nullable,
                                    avro=_avro_int(avro_types, f.name)))
            else:
                specs.append(_Field(f.name, "str", required, nullable))
        out[name] = tuple(specs)
    return out


_FIELDS: dict[str, tuple[_Field, ...]] | None = None


def _int(name: str, value: Any, avro: str = "long") -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise LineRejected(f"field '{name}' must be an integer, not {json.dumps(value)}",
                           "send the number without quotes")
    lo, hi = _INT_RANGE[avro]
    if not lo <= value <= hi:
        raise LineRejected(f"field '{name}' is {value}, outside the {avro} range",
                           f"check the device's value ({lo}..{hi})")
    return value


def _str(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise LineRejected(f"field '{name}' must be a string, not {json.dumps(value)}",
                           "send it in double quotes")
    return value


def _utf8(name: str, value: str) -> None:
    """A key field (table, actor, id) must be UTF-8: it is hashed to the event id and looked up
    in the id index, where a lone surrogate (json reads "\\ud800" as one) stopped ingest."""
    try:
        value.encode()
    except UnicodeEncodeError as exc:
        raise LineRejected(f"field '{name}' is not Unicode text (a lone surrogate, "
                           f"{json.dumps(value[exc.start])[1:-1]})",
                           "send UTF-8 text: an escape \\ud800-\\udfff must be one of a pair"
                           ) from exc


def _rank(name: str, value: Any) -> int:
    rank = _int(name, value, "int")
    if not 2 <= rank <= 14:  # 13:47-20.31(a)2ii: 2..10 face value, J=11, Q=12, K=13, A=14
        raise LineRejected(f"invalid card: {name} {rank} is not 2..14",
                           "ranks are 2-10, J=11, Q=12, K=13, A=14: check the shoe's reader")
    return rank


def _enum(spec: _Field, value: Any) -> Enum:
    member = spec.choices.get(value) if isinstance(value, str) else None
    if member is None:
        allowed = ", ".join(spec.choices)
        card = "invalid card: " if spec.enum is model.Suit else ""
        raise LineRejected(f"{card}{spec.name} {json.dumps(value)} is not one of {allowed}",
                           f"send one of {allowed}")
    return member


def _value(spec: _Field, value: Any) -> Any:
    # The usual values first, each accepted exactly when the checks below would accept it
    # (this runs for every field of every line); anything else takes the full path.
    kind, t = spec.kind, type(value)
    if t is int and kind == "int" and spec.name != "rank":
        lo, hi = _INT_RANGE[spec.avro]
        if lo <= value <= hi:
            return value
    elif t is str and kind == "str":
        return value
    elif t is str and kind == "enum":
        member = spec.choices.get(value)
        if member is not None:
            return member
    if value is None:
        if spec.nullable:
            return None
        raise LineRejected(f"field '{spec.name}' may not be null", "send a value")
    if spec.name == "rank":
        return _rank("rank", value)
    if spec.kind == "int":
        return _int(spec.name, value, spec.avro)
    if spec.kind == "bool":
        if not isinstance(value, bool):
            raise LineRejected(f"field '{spec.name}' must be true or false, not "
                               f"{json.dumps(value)}", "send a JSON boolean")
        return value
    if spec.kind == "enum":
        return _enum(spec, value)
    if spec.kind == "cards":
        if not isinstance(value, list):
            raise LineRejected(f"field '{spec.name}' must be a list of cards",
                               'send [{"rank": 12, "suit": "H"}, ...]')
        suit = _Field("suit", "enum", True, False, model.Suit,
                      choices={m.value: m for m in model.Suit})
        cards = []
        for card in value:
            if not isinstance(card, dict) or set(card) != {"rank", "suit"}:
                raise LineRejected(f"invalid card in '{spec.name}': {json.dumps(card)}",
                                   'each card is {"rank": 2..14, "suit": "S|H|D|C"}')
            cards.append(model.Card(_rank("rank", card["rank"]),
                                    typing.cast(model.Suit, _enum(suit, card["suit"]))))
        return tuple(cards)
    return _str(spec.name, value)


_ALLOWED: dict[str, frozenset[str]] = {}


def _allowed(event_type: str, specs: tuple[_Field, ...]) -> frozenset[str]:
    """The keys a line of this type may have, made once per type (this runs once a line)."""
    found = _ALLOWED.get(event_type)
    if found is None:
        found = _ALLOWED[event_type] = frozenset(ENVELOPE_KEYS | {s.name for s in specs})
    return found


def parse_line(text: str | bytes,
               event_id: Callable[[str, str, int], str] | None = None) -> DeviceLine:
    """One JSON line to a DeviceLine, or LineRejected with the reason and what to do. A line
    without an `id` gets `event_id(table, actor, seq)` when that is given, else None."""
    global _FIELDS
    if _FIELDS is None:
        _FIELDS = payload_fields()
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if json_depth_exceeds(raw):
        raise LineRejected(f"JSON nested deeper than {MAX_JSON_DEPTH} levels",
                           "a device line is one flat object (cards a list of objects): "
                           "check the sender")
    try:
        # orjson's value where it reads the line (a C parser: a third of json's time; this runs
        # once a line); anything else goes to json below, so every accepted value and every
        # refusal's wording stays json's. Also to json: any line orjson reads a float in, as it
        # reads an integer beyond 64 bits where json keeps the int (no field takes a float, so
        # a good line never pays for it; this replaced a search for 19 digits in a row, 6% of
        # ingest's CPU, session 40).
        obj = orjson.loads(raw)
        if _holds_float(obj):
            obj = None
    except orjson.JSONDecodeError:
        obj = None
    if obj is None:  # only json's reading can hold a lone surrogate (orjson refuses one)
        return _checked(_stdlib_loads(text), event_id, surrogates=True)
    # Each key written is a closing quote, optional whitespace and a colon in the text, so a
    # key given twice (json and orjson both read it as its last value) leaves fewer keys than
    # such marks: then json reads the line again and refuses it, naming the key. A string
    # value can only add marks (`\" :` inside it), never hide one, so a repeated key always
    # sends the line to json. Nested objects (a card of CardsRacked) hold keys of their own.
    if isinstance(obj, dict) and (marks := _key_marks(raw)) != len(obj) \
            and marks != _nested_keys(obj):
        _stdlib_loads(text)
    return _checked(obj, event_id)


def _holds_float(value: Any) -> bool:
    """A float anywhere in a decoded value (a card of CardsRacked is a nested object)."""
    if type(value) is dict:
        value = value.values()
    elif type(value) is not list:
        return type(value) is float
    types = set(map(type, value))
    if float in types:
        return True
    return (dict in types or list in types) and any(
        _holds_float(v) for v in value if type(v) is dict or type(v) is list)
# A key's end: its closing quote, then JSON's whitespace (RFC 8259, 2), then the colon.
_KEY_MARK = re.compile(rb'"[ \t\n\r]*:')


def _key_marks(raw: bytes) -> int:
    """How many key ends (_KEY_MARK) the line's text holds: by bytes.count (a quarter of
    the regex's time, which is a tenth of the line's parse) unless a space stands before a
    colon or the line holds another whitespace that may."""
    if b" :" in raw or b"\t" in raw or b"\r" in raw or b"\n" in raw:
        return len(_KEY_MARK.findall(raw))
    return raw.count(b'":')


def _nested_keys(value: Any) -> int:
    """How many keys the objects of a decoded value hold, nested ones included."""
    if isinstance(value, dict):
        return len(value) + sum(_nested_keys(v) for v in value.values())
    if isinstance(value, list):
        return sum(_nested_keys(v) for v in value)
    return 0


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook: an object whose keys are each given once, else
    LineRejected naming the first key given again. JSON leaves a repeated key's meaning to
    the reader (RFC 8259, 4: names "SHOULD be unique"): "seq": 18, "seq": 1 would be
    recorded as seq 1, a value the device may not have meant."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise LineRejected(f"key {key!r} given twice in one object",
                                   "send each key once: which of the values a repeated key "
                                   "holds is not defined")
            seen.add(key)
    return obj


def _stdlib_loads(text: str | bytes) -> Any:
    """json's reading of a line, or LineRejected saying where it is not JSON."""
    if isinstance(text, bytes):
        # Always UTF-8 (docs/ingest.md, "The line format"): json.loads would guess UTF-16 or
        # UTF-32 from the bytes and record a line no device should send. A UTF-8 byte order
        # mark (a file saved by a Windows tool) is UTF-8 still; surrogatepass as json's own.
        try:
            text = text.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            raise LineRejected("the line is not UTF-8 text", "send UTF-8 JSON") from exc
    try:
        obj = json.loads(text, object_pairs_hook=_once_each)
    except RecursionError as exc:  # not reached after the depth check; never abort ingest
        raise LineRejected("JSON nested too deeply", "check the sender") from exc
    except json.JSONDecodeError as exc:
        raise LineRejected(f"malformed JSON ({exc.msg} at column {exc.colno})",
                           "each line must be one JSON object: fix the device's output "
                           "and resend the line") from exc
    except ValueError as exc:  # Python's cap on an integer's digits: no field holds such a number
        raise LineRejected(f"a JSON number too long to read ({exc.args[0].split(';')[0]})",
                           "no field takes a number of that many digits: fix the device's "
                           "output and resend the line") from exc
    return obj


def _checked(obj: Any, event_id: Callable[[str, str, int], str] | None, *,
             surrogates: bool = False) -> DeviceLine:
    """A decoded line checked field by field (parse_line); `surrogates`: json read it, so a
    text field may hold a lone surrogate."""
    assert _FIELDS is not None
    if not isinstance(obj, dict):
        raise LineRejected(f"a line must be a JSON object, not {type(obj).__name__}",
                           "send one object per line")
    event_type = obj.get("type")
    if event_type is None:
        raise LineRejected("missing field 'type'", f"name the event type ({_DOCS} lists them)")
    specs = _FIELDS.get(event_type) if isinstance(event_type, str) else None
    if specs is None:
        raise LineRejected(f"unknown event type {json.dumps(event_type)}",
                           f"use one of the {len(_FIELDS)} types in {_DOCS}")
    for key in ("table", "seq", "at", "actor"):
        if key not in obj:
            raise LineRejected(f"missing field '{key}' for {event_type}",
                               "add it and resend the line")
    if not _allowed(event_type, specs).issuperset(obj):
        known = {s.name for s in specs}
        unknown = sorted(set(obj) - ENVELOPE_KEYS - known)
        raise LineRejected(f"unknown field '{unknown[0]}' for {event_type}",
                           f"remove it; {event_type} has {', '.join(sorted(known)) or 'no fields'}")
    payload: dict[str, Any] = {}
    # The usual value of each field is taken inline, exactly when _value would take it (an int
    # in range, a string, an enum's value, a boolean); anything else goes through _value, which
    # takes it or says why not. This runs for every field of every line.
    for name, usual, lo, hi, choices, spec in _plan(event_type, specs):
        value = obj.get(name, _ABSENT)
        if value is _ABSENT:
            if spec.required:
                raise LineRejected(f"missing field '{name}' for {event_type}",
                                   "add it and resend the line")
            continue
        t = type(value)
        if t is usual and (t is not int or lo <= value <= hi):
            payload[name] = value
        elif t is str and choices is not None and value in choices:
            payload[name] = choices[value]
        else:
            payload[name] = _value(spec, value)
    table = obj["table"]
    if type(table) is not str:
        table = _str("table", table)
    if not 1 <= len(table) <= 64:
        raise LineRejected(f"table id {json.dumps(table)} must be 1 to 64 characters",
                           "send the table's id, e.g. T07")
    if not table.isascii():
        _utf8("table", table)
    if not table.strip():  # limits.blank, inline (once a line): a blank id names no table
        raise LineRejected(f"table id {json.dumps(table)} is blank",
                           "send the table's id, e.g. T07")
    actor = obj["actor"]
    if type(actor) is not str:
        actor = _str("actor", actor)
    if not actor.isascii():
        _utf8("actor", actor)
    if not actor.strip():  # limits.blank, inline: a blank id names no one
        raise LineRejected("field 'actor' is empty", "send the device or dealer id")
    seq = obj["seq"]
    if type(seq) is not int or not _LONG[0] <= seq <= _LONG[1]:
        seq = _int("seq", seq)
    if seq < 1:
        raise LineRejected(f"seq {seq} is below 1", "a device numbers its lines from 1")
    shoe = obj.get("shoe")
    round_no = obj.get("round")
    given = obj.get("id")
    if shoe is not None and type(shoe) is not str:
        shoe = _str("shoe", shoe)
    if shoe is not None and not shoe.strip():  # limits.blank: its cards would join no shoe
        raise LineRejected("field 'shoe' is empty", "send the shoe's id, e.g. T07-S0003")
    if round_no is not None and (type(round_no) is not int
                                 or not _INT[0] <= round_no <= _INT[1]):
        round_no = _int("round", round_no, "int")
    if round_no is not None and (why := limits.number_refusal("round_no", round_no, "round")):
        raise LineRejected(why, "send the round's number within its shoe, or null for a shoe- "
                                "or table-level event")
    _check_numbers_and_ids(payload)
    if surrogates:  # named here, not by the encoder's "not encodable (... seq N ...)"
        for name, value in (("shoe", shoe), *payload.items()):
            if type(value) is str and not value.isascii():
                _utf8(name, value)
    event = model.EVENT_TYPES[event_type](**payload)
    at = _time(obj["at"])
    if given is not None:
        given = _str("id", given)
        if not given.isascii():
            _utf8("id", given)
        if limits.blank(given):  # ingest de-duplicates by id: a blank one would merge lines
            raise LineRejected(f"field 'id' is {given[:16]!r}, blank",
                               "send a unique id for each line, or leave 'id' out: ingest "
                               "then derives one from the table, the device and its seq")
    elif event_id is not None:
        given = event_id(table, actor, seq)
    # By position: keywords cost a NamedTuple a third more (this runs once a line).
    return DeviceLine(table, event, shoe, round_no, seq, at, actor, given)


# The bounds of numbers and ids are limits.py's (NUMBER_BOUNDS, ROUND_BOUNDS, PAYLOAD_IDS), the
# ones the Recorder and the projector hold too (projections/bounds.py); here each gets a hint
# for the device that sent it.
_HINTS = {"seat": "send the seat's number as the table's layout shows it",
          "area": "send the betting area's number as the table's layout shows it",
          "requested_by_seat": "send the seat's number as the table's layout shows it",
          "shoe_position": "send the position the card-reading shoe counted, or null if it "
                           "does not count"}
_NUMBERS = tuple(limits.NUMBER_BOUNDS.items())
_IDS = tuple(limits.PAYLOAD_IDS.items())


def _check_numbers_and_ids(payload: dict[str, Any]) -> None:
    """LineRejected for a number outside limits.NUMBER_BOUNDS, or an empty (or blank) id."""
    for name, (low, high, _) in _NUMBERS:
        value = payload.get(name)
        if value is None or (low <= value and (high is None or value <= high)):
            continue  # inline: the usual value costs no call (this runs once a line)
        raise LineRejected(limits.number_refusal(name, value) or "",
                           _HINTS.get(name, f"check the device's value ({low}.."
                                            f"{high if high is not None else ''})"))
    for name, what in _IDS:
        value = payload.get(name)
        if value is not None and not value.strip():  # limits.blank, inline
            raise LineRejected(f"field '{name}' is empty", f"send the {what}'s id")


_ABSENT = object()
_INT, _LONG = _INT_RANGE["int"], _INT_RANGE["long"]
_Plan = tuple[tuple[str, type | None, int, int, dict[str, Enum] | None, _Field], ...]
_PLANS: dict[str, _Plan] = {}


def _plan(event_type: str, specs: tuple[_Field, ...]) -> _Plan:
    """Per field of a type, made once: the type its usual value has (None: always _value),
    an int's bounds (a card's rank 2..14, 13:47-20.31(a)2ii), an enum's members by value."""
    found = _PLANS.get(event_type)
    if found is None:
        rows = []
        for spec in specs:
            lo, hi = (2, 14) if spec.name == "rank" else _INT_RANGE.get(spec.avro, (0, -1))
            usual = {"int": int, "str": str, "bool": bool}.get(spec.kind)
            rows.append((spec.name, usual, lo, hi,
                         spec.choices if spec.kind == "enum" else None, spec))
        found = _PLANS[event_type] = tuple(rows)
    return found


def _time(value: Any) -> datetime:
    hint = "send an ISO 8601 time with its zone, e.g. 2026-11-28T21:14:03.120Z"
    if not isinstance(value, str):
        raise LineRejected(f"field 'at' must be a string, not {json.dumps(value)}", hint)
    try:
        at = datetime.fromisoformat(value)
    except ValueError as exc:
        raise LineRejected(f"field 'at' is not a time: {json.dumps(value)}", hint) from exc
    if at.tzinfo is None:
        raise LineRejected(f"field 'at' has no time zone: {json.dumps(value)}", hint)
    try:
        return at.astimezone(UTC)
    except OverflowError as exc:  # year 1 or 9999 shifted past datetime's range
        raise LineRejected(f"field 'at' is {json.dumps(value)}, outside "
                           f"{limits.MIN_TIME:%Y-%m-%d} to {limits.MAX_TIME:%Y-%m-%d} (UTC)",
                           hint) from exc

"""Avro writers compiled once per schema: an event's wire bytes straight from its fields.

fastavro's `schemaless_writer` interprets the schema field by field for every event and needs
a dict per event; it was the largest cost of `pitlog simulate` (benchmarks/results.md). Here
each published schema is turned once into the source of a Python function that reads the
envelope values and the event's attributes and joins their Avro binary encodings (spec,
"Binary Encoding": zigzag varints, length-prefixed UTF-8, union branch indexes, enum indexes,
raw fixed bytes, arrays as one block then 0), timestamps given as integer microseconds.

The generated writer refuses nothing itself: any value it does not handle exactly as the
reference would (out of range, of an unexpected type, a check of events/wire/codec.py's
`validate_record` that fails) sends the event to `fallback`, the fastavro path, which writes
it or raises exactly what it always raised. So the two paths write the same bytes for every
event by construction where the fast one answers, and tests/events/test_avro_writer.py compares them
on every schema in schemas/. A schema with a type this compiler does not know gets no writer
(`Unsupported`): the codec then always uses fastavro for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# The arguments of every writer, in order: the envelope fields of every schema (the codec's
# record), then the domain event whose attributes are the payload fields.
PARAMS = ("event_id", "table_id", "shoe_id", "round_no", "seq", "occurred_at", "recorded_at",
          "actor", "prev_hash", "hash")
_I32 = (-(2**31), 2**31 - 1)
_I64 = (-(2**63), 2**63 - 1)
_ONE = tuple(bytes([i]) for i in range(128))
_FAST_ERRORS = "(_Fallback, TypeError, ValueError, AttributeError, KeyError, OverflowError)"

Bounds = Mapping[str, tuple[int | None, int | None]]
Writer = Callable[..., bytes]


class Unsupported(Exception):
    """The schema has a type the compiler does not write; fastavro writes it instead."""


class _Fallback(Exception):
    """Raised inside a writer: this event goes to the reference path."""


def _unrolled(k: int) -> Callable[[int], bytes]:
    """The varint of a non-negative n of k 7-bit groups, as one expression (a loop per byte
    cost 3x as much for a timestamp's 8 bytes)."""
    groups = [f"n >> {7 * i} & 127 | 128" for i in range(k - 1)] + [f"n >> {7 * (k - 1)}"]
    names: dict[str, Any] = {}
    exec(f"def varint(n): return bytes(({', '.join(groups)},))", names)  # noqa: S102
    return names["varint"]  # type: ignore[no-any-return]


_BY_BITS = tuple(_unrolled(max(1, (bits + 6) // 7)) for bits in range(65))


def long_bytes(n: int) -> bytes:
    """Avro long (zigzag varint) of n, which must be within 64 bits (the writer checks)."""
    n = (n << 1) ^ (n >> 63)
    if n < 128:
        return _ONE[n]
    return _BY_BITS[n.bit_length()](n)


class _Source:
    """The lines of one generated function, with fresh local names."""

    def __init__(self, names: dict[str, Any]) -> None:
        self.lines: list[str] = []
        self.names = names  # globals of the generated code
        self.n = 0

    def var(self, prefix: str = "v") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, value: Any) -> str:
        name = f"K{len(self.names)}"
        self.names[name] = value
        return name


def _check(src: _Source, v: str, lo: int | None, hi: int | None) -> None:
    conds = [f"{lo} <= {v}" if lo is not None else "", f"{v} <= {hi}" if hi is not None else ""]
    cond = " and ".join(c for c in conds if c)
    if cond:
        src.lines.append(f"if not ({cond}): raise _Fallback")


def _tighter(a: tuple[int | None, int | None], b: tuple[int | None, int | None] | None,
             ) -> tuple[int | None, int | None]:
    if b is None:
        return a
    lo = a[0] if b[0] is None else b[0] if a[0] is None else max(a[0], b[0])
    hi = a[1] if b[1] is None else b[1] if a[1] is None else min(a[1], b[1])
    return lo, hi


def _value(src: _Source, t: Any, v: str, path: str, bounds: Bounds, named: dict[str, Any],
           item: bool = False) -> str:
    """Emit the lines that encode value expression `v` of Avro type `t`; return the name of
    the bytes (or an expression of them). `path` keys `bounds` (codec.validate_record's checks
    by field name); `item` is True inside an array, where the reference reads enum values with
    `.value` (codec._to_avro_value)."""
    if isinstance(t, str) and t in named:
        t = named[t]
    kind = t.get("type") if isinstance(t, dict) else t
    if isinstance(t, list):
        if len(t) == 2 and t[0] == "null" and not isinstance(t[1], list):
            out = src.var("u")
            inner = _Source(src.names)
            inner.n = src.n
            body = _value(inner, t[1], v, path, bounds, named, item)
            src.n = inner.n
            src.lines.append(f"if {v} is None:")
            src.lines.append(f"    {out} = b'\\x00'")
            src.lines.append("else:")
            src.lines.extend(f"    {line}" for line in inner.lines)
            src.lines.append(f"    {out} = b'\\x02' + {body}")
            return out
        raise Unsupported(f"union {t}")
    if kind in ("int", "long") and not (isinstance(t, dict) and "logicalType" in t):
        x = src.var()
        src.lines.append(f"{x} = {v}")
        lo, hi = _tighter(_I32 if kind == "int" else _I64, bounds.get(path))
        _check(src, x, lo, hi)
        # long_bytes written out: the zigzag here, then one byte, or the unrolled varint of
        # its length (a timestamp, a seq), with one call instead of two: three or four longs
        # per event (issue 19, item 3)
        z = src.var("z")
        src.lines.append(f"{z} = ({x} << 1) ^ ({x} >> 63)")
        return f"(_ONE[{z}] if {z} < 128 else _BY_BITS[{z}.bit_length()]({z}))"
    if kind == "string":
        b, n = src.var("b"), src.var("n")
        src.lines.append(f"{b} = {v}.encode()")
        src.lines.append(f"{n} = len({b})")
        return f"(_ONE[{n} << 1] if {n} < 64 else _long({n})) + {b}"
    if kind == "boolean":
        return f"(b'\\x01' if {v} else b'\\x00')"
    if kind == "fixed":
        named[t["name"]] = t
        x = src.var("f")
        # bytes of the fixed's size are written as they are; anything else (fastavro refuses
        # another size) goes to the reference
        src.lines.append(f"{x} = {v}")
        src.lines.append(f"if type({x}) is not bytes or len({x}) != {int(t['size'])}: "
                         f"raise _Fallback")
        return x
    if kind == "enum":
        named[t["name"]] = t
        table = src.const({s: long_bytes(i) for i, s in enumerate(t["symbols"])})
        return f"{table}[{v}.value]" if item else f"{table}[{v}]"
    if kind == "array" and isinstance(t["items"], dict | str):
        items = named.get(t["items"], t["items"]) if isinstance(t["items"], str) else t["items"]
        if not (isinstance(items, dict) and items.get("type") == "record"):
            raise Unsupported(f"array of {items}")
        named[items["name"]] = items
        fn = _compile_item(src.names, items, path, bounds, named)
        x = src.var("a")
        src.lines.append(f"{x} = {v}")
        # codec._to_avro_value turns a tuple into the list of records; anything else is not
        src.lines.append(f"if not isinstance({x}, tuple): raise _Fallback")
        return (f"((_long(len({x})) + b''.join([{fn}(c) for c in {x}]) + b'\\x00') "
                f"if {x} else b'\\x00')")
    raise Unsupported(f"type {t}")


def _compile_item(names: dict[str, Any], record: dict[str, Any], path: str, bounds: Bounds,
                  named: dict[str, Any]) -> str:
    src = _Source(names)
    parts = [_value(src, f["type"], f"c.{f['name']}", f"{path}.{f['name']}", bounds, named,
                    item=True) for f in record["fields"]]
    fn = f"item{len(names)}"
    code = "\n".join([f"def {fn}(c):", *(f"    {line}" for line in src.lines),
                      f"    return b''.join(({', '.join(parts)},))"])
    exec(code, names)  # noqa: S102 - our own source, generated from a parsed schema
    return fn


def compile_writer(schema: dict[str, Any], header: bytes, bounds: Bounds,
                   lost: tuple[str, ...], fallback: Writer) -> Writer:
    """A writer for `schema` (fastavro-parsed, logical types stripped): called with PARAMS then
    the event, it returns `header` + the Avro body. `lost` are the event's attributes this
    schema has no field for, which must be None (codec.encode's rule for an older version);
    `bounds` are extra (low, high) limits by field name; a value outside goes to `fallback`,
    which has the writer's signature. Unsupported for a type it does not know."""
    names: dict[str, Any] = {"_long": long_bytes, "_ONE": _ONE, "_BY_BITS": _BY_BITS,
                             "_Fallback": _Fallback,
                             "_fallback": fallback, "_HEADER": header}
    named: dict[str, Any] = {}
    src = _Source(names)
    for name in lost:
        src.lines.append(f"if ev.{name} is not None: raise _Fallback")
    parts = ["_HEADER"]
    for f in schema["fields"]:
        name = f["name"]
        if name in PARAMS:
            expr = name
        elif name.isidentifier():
            expr = f"ev.{name}"
        else:
            raise Unsupported(f"field name {name!r}")
        parts.append(_value(src, f["type"], expr, name, bounds, named))
    args = ", ".join((*PARAMS, "ev"))
    code = "\n".join([
        f"def write({args}):",
        "    try:",
        *(f"        {line}" for line in src.lines),
        f"        return b''.join(({', '.join(parts)}))",
        f"    except {_FAST_ERRORS}:",
        f"        return _fallback({args})",
    ])
    exec(code, names)  # noqa: S102 - our own source, generated from a parsed schema
    writer: Writer = names["write"]
    writer.source = code  # type: ignore[attr-defined]  # for a reader of a failing test
    return writer

"""Batch decode: a batch of single-object Avro messages straight into Arrow columns.

Why: `codec.decode_raw` spends nearly all its time inside fastavro's per-record, per-field
interpretation of the schema, and the dicts it returns cost Arrow as much again to turn into
columns. Handing fastavro the bodies of one writer schema as one Avro array saved little: the
per-field work, not the call, is the cost (benchmarks/README.md has the numbers). So this
module decodes *field by field across every message of a writer schema at once*, with numpy: a
field is a handful of vector operations over all the messages, and its values land in an Arrow
array without a dict or a Python object per value.

Exactness (docs/architecture.md, principle 1): the fast path accepts only messages it can decode
without
ambiguity: the single-object header of a known schema; minimal-width varints no wider than 10
bytes; union and enum indexes in range; ASCII strings; booleans 0 or 1; arrays in one block;
a body that ends exactly where the message ends; values `codec.validate_record` would accept.
For those the Avro spec fixes the value, so it is the value fastavro gives. Every other message
goes to the slow path, `codec.decode_raw` one message at a time, which either decodes it (the
row is used, in its place) or refuses it with exactly the reason it gave before. The fast path
therefore changes how fast messages are decoded, never which are accepted or what they hold;
tests/events/test_batch_decode.py checks that against decode_raw with hypothesis.

If `codec.validate_record` gains a check, mirror it in `_validate` (the test will catch a
missing one only if its strategies produce the offending value).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import pyarrow as pa

from events.errors import DecodeError
from events.wire import codec
from events.wire.batch_plan import Op, Plan, Unsupported, plan

_PAD = np.zeros(64, np.uint8)  # widest single read is a fixed(32): gathers stay in bounds
_I32 = (-(2 ** 31), 2 ** 31 - 1)

Array = np.ndarray[Any, Any]


@dataclass(slots=True)
class BatchResult:
    """`table`: the decoded rows in input order (`rows` holds their indexes in the input);
    `bad`: (index, reason) of every message refused, the reason exactly as decode_raw gives."""

    table: pa.Table
    rows: Array
    bad: list[tuple[int, str]] = field(default_factory=list)
    fast: int = 0  # how many rows the vectorised path decoded (the rest went one by one)


class BatchDecoder:
    """Decodes batches of messages into an Arrow table of `schema` (the `events` columns that
    come from the Avro fields, plus `event_type`). Fields not in `schema` are dropped."""

    def __init__(self, reg: codec.SchemaRegistry, schema: pa.Schema) -> None:
        self.reg = reg
        self.schema = schema
        self.plans: dict[int, Plan | None] = {}
        for sv in reg.by_fingerprint.values():
            fp = int.from_bytes(sv.fingerprint, "little")
            self.plans[fp] = plan(sv, reg.latest[sv.event_type])
        # The envelope every schema starts with is read once for the whole batch; only the
        # payload fields after it are read per writer schema (fewer, smaller vector calls).
        ops = [p.ops for p in self.plans.values() if p is not None]
        k = 0
        while ops and all(len(o) > k and o[k] == ops[0][k] for o in ops):
            k += 1
        self.prefix: tuple[Op, ...] = ops[0][:k] if ops else ()
        head = {op.column for op in self.prefix} | {"event_type"}
        self.payload = pa.schema([f for f in schema if f.name not in head])
        self.empty = schema.empty_table()

    def decode(self, values: Sequence[bytes]) -> BatchResult:
        n = len(values)
        if n == 0:
            return BatchResult(self.empty, np.zeros(0, np.int64))
        lens = np.fromiter(map(len, values), np.int64, n)
        ends = np.cumsum(lens)
        starts = ends - lens
        buf = np.concatenate([np.frombuffer(b"".join(values), np.uint8), _PAD])
        fps = np.ascontiguousarray(buf[(starts + 2)[:, None] + np.arange(8)]).view("<u8").ravel()
        uniq, group = np.unique(fps, return_inverse=True)
        plans = [self.plans.get(fp) for fp in uniq.tolist()]
        known = np.array([p is not None for p in plans])[group]
        fast = np.nonzero(known & (lens >= codec.HEADER_LEN + codec.HASH_LEN) & (
            buf[starts] == 0xC3) & (buf[starts + 1] == 0x01))[0]
        slow = np.setdiff1d(np.arange(n), fast, assume_unique=True)
        table = self.empty
        if len(fast):
            ok, table = self._fast(plans, group[fast], buf, starts[fast] + codec.HEADER_LEN,
                                   ends[fast])
            if not ok.all():
                table = table.filter(pa.array(ok))
                slow = np.union1d(slow, fast[~ok])
                fast = fast[ok]
        bad: list[tuple[int, str]] = []
        if len(slow):
            good, rows, bad = self._slow(values, slow)
            if good:
                index = np.concatenate([fast, np.array(good, np.int64)])
                order = np.argsort(index, kind="stable")
                both = pa.concat_tables([table, pa.Table.from_pylist(rows, schema=self.schema)])
                return BatchResult(both.take(pa.array(order)), index[order], bad, len(fast))
        return BatchResult(table, fast, bad, len(fast))

    def _fast(self, plans: list[Plan | None], group: Array, buf: Array, p: Array,
              e: Array) -> tuple[Array, pa.Table]:
        """The envelope of every message, then each writer schema's payload: (ok, table)."""
        ok, p, head, checks = _read_ops(self.prefix, buf, p, e)
        ok &= _validate(checks, len(p))
        n = len(p)
        found: dict[str, list[tuple[Array, pa.Array]]] = {}
        for g in np.unique(group).tolist():
            plan = plans[g]
            assert plan is not None
            rows = np.nonzero(group == g)[0]
            good, q, columns, checks = _read_ops(plan.ops[len(self.prefix):], buf, p[rows],
                                                 e[rows])
            ok[rows] &= good & (q == e[rows]) & _validate(checks, len(rows))  # no trailing bytes
            for name, value in plan.defaults:
                columns[name] = pa.repeat(pa.scalar(value), len(rows))
            for name, array in columns.items():
                found.setdefault(name, []).append((rows, array))
        # Each payload column back in the batch's order: one take over the groups' values,
        # a null index for the rows of writer schemas without the field.
        for f in self.payload:
            pieces = found.get(f.name)
            if pieces is None:
                head[f.name] = pa.nulls(n, f.type)
                continue
            index = np.full(n, -1, np.int64)
            at = 0
            for rows, _ in pieces:
                index[rows] = np.arange(at, at + len(rows))
                at += len(rows)
            values = pa.concat_arrays([a.cast(f.type, safe=False) if a.type != f.type else a
                                       for _, a in pieces])
            head[f.name] = values if at == n and len(pieces) == 1 else values.take(
                pa.array(index, mask=index < 0))
        types = pa.array([p.event_type if p else "" for p in plans], pa.string())
        head["event_type"] = types.take(pa.array(group))
        return ok, _columns_table(self.schema, head, len(p))

    def _slow(self, values: Sequence[bytes], idx: Array,
              ) -> tuple[list[int], list[dict[str, object]], list[tuple[int, str]]]:
        """decode_raw, one message at a time: (decoded indexes, their rows, refusals)."""
        bad: list[tuple[int, str]] = []
        rows: list[dict[str, object]] = []
        good: list[int] = []
        for i in idx.tolist():
            try:
                event_type, row = codec.decode_raw(values[i], self.reg)
            except DecodeError as exc:
                bad.append((i, str(exc)))
                continue
            row["event_type"] = event_type
            rows.append(row)
            good.append(i)
        return good, rows, bad


def _columns_table(schema: pa.Schema, columns: dict[str, pa.Array], n: int) -> pa.Table:
    arrays = []
    for f in schema:
        a = columns.get(f.name)
        if a is None:
            a = pa.nulls(n, f.type)
        elif a.type != f.type:
            # Unchecked: a row holding a value out of the column's range is refused (and
            # filtered out) already; a checked cast would fail on it before the filter.
            a = a.cast(f.type, safe=False)
        arrays.append(a)
    return pa.Table.from_arrays(arrays, schema=schema)


# --- vectorised reads: `p` are read positions, `e` message ends; each returns new positions ---


def _varint(buf: Array, p: Array, e: Array) -> tuple[Array, Array, Array]:
    """Zigzag longs at `p`: (values, positions after, ok). Byte by byte over the rows still
    reading: most varints here are one byte, timestamps eight."""
    b = buf[p]
    raw = (b & 0x7F).astype(np.uint64)
    width = np.ones(len(p), np.int64)
    ok = p < e
    rows = np.nonzero(b >= 0x80)[0]
    for k in range(1, 10):
        if not len(rows):
            break
        b = buf[p[rows] + k]
        raw[rows] |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        width[rows] = k + 1
        done = b < 0x80
        # Not the minimal width (a last byte of zero), or a tenth byte carrying more than
        # 64 bits: valid for fastavro perhaps, but the slow path decides.
        ok[rows[done & ((b == 0) | ((b > 1) if k == 9 else False))]] = False
        rows = rows[~done]
    ok[rows] = False  # no last byte within ten: not a long
    ok &= p + width <= e
    value = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
    return value, p + width, ok


def _bytes(buf: Array, p: Array, e: Array) -> tuple[Array, Array, Array, Array]:
    """Length-prefixed bytes at `p`: (offsets, data, positions after, ok)."""
    length, p, ok = _varint(buf, p, e)
    ok &= (length >= 0) & (length <= e - p)
    length = np.where(ok, length, 0)
    offsets = np.zeros(len(p) + 1, np.int64)
    np.cumsum(length, out=offsets[1:])
    data = buf[np.repeat(p - offsets[:-1], length) + np.arange(offsets[-1])]
    return offsets, data, p + length, ok


def _ascii(offsets: Array, data: Array) -> Array:
    """Per value: no byte >= 0x80. Other UTF-8 is left to fastavro (the slow path)."""
    if not len(data) or data.max() < 0x80:
        return np.ones(len(offsets) - 1, bool)
    high = np.zeros(len(data) + 1, np.int64)
    np.cumsum(data >= 0x80, out=high[1:])
    return high[offsets[1:]] == high[offsets[:-1]]


def _read(op: Op, buf: Array, p: Array, e: Array) -> tuple[Any, Array, Array]:
    """One non-nullable value per position: (values, positions after, ok)."""
    if op.kind in ("long", "int"):
        value, p, ok = _varint(buf, p, e)
        if op.kind == "int":
            ok &= (value >= _I32[0]) & (value <= _I32[1])
        return value, p, ok
    if op.kind in ("string", "bytes"):
        offsets, data, p, ok = _bytes(buf, p, e)
        if op.kind == "string":
            ok &= _ascii(offsets, data)
        return (offsets, data), p, ok
    if op.kind == "fixed":
        ok = p + op.size <= e
        return buf[p[:, None] + np.arange(op.size)].ravel(), p + op.size, ok
    if op.kind == "boolean":
        value = buf[p]
        return value == 1, p + 1, (value <= 1) & (p < e)
    if op.kind == "enum":
        value, p, ok = _varint(buf, p, e)
        ok &= (value >= 0) & (value < len(op.symbols))
        return np.where(ok, value, 0), p, ok
    assert op.kind == "array"
    return _read_array(op, buf, p, e)


def _read_array(op: Op, buf: Array, p: Array, e: Array) -> tuple[Any, Array, Array]:
    """An array of records, written as one block then the zero terminator."""
    count, p, ok = _varint(buf, p, e)
    ok &= (count >= 0) & (count <= np.minimum(e - p, 64))
    count = np.where(ok, count, 0)
    offsets = np.zeros(len(p) + 1, np.int64)
    np.cumsum(count, out=offsets[1:])
    items: list[list[Any]] = [[] for _ in op.items]
    slots: list[Array] = []
    for k in range(int(count.max()) if len(count) else 0):
        rows = np.nonzero(count > k)[0]
        q, end, good = p[rows], e[rows], ok[rows]
        for j, item in enumerate(op.items):
            value, q, fine = _read(item, buf, q, end)
            good &= fine
            q = np.where(good, q, end)  # a corrupt row stops advancing, within its message
            items[j].append(value)
        p[rows], ok[rows] = q, good
        slots.append(offsets[rows] + k)
    has = count > 0
    term, after, fine = _varint(buf, p[has], e[has])
    ok[has] &= fine & (term == 0)
    p[has] = after
    order = np.argsort(np.concatenate(slots)) if slots else np.zeros(0, np.int64)
    columns = [np.concatenate(v)[order] if v else np.zeros(0, np.int64) for v in items]
    return (offsets, columns), p, ok


@cache
def _symbols(symbols: tuple[str, ...]) -> tuple[Array, Array]:
    """An enum's symbols as one byte string and their offsets in it."""
    encoded = [s.encode() for s in symbols]
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(s) for s in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), np.uint8), offsets


def _arrow(op: Op, value: Any, valid: Array | None, n: int) -> pa.Array:
    mask = None if valid is None or valid.all() else pa.py_buffer(
        np.packbits(valid, bitorder="little"))
    if op.kind in ("long", "int"):
        return pa.Array.from_buffers(pa.int64(), n, [mask, pa.py_buffer(value)])
    if op.kind == "boolean":
        return pa.array(value, pa.bool_(), mask=None if valid is None or mask is None else ~valid)
    if op.kind in ("string", "bytes", "fixed"):
        if op.kind == "fixed":
            offsets, data = np.arange(n + 1, dtype=np.int64) * op.size, value
        else:
            offsets, data = value
        # int32 offsets (a batch is far below 2 GB): the column types, so no cast follows.
        kind = pa.string() if op.kind == "string" else pa.binary()
        return pa.Array.from_buffers(kind, n, [mask, pa.py_buffer(offsets.astype(np.int32)),
                                               pa.py_buffer(data)])
    if op.kind == "enum":
        # The symbols' bytes gathered with numpy: a pyarrow take per call cost more here
        # (benchmarks/README.md).
        data, sym_offsets = _symbols(op.symbols)
        length = np.diff(sym_offsets)[value]
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(length, out=offsets[1:])
        data = data[np.repeat(sym_offsets[value] - offsets[:-1], length) + np.arange(offsets[-1])]
        return pa.Array.from_buffers(pa.string(), n, [mask, pa.py_buffer(offsets.astype(np.int32)),
                                                      pa.py_buffer(data)])
    offsets, columns = value
    fields = [_arrow(item, col, None, len(col))
              for item, col in zip(op.items, columns, strict=True)]
    struct = pa.StructArray.from_arrays(fields, [item.column or "" for item in op.items])
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), struct)


def _read_ops(ops: Sequence[Op], buf: Array, p: Array, e: Array,
              ) -> tuple[Array, Array, dict[str, pa.Array], dict[str, Any]]:
    """Fields in writer order at `p`: (ok, positions after, columns, raw values to check)."""
    n = len(p)
    ok = np.ones(n, bool)
    columns: dict[str, pa.Array] = {}
    checks: dict[str, Any] = {}
    for op in ops:
        if op.nullable is None:
            value, p, fine = _read(op, buf, p, e)
            valid = None
        else:
            branch, p, fine = _varint(buf, p, e)
            fine &= (branch == op.nullable[0]) | (branch == op.nullable[1])
            present = np.nonzero(fine & (branch == op.nullable[1]))[0]
            sub, q, sub_ok = _read(op, buf, p[present], e[present])
            fine[present] &= sub_ok
            p[present] = q
            valid = np.zeros(n, bool)
            valid[present] = True
            value = _scatter(op, sub, present, n)
        ok &= fine
        p = np.where(ok, p, e)  # keep every later read inside the message (and the padding)
        if op.column is not None:
            columns[op.column] = _arrow(op, value, valid, n)
            checks[op.column] = (op, value, valid)
    return ok, p, columns, checks


def _scatter(op: Op, sub: Any, present: Array, n: int) -> Any:
    """Values read for the rows in `present`, spread over all n rows (absent rows empty)."""
    if op.kind in ("string", "bytes"):
        offsets, data = sub
        length = np.zeros(n, np.int64)
        length[present] = np.diff(offsets)
        full = np.zeros(n + 1, np.int64)
        np.cumsum(length, out=full[1:])
        return full, data
    if op.kind == "fixed":
        raise Unsupported("nullable fixed")  # no schema has one; _kind refuses it first
    out = np.zeros(n, sub.dtype)
    out[present] = sub
    return out


def _validate(checks: dict[str, Any], n: int) -> Array:
    """codec.validate_record, vectorised: rows it would refuse go to the slow path.

    Its "int" range check (every writer int, in [null, int] unions and in array items too) is
    done by `_read` as each int is read, which refuses the row here as well."""
    ok = np.ones(n, bool)
    lo, hi = codec._MIN_US, codec._MAX_US
    for name, low, high in (("rank", 2, 14), ("seq", 1, None), ("occurred_at", lo, hi),
                            ("recorded_at", lo, hi)):
        if name in checks:
            _, value, valid = checks[name]
            bad = (value < low) | ((value > high) if high is not None else False)
            ok &= ~(bad if valid is None else bad & valid)
    if "cards" in checks and checks["cards"][0].kind == "array":
        op, (offsets, columns), _ = checks["cards"]
        names = [item.column for item in op.items]
        rank = columns[names.index("rank")] if "rank" in names else np.zeros(0, np.int64)
        bad_item = (rank < 2) | (rank > 14)
        if bad_item.any():
            owner = np.repeat(np.arange(n), np.diff(offsets))
            ok[owner[bad_item]] = False
    return ok

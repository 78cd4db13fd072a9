"""Native decode: a batch of messages, held in one buffer, decoded by polars' compiled Avro reader.

Why (issue 19, item 1): polars' Avro reader decodes several times faster than
events/wire/batch_decode.py (benchmarks/results.md, "Load at the native floor"). Its input is
an Avro object container file, so the messages of one writer schema are framed as ONE
container block: their bodies (the message after its 10-byte single-object
header) back to back, each followed by a 16-byte random nonce this process drew at start.

Exactness (docs/architecture.md, principle 1): the container's schema is the writer schema
with every value read in its rawest form, and the checks are ours, not the reader's:
  - ints are read as longs (the same zigzag varint) and range-checked here, as validate_record;
  - strings as bytes, then UTF-8-checked by Arrow's cast (strict, as Python's decode);
  - enums as longs (their index), range-checked against the writer's symbols;
  - booleans as fixed(1), only the bytes 0 and 1 accepted;
  - each record ends with the nonce as a fixed(16) field: a record read back with any other
    value there did not end exactly where its message ends (trailing bytes, a truncated
    field), and the nonce is secret, so hostile bytes cannot forge it;
  - each record is in canonical form (_canonical): its length is what its values take with
    the shortest varints and one array block, and each union's index byte is the branch read.
    polars reads any union index but 0 as the value branch, where the reference reads -2 as
    the null branch (and then refuses the message for its trailing bytes) and 2 as an error;
    a message written otherwise than pitlog's writer writes is left to the reference.
Any group the reader refuses or that fails a check, and every message of a schema without a
plan (batch_plan.plan: resolution the reader would need) goes to the reference, BatchDecoder,
which decodes or refuses it exactly as codec.decode_raw does. So which messages are projected
or quarantined, with which reason, and what their columns hold, does not depend on the path
(tests/events/test_native_decode.py checks it with hypothesis on every schema).

polars is imported lazily: only a bulk load pays for it, never the CLI's start-up.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from events.wire import codec
from events.wire.avro_writer import long_bytes
from events.wire.batch_decode import BatchDecoder, BatchResult, _validate
from events.wire.batch_plan import Op, Plan
from events.wire.quiet_call import quiet_call

_NONCE = os.urandom(16)
_END = "_pitlog_end"
_I32 = (-(2 ** 31), 2 ** 31 - 1)
_VARINT_STEPS = np.array([1 << 7 * k for k in range(1, 10)], np.uint64)  # 2, 3, ... 10 bytes

Array = np.ndarray[Any, Any]


class _Raw:
    """Rewrites a writer schema into the raw form the container is read with (module doc):
    named types inlined (polars does not resolve references), each under a fresh name."""

    def __init__(self) -> None:
        self.names: dict[str, Any] = {}
        self.count = 0

    def fresh(self) -> str:
        self.count += 1
        return f"T{self.count}"

    def __call__(self, node: Any) -> Any:
        if isinstance(node, str):
            if node in self.names:
                return self(self.names[node])
            return {"int": "long", "string": "bytes",
                    "boolean": {"type": "fixed", "name": self.fresh(), "size": 1}}.get(node, node)
        if isinstance(node, list):
            return [self(b) for b in node]
        kind = node["type"]
        if kind in ("fixed", "enum", "record") and "name" in node:
            self.names[node["name"]] = node
            if "namespace" in node:
                self.names[f"{node['namespace']}.{node['name']}"] = node
        if kind == "enum":
            return "long"
        if kind == "fixed":
            return {"type": "fixed", "name": self.fresh(), "size": node["size"]}
        if kind == "record":
            return {"type": "record", "name": self.fresh(),
                    "fields": [{"name": f["name"], "type": self(f["type"])}
                               for f in node["fields"]]}
        if kind == "array":
            return {"type": "array", "items": self(node["items"])}
        return self(kind)  # {"type": "long"} once the logical type is stripped


def _header(sv: codec.SchemaVersion) -> bytes:
    """An object container file's header for `sv`'s messages, the nonce as its sync marker."""
    writer = codec._strip_logical_types(json.loads(sv.path.read_text()))
    raw = _Raw()(writer)
    raw["fields"].append({"name": _END, "type": {"type": "fixed", "name": "End", "size": 16}})
    return container_header(raw, _NONCE)


def container_header(schema: dict[str, Any], sync: bytes) -> bytes:
    """An Avro object container file's header (spec, "Object Container Files"): the magic,
    the metadata map (schema, no codec), the sync marker."""
    meta = {b"avro.schema": json.dumps(schema).encode(), b"avro.codec": b"null"}
    out = bytearray(b"Obj\x01") + long_bytes(len(meta))
    for k, v in meta.items():
        out += long_bytes(len(k)) + k + long_bytes(len(v)) + v
    return bytes(out + b"\x00" + sync)


class NativeDecoder:
    """BatchDecoder's contract (same schema, same BatchResult) over messages in one buffer:
    message k is buf[start[k]:end[k]]."""

    def __init__(self, reg: codec.SchemaRegistry, schema: pa.Schema) -> None:
        self.reference = BatchDecoder(reg, schema)
        self.schema = schema
        self.headers: dict[int, bytes] = {}
        for fp, p in self.reference.plans.items():
            if p is not None:
                self.headers[fp] = _header(reg.by_fingerprint[fp.to_bytes(8, "little")])

    def decode(self, buf: bytes, start: Array, end: Array) -> BatchResult:
        import polars as pl  # lazily: the CLI's start-up must not pay for it (issue 19)

        n = len(start)
        if n == 0:
            return BatchResult(self.schema.empty_table(), np.zeros(0, np.int64))
        start = np.asarray(start, np.int64)
        end = np.asarray(end, np.int64)
        b = np.frombuffer(buf, np.uint8)
        lens = end - start
        whole = lens >= codec.HEADER_LEN + codec.HASH_LEN
        if not whole.any():  # nothing to frame (and a buffer too short to read a header from)
            return self._assemble([], np.arange(n, dtype=np.int64), buf, start, end)
        head = np.where(whole, start, 0)
        fps = np.ascontiguousarray(b[(head + 2)[:, None] + np.arange(8)]).view("<u8").ravel()
        whole &= (b[head] == 0xC3) & (b[head + 1] == 0x01)
        uniq, group = np.unique(np.where(whole, fps, 0), return_inverse=True)
        pieces: list[tuple[Array, dict[str, pa.Array]]] = []
        slow: list[Array] = [np.nonzero(~whole)[0]]
        framed, at = _frame(buf, start, end, group, whole)
        for g, fp in enumerate(uniq.tolist()):
            rows = framed[g]
            if not len(rows):
                continue
            header = self.headers.get(fp)
            plan = self.reference.plans.get(fp)
            if header is None or plan is None:
                slow.append(rows)
                continue
            data = b"".join((header, long_bytes(len(rows)), long_bytes(at[g + 1] - at[g]),
                             framed[-1][at[g]:at[g + 1]], _NONCE))
            try:
                # On a thread of its own whose stderr alone is /dev/null (quiet_call's doc).
                table = quiet_call(pl.read_avro, io.BytesIO(data)).to_arrow()
                ok, columns = _columns(plan, table)
                ok &= _canonical(plan, table, framed[-1][at[g]:at[g + 1]],
                                 end[rows] - start[rows] - codec.HEADER_LEN)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException:  # noqa: BLE001 (a Rust panic is a BaseException)
                # Hostile bytes: polars refused them, or panicked reading past the block
                # (pyo3's PanicException); the reference says which message, and why.
                slow.append(rows)
                continue
            if not ok.all():
                slow.append(rows[~ok])
                rows = rows[ok]
                columns = {k: v.filter(pa.array(ok)) for k, v in columns.items()}
            pieces.append((rows, columns))
        return self._assemble(pieces, np.sort(np.concatenate(slow)), buf, start, end)

    def _assemble(self, pieces: list[tuple[Array, dict[str, pa.Array]]], slow: Array,
                  buf: bytes, start: Array, end: Array) -> BatchResult:
        """The groups' columns as one table in input order, the reference's rows in place."""
        fast = np.concatenate([r for r, _ in pieces]) if pieces else np.zeros(0, np.int64)
        native = len(fast)
        arrays = []
        for f in self.schema:
            parts = []
            for rows, columns in pieces:
                a = columns.get(f.name)
                if a is None:
                    a = pa.nulls(len(rows), f.type)
                elif a.type != f.type:
                    a = a.cast(f.type, safe=False)  # in range: checked in _columns
                parts.append(a)
            arrays.append(pa.chunked_array(parts, f.type))
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        bad: list[tuple[int, str]] = []
        if len(slow):
            mv = memoryview(buf)
            values = [bytes(mv[a:z]) for a, z in zip(start[slow].tolist(), end[slow].tolist(),
                                                     strict=True)]
            ref = self.reference.decode(values)
            bad = [(int(slow[i]), why) for i, why in ref.bad]
            if ref.table.num_rows:
                table = pa.concat_tables([table, ref.table])
                fast = np.concatenate([fast, slow[ref.rows]])
        order = np.argsort(fast, kind="stable")
        if not np.array_equal(order, np.arange(len(order))):
            table = table.take(pa.array(order))
        return BatchResult(table.combine_chunks(), fast[order], bad, native)


def _frame(buf: bytes, start: Array, end: Array, group: Array, whole: Array
           ) -> tuple[list[Any], list[int]]:
    """Every whole message's body (after its header) followed by the nonce, grouped by writer
    schema, in one buffer: ([rows of group g ..., the buffer], [where group g's bytes start]).

    No object and no Python step per message: the buffer is seen as one Arrow binary array
    whose elements are, in byte order, each body and the bytes up to the next (zero-copy), and
    the nonce last; one `take` of [body, nonce, body, nonce, ...] copies them into place."""
    rows = np.nonzero(whole)[0]
    rows = rows[np.argsort(group[rows], kind="stable")]
    # A message too short to frame (not `whole`, left to the reference) is an empty span at its
    # start: its header's length would otherwise reach into the next message, a false overlap.
    s = np.where(whole, start + codec.HEADER_LEN, start)
    by_pos = np.argsort(s, kind="stable")
    ss, se = s[by_pos], np.where(whole, end, start)[by_pos]
    if len(ss) > 1 and (ss[1:] < se[:-1]).any():
        raise ValueError("messages overlap in the buffer")
    bounds = np.empty(2 * len(ss) + 2, np.int64)
    bounds[0:-2:2], bounds[1:-2:2] = ss, se
    bounds[-2], bounds[-1] = len(buf), len(buf) + 16
    data = pa.py_buffer(buf + _NONCE)
    # Element 2k is the k-th body by position, 2k+1 the gap after it, the last the nonce.
    elements = pa.Array.from_buffers(pa.large_binary(), len(bounds) - 1,
                                     [None, pa.py_buffer(bounds), data])
    rank = np.empty(len(ss), np.int64)
    rank[by_pos] = np.arange(len(ss))
    pick = np.empty(2 * len(rows), np.int64)
    pick[0::2], pick[1::2] = 2 * rank[rows], len(bounds) - 2
    taken = elements.take(pa.array(pick))
    offsets = np.frombuffer(taken.buffers()[1], np.int64, len(taken) + 1, taken.offset * 8)
    counts = np.bincount(group[rows], minlength=int(group.max()) + 1 if len(group) else 0)
    first = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=first[1:])
    framed: list[Any] = [rows[first[g]:first[g + 1]] for g in range(len(counts))]
    at = offsets[2 * first]
    return [*framed, memoryview(taken.buffers()[2])[int(offsets[0]):]], (at - offsets[0]).tolist()


def _columns(plan: Plan, table: pa.Table) -> tuple[Array, dict[str, pa.Array]]:
    """One group's raw columns as the reader's: (rows that pass every check, columns)."""
    n = table.num_rows
    end = table.column(_END).combine_chunks()
    ok = pc.equal(end, pa.scalar(_NONCE, end.type)).to_numpy(zero_copy_only=False)
    if not ok.all():  # one record out of step: the whole group goes to the reference
        raise pa.ArrowInvalid("a record did not end where its message ends")
    columns: dict[str, pa.Array] = {}
    checks: dict[str, Any] = {}
    for op, name in zip(plan.ops, table.column_names, strict=False):
        raw = table.column(name).combine_chunks()
        array, fine = _convert(op, raw)
        ok &= fine
        if op.column is None:
            continue
        columns[op.column] = array
        if op.kind in ("long", "int") and op.column in ("rank", "seq", "occurred_at",
                                                          "recorded_at"):
            checks[op.column] = (op, raw.fill_null(0).to_numpy(),
                                 None if op.nullable is None else raw.is_valid().to_numpy(
                                     zero_copy_only=False))
        elif op.kind == "array" and op.column == "cards":
            names = [item.column for item in op.items]
            child = raw.values
            cols = [child.field(k).to_numpy(zero_copy_only=False) for k in range(len(names))]
            checks[op.column] = (op, (raw.offsets.to_numpy(), cols), None)
    ok &= _validate(checks, n)
    for name, value in plan.defaults:
        columns[name] = pa.repeat(pa.scalar(value), n)
    columns["event_type"] = pa.repeat(pa.scalar(plan.event_type, pa.string()), n)
    return ok, columns


def _canonical(plan: Plan, table: pa.Table, bodies: Any, lengths: Array) -> Array:
    """Rows whose body is in canonical form (module doc): `bodies` holds the group's bodies
    each followed by the nonce, `lengths` their lengths. Each field's length follows from its
    value read; where a union starts, its index byte must be 0 or 2 (zigzag of branch 0 or 1:
    our unions have two branches) as the branch read says."""
    data = np.frombuffer(bodies, np.uint8)
    starts = np.zeros(len(lengths), np.int64)
    np.cumsum(lengths[:-1] + len(_NONCE), out=starts[1:])
    pos = np.zeros(len(lengths), np.int64)  # each row's offset of the current field
    ok = np.ones(len(lengths), bool)
    for op, name in zip(plan.ops, table.column_names, strict=False):
        raw = table.column(name).combine_chunks()
        size = _size(op, raw)
        if op.nullable is None:
            pos += size
            continue
        valid = raw.is_valid().to_numpy(zero_copy_only=False)
        null_branch, value_branch = op.nullable
        index = data[np.minimum(starts + pos, len(data) - 1)]  # past the end: length is off
        ok &= index == np.where(valid, 2 * value_branch, 2 * null_branch)
        pos += 1 + np.where(valid, size, 0)
    return ok & (pos == lengths)


def _varint_size(value: Array) -> Array:
    """Bytes of each int64's zigzag varint, the shortest form (Avro spec, "Binary Encoding")."""
    v = value.astype(np.int64)
    zz = ((v << 1) ^ (v >> 63)).view(np.uint64)
    return np.searchsorted(_VARINT_STEPS, zz, side="right") + 1


def _size(op: Op, raw: pa.Array) -> Array:
    """Each row's value's length in canonical form (nulls: anything, the caller masks them)."""
    if op.kind in ("long", "int", "enum"):
        return _varint_size(raw.fill_null(0).to_numpy())
    if op.kind in ("string", "bytes"):
        length = pc.binary_length(raw).fill_null(0).to_numpy().astype(np.int64)
        return _varint_size(length) + length
    if op.kind == "fixed":
        return np.full(len(raw), op.size, np.int64)
    if op.kind == "boolean":
        return np.ones(len(raw), np.int64)
    assert op.kind == "array"
    offsets = raw.offsets.to_numpy().astype(np.int64)
    count = np.diff(offsets)
    child = raw.values
    item = np.zeros(len(child), np.int64)
    for k, sub in enumerate(op.items):  # the cards' fields: none is a union
        item += _size(sub, child.field(k))
    within = np.concatenate([[0], np.cumsum(item)])
    total = within[offsets[1:]] - within[offsets[:-1]]
    # One block of `count` items and the closing 0; an empty array is the 0 alone.
    return np.where(count > 0, _varint_size(count) + total + 1, 1)


def _convert(op: Op, raw: pa.Array) -> tuple[pa.Array, Array]:
    """A raw column as the reader's type: (array, rows whose value is acceptable)."""
    n = len(raw)
    valid = raw.is_valid()
    if op.kind in ("long", "int"):
        ok = np.ones(n, bool)
        if op.kind == "int":
            inside = pc.and_(pc.greater_equal(raw, _I32[0]), pc.less_equal(raw, _I32[1]))
            ok = inside.fill_null(True).to_numpy(zero_copy_only=False)
        return raw, ok
    if op.kind == "string":
        # Raises ArrowInvalid on bytes that are not UTF-8: the group goes to the reference.
        return raw.cast(pa.large_string()).cast(pa.string()), np.ones(n, bool)
    if op.kind in ("bytes", "fixed"):
        return raw.cast(pa.binary()), np.ones(n, bool)
    if op.kind == "boolean":
        one = pc.equal(raw, pa.scalar(b"\x01", raw.type))
        zero = pc.equal(raw, pa.scalar(b"\x00", raw.type))
        ok = pc.or_(one, zero).fill_null(True).to_numpy(zero_copy_only=False)
        return one, ok
    if op.kind == "enum":
        inside = pc.and_(pc.greater_equal(raw, 0), pc.less(raw, len(op.symbols)))
        ok = inside.fill_null(True).to_numpy(zero_copy_only=False)
        index = pc.if_else(inside, raw, 0).cast(pa.int32())
        symbols = pa.array(op.symbols, pa.string())
        return pa.DictionaryArray.from_arrays(index, symbols).cast(pa.string()), ok
    assert op.kind == "array"
    child = raw.values
    fields, ok_items = [], np.ones(len(child), bool)
    for k, item in enumerate(op.items):
        array, fine = _convert(item, child.field(k))
        fields.append(array)
        ok_items &= fine
    struct = pa.StructArray.from_arrays(fields, [item.column or "" for item in op.items])
    owner = np.repeat(np.arange(n), np.diff(raw.offsets.to_numpy()))
    ok = np.ones(n, bool)
    ok[owner[~ok_items]] = False
    offsets = raw.offsets.cast(pa.int32())
    return pa.ListArray.from_arrays(offsets, struct, mask=pc.invert(valid)), ok

"""How events/wire/batch_decode.py reads one writer schema: a plan of vector reads per field.

A plan resolves the writer schema (the one a message was written with) against the newest
version of its event type, as fastavro's schema resolution does for decode_raw: fields the
reader lacks are read and dropped, fields only the reader has take their default, an int may
be read as a long, an enum's symbols may grow. Any construct beyond what the batch decoder
reads (unions other than [null, T], nested records, maps, aliases, ...) gives no plan, and
that schema's messages are decoded one by one by codec.decode_raw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from events.wire import codec

_PRIMITIVES = {"long", "int", "string", "bytes", "boolean"}


@dataclass(frozen=True, slots=True)
class Op:
    """How to read one field: `column` is the output name (None: read and discard)."""

    kind: str  # long, int, string, bytes, fixed, boolean, enum, array
    column: str | None
    nullable: tuple[int, int] | None = None  # union: (null branch, value branch)
    size: int = 0  # fixed
    symbols: tuple[str, ...] = ()  # enum
    items: tuple[Op, ...] = ()  # array of a record of these fields


@dataclass(frozen=True, slots=True)
class Plan:
    """One writer schema read as the newest version of its event type."""

    event_type: str
    ops: tuple[Op, ...]
    defaults: tuple[tuple[str, Any], ...]  # reader-only fields: their default


class Unsupported(Exception):
    """A schema construct the fast path does not read: its messages take the slow path."""


def _resolve(node: Any, names: dict[str, Any], ns: str | None) -> Any:
    if isinstance(node, str) and node not in _PRIMITIVES and node != "null":
        full = node if "." in node or ns is None else f"{ns}.{node}"
        if full not in names and node not in names:
            raise Unsupported(f"unknown named type {node}")
        return names.get(full, names.get(node))
    if isinstance(node, dict) and node.get("type") in ("fixed", "enum", "record"):
        space = node.get("namespace", ns)
        full = node["name"] if "." in node["name"] or space is None else f"{space}.{node['name']}"
        names[full] = names[node["name"]] = node
    return node


def _kind(w: Any, r: Any, wn: dict[str, Any], rn: dict[str, Any], ns: str | None,
          column: str | None) -> Op:
    """The read of writer type `w` as reader type `r` (r is None: the field is skipped)."""
    w = _resolve(w, wn, ns)
    if r is not None:
        r = _resolve(r, rn, ns)
    if isinstance(w, list):
        if len(w) != 2 or "null" not in w or (r is not None and (
                not isinstance(r, list) or r.index("null") != w.index("null"))):
            raise Unsupported("only [null, T] unions")
        null = w.index("null")
        inner = _kind(w[1 - null], None if r is None else r[1 - null], wn, rn, ns, column)
        if inner.kind in ("array", "fixed") or inner.nullable:
            raise Unsupported("nullable arrays and fixed")
        return Op(inner.kind, column, (null, 1 - null), inner.size, inner.symbols)
    if isinstance(r, list):
        raise Unsupported("a union read from a non-union")
    wt = w if isinstance(w, str) else w["type"]
    rt = None if r is None else (r if isinstance(r, str) else r["type"])
    if isinstance(w, dict) and wt in _PRIMITIVES:  # {"type": "long"} after stripping logicalType
        return _kind(wt, None if r is None else rt, wn, rn, ns, column)
    if r is not None and wt != rt and not (wt == "int" and rt == "long"):
        raise Unsupported(f"{wt} read as {rt}")
    if wt in _PRIMITIVES:
        return Op(wt, column)
    if wt == "fixed":
        if r is not None and r["size"] != w["size"]:
            raise Unsupported("fixed of another size")
        return Op("fixed", column, size=w["size"])
    if wt == "enum":
        if r is not None and not set(w["symbols"]) <= set(r["symbols"]):
            raise Unsupported("enum symbols the reader lacks")
        return Op("enum", column, symbols=tuple(w["symbols"]))
    if wt == "array":
        item = _resolve(w["items"], wn, ns)
        ritem = None if r is None else _resolve(r["items"], rn, ns)
        if not isinstance(item, dict) or item.get("type") != "record" or (
                ritem is not None and _bare(ritem) != _bare(item)):
            raise Unsupported("arrays other than of one identical record")
        ops = tuple(_kind(f["type"], None, wn, rn, ns, f["name"]) for f in item["fields"])
        if any(o.kind not in ("long", "int", "boolean", "enum") or o.nullable for o in ops):
            raise Unsupported("array items other than numbers, booleans and enums")
        return Op("array", column, items=ops)
    raise Unsupported(f"Avro type {wt}")


def _bare(node: Any) -> Any:
    """A schema node without docs, to compare two versions' definitions."""
    if isinstance(node, dict):
        return {k: _bare(v) for k, v in node.items() if k not in ("doc", "aliases")}
    if isinstance(node, list):
        return [_bare(v) for v in node]
    return node


def plan(sv: codec.SchemaVersion, latest: codec.SchemaVersion) -> Plan | None:
    writer = codec._strip_logical_types(json.loads(sv.path.read_text()))
    reader = codec._strip_logical_types(json.loads(latest.path.read_text()))
    wn: dict[str, Any] = {}
    rn: dict[str, Any] = {}
    ns = writer.get("namespace")
    _resolve(writer, wn, None)
    _resolve(reader, rn, None)
    rfields = {f["name"]: f for f in reader["fields"]}
    if any("aliases" in f for f in reader["fields"]):
        return None  # aliased renames: fastavro's resolution, not reproduced here
    wnames = {f["name"] for f in writer["fields"]}
    try:
        ops = tuple(_kind(f["type"], rfields[f["name"]]["type"] if f["name"] in rfields
                          else None, wn, rn, ns, f["name"] if f["name"] in rfields else None)
                    for f in writer["fields"])
    except Unsupported:
        return None
    defaults = []
    for name, f in rfields.items():
        if name not in wnames:
            if "default" not in f:
                return None  # fastavro refuses these messages: the slow path says why
            defaults.append((name, f["default"]))
    return Plan(sv.event_type, ops, tuple(defaults))

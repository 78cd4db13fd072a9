"""The DuckDB values of a typed query (`pitlog sql`, /api/sql) that Arrow would misstate, cast
to DuckDB's own text before they leave DuckDB: one rule for the file and the server.

Arrow carries an INTERVAL as (months, days, nanoseconds), which Python printed as
`0 0 27000000000`; a UHUGEINT as a 128-bit decimal, which wraps (its largest value was -1);
a BIT as the bytes DuckDB stores (a padding byte first), never its `0101`; a TIME as a
Python `time`, whose repr showed inside a struct (`datetime.time(1, 2, 3)`); and a
TIMESTAMP_NS with nanoseconds not at all (Python's datetime holds microseconds); a UNION is a
sparse union, which no export could write (only the table showed it). Each is cast to
VARCHAR wherever it is, inside lists, structs and maps too, so every format and both
paths print DuckDB's text (`00:00:27.236787`, `3 days`, `0101`, `01:02:03`), as DuckDB's JSON
writer already wrote an INTERVAL or a TIME from the file. Parquet keeps the types it can hold
exactly (TIME, INTERVAL): only the lossy ones are cast for it.
"""

from __future__ import annotations

from typing import Any

import duckdb

# Arrow's form of these is wrong, not only unreadable: cast for every format, Parquet too (its
# rows pass through Python). A TIMESTAMP_NS with nanoseconds is no Python datetime at all:
# pyarrow refused it, and the Error quoted its advice to install pandas. A UNION is Arrow's
# sparse union, which pyarrow cannot write out: every export from the file refused it (`cannot
# be written out`) while the table and a server's answers showed its value.
LOSSY = frozenset({"uhugeint", "bit", "timestamp_ns", "union"})
# Arrow's form of these is exact but no text format prints it as DuckDB does.
AS_TEXT = LOSSY | {"interval", "time", "time_ns", "time with time zone"}


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _shown_type(kind: Any, leaves: frozenset[str]) -> str | None:
    """The DuckDB type `kind` takes with each of `leaves` in it made VARCHAR, or None when it
    holds none of them."""
    kid = kind.id
    if kid in leaves:
        return "VARCHAR"
    if kid in ("list", "array"):
        child = kind.children[0][1]
        inner = _shown_type(child, leaves)
        if inner is None:
            return None
        return f"{inner}[]" if kid == "list" else f"{inner}[{kind.children[1][1]}]"
    if kid == "map":
        key, value = (_shown_type(t, leaves) for _, t in kind.children)
        if key is None and value is None:
            return None
        k, v = (new or str(t) for new, (_, t) in zip((key, value), kind.children, strict=True))
        return f"MAP({k}, {v})"
    if kid == "struct":  # (a union is a leaf: LOSSY)
        members = kind.children
        shown = [_shown_type(t, leaves) for _, t in members]
        if all(s is None for s in shown):
            return None
        fields = ", ".join(f"{_quoted(n)} {s or str(t)}"
                           for (n, t), s in zip(members, shown, strict=True))
        return f"STRUCT({fields})"
    return None


def readable(relation: duckdb.DuckDBPyRelation, *, text: bool = True
             ) -> duckdb.DuckDBPyRelation:
    """`relation` with every value Arrow would misstate cast to DuckDB's text (AS_TEXT; only
    LOSSY with `text` false, for Parquet). Itself when it holds none. Columns are taken by
    position: a query's names may repeat."""
    leaves = AS_TEXT if text else LOSSY
    shown = [_shown_type(kind, leaves) for kind in relation.types]
    if all(s is None for s in shown):
        return relation
    picks = [(f"#{i + 1}" if s is None else f"CAST(#{i + 1} AS {s})") + f" AS {_quoted(name)}"
             for i, (name, s) in enumerate(zip(relation.columns, shown, strict=True))]
    return relation.project(", ".join(picks))

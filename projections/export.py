"""Exports written by DuckDB itself (COPY ... TO), from the rows a command shows.

The rows come from DuckDB through Arrow (`Rows` keeps the query's Arrow types), so an export
keeps them: timestamps stay TIMESTAMPTZ, money integer cents, ratios numbers (DECIMAL), lists
lists; a column computed in Python takes its type from `Rows.types` or from its values. An
empty result keeps its columns and their types. JSON, JSON lines and CSV go through the same
writer, so a number is a number in every format.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Sequence
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from events.errors import ProjectionError
from events.text import json_safe, visible

if TYPE_CHECKING:  # imported where used: a query command must start without them (issue 19)
    import duckdb
    import pyarrow as pa

# JSON and CSV times: ISO 8601 in UTC, which every JSON reader parses (the export connection's
# TimeZone is UTC, so the Z is true).
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
FORMATS = {"parquet": "(FORMAT parquet)",
           "json": f"(FORMAT json, ARRAY true, TIMESTAMPFORMAT '{TIMESTAMP_FORMAT}')",
           "jsonl": f"(FORMAT json, TIMESTAMPFORMAT '{TIMESTAMP_FORMAT}')",
           "csv": f"(FORMAT csv, HEADER true, TIMESTAMPFORMAT '{TIMESTAMP_FORMAT}')"}


class Rows(list[dict[str, Any]]):
    """A query's rows (dicts) with the Arrow type of each column, empty result included.

    Rows fetched without Arrow (`of_relation`) keep the query's DuckDB types and turn them into
    Arrow types only when an export asks for `types`: `pitlog replay` and the other lookups
    then never import pyarrow (0.5 s of a command's start, issue 19)."""

    def __init__(self, rows: Iterable[dict[str, Any]] = (),
                 types: dict[str, pa.DataType] | None = None) -> None:
        super().__init__(rows)
        self._types: dict[str, pa.DataType] | None = dict(types or {})
        self._duckdb_types: list[tuple[str, str]] = []

    @property
    def types(self) -> dict[str, pa.DataType]:
        if self._types is None:
            self._types = _arrow_types(self._duckdb_types)
        return self._types

    @types.setter
    def types(self, value: dict[str, pa.DataType]) -> None:
        self._types = dict(value)

    @classmethod
    def of(cls, table: pa.Table) -> Rows:
        import pyarrow as pa

        try:
            rows = table.to_pylist()
        except (pa.ArrowException, OverflowError, ValueError) as exc:
            # e.g. 'infinity'::TIMESTAMP: no Python datetime holds it. Name the column.
            for name in table.column_names:
                try:
                    table.column(name).to_pylist()
                except (pa.ArrowException, OverflowError, ValueError) as col_exc:
                    raise unexportable(name, col_exc) from exc
            raise
        return cls(rows, {f.name: f.type for f in table.schema})

    def head(self, n: int) -> Rows:
        """The first n rows, with the same types (converted to Arrow only if asked)."""
        out = Rows(self[:n])
        out._types = None if self._types is None else dict(self._types)
        out._duckdb_types = self._duckdb_types
        return out

    @classmethod
    def of_relation(cls, rel: duckdb.DuckDBPyRelation) -> Rows:
        """A relation's rows through DuckDB's own Python values (fetchall), without Arrow."""
        columns = rel.columns
        out = cls(dict(zip(columns, row, strict=True)) for row in rel.fetchall())
        out._types = None
        out._duckdb_types = [(c, str(t)) for c, t in zip(columns, rel.types, strict=True)]
        return out


def _arrow_types(columns: list[tuple[str, str]]) -> dict[str, pa.DataType]:
    """The Arrow type DuckDB gives each (name, DuckDB type): a typed empty result, converted."""
    import duckdb

    if not columns:
        return {}
    select = ", ".join(f'CAST(NULL AS {t}) AS "{c.replace(chr(34), chr(34) * 2)}"'
                       for c, t in columns)
    with duckdb.connect() as con:
        try:
            schema = con.sql(f"SELECT {select} LIMIT 0").to_arrow_table().schema
        except duckdb.Error:  # a type a fresh connection cannot name (a user ENUM): by values
            return {}
    return {f.name: f.type for f in schema}


def types_of(rows: Sequence[dict[str, Any]]) -> dict[str, pa.DataType]:
    return dict(getattr(rows, "types", {}))


def columns_of(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The columns of a result: its first row's keys, or the query's columns when empty."""
    return list(rows[0].keys()) if rows else list(types_of(rows))


def _fallback(name: str) -> pa.DataType:
    """The type of a column that is NULL in every row and not typed by its query."""
    import pyarrow as pa

    if name.endswith("_cents"):
        return pa.int64()
    if name.endswith("_at"):
        return pa.timestamp("us", tz="UTC")
    return pa.string()


def _plain(value: Any) -> Any:
    if isinstance(value, Fraction):  # exact ratios as 'numerator/denominator'
        return f"{value.numerator}/{value.denominator}"
    return value


def unexportable(column: str, exc: BaseException) -> ProjectionError:
    """The error for a column whose values Arrow or Python cannot hold (a HUGEINT past 38
    digits, a UNION, an infinite timestamp): name it and how to get it as text."""
    name = column if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", column) else (
        '"' + column.replace('"', '""') + '"')
    return ProjectionError(
        f"column {column!r} holds a value that cannot be written out "
        f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'}); "
        f"cast it to text in the query, e.g. CAST({name} AS VARCHAR)")


def arrow_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> pa.Table:
    import pyarrow as pa

    types = types_of(rows)
    arrays, fields = [], []
    for c in columns:
        values = [_plain(r.get(c)) for r in rows]
        known = types.get(c)
        if known is None or pa.types.is_null(known):
            known = None if any(v is not None for v in values) else _fallback(c)
        try:
            if known is None and any(isinstance(v, Decimal) for v in values):
                arr = pa.array(values)  # the precision and scale the values need
            else:
                arr = pa.array(values, type=known)
        except (pa.ArrowException, OverflowError) as exc:  # a HUGEINT past 38 digits, a UNION
            raise unexportable(c, exc) from exc
        if pa.types.is_null(arr.type):
            arr = arr.cast(_fallback(c))
        arrays.append(arr)
        fields.append(pa.field(c, arr.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def write(rows: Sequence[dict[str, Any]], columns: Sequence[str], fmt: str,
          out: Path | IO[str]) -> None:
    """COPY the rows to `out` (a path, or a text stream such as stdout) in `fmt`."""
    import duckdb

    table = arrow_table(rows, columns)
    if fmt == "csv":
        table = _visible_strings(table)
    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'UTC'")
        con.register("export_rows", table)
        select = "SELECT " + (", ".join(f'"{c}"' for c in columns) or "NULL AS none") + \
            " FROM export_rows"
        if isinstance(out, Path):
            _copy(con, select, fmt, out)
            return
        text = _copied(con, select, fmt).decode("utf-8")
        if fmt in ("json", "jsonl"):  # a terminal: no raw DEL, C1 or bidi control
            text = json_safe(text)
        out.write(text)
        out.flush()


def _copied(con: duckdb.DuckDBPyConnection, select: str, fmt: str) -> bytes:
    """What COPY writes, read back through a pipe: a query command writes no file, not even a
    temporary one (read-only means no file access). Held until COPY succeeded, so a failure
    prints nothing partial; the rows themselves are already in memory, and their text is
    smaller than they are."""
    read_end, write_end = os.pipe()
    chunks: list[bytes] = []

    def drain() -> None:  # the pipe's buffer is 64 KiB: COPY blocks unless read meanwhile
        with os.fdopen(read_end, "rb") as pipe:
            while chunk := pipe.read(1 << 16):
                chunks.append(chunk)

    reader = threading.Thread(target=drain, name="pitlog-export", daemon=True)
    reader.start()
    try:
        _copy(con, select, fmt, Path(f"/dev/fd/{write_end}"), direct=True)
    finally:
        os.close(write_end)
        reader.join()
    return b"".join(chunks)


def _visible_strings(table: pa.Table) -> pa.Table:
    """CSV reaches terminals and spreadsheets raw: device strings show control characters as
    escapes (JSON escapes them itself; Parquet keeps the exact value)."""
    import pyarrow as pa

    columns = []
    for col in table.columns:
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            col = pa.array([None if v is None else visible(v) for v in col.to_pylist()],
                           type=col.type)
        columns.append(col)
    names = [visible(n) for n in table.column_names]
    return pa.Table.from_arrays(columns, names=names)


def _copy(con: duckdb.DuckDBPyConnection, select: str, fmt: str, path: Path,
          *, direct: bool = False) -> None:
    """`direct`: write `path` itself, never a temporary file beside it (a pipe has no folder)."""
    import duckdb

    target = str(path).replace("'", "''")
    options = FORMATS[fmt][:-1] + ", USE_TMP_FILE false)" if direct else FORMATS[fmt]
    try:
        con.execute(f"COPY ({select}) TO '{target}' {options}")
    except duckdb.IOException as exc:  # a full disk, a file that cannot be written
        found = re.search(r'"exception_message":"((?:[^"\\]|\\.)*)"', str(exc))
        reason = found.group(1).replace('\\"', '"') if found else str(exc).splitlines()[0]
        raise ProjectionError(f"cannot write {path}: {reason}; free some space or write "
                              f"elsewhere") from None

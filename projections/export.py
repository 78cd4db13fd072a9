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
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from events.errors import ProjectionError
from events.files import remove_quietly
from events.text import json_safe, visible
from projections.memory import NO_SPILL

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


# A DuckDB type as DuckDB names one: INTEGER, DECIMAL(38,2), TIMESTAMP WITH TIME ZONE,
# VARCHAR[], INTEGER[3]. Nothing else read from outside is pasted into SQL (Rows.of_types).
TYPE_NAME = re.compile(r"[A-Z][A-Z0-9_]*(?: [A-Z][A-Z0-9_]*)*(?:\(\d+(?:, ?\d+)?\))?"
                       r"(?:\[\d*\])*")


@lru_cache(maxsize=256)
def _duckdb_names(types: tuple[tuple[str, pa.DataType], ...]) -> tuple[tuple[str, str], ...]:
    """(column, DuckDB type name) of Arrow-typed columns, asked of DuckDB once per column set:
    a served answer's header (Rows.duckdb_types) otherwise paid a connection, 17 ms, each time."""
    import duckdb
    import pyarrow as pa

    with duckdb.connect() as con:
        rel = con.from_arrow(pa.schema(list(types)).empty_table())
        return tuple((c, str(t)) for c, t in zip(rel.columns, rel.types, strict=True))


class Rows(list[dict[str, Any]]):
    """A query's rows (dicts) with the Arrow type of each column, empty result included.

    Rows fetched without Arrow (`of_cursor`) keep the query's DuckDB types and turn them into
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

        table = with_unique_names(table)
        try:
            # A MAP as a dict, as a server sends it (Arrow's list of (key, value) pairs
            # printed as ['k', [1, 2]] from the file, {'k': [1, 2]} through a server).
            rows = table.to_pylist(maps_as_pydicts="strict")
        except (pa.ArrowException, OverflowError, ValueError) as exc:
            # e.g. 'infinity'::TIMESTAMP: no Python datetime holds it. Name the column.
            for name in table.column_names:
                try:
                    table.column(name).to_pylist(maps_as_pydicts="strict")
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

    def duckdb_types(self) -> list[tuple[str, str]]:
        """(column, DuckDB type) of each typed column: the query's, or its Arrow type's
        DuckDB name (for a server to send, cli/client.py to give its rows back)."""
        if self._duckdb_types:
            return list(self._duckdb_types)
        if not self._types:
            return []
        return list(_duckdb_names(tuple(self._types.items())))

    @classmethod
    def of_types(cls, rows: Iterable[dict[str, Any]], types: list[tuple[str, str]]) -> Rows:
        """Rows whose columns' DuckDB types are known (a server's answer, TYPES_HEADER), turned
        into Arrow types only when an export asks for them. Types come from the network here
        and `_arrow_types` writes them into SQL: only a plain type name is kept (TYPE_NAME);
        any other column is typed by its values, as an untyped one always was."""
        out = cls(rows)
        out._types = None
        out._duckdb_types = [(c, t) for c, t in types if TYPE_NAME.fullmatch(t)]
        return out

    @classmethod
    def of_cursor(cls, cur: duckdb.DuckDBPyConnection) -> Rows:
        """The rows of the statement `cur` just ran, through DuckDB's own Python values
        (fetchall), without Arrow. A cursor, not a relation: `con.sql(...)` binds a query to
        make the relation and its fetch plans it again, a second binding that cost a dispute's
        card query about a quarter of its time (benchmarks/results.md, session 26)."""
        described = cur.description or []
        columns = unique_names([d[0] for d in described])
        out = cls(dict(zip(columns, row, strict=True)) for row in cur.fetchall())
        out._types = None
        out._duckdb_types = [(c, str(d[1])) for c, d in zip(columns, described, strict=True)]
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


def unique_names(names: Sequence[str]) -> list[str]:
    """A result's column names, each once: a later `a` becomes `a_1`, or `a_2` and on when the
    query names an `a_1` itself (which keeps its name; DuckDB would rename it `a_1_1`). A row
    is a dict and an export looks columns up by name: `SELECT 1 AS a, 2 AS a` showed 2 in both
    and exported a_1 as 1. Compared as DuckDB compares identifiers, ASCII letters without
    case: `a` and `A` are one column to COPY and to any DuckDB reading the export back, `é`
    and `É` two."""
    taken = {_folded(name) for name in names}
    seen: set[str] = set()
    out = []
    for name in names:
        if _folded(name) in seen:
            n = 1
            while _folded(f"{name}_{n}") in taken:
                n += 1
            name = f"{name}_{n}"
            taken.add(_folded(name))
        seen.add(_folded(name))
        out.append(name)
    return out


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _folded(name: str) -> str:
    return name.translate(_ASCII_LOWER)


T = TypeVar("T", "pa.Table", "pa.RecordBatch")


def with_unique_names(data: T) -> T:
    """`data` with its columns renamed by `unique_names` (itself when no name repeats)."""
    names = unique_names(data.schema.names)
    return data if names == data.schema.names else data.rename_columns(names)


class _Query:
    """A query's batches as `_reading` gives them: its `schema` (columns named by
    `unique_names`) and its batches, renamed alike, in order."""

    def __init__(self, reader: pa.RecordBatchReader) -> None:
        import pyarrow as pa

        self._reader = reader
        self._names = unique_names(reader.schema.names)
        self.schema = pa.schema([f.with_name(n)
                                 for f, n in zip(reader.schema, self._names, strict=True)])

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        while True:
            try:
                batch = self._reader.read_next_batch()
            except StopIteration:
                return
            except OSError as exc:  # DuckDB's error part way, through the Arrow stream: not
                # the disk's (an export's write error is its own OSError, told as such)
                raise ProjectionError(f"the query failed: {' '.join(str(exc).split())}") from exc
            yield batch.rename_columns(self._names)


@contextmanager
def _reading(batches: Callable[[], pa.RecordBatchReader]) -> Iterator[_Query]:
    """The query `batches()` runs, closed on leaving: a reader left unfinished (an
    unexportable value, a changed result) kept its query running until garbage collection,
    and the next connection to the database in the process waited for it (a server, or
    anything calling export_query twice)."""
    reader = batches()
    try:
        yield _Query(reader)
    finally:
        reader.close()


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
    digits, an infinite timestamp; a UNION is text before it gets here, sql_text.LOSSY): name
    it and how to get it as text."""
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
        except (pa.ArrowException, OverflowError) as exc:  # a HUGEINT past 38 digits
            raise unexportable(c, exc) from exc
        if _too_wide(arr.type):  # a served HUGEINT past 38 digits in a list: DuckDB takes no
            # wider decimal (it was an internal error; the file's rows say this)
            raise unexportable(c, ValueError(f"{arr.type} is wider than DuckDB's 38 digits"))
        if pa.types.is_null(arr.type):
            arr = arr.cast(_fallback(c))
        arrays.append(arr)
        fields.append(pa.field(c, arr.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _too_wide(kind: pa.DataType) -> bool:
    """True when `kind` holds a decimal of more than 38 digits, however deep."""
    import pyarrow as pa

    if pa.types.is_decimal(kind):
        return bool(kind.precision > 38)
    return any(_too_wide(kind.field(i).type) for i in range(kind.num_fields))


def write(rows: Sequence[dict[str, Any]], columns: Sequence[str], fmt: str,
          out: Path | IO[str]) -> None:
    """COPY the rows to `out` (a path, or a text stream such as stdout) in `fmt`."""
    table = arrow_table(rows, columns)
    with _export_connection() as con:
        if isinstance(out, Path):
            _copy(con, _select(_register(con, table, columns, fmt)), fmt, out)
            return
        out.write(_text(con, table, columns, fmt))
        out.flush()


# Rows per batch of a streamed export: its memory is a batch's Arrow data and its text.
STREAM_BATCH_ROWS = 100_000
# A streamed result whose Arrow data stays within this is kept by the first pass and written
# from memory, not queried again (most answers: a day's rounds are a few MB).
STREAM_KEEP_BYTES = 64 * 1024 * 1024
# The Arrow types every value of which an export can write: any other type's values are
# checked first (unexportable), as `arrow_table` would find them.
_PLAIN = ("is_integer", "is_floating", "is_boolean", "is_string", "is_large_string",
          "is_binary", "is_large_binary", "is_null")


def stream(batches: Callable[[], pa.RecordBatchReader], fmt: str, out: IO[str], *,
           limit: int = 0, shown: Callable[[int, int], None] | None = None) -> None:
    """Write a query's rows to the text stream `out` in json, jsonl or csv, a batch at a time,
    so memory is bounded by a batch, not by the result (a 212 MB export held 2.1 GB).

    `batches()` runs the query; it is called twice unless the first pass kept the whole
    result (`STREAM_KEEP_BYTES`), which the second then writes from memory. The first pass
    reads every batch, checks each value of a column whose type can hold one no export can
    (`unexportable`: an infinite timestamp, a HUGEINT past 38 digits) and counts the
    rows: a value that cannot be written, or a query that fails, is then an error before the
    first byte, as when the whole output was held until COPY succeeded. The second pass
    writes the first `limit` rows (0: all); `shown(limit, total)` is told first when rows are
    left out.

    A query run twice whose result changes between the passes (random(), now(), a table
    being written to) is an error after what was written: the second pass checks its values
    as the first did and counts every row, and a count other than the first's (which the 'N of
    M shown' line told) means the output is no one run's answer. Capping the second pass at the
    first's count instead dropped its last rows silently."""
    import pyarrow as pa

    total = 0
    kept: list[pa.RecordBatch] | None = []  # the first pass's batches, while they are small
    kept_bytes = 0
    with _reading(batches) as query:
        schema = query.schema
        checked = [i for i, f in enumerate(schema) if not _plain_type(f.type)]
        for batch in query:
            total += batch.num_rows
            _check_exportable(batch, checked)
            if kept is not None:
                kept_bytes += batch.nbytes
                if kept_bytes <= STREAM_KEEP_BYTES:
                    kept.append(batch)
                else:
                    kept = None
    if limit and total > limit and shown is not None:
        shown(limit, total)
    columns = schema.names
    left = limit or -1  # -1: every row
    seen = 0
    written = False
    # A result the first pass could keep is written from it: the query runs once, so its
    # answer cannot change between the passes.
    with _export_connection() as con, \
            (nullcontext(kept) if kept is not None else _reading(batches)) as second:
        if fmt == "json":  # DuckDB's own ARRAY framing, around the batches' JSON lines
            out.write("[\n\t")
        for batch in second:
            seen += batch.num_rows
            if seen > total:  # already not the first pass's answer: stop writing
                break
            if left == 0:
                continue  # past the limit: counted, not written
            batch = batch.slice(0, left) if left > 0 else batch
            if not batch.num_rows:
                continue
            if kept is None:  # a second run's values: the kept ones were checked already
                _check_exportable(batch, checked)
            left -= batch.num_rows if left > 0 else 0
            table = _typed_nulls(pa.Table.from_batches([batch]))
            if fmt == "json":
                text = _text(con, table, columns, "jsonl").rstrip("\n").replace("\n", ",\n\t")
                out.write((",\n\t" if written else "") + text)
            else:
                out.write(_text(con, table, columns, fmt, header=not written))
            written = True
        if seen != total:  # json left unclosed: a reader of it sees it is incomplete
            out.flush()
            raise ProjectionError(
                f"the query gave {total:,} rows when checked and "
                f"{'more' if seen > total else f'{seen:,}'} when written: its result changes "
                f"from one run to the next (random(), now(), a table being written to), so "
                f"what was written is not one answer; write it with --out FILE, which runs it "
                f"once")
        if fmt == "json":
            out.write("\n]\n")
        elif fmt == "csv" and not written:  # an empty result keeps its header
            out.write(_text(con, _typed_nulls(schema.empty_table()), columns, fmt))
    out.flush()


def stream_to_file(batches: Callable[[], pa.RecordBatchReader], fmt: str, path: Path, *,
                   limit: int = 0, shown: Callable[[int, int], None] | None = None) -> None:
    """Write a query's rows to the file `path` in json, jsonl or csv, a batch at a time, the
    query run once: memory is a batch's, not the result's (the rows were held, then COPY).

    The rows go to a temporary file beside `path` (`.pitlog-XXXX.tmp`), renamed over it once
    every row is checked and written; a value no export can write (`unexportable`, checked in
    every row, past the limit too, as `stream` does), a failed query, a full disk, Ctrl-C or
    SIGTERM removes it, and `path` is as it was. The bytes are those COPY wrote of the held
    rows. `limit` rows are written (0: all); every row is counted, and `shown(limit, total)`
    told after, when rows were left out.
    A FILE that exists and is no regular file (a pipe, a device, /dev/fd/N of a shell's
    process substitution) is written in place, as stdout is: what was written stays."""
    if path.exists() and not path.is_file():  # a pipe, a device, /dev/fd/N: written in place
        with path.open("wb") as f:
            total = _write_batches(batches, fmt, f, limit)
    else:
        total = _write_whole(batches, fmt, path, limit)
    if limit and total > limit and shown is not None:
        shown(limit, total)


def _write_whole(batches: Callable[[], pa.RecordBatchReader], fmt: str, path: Path,
                 limit: int) -> int:
    """`_write_batches` into a temporary file beside `path`, renamed over it when complete
    and removed on any failure; returns the rows counted."""
    import tempfile

    # A short name of its own (FILE's name plus a suffix could pass the 255-byte limit).
    fd, name = tempfile.mkstemp(prefix=".pitlog-", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as f:
            total = _write_batches(batches, fmt, f, limit)
        os.replace(tmp, path)
    except OSError as exc:
        remove_quietly(tmp)
        raise ProjectionError(f"cannot write {path}: {exc.strerror or exc}; free some space "
                              f"or write elsewhere") from None
    except BaseException:
        remove_quietly(tmp)
        raise
    return total


def _write_batches(batches: Callable[[], pa.RecordBatchReader], fmt: str, f: IO[bytes],
                   limit: int) -> int:
    """stream_to_file's one pass: every batch checked, the first `limit` rows (0: all) written
    to `f` as COPY writes them; returns the rows counted."""
    import pyarrow as pa

    total = 0
    with _export_connection() as con, _reading(batches) as query:
        schema = query.schema
        columns = schema.names
        checked = [i for i, field in enumerate(schema) if not _plain_type(field.type)]
        left = limit or -1  # -1: every row
        written = False
        if fmt == "json":  # DuckDB's own ARRAY framing, around the batches' JSON lines
            f.write(b"[\n\t")
        for batch in query:
            total += batch.num_rows
            _check_exportable(batch, checked)
            if left == 0 or not batch.num_rows:
                continue
            batch = batch.slice(0, left) if left > 0 else batch
            left -= batch.num_rows if left > 0 else 0
            table = _typed_nulls(pa.Table.from_batches([batch]))
            if fmt == "json":
                text = _batch_bytes(con, table, columns, "jsonl").rstrip(b"\n")
                f.write((b",\n\t" if written else b"") + text.replace(b"\n", b",\n\t"))
            else:
                f.write(_batch_bytes(con, table, columns, fmt, header=not written))
            written = True
        if fmt == "json":
            f.write(b"\n]\n")
        elif fmt == "csv" and not written:  # an empty result keeps its header
            f.write(_batch_bytes(con, _typed_nulls(schema.empty_table()), columns, fmt))
    return total


def _check_exportable(batch: pa.RecordBatch, checked: Sequence[int]) -> None:
    """Raise `unexportable` for a value of the `checked` columns no export can write."""
    import pyarrow as pa

    if checked and batch.num_rows:
        part = pa.Table.from_batches([batch]).select(checked)
        arrow_table(Rows.of(part), part.column_names)


def _plain_type(typ: pa.DataType) -> bool:
    import pyarrow as pa

    return any(getattr(pa.types, test)(typ) for test in _PLAIN)


def _typed_nulls(table: pa.Table) -> pa.Table:
    """A column NULL in every row and untyped by its query (`SELECT NULL AS x`) takes the type
    its name suggests, as `arrow_table` gives it."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_null(field.type):
            table = table.set_column(i, field.name, table.column(i).cast(_fallback(field.name)))
    return table


def _export_connection() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB for COPY, in UTC (the times' Z is true), never spilling: an
    in-memory database would offload to `.tmp` in the working folder."""
    import duckdb

    con = duckdb.connect(config=dict(NO_SPILL))
    con.execute("SET TimeZone = 'UTC'")
    return con


def _select(columns: Sequence[str]) -> str:
    return "SELECT " + (", ".join('"' + c.replace('"', '""') + '"' for c in columns)
                        or "NULL AS none") + " FROM export_rows"


def _text(con: duckdb.DuckDBPyConnection, table: pa.Table, columns: Sequence[str], fmt: str,
          *, header: bool = True) -> str:
    """What COPY writes of `table` in `fmt`, as text ready for a terminal."""
    text = _batch_bytes(con, table, columns, fmt, header=header).decode("utf-8")
    if fmt in ("json", "jsonl"):  # a terminal: no raw DEL, C1 or bidi control
        text = json_safe(text)
    return text


def _batch_bytes(con: duckdb.DuckDBPyConnection, table: pa.Table, columns: Sequence[str],
                 fmt: str, *, header: bool = True) -> bytes:
    """What COPY writes of `table` in `fmt` (a file's bytes, as `write` gives a path)."""
    columns = _register(con, table, columns, fmt)
    try:
        return _copied(con, _select(columns), fmt, header=header)
    finally:
        con.unregister("export_rows")


def _register(con: duckdb.DuckDBPyConnection, table: pa.Table, columns: Sequence[str],
              fmt: str) -> list[str]:
    """`table` as the view `export_rows` for COPY; returns the columns to select from it. CSV's
    strings and column names are shown as `_visible_strings` makes them (a name with a tab in
    it was selected by its raw name and not found)."""
    if fmt != "parquet":
        table = _as_text_formats_take_them(table, json=fmt in ("json", "jsonl"))
    if fmt == "csv":
        table, columns = _visible_strings(table), [visible(c) for c in columns]
    con.register("export_rows", table)
    return list(columns)


def _copied(con: duckdb.DuckDBPyConnection, select: str, fmt: str, *,
            header: bool = True) -> bytes:
    """What COPY writes, read back through a pipe: a query command writes no file, not even a
    temporary one (read-only means no file access). Held until COPY succeeded, so a failure
    prints nothing partial of what it was given (`stream` gives it a batch at a time)."""
    read_end, write_end = os.pipe()
    chunks: list[bytes] = []

    def drain() -> None:  # the pipe's buffer is 64 KiB: COPY blocks unless read meanwhile
        with os.fdopen(read_end, "rb") as pipe:
            while chunk := pipe.read(1 << 16):
                chunks.append(chunk)

    reader = threading.Thread(target=drain, name="pitlog-export", daemon=True)
    reader.start()
    try:
        _copy(con, select, fmt, Path(f"/dev/fd/{write_end}"), direct=True, header=header)
    finally:
        os.close(write_end)
        reader.join()
    return b"".join(chunks)


def _as_text_formats_take_them(table: pa.Table, *, json: bool) -> pa.Table:
    """The columns JSON, JSON lines and CSV need changed, in one walk of them, and of the values
    inside their lists, structs and maps. A TIMESTAMP without a zone (`pitlog sql "SELECT
    started_at AT TIME ZONE '...'"`, a wall clock already) as its own ISO text, without the Z
    that TIMESTAMP_FORMAT gives every time: it is no UTC instant, and a Z would move it by the
    zone's offset again (Parquet keeps the type, which says it has no zone). With `json`: a NaN
    or infinite float is null, as JSON has neither (DuckDB's COPY writes them bare, which no
    JSON reader accepts); CSV keeps them."""
    import pyarrow as pa

    columns = [col if not _needs_change(col.type, json)
               else pa.chunked_array([_changed(c, json) for c in col.chunks])
               for col in table.columns]
    return pa.Table.from_arrays(columns, names=table.column_names)


def _needs_change(kind: pa.DataType, json: bool) -> bool:
    import pyarrow as pa

    if pa.types.is_timestamp(kind):
        return kind.tz is None
    if pa.types.is_floating(kind):
        return json
    return any(_needs_change(kind.field(i).type, json) for i in range(kind.num_fields))


def _changed(arr: pa.Array, json: bool) -> pa.Array:
    """`arr` as _as_text_formats_take_them changes it, nested values included (a list of
    floats with a NaN, a struct holding a wall-clock time)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = arr.type
    if not _needs_change(kind, json):
        return arr
    if pa.types.is_timestamp(kind):
        return pc.strftime(arr.cast(pa.timestamp("us")), format="%Y-%m-%dT%H:%M:%S")
    if pa.types.is_floating(kind):
        return pc.if_else(pc.is_finite(arr), arr, pa.scalar(None, kind))
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_map(kind):  # the keys as they are: a map's key is never null
        return pa.MapArray.from_arrays(arr.offsets, arr.keys, _changed(arr.items, json),
                                       mask=mask)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        array_type = pa.ListArray if pa.types.is_list(kind) else pa.LargeListArray
        return array_type.from_arrays(arr.offsets, _changed(arr.values, json), mask=mask)
    if pa.types.is_fixed_size_list(kind):  # every slot's values, a null row's too (flatten
        # skips those, and the rows after it would shift)
        size = kind.list_size
        values = arr.values.slice(arr.offset * size, len(arr) * size)
        return pa.FixedSizeListArray.from_arrays(_changed(values, json), size, mask=mask)
    if pa.types.is_struct(kind):
        return pa.StructArray.from_arrays([_changed(f, json) for f in arr.flatten()],
                                          names=[kind.field(i).name
                                                 for i in range(kind.num_fields)], mask=mask)
    return arr


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
          *, direct: bool = False, header: bool = True) -> None:
    """`direct`: write `path` itself, never a temporary file beside it (a pipe has no folder).
    `header`: a CSV's header line (a streamed export's later batches have none)."""
    import duckdb

    target = str(path).replace("'", "''")
    options = FORMATS[fmt][:-1] + ", USE_TMP_FILE false)" if direct else FORMATS[fmt]
    if not header:
        options = options.replace("HEADER true", "HEADER false")
    try:
        con.execute(f"COPY ({select}) TO '{target}' {options}")
    except duckdb.IOException as exc:  # a full disk, a file that cannot be written
        found = re.search(r'"exception_message":"((?:[^"\\]|\\.)*)"', str(exc))
        reason = found.group(1).replace('\\"', '"') if found else str(exc).splitlines()[0]
        raise ProjectionError(f"cannot write {path}: {reason}; free some space or write "
                              f"elsewhere") from None

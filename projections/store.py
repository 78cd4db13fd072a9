"""The DuckDB file of the read side: opening it, and the DDL of its raw tables.

Three tables hold everything the projector writes; the views (views.py) are computed from them:

- `events`: one wide row per decoded event. Its columns are derived from the Avro schemas, not
  written out by hand, so a new schema version's new field becomes a new column (added by
  `ALTER TABLE` the next time the file is opened for writing). It has no primary key: a key's
  index lives in memory and grows with the log, so the projector instead
  checks each batch's positions against the checkpoint in the batch's own transaction, which
  fails just as loudly on a record projected twice (projector._BatchLoader.load).
- `quarantine`: log records that are not pitlog events, with the reason (docs/architecture.md,
principle 1).
- `checkpoints`: the next log offset to project, per source and partition, committed in the same
  transaction as the rows (principle 3), with the log's id and the last record's digest, so a
  log replaced or restored at the same address is refused (log_checks.check_log_holds).

Opening the file read-write also keeps `pitlog_views`, the list of views and macros it holds
as this pitlog creates them (views.ensure_views): a reopened file skips re-creating them.

Only projections/ imports duckdb (STYLE, idiom 4).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from events.errors import ProjectionError, first_line
from events.wire import codec
from projections.defaults import STORAGE_VERSION
from projections.memory import (
    _LIMITS,
    DEFAULT_MEMORY_LIMIT,
    MORE_MEMORY,
    chosen_limit,
    reader_config,
)
from projections.snapshot import (
    check_database_file,
    damaged,
    locked,
    open_for_reading,
    opened_here,
    publish_snapshot,
    snapshot_path,
)
from projections.views import ensure_views

__all__ = ["Column", "arrow_schema", "ensure_schema", "event_columns", "open_for_reading",
           "open_store", "prepare", "publish_snapshot", "snapshot_path"]

# Where a row came from in the log, and whether its bytes match its own chain hash (NULL in
# rows projected before the projector checked it). Not Avro fields: the projector adds them.
POSITION_COLUMNS = (("log_partition", "INTEGER", pa.int32()),
                    ("log_offset", "BIGINT", pa.int64()),
                    ("event_type", "VARCHAR", pa.string()),
                    ("hash_ok", "BOOLEAN", pa.bool_()))

QUARANTINE_DDL = """
CREATE TABLE IF NOT EXISTS quarantine (
    source VARCHAR NOT NULL,
    log_partition INTEGER NOT NULL,
    log_offset BIGINT NOT NULL,
    "key" BLOB,
    "value" BLOB,
    reason VARCHAR NOT NULL,
    quarantined_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (source, log_partition, log_offset)
)"""

CHECKPOINTS_DDL = """
CREATE TABLE IF NOT EXISTS checkpoints (
    source VARCHAR NOT NULL,
    log_partition INTEGER NOT NULL,
    next_offset BIGINT NOT NULL,
    PRIMARY KEY (source, log_partition)
)"""
# What a checkpoint remembers of the log, beside the position (issue 14): the log's id and the
# last record it covers, its offset and SHA-256 (events.log.base.record_digest). Added by ALTER to
# files made before; NULL there until the next batch of that partition is committed.
CHECKPOINT_IDENTITY = (("log_id", "VARCHAR"), ("last_offset", "BIGINT"), ("last_digest", "BLOB"))

QUARANTINE_ARROW = pa.schema([
    ("source", pa.string()), ("log_partition", pa.int32()), ("log_offset", pa.int64()),
    ("key", pa.binary()), ("value", pa.binary()), ("reason", pa.string()),
    ("quarantined_at", pa.timestamp("us", tz="UTC")),
])


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    sql_type: str  # as DuckDB spells it in DDL
    arrow_type: pa.DataType  # what the projector builds, matching sql_type


_PRIMITIVES: dict[str, tuple[str, pa.DataType]] = {
    "boolean": ("BOOLEAN", pa.bool_()),
    "int": ("INTEGER", pa.int32()),
    "long": ("BIGINT", pa.int64()),
    "float": ("FLOAT", pa.float32()),
    "double": ("DOUBLE", pa.float64()),
    "string": ("VARCHAR", pa.string()),
    "bytes": ("BLOB", pa.binary()),
}
# decode_raw leaves timestamps as integers; Arrow reinterprets them in the unit given here.
_LOGICAL: dict[str, tuple[str, pa.DataType]] = {
    "timestamp-micros": ("TIMESTAMPTZ", pa.timestamp("us", tz="UTC")),
    "timestamp-millis": ("TIMESTAMPTZ", pa.timestamp("ms", tz="UTC")),
    "date": ("DATE", pa.date32()),
}
# An int field may become a long in a later version (Avro promotes int to long).
_WIDER = {frozenset({"INTEGER", "BIGINT"}): ("BIGINT", pa.int64())}


def _avro_type(node: Any, names: dict[str, tuple[str, pa.DataType]], where: str,
               ) -> tuple[str, pa.DataType]:
    """The DuckDB and Arrow types of one Avro type node (as fastavro.parse_schema leaves it)."""
    if isinstance(node, str):
        if node in _PRIMITIVES:
            return _PRIMITIVES[node]
        if node in names:  # a reference to a named type defined earlier in the schema
            return names[node]
        raise ProjectionError(f"{where}: Avro type {node!r} has no DuckDB column type")
    if isinstance(node, list):
        # Unions are nullable columns: every column is nullable anyway.
        branches = [b for b in node if b != "null"]
        if len(branches) != 1:
            raise ProjectionError(f"{where}: union {node} of several types cannot be one column")
        return _avro_type(branches[0], names, where)
    kind = node["type"]
    if node.get("logicalType") in _LOGICAL:
        result = _LOGICAL[node["logicalType"]]
    elif kind == "enum":
        result = ("VARCHAR", pa.string())  # VARCHAR, not ENUM: a new symbol needs no migration
    elif kind == "fixed":
        result = ("BLOB", pa.binary())
    elif kind == "array":
        sql, arrow = _avro_type(node["items"], names, where)
        result = (f"{sql}[]", pa.list_(arrow))
    elif kind == "record":
        members = [(f["name"], *_avro_type(f["type"], names, f"{where}.{f['name']}"))
                   for f in node["fields"]]
        result = ("STRUCT(" + ", ".join(f'"{n}" {s}' for n, s, _ in members) + ")",
                  pa.struct([(n, a) for n, _, a in members]))
    else:
        result = _avro_type(kind, names, where)
    if kind in ("enum", "fixed", "record") and "name" in node:
        names[node["name"]] = result
    return result


def event_columns(reg: codec.SchemaRegistry | None = None) -> tuple[Column, ...]:
    """The columns of `events`: the log position, the envelope, then the union of the payload
    fields of the newest schema of every event type (decode_raw resolves every event to it)."""
    reg = reg or codec.registry()
    found: dict[str, tuple[str, pa.DataType, str]] = {}
    envelope: list[str] | None = None
    for event_type in sorted(reg.latest):
        sv = reg.latest[event_type]
        names: dict[str, tuple[str, pa.DataType]] = {}
        field_names = []
        for f in sv.parsed["fields"]:
            where = f"{sv.path.name} field {f['name']}"
            sql, arrow = _avro_type(f["type"], names, where)
            field_names.append(f["name"])
            if f["name"] not in found:
                found[f["name"]] = (sql, arrow, where)
                continue
            sql0, _, where0 = found[f["name"]]
            if sql0 != sql:
                wider = _WIDER.get(frozenset({sql0, sql}))
                if wider is None:
                    raise ProjectionError(
                        f"{where} is {sql} but {where0} is {sql0}: one `events` column cannot "
                        f"hold both; rename the field in a new schema version")
                found[f["name"]] = (*wider, where0)
        envelope = field_names if envelope is None else [n for n in envelope if n in field_names]
    assert envelope is not None  # the registry refuses to load without every event type
    order = envelope + [n for n in found if n not in envelope]
    return tuple(Column(n, s, a) for n, s, a in POSITION_COLUMNS) + tuple(
        Column(n, found[n][0], found[n][1]) for n in order)


def arrow_schema(columns: tuple[Column, ...]) -> pa.Schema:
    return pa.schema([(c.name, c.arrow_type) for c in columns])


def _events_ddl(columns: tuple[Column, ...]) -> str:
    body = ",\n    ".join(f'"{c.name}" {c.sql_type}' for c in columns)
    # No primary key on the log position: the projector's checkpoint check does its work
    # without an index that grows with the log. Files made before keep theirs; it does no harm.
    return f"CREATE TABLE IF NOT EXISTS events (\n    {body}\n)"


def _normalise(sql_type: str) -> str:
    return sql_type.replace('"', "").replace(" ", "").upper()


def ensure_schema(con: duckdb.DuckDBPyConnection) -> tuple[Column, ...]:
    """Create the raw tables if missing, and add a column for every new schema field.

    Returns the columns of `events` as the schemas define them. Raises ProjectionError when a
    stored column has another type than the schemas now give it.
    """
    columns = event_columns()
    con.execute(_events_ddl(columns))
    con.execute(QUARANTINE_DDL)
    con.execute(CHECKPOINTS_DDL)
    for name, sql_type in CHECKPOINT_IDENTITY:
        con.execute(f"ALTER TABLE checkpoints ADD COLUMN IF NOT EXISTS {name} {sql_type}")
    stored = {name: _normalise(typ) for name, typ in con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = 'main' AND table_name = 'events'").fetchall()}
    # DuckDB's own spelling of each type (TIMESTAMPTZ is TIMESTAMP WITH TIME ZONE), to compare.
    (canonical,) = con.execute("SELECT " + ", ".join(
        f"typeof(CAST(NULL AS {c.sql_type}))" for c in columns)).fetchall()
    for c, spelled in zip(columns, canonical, strict=True):
        if c.name not in stored:
            # A new schema version's new field (STYLE, idiom 5): old rows read it as NULL.
            con.execute(f'ALTER TABLE events ADD COLUMN "{c.name}" {c.sql_type}')
        elif stored[c.name] != _normalise(spelled):
            raise ProjectionError(
                f"events.{c.name} is {stored[c.name]} in the database but {c.sql_type} in the "
                f"schemas; rebuild the database with `pitlog project` into a fresh file")
    return columns


# Connections whose tables and views are known to be current: the schemas and SQL files do
# not change while a process runs, and re-creating every view costs a few catalog commits
# (a follow-mode projector calls project() on the same connection again and again).
_PREPARED: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()


def prepare(con: duckdb.DuckDBPyConnection) -> None:
    """ensure_schema and ensure_views, once per read-write connection."""
    if con in _PREPARED:
        return

    try:
        columns = ensure_schema(con)
    except duckdb.Error as exc:  # e.g. a read-only connection
        hint = f"; {MORE_MEMORY}" if isinstance(exc, duckdb.OutOfMemoryException) else ""
        raise ProjectionError(
            f"cannot create or migrate the pitlog tables: {first_line(exc)}{hint}") from exc
    # After the tables (the views select from them); re-created when the schemas' columns
    # change too, so a view never outlives the `events` it was created over.
    ensure_views(con, _events_ddl(columns))
    _PREPARED.add(con)


def open_store(path: str | Path, read_only: bool = False,
               memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """Open (and, read-write, create and migrate) the DuckDB file with its tables and views.

    A read-write connection gets DuckDB's memory_limit (`memory_limit`, else the
    PITLOG_MEMORY_LIMIT variable, else DEFAULT_MEMORY_LIMIT): the projector then streams in
    bounded memory however long the log, spilling to `<file>.tmp` if a query needs more. A
    read-only connection never spills (memory.reader_config)."""
    limit = "" if read_only else chosen_limit(memory_limit, DEFAULT_MEMORY_LIMIT) or ""
    file = Path(path)
    check_database_file(file, may_be_missing=not read_only)
    created = not read_only and not file.exists()
    try:
        config: dict[str, str | bool | int | float | list[str]] = (
            reader_config() if read_only else {"storage_compatibility_version": STORAGE_VERSION})
        con = duckdb.connect(str(path), read_only=read_only, config=config)
    except BaseException as exc:
        _remove_if_created(file, created)
        if isinstance(exc, duckdb.Error) and locked(exc):  # snapshot.locked: held elsewhere
            raise ProjectionError(f"cannot open {path}: {first_line(exc)}") from exc
        if isinstance(exc, duckdb.Error):  # cut short, or damaged behind a valid header
            raise damaged(path, exc) from exc
        raise
    opened_here(file, con)  # never opened by this process again while it holds the lock
    if not read_only:
        try:
            con.execute(f"SET memory_limit = '{limit}'").fetchall()
            # DuckDB's own progress bar off: it prints on stdout, into the CLI's table or
            # JSON, for any statement past 2 seconds (the migration below, a whole evaluation)
            con.execute("SET enable_progress_bar = false").fetchall()
            _LIMITS[con] = limit
            prepare(con)
        except BaseException as exc:
            con.close()
            # A new file that could not be set up (a full disk) would block every later run:
            # it holds nothing yet, so it goes.
            _remove_if_created(file, created)
            if isinstance(exc, duckdb.Error):
                raise ProjectionError(
                    f"cannot {'create' if created else 'prepare'} the database {path}: "
                    f"{first_line(exc)}; check the disk (free space, permissions) and run "
                    f"again") from exc
            raise
    return con


def _remove_if_created(file: Path, created: bool) -> None:
    if created:
        for leftover in (file, file.with_name(file.name + ".wal")):
            leftover.unlink(missing_ok=True)

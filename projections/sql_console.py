"""`pitlog sql QUERY`, and any other place that runs SQL a person typed: one guarded path.

Three locks, each enough on its own for writes: the query is checked up front (one statement,
and only a query: SELECT, WITH, FROM, VALUES, TABLE, DESCRIBE, SHOW, SUMMARIZE or EXPLAIN of one
of those), the database is opened read-only, and the DuckDB instance is guarded:

- `enable_external_access = false`: no file, URL or directory outside the database itself
  (read_blob, read_csv, read_text, glob, `'http://...'`, COPY, ATTACH, INSTALL all refused);
- `autoload_known_extensions` / `autoinstall_known_extensions` off: nothing is downloaded;
- `memory_limit` (PITLOG_SQL_MEMORY_LIMIT, default SQL_MEMORY_LIMIT) and no spilling
  (`temp_directory = ''`): a query over the limit fails, it never writes `<database>.tmp`;
- `lock_configuration = true`: no SET, RESET or PRAGMA can undo any of the above.

Those settings belong to the DuckDB *instance* (a file opened in a process), shared by every
connection and cursor of it, and once locked they cannot be unlocked. So the guard is given at
connect time (`guarded_connection`), never applied to an instance someone else uses: locking a
projector's own instance would break it (memory.memory_limit_at_most sets memory_limit). A
process that holds the database read-write (an HTTP server with the projector in-process)
cannot open the same file a second time with other settings; `guarded_connection` then opens
the published snapshot (snapshot.py), a separate instance. `run_guarded` refuses a connection
or cursor whose instance is not guarded.

DuckDB has no statement timeout: `run_guarded` runs the query on a worker thread and calls
`interrupt()` on the connection when the time limit (PITLOG_SQL_TIMEOUT seconds, default
SQL_TIMEOUT_SECONDS) passes, or when Ctrl-C (KeyboardInterrupt) reaches the waiting thread.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import duckdb
import pyarrow as pa

from events.errors import NotFoundError, PitlogError, ProjectionError, Terminated, first_line
from projections.export import STREAM_BATCH_ROWS, Rows, stream, stream_to_file, with_unique_names
from projections.memory import NO_SPILL, memory_bytes
from projections.snapshot import (
    check_database_file,
    damage_named,
    damaged,
    file_read,
    locked,
    snapshot_path,
)
from projections.sql_text import readable

ALLOWED = ("SELECT", "WITH", "FROM", "VALUES", "TABLE", "DESCRIBE", "SHOW", "SUMMARIZE",
           "EXPLAIN")
_COMMENTS = re.compile(r"(--[^\n]*(\n|$))|(/\*.*?\*/)", re.DOTALL)
_EXPLAIN = re.compile(r"^\s*EXPLAIN(\s+ANALY[SZ]E)?\b", re.IGNORECASE)

SQL_TIMEOUT_SECONDS = 60.0
SQL_MEMORY_LIMIT = "1GB"
_AMOUNT = re.compile(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", re.IGNORECASE)


T = TypeVar("T")


class ReadOnlyQueryError(PitlogError):
    """`pitlog sql` was given something other than one read-only query."""


class QueryLimitError(ProjectionError):
    """A query ran past its time limit, was stopped by Ctrl-C, or gave more rows to hold than
    its memory limit (_head)."""


@dataclass(frozen=True, slots=True)
class QueryLimits:
    timeout_seconds: float = SQL_TIMEOUT_SECONDS
    memory_limit: str = SQL_MEMORY_LIMIT

    @classmethod
    def from_env(cls, timeout_seconds: float | None = None,
                 memory_limit: str | None = None) -> QueryLimits:
        """Explicit values, else PITLOG_SQL_TIMEOUT / PITLOG_SQL_MEMORY_LIMIT, else defaults."""
        raw_timeout = os.environ.get("PITLOG_SQL_TIMEOUT")
        if timeout_seconds is None and raw_timeout:
            try:
                timeout_seconds = float(raw_timeout)
            except ValueError:
                raise ProjectionError(
                    f"PITLOG_SQL_TIMEOUT={raw_timeout!r} is not a number of seconds; "
                    f"write it like 30 or 2.5") from None
        limits = cls(timeout_seconds if timeout_seconds is not None else SQL_TIMEOUT_SECONDS,
                     memory_limit or os.environ.get("PITLOG_SQL_MEMORY_LIMIT")
                     or SQL_MEMORY_LIMIT)
        if not 0 < limits.timeout_seconds <= 86_400:
            raise ProjectionError(f"the query time limit {limits.timeout_seconds} s "
                                  f"(--timeout or PITLOG_SQL_TIMEOUT) must be > 0 and at most "
                                  f"86400")
        if not _AMOUNT.fullmatch(limits.memory_limit.strip()):
            raise ProjectionError(f"the query memory limit {limits.memory_limit!r} "
                                  f"(--memory-limit or PITLOG_SQL_MEMORY_LIMIT) is not an "
                                  f"amount: write it like 1GB or 512MB")
        return limits


def _first_word(query: str) -> str:
    text = _COMMENTS.sub(" ", query).lstrip(" \t\r\n(")
    m = re.match(r"[A-Za-z_]+", text)
    return m.group(0).upper() if m else ""


def check_read_only(query: str) -> None:
    """ReadOnlyQueryError unless `query` is exactly one read-only statement."""
    word = _first_word(query)
    if word not in ALLOWED:
        shown = word or "an empty query"
        raise ReadOnlyQueryError(
            f"pitlog sql runs read-only queries only ({', '.join(ALLOWED)}); got {shown}")
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise ReadOnlyQueryError(f"the query does not parse: {exc}") from exc
    if len(statements) != 1:
        raise ReadOnlyQueryError(
            f"pitlog sql runs one statement at a time; got {len(statements)}")
    kind = statements[0].type
    if kind == duckdb.StatementType.EXPLAIN:
        # EXPLAIN ANALYZE runs its statement: that statement must be read-only too.
        check_read_only(_EXPLAIN.sub("", _COMMENTS.sub(" ", query), count=1))
    elif kind != duckdb.StatementType.SELECT:
        article = "an" if kind.name[0] in "AEIOU" else "a"
        raise ReadOnlyQueryError(f"pitlog sql runs read-only queries only; this is {article} "
                                 f"{kind.name} statement: write a SELECT")


def guard_config(limits: QueryLimits) -> dict[str, Any]:
    """The DuckDB instance settings of a guarded connection (see the module docstring), all
    but the lock, which `_locked` sets last."""
    return {
        "enable_external_access": False,
        "autoload_known_extensions": False,
        "autoinstall_known_extensions": False,
        "allow_community_extensions": False,
        "memory_limit": limits.memory_limit,
        **NO_SPILL,  # read-only writes no file
    }


def _locked(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """The progress bar off, then `lock_configuration`: nothing can be changed afterwards.
    The progress bar is the connection's own setting, not the instance's, so it cannot be
    given at connect time; DuckDB drew it on stdout after 2 s, into the rows of
    `pitlog sql -f jsonl` (found by tests/cli/test_cli_read_only.py)."""
    try:
        con.execute("SET enable_progress_bar = false")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def seal_writer(con: duckdb.DuckDBPyConnection) -> None:
    """Close DuckDB's doors to files, URLs and extensions on a writer's own instance (the
    process of `pitlog serve`, whose cursors answer typed SQL). The configuration cannot be
    locked there, since the projector changes its memory limit as it works, but external
    access once off cannot be switched back on while the database runs, and check_read_only
    refuses SET. The writer's own file, its WAL and spills are not external access (the
    writer's instance spills, its readers' cursors with it: temp_directory is the instance's)."""
    for setting in ("enable_external_access", "autoload_known_extensions",
                    "autoinstall_known_extensions", "allow_community_extensions"):
        con.execute(f"SET {setting} = false").fetchall()


def guarded_connection(db_path: str | Path,
                       limits: QueryLimits | None = None) -> duckdb.DuckDBPyConnection:
    """A read-only, guarded connection to the database, or to its snapshot while a writer (this
    process or another) holds the file."""
    limits = limits or QueryLimits.from_env()
    path = Path(db_path)
    snap = snapshot_path(path)
    check_database_file(path, may_be_missing=True)
    if not path.is_file() and not snap.is_file():
        raise NotFoundError(f"no database at {path}: run `pitlog project` first")
    config = guard_config(limits)
    if path.is_file():
        try:
            return _locked(duckdb.connect(str(path), read_only=True, config=config))
        except duckdb.Error as exc:
            # Locked (snapshot.locked): another process holds the write lock, or this process
            # has the file open with other settings (a writer in the same process).
            if not locked(exc):
                raise damaged(path, exc) from exc
            if not snap.is_file():
                raise ProjectionError(
                    f"cannot open {path} read-only ({one_line(exc)}) and no snapshot "
                    f"{snap.name} exists; run the projector with snapshots on, or stop it "
                    f"first") from exc
    try:
        return _locked(duckdb.connect(str(snap), read_only=True, config=config))
    except duckdb.Error as exc:
        raise ProjectionError(f"cannot open the snapshot {snap}: {exc}") from exc


def _setting(con: Any, name: str) -> Any:
    return con.execute("SELECT current_setting(?)", [name]).fetchall()[0][0]


def is_guarded(con: duckdb.DuckDBPyConnection) -> bool:
    """True when the instance behind `con` (a connection or a cursor) has the guard locked."""
    return (_setting(con, "lock_configuration") is True
            and _setting(con, "enable_external_access") is False
            and _setting(con, "autoinstall_known_extensions") is False
            and _setting(con, "autoload_known_extensions") is False)


def run_guarded(con: duckdb.DuckDBPyConnection, query: str, params: list[Any] | None = None,
                limits: QueryLimits | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """(column names, rows) of one read-only query typed by a person, on a guarded connection
    or a cursor of one, stopped at the time limit or on Ctrl-C.

    Refuses (ProjectionError) a connection whose DuckDB instance is not guarded: open one with
    `guarded_connection`, even in a process that holds the writer connection."""
    limits = limits or QueryLimits.from_env()
    check_read_only(query)
    if not is_guarded(con):
        raise ProjectionError(
            "this DuckDB connection is not guarded (external access on or configuration "
            "unlocked); run typed SQL only on sql_console.guarded_connection(db_path)")

    columns, rows, _total = _limited(con, lambda: _head(con, query, params, 0, limits), limits)
    return columns, rows


def _head(con: duckdb.DuckDBPyConnection, query: str, params: list[Any] | None, keep: int,
          limits: QueryLimits, text: bool = True) -> tuple[list[str], Rows, int]:
    """(column names, the first `keep` rows (0: all), how many rows the query gave), read a
    batch at a time: the rows not kept are counted and dropped, so memory follows what is
    shown, not the result; and what is kept may not pass the memory limit, which DuckDB's own
    setting does not cover once rows leave it (an outside review, session 38: `pitlog sql
    "SELECT * FROM range(100000000)" -n 1` was killed by the OS). Values Arrow misstates come
    as DuckDB's text (sql_text.readable; with `text` false, for Parquet, only the lossy ones)."""
    relation = con.sql(query, params=params)
    if relation is None:  # a statement, not a query: check_read_only lets none through
        raise ReadOnlyQueryError("the statement returned no rows; give a query")
    reader = readable(relation, text=text).to_arrow_reader(batch_size=STREAM_BATCH_ROWS)
    budget = memory_bytes(limits.memory_limit)
    kept: list[pa.RecordBatch] = []
    held = total = rows_kept = 0
    per_row = None  # bytes a row takes as Python values, from the first rows kept
    try:
        for batch in reader:
            total += batch.num_rows
            room = batch.num_rows if not keep else keep - rows_kept
            if room <= 0:
                continue
            kept.append(batch.slice(0, room))
            rows_kept += kept[-1].num_rows
            if per_row is None and kept[-1].num_rows:
                per_row = _python_row_bytes(kept[-1])
            # The rows are held twice, as Arrow and then as Python values, which take 10-30
            # times the Arrow bytes (an outside review, session 39: 5,000,000 integers passed
            # a 100MB limit as 40 MB of Arrow and took 2.85 GB)
            held += kept[-1].nbytes
            if held + rows_kept * (per_row or 0) > budget:
                raise QueryLimitError(
                    f"the rows to show hold more than the memory limit of "
                    f"{limits.memory_limit}; show fewer (--limit N), or write them all to a "
                    f"file a batch at a time (--format csv --out FILE)")
    finally:
        reader.close()
    table = with_unique_names(pa.Table.from_batches(kept, schema=reader.schema))
    return table.column_names, Rows.of(table), total


def _python_row_bytes(batch: pa.RecordBatch) -> float:
    """About how many bytes one row of `batch` takes as a dict of Python values (Rows.of),
    from its first 64 rows: the dict and each value, not what a value refers to."""
    try:
        sample = batch.slice(0, 64).to_pylist()
    except (ArithmeticError, ValueError, pa.ArrowException):
        return 0.0  # a value Python cannot hold: Rows.of names its column
    return sum(sys.getsizeof(row) + sum(sys.getsizeof(v) for v in row.values())
               for row in sample) / len(sample)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (`kill`, `timeout`, `docker stop`) raised as Terminated, a KeyboardInterrupt,
    in the main thread while this lasts: `_limited` then stops the query as on Ctrl-C and
    the work's own clean-up runs. Elsewhere (a server's thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum: int, frame: object) -> None:
        Terminated.received = True
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _limited(con: duckdb.DuckDBPyConnection, work: Callable[[], T], limits: QueryLimits) -> T:
    """`work()` (queries on `con`) within the time limit, stopped on Ctrl-C, DuckDB's errors
    turned into one line each."""
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["result"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = exc
        finally:
            done.set()

    # An Event, not Thread.join: a join cut short by KeyboardInterrupt can return at once
    # afterwards (CPython's tstate lock), and closing a busy connection aborts the process.
    threading.Thread(target=run, name="pitlog-sql", daemon=True).start()
    try:
        finished = done.wait(limits.timeout_seconds)
    except KeyboardInterrupt:
        # Ctrl-C reaches this thread, never DuckDB's: stop the query, then pass it on.
        con.interrupt()
        done.wait()
        raise
    if not finished:
        con.interrupt()
        done.wait()
        if "result" not in outcome:  # it may have finished just as the limit passed
            raise QueryLimitError(
                f"the query ran past its time limit of {limits.timeout_seconds:g} s and was "
                f"stopped; narrow it, or raise the limit with --timeout or PITLOG_SQL_TIMEOUT")
    error = outcome.get("error")
    if isinstance(error, duckdb.OutOfMemoryException):
        raise ProjectionError(out_of_memory(
            error, f"with --memory-limit or PITLOG_SQL_MEMORY_LIMIT (now {limits.memory_limit}); "
                   f"it never spills to disk")) from error
    if isinstance(error, duckdb.Error):
        raise ProjectionError(query_failure(error)) from error
    if error is not None:
        raise error
    return outcome["result"]


def out_of_memory(error: BaseException, raise_it: str) -> str:
    """What `pitlog sql` and /api/sql say of a query that ran out of memory: DuckDB's first
    line, and what the user can do. Never DuckDB's own advice (SET threads, SET memory_limit),
    which the read-only guard refuses (an outside review, session 42)."""
    return (f"the query ran out of memory ({first_line(error)}); narrow it, or raise the limit "
            f"{raise_it}")


def query_failure(error: BaseException) -> str:
    """What `pitlog sql` and /api/sql say of a query DuckDB refused or failed, on one line
    (DuckDB's own message may span several: the server's showed them as \\x0a)."""
    if isinstance(error, duckdb.PermissionException):
        return (f"the query was refused: {one_line(error)}; pitlog sql reads the database only "
                "(no files, URLs or extensions)")
    return f"the query failed: {one_line(error)}"


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def run_query(db_path: str | Path, query: str, params: list[Any] | None = None,
              limits: QueryLimits | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """(column names, rows) of one read-only query on a fresh guarded connection."""
    columns, rows, _total = run_query_head(db_path, query, 0, params, limits)
    return columns, rows


def run_query_head(db_path: str | Path, query: str, keep: int,
                   params: list[Any] | None = None, limits: QueryLimits | None = None,
                   *, text: bool = True) -> tuple[list[str], list[dict[str, Any]], int]:
    """(column names, the first `keep` rows (0: all), how many rows the query gave) of one
    read-only query on a fresh guarded connection (_head: only the rows kept are held)."""
    limits = limits or QueryLimits.from_env()
    check_read_only(query)  # before opening anything
    con = guarded_connection(db_path, limits)
    try:
        with damage_named(file_read(con, db_path)):  # the snapshot, while a writer holds it
            return _limited(con, lambda: _head(con, query, params, keep, limits, text), limits)
    finally:
        con.close()


def export_query(db_path: str | Path, query: str, fmt: str, out: IO[str] | Path,
                 limits: QueryLimits | None = None, *, limit: int = 0,
                 shown: Callable[[int, int], None] | None = None) -> None:
    """One read-only query's rows written to `out` (a text stream, or a file's path) in json,
    jsonl or csv as they come, a batch at a time (export.stream and export.stream_to_file:
    memory bounded by a batch, nothing written when a value cannot be), on a fresh guarded
    connection within the time limit."""
    limits = limits or QueryLimits.from_env()
    check_read_only(query)  # before opening anything
    con = guarded_connection(db_path, limits)

    def batches() -> Any:
        relation = con.sql(query)
        if relation is None:  # a statement, not a query: check_read_only lets none through
            raise ReadOnlyQueryError("the statement returned no rows; give a query")
        return readable(relation).to_arrow_reader(batch_size=STREAM_BATCH_ROWS)

    try:
        with damage_named(file_read(con, db_path)):
            if isinstance(out, Path):
                with _sigterm_as_interrupt():  # so the temporary file is removed, as on Ctrl-C
                    _limited(con, lambda: stream_to_file(batches, fmt, out, limit=limit,
                                                         shown=shown), limits)
            else:
                _limited(con, lambda: stream(batches, fmt, out, limit=limit, shown=shown),
                         limits)
    finally:
        con.close()

"""GET /api/sql: the `pitlog sql` guard, then bounded time and rows.

The guard is sql_console.check_read_only (the same check as `pitlog sql`); the query then runs
inside a READ ONLY transaction on its own cursor (ServeState.snapshot, as every request reads),
so DuckDB itself refuses any write even if the guard missed one. A watcher interrupts the
cursor after `state.sql_timeout` seconds (or fewer, asked with `timeout`), or as soon as the
client has gone away (`abandoned`: the writer's cores are not spent on an answer no one
reads; a client that gave up once went on costing the server up to its limit), and at most
`state.sql_max_rows` rows, holding at most MAX_BYTES as Arrow, are fetched: a row cap alone
let ten thousand rows of 100 kB each become a 1 GB answer built in the writer's memory (an
outside review, session 38).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import duckdb
import pyarrow as pa

from events.errors import PitlogError
from projections.export import Rows, unique_names
from projections.serve.state import ServeState
from projections.sql_console import check_read_only, out_of_memory, query_failure
from projections.sql_text import readable

# The Arrow bytes an answer may hold before it is cut (truncated, as at the row cap); its
# JSON takes a few times that in the writer's process while it is built.
MAX_BYTES = 64 * 1024 * 1024
BATCH_ROWS = 16


# How often the watcher looks whether the client went away (seconds).
WATCH_S = 0.25


class QueryTimeout(PitlogError):
    """The query ran past its time limit, the server's or the client's (answered 400)."""


class QueryAbandoned(PitlogError):
    """The client went away before its answer: the query was stopped (no one reads it)."""


def bounded_query(state: ServeState, query: str, timeout: float | None = None,
                  abandoned: threading.Event | None = None
                  ) -> tuple[list[str], list[dict[str, Any]], bool]:
    """(columns, rows, truncated) of one read-only query, at most sql_max_rows rows, stopped
    after `timeout` seconds (`pitlog sql --timeout`) or the server's own limit, whichever is
    less: a client may ask for less time, never more; or stopped once `abandoned` is set (the
    client went away), raising QueryAbandoned."""
    check_read_only(query)
    seconds = state.sql_timeout if timeout is None else min(timeout, state.sql_timeout)
    # Which limit to raise: the server's whenever it stopped the query, a client's equal to it
    # too (the server caps a larger one at its own: raising --timeout would change nothing).
    servers_limit = timeout is None or timeout >= state.sql_timeout
    with state.snapshot() as cur:
        finished = threading.Event()
        stopped: list[str] = []  # why the watcher interrupted the query: "time" or "client"
        deadline = time.monotonic() + seconds

        def watch() -> None:
            while not finished.wait(min(WATCH_S, max(0.0, deadline - time.monotonic()))):
                why = ("client" if abandoned is not None and abandoned.is_set()
                       else "time" if time.monotonic() >= deadline else None)
                if why is not None:
                    stopped.append(why)
                    cur.interrupt()
                    return

        watcher = threading.Thread(target=watch, name="pitlog-sql-watch", daemon=True)
        watcher.start()
        try:
            relation = cur.sql(query)
            if relation is None:  # a statement, not a query: the guard lets none through
                raise PitlogError("the statement returned no rows; give a query")
            relation, as_json = _as_the_file_writes(relation)
            # Small batches: DuckDB builds a batch whole before the byte cap can look at it
            # (10,000 rows of 100 kB were a 953 MiB batch; a second review, session 38).
            reader = relation.to_arrow_reader(batch_size=min(state.sql_max_rows, BATCH_ROWS))
            got: list[dict[str, Any]] = []
            truncated = False
            held = 0
            try:
                for batch in reader:
                    if held + batch.nbytes > MAX_BYTES:
                        batch = _rows_that_fit(batch, MAX_BYTES - held)
                        truncated = True
                    held += batch.nbytes
                    # Rows.of: columns named alike told apart, and a value Python cannot
                    # hold (an infinite timestamp) a 400 naming its column, not a 500.
                    got.extend(Rows.of(pa.Table.from_batches([batch])))
                    if truncated or len(got) > state.sql_max_rows:
                        truncated = True
                        break
            finally:
                reader.close()  # a result cut at the cap stops running now
            columns = unique_names(reader.schema.names)
            for name in (columns[i] for i in as_json):
                for row in got:
                    if row[name] is not None:
                        row[name] = json.loads(row[name])
            # A HUGEINT (sum() of integer cents) comes through Arrow as a Decimal of scale 0,
            # which the answer would send as an exact decimal, printed 5925000.0 where the
            # file's JSON has 5925000 (an outside review, session 39): an integer, as DuckDB's.
            for name in (columns[i] for i, kind in enumerate(relation.types)
                         if str(kind) in _WHOLE):
                for row in got:
                    if row[name] is not None:
                        row[name] = int(row[name])
        except duckdb.InterruptException:
            raise _interrupted(stopped, seconds, servers_limit) from None
        except duckdb.OutOfMemoryException as exc:
            raise _out_of_memory(state, exc) from exc
        except duckdb.Error as exc:
            raise PitlogError(query_failure(exc)) from exc
        except OSError as exc:
            # DuckDB's errors while the batches stream come through Arrow's C stream as an
            # OSError, the interruption too: it was a 500 on a busy machine (session 39).
            if stopped:
                raise _interrupted(stopped, seconds, servers_limit) from None
            if str(exc).lstrip().startswith(_OUT_OF_MEMORY):
                raise _out_of_memory(state, exc) from exc
            raise PitlogError(query_failure(exc)) from exc
        finally:
            finished.set()
            watcher.join()  # it interrupts nothing once the cursor is closed
        return columns, got[:state.sql_max_rows], truncated


# How DuckDB's OutOfMemoryException begins, also when Arrow's stream hands it over as OSError.
_OUT_OF_MEMORY = "Out of Memory Error"


def _out_of_memory(state: ServeState, exc: BaseException) -> PitlogError:
    """As `pitlog sql` on the file says it (sql_console.out_of_memory), with the server's limit:
    its queries run on the writer's database, under `pitlog serve --memory-limit`, which no
    query can change (docs/operating.md, `/api/sql`)."""
    return PitlogError(out_of_memory(
        exc, f"of the server: restart `pitlog serve` with a larger --memory-limit or "
             f"PITLOG_MEMORY_LIMIT (now {state.memory_limit})"))


def _interrupted(stopped: list[str], seconds: float, servers_limit: bool) -> PitlogError:
    """Why the watcher stopped the query, as its error."""
    if stopped == ["client"]:
        return QueryAbandoned("the client went away before its answer; the query was stopped")
    return _timed_out(seconds, servers_limit)


def _timed_out(seconds: float, servers_limit: bool) -> QueryTimeout:
    """Worded as `pitlog sql` on the file words it (sql_console), with what raises the limit."""
    more = ("restart `pitlog serve` with a larger --sql-timeout" if servers_limit
            else "raise the limit with --timeout or PITLOG_SQL_TIMEOUT")
    return QueryTimeout(f"the query ran past its time limit of {seconds:g} s and was stopped; "
                        f"narrow it (WHERE, LIMIT), or {more}")


def _rows_that_fit(batch: pa.RecordBatch, room: int) -> pa.RecordBatch:
    """The batch's first rows whose bytes fit in `room`, each row's own size counted: a cut
    by the batch's mean row size kept three rows of 30 MB where two fit (a closing note's
    check, session 39). A batch is at most BATCH_ROWS rows, so this slices it a few times."""
    rows = batch.num_rows
    while rows and batch.slice(0, rows).nbytes > room:
        rows -= 1
    return batch.slice(0, rows)


# Integers Arrow holds as decimals.
_WHOLE = ("HUGEINT",)  # a UHUGEINT comes as text (sql_text.LOSSY)


def _as_the_file_writes(relation: duckdb.DuckDBPyRelation
                        ) -> tuple[duckdb.DuckDBPyRelation, list[int]]:
    """The query's columns as `pitlog sql` reads them from the file: what Arrow misstates as
    DuckDB's text (sql_text.readable, the file's rule), and a MAP as its JSON object (Arrow's
    list of key/value pairs could not be written out by the client: the answer failed).
    Returns the relation and the positions of the columns sent as JSON text, which the caller
    parses. Columns are named by position: names may repeat."""
    relation = readable(relation)
    kinds = [str(kind) for kind in relation.types]
    as_json = [i for i, kind in enumerate(kinds) if kind.startswith("MAP(")]
    if not as_json:
        return relation, []
    picks = []
    for i, name in enumerate(relation.columns):
        value = f"CAST(to_json(#{i + 1}) AS VARCHAR)" if i in as_json else f"#{i + 1}"
        alias = '"' + name.replace('"', '""') + '"'
        picks.append(f"{value} AS {alias}")
    return relation.project(", ".join(picks)), as_json

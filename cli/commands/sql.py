"""`pitlog sql`: one read-only query over the views, in a sandboxed connection with a time and
memory limit (projections/sql_console.py)."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from cli.client import READ_MARGIN_S, TIMEOUT_S, ServerOpt, ask_waiting
from cli.listing import LimitOpt, limited, shown_rows, tell_shown
from cli.options import DbOpt, FormatOpt, OutOpt, TzOpt, db_path
from cli.output import Format, render
from events.errors import PitlogError
from projections.localtime import casino_zone
from projections.sql_console import (
    QueryLimits,
    check_read_only,
    export_query,
    run_query_head,
)

# Written a batch at a time, to stdout or to an --out file (parquet: the rows, then COPY).
STREAMED = (Format.json, Format.jsonl, Format.csv)


def sql_cmd(
    query: Annotated[str, typer.Argument(help="One read-only query: SELECT, WITH, DESCRIBE, "
                                              "SHOW or EXPLAIN; - reads it from stdin.")],
    limit: LimitOpt = None,
    db: DbOpt = None, format: FormatOpt = Format.table, out: OutOpt = None,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", show_default=False,
        help="Stop the query after this many seconds (default PITLOG_SQL_TIMEOUT, else 60).")
    ] = None,
    memory_limit: Annotated[str | None, typer.Option(
        "--memory-limit", show_default=False,
        help="DuckDB memory limit of the query (default PITLOG_SQL_MEMORY_LIMIT, else 1GB).")
    ] = None,
    tz: TzOpt = None,
    server: ServerOpt = None,
) -> None:
    """Run one read-only query over the views (ledger, paytables, rounds, wagers, ...) on a
    read-only connection that cannot read files or URLs, load extensions or change its own
    settings, within a time and memory limit. Anything that could write is refused.

    Example: pitlog sql "SELECT status, count(*) FROM ledger GROUP BY status"
    (or: echo "SELECT * FROM shoes" | pitlog sql - --format csv)
    """
    if query == "-":
        query = sys.stdin.read()
        if not query.strip():
            raise PitlogError("pitlog sql -: standard input held no query")
    limits = QueryLimits.from_env(timeout, memory_limit)  # bad limits: an error before asking
    check_read_only(query)  # so is a query the guard refuses ('' too: the same words either way)
    # A time limit given (--timeout, PITLOG_SQL_TIMEOUT) is sent: a server stops the query at
    # it or at its own, whichever is less. A memory limit cannot be: the server's queries share
    # its database's (`pitlog serve --memory-limit`), which no query changes.
    asked = limits.timeout_seconds if timeout is not None or os.environ.get(
        "PITLOG_SQL_TIMEOUT") else None
    # ... and waited for: a query asked to run past the client's own wait (TIMEOUT_S) was given
    # up as "cannot reach the server" (a discovered one's then run again on the file).
    answer = ask_waiting(db_path(db), server, "/api/sql",
                         None if asked is None else max(TIMEOUT_S, asked + READ_MARGIN_S),
                         q=query, timeout=asked)
    if answer is not None and memory_limit is not None:
        typer.echo("Warning: --memory-limit was not applied: the server's queries run within "
                   "its own memory limit (pitlog serve --memory-limit); stop the server to "
                   "query the file within yours", err=True)
    if answer is None and format in STREAMED:
        # Written as the rows come, a batch at a time: memory does not follow the result.
        export_query(db_path(db), query, format.value, sys.stdout if out is None else out,
                     limits, limit=shown_rows(limit, False), shown=tell_shown)
        return
    if answer is None:
        # Only the rows shown are held (the rest counted): a large result within the limits.
        keep = shown_rows(limit, format is Format.table and out is None)
        columns, rows, total = run_query_head(db_path(db), query, keep, limits=limits,
                                              text=format is not Format.parquet)
        if keep and total > keep:
            tell_shown(keep, total)
    else:
        columns, rows = answer["columns"], answer["rows"]
        keep = shown_rows(limit, format is Format.table and out is None)
        if answer["truncated"]:
            # The server's cap cut the answer: rows asked for and missing are an Error, never
            # a short export (an outside review, session 39: 10,000 of 20,000 rows written to
            # parquet, exit 0; a row over 64 MiB printed "No rows").
            got = len(rows)
            if not keep or got < keep:
                raise PitlogError(
                    f"the server's answer was cut at {got:,} rows (it returns at most "
                    f"{answer['max_rows']:,} rows, pitlog serve --sql-max-rows, holding at most "
                    f"64 MiB): fewer than asked for, so nothing was written; narrow the query, "
                    + (f"give --limit N of at most {got:,}, " if got else "")
                    + "or stop the server and query the file")
            typer.echo(f"{keep:,} of more than {got:,} rows shown (the server counts no "
                       f"further): --limit N for more", err=True)
            rows = rows[:keep]
        else:
            rows = limited(rows, limit, format, format is Format.table and out is None)
    render(rows, format, out=out, columns=columns, tz=casino_zone(tz), line_breaks=True)

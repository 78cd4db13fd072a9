"""`pitlog sql QUERY`: an auditor's read-only query over the views.

Two locks, either of which is enough: the query is checked up front (one statement, and only a
query: SELECT, WITH, FROM, VALUES, TABLE, DESCRIBE, SHOW, SUMMARIZE or EXPLAIN of one of
those), and the database is opened read-only. So neither a write to the database nor a side
effect outside it (COPY ... TO, ATTACH, INSTALL, SET) is possible.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb

from events.errors import PitlogError, ProjectionError
from projections.export import Rows
from projections.snapshot import open_for_reading

ALLOWED = ("SELECT", "WITH", "FROM", "VALUES", "TABLE", "DESCRIBE", "SHOW", "SUMMARIZE",
           "EXPLAIN")
_COMMENTS = re.compile(r"(--[^\n]*(\n|$))|(/\*.*?\*/)", re.DOTALL)
_EXPLAIN = re.compile(r"^\s*EXPLAIN(\s+ANALY[SZ]E)?\b", re.IGNORECASE)


class ReadOnlyQueryError(PitlogError):
    """`pitlog sql` was given something other than one read-only query."""


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
        raise ReadOnlyQueryError(
            f"pitlog sql runs read-only queries only; this is a {kind.name} statement")


def run_query(db_path: str | Path, query: str,
              params: list[Any] | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """(column names, rows) of one read-only query on a read-only connection."""
    check_read_only(query)
    con = open_for_reading(db_path)
    try:
        con.execute("SET enable_progress_bar = false")
        try:
            table = con.sql(query, params=params).to_arrow_table()
        except duckdb.Error as exc:
            raise ProjectionError(f"the query failed: {exc}") from exc
        return table.column_names, Rows.of(table)
    finally:
        con.close()

"""The read side's questions, as plain functions over an open connection (the CLI calls these).

Every query is parameterised: user input is bound, never pasted into SQL. Rows are fetched
through Arrow, which gives timezone-aware datetimes without the optional pytz package that
DuckDB's own Python conversion of TIMESTAMPTZ needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb

from events.errors import NotFoundError, ProjectionError
from projections.export import Rows

Row = dict[str, Any]

SHOE_COLUMNS = ("table_id", "shoe_id", "decks", "opened_at", "closed_at", "rounds",
                "cards_dealt", "burns", "cutting_card_reached_at", "dealers")


def rows(con: duckdb.DuckDBPyConnection, sql: str,
         params: Sequence[object] | dict[str, object] | None = None) -> Rows:
    """Run one read-only query with bound parameters; a dict per row (DuckDB's own values,
    not through Arrow: a lookup command must not import pyarrow, issue 19). Through a cursor,
    planned once (export.Rows.of_cursor); a statement that fails, even in binding, ends the
    transaction it runs in, so inside a `pitlog serve` request (one READ ONLY transaction)
    nothing may be read after a failure is caught: check the catalog first instead, as the
    readers of kept tables do (kept_at.tagged, replay.kept_tables_current)."""
    try:
        return Rows.of_cursor(con.execute(sql, params))
    except duckdb.CatalogException as exc:
        raise ProjectionError(
            f"the database has no pitlog views ({exc}); run `pitlog project` first") from exc


def list_shoes(con: duckdb.DuckDBPyConnection, table: str | None = None) -> list[Row]:
    """Every shoe (or one table's), in table order then opening order; an unknown table is
    NotFoundError (require_known)."""
    cols = ", ".join(SHOE_COLUMNS)
    found = rows(con, f"SELECT {cols} FROM shoes WHERE $table IS NULL OR table_id = $table "
                      "ORDER BY table_id, opened_at, shoe_id", {"table": table})
    if not found:
        require_known(con, table=table)
    return found


_TABLE_IDS = "SELECT DISTINCT table_id FROM events WHERE table_id IS NOT NULL ORDER BY 1"
# Whether the store holds an event of the table or shoe: the first row found ends the scan.
_HAS_TABLE = "SELECT 1 FROM events WHERE table_id = $id LIMIT 1"
_HAS_SHOE = "SELECT 1 FROM events WHERE shoe_id = $id LIMIT 1"


def known_tables(con: duckdb.DuckDBPyConnection) -> tuple[str, ...]:
    return tuple(r["table_id"] for r in rows(con, _TABLE_IDS))


def unknown_table_text(table: str, known: tuple[str, ...]) -> str:
    """What to say of a table id the store does not hold: the ids it does, and the one meant
    when only the case differs."""
    near = [t for t in known if t.lower() == table.lower()]
    hint = f" (table ids are case-sensitive: did you mean {near[0]}?)" if near else ""
    listed = ", ".join(known[:20]) or "none"
    more = f" and {len(known) - 20} more" if len(known) > 20 else ""
    return f"no table {table!r} in the store{hint}; known tables: {listed}{more}"


def require_known(con: duckdb.DuckDBPyConnection, *, table: str | None = None,
                  shoe: str | None = None) -> None:
    """NotFoundError when the store holds no event of `table` or of `shoe`: asked by a
    listing whose answer came back empty, so that `--table t01` (a typo, a wrong case) is an
    error naming the tables, never a clean "no rows"."""
    if table is not None and not rows(con, _HAS_TABLE, {"id": table}):
        raise NotFoundError(unknown_table_text(table, known_tables(con)))
    if shoe is not None and not rows(con, _HAS_SHOE, {"id": shoe}):
        raise NotFoundError(f"no shoe {shoe!r} in the store; `pitlog shoes` lists the shoes")

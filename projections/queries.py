"""The read side's questions, as plain functions over an open connection (the CLI calls these).

Every query is parameterised: user input is bound, never pasted into SQL. Rows are fetched
through Arrow, which gives timezone-aware datetimes without the optional pytz package that
DuckDB's own Python conversion of TIMESTAMPTZ needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb

from events.errors import ProjectionError
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
    """Every shoe (or one table's), in table order then opening order."""
    cols = ", ".join(SHOE_COLUMNS)
    return rows(con, f"SELECT {cols} FROM shoes WHERE $table IS NULL OR table_id = $table "
                     "ORDER BY table_id, opened_at, shoe_id", {"table": table})

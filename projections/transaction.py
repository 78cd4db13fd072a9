"""Ending a DuckDB transaction that failed, without hiding why it failed."""

from __future__ import annotations

import duckdb


def roll_back(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back the connection's open transaction, if it still has one. A commit that failed
    (a full disk, a folder where DuckDB cannot create `<db>.wal`) has already ended it: then
    rollback's own "cannot rollback - no transaction is active" would replace the real error
    (it did: `alerts not published yet: TransactionContext Error: cannot rollback ...`)."""
    try:
        con.rollback()
    except duckdb.Error:  # no transaction, or a database invalidated by the failure itself
        pass

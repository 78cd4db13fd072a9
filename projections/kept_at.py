"""The checkpoints a kept table was last brought up to, and the check that they are the store's.

Tables the writer keeps beside the views (the stored anomaly rows, round_money, the running
sums) each have a table of the checkpoints they hold every batch up to, moved in the batch's
transaction. A reader uses a kept table only while those equal the store's `checkpoints`: one
definition of that copy and that comparison, here."""
from __future__ import annotations

import duckdb

# The store's checkpoints, as a kept table's marker holds them.
CHECKPOINTS = "SELECT source, log_partition, next_offset FROM checkpoints"
_COLUMNS = ["source", "log_partition", "next_offset"]


def tagged(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...], tag: str) -> bool:
    """Each of `tables` exists in the main schema and carries the comment `tag`: the definition
    it was made by (the rules' SQL, DuckDB's version...). Through the catalog, not a statement
    that can fail: inside a `pitlog serve` request's transaction a failed statement would abort
    every later one."""
    ((found,),) = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND "
        "schema_name = 'main' AND list_contains($t, table_name) AND comment = $tag",
        {"t": list(tables), "tag": tag}).fetchall()
    return found == len(set(tables))


def mark_sql(at: str) -> str:
    """The statement that makes the marker table `at` hold the store's checkpoints."""
    return f"CREATE OR REPLACE TABLE {at} AS {CHECKPOINTS}"


def current(con: duckdb.DuckDBPyConnection, at: str) -> bool:
    """The marker `at` exists, has the checkpoints' columns and holds the store's checkpoints.

    A missing or misshapen marker (an older pitlog's, a rebuild that stopped) is found through
    the catalog, not by a statement that fails: inside a transaction, as every `pitlog serve`
    request reads, a failed statement aborts the transaction and every later one with it."""
    shape = con.execute(
        "SELECT list(column_name ORDER BY column_index) FROM duckdb_columns() WHERE "
        "database_name = current_database() AND schema_name = 'main' AND table_name = $t",
        {"t": at}).fetchall()
    if shape != [(_COLUMNS,)]:
        return False
    ((behind,),) = con.execute(_behind_sql(at)).fetchall()
    return behind == 0


def _behind_sql(at: str) -> str:
    """One row, one column: how many checkpoints differ between the marker `at` and the
    store's, both ways (0: the kept table holds every committed batch)."""
    return (f"SELECT count(*) FROM (({CHECKPOINTS} EXCEPT SELECT * FROM {at}) "
            f"UNION ALL (SELECT * FROM {at} EXCEPT {CHECKPOINTS}))")

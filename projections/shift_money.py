"""The running sums per table, gaming day and shift (issue 16 item 1): the writer keeps them
beside each round's stored money (projections/round_money.py), so that HOLD_VARIANCE and
`pitlog reconcile --by table|day|shift` sum one row per table, shift and deck-count
denominator instead of one row per round of the store (reconcile.reconcile_sql).

The rows (table `shift_money`) are the reconcile query by table, gaming day and shift over the
stored round_money rows (reconcile.shift_money_sql: one definition of the sums), of the default
calendar (reconcile.Calendar()); their checkpoints (`shift_money_at`) move in the same
transactions as round_money's:

- whole (build), in the transaction that stores a whole build of round_money, or on its own
  when a store's round_money is current but its sums are missing, of another definition or
  behind (a store an older pitlog built or continued);
- per batch (Keeper.apply): the sums of the rows the batch removes (`note`, before they go)
  are taken off, those of the rows it adds put on (`apply`): work that follows the batch's
  rounds, not the shifts or the history. Every sum is of integers, so this is exact; the
  squared deviations, a DOUBLE, gain a rounding error of about 1e-16 of the changed terms
  per change: where the removed squares dwarf what a group keeps
  (RECOUNT_RATIO), or a removed row held its last start (which cannot be taken off), the group
  is summed again from round_money alone (tests/live_support.py compares the DOUBLE to 1e-9).
"""

from __future__ import annotations

import duckdb

from projections.reconcile import (
    ROUND_MONEY,
    SHIFT_KEYS,
    SHIFT_MONEY,
    SHIFT_MONEY_AT,
    SUMMED,
    shift_money_current,
    shift_money_params,
    shift_money_sql,
    shift_money_tag,
)
from projections.transaction import roll_back

DELTA = "pitlog_shift_delta"  # a temporary table: the signed sums of a batch's rows
_AT_OF = "SELECT source, log_partition, next_offset FROM checkpoints"
_SAME_GROUP = " AND ".join(f"s.{k} IS NOT DISTINCT FROM n.{k}"
                           for k in (*SHIFT_KEYS, "theo_den"))
_ADDED = (*SUMMED, "theo_num", "sum_sq_deviation")  # what a change adds to or takes off


def build(con: duckdb.DuckDBPyConnection) -> None:
    """Every group's sums from round_money, tagged, with the checkpoints: within the caller's
    transaction."""
    con.execute(f"CREATE OR REPLACE TABLE {SHIFT_MONEY} AS {shift_money_sql(ROUND_MONEY)}",
                shift_money_params())
    con.execute(f"COMMENT ON TABLE {SHIFT_MONEY} IS '{shift_money_tag()}'")
    mark(con)


def ensure_current(con: duckdb.DuckDBPyConnection) -> None:
    """build, in a transaction of its own, unless the sums are current (round_money must be:
    round_money.ensure_current first)."""
    if shift_money_current(con):
        return
    con.begin()
    try:
        build(con)
        con.commit()
    except BaseException:
        roll_back(con)
        raise


def mark(con: duckdb.DuckDBPyConnection) -> None:
    """The sums hold every committed batch: their checkpoints are the store's."""
    con.execute(f"CREATE OR REPLACE TABLE {SHIFT_MONEY_AT} AS {_AT_OF}")


def note(con: duckdb.DuckDBPyConnection, rounds: str, sign: int) -> None:
    """Adds to DELTA the sums of the round_money rows the query `rounds` selects (the same
    query as the stored sums: shift_money_sql), to be added (`sign` 1: rows a batch adds) or
    taken off (-1: rows it is about to remove)."""
    sums = shift_money_sql(f"({rounds})")
    con.execute(f"CREATE TEMP TABLE IF NOT EXISTS {DELTA} AS SELECT 0 AS sign, * "
                f"FROM ({sums}) LIMIT 0", shift_money_params())
    con.execute(f"INSERT INTO {DELTA} SELECT {int(sign)} AS sign, * FROM ({sums})",
                shift_money_params())


# Taken off a DOUBLE sum, a term leaves a rounding error of about 1e-16 of itself, not of what
# stays: where the squares removed from a group exceed this many times what it keeps, its sum
# could be off by more than about 1e-12 of itself, and the group is summed again instead
# (an outside review: a $1,000 round moved to the shift before left the other group's sum off
# by 4e-9 of itself; at $2M wagers its z changed).
RECOUNT_RATIO = 1e4


def apply(con: duckdb.DuckDBPyConnection) -> None:
    """DELTA into the stored sums, then emptied: per group and denominator, the stored sums
    plus the added less the removed; a group left with no round is dropped. A group is summed
    again from round_money (which holds the batch's rows by now) where a removed row held its
    last start and no added row starts as late (a last start cannot be taken off), or where
    the squares removed dwarf what it keeps (RECOUNT_RATIO)."""
    signed = ", ".join(f"sum(sign * {c}) AS {c}" for c in _ADDED)
    merged = ", ".join(f"coalesce(s.{c}, 0) + n.{c} AS {c}" for c in _ADDED)
    keys = ", ".join(f"n.{k}" for k in (*SHIFT_KEYS, "theo_den"))
    con.execute(f"""CREATE OR REPLACE TEMP TABLE pitlog_shift_merged AS
        WITH n AS (
            SELECT {", ".join((*SHIFT_KEYS, "theo_den"))}, {signed},
                   max(last_at) FILTER (sign > 0) AS added_last,
                   max(last_at) FILTER (sign < 0) AS removed_last,
                   coalesce(sum(sum_sq_deviation) FILTER (sign < 0), 0) AS removed_sq
            FROM {DELTA} GROUP BY ALL)
        SELECT {keys}, {merged}, greatest(s.last_at, n.added_last) AS last_at,
               coalesce(n.removed_last >= s.last_at
                        AND coalesce(n.added_last < n.removed_last, true), false)
               OR n.removed_sq > {RECOUNT_RATIO}
                                 * abs(coalesce(s.sum_sq_deviation, 0) + n.sum_sq_deviation)
                   AS again
        FROM n LEFT JOIN {SHIFT_MONEY} AS s ON {_SAME_GROUP}""")
    con.execute(f"DELETE FROM {SHIFT_MONEY} AS s USING pitlog_shift_merged AS n "
                f"WHERE {_SAME_GROUP}")
    ((again,),) = con.execute("SELECT count(*) FROM pitlog_shift_merged WHERE again"
                              ).fetchall()
    if again:  # rare: see above
        _sum_again(con)
    con.execute(f"INSERT INTO {SHIFT_MONEY} BY NAME SELECT * EXCLUDE (again) "
                f"FROM pitlog_shift_merged WHERE rounds <> 0")
    con.execute(f"DELETE FROM {DELTA}")
    con.execute("DROP TABLE pitlog_shift_merged")


def _sum_again(con: duckdb.DuckDBPyConnection) -> None:
    """The merged groups marked `again`, summed from round_money instead: the same query as
    build's over the rounds of their tables that start from the day before their first gaming
    day to two days after their last (the default calendar's gaming day D starts at D 06:00
    UTC; the margin is for any day start), kept for those groups."""
    lost = "(SELECT * FROM pitlog_shift_merged WHERE again)"
    near = (f"(SELECT * FROM {ROUND_MONEY} WHERE table_id IN (SELECT table_id FROM {lost}) "
            f"AND (started_at IS NULL OR $lo IS NULL "
            f"OR (started_at >= CAST($lo AS TIMESTAMPTZ) - INTERVAL 1 DAY "
            f"AND started_at < CAST($hi AS TIMESTAMPTZ) + INTERVAL 2 DAY)))")
    ((lo, hi),) = con.execute(f"SELECT min(gaming_day), max(gaming_day) FROM {lost}"
                              ).fetchall()
    con.execute(f"""CREATE OR REPLACE TEMP TABLE pitlog_shift_again AS
        SELECT s.* FROM ({shift_money_sql(near)}) AS s SEMI JOIN {lost} AS n ON {_SAME_GROUP}""",
                {**shift_money_params(), "lo": lo, "hi": hi})
    con.execute("DELETE FROM pitlog_shift_merged WHERE again")
    con.execute("INSERT INTO pitlog_shift_merged BY NAME "
                "SELECT *, false AS again FROM pitlog_shift_again")
    con.execute("DROP TABLE pitlog_shift_again")

"""The running sums (issue 16 item 1: "the statistical codes keep running sums per table, shift
and day instead of rescanning"): the writer keeps them beside each round's stored money
(projections/round_money.py), so that the statistical codes and `pitlog reconcile --by
table|day|shift` read one row per group instead of one per round of the store:

- `shift_money`, per table, gaming day, shift and deck-count denominator: the reconcile query's
  sums (reconcile.shift_money_sql), for HOLD_VARIANCE and reconcile;
- `outcome_counts`, per table, deck count and outcome: the rounds and the latest one's start
  (reconcile.outcome_counts_sql), for OUTCOME_FREQUENCY.

Both are of the default calendar's stored round_money rows, one definition each in
projections/reconcile.py; their checkpoints (`running_sums_at`) move in the same transactions
as round_money's:

- whole (build), in the transaction that stores a whole build of round_money, or on its own
  when a store's round_money is current but its sums are missing, of another definition or
  behind (a store an older pitlog built or continued);
- per batch (Keeper.apply): the sums of the rows the batch removes (`note`, before they go)
  are taken off, those of the rows it adds put on (`apply`): work that follows the batch's
  rounds, not the shifts or the history. Every sum is of integers, so this is exact, but
  shift_money's squared deviations, a DOUBLE, gain a rounding error of about 1e-16 of the
  changed terms per change: where the removed squares dwarf what a group keeps
  (RECOUNT_RATIO), or a removed row held a group's last start (which cannot be taken off),
  the group is summed again from round_money alone (tests/live_support.py compares the DOUBLE
  to 1e-9, every other column exactly).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb

from projections.kept_at import mark_sql
from projections.reconcile import (
    OUTCOME_COUNTS,
    OUTCOME_KEYS,
    ROUND_MONEY,
    RUNNING_SUMS_AT,
    SHIFT_KEYS,
    SHIFT_MONEY,
    SUMMED,
    outcome_counts_sql,
    running_sums_current,
    running_sums_tag,
    shift_money_params,
    shift_money_sql,
)
from projections.transaction import roll_back

_LOST = "(SELECT * FROM {merged} WHERE again)"
_ROWS = "pitlog_sums_rows"  # a temporary table: the round rows a note is of


@dataclass(frozen=True)
class Sums:
    """One table of running sums."""

    table: str
    keys: tuple[str, ...]  # a group: one row
    added: tuple[str, ...]  # what a change adds to or takes off
    sql: Callable[[str], str]  # the sums of the round rows of a relation
    params: Callable[[], dict[str, Any]]
    # A group summed again reads round_money's rows near it (SQL over the groups marked
    # `again`, and its parameters): see the instances.
    near: Callable[[duckdb.DuckDBPyConnection, str], tuple[str, dict[str, Any]]]
    square: str | None = None  # a DOUBLE sum of squares (RECOUNT_RATIO)
    rows: str = "rounds"  # what counts a group's rows: at 0 the group is gone

    @property
    def delta(self) -> str:  # a temporary table: the signed sums of a batch's rows
        return f"pitlog_{self.table}_delta"

    @property
    def merged(self) -> str:
        return f"pitlog_{self.table}_merged"

    def same_group(self, a: str, b: str) -> str:
        return " AND ".join(f"{a}.{k} IS NOT DISTINCT FROM {b}.{k}" for k in self.keys)


def _near_days(con: duckdb.DuckDBPyConnection, lost: str) -> tuple[str, dict[str, Any]]:
    """The rounds of the lost groups' tables that start from the day before their first gaming
    day to two days after their last (the default calendar's gaming day D starts at D 06:00
    UTC; the margin is for any day start)."""
    ((lo, hi),) = con.execute(f"SELECT min(gaming_day), max(gaming_day) FROM {lost}").fetchall()
    return (f"(SELECT * FROM {ROUND_MONEY} WHERE table_id IN (SELECT table_id FROM {lost}) "
            f"AND (started_at IS NULL OR $lo IS NULL "
            f"OR (started_at >= CAST($lo AS TIMESTAMPTZ) - INTERVAL 1 DAY "
            f"AND started_at < CAST($hi AS TIMESTAMPTZ) + INTERVAL 2 DAY)))",
            {**shift_money_params(), "lo": lo, "hi": hi})


def _near_tables(con: duckdb.DuckDBPyConnection, lost: str) -> tuple[str, dict[str, Any]]:
    """The rounds of the lost groups' tables (a group holds a table's rounds of any time)."""
    return (f"(SELECT * FROM {ROUND_MONEY} WHERE table_id IN (SELECT table_id FROM {lost}))",
            {})


KEPT = (
    # money_rows: a group of money recorded outside any round alone has no round
    Sums(SHIFT_MONEY, (*SHIFT_KEYS, "theo_den"),
         (*SUMMED, "money_rows", "theo_num", "sum_sq_deviation"), shift_money_sql,
         shift_money_params, _near_days, square="sum_sq_deviation", rows="money_rows"),
    Sums(OUTCOME_COUNTS, OUTCOME_KEYS, ("rounds",), outcome_counts_sql, dict, _near_tables),
)


def build(con: duckdb.DuckDBPyConnection) -> None:
    """Every group's sums from round_money, tagged, with the checkpoints: within the caller's
    transaction."""
    for s in KEPT:
        con.execute(f"CREATE OR REPLACE TABLE {s.table} AS {s.sql(ROUND_MONEY)}", s.params())
        con.execute(f"COMMENT ON TABLE {s.table} IS '{running_sums_tag()}'")
    # The checkpoints of the sums before outcome_counts joined them: read by no one now.
    con.execute("DROP TABLE IF EXISTS shift_money_at")
    mark(con)


def ensure_current(con: duckdb.DuckDBPyConnection) -> None:
    """build, in a transaction of its own, unless the sums are current (round_money must be:
    round_money.ensure_current first)."""
    if running_sums_current(con):
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
    con.execute(mark_sql(RUNNING_SUMS_AT))


def note(con: duckdb.DuckDBPyConnection, rounds: str, sign: int) -> None:
    """Adds to each table's delta the sums of the round_money rows the query `rounds` selects
    (the same queries as the stored sums), to be added (`sign` 1: rows a batch adds) or taken
    off (-1: rows it is about to remove). The rows are selected once, for every table."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_ROWS} AS {rounds}")
    for s in KEPT:
        sums = s.sql(_ROWS)
        con.execute(f"CREATE TEMP TABLE IF NOT EXISTS {s.delta} AS SELECT 0 AS sign, * "
                    f"FROM ({sums}) LIMIT 0", s.params())
        con.execute(f"INSERT INTO {s.delta} SELECT {int(sign)} AS sign, * FROM ({sums})",
                    s.params())
    con.execute(f"DROP TABLE {_ROWS}")


# Taken off a DOUBLE sum, a term leaves a rounding error of about 1e-16 of itself, not of what
# stays: where the squares removed from a group exceed this many times what it keeps, its sum
# could be off by more than about 1e-12 of itself, and the group is summed again instead
# (an outside review: a $1,000 round moved to the shift before left the other group's sum off
# by 4e-9 of itself; at $2M wagers its z changed).
RECOUNT_RATIO = 1e4


def apply(con: duckdb.DuckDBPyConnection) -> None:
    """Each table's delta into its stored sums, then emptied: per group, the stored sums plus
    the added less the removed; a group left with no row (Sums.rows) is dropped. A group is
    summed again from round_money (which holds the batch's rows by now) where a removed row
    held its last start and no added row starts as late (a last start cannot be taken off), or
    where the squares removed dwarf what it keeps (RECOUNT_RATIO)."""
    for s in KEPT:
        _apply(con, s)


def _apply(con: duckdb.DuckDBPyConnection, s: Sums) -> None:
    signed = ", ".join(f"sum(sign * {c}) AS {c}" for c in s.added)
    merged = ", ".join(f"coalesce(s.{c}, 0) + n.{c} AS {c}" for c in s.added)
    keys = ", ".join(f"n.{k}" for k in s.keys)
    removed_sq, dwarfed = "", ""
    if s.square is not None:
        removed_sq = f", coalesce(sum({s.square}) FILTER (sign < 0), 0) AS removed_sq"
        dwarfed = (f" OR n.removed_sq > {RECOUNT_RATIO} "
                   f"* abs(coalesce(s.{s.square}, 0) + n.{s.square})")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {s.merged} AS
        WITH n AS (
            SELECT {", ".join(s.keys)}, {signed},
                   max(last_at) FILTER (sign > 0) AS added_last,
                   max(last_at) FILTER (sign < 0) AS removed_last{removed_sq}
            FROM {s.delta} GROUP BY ALL)
        SELECT {keys}, {merged}, greatest(s.last_at, n.added_last) AS last_at,
               coalesce(n.removed_last >= s.last_at
                        AND coalesce(n.added_last < n.removed_last, true), false){dwarfed}
                   AS again
        FROM n LEFT JOIN {s.table} AS s ON {s.same_group("s", "n")}""")
    con.execute(f"DELETE FROM {s.table} AS s USING {s.merged} AS n "
                f"WHERE {s.same_group('s', 'n')}")
    ((again,),) = con.execute(f"SELECT count(*) FROM {s.merged} WHERE again").fetchall()
    if again:  # rare: see above
        _sum_again(con, s)
    con.execute(f"INSERT INTO {s.table} BY NAME SELECT * EXCLUDE (again) "
                f"FROM {s.merged} WHERE {s.rows} <> 0")
    con.execute(f"DELETE FROM {s.delta}")
    con.execute(f"DROP TABLE {s.merged}")


def _sum_again(con: duckdb.DuckDBPyConnection, s: Sums) -> None:
    """The merged groups marked `again`, summed from round_money instead: the same query as
    build's over the rounds near them (Sums.near), kept for those groups."""
    lost = _LOST.format(merged=s.merged)
    rounds, params = s.near(con, lost)
    con.execute(f"""CREATE OR REPLACE TEMP TABLE pitlog_sums_again AS
        SELECT s.* FROM ({s.sql(rounds)}) AS s SEMI JOIN {lost} AS n
        ON {s.same_group("s", "n")}""", params)
    con.execute(f"DELETE FROM {s.merged} WHERE again")
    con.execute(f"INSERT INTO {s.merged} BY NAME SELECT *, false AS again FROM pitlog_sums_again")
    con.execute("DROP TABLE pitlog_sums_again")

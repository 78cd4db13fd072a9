"""The writer serves the reads (docs/architecture.md, principles 6-7): one stored row per round
with its money (table `round_money`), so a gaming day's reconciliation sums that day's rows
instead of computing the `rounds` and `ledger` views over every round of the store.

The rows are the round_money query of sql/reconcile.sql (reconcile.round_money_sql), the same
query reconcile runs over the views when the table is absent or behind: one definition of a
round's money. They are kept as the stored anomaly rows are (projections/incremental.py):

- whole (build_whole), when a store is opened to project and the table is missing, built by
  another definition (reconcile.round_money_tag) or behind its checkpoints;
- per batch (Keeper), in the batch's own transaction: the detector's plan says, per touched
  table, from which seq K on anything can change (the shoe-level stretch: every shoe lies
  wholly before K or from K on). The rows of the rounds with an event at or after K are
  replaced by the round_money query over the detector's window of those events, whose
  context before K is the paytables, the shoes' state, earlier copies of a card and, added
  here, the dealers' taps (ROUND_MONEY_TAPS: the rounds view's dealer is the table's latest
  DealerTappedIn at or before the round, however long ago). A round still in play has a row
  like any other and is replaced with its shoe's stretch when its next event comes.

The checkpoints the rows hold (reconcile.ROUND_MONEY_AT) advance in the same transaction, and
only while every batch was applied: a batch projected without detection, or whose detection
ran out of memory, leaves them behind, and readers then use the views until the next open
rebuilds the table.
"""

from __future__ import annotations

import weakref

import duckdb

from events.errors import ProjectionError
from projections.incremental import ROUND_LEVEL_STRETCH, SCRATCH
from projections.memory import threads_at_most
from projections.reconcile import (
    ROUND_MONEY,
    ROUND_MONEY_AT,
    load_edges,
    round_money_sql,
    round_money_tag,
    stored_money_current,
)
from projections.reddog_macros import macros_sql
from projections.views import SQL_DIR, VIEW_FILES

ROUND_MONEY_TAPS = "round_money_taps"
_TAPS_OF = "SELECT * FROM {src} WHERE event_type = 'DealerTappedIn'"
_AT_OF = "SELECT source, log_partition, next_offset FROM checkpoints"
# The catalog of the batch's window views (Keeper._ready): `events` is the detector's rounds
# window and the taps before K; the view files up to the ledger are created over it.
WINDOW = "pitlog_money"
_WINDOW_FILES = VIEW_FILES[:VIEW_FILES.index("ledger.sql") + 1]


def build_whole(con: duckdb.DuckDBPyConnection) -> None:
    """round_money from the views, with its taps and checkpoints, in one transaction. On one
    thread: the rounds' list and ordered aggregates do not spill, and under the writer's
    memory limit two threads' shares of them ran out at 10M events (reconcile.run_rows)."""
    load_edges(con)
    con.begin()
    try:
        with threads_at_most(con, 1):
            # In time order: a day's rows then lie in a few row groups (by_round's bounds).
            con.execute(f"CREATE OR REPLACE TABLE {ROUND_MONEY} AS "
                        f"SELECT * FROM ({round_money_sql()}) ORDER BY started_at, table_id")
        con.execute(f"COMMENT ON TABLE {ROUND_MONEY} IS '{round_money_tag()}'")
        con.execute(f"CREATE OR REPLACE TABLE {ROUND_MONEY_TAPS} AS "
                    f"{_TAPS_OF.format(src='events')}")
        con.execute(f"CREATE OR REPLACE TABLE {ROUND_MONEY_AT} AS {_AT_OF}")
        con.commit()
    except BaseException:
        try:
            con.rollback()
        except duckdb.Error:
            pass
        raise


def ensure_current(con: duckdb.DuckDBPyConnection) -> bool:
    """build_whole unless the stored rows are current and their taps there; True when built.
    Running out of memory leaves the store as it was (readers use the views): the projection
    itself goes on."""
    names = {t for (t,) in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main'").fetchall()}
    if (ROUND_MONEY_TAPS in names and _columns(con, ROUND_MONEY_TAPS) == _columns(con, "events")
            and stored_money_current(con)):
        return False
    try:
        build_whole(con)
    except duckdb.OutOfMemoryException:
        return False
    return True


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    """A table's columns and types in order: the taps are copies of `events` rows, so a schema
    that gained a column (schemas/*.avsc evolved, store.ensure_schema) needs them copied again."""
    return [(str(n), str(t)) for n, t in con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = "
        "current_database() AND schema_name = 'main' AND table_name = ? ORDER BY column_index",
        [table]).fetchall()]


class Keeper:
    """Replaces a batch's rounds' rows: evaluated before the batch's transaction (evaluate,
    after the detector's), written inside it (apply, after the detector's)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        ((database,),) = con.execute("SELECT current_database()").fetchall()
        self.db = '"' + database.replace('"', '""') + '"'
        self.cur: duckdb.DuckDBPyConnection | None = None
        # False once a batch was committed without its rows (no detection for it): the
        # checkpoints then stay behind, and readers use the views until a rebuild.
        self.live = not ROUND_LEVEL_STRETCH  # rounds may straddle a round-level K
        self.found = False

    def _ready(self) -> duckdb.DuckDBPyConnection:
        if self.cur is not None:
            return self.cur
        cur = self.con.cursor()
        cur.execute(f"DETACH DATABASE IF EXISTS {WINDOW}")
        cur.execute(f"ATTACH ':memory:' AS {WINDOW}")
        cur.execute(f"USE {WINDOW}")
        # The taps before K of each table whose window starts at K (K NULL: the window is the
        # whole table, taps included); a tap also in the window is the same row twice, and the
        # rounds view's as-of look-up gives the same dealer either way.
        cur.execute(f"""CREATE VIEW events AS
            SELECT * FROM {SCRATCH}.main.events
            UNION ALL BY NAME
            SELECT t.* FROM {self.db}.main.{ROUND_MONEY_TAPS} AS t
            JOIN {SCRATCH}.main.scope AS sc USING (table_id) WHERE t.seq < sc.k""")
        try:
            cur.execute(macros_sql())
            for name in _WINDOW_FILES:
                cur.execute((SQL_DIR / name).read_text())
        except (OSError, duckdb.Error) as exc:
            raise ProjectionError(f"cannot create the round money window views ({exc})") from exc
        self.cur = cur
        return cur

    def evaluate(self) -> None:
        """The rows of the rounds from each scope's K on (the detector's scope table and
        window, Detector.evaluate) into WINDOW.found."""
        if not self.live:
            return
        cur = self._ready()
        load_edges(cur)  # the edges of the window's decks and paytables, on this cursor
        cur.execute(f"""CREATE OR REPLACE TABLE {WINDOW}.main.found AS
            SELECT m.* FROM ({round_money_sql()}) AS m
            JOIN {SCRATCH}.main.scope AS sc USING (table_id)
            WHERE sc.k IS NULL OR m.first_seq >= sc.k""")
        self.found = True

    def skip(self) -> None:
        """A batch committed without detection: its rounds' rows are not replaced, so the
        stored rows fall behind for good (until the next open rebuilds them)."""
        self.live = False

    def apply(self, con: duckdb.DuckDBPyConnection, changed: bool) -> None:
        """Inside the batch's transaction, after the detector's apply: replace the rows of the
        rounds with an event from K on, add the batch's taps (`pitlog_batch`, when `changed`),
        and mark the rows current."""
        if not self.live:
            return
        if changed:
            if not self.found:
                raise ProjectionError("round_money: a batch applied before it was evaluated")
            con.execute(f"""DELETE FROM {ROUND_MONEY} AS r USING {SCRATCH}.main.scope AS sc
                            WHERE r.table_id = sc.table_id
                              AND (sc.k IS NULL OR r.last_seq >= sc.k)""")
            con.execute(f"INSERT INTO {ROUND_MONEY} SELECT * FROM {WINDOW}.main.found")
            con.execute(f"INSERT INTO {ROUND_MONEY_TAPS} BY NAME "
                        f"{_TAPS_OF.format(src='pitlog_batch')}")
            self.found = False
        con.execute(f"DELETE FROM {ROUND_MONEY_AT}")
        con.execute(f"INSERT INTO {ROUND_MONEY_AT} {_AT_OF}")

    def close(self) -> None:
        if self.cur is not None:
            self.cur.close()
            self.con.execute(f"DETACH DATABASE IF EXISTS {WINDOW}")
            self.cur = None


_KEEPERS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, Keeper] = \
    weakref.WeakKeyDictionary()


def keeper_for(con: duckdb.DuckDBPyConnection) -> Keeper:
    """The connection's keeper, with the stored rows current first (ensure_current). A keeper
    that stopped keeping them (Keeper.skip) is replaced after the rebuild."""
    keeper = _KEEPERS.get(con)
    if ensure_current(con) or keeper is None or not keeper.live:
        if keeper is not None:
            keeper.close()
        keeper = _KEEPERS[con] = Keeper(con)
        # A rebuild that ran out of memory: nothing to keep, and nothing marked current.
        keeper.live = keeper.live and stored_money_current(con)
    return keeper

"""The writer serves the reads (docs/architecture.md, principles 6-7): one stored row per round
with its money (table `round_money`), so a gaming day's reconciliation sums that day's rows
instead of computing the `rounds` and `ledger` views over every round of the store.

The rows are the round_money query of sql/reconcile.sql (reconcile.round_money_sql), the same
query reconcile runs over the views when the table is absent or behind: one definition of a
round's money. They are kept as the stored anomaly rows are (projections/incremental.py):

- whole (build_whole), when a store is opened to project and the table is missing, built by
  another definition (reconcile.round_money_tag) or behind its checkpoints: in steps, a group
  of whole tables at a time (a round's money is decided within its table: its own events and
  its table's taps, openings, loads and card ids, as REDO below relies on too), so that a stop
  between two steps ends it (`pitlog serve`, `project --follow`);
- per batch (Keeper), in the batch's own transaction: the detector's plan says, per touched
  table, from which seq K on anything can change (the shoe-level stretch: every shoe lies
  wholly before K or from K on; K reaches back to an earlier shoe whose rounds a card from K on
  is stamped among, incremental._stretch_start, so no round before K reads a card from K on).
  Of the rounds from K on, only those whose money the batch can change are computed again
  (REDO below) and their rows replaced, by the round_money query over the events they need
  of the detector's window (NEED below), plus the dealers' taps before K (ROUND_MONEY_TAPS:
  the rounds view's dealer is the table's latest DealerTappedIn at or before the round,
  however long ago). A table the detector evaluates whole (k NULL: a new table, or one whose
  stream went back in seq) has all its rounds computed again. A round still in play has a row
  like any other and is replaced when its next event comes.

Which rounds the batch can change, when the table's batch is an in-order append (every new seq
after every stored one, which is what a K from the detector's plan means). A round's money is
its own events (the rounds and ledger views group by round) and, outside them: the dealer and
the paytable (the latest tap and TableOpened at or before its first card, or its first seq while
no card is out: a new one, at a later seq than every stored event, is in force only for rounds
whose first card is in the batch, or that start in it), the shoe's
deck count (its first CardsLoaded: a batch that loads a shoe redoes the shoe's rounds), one
copy of each card event id (the first copy: an earlier seq, so never a batch's), and whether a
card of another round, or of none, came out inside it in game order (ledger.sql `intruded`,
sql/intruders.sql: a round's span from its first card to its end, the card matched to the
latest span that began before it; a burn to every span around it). Game order is occurred_at
before seq, so a batch's line can fall inside an earlier round. Each round's extent [lo, hi],
the least and greatest game order of its events, contains that span; so the batch changes a
round only if the round has a batch event, its shoe is loaded in the batch, a tap or opening of
the batch comes before its first seq (or card), or its extent reaches T1, the least game order
of those rounds' extents (after the batch) and of the batch's cards outside any round: the
rounds with hi >= T1 (REDO; the others named reach it too). Those rounds' rows follow from their own
events, the events outside rounds, the taps, openings and loads, the other copies of their card
ids, and the events of every round whose extent reaches the least lo of REDO (T2): a card
inside a REDO round, or a span it could be matched to, belongs to such a round. A round's
extent only grows with its events, so a round that reaches neither threshold cannot matter; and
any other round appearing in part (a copy of a card id, a tap with a round number) has a span
inside its own extent, so it is never the one a REDO round's card is matched to.

The checkpoints the rows hold (reconcile.ROUND_MONEY_AT) advance in the same transaction, and
only while every batch was applied: a batch projected without detection, or whose detection
ran out of memory, leaves them behind, and readers then use the views until the next open
rebuilds the table.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import duckdb
import pyarrow as pa

from events.errors import ProjectionError
from projections import running_sums, view_cache
from projections.anomalies import GROUP_EVENTS, table_groups
from projections.detect_rounds import MONEY_SQL, MONEY_TYPES
from projections.incremental import ROUND_LEVEL_STRETCH, SCRATCH
from projections.kept_at import CHECKPOINTS, mark_sql
from projections.memory import threads_at_most
from projections.reconcile import (
    ROUND_MONEY,
    ROUND_MONEY_AT,
    load_edges,
    round_money_sql,
    round_money_tag,
    running_sums_current,
    stored_money_current,
)
from projections.reddog_macros import macros_sql
from projections.transaction import roll_back
from projections.views import SQL_DIR, VIEW_FILES

ROUND_MONEY_TAPS = "round_money_taps"
_TAPS_OF = "SELECT * FROM {src} WHERE event_type = 'DealerTappedIn'"
# The catalog of the batch's window (Keeper._ready): `events` holds the events the rounds to
# redo need (NEED) and the taps before K; the view files up to the ledger are created over it.
WINDOW = "pitlog_money"
WINDOW_VIEWS = "pitlog_money_views"
_WINDOW_FILES = VIEW_FILES[:VIEW_FILES.index("ledger.sql") + 1]
_BATCH = "pitlog_money_batch"
# Events that are context for every round of a table (the module docstring): kept whole.
_CONTEXT_TYPES = "('TableOpened', 'CardsLoaded', 'DealerTappedIn')"
# The rounds whose money the batch can change, per table evaluated from K (module docstring):
# `redo` true for those, false for the other rounds whose events their rows need; one row per
# round of the window that reaches T2. Tables evaluated whole are not here.
REDO = f"""
CREATE OR REPLACE TABLE {WINDOW}.main.redo AS
WITH win AS (
    SELECT e.table_id, e.shoe_id, e.round_no, e.seq, game_order(e.occurred_at, e.seq) AS o
    FROM {SCRATCH}.main.events AS e JOIN {SCRATCH}.main.scope AS sc USING (table_id)
    WHERE sc.k IS NOT NULL AND e.round_no IS NOT NULL
),
extents AS (
    SELECT table_id, shoe_id, round_no, min(o) AS lo, max(o) AS hi, min(seq) AS first_seq
    FROM win GROUP BY ALL
),
new AS (
    SELECT b.table_id, b.shoe_id, b.round_no, b.seq, b.event_type,
           game_order(b.occurred_at, b.seq) AS o
    FROM {_BATCH} AS b JOIN {SCRATCH}.main.scope AS sc USING (table_id)
    WHERE sc.k IS NOT NULL
),
changed AS (
    -- a batch event in the round; a load of its shoe; a tap or an opening at or before it
    SELECT x.table_id, x.lo FROM extents AS x SEMI JOIN new AS n
        ON n.table_id = x.table_id AND n.shoe_id IS NOT DISTINCT FROM x.shoe_id
       AND (n.round_no = x.round_no OR n.event_type = 'CardsLoaded')
    UNION ALL
    SELECT x.table_id, x.lo FROM extents AS x SEMI JOIN new AS n
        ON n.table_id = x.table_id AND n.event_type IN ('TableOpened', 'DealerTappedIn')
       AND x.first_seq >= n.seq
    UNION ALL  -- a card out of no round, inside whichever round it falls in
    SELECT table_id, o FROM new WHERE round_no IS NULL AND is_card_event(event_type)
),
t1 AS (SELECT table_id, min(lo) AS t1 FROM changed GROUP BY ALL),
marked AS (
    SELECT x.*, x.hi >= t1.t1 AS redo FROM extents AS x JOIN t1 USING (table_id)
),
t2 AS (SELECT table_id, min(lo) AS t2 FROM marked WHERE redo GROUP BY ALL)
SELECT m.table_id, m.shoe_id, m.round_no, m.first_seq, m.redo
FROM marked AS m JOIN t2 USING (table_id) WHERE m.hi >= t2.t2
"""
# The window's events the rounds of REDO need (module docstring), the tables evaluated whole,
# and the taps before K of the tables evaluated from K (K NULL: the window is the whole table,
# taps included).
NEED = f"""
INSERT INTO {WINDOW}.main.events BY NAME
WITH marked AS MATERIALIZED (  -- each window event's row id and whether it is kept
    SELECT e.rowid AS rid, e.table_id, e.event_id, e.event_type, sc.k IS NOT NULL AS narrow,
           sc.k IS NULL OR x.table_id IS NOT NULL
           OR (t.table_id IS NOT NULL
               AND (e.round_no IS NULL OR e.event_type IN {_CONTEXT_TYPES})) AS kept
    FROM {SCRATCH}.main.events AS e JOIN {SCRATCH}.main.scope AS sc USING (table_id)
    LEFT JOIN (SELECT DISTINCT table_id FROM {WINDOW}.main.redo) AS t USING (table_id)
    LEFT JOIN {WINDOW}.main.redo AS x ON x.table_id = e.table_id
     AND x.shoe_id IS NOT DISTINCT FROM e.shoe_id AND x.round_no = e.round_no
),
ids AS (  -- the kept card events' ids: every copy of them (card_events_of keeps the first)
    SELECT DISTINCT table_id, event_id FROM marked
    WHERE kept AND narrow AND is_card_event(event_type) AND event_id IS NOT NULL
),
chosen AS (
    SELECT m.rid FROM marked AS m
    LEFT JOIN ids AS i ON i.table_id = m.table_id AND i.event_id = m.event_id
     AND is_card_event(m.event_type)
    WHERE m.kept OR i.table_id IS NOT NULL
)
SELECT e.* FROM {SCRATCH}.main.events AS e SEMI JOIN chosen AS c ON e.rowid = c.rid
UNION ALL BY NAME
SELECT t.* FROM {{db}}.main.{ROUND_MONEY_TAPS} AS t
JOIN {SCRATCH}.main.scope AS sc USING (table_id) WHERE t.seq < sc.k
"""
# The rows to store: every round of a table evaluated whole, the rounds of REDO from K on.
FOUND = f"""
CREATE OR REPLACE TABLE {WINDOW}.main.found AS
SELECT m.* FROM ({{round_money}}) AS m
JOIN {SCRATCH}.main.scope AS sc USING (table_id)
LEFT JOIN {WINDOW}.main.redo AS r
    ON r.redo AND r.table_id = m.table_id AND r.shoe_id IS NOT DISTINCT FROM m.shoe_id
   AND r.round_no = m.round_no
WHERE sc.k IS NULL OR (m.first_seq >= sc.k AND r.redo)
"""

# Money recorded outside any round (round_no NULL: the round_money query's rows of their own,
# one per ledger row) on a table evaluated from K. Such a row is decided by its own events
# alone (the ledger's wagers and settlements with no round: no card, paytable, dealer or
# choice joins them), which may lie anywhere in the table's history, before K too. So when the
# batch brings one to a table and shoe, that table and shoe's outside rows are computed again
# from all their outside events, stored and new: the few events of an irregularity, read from
# the store by a filter, never the window's rounds.
OUTSIDE = f"""
CREATE OR REPLACE TABLE {WINDOW}.main.outside AS
SELECT DISTINCT b.table_id, b.shoe_id
FROM {_BATCH} AS b JOIN {SCRATCH}.main.scope AS sc USING (table_id)
WHERE sc.k IS NOT NULL AND b.round_no IS NULL AND b.event_type IN {MONEY_SQL}
"""
OUTSIDE_EVENTS = f"""
INSERT INTO {WINDOW}.main.events BY NAME
SELECT e.* FROM {{db}}.main.events AS e SEMI JOIN {WINDOW}.main.outside AS o
    ON o.table_id = e.table_id AND o.shoe_id IS NOT DISTINCT FROM e.shoe_id
WHERE e.round_no IS NULL AND e.event_type IN {MONEY_SQL}
UNION ALL BY NAME
SELECT b.* FROM {_BATCH} AS b SEMI JOIN {WINDOW}.main.outside AS o
    ON o.table_id = b.table_id AND o.shoe_id IS NOT DISTINCT FROM b.shoe_id
WHERE b.round_no IS NULL AND b.event_type IN {MONEY_SQL}
"""
# Over those events alone the query has no round, so its rows are the outside rows asked for.
OUTSIDE_FOUND = (f"INSERT INTO {WINDOW}.main.found "
                 f"SELECT * FROM ({{round_money}}) WHERE round_no IS NULL")


# The stored rows a batch replaces (Keeper.apply), as (USING, WHERE) of the row `r`: every row of
# a table evaluated whole, the rows of REDO's rounds from K on, and the outside rows of a table
# and shoe in OUTSIDE (the last, only for a batch with such money: Keeper.outside).
_REPLACED = (
    (f"{SCRATCH}.main.scope AS sc", "r.table_id = sc.table_id AND sc.k IS NULL"),
    (f"{SCRATCH}.main.scope AS sc, {WINDOW}.main.redo AS x",
     "r.table_id = sc.table_id AND r.last_seq >= sc.k AND x.redo AND x.table_id = r.table_id "
     "AND x.round_no = r.round_no AND x.shoe_id IS NOT DISTINCT FROM r.shoe_id"),
    (f"{WINDOW}.main.outside AS o",
     "r.round_no IS NULL AND r.table_id = o.table_id AND r.shoe_id IS NOT DISTINCT FROM o.shoe_id"),
)


# The whole build's rows so far, in the store (not in memory: 578,000 rounds at 10M events),
# never read as round_money: the last step copies them there in time order and marks them
# current in one transaction, and a stop drops them (a kill leaves them to the next build, which
# starts them again).
ROUND_MONEY_BUILD = "round_money_build"
# The catalog where the views up to the ledger are created over one group's events.
_BUILD_SCOPE = "pitlog_money_build"


def _create_views(cur: duckdb.DuckDBPyConnection, what: str) -> None:
    """The macros and the view files up to the ledger, in `cur`'s default catalog, over the
    `events` it holds."""
    try:
        cur.execute(macros_sql())
        for name in _WINDOW_FILES:
            cur.execute((SQL_DIR / name).read_text())
    except (OSError, duckdb.Error) as exc:
        raise ProjectionError(f"cannot create the round money {what} views ({exc})") from exc


def build_whole(con: duckdb.DuckDBPyConnection, max_events: int | None = None,
                progress: Callable[[int, int], None] | None = None) -> None:
    """round_money from the views, with its taps and checkpoints, in steps: one per group of
    whole tables of at most `max_events` events (by default anomalies.GROUP_EVENTS, the
    anomaly rows' groups: a step then needs as much memory at 10M events as at 1M), then the
    last, which stores them in time order and marks them current in one transaction. The rows
    are those of the one query over the store's views (a round's money is decided within its
    table: module docstring).
    `progress(done, total)` is called after each step (the last one's before its commit), so
    an exception it raises (a follower told to stop) ends the build within a step with nothing
    marked current and ROUND_MONEY_BUILD dropped (an empty store has no step to report). Each
    group's query on one thread: the rounds' list and ordered aggregates do not spill, and under
    the writer's memory limit two threads' shares of them ran out at 10M events in one query
    (reconcile.run_rows)."""
    groups = table_groups(con, GROUP_EVENTS if max_events is None else max_events)
    steps = len(groups) + 1
    if not groups:  # an empty store (a first `project`): nothing to follow, no bar to show
        progress = None
    ((database,),) = con.execute("SELECT current_database()").fetchall()
    db = '"' + database.replace('"', '""') + '"'
    source, build = f"{db}.main.events", f"{db}.main.{ROUND_MONEY_BUILD}"
    cur = con.cursor()  # its own default catalog: USE below leaves `con`'s alone
    try:
        cur.execute(f"DETACH DATABASE IF EXISTS {_BUILD_SCOPE}")
        cur.execute(f"ATTACH ':memory:' AS {_BUILD_SCOPE}")
        cur.execute(f"CREATE VIEW {_BUILD_SCOPE}.main.events AS SELECT * FROM {source} "
                    f"WHERE false")
        # The views over it, bound once per definition (projections/view_cache.py).
        view_cache.attach_views(cur, f"{_BUILD_SCOPE}_views",
                                f"SELECT * FROM {_BUILD_SCOPE}.main.events",
                                lambda c: _create_views(c, "build"),
                                "round money views: " + ", ".join(_WINDOW_FILES))
        load_edges(cur)
        cur.execute(f"CREATE OR REPLACE TABLE {build} AS SELECT * FROM ({round_money_sql()}) "
                    f"LIMIT 0")
        with threads_at_most(con, 1):
            for done, group in enumerate(groups, 1):
                cur.execute(f"CREATE OR REPLACE VIEW {_BUILD_SCOPE}.main.events AS "
                            f"SELECT * FROM {source} WHERE {group.predicate()}")
                load_edges(cur)  # the group's decks and paytables
                cur.execute(f"INSERT INTO {build} SELECT * FROM ({round_money_sql()})")
                if progress is not None:
                    progress(done, steps)
        _store_built(con, lambda: progress(steps, steps) if progress is not None else None)
    except BaseException:
        try:
            con.execute(f"DROP TABLE IF EXISTS {ROUND_MONEY_BUILD}")
        except duckdb.Error:
            pass
        raise
    finally:
        cur.close()
        con.execute(f"DETACH DATABASE IF EXISTS {_BUILD_SCOPE}_views")
        con.execute(f"DETACH DATABASE IF EXISTS {_BUILD_SCOPE}")


def _store_built(con: duckdb.DuckDBPyConnection, before_commit: Callable[[], None]) -> None:
    """The last step: the built rows as round_money, in time order (a day's rows then lie in a
    few row groups: by_round's bounds), with the taps and checkpoints, in one transaction."""
    con.begin()
    try:
        con.execute(f"CREATE OR REPLACE TABLE {ROUND_MONEY} AS SELECT * FROM {ROUND_MONEY_BUILD} "
                    f"ORDER BY started_at, table_id")
        con.execute(f"DROP TABLE {ROUND_MONEY_BUILD}")
        con.execute(f"COMMENT ON TABLE {ROUND_MONEY} IS '{round_money_tag()}'")
        con.execute(f"CREATE OR REPLACE TABLE {ROUND_MONEY_TAPS} AS "
                    f"{_TAPS_OF.format(src='events')}")
        con.execute(mark_sql(ROUND_MONEY_AT))
        running_sums.build(con)  # the running sums of the rows just stored
        before_commit()
        con.commit()
    except BaseException:
        roll_back(con)
        raise


def ensure_current(con: duckdb.DuckDBPyConnection,
                   progress: Callable[[int, int], None] | None = None) -> bool:
    """build_whole (with `progress`) unless the stored rows are current and their taps there;
    True when built. Running out of memory leaves the store as it was (readers use the views):
    the projection itself goes on."""
    names = {t for (t,) in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main'").fetchall()}
    if (ROUND_MONEY_TAPS in names and _columns(con, ROUND_MONEY_TAPS) == _columns(con, "events")
            and stored_money_current(con)):
        try:  # the running sums, when an older pitlog built or continued the store
            running_sums.ensure_current(con)
        except duckdb.OutOfMemoryException:
            pass  # readers sum the round rows; the next open tries again
        return False
    try:
        build_whole(con, progress=progress)
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


def _money_with_no_round(batch: pa.Table) -> bool:
    """The batch (its decoded rows) has a wager or settlement with no round, read from its
    Arrow columns, not by a statement."""
    import pyarrow.compute as pc

    found = pc.any(pc.and_(pc.is_null(batch["round_no"]),
                           pc.is_in(batch["event_type"], pa.array(MONEY_TYPES))))
    return bool(found.as_py())


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
        # The batch evaluated has a wager or settlement with no round (OUTSIDE): the usual
        # batch has none, and then pays none of OUTSIDE's statements, here or in apply.
        self.outside = False
        # The running sums are kept while they are current (keeper_for: after ensure_current,
        # which builds them unless that ran out of memory); else they stay behind, read by no
        # one, until the next open builds them.
        self.sums = running_sums_current(con)

    def _ready(self) -> duckdb.DuckDBPyConnection:
        if self.cur is not None:
            return self.cur
        cur = self.con.cursor()
        cur.execute(f"DETACH DATABASE IF EXISTS {WINDOW}")
        cur.execute(f"ATTACH ':memory:' AS {WINDOW}")
        cur.execute(f"USE {WINDOW}")
        # Filled per batch (evaluate); a table, so the views' many scans of it read rows
        # already chosen.
        cur.execute(f"CREATE TABLE events AS SELECT * FROM {self.db}.main.events LIMIT 0")
        cur.execute("CREATE TABLE redo (table_id VARCHAR, shoe_id VARCHAR, round_no BIGINT, "
                    "first_seq BIGINT, redo BOOLEAN)")
        # The views over it, bound once per definition (projections/view_cache.py); `cur`
        # uses their catalog from here on, so the window's own tables are named in full.
        view_cache.attach_views(cur, WINDOW_VIEWS, f"SELECT * FROM {WINDOW}.main.events",
                                lambda c: _create_views(c, "window"),
                                "round money views: " + ", ".join(_WINDOW_FILES))
        self.cur = cur
        return cur

    def evaluate(self, batch: pa.Table) -> None:
        """The rows of the rounds the batch (its decoded rows) can change, from each scope's
        K on (the detector's scope table and window, Detector.evaluate), into WINDOW.found."""
        if not self.live:
            return
        cur = self._ready()
        self.outside = _money_with_no_round(batch)
        cur.register(_BATCH, batch)
        try:
            cur.execute(REDO)
            cur.execute(f"DELETE FROM {WINDOW}.main.events")
            cur.execute(NEED.format(db=self.db))
            load_edges(cur)  # the edges of the window's decks and paytables, on this cursor
            cur.execute(FOUND.format(round_money=round_money_sql()))
            if self.outside:
                cur.execute(OUTSIDE)
                cur.execute(f"DELETE FROM {WINDOW}.main.events")
                cur.execute(OUTSIDE_EVENTS.format(db=self.db))
                cur.execute(OUTSIDE_FOUND.format(round_money=round_money_sql()))
        finally:
            cur.unregister(_BATCH)
        self.found = True

    def skip(self) -> None:
        """A batch committed without detection: its rounds' rows are not replaced, so the
        stored rows fall behind for good (until the next open rebuilds them)."""
        self.live = False

    def apply(self, con: duckdb.DuckDBPyConnection, changed: bool) -> None:
        """Inside the batch's transaction, after the detector's apply: replace the rows of the
        rounds evaluated (REDO from K on; every round of a table evaluated whole), add the
        batch's taps (`pitlog_batch`, when `changed`), and mark the rows current."""
        if not self.live:
            return
        if changed:
            if not self.found:
                raise ProjectionError("round_money: a batch applied before it was evaluated")
            for using, where in _REPLACED if self.outside else _REPLACED[:-1]:
                if self.sums:  # the running sums of the rows about to go, to take off
                    running_sums.note(con, f"SELECT r.* FROM {ROUND_MONEY} AS r, {using} "
                                          f"WHERE {where}", -1)
                con.execute(f"DELETE FROM {ROUND_MONEY} AS r USING {using} WHERE {where}")
            con.execute(f"INSERT INTO {ROUND_MONEY} SELECT * FROM {WINDOW}.main.found")
            con.execute(f"INSERT INTO {ROUND_MONEY_TAPS} BY NAME "
                        f"{_TAPS_OF.format(src='pitlog_batch')}")
            if self.sums:  # and those of the rows that came, to add
                running_sums.note(con, f"SELECT * FROM {WINDOW}.main.found", 1)
                running_sums.apply(con)
            self.found = False
        con.execute(f"DELETE FROM {ROUND_MONEY_AT}")
        con.execute(f"INSERT INTO {ROUND_MONEY_AT} {CHECKPOINTS}")
        if self.sums:
            running_sums.mark(con)

    def close(self) -> None:
        if self.cur is not None:
            self.cur.close()
            self.con.execute(f"DETACH DATABASE IF EXISTS {WINDOW_VIEWS}")
            self.con.execute(f"DETACH DATABASE IF EXISTS {WINDOW}")
            self.cur = None


_KEEPERS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, Keeper] = \
    weakref.WeakKeyDictionary()


def keeper_for(con: duckdb.DuckDBPyConnection,
               progress: Callable[[int, int], None] | None = None) -> Keeper:
    """The connection's keeper, with the stored rows current first (ensure_current, whose
    whole build's steps `progress` follows). A keeper that stopped keeping them (Keeper.skip)
    is replaced after the rebuild."""
    keeper = _KEEPERS.get(con)
    if ensure_current(con, progress) or keeper is None or not keeper.live:
        if keeper is not None:
            keeper.close()
        keeper = _KEEPERS[con] = Keeper(con)
        # A rebuild that ran out of memory: nothing to keep, and nothing marked current.
        keeper.live = keeper.live and stored_money_current(con)
    elif not keeper.sums:  # the sums built by ensure_current since: kept from now on
        keeper.sums = running_sums_current(con)
    return keeper

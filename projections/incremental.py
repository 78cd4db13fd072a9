"""Incremental detection: after each batch, re-evaluate only the stretch of each table the batch
can change, and replace exactly the stored anomaly rows of that stretch.

Every rule is decided within one table. Per touched table the window is its events from the
earliest shoe (and, within it, round: detect_rounds.py) the batch can change, plus the context
each family reads before it; a stored row belongs to the stretch when the greatest of its proving
seqs is at or after the stretch's start, and those rows are replaced by the window's, in the
batch's own transaction. The window is read through a scratch catalog whose `events` table holds
the window alone, its scan pruned by log partition and offset, so the cost follows the batch and
the shoe, not the history. DUPLICATE_EVENT's copies from before the window come from a look-up
of hashed ids over the history (Detector.earlier_copies). Which family reads what, and why
that scope is exact:
docs/live-detection.md ("Incremental detection").
"""

from __future__ import annotations

import hashlib
import re
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime
from functools import partial

import duckdb
import pyarrow as pa

from projections import detect_rounds, id_index, view_cache
from projections.alerts import create_tables, raise_alerts
from projections.anomalies import (
    FAMILY_ROWS,
    STORED,
    STORED_AT,
    anomaly_families,
    anomaly_source,
    refresh_stored_anomalies,
)
from projections.kept_at import CHECKPOINTS, tagged
from projections.reddog_macros import macros_sql
from projections.views import SQL_DIR, VIEW_FILES, create_views

SCRATCH = "pitlog_detect"
# Off: with it on, tests/projections/test_incremental_attack.py loses or keeps stale rows (a
# late line placed earlier in game order, a third copy of an event id, a loose card, a face-up
# card drawn in a later batch): its context before K_r misses what those rules read. Until it
# covers them, every batch re-evaluates its tables from the shoe (K), which those tests hold
# exact (docs/live-detection.md, "The round-level stretch").
ROUND_LEVEL_STRETCH = False

# The window of the families that read a shoe's cards before K_r (detect_rounds.CARD_FAMILIES).
CARDS = "pitlog_detect_cards"
SHOES = "detect_shoes"
TABLES = "detect_tables"
CONTEXT = "detect_context"
# The family that reads earlier copies of an event id (DUPLICATE_EVENT): its window is the
# rounds window and those copies, in a catalog of its own (Detector._ready), so no other family
# reads an event from before W but a card event's first copy (Detector.earlier_copies).
STREAMS = "pitlog_detect_streams"
STREAM_FAMILIES = ("anomalies_found_streams",)
CONTEXT_TYPES = ("TableOpened", "CardsLoaded", "ShoeClosed")
_STATE_TYPES = "('" + "', '".join(CONTEXT_TYPES[1:]) + "')"
# The cards sql/intruders.sql places in rounds by game order, whatever their shoe: a round's
# span starts at a CardDrawn or CardDrawnInError, and those and burns intrude into spans.
INTRUDER_CARDS = "('CardDrawn', 'CardDrawnInError', 'CardBurned')"
# detect_context also holds the cards with no shoe, which no shoe's game-order extent
# (card_us, last_us) covers, and every other event with no shoe of a round: a round dealt with
# no shoe is one span of its events (_stretch_start).
# And the shuffle events of a shoe: its last one decides whether its load owes a burn
# (13:69F-6.9, anomalies_shoes.sql burn_exempt_loads), read with the load (_with_state_seqs).
# And the money with no shoe and no round, every event of it (detect_rounds.loose_money): one
# ledger row pairs such events any number of shoes apart.
SHUFFLE_TYPES = "('ShuffleStarted', 'ShuffleCompleted')"
_CONTEXT_ROWS = ("event_type IN ('" + "', '".join(CONTEXT_TYPES) + "') "
                 f"OR (shoe_id IS NULL AND (event_type IN {INTRUDER_CARDS} "
                 "OR round_no IS NOT NULL)) "
                 f"OR (shoe_id IS NOT NULL AND event_type IN {SHUFFLE_TYPES}) "
                 f"OR ({detect_rounds.loose_money()})")
BIG = 2**62

# card_us, last_us: the occurred_at of the shoe's earliest card (INTRUDER_CARDS) and of its
# latest event, in microseconds since the epoch (integers: a TIMESTAMPTZ costs a Python
# datetime per value to fetch), which say whether a later shoe's card lies, in game order,
# among its rounds (_stretch_start).
SHOES_DDL = f"""CREATE TABLE IF NOT EXISTS {SHOES} (
    table_id VARCHAR, shoe_id VARCHAR, first_seq BIGINT, first_offset BIGINT,
    last_seq BIGINT, last_offset BIGINT, last_draw_seq BIGINT, last_draw_offset BIGINT,
    card_us BIGINT, last_us BIGINT)"""
TABLES_DDL = f"""CREATE TABLE IF NOT EXISTS {TABLES} (
    table_id VARCHAR, log_partition INTEGER, first_offset BIGINT, last_seq BIGINT,
    last_shoe_id VARCHAR, ordered BOOLEAN)"""

# Per table and shoe of a set of events: what the scopes need (NULL shoe: the table's own).
_SHOE_AGG = """
SELECT table_id, shoe_id, min(seq) AS first_seq,
       arg_min(log_offset, (seq, log_offset)) AS first_offset,
       max(seq) AS last_seq, arg_max(log_offset, (seq, log_offset)) AS last_offset,
       -- the last card dealt (W, Detector._plan): a CardDrawn to a box. One to the discard
       -- rack may be a card found face up placed there, no card dealt (macros.sql
       -- face_up_placements_of): left out, W lies earlier, never after a burn still owed
       max(seq) FILTER (DEALT) AS last_draw_seq,
       arg_max(log_offset, (seq, log_offset)) FILTER (DEALT) AS last_draw_offset,
       epoch_us(min(occurred_at) FILTER (event_type IN INTRUDER_CARDS)) AS card_us,
       epoch_us(max(occurred_at)) AS last_us
FROM {src} WHERE shoe_id IS NOT NULL GROUP BY ALL
""".replace("INTRUDER_CARDS", INTRUDER_CARDS).replace(
    "DEALT", "event_type = 'CardDrawn' AND destination IS DISTINCT FROM 'DISCARD_RACK'")
# The state's definition, detect_context's comment: a state another pitlog built (other rows
# in the context, other shoe extents) is not ready (state_ready), so the store is evaluated
# whole and it is rebuilt: the rows that state's batches stored may be wrong where it lacked
# what a rule reads (session 36: a shoe's shuffle events).
_STATE_TAG = "pitlog detect_context " + hashlib.sha256(
    (_CONTEXT_ROWS + _SHOE_AGG).encode()).hexdigest()
_TABLE_AGG = """
SELECT table_id, min(log_partition) AS log_partition, min(log_offset) AS first_offset,
       max(seq) AS last_seq, arg_max(shoe_id, (seq, log_offset)) AS last_shoe_id,
       -- in seq order: log order and seq order agree, and no seq repeats
       bool_and(coalesce(seq > prev_seq, true)) AS ordered
FROM (SELECT *, lag(seq) OVER (PARTITION BY table_id ORDER BY log_partition, log_offset)
          AS prev_seq FROM {src})
GROUP BY table_id
"""


@dataclass(frozen=True, slots=True)
class Scope:
    """One table's stretch: rows with max(seqs) >= k (k None: all) from the window seq >= w
    (w None: from the table's start), whose first event lies at log offset >= offset."""

    table_id: str
    partition: int
    k: int | None
    w: int | None
    offset: int
    # the shoe state at w, read as context (_with_state_seqs): the last CardsLoaded before w
    # and the last ShoeClosed after it that ends its shoe, each event id's first copy, and the
    # last shuffle before w of the shoes whose loads the window judges
    state_seqs: list[int] | None


def state_tables(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(SHOES_DDL)
    con.execute(TABLES_DDL)


def state_ready(con: duckdb.DuckDBPyConnection) -> bool:
    """The detection state exists, was built with the stored rows by this definition
    (_STATE_TAG), and has the columns of `events` (a migration adds columns: then it is
    rebuilt)."""
    names = {t for (t,) in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
    ).fetchall()}
    if not {SHOES, TABLES, CONTEXT, STORED, STORED_AT, *_round_state()} <= names:
        return False
    if not tagged(con, (CONTEXT,), _STATE_TAG):
        return False
    cols = [tuple(r) for r in con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = "
        "current_database() AND table_name IN ('events', $c) ORDER BY column_index",
        {"c": CONTEXT}).fetchall()]
    return {c for t, c in cols if t == "events"} == {c for t, c in cols if t == CONTEXT}


def rebuild_state(con: duckdb.DuckDBPyConnection) -> None:
    """The state from the whole store (after a full evaluation; inside its transaction). Its
    tables made anew: one an older pitlog made may lack columns (detect_shoes' last_us)."""
    con.execute(f"DROP TABLE IF EXISTS {SHOES}")
    con.execute(f"DROP TABLE IF EXISTS {TABLES}")
    state_tables(con)
    con.execute(f"INSERT INTO {SHOES} {_SHOE_AGG.format(src='events')}")
    con.execute(f"INSERT INTO {TABLES} {_TABLE_AGG.format(src='events')}")
    con.execute(f"CREATE OR REPLACE TABLE {CONTEXT} AS "
                f"SELECT * FROM events WHERE {_CONTEXT_ROWS}")
    con.execute(f"COMMENT ON TABLE {CONTEXT} IS '{_STATE_TAG}'")  # hex after a fixed text
    if ROUND_LEVEL_STRETCH:
        detect_rounds.rebuild(con)


def upgrade_state(con: duckdb.DuckDBPyConnection) -> None:
    """A state made before detect_shoes kept the shoes' game-order extents (card_us, last_us)
    and detect_context the cards with no shoe: built again from `events`, in one transaction.
    The state is a function of `events` alone, so the stored rows stay current: this reads
    the events once, where a full evaluation would also evaluate every rule. Not for a
    detect_context of another definition (its tag): that one's live detection may have
    stored rows the rules do not give (a context that lacked the events a rule needed), so
    the store is evaluated whole (state_ready)."""
    cols = {c for (c,) in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = $t", {"t": SHOES}).fetchall()}
    # Only a state of this definition but for those columns: one of another definition (its
    # tag) gets the store evaluated whole (state_ready), even when it lacks them too.
    if not cols or "last_us" in cols or not tagged(con, (CONTEXT,), _STATE_TAG):
        return
    con.begin()
    try:
        rebuild_state(con)
        con.commit()
    except BaseException:
        con.rollback()
        raise


def _round_state() -> tuple[str, ...]:
    """The round-level stretch's state tables, kept only while it is on (ROUND_LEVEL_STRETCH):
    switched off, no batch pays for their upkeep (a scan of one row per round of the history)."""
    return (detect_rounds.ROUNDS, detect_rounds.FAULTS) if ROUND_LEVEL_STRETCH else ()


def drop_stale_round_state(con: duckdb.DuckDBPyConnection) -> None:
    """Switched off, the round state is not kept, so a store's old copy is dropped: switched on
    again, state_ready then finds it missing and rebuilds it instead of reading it stale."""
    if not ROUND_LEVEL_STRETCH:
        for name in (detect_rounds.ROUNDS, detect_rounds.FAULTS):
            con.execute(f"DROP TABLE IF EXISTS {name}")


_MADE = re.compile(r"CREATE\s+OR\s+REPLACE\s+VIEW\s+(\w+)", re.IGNORECASE)


def window_views(cur: duckdb.DuckDBPyConnection, wanted: Callable[[str], bool],
                 helpers: bool = True) -> None:
    """The views (views.create_views) a window catalog's families read: every file but those
    that make only `anomalies` (the union of the families, read by no family) or families not
    `wanted` here. Binding a view costs about what planning it does (the rounds, money and
    tables families and the union about 1 s each on a busy machine), and each window catalog
    runs only its own families. If the files no longer allow that split (a family reading
    another), every view is made, as create_views does. `helpers` False: only the macros
    and the wanted families' own files (a family that reads `events` alone, as the streams
    family does); one that reads another view fails to bind, and every view is made."""
    try:
        cur.execute(macros_sql())
        for name in window_files(wanted, helpers):
            cur.execute((SQL_DIR / name).read_text())
    except (OSError, duckdb.Error):
        create_views(cur)


def window_files(wanted: Callable[[str], bool], helpers: bool = True) -> list[str]:
    """The view files window_views runs, in order (what the view cache's digest names)."""
    files = []
    for name in VIEW_FILES:
        made = _MADE.findall((SQL_DIR / name).read_text())
        if not helpers and not any(wanted(v) for v in made):
            continue
        if made and all(v == "anomalies" or (v.startswith("anomalies_found_")
                                             and not wanted(v)) for v in made):
            continue
        files.append(name)
    return files


def views_of(catalog: str) -> str:
    """The catalog of the views over a window catalog's rows (Detector._ready)."""
    return f"{catalog}_views"


def _home(family: str) -> str:
    """The window catalog a family reads (Detector._ready)."""
    if family in detect_rounds.CARD_FAMILIES:
        return CARDS
    return STREAMS if family in STREAM_FAMILIES else SCRATCH


class Detector:
    """Evaluates a batch's stretch before its transaction and writes it inside."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        ((database,),) = con.execute("SELECT current_database()").fetchall()
        self.db = '"' + database.replace('"', '""') + '"'
        self.scratch: duckdb.DuckDBPyConnection | None = None  # _ready, at the first batch
        self.families: list[str] = []
        self.cursors: list[duckdb.DuckDBPyConnection] = []
        self.inserts: list[str] = []
        self.pool: ThreadPoolExecutor | None = None
        self.recorded: list[tuple[int, datetime | None]] = []
        # Seconds of the last evaluate's phases (window copy, family queries), for
        # benchmarks/bench_live.py.
        self.phases: dict[str, float] = {}
        self.stretches: dict[str, float] = {}
        self.index: id_index.Index | None = None  # _ids, at the first batch

    def open_index(self) -> None:
        """Open the index of event ids now (built or caught up with `events`), not at the
        first batch: after a backlog loaded without detection, so the next batch does not pay
        for reading it all (projector._project_and_publish)."""
        self._ids()

    def _ids(self) -> id_index.Index:
        """The store's index of event ids (id_index.Index.open: built or caught up with
        `events` when it is not current), opened at the first batch that needs it."""
        if self.index is None:
            self.index = id_index.Index.open(self.con)
        return self.index

    def _ready(self) -> duckdb.DuckDBPyConnection:
        """The scratch catalogs and the family statements, made at the first batch with events:
        binding the views costs about what planning the families does (seconds on a busy
        machine, docs/live-detection.md), and a run that finds nothing new (a resume, a
        `project` of an up-to-date store) never needs them."""
        if self.scratch is not None:
            return self.scratch
        scratch = self.con.cursor()
        scratch.execute(f"DETACH DATABASE IF EXISTS {SCRATCH}")
        scratch.execute(f"ATTACH ':memory:' AS {SCRATCH}")
        for catalog in (CARDS, STREAMS):
            scratch.execute(f"DETACH DATABASE IF EXISTS {catalog}")
            scratch.execute(f"ATTACH ':memory:' AS {catalog}")
        for catalog in (CARDS, SCRATCH, STREAMS):  # the windows' rows, filled per batch
            scratch.execute(
                f"CREATE TABLE {catalog}.main.{'copies' if catalog == STREAMS else 'events'} "
                f"AS SELECT * FROM {self.db}.main.events LIMIT 0")
        home: dict[str, str] = {}  # family -> the catalog of its window's views
        for catalog in (CARDS, SCRATCH, STREAMS):  # the same views over each window

            def wanted(family: str, _c: str = catalog) -> bool:
                return _home(family) == _c

            # Bound once per definition and kept in the cache folder (projections/view_cache.py):
            # made anew at every start, the three catalogs' views cost about 0.37 s.
            view_cache.attach_views(
                scratch, views_of(catalog),
                # the streams family's: the rounds window and the earlier copies (evaluate)
                f"SELECT * FROM {SCRATCH}.main.events UNION ALL SELECT * FROM {STREAMS}.main.copies"
                if catalog == STREAMS else f"SELECT * FROM {catalog}.main.events",
                partial(window_views, wanted=wanted, helpers=catalog != STREAMS),
                "window views: " + ", ".join(window_files(wanted, catalog != STREAMS)))
            home.update((f, views_of(catalog)) for f in anomaly_families(scratch) if wanted(f))
        scratch.execute(f"USE {SCRATCH}")
        self.families = sorted(home)
        # The stored rows' columns (detector_for stored them first): binding a family for its
        # columns would cost as much as planning it.
        scratch.execute(f"CREATE TABLE found AS SELECT * FROM {self.db}.main.{STORED} LIMIT 0")
        scratch.execute("CREATE TABLE scope (table_id VARCHAR, log_partition INTEGER, "
                        "k BIGINT, w BIGINT, o BIGINT, state_seqs BIGINT[])")
        # One cursor and one result table per family: the families are evaluated at once,
        # one thread each (_evaluate_families).
        for i, family in enumerate(self.families):
            cur = scratch.cursor()
            cur.execute(f"CREATE TABLE {SCRATCH}.found_{i} AS SELECT * FROM {SCRATCH}.found "
                        "LIMIT 0")
            cur.execute(f"USE {home[family]}")
            self.cursors.append(cur)
            self.inserts.append(
                f"INSERT INTO {SCRATCH}.found_{i} SELECT f.* FROM "
                f"({FAMILY_ROWS.format(family=family)}) AS f "
                f"JOIN {SCRATCH}.scope AS sc USING (table_id) "
                f"WHERE sc.k IS NULL OR coalesce(list_max(f.seqs), {BIG}) >= sc.k "
                # the window holds every event of money with no shoe or round (detect_context),
                # so its rows are found whole, however old (_replace replaces them all)
                f"OR ({detect_rounds.loose_money_row('f')})")
        self.pool = ThreadPoolExecutor(max_workers=len(self.families),
                                       thread_name_prefix="pitlog-detect")
        self.scratch = scratch
        return scratch

    def close(self) -> None:
        if self.index is not None:
            self.index.close()
            self.index = None
        if self.scratch is None:
            return
        if self.pool is not None:
            self.pool.shutdown(wait=True)
        for cur in self.cursors:
            cur.close()
        self.scratch.close()
        for catalog in (SCRATCH, CARDS, STREAMS):
            self.con.execute(f"DETACH DATABASE IF EXISTS {views_of(catalog)}")
            self.con.execute(f"DETACH DATABASE IF EXISTS {catalog}")

    # --- before the transaction: plan and evaluate -------------------------------------------

    def plan(self, batch: pa.Table) -> list[Scope]:
        s = self._ready()
        s.register("pitlog_new", batch)
        try:
            return self._plan(s)
        finally:
            s.unregister("pitlog_new")

    def _plan(self, s: duckdb.DuckDBPyConnection) -> list[Scope]:
        new_tables = {r[0]: r for r in s.execute(
            _TABLE_AGG.format(src="pitlog_new")).fetchall()}
        new_shoes = s.execute(_SHOE_AGG.format(src="pitlog_new")).fetchall()
        null_shoe = dict(s.execute(
            "SELECT table_id, min(seq) FROM pitlog_new WHERE shoe_id IS NULL "
            "GROUP BY ALL").fetchall())
        tables = list(new_tables)
        # The events with no shoe, stored (detect_context) and new, in one read: its cards, which
        # no shoe's extent covers (`loose`), and its events of a round, whatever their type: a
        # round dealt with no shoe is one span of them (sql/intruders.sql groups its cards by
        # shoe and round, a NULL shoe too; the ledger and the rounds family join its wagers,
        # words and settlements to them).
        loose: dict[str, list[tuple[int, int, int | None]]] = {}
        round_events: dict[str, list[tuple[int, int]]] = {}
        for t, seq, at, round_no, is_card in s.execute(f"""
                SELECT table_id, seq, epoch_us(occurred_at), round_no,
                       event_type IN {INTRUDER_CARDS}
                FROM (SELECT * FROM {self.db}.main.{CONTEXT} WHERE list_contains($t, table_id)
                      UNION ALL BY NAME SELECT * FROM pitlog_new)
                WHERE shoe_id IS NULL
                  AND (event_type IN {INTRUDER_CARDS} OR round_no IS NOT NULL)""",
                                                       {"t": tables}).fetchall():
            if is_card:
                loose.setdefault(t, []).append((seq, at, round_no))
            if round_no is not None:
                round_events.setdefault(t, []).append((seq, round_no))
        old_tables = {r[0]: r for r in s.execute(
            f"SELECT * FROM {self.db}.main.{TABLES} WHERE list_contains($t, table_id)",
            {"t": tables}).fetchall()}
        shoes: dict[tuple[str, str], list] = {}
        for r in s.execute(f"SELECT * FROM {self.db}.main.{SHOES} WHERE list_contains($t, "
                           "table_id)", {"t": tables}).fetchall():
            shoes[(r[0], r[1])] = list(r)
        touched: dict[str, set[str]] = {}
        for r in new_shoes:
            key = (r[0], r[1])
            touched.setdefault(r[0], set()).add(r[1])
            shoes[key] = _merge(shoes.get(key), list(r))
        out = []
        narrow: dict[str, tuple[int, set[str]]] = {}  # table -> (K, affected shoes)
        reached = 0  # tables whose K reached back to an earlier shoe by game order
        for t in tables:
            _, partition, first_offset, _, _, ordered = new_tables[t]
            old = old_tables.get(t)
            if old is None:  # a new table: all of it
                out.append(Scope(t, partition, None, None, first_offset, None))
                continue
            if not (ordered and old[5] and new_tables[t][3] > old[3]
                    and _min_new_seq(t, new_shoes, null_shoe) > old[3]):
                out.append(Scope(t, partition, None, None, old[2], None))
                continue
            mine = {sid: v for (tt, sid), v in shoes.items() if tt == t}
            affected = set(touched.get(t, set())) | ({old[4]} if old[4] in mine else set())
            k0 = min([mine[sid][2] for sid in affected] + ([null_shoe[t]] if t in null_shoe
                                                             else []))
            # The batch finishes the round of the table's last event: with a shoe, old[4] is
            # among `affected`; with no shoe, that event joins the stretch, and the round rule
            # of _stretch_start its round's other events with no shoe (else what the finished
            # round lacks or settled before its first two cards was never stored).
            k0 = min([k0] + [seq for seq, _ in round_events.get(t, []) if seq == old[3]])
            k, back = _stretch_start(k0, list(mine.values()), loose.get(t, []),
                                     round_events.get(t, []))
            reached += back
            if not back:  # reached back by game order: the earlier shoe's rows read the stretch
                narrow[t] = (k, affected)
            before = [v for v in mine.values() if v[4] < k]
            if not before:  # the table's first shoe: from its start
                out.append(Scope(t, partition, k, None, old[2], None))
                continue
            draws = [v for v in before if v[6] is not None]
            if not draws:  # no card dealt before k: a burn owed since the table's first event
                # may still be owed at k's first card (MISSING_BURN), so from its start too
                out.append(Scope(t, partition, k, None, old[2], None))
                continue
            prev = max(before, key=lambda v: v[4])  # ends just before k: (last_seq, offset)
            w, offset = prev[4], prev[5]
            d = max(draws, key=lambda v: v[6])
            if d[6] < w:
                w, offset = d[6], d[7]
            out.append(Scope(t, partition, k, w, offset, None))
        # The round-level stretch: rows from K_r on, read from a window whose part before
        # K_r holds the shoe's context alone (projections/detect_rounds.py). Off: see
        # ROUND_LEVEL_STRETCH.
        starts = (detect_rounds.round_starts(s, self.db, "pitlog_new", narrow)
                  if ROUND_LEVEL_STRETCH else {})
        # How many touched tables got the round-level stretch (benchmarks/bench_live.py).
        self.stretches = {"tables": float(len(out)),
                          "round_level": float(sum(v is not None for v in starts.values())),
                          "reached_back": float(reached)}
        out = [Scope(sc.table_id, sc.partition, sc.k if starts.get(sc.table_id) is None
                     else starts[sc.table_id], sc.w,
                     sc.offset, None) for sc in out]
        return self._with_state_seqs(out)

    def _with_state_seqs(self, scopes: list[Scope]) -> list[Scope]:
        wanted = {sc.table_id: sc.w for sc in scopes if sc.w is not None}
        if not wanted:
            return scopes
        # The shoe in play at W, as anomalies_shoes.sql burn_stream reads it: each load and
        # close once per event id (its first copy), the shoe of the last load (named or not),
        # ended by a later close of that shoe, or naming none, or by any close when the load
        # names no shoe or there is none; a close of another shoe ends nothing. So the last
        # load and the last such close after it are read, not merely the last of the two (an
        # outside review: a copy re-sent later, a close of another shoe after it).
        # And the shuffle each load the window judges was shuffled by: a load's exemption is its
        # shoe's last shuffle event before it (13:69F-6.9, burn_exempt_loads, which reads every
        # copy): for the shoe in play at W (no such close), the last one before its load (not
        # one between the load and W: a shoe id loaded again after another shuffle, session 37);
        # for every shoe loaded from W on, the last one before W (a later one is in the window).
        # (An outside review: a shoe shuffled before W and loaded after it, with no card.)
        seqs = {t: [s for s in (load, close, *shuffles) if s is not None]
                for t, load, close, shuffles in self._ready().execute(f"""
            WITH s AS (SELECT unnest($t) AS table_id, unnest($w) AS w),
            x AS (SELECT x.*, s.w FROM {self.db}.main.{CONTEXT} AS x JOIN s USING (table_id)),
            c AS (SELECT * FROM x WHERE event_type IN {_STATE_TYPES} AND seq < w
                  QUALIFY event_id IS NULL OR row_number() OVER (
                      PARTITION BY table_id, event_id ORDER BY seq, log_offset) = 1),
            l AS (SELECT table_id, arg_max({{'seq': seq, 'shoe_id': shoe_id,
                                             'log_offset': log_offset}}, (seq, log_offset))
                      AS load
                  FROM c WHERE event_type = 'CardsLoaded' GROUP BY ALL),
            state AS (SELECT s.table_id, l.load, (
                          SELECT max(c.seq) FROM c WHERE c.table_id = s.table_id
                             AND c.event_type = 'ShoeClosed' AND c.seq > coalesce(l.load.seq, -1)
                             AND (c.shoe_id IS NULL OR l.load.shoe_id IS NULL
                                  OR c.shoe_id = l.load.shoe_id)) AS close
                      FROM s LEFT JOIN l USING (table_id)),
            judged AS (SELECT table_id, load.shoe_id, {{'s': load.seq, 'o': load.log_offset}}
                              AS upto FROM state WHERE close IS NULL
                       UNION SELECT table_id, shoe_id, {{'s': w, 'o': -1}} FROM x
                       WHERE event_type = 'CardsLoaded' AND seq >= w),
            shuffles AS (SELECT table_id, arg_max(x.seq, (x.seq, x.log_offset)) AS seq
                         FROM x JOIN judged AS j USING (table_id, shoe_id)
                         WHERE event_type IN {SHUFFLE_TYPES}
                           AND {{'s': x.seq, 'o': x.log_offset}} < j.upto
                         GROUP BY table_id, shoe_id, j.upto)
            SELECT table_id, load.seq, close,
                   coalesce((SELECT list(seq) FROM shuffles AS h
                             WHERE h.table_id = state.table_id), [])
            FROM state""",
                {"t": list(wanted), "w": list(wanted.values())}).fetchall()}
        return [Scope(sc.table_id, sc.partition, sc.k, sc.w, sc.offset,
                      seqs.get(sc.table_id) or None) for sc in scopes]

    def evaluate(self, batch: pa.Table, scopes: list[Scope]) -> int:
        """The stretch's rows into the scratch `found` table; returns the window's size."""
        s = self._ready()
        s.execute("DELETE FROM scope")
        s.executemany("INSERT INTO scope VALUES (?, ?, ?, ?, ?, ?)",
                      [[sc.table_id, sc.partition, sc.k, sc.w, sc.offset, sc.state_seqs]
                       for sc in scopes])
        started = time.perf_counter()
        parts = sorted({sc.partition for sc in scopes})
        low = min(sc.offset for sc in scopes)
        s.register("pitlog_new", batch)
        try:
            detect_rounds.copy_windows(s, self.db, CARDS, CONTEXT, parts, low)
            copied = time.perf_counter()
            self.earlier_copies(s)
        finally:
            s.unregister("pitlog_new")
        looked = time.perf_counter()
        self._evaluate_families()
        self.phases = {"copy": copied - started, "copies": looked - copied,
                       "families": time.perf_counter() - looked}
        ((n,),) = s.execute("SELECT count(*) FROM events").fetchall()
        ((cards,),) = s.execute(f"SELECT count(*) FROM {CARDS}.events").fetchall()
        self.phases["cards_window"] = float(cards)
        return int(n)

    def earlier_copies(self, s: duckdb.DuckDBPyConnection) -> int:
        """Into the streams family's window (STREAMS.copies): the events before W that are
        copies of an event id of the stretch (rows from k on), which DUPLICATE_EVENT proves with
        every copy however far back (anomalies_streams.sql). Returns the copies found.

        Which ids can have such a copy: an id of the batch (`pitlog_new`), an id that already
        had two copies, one from k on and one before W, and so a stored row of the stretch (the
        stored rows equal a full evaluation before the batch), and the id of each load,
        tap-in and close of the cards window (macros.sql is_burn_state_event): MISSING_BURN
        counts each once (anomalies_shoes.sql burn_stream), so a copy of one in the window,
        from W on, is no debt (or end of debts) when its original lies before W, though its
        DUPLICATE_EVENT row may end before k (an outside review found a copy between W and k
        owing a burn live).
        Their hashes are looked up in the store's index of ids (projections/id_index.py: a
        B-tree search per hash, so the look-up reads in proportion to the ids, not the
        history); the few matches before the window's start are read from `events` by log
        position (constants: DuckDB reads only their row groups) and kept when their table and
        event id are the ones looked up and they lie before W (a hash collision, or a row the
        index holds for a position `events` does not, is dropped here)."""
        s.execute(f"DELETE FROM {STREAMS}.main.copies")
        ids = f"""SELECT DISTINCT q.table_id, q.event_id, sc.log_partition, sc.o, sc.w
            FROM (SELECT table_id, event_id FROM pitlog_new
                  UNION ALL
                  SELECT e.table_id, e.event_id FROM events AS e
                  JOIN (SELECT a.table_id, unnest(a.seqs) AS seq
                        FROM {self.db}.main.{STORED} AS a JOIN scope AS sc USING (table_id)
                        WHERE a.code = 'DUPLICATE_EVENT' AND sc.w IS NOT NULL
                          AND list_max(a.seqs) >= sc.k) AS d USING (table_id, seq)
                  UNION ALL
                  SELECT table_id, event_id FROM {CARDS}.main.events
                  WHERE {views_of(SCRATCH)}.main.is_burn_state_event(event_type)) AS q
            JOIN scope AS sc USING (table_id)
            WHERE sc.w IS NOT NULL AND q.event_id IS NOT NULL"""
        s.execute(f"CREATE OR REPLACE TEMP TABLE pitlog_ids AS "
                  f"SELECT {id_index.HASH} AS h, * FROM ({ids})")
        hashes = [h for (h,) in s.execute("SELECT DISTINCT h FROM pitlog_ids").fetchall()]
        found = self._ids().matches(hashes)
        at: dict[int, list[int]] = {}
        if found:  # usually nothing matches
            h, partition, offset = (list(c) for c in zip(*found, strict=True))
            s.register("pitlog_hits", pa.table({
                "h": pa.array(h, pa.int64()), "log_partition": pa.array(partition, pa.int32()),
                "log_offset": pa.array(offset, pa.int64())}))
            try:
                for p, o in s.execute("""
                        SELECT DISTINCT i.log_partition, i.log_offset FROM pitlog_hits AS i
                        JOIN pitlog_ids AS q ON i.h = q.h AND i.log_partition = q.log_partition
                         AND i.log_offset < q.o""").fetchall():
                    at.setdefault(p, []).append(o)
            finally:
                s.unregister("pitlog_hits")
        n = 0
        if at:
            where = " OR ".join(f"(log_partition = {p} AND log_offset IN "
                                f"({', '.join(map(str, sorted(o)))}))" for p, o in at.items())
            s.execute(f"""CREATE OR REPLACE TEMP TABLE pitlog_copies AS
                SELECT e.* FROM (SELECT * FROM {self.db}.main.events WHERE {where}) AS e
                SEMI JOIN pitlog_ids AS q ON q.table_id = e.table_id
                 AND q.event_id = e.event_id AND e.seq < q.w
                -- Not one the rounds window holds already (a TableOpened, the shoe state's
                -- load, close and shuffles before W: detect_rounds.copy_windows): read twice,
                -- it was one copy more
                ANTI JOIN {SCRATCH}.main.events AS x
                  ON x.log_partition = e.log_partition AND x.log_offset = e.log_offset""")
            # A card event's earlier copy is the card (macros.sql card_events_of keeps an id's
            # first copy): the card families must see it to drop the later copy as the full
            # evaluation does, so it joins both windows (and the streams family through the
            # rounds window). So is a load's, tap-in's or close's for the burns the shoes family
            # counts (macros.sql is_burn_state_event), in the cards window; every copy but a
            # card's reaches the streams family through its own table.
            card = f"{views_of(SCRATCH)}.main.is_card_event(event_type)"
            burn_state = f"{views_of(SCRATCH)}.main.is_burn_state_event(event_type)"
            for target, which in (
                    (f"{CARDS}.main.events", f"{card} OR {burn_state}"),
                    (f"{SCRATCH}.main.events", card), (f"{STREAMS}.main.copies", f"NOT {card}")):
                s.execute(f"INSERT INTO {target} SELECT * FROM pitlog_copies WHERE {which}")
            ((n,),) = s.execute("SELECT count(*) FROM pitlog_copies").fetchall()
        for name in ("pitlog_ids", "pitlog_copies"):
            s.execute(f"DROP TABLE IF EXISTS temp.{name}")
        return int(n)

    def _evaluate_families(self) -> None:
        """The stretch's rows of every family into `found`. The families are independent
        queries over the same window, each mostly one thread's work (a window of tens of
        thousands of events is one DuckDB row group, and planning a family is single-threaded:
        0.1-0.5 s each, benchmarks/results.md), so they run at once, one cursor each: a batch
        takes about its slowest family instead of their sum, given the cores."""

        def run(i: int) -> None:
            cur = self.cursors[i]
            cur.execute(f"DELETE FROM {SCRATCH}.found_{i}")
            cur.execute(self.inserts[i])

        assert self.pool is not None and self.scratch is not None  # plan() made them
        futures = [self.pool.submit(run, i) for i in range(len(self.families))]
        wait(futures)  # all of them, also when one failed: none still runs afterwards
        for future in futures:
            future.result()  # an error of any family (out of memory) is raised here
        s = self.scratch
        s.execute("DELETE FROM found")
        s.execute("INSERT INTO found " + " UNION ALL ".join(
            f"SELECT * FROM found_{i}" for i in range(len(self.families))))

    # --- inside the batch's transaction -------------------------------------------------------

    def apply(self, con: duckdb.DuckDBPyConnection, changed: bool) -> int:
        """Inside the batch's transaction, after its rows and checkpoint: replace the
        stretch's stored rows (when the batch had events: `changed`, with `pitlog_batch` its
        rows registered on `con`), advance the state, raise the new rows' alerts and mark the
        stored rows current. Returns the alerts raised."""
        raised = 0
        if changed:
            self._replace(con)
            ((before,),) = con.execute(
                "SELECT coalesce(max(alert_seq), 0) FROM alerts").fetchall()
            raised = raise_alerts(con, f"{SCRATCH}.found")
            if raised:
                self._note_recorded(con, int(before))
        con.execute(f"DELETE FROM {STORED_AT}")
        con.execute(f"INSERT INTO {STORED_AT} {CHECKPOINTS}")
        # Last before the commit: the index holds the batch's ids before `events` does
        # (projections/id_index.py); a failure to write it rolls the batch back.
        self._ids().append(con, "pitlog_batch" if changed else None)
        return raised

    def _note_recorded(self, con: duckdb.DuckDBPyConnection, before: int) -> None:
        """The newest recorded_at of each new alert's proving events, read from the window
        (which holds them: the alerts' rows were found in it), for the event-to-alert latency
        metric (pitlog serve's /metrics): a look-up in the window, not in the history."""
        self.recorded.extend(con.execute(f"""
            SELECT a.alert_seq, max(e.recorded_at)
            FROM (SELECT alert_seq, table_id, unnest(seqs) AS seq FROM alerts
                  WHERE alert_seq > $b) AS a
            LEFT JOIN {CARDS}.events AS e USING (table_id, seq)
            GROUP BY a.alert_seq ORDER BY a.alert_seq""", {"b": before}).fetchall())

    def take_recorded(self) -> list[tuple[int, datetime | None]]:
        """(alert_seq, newest proving event's recorded_at) of the alerts raised since the
        last call (None: a proof with no event, as SEQUENCE_GAP's missing seq)."""
        out, self.recorded = self.recorded, []
        return out

    def _replace(self, con: duckdb.DuckDBPyConnection) -> None:
        sc = f"{SCRATCH}.scope"
        con.execute(f"""DELETE FROM {STORED} AS a USING {sc} AS s
                        WHERE a.table_id = s.table_id
                          AND (s.k IS NULL OR coalesce(list_max(a.seqs), {BIG}) >= s.k
                               OR ({detect_rounds.loose_money_row('a')}))""")
        # A new copy of an event id makes its row [a, b] into [a, b, c]; [a, b] may lie wholly
        # before the stretch, so it is deleted by the seqs it shares with a found row (one
        # seq is one event, of one id).
        con.execute(f"""DELETE FROM {STORED} AS a USING {SCRATCH}.found AS f
                        WHERE a.code = 'DUPLICATE_EVENT' AND f.code = 'DUPLICATE_EVENT'
                          AND a.table_id = f.table_id AND list_has_any(a.seqs, f.seqs)""")
        con.execute(f"INSERT INTO {STORED} SELECT * FROM {SCRATCH}.found")
        con.execute(f"""CREATE OR REPLACE TEMP TABLE pitlog_new_shoes AS
                        {_SHOE_AGG.format(src='pitlog_batch')}""")
        con.execute(f"""CREATE OR REPLACE TEMP TABLE pitlog_merged AS
            SELECT table_id, shoe_id,
                   min(first_seq) AS first_seq,
                   arg_min(first_offset, (first_seq, first_offset)) AS first_offset,
                   max(last_seq) AS last_seq,
                   arg_max(last_offset, (last_seq, last_offset)) AS last_offset,
                   max(last_draw_seq) AS last_draw_seq,
                   arg_max(last_draw_offset, (last_draw_seq, last_draw_offset))
                       AS last_draw_offset,
                   min(card_us) AS card_us, max(last_us) AS last_us
            FROM (SELECT * FROM {SHOES} SEMI JOIN pitlog_new_shoes USING (table_id, shoe_id)
                  UNION ALL SELECT * FROM pitlog_new_shoes)
            GROUP BY ALL""")
        con.execute(f"DELETE FROM {SHOES} AS o USING pitlog_new_shoes AS n "
                    "WHERE o.table_id = n.table_id AND o.shoe_id = n.shoe_id")
        con.execute(f"INSERT INTO {SHOES} SELECT * FROM pitlog_merged")
        con.execute(f"""CREATE OR REPLACE TEMP TABLE pitlog_new_tables AS
                        {_TABLE_AGG.format(src='pitlog_batch')}""")
        con.execute(f"""CREATE OR REPLACE TEMP TABLE pitlog_merged_tables AS
            SELECT n.table_id, coalesce(o.log_partition, n.log_partition) AS log_partition,
                   least(o.first_offset, n.first_offset) AS first_offset,
                   greatest(o.last_seq, n.last_seq) AS last_seq, n.last_shoe_id,
                   coalesce(o.ordered, true) AND n.ordered
                       AND (o.last_seq IS NULL OR n.first_seq_new > o.last_seq) AS ordered
            FROM (SELECT t.*, m.first_seq_new FROM pitlog_new_tables AS t
                  JOIN (SELECT table_id, min(seq) AS first_seq_new FROM pitlog_batch
                        GROUP BY ALL) AS m USING (table_id)) AS n
            LEFT JOIN {TABLES} AS o USING (table_id)""")
        con.execute(f"DELETE FROM {TABLES} AS o USING pitlog_new_tables AS n "
                    "WHERE o.table_id = n.table_id")
        con.execute(f"INSERT INTO {TABLES} SELECT * FROM pitlog_merged_tables")
        con.execute(f"INSERT INTO {CONTEXT} BY NAME SELECT * FROM pitlog_batch "
                    f"WHERE {_CONTEXT_ROWS}")
        if ROUND_LEVEL_STRETCH:
            detect_rounds.advance(con)
        for name in ("pitlog_new_shoes", "pitlog_merged", "pitlog_new_tables",
                     "pitlog_merged_tables"):
            con.execute(f"DROP TABLE IF EXISTS temp.{name}")


def _merge(old: list | None, new: list) -> list:
    """One shoe's state with a batch's aggregate of it (same layout as SHOES)."""
    if old is None:
        return new
    first = old if old[2] <= new[2] else new
    last = old if old[4] >= new[4] else new
    draw = max((v for v in (old, new) if v[6] is not None), key=lambda v: v[6], default=old)
    card_us = min((v[8] for v in (old, new) if v[8] is not None), default=None)
    last_us = max((v[9] for v in (old, new) if v[9] is not None), default=None)
    return [old[0], old[1], first[2], first[3], last[4], last[5], draw[6], draw[7],
            card_us, last_us]


def _stretch_start(k: int, shoes: list[list], loose: list[tuple[int, int, int | None]],
                   round_events: list[tuple[int, int]] | None = None) -> tuple[int, bool]:
    """K from `k`, the first seq of the earliest shoe the batch touches, and whether game order
    moved it back. `shoes`: the table's state rows (SHOES layout, merged with the batch);
    `loose`: its cards with no shoe (seq, occurred_at in microseconds, round_no);
    `round_events`: its events with no shoe of a round (seq, round_no; round 0 is a round the
    views list and the ledger keys too), the batch's too.
    Shoes that overlap the stretch join it (none, in a normal stream), until none does:
    - in seq: a shoe with events on both sides of K;
    - in game order (occurred_at, then seq): sql/intruders.sql matches cards to rounds' spans
      by game order, whatever their shoe. A card c of the stretch lies inside a span of an
      earlier shoe S, or one of S's cards inside a span the stretch's card c begins, only if
      c's occurred_at is before S's latest event (S's seqs are all below c's, so a tie puts
      c after them): then S's rounds (BURN_DURING_ROUND, CARD_OUTSIDE_ROUND, IRREGULAR_ROUND
      in round_money) read the stretch, and S joins it. A card with no shoe stamped after the
      stretch's earliest card joins it too (the shoe around its seq follows, in seq);
    - by round: the events with no shoe of one round are one round (sql/intruders.sql groups
      its cards by shoe and round, a NULL shoe too, from its earliest card to its latest
      event; the ledger pairs its wagers and settlements), so an event with no shoe before K
      of a round the stretch has an event with no shoe of joins it: else that span,
      stretched by the new event over the shoes between, made rows of seqs below K (a burn
      of each shoe inside it) that were never stored, the new card's row was judged without
      its round's first card (a WRONG_BOX the full evaluation does not make), and a
      settlement without its wager (NOT_OWED).
    So a row below K reads no event from K on, and the bounds come from the state's rows per
    shoe, not from the events."""
    back = False
    while True:
        k2 = min([k] + [v[2] for v in shoes if v[4] >= k])
        # a round's, round 0 too (a burn with no round joins none)
        rounds = {r for seq, r in round_events or () if seq >= k2}
        k3 = min([k2] + [seq for seq, r in round_events or () if seq < k2 and r in rounds])
        back, k2 = back or k3 < k2, k3
        cards = ([v[8] for v in shoes if v[2] >= k2 and v[8] is not None]
                 + [at for seq, at, _ in loose if seq >= k2])
        if cards:
            first = min(cards)
            k3 = min([k2] + [v[2] for v in shoes if v[4] < k2 and v[9] is not None
                             and v[9] > first]
                     + [seq for seq, at, _ in loose if seq < k2 and at > first])
            back, k2 = back or k3 < k2, k3
        if k2 == k:
            return k, back
        k = k2


def _min_new_seq(table: str, new_shoes: list, null_shoe: dict[str, int]) -> int:
    seqs = [r[2] for r in new_shoes if r[0] == table]
    if table in null_shoe:
        seqs.append(null_shoe[table])
    return min(seqs)


_DETECTORS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, Detector] = \
    weakref.WeakKeyDictionary()


def close_detector(con: duckdb.DuckDBPyConnection) -> None:
    """Close the connection's detector (its scratch catalogs and its index of ids) before the
    store's connection is closed. Each detector holds its connection, so an entry of
    _DETECTORS is never collected: left open, the index's SQLite file, with its -wal and -shm
    beside the store, stays open until the process ends (`pitlog demo` signed them)."""
    detector = _DETECTORS.pop(con, None)
    if detector is not None:
        detector.close()


def whole_evaluation_owed(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the store's stored rows or detection state are not current (a new store, one
    fed without detection, one whose rules or state another pitlog made), so that the next
    detector evaluates the store whole first (detector_for). Makes the tables it asks of."""
    create_tables(con)
    upgrade_state(con)
    state_tables(con)
    drop_stale_round_state(con)
    return anomaly_source(con) != STORED or not state_ready(con)


def detector_for(con: duckdb.DuckDBPyConnection,
                 progress: Callable[[int, int], None] | None = None) -> tuple[Detector, int]:
    """The connection's detector, and the alerts raised getting it ready: a store whose
    stored rows or detection state are not current is evaluated whole first (the rebuild
    path: anomalies.refresh_stored_anomalies, a table group at a time), with the state built
    and the rows' alerts raised in the same transaction."""
    raised = 0
    if whole_evaluation_owed(con):
        counted: list[int] = []

        def within(c: duckdb.DuckDBPyConnection) -> None:
            rebuild_state(c)
            counted.append(raise_alerts(c, STORED))

        refresh_stored_anomalies(con, progress=progress, within=within)
        raised = counted[0]
        old = _DETECTORS.pop(con, None)  # its scratch `events` had the old columns
        if old is not None:
            old.close()
    detector = _DETECTORS.get(con)
    if detector is None:
        detector = _DETECTORS[con] = Detector(con)
    return detector, raised


def take_recorded(con: duckdb.DuckDBPyConnection) -> list[tuple[int, datetime | None]]:
    """Detector.take_recorded of the connection's detector (none yet: nothing)."""
    detector = _DETECTORS.get(con)
    return detector.take_recorded() if detector is not None else []

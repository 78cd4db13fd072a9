"""`pitlog replay`: one shoe, event by event, and its discard rack read back hand by hand.

A replay is three queries over the shoe's events through the views' macros (shoes_of,
card_events_of, rounds_of, rack_of, hands_of), and nearly all of its time is DuckDB planning
those macros (about 115 of 130 ms of CPU on a 292,769-event store;
benchmarks/results.md, session 23), not reading rows. So the writer keeps each shoe's
replay as rows (projections/replay_kept.py: tables `replay_shoes`, `replay_events`,
`replay_hands`), and a replay reads them when they still say what the queries would
(`stored`), through plain scans that plan in a millisecond or two. Otherwise it runs the
queries. Either way the answer is the same rows (docs/architecture.md, principle 6: the writer
serves the reads).

The writer keeps, with a shoe's replay, its rounds' rows and settlements as a dispute
reads them (projections/dispute_sql.py ROUNDS and SETTLEMENTS, in the same context as the
replay: tables `replay_rounds`, `replay_settlements`), so a dispute about a round of a kept shoe
plans neither the rounds nor the ledger macros (`kept_round`, `kept_settlements`).

When kept rows still hold: the queries read only the events of the shoe's table whose seq
lies between the shoe's first and last (`SHOE_SPAN`), its dealer taps from `taps_from`
(projections/lookup.py: the table's latest tap at or before the shoe's first event, None when
there is none, then from the table's start) to the shoe's last, and (the settlements) the
table's TableOpened for the paytable in force at each round, which is never one before the
opening in force at the shoe's first seq (OPENED_FROM): the openings from that one's seq to the
shoe's last. The events table only grows, so those events are the ones the rows were made from
exactly when their number is the same, the number of those openings is the same, and the
shoe's span is the same; a late line of the shoe outside it moves the span, a late tap inside
it (or any event of the table there) moves the number, a tap later than `taps_from` but before
the shoe is inside it too, and a late opening at or after the one in force at the shoe's start
moves the openings (one before it is in force for none of the shoe's rounds). The kept rows
also carry the definition they were made by (`replay_tag`: the views as the store holds them,
with their SQL and DuckDB's version, and the kept queries), so neither an upgraded pitlog nor a
store whose views another pitlog made again since reads rows made by other definitions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cache

import duckdb

from events.errors import NotFoundError, ProjectionError
from projections.dispute_sql import KEPT_QUERIES
from projections.lookup import taps_from
from projections.queries import SHOE_COLUMNS, Row, rows
from projections.views import VIEW_NAMES

# The kept replays (projections/replay_kept.py writes them): one row per shoe in SHOES (its
# shoes row, span, taps_from and the number of events the replay read), its replay's rows in
# EVENTS and HANDS with their order (`ord`).
SHOES = "replay_shoes"
EVENTS = "replay_events"
HANDS = "replay_hands"
# ... and, for its rounds' disputes (projections/dispute.py), the rows of dispute_sql.ROUNDS and
# dispute_sql.SETTLEMENTS in the shoe's context.
ROUNDS = "replay_rounds"
SETTLEMENTS = "replay_settlements"
KEPT = (SHOES, EVENTS, HANDS, ROUNDS, SETTLEMENTS)


@dataclass(frozen=True, slots=True)
class ShoeReplay:
    """One shoe, event by event, and its discard rack read back hand by hand."""

    shoe: Row
    events: list[Row] = field(default_factory=list)
    hands: list[Row] = field(default_factory=list)


# Whether a shoe's events (aggregated) close it: a ShoeClosed after its last CardsLoaded (a shoe
# id loaded again after its close, as sql/macros.sql shoe_loads_of allows, is open again).
CLOSED = ("coalesce(max(seq) FILTER (event_type = 'ShoeClosed') > "
          "coalesce(max(seq) FILTER (event_type = 'CardsLoaded'), -1), false)")

# Which table used the shoe, and the first and last seq of its events there (the shoes view's
# first_seq and last_seq): one scan of three columns. Every event of the shoe lies between them,
# and events are stored in log order, so the queries below read the shoe's events through that
# range and DuckDB skips the row groups outside it (shoes_of, rack_of, hands_of and rounds_of
# of projections/sql/ are those views' rows of one shoe). `closed`: CLOSED
# (replay_kept keeps open shoes only while its follower is idle).
SHOE_SPAN = f"""
SELECT table_id, min(seq) AS first_seq, max(seq) AS last_seq, {CLOSED} AS closed
FROM events
WHERE shoe_id = $shoe AND ($table IS NULL OR table_id = $table)
GROUP BY table_id ORDER BY table_id
"""

SHOE_ROW = (f"SELECT {', '.join(SHOE_COLUMNS)} FROM shoes_of($table, $shoe, $first, $last, "
            "taps_from := $taps_from)")

# `role`: what a card of a round did (sql/cards.sql, card_role, from its place among the round's
# cards, round_cards: the rounds view's card_seqs): the first and second cards on a wrong box,
# the deciding third card (diverted, or drawn in error), a redraw, a card exposed early; NULL
# for every other event, the first and second cards on their boxes, and a card drawn in error
# that the next CardDrawn placed (that CardDrawn carries the role). The timeline is the log, so
# a card event recorded twice shows twice; the copy (not in card_events_of, which keeps each
# event id's first copy) says so, and is no card of the round (DUPLICATE_EVENT flags it).
REPLAY_EVENTS = """
SELECT t.seq, t.occurred_at, t.round_no, t.actor, t.event_type, t.description,
       CASE WHEN is_card_event(t.event_type) AND e.seq IS NULL
            THEN 'recorded again (the event id of an earlier card event): one card, counted once'
            WHEN t.event_type IN ('CardDrawn', 'CardDrawnInError') AND r.round_no IS NOT NULL
            THEN card_role(list_position(r.card_seqs, t.seq), e.destination, r.third_card_pos,
                           r.kind) END AS role
FROM timeline AS t
LEFT JOIN card_events_of($table, $shoe, $first, $last) AS e
       ON e.seq = t.seq AND e.log_partition = t.log_partition AND e.log_offset = t.log_offset
LEFT JOIN rounds_of($table, $shoe, NULL, $first, $last, taps_from := $taps_from) AS r
       ON r.table_id = t.table_id AND r.shoe_id = t.shoe_id AND r.round_no = t.round_no
WHERE t.table_id = $table AND t.shoe_id = $shoe AND t.seq BETWEEN $first AND $last
ORDER BY t.seq, t.log_offset
"""

# One row per racking: a burn, a card found face up, or one CardsRacked (a round's hand), in
# rack order, beside the hand as dealt and the round's cards and result: the third card that
# decided it (sql/cards.sql, deciding_index) and any card out after it.
REPLAY_HANDS = """
WITH racking AS (
    SELECT table_id, shoe_id, source, round_no, seq,
           min(rack_position) AS first_position, max(rack_position) AS last_position,
           string_agg(card, ' ' ORDER BY rack_position) AS racked
    FROM rack_of($table, $shoe, $first, $last)
    GROUP BY table_id, shoe_id, source, round_no, seq
)
SELECT
    CASE WHEN first_position = last_position THEN CAST(first_position AS VARCHAR)
         ELSE first_position || '-' || last_position END AS rack_positions,
    k.source, k.round_no, k.racked,
    CASE WHEN k.source = 'round' THEN h.dealt END AS dealt,
    CASE WHEN k.source = 'round' THEN h.racked_in_dealing_order END AS racked_in_dealing_order,
    CASE WHEN k.source = 'round' THEN r.kind END AS kind,
    CASE WHEN k.source = 'round' THEN r.spread END AS spread,
    CASE WHEN k.source = 'round' THEN r.middle_card END AS third_card,
    CASE WHEN k.source = 'round' THEN lower(r.third_card_box) END AS third_card_box,
    CASE WHEN k.source = 'round' THEN array_to_string(r.redrawn_cards, ' ') END AS redrawn,
    CASE WHEN k.source = 'round' THEN r.outcome END AS outcome,
    CASE WHEN k.source = 'round' THEN r.dealer END AS dealer
FROM racking AS k
LEFT JOIN hands_of($table, $shoe, $first, $last) AS h USING (table_id, shoe_id, round_no)
LEFT JOIN rounds_of($table, $shoe, NULL, $first, $last, taps_from := $taps_from) AS r
    USING (table_id, shoe_id, round_no)
ORDER BY k.first_position
"""

# The number of events a replay of the table's seqs lo..last reads (module docstring).
SPAN_EVENTS = "SELECT count(*) FROM events WHERE table_id = $table AND seq BETWEEN $lo AND $last"


# The openings a kept shoe's settlements can read (module docstring): each round's paytable is
# the table's latest TableOpened at or before its first card (sql/ledger.sql, an ASOF join on
# seq; of two at one seq, the later in the log), so none before the one in force at the shoe's
# first seq (OPENED_FROM; 0 when none: seqs start at 1, events/wire/codec.py, so then every
# opening from the table's start) is ever read. Counted
# from that one's seq, not from the table's start: a count from the start read every row group
# of the table's history for each kept lookup (5.1 ms p50 at 10M, benchmarks/results.md,
# session 46), and grew with it.
OPENED_FROM = ("SELECT coalesce(max(seq), 0) FROM events WHERE table_id = $table "
               "AND seq <= $first AND event_type = 'TableOpened'")
OPENINGS = ("SELECT count(*) FROM events WHERE table_id = $table "
            "AND seq BETWEEN $opened_from AND $last AND event_type = 'TableOpened'")


@cache
def _queries_digest() -> str:
    return hashlib.sha256("\0".join((SHOE_ROW, REPLAY_EVENTS, REPLAY_HANDS, OPENED_FROM,
                                      OPENINGS)
                                    + KEPT_QUERIES).encode()).hexdigest()


# The comment every view of the store carries (views.ensure_views: `pitlog views <views_
# fingerprint>`, their SQL and DuckDB's version, of the pitlog that made them), one per distinct
# comment among the views the replay's queries stand on; and the kept tables' comments. One
# catalog statement: a dispute asks it on every call.
_TAGS = f"""
SELECT (SELECT list(DISTINCT coalesce(comment, '')) FROM duckdb_views()
        WHERE database_name = current_database() AND schema_name = 'main'
          AND list_contains({list(VIEW_NAMES)!r}, view_name)) AS views,
       (SELECT list(coalesce(comment, '')) FROM duckdb_tables()
        WHERE database_name = current_database() AND schema_name = 'main'
          AND list_contains({list(KEPT)!r}, table_name)) AS kept
"""


def _tag_of(views: list[str] | None) -> str | None:
    """replay_tag from the views' distinct comments (_TAGS)."""
    if views is None or len(views) != 1 or not views[0].startswith("pitlog views "):
        return None
    digest = hashlib.sha256(f"{views[0]}\0{_queries_digest()}".encode()).hexdigest()
    return f"pitlog replay {digest}"


def replay_tag(con: duckdb.DuckDBPyConnection) -> str | None:
    """The definition kept replays of this store are made by: the views as the store holds them
    (the comment ensure_views gave them; the queries run the store's macros, whichever pitlog
    made them) and the kept queries (this file's and dispute_sql.KEPT_QUERIES). None when the
    views carry no one tag (no views, or one replaced by hand): then no kept replay is read or
    made. The kept tables' comment holds it."""
    ((views, _kept),) = con.execute(_TAGS).fetchall()
    return _tag_of(views)


@dataclass(frozen=True, slots=True)
class Span:
    """A shoe's table, first and last seq, and whether it has a ShoeClosed (SHOE_SPAN)."""

    table: str
    shoe: str
    first: int
    last: int
    closed: bool


def shoe_span(con: duckdb.DuckDBPyConnection, shoe_id: str, table: str | None = None) -> Span:
    """The shoe's span. Raises NotFoundError for an unknown shoe, and ProjectionError if two
    tables used the same shoe id and `table` does not say which one."""
    found = rows(con, SHOE_SPAN, {"shoe": shoe_id, "table": table})
    if not found:
        where = f" at table {table}" if table else ""
        raise NotFoundError(f"no shoe {shoe_id!r}{where}; `pitlog shoes` lists the shoes")
    if len(found) > 1:
        tables = ", ".join(r["table_id"] for r in found)
        raise ProjectionError(f"shoe {shoe_id!r} was used at tables {tables}; name the table "
                              f"(`pitlog replay {shoe_id} --table {found[0]['table_id']}`)")
    (f,) = found
    return Span(f["table_id"], shoe_id, f["first_seq"], f["last_seq"], bool(f["closed"]))


def query_params(con: duckdb.DuckDBPyConnection, span: Span) -> dict[str, object]:
    """The three queries' parameters. The dealers' look-up reads the table's taps from the
    last one before the shoe (lookup.py)."""
    return {"table": span.table, "shoe": span.shoe, "first": span.first, "last": span.last,
            "taps_from": taps_from(con, span.table, span.first)}


def replay_shoe(con: duckdb.DuckDBPyConnection, shoe_id: str,
                table: str | None = None) -> ShoeReplay:
    """The shoe's events in order (time, type, a one-line description) and its hands in
    discard-rack order: the kept rows while they hold, else the queries (module docstring)."""
    span = shoe_span(con, shoe_id, table)
    kept = stored(con, span)
    return kept if kept is not None else computed(con, span)


def computed(con: duckdb.DuckDBPyConnection, span: Span) -> ShoeReplay:
    """The shoe's replay from its queries, kept rows or not."""
    params = query_params(con, span)
    (shoe,) = rows(con, SHOE_ROW, params)
    return ShoeReplay(shoe, rows(con, REPLAY_EVENTS, params), rows(con, REPLAY_HANDS, params))


def kept_tables_current(con: duckdb.DuckDBPyConnection) -> bool:
    """The kept tables exist, made by this definition of this store (replay_tag): each of
    KEPT carries the tag. Through the catalog, not a statement that can fail: inside a
    `pitlog serve` request's transaction a failed statement would abort every later one."""
    ((views, kept),) = con.execute(_TAGS).fetchall()
    tag = _tag_of(views)
    return tag is not None and kept is not None and len(kept) == len(KEPT) and \
        all(comment == tag for comment in kept)


def span_events(con: duckdb.DuckDBPyConnection, table: str, taps_from: int | None,
                last: int) -> int:
    """How many events of `table` a replay reads up to its shoe's `last` seq: from its dealer
    look-up's start, `taps_from` (the table's start when None). Kept with the rows; equal
    again only while no event has come among them (module docstring)."""
    ((n,),) = con.execute(SPAN_EVENTS, {"table": table, "lo": 0 if taps_from is None
                                        else taps_from, "last": last}).fetchall()
    return int(n)


def opened_from(con: duckdb.DuckDBPyConnection, span: Span) -> int:
    """The seq of the opening in force at the shoe's first seq (OPENED_FROM); 0 when the table
    has no opening at or before it."""
    ((seq,),) = con.execute(OPENED_FROM, {"table": span.table, "first": span.first}).fetchall()
    return int(seq)


def openings(con: duckdb.DuckDBPyConnection, table: str, since: int, last: int) -> int:
    """How many TableOpened of `table` lie between seq `since` (opened_from) and `last`
    (OPENINGS). Kept with the rows; equal again only while no opening has come among them
    (module docstring)."""
    ((n,),) = con.execute(OPENINGS, {"table": table, "opened_from": since,
                                     "last": last}).fetchall()
    return int(n)


# Both counts a kept shoe row is checked against (span_events, openings), in one statement.
_NOW = (f"SELECT ({SPAN_EVENTS}) AS span_events, "
        f"({OPENINGS}) AS openings")


def kept_shoe_row(con: duckdb.DuckDBPyConnection, span: Span) -> Row | None:
    """The kept shoes row of the shoe when its kept rows hold (module docstring): the tag, the
    span, the number of events they read and of the table's openings; None otherwise."""
    if not kept_tables_current(con):
        return None
    found = rows(con, f"SELECT taps_from, span_events, openings_from, openings, "
                      f"{', '.join(SHOE_COLUMNS)} "
                      f"FROM {SHOES} WHERE table_id = $table AND shoe_id = $shoe AND "
                      "first_seq = $first AND last_seq = $last",
                 {"table": span.table, "shoe": span.shoe, "first": span.first,
                  "last": span.last})
    if len(found) != 1:
        return None
    shoe = dict(found[0])
    lo, expected, opened = shoe.pop("taps_from"), shoe.pop("span_events"), shoe.pop("openings")
    ((n, now_opened),) = con.execute(_NOW, {"table": span.table, "lo": 0 if lo is None else lo,
                                            "opened_from": shoe.pop("openings_from"),
                                            "last": span.last}).fetchall()
    return shoe if (n, now_opened) == (expected, opened) else None


def stored(con: duckdb.DuckDBPyConnection, span: Span) -> ShoeReplay | None:
    """The kept replay of the shoe, when it holds (kept_shoe_row); None otherwise."""
    shoe = kept_shoe_row(con, span)
    if shoe is None:
        return None
    key: dict[str, object] = {"table": span.table, "shoe": span.shoe}
    return ShoeReplay(shoe, _kept_rows(con, EVENTS, key), _kept_rows(con, HANDS, key))


def _kept_rows(con: duckdb.DuckDBPyConnection, table: str, key: dict[str, object]) -> list[Row]:
    return rows(con, f"SELECT * EXCLUDE (table_id, shoe_id, ord) FROM {table} "
                     "WHERE table_id = $table AND shoe_id = $shoe ORDER BY ord", key)


def kept_round(con: duckdb.DuckDBPyConnection, table: str, shoe: str,
               round_no: int) -> Row | None:
    """The kept row of dispute_sql.ROUNDS for the round (ask kept_shoe_row first)."""
    found = rows(con, f"SELECT * EXCLUDE (ord) FROM {ROUNDS} WHERE table_id = $table AND "
                      "shoe_id = $shoe AND round_no = $round",
                 {"table": table, "shoe": shoe, "round": round_no})
    return found[0] if found else None


def kept_settlements(con: duckdb.DuckDBPyConnection, table: str, shoe: str, round_no: int,
                     seat: int | None) -> list[Row]:
    """The kept rows of dispute_sql.SETTLEMENTS for the round, one seat's or all (ask
    kept_shoe_row first)."""
    return rows(con, f"SELECT * EXCLUDE (table_id, shoe_id, ord, round_no) FROM {SETTLEMENTS} "
                     "WHERE table_id = $table AND shoe_id = $shoe AND round_no = $round AND "
                     "($seat IS NULL OR seat = $seat) ORDER BY ord",
                {"table": table, "shoe": shoe, "round": round_no, "seat": seat})

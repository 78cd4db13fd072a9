"""The read side's questions, as plain functions over an open connection (the CLI calls these).

Every query is parameterised: user input is bound, never pasted into SQL. Rows are fetched
through Arrow, which gives timezone-aware datetimes without the optional pytz package that
DuckDB's own Python conversion of TIMESTAMPTZ needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from events.errors import NotFoundError, ProjectionError
from projections.export import Rows
from projections.lookup import taps_from

Row = dict[str, Any]

SHOE_COLUMNS = ("table_id", "shoe_id", "decks", "opened_at", "closed_at", "rounds",
                "cards_dealt", "burns", "cutting_card_reached_at", "dealers")


def rows(con: duckdb.DuckDBPyConnection, sql: str,
         params: Sequence[object] | dict[str, object] | None = None) -> Rows:
    """Run one read-only query with bound parameters; a dict per row (DuckDB's own values,
    not through Arrow: a lookup command must not import pyarrow, issue 19)."""
    try:
        return Rows.of_relation(con.sql(sql, params=params))
    except duckdb.CatalogException as exc:
        raise ProjectionError(
            f"the database has no pitlog views ({exc}); run `pitlog project` first") from exc


def list_shoes(con: duckdb.DuckDBPyConnection, table: str | None = None) -> list[Row]:
    """Every shoe (or one table's), in table order then opening order."""
    cols = ", ".join(SHOE_COLUMNS)
    return rows(con, f"SELECT {cols} FROM shoes WHERE $table IS NULL OR table_id = $table "
                     "ORDER BY table_id, opened_at, shoe_id", {"table": table})


@dataclass(frozen=True, slots=True)
class ShoeReplay:
    """One shoe, event by event, and its discard rack read back hand by hand."""

    shoe: Row
    events: list[Row] = field(default_factory=list)
    hands: list[Row] = field(default_factory=list)


# Which table used the shoe, and the first and last seq of its events there (the shoes view's
# first_seq and last_seq): one scan of three columns. Every event of the shoe lies between them,
# and events are stored in log order, so the queries below read the shoe's events through that
# range and DuckDB skips the row groups outside it (shoes_of, rack_of, hands_of and rounds_of
# of projections/sql/ are those views' rows of one shoe).
_SHOE_SPAN = """
SELECT table_id, min(seq) AS first_seq, max(seq) AS last_seq FROM events
WHERE shoe_id = $shoe AND ($table IS NULL OR table_id = $table)
GROUP BY table_id ORDER BY table_id
"""

# `role`: what a card of a round did (sql/cards.sql, card_role, from its place among the round's
# cards, round_cards: the rounds view's card_seqs): the first and second cards on a wrong box,
# the deciding third card (diverted, or drawn in error), a redraw, a card exposed early; NULL
# for every other event, the first and second cards on their boxes, and a card drawn in error
# that the next CardDrawn placed (that CardDrawn carries the role). The timeline is the log, so
# a card event recorded twice shows twice; the copy (not in card_events_of, which keeps each
# event id's first copy) says so, and is no card of the round (DUPLICATE_EVENT flags it).
_REPLAY_EVENTS = """
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
_REPLAY_HANDS = """
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


def replay_shoe(con: duckdb.DuckDBPyConnection, shoe_id: str,
                table: str | None = None) -> ShoeReplay:
    """The shoe's events in order (time, type, a one-line description) and its hands in
    discard-rack order. Raises NotFoundError for an unknown shoe, and ProjectionError if two
    tables used the same shoe id and `table` does not say which one."""
    found = rows(con, _SHOE_SPAN, {"shoe": shoe_id, "table": table})
    if not found:
        where = f" at table {table}" if table else ""
        raise NotFoundError(f"no shoe {shoe_id!r}{where}; `pitlog shoes` lists the shoes")
    if len(found) > 1:
        tables = ", ".join(r["table_id"] for r in found)
        raise ProjectionError(f"shoe {shoe_id!r} was used at tables {tables}; name the table")
    table_id, first = found[0]["table_id"], found[0]["first_seq"]
    # The dealers' look-up reads the table's taps from the last one before the shoe (lookup.py).
    params = {"table": table_id, "shoe": shoe_id, "first": first, "last": found[0]["last_seq"],
              "taps_from": taps_from(con, table_id, first)}
    (shoe,) = rows(con, f"SELECT {', '.join(SHOE_COLUMNS)} FROM shoes_of($table, $shoe, $first, "
                        "$last, taps_from := $taps_from)", params)
    return ShoeReplay(shoe, rows(con, _REPLAY_EVENTS, params), rows(con, _REPLAY_HANDS, params))

"""Dispute reconstruction: "what happened at table 7, seat 3, at 21:14?"

The hand in play at a moment (or named by shoe and round) is rebuilt from the events: its cards
in discard-rack order (13:47-20.31(d)15: "in order ... to reconstruct the hand in case of a
question or dispute") with the wall-clock time each left the shoe, so the video can be found;
every announcement; every wager, raise and void-or-play choice per seat; the settlement the
rules require (the ledger view) next to the one made; and the anomalies that touch the round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NoReturn

import duckdb

from events.errors import NotFoundError
from projections.anomalies import anomalies_touching
from projections.lookup import taps_from
from projections.moment import SEAT_ABSENT, OutsideRound, locate, neighbours
from projections.queries import rows

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Dispute:
    """One round rebuilt; the lists are filtered to one seat when a seat was asked for."""

    round: Row
    cards: list[Row] = field(default_factory=list)
    announcements: list[Row] = field(default_factory=list)
    wagers: list[Row] = field(default_factory=list)
    settlements: list[Row] = field(default_factory=list)
    anomalies: list[Row] = field(default_factory=list)


# The round's row of the rounds view, rounds_of (sql/rounds.sql), which reads the round's events
# between its first and last seq (_SPAN or moment.locate finds them) and the table's
# DealerTappedIn up to them, instead of aggregating every round of the store to read one.
_ROUND = """
SELECT table_id, shoe_id, round_no, dealer, started_at, ended_at, left_card, right_card,
       middle_card AS third_card, third_card_seq, third_card_pos,
       lower(third_card_box) AS third_card_box,
       redrawn_cards, middle_cards_drawn, kind, spread,
       outcome AS players_result, voided, announcements, first_seq, last_seq
FROM rounds_of($table, $shoe, $round, $first, $last, taps_from := $taps_from)
"""

# The first and last seq of a round named by shoe and round: one scan of three columns.
_SPAN = """
SELECT min(seq) AS first_seq, max(seq) AS last_seq FROM events
WHERE table_id = $table AND shoe_id = $shoe AND round_no = $round
"""

# The queries below read the round's events between its first and last seq (every one of them
# lies there, by the rounds view's definition): events are stored in log order, so DuckDB skips
# the row groups outside that range instead of scanning the whole table.

# 13:47-20.31(d)15: each racked card matched to the card out of the shoe it came from (the k-th
# copy racked of a card to its k-th copy among the round's cards), in rack order; then any card
# out but never racked. The round's cards are sql/macros.sql's round_cards (one definition with the
# rounds view and the ledger): every card out of the shoe in game order, wherever it went, a
# card drawn in error and not used included ((g)2). `role` says what each did from its place
# among them ($third_pos: the rounds view's third_card_pos, sql/cards.sql deciding_index; $kind):
# the first and second cards (on a wrong box they still count), the deciding third card (also
# when diverted or drawn in error), and the cards that decided nothing.
_CARDS = """
WITH card_events AS (
    -- each card event once (sql/macros.sql, card_events_of): a card recorded twice is one card
    SELECT * FROM card_events_of($table, $shoe, $first, $last) WHERE round_no = $round
),
round_cards AS (
    SELECT round_cards(list({'seq': seq, 'at': occurred_at, 'type': event_type, 'rank': rank,
                             'suit': suit, 'dest': destination}
                            ORDER BY occurred_at, seq, log_offset)) AS cards
    FROM card_events
),
drawn AS (
    SELECT c.seq AS drawn_seq, c.at AS drawn_at, c.rank AS rank, c.suit AS suit, pos,
           coalesce(c.dest, 'IN_ERROR') AS destination,
           row_number() OVER (PARTITION BY c.rank, c.suit ORDER BY pos) AS copy_no
    FROM (SELECT unnest(cards) AS c, generate_subscripts(cards, 1) AS pos FROM round_cards)
),
racked AS (
    SELECT seq AS racked_seq, occurred_at AS racked_at, pos, card.rank AS rank,
           card.suit AS suit,
           row_number() OVER (ORDER BY seq, log_offset, pos) AS rack_position,
           row_number() OVER (PARTITION BY card.rank, card.suit ORDER BY seq, log_offset, pos)
               AS copy_no
    -- unnest in the select list, not a lateral join: the filter then reaches the scan.
    FROM (SELECT seq, log_offset, occurred_at, unnest(cards) AS card,
                 generate_subscripts(cards, 1) AS pos
          FROM events
          WHERE table_id = $table AND shoe_id = $shoe AND round_no = $round
            AND seq BETWEEN $first AND $last AND event_type = 'CardsRacked')
),
found AS (
    SELECT seq, occurred_at, rank, suit FROM card_events WHERE event_type = 'CardFoundFaceUp'
)
SELECT r.rack_position, card_label(coalesce(r.rank, d.rank), coalesce(r.suit, d.suit)) AS card,
       CASE d.destination WHEN 'IN_ERROR' THEN 'drawn in error' ELSE lower(d.destination) END
           AS box,
       CASE WHEN d.drawn_seq IS NULL THEN NULL  -- racked but not drawn in this round
            ELSE card_role(d.pos, nullif(d.destination, 'IN_ERROR'), $third_pos, $kind)
       END AS role,
       d.drawn_at, d.drawn_seq, r.racked_at, r.racked_seq,
       CASE WHEN r.rank IS NULL THEN 'drawn but never racked'
            WHEN d.rank IS NULL THEN 'racked but not drawn in this round'
            ELSE '' END AS note
FROM racked AS r
FULL OUTER JOIN drawn AS d USING (rank, suit, copy_no)
UNION ALL
SELECT NULL, card_label(rank, suit), 'found face up', NULL, occurred_at, seq, occurred_at, seq,
       'found face up in the shoe: to the discard rack, not used (13:47-20.31(g)1)'
FROM found
ORDER BY rack_position NULLS LAST, drawn_at, drawn_seq
"""

_ANNOUNCEMENTS = """
SELECT seq, occurred_at, phrase, lower(meaning) AS meaning, "value"
FROM events
WHERE table_id = $table AND shoe_id = $shoe AND round_no = $round
  AND seq BETWEEN $first AND $last AND event_type = 'Announced'
ORDER BY occurred_at, seq, log_offset  -- game order (sql/macros.sql), as said at the table
"""

_WAGERS = """
SELECT seat, area, seq, occurred_at,
       CASE event_type WHEN 'WagerPlaced' THEN 'wager placed'
                       WHEN 'WagerChanged' THEN 'wager changed'
                       WHEN 'WagerRemoved' THEN 'wager removed'
                       WHEN 'RaisePlaced' THEN 'raise placed'
                       ELSE 'chose to ' || lower(choice) END AS action,
       player_id, amount_cents, lower(instrument) AS instrument
FROM events
WHERE table_id = $table AND shoe_id = $shoe AND round_no = $round
  AND seq BETWEEN $first AND $last
  AND event_type IN ('WagerPlaced', 'WagerChanged', 'WagerRemoved', 'RaisePlaced',
                     'VoidOrPlayChosen')
  AND ($seat IS NULL OR seat = $seat)
ORDER BY seat, area, seq, log_offset
"""

# The settlement the rules require (the ledger's expected columns) next to the one made: the
# ledger's rows of this round, from ledger_of (sql/ledger.sql), which computes them from the round's
# events only (the `ledger` view builds every round's before a filter can apply).
_SETTLEMENTS = """
SELECT seat, area, wager_kind, player_id, amount_cents AS wager_cents,
       CASE expected_outcome
           WHEN 'WON' THEN printf('WON: pay %s at %d to 1', dollars(expected_paid_cents),
                                  expected_odds)
           WHEN 'LOST' THEN printf('LOST: collect %s', dollars(expected_collected_cents))
           WHEN 'VOID' THEN printf('VOID: return %s', dollars(expected_returned_cents))
           ELSE 'no decision yet' END AS required,
       CASE WHEN settlement_count = 0 THEN 'not settled'
            ELSE actual_outcome || ': '
                 || concat_ws(', ',
                        CASE WHEN actual_paid_cents > 0 OR actual_outcome LIKE '%WON%'
                             THEN 'paid ' || dollars(actual_paid_cents)
                                  || coalesce(printf(' at %d to 1', actual_odds), '') END,
                        CASE WHEN actual_collected_cents > 0
                             THEN 'collected ' || dollars(actual_collected_cents) END,
                        CASE WHEN actual_returned_cents > 0 OR actual_outcome LIKE '%VOID%'
                             THEN 'returned ' || dollars(actual_returned_cents) END) END AS made,
       status, settlement_seqs,
       (SELECT max(e.occurred_at) FROM events AS e
        WHERE e.table_id = l.table_id AND e.seq BETWEEN $first AND $last
          AND list_contains(l.settlement_seqs, e.seq)) AS settled_at
FROM ledger_of($table, $shoe, $round, $first, $last, taps_from := $taps_from) AS l
WHERE $seat IS NULL OR seat = $seat
ORDER BY seat, area, wager_kind
"""


def dispute(con: duckdb.DuckDBPyConnection, table: str, *, at: datetime | None = None,
            shoe: str | None = None, round_no: int | None = None,
            seat: int | None = None) -> Dispute:
    """Rebuild the round at `table` in play at `at`, or the round `round_no` of `shoe`.

    A moment in no round, an unknown table, or a seat with no wager in the round raises
    OutsideRound (moment.py), naming the rounds just before and after: never another hand.
    """
    if at is not None:
        span = locate(con, table, at)
        shoe, round_no = span.shoe_id, span.round_no
        first, last = span.first_seq, span.last_seq
    elif shoe is None or round_no is None:
        raise NotFoundError("name the moment (--at) or the round (--round SHOE:ROUND)")
    else:
        found = rows(con, _SPAN, {"table": table, "shoe": shoe, "round": round_no})[0]
        first, last = found["first_seq"], found["last_seq"]
    params: dict[str, object] = {"table": table, "shoe": shoe, "round": round_no}
    # The dealer's look-up starts at the table's last tap before the round (lookup.py).
    taps = {"taps_from": None if first is None else taps_from(con, table, first)}
    head = [] if first is None else rows(  # NULL: the round has no event
        con, _ROUND, {**params, "first": first, "last": last, **taps})
    if not head:
        raise NotFoundError(f"no round {round_no} of shoe {shoe} at table {table}; "
                            f"`pitlog replay {shoe}` lists its rounds")
    r = head[0]
    params.update(first=r["first_seq"], last=r["last_seq"])
    wagers = rows(con, _WAGERS, {**params, "seat": seat})
    if seat is not None and not any(w["action"] == "wager placed" for w in wagers):
        _seat_absent(con, table, r, seat, at)
    return Dispute(
        round=r,
        cards=rows(con, _CARDS, {**params, "third_pos": r["third_card_pos"], "kind": r["kind"]}),
        announcements=rows(con, _ANNOUNCEMENTS, params),
        wagers=wagers,
        settlements=rows(con, _SETTLEMENTS, {**params, "seat": seat, **taps}),
        anomalies=anomalies_touching(con, table, shoe, round_no, r["first_seq"], r["last_seq"]),
    )


def _seat_absent(con: duckdb.DuckDBPyConnection, table: str, r: Row, seat: int,
                 at: datetime | None) -> NoReturn:
    """The seat placed no wager in round `r`: say so, with the seats that did and the seat's
    own rounds just before and after."""
    seats = tuple(sorted({int(w["seat"]) for w in rows(con, _WAGERS, {
        "table": table, "shoe": r["shoe_id"], "round": r["round_no"], "first": r["first_seq"],
        "last": r["last_seq"], "seat": None}) if w["seat"] is not None}))
    moment = at or r["started_at"]
    near = neighbours(con, table, moment, seat)
    raise OutsideRound(table, moment, SEAT_ABSENT, before=near["before"], after=near["after"],
                       seat=seat, seats=seats)

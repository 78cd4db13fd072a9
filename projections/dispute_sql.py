"""The dispute's queries (projections/dispute.py runs them; projections/replay_kept.py keeps two
of them for each shoe it keeps, so a dispute about a round of a kept shoe reads stored rows).

Each round is read in its *context*: the events of its shoe's table between the shoe's first
and last seq, and the table's dealer taps from the latest one at or before them
(projections/replay.py `query_params`, the replay's own context); a round with no shoe is read
between its own first and last seq. The context decides which copy of a card event recorded
twice is the card (sql/macros.sql card_events_of keeps each event id's first copy within the
events it reads), so the round's row, its cards and its settlements are all read in the one
context, and a round of a shoe is the row the shoe's replay shows. ROUNDS and SETTLEMENTS give
the round $round of the context, or every round of it when $round is NULL, so the writer keeps
a shoe's at once and a dispute about a round not kept computes that round alone (rounds_of and
ledger_of read its own events, with each card event once over the context, the intruding cards,
paytable and decks as wide as for the whole shoe: the same rows, tests/projections/
test_replay_kept.py).
"""

from __future__ import annotations

# The rounds of the context, rows of the rounds view's macro rounds_of (sql/rounds.sql), which
# reads the context's events and the table's DealerTappedIn from $taps_from, instead of
# aggregating every round of the store to read a few. A round with no shoe: $shoe is NULL, and
# rounds_of then reads the rounds of every shoe in the round's seqs (the dispute keeps the one
# with no shoe).
ROUNDS = """
SELECT table_id, shoe_id, round_no, dealer, started_at, ended_at, left_card, right_card,
       middle_card AS third_card, third_card_seq, third_card_pos,
       lower(third_card_box) AS third_card_box,
       redrawn_cards, middle_cards_drawn, kind, spread,
       outcome AS players_result, voided, announcements, first_seq, last_seq
FROM rounds_of($table, $shoe, $round, $first, $last, taps_from := $taps_from)
ORDER BY round_no, shoe_id
"""

# The first and last seq of a round named by shoe and round: one scan of three columns.
SPAN = """
SELECT min(seq) AS first_seq, max(seq) AS last_seq FROM events
WHERE table_id = $table AND shoe_id IS NOT DISTINCT FROM $shoe AND round_no = $round
"""

# The tables that used a shoe (for the error of a round named by a shoe and number that the
# table never dealt).
SHOE_TABLES = """
SELECT DISTINCT table_id FROM events WHERE shoe_id = $shoe ORDER BY table_id
"""

# The queries below read the round's events between its first and last seq ($round_first,
# $round_last: every one of them lies there, by the rounds view's definition): events are stored
# in log order, so DuckDB skips the row groups outside that range instead of scanning the whole
# table. A round with no shoe ($shoe NULL) is its events with no shoe.

# 13:47-20.31(d)15: each racked card matched to the card out of the shoe it came from (the k-th
# copy racked of a card to its k-th copy among the round's cards), in rack order; then any card
# out but never racked. The round's cards are sql/macros.sql's round_cards (one definition with the
# rounds view and the ledger): every card out of the shoe in game order, wherever it went, a
# card drawn in error and not used included ((g)2), each card event once in the context
# (card_events_of over $first..$last). `role` says what each did from its place among them
# ($third_pos: the rounds view's third_card_pos, sql/cards.sql deciding_index; $kind): the first
# and second cards (on a wrong box they still count), the deciding third card (also when diverted
# or drawn in error), and the cards that decided nothing.
CARDS = """
WITH card_events AS (
    -- each card event once (sql/macros.sql, card_events_of): a card recorded twice is one card
    SELECT * FROM card_events_of($table, $shoe, $first, $last)
    WHERE round_no = $round AND seq BETWEEN $round_first AND $round_last
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
          WHERE table_id = $table AND shoe_id IS NOT DISTINCT FROM $shoe AND round_no = $round
            AND seq BETWEEN $round_first AND $round_last AND event_type = 'CardsRacked')
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

ANNOUNCEMENTS = """
SELECT seq, occurred_at, phrase, lower(meaning) AS meaning, "value"
FROM events
WHERE table_id = $table AND shoe_id IS NOT DISTINCT FROM $shoe AND round_no = $round
  AND seq BETWEEN $round_first AND $round_last AND event_type = 'Announced'
ORDER BY occurred_at, seq, log_offset  -- game order (sql/macros.sql), as said at the table
"""

WAGERS = """
SELECT seat, area, seq, occurred_at,
       CASE event_type WHEN 'WagerPlaced' THEN 'wager placed'
                       WHEN 'WagerChanged' THEN 'wager changed'
                       WHEN 'WagerRemoved' THEN 'wager removed'
                       WHEN 'RaisePlaced' THEN 'raise placed'
                       ELSE 'chose to ' || lower(choice) END AS action,
       player_id, amount_cents, lower(instrument) AS instrument
FROM events
WHERE table_id = $table AND shoe_id IS NOT DISTINCT FROM $shoe AND round_no = $round
  AND seq BETWEEN $round_first AND $round_last
  AND event_type IN ('WagerPlaced', 'WagerChanged', 'WagerRemoved', 'RaisePlaced',
                     'VoidOrPlayChosen')
  AND ($seat IS NULL OR seat = $seat)
ORDER BY seat, area, seq, log_offset
"""

# The settlement the rules require (the ledger's expected columns) next to the one made, for
# every round of the context: the ledger's rows from ledger_of (sql/ledger.sql), which computes
# them from the context's events (the `ledger` view builds every round's before a filter can
# apply). Besides the context, ledger_of reads the table's paytable in force (its TableOpened
# at or before $last, however early) and the shoe's deck count (its CardsLoaded, inside it).
SETTLEMENTS = """
SELECT round_no, seat, area, wager_kind, player_id, amount_cents AS wager_cents,
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
FROM ledger_of($table, $shoe, $round, $first, $last, taps_from := $taps_from,
               shoe_from := $first) AS l
WHERE l.shoe_id IS NOT DISTINCT FROM $shoe
ORDER BY round_no, seat, area, wager_kind
"""

# What the writer keeps of a shoe for its rounds' disputes (replay_kept.py), by name.
KEPT_QUERIES = (ROUNDS, SETTLEMENTS)


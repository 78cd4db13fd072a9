-- pitlog views over the raw `events` table (one row per event; see projections/store.py).
--
-- Written for auditors: plain DuckDB SQL, no Python functions, so these views work in any
-- DuckDB client that opens the file. Rules are cited as in docs/architecture.md:
--   13:47-20.31 (casino nights), 13:69F-6 (casinos), GA (n) (the other gaming authority).
--
-- Ordering: within a table, events are ordered by their gapless sequence number `seq`, with
-- the log offset as a tie-breaker (a table's events all live in one log partition), so every
-- view is a pure function of the log's contents: a rebuild gives the same rows, bit for bit.

-- A card as surveillance reads it aloud: rank (2..10, J, Q, K, A) then suit: "AS", "10H".
-- rank_label is generated from events/reddog/rules.py (projections/reddog_macros.py).
CREATE OR REPLACE MACRO card_label(rank, suit) AS rank_label(rank) || suit;

-- Integer cents as dollars: 2500 -> '$25.00'. Money is never a float.
CREATE OR REPLACE MACRO dollars(cents) AS
    CASE WHEN cents < 0 THEN '-' ELSE '' END
    || printf('$%d.%02d', abs(cents) // 100, abs(cents) % 100);

-- The game order of a table's events: when each happened at the table, then seq. A table's
-- events reach the log from several devices (the card-reading shoe, the dealer terminal, the
-- shuffler), each in its own order; `seq` is the order the recorder received them, which across
-- devices is arrival order (batches, retries, a slow link), not the order of play. So "before"
-- and "after" in a round (a card before "Raises closed", a choice before the new third card)
-- compare occurred_at, each device's stamp of the moment at the table, and seq breaks ties and
-- keeps one device's lines in its own order. seq stays the order of the log for integrity
-- (SEQUENCE_GAP, CHAIN_BROKEN) and names the events that prove an anomaly.
-- NULL for no event (a NULL seq): a struct of NULLs would compare greater than every order.
CREATE OR REPLACE MACRO game_order(happened_at, at_seq) AS
    CASE WHEN at_seq IS NOT NULL THEN {'at': happened_at, 'seq': at_seq} END;

-- ONE CARD (13:47-20.31(g)1-2; 13:69F-6.7): a card found face up, or drawn in error, and the
-- next card out of the shoe, when that is a CardDrawn of the same rank and suit, are one
-- physical card: the dealer placing it ((g)1: "shall be placed in the discard rack"; (g)2:
-- "shall be used as though it were the next card from the shoe"). `card` and `next_card` are
-- structs with type, rank and suit, next_card NULL where none follows. The one definition of
-- the rule: each view that counts cards says only which card is next where it counts (a
-- round's cards: round_cards below; the cards dealt with no round: anomalies_rounds.sql's
-- loose_cards; a shoe's cards: anomalies_shoes.sql's cards_out).
CREATE OR REPLACE MACRO one_card(card, next_card) AS
    coalesce(card.type IN ('CardFoundFaceUp', 'CardDrawnInError') AND next_card.type = 'CardDrawn'
             AND next_card.rank = card.rank AND next_card.suit = card.suit, false);

-- A CARD DEALT, between the card out before it and the one after (structs with type, rank,
-- suit and dest; NULL where there is none), by ONE CARD above:
--   - every CardDrawn, to any box or the discard rack: the first two out make the spread
--     (13:47-20.31(d)5: "the first card ... the second card"), the deciding third card is
--     counted from them (deciding_index), and where each went is judged only by WRONG_BOX,
--     THIRD_CARD_DIVERTED and THIRD_CARD_REDRAWN. A card racked between the first two is the
--     second card, not invisible. Except the CardDrawn to the discard rack of a card found face
--     up just before it: the dealer placing that card where (g)1 puts it (to a box, it was
--     used: FACE_UP_CARD_USED, and it counts where it went);
--   - a card drawn in error takes its place in the order where it came out ((g)2), unless the
--     next card out is the same card (ONE CARD): then it is that CardDrawn. Otherwise the card
--     drawn in error is the card at that place (dest NULL) and the cards after it come after
--     it: the dealer who draws a loser in error and deals a winner instead is judged on the
--     loser (DRAWN_IN_ERROR_NOT_USED flags it).
-- Burns and cards found face up are not cards dealt ((d)1, (g)1).
CREATE OR REPLACE MACRO is_dealt_card(card_before, card, card_after) AS
    (card.type = 'CardDrawn' AND NOT is_face_up_placement(card_before, card))
    OR (card.type = 'CardDrawnInError' AND NOT one_card(card, card_after));

-- A card found face up put in the discard rack: the CardDrawn to the rack of the card found just
-- before it ((g)1: it "shall not be used in the game"), no card of the round.
CREATE OR REPLACE MACRO is_face_up_placement(card_before, card) AS
    coalesce(card.type = 'CardDrawn' AND card.dest = 'DISCARD_RACK'
             AND card_before.type = 'CardFoundFaceUp' AND one_card(card_before, card), false);

-- THE FIRST CARD OUT for the wagers (13:47-20.31(d)3, (d)6; GA (1), (4)): of `outs` (as
-- round_cards takes them), the first CardDrawn or CardDrawnInError that is not a card found
-- face up put in the rack (an outside audit, session 39: that placement closed the wagers, so a
-- wager changed after it was WAGER_ALTERED and owed at its old amount). A card drawn in error is
-- a card out of the shoe. NULL when none is out. The ledger (sql/ledger.sql first_cards), the
-- anomaly round facts and MULTIPLE_BETTING_AREAS (sql/anomalies_tables.sql) read it here.
CREATE OR REPLACE MACRO first_card_out(outs) AS
    list_filter(outs, lambda x, i: x.type IN ('CardDrawn', 'CardDrawnInError')
                AND NOT is_face_up_placement(CASE WHEN i > 1 THEN outs[i - 1] END, x))[1];

-- THE CARDS OF A ROUND: every card out of the shoe in the round that is a card dealt
-- (is_dealt_card), in game order, wherever it went, from `outs` (a list of {seq, at, type,
-- rank, suit, dest} of the round's CardDrawn, CardDrawnInError, CardFoundFaceUp and CardBurned
-- in game order): a card's neighbours are the cards out before and after it in the round. One
-- definition, used by the rounds view (so the ledger, reconciliation, theo win, statistics,
-- dispute and replay), the hands view and the anomaly round facts.
CREATE OR REPLACE MACRO round_cards(outs) AS
    list_filter(outs, lambda x, i: is_dealt_card(CASE WHEN i > 1 THEN outs[i - 1] END, x,
                                                 outs[i + 1]));

-- The kind of a round from its first two cards' ranks (13:47-20.31(d)7-8, (d)11; GA (5), (6),
-- (9)-(10)).
CREATE OR REPLACE MACRO round_kind(first_rank, second_rank) AS
    CASE WHEN first_rank IS NULL OR second_rank IS NULL THEN NULL
         WHEN first_rank = second_rank THEN 'pair'
         WHEN abs(first_rank - second_rank) = 1 THEN 'consecutive'
         ELSE 'spread' END;

-- The card events: every card out of the shoe, whichever way it came out (13:47-20.31(d)1-2,
-- (g)1-2): CardDrawn, CardDrawnInError, CardFoundFaceUp, CardBurned.
CREATE OR REPLACE MACRO is_card_event(kind) AS
    kind IN ('CardDrawn', 'CardDrawnInError', 'CardFoundFaceUp', 'CardBurned');

-- The events that make or end a burn debt beside the cards (13:47-20.31(d)1; 13:69F-6.4): a
-- shoe loaded, a dealer tapped in, a shoe closed. MISSING_BURN counts each once per event id
-- (anomalies_shoes.sql burn_stream), and live detection brings their earlier copies to the
-- cards window (projections/incremental.py, Detector.earlier_copies).
CREATE OR REPLACE MACRO is_burn_state_event(kind) AS
    kind IN ('CardsLoaded', 'DealerTappedIn', 'ShoeClosed');

-- The events of the tables and shoes asked for (a NULL argument: all of them). from_seq and
-- to_seq, given with in_table, only narrow the scan (events are stored in log order, so DuckDB
-- skips the row groups outside them). The one place these predicates are written: every
-- *_of macro below reads its events through here (card_events_of, events_once_of).
CREATE OR REPLACE MACRO events_in(in_table, in_shoe, from_seq, to_seq) AS TABLE
SELECT * FROM events
WHERE (in_table IS NULL OR table_id = in_table) AND (in_shoe IS NULL OR shoe_id = in_shoe)
  AND (from_seq IS NULL OR seq >= from_seq) AND (to_seq IS NULL OR seq <= to_seq);

-- Each card event once (DUPLICATE_EVENT is the finding, docs/anomalies.md): the card events
-- (is_card_event) of the tables asked for (events_in), each event id at its first copy in seq
-- order. A card event recorded twice (a device line re-sent and recorded again) is one card out
-- of the shoe, so no card view counts the copy: the hands, the rounds, the rack, the shoes'
-- counts, the card anomalies, the dispute and the replay read their cards from here. An event
-- without an id is kept.
CREATE OR REPLACE MACRO card_events_of(in_table, in_shoe, from_seq, to_seq) AS TABLE
SELECT * FROM events_in(in_table, in_shoe, from_seq, to_seq)
WHERE is_card_event(event_type)
QUALIFY event_id IS NULL
     OR row_number() OVER (PARTITION BY table_id, event_id ORDER BY seq, log_offset) = 1;

-- The events of the tables asked for with each card event once (card_events_of); every other
-- event as recorded (a repeated wager or settlement is the ledger's to judge).
CREATE OR REPLACE MACRO events_once_of(in_table, in_shoe, from_seq, to_seq) AS TABLE
SELECT * FROM events_in(in_table, in_shoe, from_seq, to_seq)
WHERE NOT is_card_event(event_type)
UNION ALL
SELECT * FROM card_events_of(in_table, in_shoe, from_seq, to_seq);

-- The CardDrawn events that are no card dealt (is_dealt_card): a card found face up placed in
-- the discard rack ((g)1: it "shall be placed in the discard rack"), told by the card out of
-- its shoe just before it in game order, in the same round (or both in none). Between rounds
-- that is no card dealt with no round (CARD_OUTSIDE_ROUND) and no first card of a deal
-- (MISSING_BURN's "next card dealt").
CREATE OR REPLACE MACRO face_up_placements_of(in_table) AS TABLE
SELECT table_id, seq, log_offset, true AS placed_face_up
FROM (SELECT table_id, seq, log_offset, event_type,
             is_dealt_card(lag(card) OVER in_shoe, card, NULL) AS dealt,
             -- in the found card's round, as round_cards reads a round's cards: a card found
             -- in one round (or none) and drawn to the rack in another is a card of that one
             lag(round_no) OVER in_shoe IS NOT DISTINCT FROM round_no AS same_round
      FROM (SELECT *, {'type': event_type, 'rank': rank, 'suit': suit,
                       'dest': destination} AS card
            FROM card_events_of(in_table, NULL, NULL, NULL)
            -- only a shoe with a card found face up has any (most have none)
            WHERE shoe_id IS NOT NULL AND (table_id, shoe_id) IN (SELECT (table_id, shoe_id)
                                          FROM events_in(in_table, NULL, NULL, NULL)
                                          WHERE event_type = 'CardFoundFaceUp'))
      WINDOW in_shoe AS (PARTITION BY table_id, shoe_id ORDER BY occurred_at, seq, log_offset))
WHERE event_type = 'CardDrawn' AND NOT dealt AND same_round;

-- Each load of a shoe once, with its decks: the first copy of each event id (a load line re-sent
-- is one load, DUPLICATE_EVENT's finding, as MISSING_BURN's burn_stream counts it), then one
-- per seq (two writers' loads at one seq, first in the log: one load of the same cards). A shoe
-- id closed and loaded again holds new cards from its next load on: EXTRA_CARD,
-- NO_RESHUFFLE_AFTER_CUT_CARD and DEVICE_FAULT_NOT_VOIDED judge it load by load from here (a
-- second outside review, session 37: a re-sent load line was taken for new cards).
CREATE OR REPLACE MACRO shoe_loads_of() AS TABLE
SELECT table_id, shoe_id, seq AS load_seq, decks
FROM (SELECT * FROM events
      WHERE event_type = 'CardsLoaded' AND shoe_id IS NOT NULL
      QUALIFY event_id IS NULL OR row_number() OVER (
          PARTITION BY table_id, event_id ORDER BY seq, log_offset) = 1)
QUALIFY row_number() OVER (PARTITION BY table_id, shoe_id, seq ORDER BY log_offset) = 1;

-- A shoe's deck count: its first CardsLoaded's (13:69F-6.1(a): one or more decks). "First" is
-- by seq, then log offset: two writers of a table (a Kafka log without fencing) can both
-- append at one seq, and the log's order is then the only order of the two; a pick by seq
-- alone would take whichever row a scan met first. The ledger reads it here; the shoes view
-- takes the same pick in its own pass over the shoe's events, and reconcile.sql writes it out
-- (a reader of a store an older pitlog built runs that query over its views). from_seq, given
-- with in_shoe, is at or before the shoe's first event at the table (so before its loads): it
-- only narrows the scan, which without it reads every row group (a dispute at 10M events: 7 ms
-- of its ledger's 80, benchmarks/results.md session 38).
CREATE OR REPLACE MACRO shoe_decks_of(in_table, in_shoe, from_seq := NULL) AS TABLE
SELECT table_id, shoe_id, arg_min(decks, (seq, log_offset)) AS decks
FROM events
WHERE event_type = 'CardsLoaded' AND shoe_id IS NOT NULL
  AND (in_table IS NULL OR table_id = in_table) AND (in_shoe IS NULL OR shoe_id = in_shoe)
  AND (from_seq IS NULL OR seq >= from_seq)
GROUP BY table_id, shoe_id;

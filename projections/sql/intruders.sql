-- Cards out of the shoe inside a round where the rules allow none (sql/anomalies_places.sql:
-- BURN_DURING_ROUND, CARD_OUTSIDE_ROUND; sql/ledger.sql does not confirm that round's settlements).
-- A round lies from its first card out of the shoe (CardDrawn or CardDrawnInError with its
-- round_no, round_no > 0) to its last event other than a burn. A card event between the two is an
-- intruder when it is:
--   a burn: 13:47-20.31(d)1 burns "the first card" after "each full deck of cards is placed in
--     the shoe", and "Each new dealer who comes to the table shall also "burn" one card before
--     dealing any card in a round of lay"; 13:69F-6.4 the same: a burn comes before a round's
--     first card, never inside the round (13:69F-6.9's reshuffling shoe owes none at all);
--   a card dealt (CardDrawn, CardDrawnInError) recorded for another round or shoe, or for none.
-- Each intruder, with the round it lies in (table_id, shoe_id, round_no), that round's first
-- card, and the intruder's own shoe and round (card_shoe_id, card_round_no).
-- after_raises_closed: the intruder came after "Raises closed" in game order (docs/anomalies.md,
-- "Order": seq is only arrival order across the shoe and the terminal; NULL: never said).
-- Cards are read once each (events_once_of). from_seq and to_seq, given with in_table, only
-- narrow the scan: they must bracket the rounds asked about.
CREATE OR REPLACE MACRO round_intruders_of(in_table, from_seq, to_seq) AS TABLE
WITH round_events AS NOT MATERIALIZED (
    SELECT * FROM events_once_of(in_table, NULL, from_seq, to_seq)
),
spans AS (
    -- From the first card to the end in game order (game_order in macros.sql): the round's end is
    -- often the terminal's rack line, the intruder the shoe's, and a burn for the next round
    -- that reaches the recorder before the rack line is not inside the round.
    SELECT table_id, shoe_id, round_no,
           min(game_order(occurred_at, seq)) FILTER (event_type IN ('CardDrawn', 'CardDrawnInError'))
               AS first_card,
           max(game_order(occurred_at, seq)) FILTER (event_type NOT IN ('CardBurned', 'BurnDisclosed'))
               AS round_end,
           min(game_order(occurred_at, seq)) FILTER (event_type = 'Announced' AND meaning = 'RAISES_CLOSED')
               AS raises_closed
    FROM round_events
    WHERE round_no > 0
    GROUP BY ALL
    HAVING min(seq) FILTER (event_type IN ('CardDrawn', 'CardDrawnInError')) IS NOT NULL
),
cards AS (
    SELECT table_id, shoe_id AS card_shoe_id, round_no AS card_round_no, seq, log_offset,
           event_type, rank, suit, destination, occurred_at,
           game_order(occurred_at, seq) AS at_order
    FROM round_events
    WHERE event_type IN ('CardDrawn', 'CardDrawnInError', 'CardBurned')
)
SELECT s.table_id, s.shoe_id, s.round_no, s.first_card.seq AS first_card_seq,
       c.card_shoe_id, c.card_round_no, c.seq, c.event_type, c.rank, c.suit, c.destination,
       c.occurred_at, s.raises_closed < c.at_order AS after_raises_closed
FROM cards AS c
ASOF JOIN spans AS s ON c.table_id = s.table_id AND c.at_order > s.first_card
WHERE c.event_type <> 'CardBurned' AND c.at_order < s.round_end
  AND (c.card_shoe_id IS DISTINCT FROM s.shoe_id OR c.card_round_no IS DISTINCT FROM s.round_no)
UNION ALL
-- A burn is an intruder inside ANY round's span, not only the latest begun: a misplaced card
-- carrying its own round number (a card for round 5 dealt inside round 1) makes a span of one
-- event, and the latest span before a later burn, so the burn would hide behind it. The row is
-- the burn's own round when it lies inside that round, else the earliest round it lies inside.
SELECT table_id, shoe_id, round_no, first_card_seq, card_shoe_id,
       card_round_no, seq, event_type, rank, suit, destination, occurred_at, after_raises_closed
FROM (SELECT s.table_id, s.shoe_id, s.round_no, s.first_card.seq AS first_card_seq,
             c.card_shoe_id, c.card_round_no, c.seq, c.event_type, c.rank, c.suit,
             c.destination, c.occurred_at, s.raises_closed < c.at_order AS after_raises_closed,
             -- one row per burn: by offset too, two writers can append two at one seq
             row_number() OVER (PARTITION BY c.table_id, c.seq, c.log_offset
                                ORDER BY (c.card_shoe_id IS NOT DISTINCT FROM s.shoe_id
                                          AND c.card_round_no IS NOT DISTINCT FROM s.round_no) DESC,
                                         s.first_card) AS pick
      FROM cards AS c
      JOIN spans AS s
        ON c.table_id = s.table_id AND c.at_order > s.first_card AND c.at_order < s.round_end
      WHERE c.event_type = 'CardBurned')
WHERE pick = 1;

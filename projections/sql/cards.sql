-- Every card that entered the discard rack, in rack order, per shoe (13:47-20.31(d)15; GA (12)):
-- burns (13:47-20.31(d)1, face down to the rack), cards found face up in the shoe
-- (13:47-20.31(g)1, not used, to the rack), and each round's cards in the order the dealer
-- actually racked them (CardsRacked). A hand is read back by its round_no.
--
-- rack_of(in_table, in_shoe, from_seq, to_seq) is the rack of one table and shoe (a NULL
-- argument: all of them; the `rack` view below is rack_of(NULL, NULL, NULL, NULL)). from_seq and
-- to_seq, given with in_table, only speed the scan up: they must bracket every event of the
-- shoes asked for (rack positions count from the shoe's first card), or be NULL.
CREATE OR REPLACE MACRO rack_of(in_table, in_shoe, from_seq, to_seq) AS TABLE
-- Each source reads only the events it racks: burns and cards found face up are card events,
-- each once (card_events_of); CardsRacked is no card event, so events_in gives it as
-- events_once_of would. One scan each, where reading events_once_of three times planned and
-- ran its union and its window three times (benchmarks/results.md, session 13).
WITH entries AS (
    SELECT table_id, shoe_id,
           CASE WHEN event_type = 'CardBurned' THEN NULL::INTEGER ELSE round_no END AS round_no,
           CASE WHEN event_type = 'CardBurned' THEN 'burn' ELSE 'face_up' END AS source,
           rank, suit, seq, log_offset, 1::BIGINT AS card_index, occurred_at
    FROM card_events_of(in_table, in_shoe, from_seq, to_seq)
    WHERE event_type IN ('CardBurned', 'CardFoundFaceUp')
    UNION ALL
    -- unnest in the select list (not a lateral join), so that a filter on the table and shoe
    -- is pushed down to the scan of events.
    SELECT table_id, shoe_id, round_no, 'round', card.rank, card.suit,
           seq, log_offset, card_index, occurred_at
    FROM (SELECT table_id, shoe_id, round_no, seq, log_offset, occurred_at,
                 unnest(cards) AS card, generate_subscripts(cards, 1) AS card_index
          FROM events_in(in_table, in_shoe, from_seq, to_seq) WHERE event_type = 'CardsRacked')
)
SELECT
    table_id, shoe_id,
    row_number() OVER (PARTITION BY table_id, shoe_id
                       ORDER BY seq, log_offset, card_index) AS rack_position,
    round_no, source, rank, suit, card_label(rank, suit) AS card,
    seq, card_index, occurred_at
FROM entries;

CREATE OR REPLACE VIEW rack AS
SELECT * FROM rack_of(NULL, NULL, NULL, NULL)
ORDER BY table_id, shoe_id, rack_position;

-- Where the third card that decides a round sits in the round's cards (round_cards in macros.sql, in
-- game order, every destination), from the round's kind and its first "Raises closed" (a
-- game_order struct, or NULL). Exactly one third card decides, and it is a card out of the shoe
-- counted from the first two, wherever the dealer put it (13:47-20.31(d)13: "The dealer shall
-- then draw a third card, place it face up on the box between the initial two cards"):
--   pair: the third card out (13:47-20.31(d)8-10; GA (6)-(8): "shall immediately draw a third
--     card");
--   spread: the first card out after the first "Raises closed", beyond the first two
--     (13:47-20.31(d)13-14; GA (11)); one exposed before it is discarded ((g)3; 13:69F-6.7).
--     When "Raises closed" was never said, the third card out, wherever it went: nothing
--     discarded it (EARLY_THIRD_CARD and EARLY_EXPOSURE_MISHANDLED flag the round), and which
--     card decides does not depend on the box it was put on.
-- A deciding card placed anywhere but the middle box is THIRD_CARD_DIVERTED, any card out after
-- it THIRD_CARD_REDRAWN (sql/anomalies_rounds.sql); neither changes which card decides.
CREATE OR REPLACE MACRO deciding_index(cards, kind, raises_closed) AS
    CASE WHEN kind NOT IN ('pair', 'spread') OR len(cards) < 3 THEN NULL
         WHEN kind = 'pair' OR raises_closed IS NULL THEN 3
         ELSE list_position(list_transform(cards, lambda c, i: i >= 3
                  AND game_order(c.at, c.seq) > raises_closed), true) END;

-- The cards of a spread exposed before "Raises closed" (13:47-20.31(g)3: "If a third card is
-- drawn and exposed to the players prior to the dealer announcing "Raises closed," the card
-- shall be discarded"; 13:69F-6.7): every card out beyond the first two before the first
-- "Raises closed" in game order, wherever it went; with none said, the third card out (it then
-- decides: deciding_index). `cards` are a round's cards in game order (round_cards), each with
-- `at` and `seq`. No other round exposes a card early: a pair draws its third card at once.
CREATE OR REPLACE MACRO exposed_cards(cards, kind, raises_closed) AS
    CASE WHEN kind <> 'spread' THEN []
         WHEN raises_closed IS NULL THEN cards[3:3]
         ELSE list_filter(cards[3:], lambda x: game_order(x.at, x.seq) < raises_closed) END;

-- Where the early-exposure protocol's window closes (13:47-20.31(g)3: the choice is the
-- players' "prior to dealing another third card"): at the new third card, the first card out
-- after "Raises closed" (deciding_index's `third_pos`); with "Raises closed" never said, at the
-- next card out after the exposed one, which then decides (NULL: no such card, the window
-- stays open). `cards` as for exposed_cards.
CREATE OR REPLACE MACRO exposure_window_end(cards, raises_closed, third_pos) AS
    CASE WHEN raises_closed IS NOT NULL THEN game_order(cards[third_pos].at, cards[third_pos].seq)
         ELSE game_order(cards[4].at, cards[4].seq) END;

-- Whether an event at `event_order` (a game_order struct) falls in the early-exposure protocol's
-- window (13:47-20.31(g)3; 13:69F-6.7): after the round's first card exposed early
-- (`exposed_order`) and before the window closes (`window_end`, exposure_window_end). Only a
-- void-or-play choice made there counts (a player chooses without seeing the next card, and
-- with no card exposed there is nothing to choose), and only a refund made there is the one
-- the protocol requires. One definition for the ledger's voids by choice (sql/ledger.sql) and
-- EARLY_EXPOSURE_MISHANDLED (sql/anomalies_rounds_wagers.sql).
CREATE OR REPLACE MACRO in_exposure_window(event_order, exposed_order, window_end) AS
    coalesce(event_order > exposed_order
             AND (window_end IS NULL OR event_order < window_end), false);

-- Where a card went, as read aloud: "the middle box", "the discard rack".
CREATE OR REPLACE MACRO card_place(dest) AS
    CASE dest WHEN 'DISCARD_RACK' THEN 'the discard rack' ELSE 'the ' || lower(dest) || ' box' END;

-- What a card of a round did, for the dispute and the replay: from its place in the round's
-- cards (round_cards: `pos`, 1-based) and where it went (`dest`, NULL for a card drawn in error
-- and not used), the deciding third card's place (deciding_index) and the round's kind.
CREATE OR REPLACE MACRO card_role(pos, dest, third_pos, kind) AS
    CASE WHEN pos IS NULL THEN NULL
         WHEN pos = third_pos AND dest = 'MIDDLE' THEN 'the deciding third card'
         WHEN pos = third_pos AND dest IS NULL
         THEN 'the deciding third card, drawn in error: used as the next card, it decides (13:47-20.31(g)2)'
         WHEN pos = third_pos
         THEN 'the deciding third card, diverted to ' || card_place(dest)
              || ' instead of the middle box: it still decides (13:47-20.31(d)8, (d)13)'
         WHEN pos > third_pos
         THEN 'redrawn after the deciding third card: decides nothing (13:47-20.31(d)13-14)'
         WHEN pos <= 2 AND dest IS NULL
         THEN printf('the %s card, drawn in error: used as the next card (13:47-20.31(g)2)',
                     CASE pos WHEN 1 THEN 'first' ELSE 'second' END)
         WHEN pos <= 2 AND dest <> CASE pos WHEN 1 THEN 'LEFT' ELSE 'RIGHT' END
         THEN printf('the %s card out of the shoe, put on %s instead of the %s box: it still counts (13:47-20.31(d)5)',
                     CASE pos WHEN 1 THEN 'first' ELSE 'second' END, card_place(dest),
                     CASE pos WHEN 1 THEN 'left' ELSE 'right' END)
         WHEN pos <= 2 THEN NULL
         WHEN kind = 'consecutive'
         THEN 'drawn in a consecutive round: decides nothing (13:47-20.31(d)7)'
         WHEN kind = 'spread'
         THEN 'exposed before "Raises closed": the rule discards it, so it decides nothing (13:47-20.31(g)3)'
         ELSE 'drawn out of turn: decides nothing' END;

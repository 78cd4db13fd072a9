-- Cards out of the shoe where the rules allow none: a burn inside a round, and a card dealt
-- outside any round in play (sql/intruders.sql, round_intruders_of, reads both inside a round; the
-- ledger never confirms such a round: status IRREGULAR_ROUND). Every such card is still a card
-- out of its shoe: EXTRA_CARD counts it (anomalies_found_shoes, cards_out).
CREATE OR REPLACE VIEW anomalies_found_places AS
WITH
intruders AS MATERIALIZED (
    SELECT * FROM round_intruders_of(NULL, NULL, NULL)
),
-- Every card dealt from a shoe with the shoe's state before it (its last CardsLoaded or
-- ShoeClosed) and the latest round of the shoe whose cards had come out before it (the highest
-- round_no, at its first card's seq).
shoe_stream AS (
    SELECT table_id, shoe_id, round_no, seq, log_offset, event_type, rank, suit, destination,
           occurred_at,
           last_value(CASE WHEN event_type IN ('CardsLoaded', 'ShoeClosed')
                           THEN {'type': event_type, 'seq': seq} END IGNORE NULLS)
               OVER before_this AS shoe_state,
           max(CASE WHEN event_type IN ('CardDrawn', 'CardDrawnInError') AND round_no > 0
                    THEN {'round_no': round_no, 'neg_seq': -seq} END) OVER before_this AS latest
    FROM events_once_of(NULL, NULL, NULL, NULL)
    WHERE event_type IN ('CardsLoaded', 'ShoeClosed', 'CardDrawn', 'CardDrawnInError',
                         'CardFoundFaceUp')
      AND shoe_id IS NOT NULL
    WINDOW before_this AS (PARTITION BY table_id, shoe_id ORDER BY seq, log_offset
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
-- Each round's first rack in game order (docs/anomalies.md "Order": the rack is read at the
-- rack, the cards at the shoe, and their lines reach the recorder by separate links, so a card
-- keyed before the rack can arrive after it), with its seq, which proves it.
racks AS (
    SELECT table_id, shoe_id, round_no,
           min(game_order(occurred_at, seq)) AS racked_order,
           arg_min(seq, (occurred_at, seq, log_offset)) AS racked_seq
    FROM events
    WHERE event_type = 'CardsRacked' AND round_no IS NOT NULL AND shoe_id IS NOT NULL
    GROUP BY ALL
),
-- Why a card dealt, or found face up, is outside any round in play (the first reason that
-- holds), and the event that shows it. A card found face up comes out of the shoe like any
-- other (13:47-20.31(g)1; 13:69F-6.7(a): it "shall be placed in the discard rack"), so the same
-- checks hold for it, but for one: it may be found between rounds, so no round is no fault;
-- nor is it for its CardDrawn to the discard rack right after it, the dealer placing that card
-- there (macros.sql, face_up_placements_of).
loose AS (
    SELECT c.table_id, c.shoe_id, c.round_no, c.seq, c.event_type, c.rank, c.suit,
           c.destination, c.occurred_at,
           CASE WHEN c.round_no IS NULL AND NOT c.face_up THEN 'with no round'
                WHEN c.round_no <= 0 THEN printf('for round %d, which is no round', c.round_no)
                WHEN c.shoe_id IS NULL THEN 'with no shoe'
                WHEN c.shoe_state IS NULL THEN printf('from shoe %s, which was never loaded', c.shoe_id)
                WHEN c.shoe_state.type = 'ShoeClosed' THEN printf('from shoe %s after it was closed', c.shoe_id)
                WHEN r.racked_order < game_order(c.occurred_at, c.seq)
                THEN printf('for round %d after its cards were racked (the round was concluded)', c.round_no)
                WHEN c.latest.round_no > c.round_no
                THEN printf('for round %d after round %d had begun', c.round_no, c.latest.round_no)
           END AS why,
           CASE WHEN (c.round_no IS NULL AND NOT c.face_up)
                     OR c.round_no <= 0 OR c.shoe_id IS NULL THEN NULL
                WHEN c.shoe_state IS NULL THEN NULL
                WHEN c.shoe_state.type = 'ShoeClosed' THEN c.shoe_state.seq
                WHEN r.racked_order < game_order(c.occurred_at, c.seq) THEN r.racked_seq
                WHEN c.latest.round_no > c.round_no THEN -c.latest.neg_seq
           END AS shown_by
    FROM (SELECT s.*, event_type = 'CardFoundFaceUp' OR p.placed_face_up IS NOT NULL AS face_up
          FROM shoe_stream AS s
          LEFT JOIN face_up_placements_of(NULL) AS p USING (table_id, seq, log_offset)
          WHERE event_type IN ('CardDrawn', 'CardDrawnInError', 'CardFoundFaceUp')
          UNION ALL BY NAME
          SELECT table_id, shoe_id, round_no, seq, event_type, rank, suit, destination, occurred_at,
                 event_type = 'CardFoundFaceUp' AS face_up
          FROM card_events_of(NULL, NULL, NULL, NULL)
          WHERE shoe_id IS NULL
            AND event_type IN ('CardDrawn', 'CardDrawnInError', 'CardFoundFaceUp')) AS c
    LEFT JOIN racks AS r USING (table_id, shoe_id, round_no)
)
SELECT * FROM (
    -- BURN_DURING_ROUND (13:47-20.31(d)1: "After each full deck of cards is placed in the shoe,
    -- the dealer shall remove the first card face down and place it in the discard rack. Each new
    -- dealer who comes to the table shall also "burn" one card before dealing any card in a round
    -- of lay"; 13:69F-6.4): a burn is owed at a new deck or a new dealer, before a round; a card
    -- burned between a round's first card and its end takes a card the round should have dealt
    -- (after "Raises closed", the deciding third card). Proof: the round's first card and the burn.
    SELECT 'BURN_DURING_ROUND', table_id, shoe_id, round_no, [first_card_seq, seq],
           printf('%s was burned face down in round %d %s: a card is burned only after a new deck is loaded or when a new dealer arrives, before a round',
                  card_label(rank, suit), round_no,
                  -- "after" in game order (docs/anomalies.md "Order"; 13:47-20.31(d)12-13:
                  -- the third card follows "Raises closed")
                  CASE WHEN after_raises_closed
                       THEN 'after "Raises closed", where the third card is dealt'
                       ELSE 'after its first card was dealt' END),
           occurred_at
    FROM intruders
    WHERE event_type = 'CardBurned'

    UNION ALL
    -- CARD_OUTSIDE_ROUND (13:47-20.31(d)5: "To begin each round of play, the dealer shall place
    -- the first card ..."; (d)15: "At the conclusion of each round of play, all cards on the
    -- layout shall be picked up ... and placed in the discard rack"; GA (3), (12)): every card
    -- dealt belongs to the round in play, from a loaded shoe: flagged, a card recorded with no
    -- round or round 0 or less, with no shoe, from a shoe not loaded or already closed, or for a
    -- round already concluded (its cards racked, or a later round begun). A card found face up
    -- (13:47-20.31(g)1) is held to the same, but may carry no round (found between rounds). When it lies inside
    -- another round (sql/intruders.sql, round_intruders_of) the row is that round's, whose ledger rows
    -- are IRREGULAR_ROUND. Proof: the event that shows it (the shoe's closing, the rack, the
    -- later round's first card) and the card.
    SELECT 'CARD_OUTSIDE_ROUND', l.table_id, coalesce(i.shoe_id, l.shoe_id),
           CASE WHEN i.table_id IS NOT NULL THEN i.round_no
                WHEN l.round_no > 0 THEN l.round_no END,
           list_sort(list_filter([l.shown_by, l.seq], lambda s: s IS NOT NULL)),
           printf('%s was %s %s%s', card_label(l.rank, l.suit),
                  CASE l.event_type WHEN 'CardDrawnInError' THEN 'drawn in error to no box'
                                    WHEN 'CardFoundFaceUp' THEN 'found face up in the shoe'
                                    ELSE 'drawn to ' || card_place(l.destination) END,
                  l.why,
                  CASE WHEN i.table_id IS NOT NULL
                       THEN printf(', inside round %d (after its first card%s)', i.round_no,
                                   CASE WHEN i.after_raises_closed THEN ' and "Raises closed"' ELSE '' END)
                       ELSE '' END),
           l.occurred_at
    FROM loose AS l
    LEFT JOIN intruders AS i ON i.table_id = l.table_id AND i.seq = l.seq
    WHERE l.why IS NOT NULL
) AS found(code, table_id, shoe_id, round_no, seqs, explanation, occurred_at);

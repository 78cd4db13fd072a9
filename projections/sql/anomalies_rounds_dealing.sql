-- The rounds family (sql/anomalies_rounds.sql), its dealing: where the first two cards went, what
-- the dealer announced, and the third card (none, too late, redrawn, diverted).
CREATE OR REPLACE MACRO round_dealing_anomalies(round_facts) AS TABLE
WITH
-- the round facts, read once by the family view (sql/anomalies_rounds.sql)
facts AS NOT MATERIALIZED (SELECT * FROM query_table(round_facts)),

-- Announcements (13:47-20.31(d)7-11, 13; GA (5)-(11)) that can contradict the cards, and for
-- those about the third card ("three of a kind", "no three of a kind", a third card's value)
-- the last card drawn before each beyond the first two: the card it is about (to the middle
-- box, or one the dealer put elsewhere: where it went is THIRD_CARD_DIVERTED's finding, not a
-- wrong announcement). The other meanings never look at that card, so only the third-card
-- announcements pay for the ASOF join. "Before" is game order (sql/macros.sql, game_order): the
-- words come from the dealer terminal, the cards from the shoe.
said AS (
    SELECT a.table_id, a.shoe_id, a.round_no, a.seq, a.occurred_at, a.phrase, a.meaning, a."value",
           f.kind, f.spread, f.left_rank, f.left_card, f.right_card,
           CASE WHEN m.destination = 'MIDDLE' OR m.drawn > f.second_card_order THEN m.rank END
               AS middle_rank_before
    FROM events AS a
    JOIN facts AS f
      ON f.table_id = a.table_id AND f.shoe_id IS NOT DISTINCT FROM a.shoe_id
     AND f.round_no = a.round_no
    ASOF LEFT JOIN (SELECT table_id, shoe_id, round_no, game_order(occurred_at, seq) AS drawn,
                           rank, destination FROM events
                    WHERE event_type = 'CardDrawn') AS m
        ON m.table_id = a.table_id AND m.shoe_id IS NOT DISTINCT FROM a.shoe_id
       AND m.round_no = a.round_no AND game_order(a.occurred_at, a.seq) > m.drawn
    WHERE a.event_type = 'Announced' AND f.kind IS NOT NULL
      AND a.meaning IN ('THREE_OF_A_KIND', 'NO_THREE_OF_A_KIND', 'THIRD_CARD')
    UNION ALL
    SELECT a.table_id, a.shoe_id, a.round_no, a.seq, a.occurred_at, a.phrase, a.meaning, a."value",
           f.kind, f.spread, f.left_rank, f.left_card, f.right_card, NULL::INTEGER
    FROM events AS a
    JOIN facts AS f
      ON f.table_id = a.table_id AND f.shoe_id IS NOT DISTINCT FROM a.shoe_id
     AND f.round_no = a.round_no
    WHERE a.event_type = 'Announced' AND f.kind IS NOT NULL
      AND a.meaning IN ('CONSECUTIVE', 'PAIR', 'SPREAD', 'RAISES_CLOSED')
),

-- What a finished, unvoided round announced, from the round facts. A round dealt with no shoe
-- (a device that stamps none) is judged on its own events with no shoe, as the ledger pairs its
-- wagers and settlements: its announcements are the ones it made.
said_per_round AS (
    SELECT table_id, shoe_id, round_no, kind, spread, left_card, right_card,
           middle_card, third_card_seq, card_seqs, ended_at, kind_said,
           -- 13:47-20.31(d)9-10, (d)13: said after the deciding third card.
           coalesce(last_outcome_said > third_card_order, false) AS outcome_said,
           coalesce(last_value_said > third_card_order, false) AS value_said
    FROM facts
    WHERE kind IS NOT NULL AND finished AND NOT voided
)
SELECT * FROM (
    -- WRONG_BOX (13:47-20.31(d)5; GA (3)): "the dealer shall place the first card ... on the box
    -- farthest to the dealer's left ... the second card ... farthest to the dealer's right": the
    -- round's first card out of the shoe not to the left box, or its second not to the right,
    -- whatever the other box (the middle box, the discard rack: a card racked between the first
    -- two is still the second card and makes the spread, sql/macros.sql, round_cards). A card drawn
    -- in error and not used has no box (DRAWN_IN_ERROR_NOT_USED's). Proof: the first two cards.
    SELECT 'WRONG_BOX', table_id, shoe_id, round_no,
           list_transform(first_two, lambda c: c.seq),
           'The first card ' || first_two[1].card || ' went to ' || coalesce(card_place(first_two[1].box), 'no box')
               || coalesce(' and the second ' || first_two[2].card || ' to '
                           || coalesce(card_place(first_two[2].box), 'no box'), '')
               || ': the first card goes to the left box, the second to the right',
           started_at
    FROM facts
    WHERE first_two[1].box <> 'LEFT' OR first_two[2].box <> 'RIGHT'

    UNION ALL
    -- WRONG_ANNOUNCEMENT (13:47-20.31(d)7-11, 13; GA (5)-(11)): the structured meaning of an
    -- announcement contradicting the cards (the phrase's wording is not judged): "consecutive",
    -- "pair" or "spread N" against the first two cards; "three of a kind" or "no three of a
    -- kind" against the pair's third card; a third card's value against the last card to the
    -- middle box before it; "Raises closed" outside a spread round.
    SELECT 'WRONG_ANNOUNCEMENT', table_id, shoe_id, round_no, [seq],
           printf('"%s" (%s%s) contradicts the cards %s and %s%s', phrase, lower(meaning),
                  coalesce(' ' || CAST("value" AS VARCHAR), ''), left_card, right_card,
                  CASE WHEN meaning IN ('THREE_OF_A_KIND', 'NO_THREE_OF_A_KIND', 'THIRD_CARD')
                            AND middle_rank_before IS NOT NULL
                       THEN ' with the third card ' || rank_label(middle_rank_before) ELSE '' END),
           occurred_at
    FROM said
    WHERE CASE meaning
        WHEN 'CONSECUTIVE' THEN kind <> 'consecutive'
        WHEN 'PAIR' THEN kind <> 'pair'
        WHEN 'SPREAD' THEN kind <> 'spread' OR "value" IS DISTINCT FROM spread
        WHEN 'RAISES_CLOSED' THEN kind <> 'spread'
        WHEN 'THREE_OF_A_KIND' THEN kind <> 'pair' OR middle_rank_before IS DISTINCT FROM left_rank
        WHEN 'NO_THREE_OF_A_KIND' THEN kind <> 'pair' OR middle_rank_before IS NULL
                                       OR middle_rank_before = left_rank
        WHEN 'THIRD_CARD' THEN kind <> 'spread' OR "value" IS DISTINCT FROM middle_rank_before
        ELSE false END

    UNION ALL
    -- WRONG_ANNOUNCEMENT: what a finished, unvoided round lacks: the first two cards' kind (any
    -- "consecutive", "pair" or "spread" said counts here, right or wrong); the outcome of a
    -- pair's third card; a spread's third-card value after its third card. A missing "Raises
    -- closed" before the third card is EARLY_THIRD_CARD's finding, not this one.
    SELECT 'WRONG_ANNOUNCEMENT', table_id, shoe_id, round_no, card_seqs[:2],
           printf('No "%s" announced after %s and %s',
                  CASE kind WHEN 'spread' THEN printf('spread %d', spread) ELSE kind END,
                  left_card, right_card),
           ended_at
    FROM said_per_round WHERE kind_said = 0
    UNION ALL
    SELECT 'WRONG_ANNOUNCEMENT', table_id, shoe_id, round_no, [third_card_seq],
           printf('No "three of a kind" or "no three of a kind" announced after the pair %s and %s drew %s',
                  left_card, right_card, middle_card),
           ended_at
    FROM said_per_round WHERE kind = 'pair' AND third_card_seq IS NOT NULL AND NOT outcome_said
    UNION ALL
    SELECT 'WRONG_ANNOUNCEMENT', table_id, shoe_id, round_no, [third_card_seq],
           printf('The third card %s was never announced (%s and %s, spread %d)',
                  middle_card, left_card, right_card, spread),
           ended_at
    FROM said_per_round WHERE kind = 'spread' AND third_card_seq IS NOT NULL AND NOT value_said

    UNION ALL
    -- THIRD_CARD_ON_CONSECUTIVE (13:47-20.31(d)7): a consecutive round ends with no third card:
    -- any card drawn beyond the first two (to the middle box, or after both to any box).
    SELECT 'THIRD_CARD_ON_CONSECUTIVE', f.table_id, f.shoe_id, f.round_no,
           list_transform(f.beyond_two, lambda x: x.seq),
           CASE WHEN list_bool_and(list_transform(f.beyond_two, lambda x: x.dest = 'MIDDLE'))
                THEN printf('%s drawn to the middle box after the consecutive cards %s and %s (a tie hand: no third card)',
                            array_to_string(list_transform(f.beyond_two, lambda x: x.card), ' '),
                            f.left_card, f.right_card)
                ELSE printf('%s drawn after the consecutive cards %s and %s (a tie hand: no third card)',
                            placed_cards(f.beyond_two),
                            f.left_card, f.right_card) END,
           e.occurred_at
    FROM facts AS f
    JOIN events AS e ON e.table_id = f.table_id AND e.seq = f.beyond_two[1].seq
                    AND e.event_type IN ('CardDrawn', 'CardDrawnInError')
    WHERE f.kind = 'consecutive' AND len(f.beyond_two) > 0

    UNION ALL
    -- PAIR_WITHOUT_THIRD_CARD (13:47-20.31(d)8): after a pair the third card is drawn at once;
    -- flagged when a finished round has none, or gets it only after wagers were settled. A
    -- voided round, or one in which the cutting card came out (ROUND_ABANDONED_AT_CUT_CARD),
    -- is not.
    SELECT 'PAIR_WITHOUT_THIRD_CARD', table_id, shoe_id, round_no,
           card_seqs[:2] || list_filter([first_settlement_seq], lambda s: s IS NOT NULL),
           CASE WHEN third_card_seq IS NULL
                THEN printf('The pair %s and %s got no third card', left_card, right_card)
                ELSE printf('The pair %s and %s got its third card %s only after wagers were settled',
                            left_card, right_card, middle_card) END,
           ended_at
    FROM facts
    WHERE kind = 'pair' AND NOT voided AND finished
      AND ((third_card_seq IS NULL AND cut_seq IS NULL) OR third_card_order > first_settlement)

    UNION ALL
    -- THIRD_CARD_REDRAWN (13:47-20.31(d)10, (d)13-14; GA (8), (11)): exactly one third card
    -- decides a pair or a spread (the first card drawn after the pair, or after "Raises closed":
    -- sql/cards.sql, deciding_index); any card drawn from the shoe after it, to any box, is a
    -- redraw. The ledger judges every settlement against the deciding card. Proof: the
    -- deciding card and every card drawn after it. A deciding card put anywhere but the middle
    -- box is THIRD_CARD_DIVERTED instead, whose proof names the cards after it.
    SELECT 'THIRD_CARD_REDRAWN', f.table_id, f.shoe_id, f.round_no,
           [f.third_card_seq] || f.redraw_seqs,
           CASE WHEN list_bool_and(list_transform(f.redraws, lambda x: x.dest = 'MIDDLE'))
                THEN array_to_string(f.redrawn_cards, ' ') || ' was dealt to the middle box'
                ELSE placed_cards(f.redraws) || ' came out' END
           || printf(' after the third card %s had decided the round (%s and %s, %s: %s)',
                     f.middle_card, f.left_card, f.right_card,
                     CASE WHEN f.kind = 'pair' THEN 'a pair' ELSE printf('spread %d', f.spread) END,
                     third_card_verdict(f.kind, f.left_rank, f.right_rank, f.middle_rank)),
           e.occurred_at
    FROM facts AS f
    JOIN events AS e ON e.table_id = f.table_id AND e.seq = f.redraw_seqs[1]
                    AND e.event_type IN ('CardDrawn', 'CardDrawnInError')
    WHERE f.kind IN ('pair', 'spread') AND len(f.redraw_seqs) > 0 AND f.third_card_box = 'MIDDLE'

    UNION ALL
    -- THIRD_CARD_DIVERTED (13:47-20.31(d)8, (d)13; GA (6), (11)): the deciding third card
    -- (sql/cards.sql, deciding_index: the first card drawn after the pair, or after "Raises
    -- closed") "shall be placed face up in the middle box" / "place it face up on the box
    -- between the initial two cards"; one put in the discard rack or on a side box still
    -- decides, and every card drawn after it decides nothing (the ledger judges the
    -- settlements against it). Proof: the diverted card and every card drawn after it.
    SELECT 'THIRD_CARD_DIVERTED', f.table_id, f.shoe_id, f.round_no,
           [f.third_card_seq] || f.redraw_seqs,
           printf('The third card %s went to %s, not the middle box; %s (%s and %s, %s: %s decides, %s)',
                  f.middle_card, card_place(f.third_card_box),
                  CASE WHEN len(f.redraws) = 0 THEN 'nothing was drawn after it'
                       ELSE 'after it came ' || placed_cards(f.redraws) END,
                  f.left_card, f.right_card,
                  CASE WHEN f.kind = 'pair' THEN 'a pair' ELSE printf('spread %d', f.spread) END,
                  f.middle_card,
                  third_card_verdict(f.kind, f.left_rank, f.right_rank, f.middle_rank)),
           e.occurred_at
    FROM facts AS f
    JOIN events AS e ON e.table_id = f.table_id AND e.seq = f.third_card_seq
                    AND e.event_type IN ('CardDrawn', 'CardDrawnInError')
    WHERE f.kind IN ('pair', 'spread') AND f.third_card_box <> 'MIDDLE'

    UNION ALL
    -- SPREAD_WITHOUT_THIRD_CARD (13:47-20.31(d)13-14; GA (11)): a spread is decided only by a
    -- third card; flagged when an unvoided spread round's wagers are settled with no card drawn
    -- beyond the first two (to any box) before the first settlement. A round in which the
    -- cutting card came out is ROUND_ABANDONED_AT_CUT_CARD instead. Proof: the first two cards
    -- and the first settlement.
    SELECT 'SPREAD_WITHOUT_THIRD_CARD', table_id, shoe_id, round_no,
           card_seqs[:2] || [first_settlement_seq],
           printf('The spread %d of %s and %s was settled %s', spread, left_card, right_card,
                  CASE WHEN len(beyond_two) = 0 THEN 'with no third card at all'
                       ELSE 'before its third card ' || beyond_two[1].card || ' was drawn' END),
           ended_at
    FROM facts
    WHERE kind = 'spread' AND NOT voided AND cut_seq IS NULL
      AND first_settlement_seq IS NOT NULL
      AND (len(beyond_two) = 0
           OR game_order(beyond_two[1].at, beyond_two[1].seq) > first_settlement)
) AS found(code, table_id, shoe_id, round_no, seqs, explanation, occurred_at);

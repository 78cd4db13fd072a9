-- The anomalies fall into five families, one view each (anomalies_found_rounds, _money, _shoes,
-- _tables, _streams); `anomalies` is their union, with each code's severity and rule. The
-- families share nothing but the round facts (which the rounds and money families each compute),
-- so each can be evaluated, and read, by itself. Every rule is decided within one table: the
-- projector stores the rows a family and a group of whole tables at a time, through these same
-- views over an `events` view of the group alone (projections/anomalies.py,
-- refresh_stored_anomalies), so no query holds more than one family's state for 1M events.

-- The rules of a round: its cards, announcements, wagers and rack, from the round facts.
CREATE OR REPLACE VIEW anomalies_found_rounds AS
WITH
-- The round facts, read once. A round's dealt and racked lists are kept only where they differ
-- (DISCARD_RACK_ORDER and CARD_UNACCOUNTED look at those rounds alone).
facts AS MATERIALIZED (
    SELECT * EXCLUDE (dealt_cards, racked_cards),
           dealt_cards IS DISTINCT FROM racked_cards AS rack_differs,
           CASE WHEN dealt_cards IS DISTINCT FROM racked_cards THEN dealt_cards END AS dealt_cards,
           CASE WHEN dealt_cards IS DISTINCT FROM racked_cards THEN racked_cards END AS racked_cards
    FROM anomaly_round_facts
),

-- Spread rounds with a card out of the shoe before "Raises closed" (13:47-20.31(g)3: "If a
-- third card is drawn and exposed to the players prior to the dealer announcing "Raises
-- closed," the card shall be discarded"): the round facts' `exposed`, any card beyond the first
-- two before it in game order (sql/macros.sql, game_order), wherever it landed: (g)3 names a third
-- card drawn, and a card sent straight to the rack is discarded but was still drawn before the
-- players' choice. With no "Raises closed" at all, the third card out, which then decides. The
-- new third card is the deciding one (sql/cards.sql, deciding_index: the first card out after
-- "Raises closed"). Before and after are game order throughout, so a dealer terminal whose
-- lines reach the log after the shoe's is judged on when things happened at the table.
exposures AS MATERIALIZED (
    SELECT f.table_id, f.shoe_id, f.round_no, f.finished, f.left_card, f.right_card, f.spread,
           f.raises_closed_seq,
           f.exposed[1].seq AS exposed_seq, f.exposed[1].card AS exposed_card,
           f.exposed[1].at AS exposed_at,
           game_order(f.exposed[1].at, f.exposed[1].seq) AS exposed_order,
           CASE WHEN f.raises_closed IS NOT NULL THEN f.third_card_seq END AS new_third_seq,
           CASE WHEN f.raises_closed IS NOT NULL THEN f.third_card_order END AS new_third_order,
           CASE WHEN f.raises_closed IS NOT NULL THEN f.middle_card END AS new_third_card
    FROM facts AS f
    WHERE f.kind = 'spread' AND len(f.exposed) > 0
),

-- After an exposure, per betting area: what was at stake when the card came out (the last
-- wager placed or changed, nothing if removed; the raises placed), and, before the new third
-- card, the player's last choice and the wager and raise returned (game order).
exposure_areas AS (
    SELECT x.table_id, x.shoe_id, x.round_no, e.seat, e.area,
           arg_max(CASE WHEN e.event_type = 'WagerRemoved' THEN 0 ELSE e.amount_cents END,
                   game_order(e.occurred_at, e.seq))
               FILTER (e.event_type IN ('WagerPlaced', 'WagerChanged', 'WagerRemoved')
                       AND game_order(e.occurred_at, e.seq) < x.exposed_order) AS wager_cents,
           coalesce(sum(e.amount_cents) FILTER (e.event_type = 'RaisePlaced'
                        AND game_order(e.occurred_at, e.seq) < x.exposed_order), 0)
               AS raise_cents,
           arg_max(e.choice, game_order(e.occurred_at, e.seq)) FILTER (e.event_type = 'VoidOrPlayChosen' AND after_exposure)
               AS choice,
           arg_max(e.seq, game_order(e.occurred_at, e.seq)) FILTER (e.event_type = 'VoidOrPlayChosen' AND after_exposure)
               AS choice_seq,
           coalesce(sum(e.amount_cents) FILTER (e.event_type = 'WagerSettled' AND e.outcome = 'VOID'
               AND e.wager_kind = 'ORIGINAL' AND after_exposure), 0) AS wager_back,
           coalesce(sum(e.amount_cents) FILTER (e.event_type = 'WagerSettled' AND e.outcome = 'VOID'
               AND e.wager_kind = 'RAISE' AND after_exposure), 0) AS raise_back
    FROM exposures AS x
    JOIN events AS e USING (table_id, shoe_id, round_no),
    LATERAL (SELECT game_order(e.occurred_at, e.seq) > x.exposed_order
                    AND (x.new_third_order IS NULL OR game_order(e.occurred_at, e.seq) < x.new_third_order)
                 AS after_exposure)
    WHERE e.event_type IN ('WagerPlaced', 'WagerChanged', 'WagerRemoved', 'RaisePlaced',
                           'VoidOrPlayChosen', 'WagerSettled')
    GROUP BY ALL
),

exposure_faults AS (
    SELECT table_id, shoe_id, round_no,
           list(seat ORDER BY seat, area) FILTER (choice IS NULL) AS no_choice_seats,
           list(seat ORDER BY seat, area) FILTER (choice = 'VOID' AND (wager_back < wager_cents
                                                                      OR raise_back < raise_cents)) AS unrefunded_seats,
           list(choice_seq ORDER BY choice_seq) FILTER (choice = 'VOID' AND (wager_back < wager_cents
                                                                             OR raise_back < raise_cents)) AS unrefunded_seqs
    FROM exposure_areas
    WHERE wager_cents > 0
    GROUP BY ALL
),

-- Wager events after the round's first card (13:47-20.31(d)3, (d)6; GA (1), (4)), with whether
-- the area held a wager before the first card and whether its decision came before the event.
-- Before and after are game order (sql/macros.sql, game_order): the wagers come from the dealer
-- terminal and the first card from the shoe, so their seqs are arrival order only.
moves AS (
    SELECT e.table_id, e.shoe_id, e.round_no, e.seat, e.area, e.seq, e.event_type,
           e.amount_cents, e.instrument, e.occurred_at, f.first_card_seq, f.first_card,
           f.first_card_order, game_order(e.occurred_at, e.seq) AS move_order
    FROM events AS e
    JOIN facts AS f USING (table_id, shoe_id, round_no)
    WHERE e.event_type IN ('WagerPlaced', 'WagerChanged', 'WagerRemoved')
      AND game_order(e.occurred_at, e.seq) > f.first_card_order
),

late_moves AS (
    SELECT m.table_id, m.shoe_id, m.round_no, m.seat, m.area, m.seq, m.event_type,
           m.amount_cents, m.instrument, m.occurred_at, m.first_card_seq, m.first_card,
           m.first_card_order, m.move_order,
           coalesce(bool_or(b.event_type = 'WagerPlaced'
                            AND game_order(b.occurred_at, b.seq) < m.first_card_order), false) AS had_wager,
           coalesce(bool_or(b.event_type = 'WagerSettled' AND b.wager_kind = 'ORIGINAL'
                            AND game_order(b.occurred_at, b.seq) < m.move_order), false) AS decided
    FROM moves AS m
    LEFT JOIN events AS b
        ON b.table_id = m.table_id AND b.shoe_id = m.shoe_id AND b.round_no = m.round_no
       AND b.seat = m.seat AND b.area = m.area AND b.event_type IN ('WagerPlaced', 'WagerSettled')
    GROUP BY ALL
),

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
    JOIN facts AS f USING (table_id, shoe_id, round_no)
    ASOF LEFT JOIN (SELECT table_id, shoe_id, round_no, game_order(occurred_at, seq) AS drawn,
                           rank, destination FROM events
                    WHERE event_type = 'CardDrawn') AS m
        ON m.table_id = a.table_id AND m.shoe_id = a.shoe_id AND m.round_no = a.round_no
       AND game_order(a.occurred_at, a.seq) > m.drawn
    WHERE a.event_type = 'Announced' AND f.kind IS NOT NULL
      AND a.meaning IN ('THREE_OF_A_KIND', 'NO_THREE_OF_A_KIND', 'THIRD_CARD')
    UNION ALL
    SELECT a.table_id, a.shoe_id, a.round_no, a.seq, a.occurred_at, a.phrase, a.meaning, a."value",
           f.kind, f.spread, f.left_rank, f.left_card, f.right_card, NULL::INTEGER
    FROM events AS a
    JOIN facts AS f USING (table_id, shoe_id, round_no)
    WHERE a.event_type = 'Announced' AND f.kind IS NOT NULL
      AND a.meaning IN ('CONSECUTIVE', 'PAIR', 'SPREAD', 'RAISES_CLOSED')
),

-- What a finished, unvoided round announced, from the round facts (a round whose shoe_id is
-- NULL matches no announcement: it joins nothing by table, shoe and round).
said_per_round AS (
    SELECT table_id, shoe_id, round_no, kind, spread, left_card, right_card,
           middle_card, third_card_seq, card_seqs, ended_at,
           CASE WHEN shoe_id IS NULL THEN 0 ELSE kind_said END AS kind_said,
           -- 13:47-20.31(d)9-10, (d)13: said after the deciding third card.
           shoe_id IS NOT NULL AND coalesce(last_outcome_said > third_card_order, false) AS outcome_said,
           shoe_id IS NOT NULL AND coalesce(last_value_said > third_card_order, false) AS value_said
    FROM facts
    WHERE kind IS NOT NULL AND finished AND NOT voided
),

-- The discard rack round by round (13:47-20.31(d)15; GA (12)): every card drawn in a round
-- (CardDrawn, any box) against the cards of its CardsRacked, as lists (the round facts'
-- dealt_cards and racked_cards) and, where they differ, as multisets (copies of each card).
-- A round whose shoe_id is NULL is not judged (it matches no round by table, shoe and round).
rack_differs AS MATERIALIZED (
    SELECT table_id, shoe_id, round_no, dealt_cards AS dealt, racked_cards AS racked,
           dealt_seqs AS card_seqs, racked_seq, finished, ended_at
    FROM facts
    WHERE rack_differs AND shoe_id IS NOT NULL
),

rack_copies AS (
    SELECT table_id, shoe_id, round_no, c.rank, c.suit,
           count(*) FILTER (src = 'dealt') AS dealt_n, count(*) FILTER (src = 'racked') AS racked_n,
           list(s) FILTER (src = 'dealt') AS seqs
    FROM (SELECT table_id, shoe_id, round_no, 'dealt' AS src, unnest(dealt) AS c,
                 unnest(card_seqs) AS s FROM rack_differs
          UNION ALL
          SELECT table_id, shoe_id, round_no, 'racked', unnest(racked), NULL FROM rack_differs)
    GROUP BY ALL
),

rack_check AS (
    SELECT d.table_id, d.shoe_id, d.round_no, d.racked_seq, d.card_seqs, d.finished, d.ended_at,
           coalesce(list(card_label(c.rank, c.suit) ORDER BY c.rank, c.suit)
                    FILTER (c.dealt_n > c.racked_n), []) AS missing,
           coalesce(flatten(list(c.seqs ORDER BY c.rank, c.suit) FILTER (c.dealt_n > c.racked_n)),
                    []::BIGINT[]) AS missing_seqs,
           coalesce(list(card_label(c.rank, c.suit) ORDER BY c.rank, c.suit)
                    FILTER (c.racked_n > c.dealt_n), []) AS not_dealt,
           array_to_string(list_transform(d.dealt, lambda x: card_label(x.rank, x.suit)), ' ') AS dealt,
           array_to_string(list_transform(d.racked, lambda x: card_label(x.rank, x.suit)), ' ') AS racked
    FROM rack_differs AS d
    LEFT JOIN rack_copies AS c USING (table_id, shoe_id, round_no)
    GROUP BY ALL
),

-- 13:47-20.31(d)15, (g)1-2: every card out of the shoe reaches the discard rack. A card dealt
-- with no round (CARD_OUTSIDE_ROUND) is no round's card, so no round's rack check above sees it:
-- by the time its shoe is closed it must be racked, beyond the cards of the round whose
-- CardsRacked holds it (rack_copies: a round's racked copies over its dealt ones) or in a
-- CardsRacked with no round. The cards dealt are sql/macros.sql's is_dealt_card, each card's
-- neighbours the cards before and after it with no round in its shoe (burns aside), in game
-- order: a card drawn in error and then drawn (the same card, (g)2) is one card, and a card
-- found face up then drawn to the rack is racked as found ((g)1).
loose_cards AS (
    SELECT table_id, shoe_id, rank, suit, seq,
           row_number() OVER (PARTITION BY table_id, shoe_id, rank, suit ORDER BY seq) AS copy_no
    FROM (SELECT *, lag(this_card) OVER w AS card_before, lead(this_card) OVER w AS card_after
          FROM (SELECT *, {'type': event_type, 'rank': rank, 'suit': suit, 'dest': destination}
                              AS this_card
                FROM card_events_of(NULL, NULL, NULL, NULL)  -- each card once (sql/macros.sql)
                WHERE round_no IS NULL AND shoe_id IS NOT NULL AND event_type <> 'CardBurned')
          WINDOW w AS (PARTITION BY table_id, shoe_id ORDER BY occurred_at, seq, log_offset))
    WHERE is_dealt_card(card_before, this_card, card_after)
),
racked_beyond_rounds AS (
    SELECT table_id, shoe_id, rank, suit, sum(n)::BIGINT AS racked_n
    FROM (SELECT table_id, shoe_id, rank, suit, racked_n - dealt_n AS n FROM rack_copies
          WHERE racked_n > dealt_n
          UNION ALL
          SELECT table_id, shoe_id, c.rank, c.suit, 1
          FROM (SELECT table_id, shoe_id, unnest(cards) AS c FROM events
                WHERE event_type = 'CardsRacked' AND round_no IS NULL AND shoe_id IS NOT NULL))
    GROUP BY ALL
),
loose_unracked AS (
    SELECT l.table_id, l.shoe_id, l.rank, l.suit, l.seq, c.seq AS closed_seq, c.occurred_at
    FROM loose_cards AS l
    LEFT JOIN racked_beyond_rounds AS r USING (table_id, shoe_id, rank, suit)
    ASOF JOIN (SELECT table_id, shoe_id, seq, occurred_at FROM events
               WHERE event_type = 'ShoeClosed') AS c
        ON c.table_id = l.table_id AND c.shoe_id = l.shoe_id AND c.seq > l.seq
    WHERE l.copy_no > coalesce(r.racked_n, 0)
),

-- Each round's first RoundVoided and dealing-shoe fault, in game order (sql/rounds.sql, void_allowed
-- and game_order, which the rounds view and the ledger read too).
voids AS (
    SELECT table_id, shoe_id, round_no,
           min(game_order(occurred_at, seq)) FILTER (event_type = 'RoundVoided') AS void_order,
           arg_min(reason, game_order(occurred_at, seq)) FILTER (event_type = 'RoundVoided') AS void_reason,
           min(game_order(occurred_at, seq)) FILTER (event_type = 'DeviceFaulted' AND fault <> 'SHUFFLER_JAM')
               AS shoe_fault_order
    FROM events
    WHERE event_type IN ('RoundVoided', 'DeviceFaulted') AND round_no IS NOT NULL
    GROUP BY ALL
    HAVING min(seq) FILTER (event_type = 'RoundVoided') IS NOT NULL
),

-- Device faults (13:69F-34.16(m)-(n), applied by analogy) and what followed each.
faults AS (
    SELECT f.table_id, f.shoe_id, f.round_no, f.seq, f.occurred_at, f.fault, f.device_id,
           c.seq AS card_seq, s.seq AS reshuffle_seq, min(v.seq) AS void_seq, r.finished
    FROM events AS f
    -- the next card out of the same shoe, and the next shuffle begun for it (seq: the fault, the
    -- cards and the shuffle are the devices' own lines, each in its own order)
    ASOF LEFT JOIN (SELECT table_id, shoe_id, seq FROM events
                    WHERE is_card_event(event_type)) AS c
        ON c.table_id = f.table_id AND c.shoe_id = f.shoe_id AND f.seq < c.seq
    ASOF LEFT JOIN (SELECT table_id, shoe_id, seq FROM events WHERE event_type = 'ShuffleStarted') AS s
        ON s.table_id = f.table_id AND s.shoe_id = f.shoe_id AND f.seq < s.seq
    -- the void (a terminal line) after the fault (the device's) in game order (sql/macros.sql)
    LEFT JOIN events AS v
        ON v.table_id = f.table_id AND v.shoe_id = f.shoe_id AND v.round_no = f.round_no
       AND v.event_type = 'RoundVoided'
       AND game_order(v.occurred_at, v.seq) > game_order(f.occurred_at, f.seq)
    LEFT JOIN facts AS r
        ON r.table_id = f.table_id AND r.shoe_id = f.shoe_id AND r.round_no = f.round_no
    WHERE f.event_type = 'DeviceFaulted'
    GROUP BY ALL
)
SELECT * FROM (
    -- EARLY_THIRD_CARD (13:47-20.31(g)3; 13:69F-6.7): in a spread round, a card to the middle
    -- box before "Raises closed" was said (or with no "Raises closed" at all).
    SELECT 'EARLY_THIRD_CARD' AS code, table_id, shoe_id, round_no,
           list_filter([exposed_seq, raises_closed_seq], lambda s: s IS NOT NULL) AS seqs,
           printf('Third card %s exposed before "Raises closed" (%s and %s, spread %d)%s',
                  exposed_card, left_card, right_card, spread,
                  CASE WHEN raises_closed_seq IS NULL THEN '; "Raises closed" was never said' ELSE '' END)
               AS explanation,
           exposed_at AS occurred_at
    FROM exposures

    UNION ALL
    -- EARLY_EXPOSURE_MISHANDLED (same rules): after the exposure, every player with a wager at
    -- stake chooses to void or play (VoidOrPlayChosen) before the new third card; a player who
    -- voids gets the wager and any raise back (WagerSettled VOID) before it; and the exposed
    -- card never decides the round (a new third card after "Raises closed"). Judged once the
    -- round is finished.
    SELECT 'EARLY_EXPOSURE_MISHANDLED', x.table_id, x.shoe_id, x.round_no,
           list_filter([x.exposed_seq, x.new_third_seq], lambda s: s IS NOT NULL)
               || coalesce(p.unrefunded_seqs, []::BIGINT[]),
           'After ' || x.exposed_card || ' was exposed early: ' || concat_ws('; ',
               CASE WHEN x.new_third_seq IS NULL THEN 'it was used as the third card instead of discarded' END,
               CASE WHEN len(p.no_choice_seats) > 0
                    THEN 'no void-or-play choice for ' || anomaly_seats(p.no_choice_seats) END,
               CASE WHEN len(p.unrefunded_seats) > 0
                    THEN anomaly_seats(p.unrefunded_seats)
                         || ' voided but did not get the wager and raise back before the new third card'
                         || coalesce(' ' || x.new_third_card, '') END),
           x.exposed_at
    FROM exposures AS x
    LEFT JOIN exposure_faults AS p USING (table_id, shoe_id, round_no)
    WHERE x.finished
      AND (x.new_third_seq IS NULL OR len(p.no_choice_seats) > 0 OR len(p.unrefunded_seats) > 0)

    UNION ALL
    -- LATE_WAGER (13:47-20.31(d)3; GA (1)): a wager placed after the first card left the shoe
    -- on an area that held none before it.
    SELECT 'LATE_WAGER', table_id, shoe_id, round_no, [first_card_seq, seq],
           printf('Seat %d placed %s (%s) on area %d after the first card %s left the shoe',
                  seat, dollars(amount_cents), replace(lower(instrument), '_', ' '), area, first_card),
           occurred_at
    FROM late_moves
    WHERE event_type = 'WagerPlaced' AND NOT had_wager

    UNION ALL
    -- WAGER_ALTERED (13:47-20.31(d)6; GA (4)): a wager changed, removed or added to after the
    -- first card, before its decision.
    SELECT 'WAGER_ALTERED', table_id, shoe_id, round_no, [first_card_seq, seq],
           printf('Seat %d %s on area %d after the first card %s left the shoe, before its decision',
                  seat, CASE event_type WHEN 'WagerRemoved' THEN 'removed the wager'
                                        WHEN 'WagerChanged' THEN 'changed the wager to ' || dollars(amount_cents)
                                        ELSE 'added ' || dollars(amount_cents) || ' to the wager' END,
                  area, first_card),
           occurred_at
    FROM late_moves
    WHERE NOT decided AND (event_type <> 'WagerPlaced' OR had_wager)

    UNION ALL
    -- EARLY_RAISE (13:47-20.31(d)12: raises are made "immediately after the initial two cards
    -- have been dealt"): a raise in a spread round before its second card was dealt. Proof:
    -- the raise and the second card.
    SELECT 'EARLY_RAISE', e.table_id, e.shoe_id, e.round_no, [e.seq, f.card_seqs[2]],
           printf('Seat %d raised %s on area %d '
                  || CASE WHEN game_order(e.occurred_at, e.seq) < f.first_card_order
                          THEN 'before the first two cards were dealt (%s and %s came after)'
                          ELSE 'between the first two cards (%s came before the raise, %s after)' END,
                  e.seat, dollars(e.amount_cents), e.area, f.left_card, f.right_card),
           e.occurred_at
    FROM events AS e
    JOIN facts AS f USING (table_id, shoe_id, round_no)
    -- game order (sql/macros.sql, game_order): the raise is keyed at the terminal, the card is the shoe's
    WHERE e.event_type = 'RaisePlaced' AND f.kind = 'spread'
      AND game_order(e.occurred_at, e.seq) < f.second_card_order

    UNION ALL
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
    -- LATE_RAISE (13:47-20.31(d)12-13; GA (11)): a raise placed after "Raises closed".
    SELECT 'LATE_RAISE', e.table_id, e.shoe_id, e.round_no, [f.raises_closed_seq, e.seq],
           printf('Seat %d raised %s on area %d after "Raises closed"%s', e.seat, dollars(e.amount_cents),
                  e.area, CASE WHEN game_order(e.occurred_at, e.seq) > f.third_card_order
                               THEN ', with the third card ' || f.middle_card || ' already out' ELSE '' END),
           e.occurred_at
    FROM events AS e
    JOIN facts AS f USING (table_id, shoe_id, round_no)
    -- game order (sql/macros.sql, game_order): a raise keyed before "Raises closed" is on time
    -- whichever line reached the recorder first
    WHERE e.event_type = 'RaisePlaced' AND f.kind = 'spread'
      AND game_order(e.occurred_at, e.seq) > f.raises_closed

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

    UNION ALL
    -- ROUND_ABANDONED_AT_CUT_CARD (13:47-20.31(d)16; GA (13)): the cutting card came out in
    -- this round and the finished round never reached its decision (two cards, and a third
    -- unless consecutive).
    SELECT 'ROUND_ABANDONED_AT_CUT_CARD', table_id, shoe_id, round_no, [cut_seq] || card_seqs,
           printf('The cutting card came out and the round stopped with %s on the layout instead of being completed',
                  CASE WHEN len(card_seqs) = 0 THEN 'no card'
                       WHEN kind IS NULL THEN coalesce(left_card, right_card, 'a card')
                       ELSE left_card || ' and ' || right_card END),
           ended_at
    FROM facts
    WHERE cut_seq IS NOT NULL AND NOT voided AND finished
      AND (kind IS NULL OR (kind <> 'consecutive' AND third_card_seq IS NULL))

    UNION ALL
    -- NO_RESHUFFLE_AFTER_CUT_CARD (13:47-20.31(d)16; GA (13)): once the cutting card is out,
    -- the round in progress is completed and the cards reshuffled: any later round dealt from
    -- the same shoe.
    SELECT 'NO_RESHUFFLE_AFTER_CUT_CARD', f.table_id, f.shoe_id, f.round_no,
           [c.cut_seq] || f.card_seqs[:1],
           printf('Round %d was dealt from shoe %s after the cutting card came out%s',
                  f.round_no, f.shoe_id, coalesce(printf(' in round %d', c.cut_round), '')),
           f.started_at
    FROM facts AS f
    JOIN (SELECT table_id, shoe_id, min(seq) AS cut_seq, arg_min(round_no, seq) AS cut_round
          FROM events WHERE event_type = 'CuttingCardReached' AND shoe_id IS NOT NULL
          GROUP BY ALL) AS c USING (table_id, shoe_id)
    WHERE f.first_seq > c.cut_seq AND f.round_no IS DISTINCT FROM c.cut_round
      AND len(f.card_seqs) > 0

    UNION ALL
    -- DISCARD_RACK_ORDER (13:47-20.31(d)15; GA (12)): a finished round never racked; a racked
    -- card not drawn in the round; or the same cards racked in another order. When a card is
    -- missing from the rack that is CARD_UNACCOUNTED, and the order of the rest is not judged.
    SELECT 'DISCARD_RACK_ORDER', table_id, shoe_id, round_no,
           CASE WHEN racked_seq IS NULL THEN card_seqs ELSE [racked_seq] END,
           CASE WHEN racked_seq IS NULL THEN 'The cards ' || dealt || ' were never racked'
                WHEN len(not_dealt) > 0
                THEN printf('Racked %s, which were not drawn in this round (dealt %s, racked %s)',
                            array_to_string(not_dealt, ' '), dealt, racked)
                ELSE printf('Racked %s, dealt %s: not in dealing order', racked, dealt) END,
           ended_at
    FROM rack_check
    WHERE (racked_seq IS NULL AND finished AND len(card_seqs) > 0)
       OR (racked_seq IS NOT NULL AND len(not_dealt) > 0)
       OR (racked_seq IS NOT NULL AND len(missing) = 0 AND len(not_dealt) = 0)

    UNION ALL
    -- CARD_UNACCOUNTED (13:47-20.31(d)15): a card drawn in a round is not in its rack.
    SELECT 'CARD_UNACCOUNTED', table_id, shoe_id, round_no, list_sort(missing_seqs || [racked_seq]),
           printf('%s left the shoe but never reached the rack (dealt %s, racked %s)',
                  array_to_string(missing, ' '), dealt, racked),
           ended_at
    FROM rack_check
    WHERE racked_seq IS NOT NULL AND len(missing) > 0

    UNION ALL
    -- CARD_UNACCOUNTED (13:47-20.31(d)15; (g)1-2): a card dealt with no round never reached the
    -- rack before its shoe was closed (loose_unracked). Proof: the card and the shoe's closing.
    SELECT 'CARD_UNACCOUNTED', table_id, shoe_id, NULL, [seq, closed_seq],
           printf('%s left shoe %s with no round and never reached the rack before the shoe was closed',
                  card_label(rank, suit), shoe_id),
           occurred_at
    FROM loose_unracked

    UNION ALL
    -- DEVICE_FAULT_NOT_VOIDED (13:69F-34.16(m)-(n) by analogy): a shuffler jam must be followed
    -- by a reshuffle (ShuffleStarted) before any card comes out; a dealing-shoe jam by
    -- RoundVoided in its round (once the round is over) and no further card from that shoe.
    SELECT 'DEVICE_FAULT_NOT_VOIDED', table_id, shoe_id, round_no,
           list_filter([seq, card_seq], lambda s: s IS NOT NULL),
           CASE fault
               WHEN 'SHUFFLER_JAM' THEN printf('Shuffler %s jammed and cards were dealt without a reshuffle', device_id)
               ELSE printf('Dealing shoe %s jammed and the round was %s', device_id,
                           concat_ws(' and ',
                               CASE WHEN void_seq IS NULL THEN 'not voided' END,
                               CASE WHEN card_seq IS NOT NULL THEN 'dealt on from the same shoe' END)) END,
           occurred_at
    FROM faults
    WHERE CASE fault
        WHEN 'SHUFFLER_JAM' THEN card_seq IS NOT NULL AND (reshuffle_seq IS NULL OR reshuffle_seq > card_seq)
        ELSE card_seq IS NOT NULL
             OR (round_no IS NOT NULL AND void_seq IS NULL AND finished) END

    UNION ALL
    -- ROUND_VOIDED_WITHOUT_CAUSE: a RoundVoided the rules do not allow (sql/rounds.sql, void_allowed:
    -- 13:69F-34.16(n) by analogy, a dealing-shoe fault in the round before it; 13:47-20.31(d)7
    -- and (d)10, a tie hand), before the deciding third card or after it. It voids nothing: the
    -- ledger judges every wager against the deciding third card (13:47-20.31(d)13-14: "The
    -- player shall win if the value of the third card dealt is between ... and shall lose if ...
    -- not between"), so wagers returned on a decided round are also WRONG_SETTLEMENT, and on an
    -- undecided one SETTLED_BEFORE_DECISION. Proof: the deciding third card, if any, and the void.
    SELECT 'ROUND_VOIDED_WITHOUT_CAUSE', v.table_id, v.shoe_id, v.round_no,
           list_filter([f.third_card_seq, v.void_order.seq], lambda s: s IS NOT NULL),
           CASE WHEN f.third_card_order IS NULL OR f.third_card_order > v.void_order
                THEN printf('Round %d was voided ("%s") before any third card decided it, with no dealing-shoe fault before the void and no tie hand: nothing in the rules voids it',
                            v.round_no, v.void_reason)
                ELSE printf('Round %d was voided ("%s") after the third card %s had decided it (%s and %s, %s: %s); no dealing-shoe fault came before the void and the cards are no tie hand, so nothing voids it',
                            v.round_no, v.void_reason, f.middle_card, f.left_card, f.right_card,
                            CASE WHEN f.kind = 'pair' THEN 'a pair' ELSE printf('spread %d', f.spread) END,
                            third_card_verdict(f.kind, f.left_rank, f.right_rank, f.middle_rank)) END,
           v.void_order.at
    FROM voids AS v
    JOIN facts AS f
        ON f.table_id = v.table_id AND f.shoe_id IS NOT DISTINCT FROM v.shoe_id AND f.round_no = v.round_no
    WHERE NOT void_allowed(f.kind, f.left_rank, f.middle_rank, v.void_order, v.shoe_fault_order)
) AS found(code, table_id, shoe_id, round_no, seqs, explanation, occurred_at);

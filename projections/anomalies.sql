-- pitlog anomalies: every rule and integrity code of the catalogue (anomaly_codes), decided in
-- plain DuckDB SQL over the raw `events` table and the `ledger` and `paytables` views of
-- ledger.sql (created before this file). The `anomalies` view is the union of five families
-- (anomalies_found_*), each a UNION ALL of one commented SELECT per code over a few shared,
-- materialised facts; `SELECT * FROM anomalies WHERE code = '...'` shows one code.
-- docs/anomalies.md explains every decision; HOLD_VARIANCE and OUTCOME_FREQUENCY are
-- statistics (projections/statistics.py).
--
-- Every row: code, severity, table_id, shoe_id, round_no, seqs (the sequence numbers of the
-- events that prove it), explanation (one line to read aloud), rule, occurred_at.
-- Within a table, the log's events are ordered by seq (gapless per table), then log offset:
-- the order the recorder received them. Every "before" or "after" within a round is game order
-- instead (views.sql, game_order: occurred_at, then seq), since across the shoe and the dealer
-- terminal seq is arrival order; the checks that still read seq compare lines of one device,
-- or read the log's own order (the chain, the rack's lines, the paytable and dealer in force).
--
-- "Finished": a round whose table recorded anything after the round's last event. What a
-- round LACKS (an announcement, a settlement, the rack) is judged only once it is finished,
-- so a live table's round in progress is never flagged for what is still to come.

-- The catalogue, `anomaly_codes` (code, severity, severity_rank, rule, flagged), is generated
-- from events/reddog/catalogue.py before this file runs (projections/reddog_macros.py). A code
-- selected below needs its entry there, or the `anomalies` view's join drops its rows
-- (tests/projections/test_catalogue.py fails first).

-- "seat 2" or "seats 1, 3" in an explanation.
CREATE OR REPLACE MACRO anomaly_seats(seats) AS
    CASE WHEN len(seats) = 1 THEN 'seat ' ELSE 'seats ' END
    || array_to_string(list_sort(list_distinct(seats)), ', ');

-- Who wins on a deciding third card, read aloud (13:47-20.31(d)9-10, (d)14; GA (7)-(8), (11)(a)).
CREATE OR REPLACE MACRO third_card_verdict(kind, left_rank, right_rank, third_rank) AS
    CASE WHEN kind = 'pair' AND third_rank = left_rank THEN 'three of a kind, players win'
         WHEN kind = 'pair' THEN 'no three of a kind, a tie hand'
         WHEN third_rank > least(left_rank, right_rank)
              AND third_rank < greatest(left_rank, right_rank) THEN 'players win'
         ELSE 'players lose' END;

-- Cards drawn ({seq, card, dest} structs) with where each went: "9H to the middle box, 5C to
-- the discard rack".
CREATE OR REPLACE MACRO placed_cards(draws) AS
    array_to_string(list_transform(draws, lambda x: x.card
        || coalesce(' to ' || card_place(x.dest), ' drawn in error')), ', ');

-- One row per round: its cards, kind and the marks the checks need, from the round's cards
-- (views.sql, round_cards: every card out of the shoe in game order, wherever it went; one
-- definition with the `rounds` view, so the checks judge the cards the ledger judges). The left
-- and right cards are the first and second cards out, whatever their boxes (WRONG_BOX judges
-- the boxes); the middle card the deciding third card (views.sql, deciding_index) and
-- third_card_box where it went; `redraws` are the cards out after it (any box), `beyond_two`
-- every card out beyond the first two, and `exposed` the cards of a spread exposed before
-- "Raises closed" (13:47-20.31(g)3; with no "Raises closed", the third card out, which then
-- decides). "finished": the table recorded something after the round's last event; what a
-- round LACKS (an announcement, a settlement, the rack) is judged only then, so a live
-- table's round in progress is never flagged for what is still to come.
CREATE OR REPLACE VIEW anomaly_round_facts AS
WITH per_round AS (
    SELECT
        table_id, shoe_id, round_no,
        min(occurred_at) AS started_at, max(occurred_at) AS ended_at,
        min(seq) AS first_seq, max(seq) AS last_seq,
        -- the cards out of the shoe in game order (views.sql, round_cards)
        coalesce(round_cards(list({'seq': seq, 'at': occurred_at, 'type': event_type, 'rank': rank,
                                   'suit': suit, 'dest': destination}
                                  ORDER BY occurred_at, seq, log_offset)
                             FILTER (event_type IN ('CardDrawn', 'CardDrawnInError',
                                                    'CardFoundFaceUp', 'CardBurned'))), [])
            AS cards,
        coalesce(bool_or(event_type = 'RoundVoided'), false) AS voided,
        -- 13:47-20.31(d)3, (d)6: the first card out of the shoe in game order (as the ledger
        -- counts it, ledger.sql first_cards): a wager typed at the terminal before the shoe's
        -- first card is on time even when its line reaches the recorder after the card's.
        min(game_order(occurred_at, seq)) FILTER (event_type IN ('CardDrawn', 'CardDrawnInError'))
            AS first_card_order,
        arg_min({'rank': rank, 'suit': suit}, game_order(occurred_at, seq))
            FILTER (event_type IN ('CardDrawn', 'CardDrawnInError')) AS first,
        min(game_order(occurred_at, seq)) FILTER (event_type = 'Announced' AND meaning = 'RAISES_CLOSED')
            AS raises_closed,
        min(seq) FILTER (event_type = 'CuttingCardReached') AS cut_seq,
        -- (d)8, (d)13: the first settlement in game order (the third card must come before it)
        min(game_order(occurred_at, seq)) FILTER (event_type = 'WagerSettled') AS first_settlement,
        min(seq) FILTER (event_type = 'CardsRacked') AS racked_seq,
        flatten(list(cards ORDER BY seq, log_offset) FILTER (event_type = 'CardsRacked')) AS racked_cards,
        -- 13:47-20.31(d)7-11, 13: the announcements a finished round must have: how many named
        -- the first two cards' kind, and the last of an outcome and of a third-card value
        -- (game order: said after the third card at the table).
        count(seq) FILTER (event_type = 'Announced' AND meaning IN ('CONSECUTIVE', 'PAIR', 'SPREAD')) AS kind_said,
        max(game_order(occurred_at, seq)) FILTER (event_type = 'Announced' AND meaning IN ('THREE_OF_A_KIND', 'NO_THREE_OF_A_KIND'))
            AS last_outcome_said,
        max(game_order(occurred_at, seq)) FILTER (event_type = 'Announced' AND meaning = 'THIRD_CARD') AS last_value_said
    FROM events_once_of(NULL, NULL, NULL, NULL)  -- each card event once (views.sql)
    WHERE round_no IS NOT NULL
    GROUP BY table_id, shoe_id, round_no
),
table_end AS (
    SELECT table_id, max(seq) AS table_last_seq FROM events GROUP BY table_id
),
kinds AS (
    SELECT *, cards[1] AS l, cards[2] AS r, round_kind(cards[1].rank, cards[2].rank) AS kind,
           list_transform(cards, lambda x: {'seq': x.seq, 'card': card_label(x.rank, x.suit),
                                            'dest': x.dest, 'at': x.at}) AS placed
    FROM per_round
),
decided AS (
    -- The deciding third card (views.sql, deciding_index: one definition with the rounds view)
    SELECT *, deciding_index(cards, kind, raises_closed) AS third_pos FROM kinds
),
drawn AS (
    SELECT *, cards[third_pos] AS m,
           CASE WHEN third_pos IS NULL THEN [] ELSE placed[third_pos + 1:] END AS redraws,
           -- 13:47-20.31(d)7-8, (d)13: every card beyond the first two
           placed[3:] AS beyond,
           -- 13:47-20.31(g)3: a spread's cards out before "Raises closed", beyond the first
           -- two; with none said, the third card out (it decides: deciding_index)
           CASE WHEN kind <> 'spread' THEN []
                WHEN raises_closed IS NULL THEN placed[3:3]
                ELSE list_filter(placed[3:], lambda x: game_order(x.at, x.seq) < raises_closed) END
               AS exposed
    FROM decided
)
SELECT
    p.table_id, p.shoe_id, p.round_no, p.started_at, p.ended_at, p.first_seq, p.last_seq,
    p.l.rank AS left_rank, card_label(p.l.rank, p.l.suit) AS left_card, p.l.seq AS left_seq,
    p.r.rank AS right_rank, card_label(p.r.rank, p.r.suit) AS right_card, p.r.seq AS right_seq,
    p.m.rank AS middle_rank, card_label(p.m.rank, p.m.suit) AS middle_card,
    p.m.seq AS third_card_seq, p.m.dest AS third_card_box, p.third_pos AS third_card_pos,
    game_order(p.m.at, p.m.seq) AS third_card_order, p.r.seq AS sides_seq,
    coalesce(list_transform(p.redraws, lambda x: x.seq), []::BIGINT[]) AS redraw_seqs,
    coalesce(list_transform(p.redraws, lambda x: x.card), []::VARCHAR[]) AS redrawn_cards,
    coalesce(p.redraws, []) AS redraws, coalesce(p.beyond, []) AS beyond_two,
    coalesce(p.exposed, []) AS exposed,
    p.kind,
    CASE WHEN abs(p.l.rank - p.r.rank) >= 2 THEN abs(p.l.rank - p.r.rank) - 1 END AS spread,
    p.voided, p.first_card_order.seq AS first_card_seq, p.first_card_order,
    card_label(p.first.rank, p.first.suit) AS first_card,
    p.raises_closed.seq AS raises_closed_seq, p.raises_closed, p.cut_seq, p.first_settlement.seq AS first_settlement_seq,
    p.first_settlement, game_order(p.r.at, p.r.seq) AS second_card_order,
    list_transform(p.cards, lambda x: x.seq) AS card_seqs, p.racked_seq,
    -- 13:47-20.31(d)5; GA (3): the first two cards out of the shoe and where they went.
    list_transform(p.placed[:2], lambda x: {'seq': x.seq, 'box': x.dest, 'card': x.card})
        AS first_two,
    p.last_seq < t.table_last_seq AS finished,
    -- 13:47-20.31(d)15; (g)2: the round's cards (a card drawn in error and not used included)
    -- and their seqs, against the rack.
    nullif(list_transform(p.cards, lambda x: {'rank': x.rank, 'suit': x.suit}), []) AS dealt_cards,
    list_transform(p.cards, lambda x: x.seq) AS dealt_seqs,
    p.racked_cards, p.kind_said, p.last_outcome_said, p.last_value_said
FROM drawn AS p
JOIN table_end AS t USING (table_id);

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
-- two before it in game order (views.sql, game_order), wherever it landed: (g)3 names a third
-- card drawn, and a card sent straight to the rack is discarded but was still drawn before the
-- players' choice. With no "Raises closed" at all, the third card out, which then decides. The
-- new third card is the deciding one (views.sql, deciding_index: the first card out after
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
-- Before and after are game order (views.sql, game_order): the wagers come from the dealer
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
-- announcements pay for the ASOF join. "Before" is game order (views.sql, game_order): the
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
-- CardsRacked with no round. A card drawn in error and then drawn (the same card, (g)2) is one
-- card, and a card found face up then drawn to the rack is racked as found ((g)1).
loose_cards AS (
    SELECT table_id, shoe_id, rank, suit, seq,
           row_number() OVER (PARTITION BY table_id, shoe_id, rank, suit ORDER BY seq) AS copy_no
    FROM (SELECT *, lag(event_type) OVER w AS prev_type, lag(rank) OVER w AS prev_rank,
                 lag(suit) OVER w AS prev_suit, lead(event_type) OVER w AS next_type,
                 lead(rank) OVER w AS next_rank, lead(suit) OVER w AS next_suit
          FROM card_events_of(NULL, NULL, NULL, NULL)  -- each card once (views.sql)
          WHERE round_no IS NULL AND shoe_id IS NOT NULL
            AND event_type IN ('CardDrawn', 'CardDrawnInError', 'CardFoundFaceUp')
          WINDOW w AS (PARTITION BY table_id, shoe_id ORDER BY occurred_at, seq, log_offset))
    WHERE (event_type = 'CardDrawn' AND NOT coalesce(destination = 'DISCARD_RACK'
               AND prev_type = 'CardFoundFaceUp' AND prev_rank = rank AND prev_suit = suit, false))
       OR (event_type = 'CardDrawnInError' AND NOT coalesce(next_type = 'CardDrawn'
               AND next_rank = rank AND next_suit = suit, false))
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

-- Each round's first RoundVoided and dealing-shoe fault, in game order (views.sql, void_allowed
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
                    WHERE event_type IN ('CardDrawn', 'CardBurned', 'CardFoundFaceUp', 'CardDrawnInError')) AS c
        ON c.table_id = f.table_id AND c.shoe_id = f.shoe_id AND f.seq < c.seq
    ASOF LEFT JOIN (SELECT table_id, shoe_id, seq FROM events WHERE event_type = 'ShuffleStarted') AS s
        ON s.table_id = f.table_id AND s.shoe_id = f.shoe_id AND f.seq < s.seq
    -- the void (a terminal line) after the fault (the device's) in game order (views.sql)
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
           CASE WHEN game_order(e.occurred_at, e.seq) < f.first_card_order
                THEN printf('Seat %d raised %s on area %d before the first two cards were dealt (%s and %s came after)',
                            e.seat, dollars(e.amount_cents), e.area, f.left_card, f.right_card)
                ELSE printf('Seat %d raised %s on area %d between the first two cards (%s came before the raise, %s after)',
                            e.seat, dollars(e.amount_cents), e.area, f.left_card, f.right_card) END,
           e.occurred_at
    FROM events AS e
    JOIN facts AS f USING (table_id, shoe_id, round_no)
    -- game order (views.sql, game_order): the raise is keyed at the terminal, the card is the shoe's
    WHERE e.event_type = 'RaisePlaced' AND f.kind = 'spread'
      AND game_order(e.occurred_at, e.seq) < f.second_card_order

    UNION ALL
    -- WRONG_BOX (13:47-20.31(d)5; GA (3)): "the dealer shall place the first card ... on the box
    -- farthest to the dealer's left ... the second card ... farthest to the dealer's right": the
    -- round's first card out of the shoe not to the left box, or its second not to the right,
    -- whatever the other box (the middle box, the discard rack: a card racked between the first
    -- two is still the second card and makes the spread, views.sql, round_cards). A card drawn
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
    -- game order (views.sql, game_order): a raise keyed before "Raises closed" is on time
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
    -- views.sql, deciding_index); any card drawn from the shoe after it, to any box, is a
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
    -- (views.sql, deciding_index: the first card drawn after the pair, or after "Raises
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
    -- ROUND_VOIDED_WITHOUT_CAUSE: a RoundVoided the rules do not allow (views.sql, void_allowed:
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

-- The money: every wager and raise of the ledger against what the rules say it was owed.
CREATE OR REPLACE VIEW anomalies_found_money AS
WITH
-- The money, from the ledger (ledger.sql: one row per wager and per raise, with the decision
-- the rules require next to the settlements made), in one pass:
--   WRONG_PAYOUT: a winner (the rules say WON and it was settled WON) paid other than the
--     table's line, under or over, or at other recorded odds (13:47-20.31(e); GA (11)(b));
--   BELOW_MINIMUM_ODDS: a winner paid exactly at a line of an illegal paytable that is below
--     the standard odds (13:47-20.31(e)-(f); GA (11)(c)). A payout that differs from the
--     table is WRONG_PAYOUT instead: one payout raises at most one of the two;
--   WRONG_SETTLEMENT: the wrong outcome (a winner collected, a loser paid, a void kept), a
--     short collection or return, a wager never settled in a finished round, one settled
--     twice, or a settlement with no wager (13:47-20.31(d)7, 10, 14);
--   RAISE_OVER_LIMIT: raises on an area above its original wager (13:47-20.31(d)12);
--   RAISE_NOT_ALLOWED: a raise on a consecutive or pair round, or with no original wager.
-- Settlements made before any decision (a pair with no third card, a round abandoned at the
-- cutting card) are left to PAIR_WITHOUT_THIRD_CARD and ROUND_ABANDONED_AT_CUT_CARD.
-- The ledger is read once. `suspect` marks the rows that can raise a code at all: every raise,
-- and the wagers whose status is not a clean one (the CASEs in `money` below need one of
-- these); only those are joined to the originals and the round facts.
ledger_rows AS MATERIALIZED (
    SELECT table_id, shoe_id, round_no, seat, area, wager_kind, amount_cents, status, hand,
           spread, profile, paytable_valid, paytable_seq, expected_outcome, expected_odds,
           expected_paid_cents, expected_collected_cents, expected_returned_cents,
           settlement_count, actual_outcome, actual_odds, actual_paid_cents,
           actual_collected_cents, actual_returned_cents, wager_seqs, settlement_seqs, started_at,
           coalesce(wager_kind <> 'ORIGINAL'
                    OR status IN ('WRONG_AMOUNT', 'WRONG_ODDS', 'WRONG_OUTCOME', 'DOUBLE_SETTLED',
                                  'NOT_OWED', 'UNSETTLED')
                    OR (status = 'OK' AND expected_outcome = 'WON' AND NOT paytable_valid), true)
               AS suspect
    FROM ledger
),

suspects AS (
    SELECT * EXCLUDE (suspect) FROM ledger_rows WHERE suspect
),

-- The original wager under each suspect row's area (a raise's limit), nothing else.
originals AS (
    SELECT l.table_id, l.shoe_id, l.round_no, l.seat, l.area, max(l.amount_cents) AS original_cents,
           flatten(list(l.wager_seqs)) AS original_seqs
    FROM ledger_rows AS l
    SEMI JOIN suspects AS s USING (table_id, shoe_id, round_no, seat, area)
    WHERE l.wager_kind = 'ORIGINAL' AND l.status NOT IN ('NOT_OWED', 'REMOVED')
    GROUP BY ALL
),

money AS (
    SELECT b.*, o.original_cents, o.original_seqs, f.finished, f.left_card, f.right_card,
           f.card_seqs,
        CASE
            WHEN b.status IN ('WRONG_AMOUNT', 'WRONG_ODDS') AND b.expected_outcome = 'WON'
                THEN 'WRONG_PAYOUT'
            -- The standard odds of this win: 13:47-20.31(e), (d)9.
            WHEN b.status = 'OK' AND b.expected_outcome = 'WON' AND NOT b.paytable_valid
                 AND b.paytable_seq IS NOT NULL
                 AND (b.expected_odds < standard_odds(b.hand, b.spread)
                      -- 13:47-20.31(d)9: at a casino night three of a kind is 11 to 1 exactly.
                      OR (b.profile = 'nj-casino-night' AND b.hand = 'pair'
                          AND b.expected_odds <> standard_odds(b.hand, b.spread)))
                THEN 'BELOW_MINIMUM_ODDS'
            WHEN b.status IN ('WRONG_OUTCOME', 'WRONG_AMOUNT', 'DOUBLE_SETTLED', 'NOT_OWED')
                 OR (b.status = 'UNSETTLED' AND f.finished)
                THEN 'WRONG_SETTLEMENT'
        END AS money_code,
        CASE
            WHEN b.wager_kind <> 'RAISE' OR b.status = 'NOT_OWED' THEN NULL
            WHEN b.hand IN ('consecutive', 'pair') THEN 'RAISE_NOT_ALLOWED'
            WHEN coalesce(o.original_cents, 0) = 0 THEN 'RAISE_NOT_ALLOWED'
            WHEN b.amount_cents > o.original_cents THEN 'RAISE_OVER_LIMIT'
        END AS raise_code,
        CASE WHEN b.hand = 'pair' THEN 'three of a kind' ELSE printf('spread %d', b.spread) END AS line,
        standard_odds(b.hand, b.spread) AS standard_odds,
        CASE b.wager_kind WHEN 'RAISE' THEN 'raise' ELSE 'wager' END AS what
    FROM suspects AS b
    LEFT JOIN originals AS o USING (table_id, shoe_id, round_no, seat, area)
    LEFT JOIN anomaly_round_facts AS f USING (table_id, shoe_id, round_no)
),

money_found AS (
    SELECT *, coalesce(settlement_seqs[-1], wager_seqs[-1]) AS at_seq FROM money
    WHERE money_code IS NOT NULL OR raise_code IS NOT NULL
)
SELECT * FROM (
    -- WRONG_PAYOUT, BELOW_MINIMUM_ODDS (payouts) and WRONG_SETTLEMENT: see `money` above.
    SELECT m.money_code, m.table_id, m.shoe_id, m.round_no,
           list_sort(coalesce(m.wager_seqs, []::BIGINT[]) || coalesce(m.settlement_seqs, []::BIGINT[])),
           CASE m.money_code
               WHEN 'WRONG_PAYOUT' THEN printf(
                   'Seat %d %s of %s won on %s: paid %s at %s to 1, the table pays %s at %d to 1',
                   m.seat, m.what, dollars(m.amount_cents), m.line, dollars(m.actual_paid_cents),
                   coalesce(CAST(m.actual_odds AS VARCHAR), '?'), dollars(m.expected_paid_cents),
                   m.expected_odds)
               WHEN 'BELOW_MINIMUM_ODDS' THEN printf(
                   'Seat %d %s of %s won on %s and was paid %s at the table''s %d to 1, %s %d to 1 (%s)',
                   m.seat, m.what, dollars(m.amount_cents), m.line, dollars(m.actual_paid_cents),
                   m.expected_odds,
                   CASE WHEN m.expected_odds > m.standard_odds THEN 'not the fixed'
                        ELSE 'below the minimum' END,
                   m.standard_odds, m.profile)
               ELSE printf('Seat %d %s of %s ', m.seat, m.what, dollars(m.amount_cents))
                   || CASE m.status
                          WHEN 'UNSETTLED' THEN 'was never settled; it should have '
                          WHEN 'DOUBLE_SETTLED' THEN printf('was settled %d times (%s); it should have ',
                                                            m.settlement_count, m.actual_outcome)
                          WHEN 'NOT_OWED' THEN printf('was settled as %s, but no wager was on area %d',
                                                      m.actual_outcome, m.area)
                          ELSE printf('was settled %s (paid %s, collected %s, returned %s); it should have ',
                                      m.actual_outcome, dollars(m.actual_paid_cents),
                                      dollars(m.actual_collected_cents), dollars(m.actual_returned_cents))
                      END
                   || CASE WHEN m.status = 'NOT_OWED' THEN ''
                           WHEN m.expected_outcome = 'WON'
                           THEN printf('won %s at %d to 1', dollars(m.expected_paid_cents), m.expected_odds)
                           WHEN m.expected_outcome = 'LOST'
                           THEN printf('lost (%s collected)', dollars(m.expected_collected_cents))
                           ELSE printf('been returned (%s)', dollars(m.expected_returned_cents)) END
           END,
           coalesce(e.occurred_at, m.started_at)
    FROM money_found AS m
    LEFT JOIN events AS e ON e.table_id = m.table_id AND e.seq = m.at_seq
    WHERE m.money_code IS NOT NULL

    UNION ALL
    -- RAISE_OVER_LIMIT and RAISE_NOT_ALLOWED (13:47-20.31(d)12): see `money` above. The proof:
    -- the wager and the raises over it; the first two cards and the raise on a tie round.
    SELECT m.raise_code, m.table_id, m.shoe_id, m.round_no,
           list_sort(coalesce(m.wager_seqs, []::BIGINT[]) || CASE
               WHEN m.raise_code = 'RAISE_OVER_LIMIT' THEN coalesce(m.original_seqs, []::BIGINT[])
               WHEN m.hand IN ('consecutive', 'pair') THEN m.card_seqs[:2]
               ELSE []::BIGINT[] END),
           CASE
               WHEN m.raise_code = 'RAISE_OVER_LIMIT' THEN printf(
                   'Seat %d raised %s on area %d, more than the original wager of %s',
                   m.seat, dollars(m.amount_cents), m.area, dollars(m.original_cents))
               WHEN m.hand IN ('consecutive', 'pair') THEN printf(
                   'Seat %d raised %s on area %d in a %s round (%s and %s): raises are for a spread only',
                   m.seat, dollars(m.amount_cents), m.area, m.hand, m.left_card, m.right_card)
               ELSE printf('Seat %d raised %s on area %d with no original wager there',
                           m.seat, dollars(m.amount_cents), m.area)
           END,
           coalesce(e.occurred_at, m.started_at)
    FROM money_found AS m
    LEFT JOIN events AS e ON e.table_id = m.table_id AND e.seq = m.wager_seqs[-1]
    WHERE m.raise_code IS NOT NULL
) AS found(code, table_id, shoe_id, round_no, seqs, explanation, occurred_at);

-- The cards out of each shoe: face-up cards, extra copies and burns.
CREATE OR REPLACE VIEW anomalies_found_shoes AS
WITH
-- The physical cards that left each shoe: drawn, burned, or found face up. A card found face
-- up and then drawn at once is one card, counted once (as its CardDrawn): to a box it was used
-- (FACE_UP_CARD_USED); to the discard rack it was placed where 13:47-20.31(g)1 puts it (views.sql,
-- round_cards: then no card of the round either).
cards_out AS MATERIALIZED (
    SELECT *,
           face_up_then_drawn AND next_destination IN ('LEFT', 'RIGHT', 'MIDDLE') AS used_face_up
    FROM (SELECT *,
                 coalesce(event_type = 'CardFoundFaceUp' AND next_type = 'CardDrawn'
                          AND next_rank = rank AND next_suit = suit, false) AS face_up_then_drawn
    FROM (
        SELECT table_id, shoe_id, round_no, seq, log_offset, occurred_at, event_type, rank, suit,
               lead(event_type) OVER w AS next_type, lead(rank) OVER w AS next_rank,
               lead(suit) OVER w AS next_suit, lead(destination) OVER w AS next_destination,
               lead(seq) OVER w AS next_seq, lead(round_no) OVER w AS next_round_no
        FROM card_events_of(NULL, NULL, NULL, NULL)  -- each card once (views.sql)
        WHERE event_type IN ('CardDrawn', 'CardBurned', 'CardFoundFaceUp', 'CardDrawnInError')
          AND shoe_id IS NOT NULL
        -- game order (views.sql, game_order), as the round's cards are read
        WINDOW w AS (PARTITION BY table_id, shoe_id ORDER BY occurred_at, seq, log_offset)
    ))
),

-- 13:47-20.31(g)2; 13:69F-6.7(b): a card drawn in error "shall be used as though it were the
-- next card": when the next card out of the shoe, in the same round, is a CardDrawn of the same
-- card (to any box, or the discard rack), that is the one physical card being placed, counted
-- once as its CardDrawn (views.sql, round_cards, says the same per round); where it went is
-- WRONG_BOX's or THIRD_CARD_DIVERTED's to judge. Otherwise the card drawn in error was not
-- used: it still left the shoe and is counted.
in_error AS MATERIALIZED (
    SELECT *,
           event_type = 'CardDrawnInError' AND coalesce(
               next_type = 'CardDrawn' AND next_rank = rank AND next_suit = suit
               AND next_round_no IS NOT DISTINCT FROM round_no, false) AS used_in_error
    FROM cards_out
),

copies AS (
    SELECT o.*, s.decks,
           row_number() OVER (PARTITION BY o.table_id, o.shoe_id, o.rank, o.suit
                              ORDER BY o.seq, o.log_offset) AS copy_no
    FROM in_error AS o
    JOIN (SELECT table_id, shoe_id, arg_min(decks, seq) AS decks FROM events
          WHERE event_type = 'CardsLoaded' GROUP BY ALL) AS s USING (table_id, shoe_id)
    WHERE NOT o.face_up_then_drawn AND NOT o.used_in_error
),

-- 13:69F-6.9: "In lieu of the dealing and shuffling requirements set forth in N.J.A.C.
-- 13:69F-6.3 and 6.4 [6.4: the burns], a casino licensee may utilize a dealing shoe or other
-- device designed to automatically reshuffle the cards." A shoe loaded at an nj-casino table
-- (the profile in force at its CardsLoaded) whose last shuffle event (ShuffleStarted or
-- ShuffleCompleted) names the automatic reshuffling shoe (CONTINUOUS_SHUFFLER) owes no burn,
-- neither its first card nor a new dealer's. 13:47-20.31 (casino nights) and GA have no such
-- exemption.
burn_exempt_loads AS (
    SELECT l.table_id, l.seq,
           coalesce(m.reshuffling AND p.profile = 'nj-casino', false) AS no_burn_owed
    FROM events AS l
    LEFT JOIN (SELECT table_id, shoe_id,
                      arg_max(method, seq) = 'CONTINUOUS_SHUFFLER' AS reshuffling
               FROM events
               WHERE event_type IN ('ShuffleStarted', 'ShuffleCompleted') AND shoe_id IS NOT NULL
               GROUP BY ALL) AS m USING (table_id, shoe_id)
    ASOF LEFT JOIN paytables AS p ON l.table_id = p.table_id AND l.seq >= p.seq
    WHERE l.event_type = 'CardsLoaded'
),

-- Burns owed and paid (13:47-20.31(d)1; 13:69F-6.4), per stretch up to the next card dealt.
burn_stream AS (
    SELECT table_id, shoe_id, seq, log_offset, event_type, dealer_id, x.no_burn_owed,
           last_value(CASE WHEN event_type IN ('CardsLoaded', 'ShoeClosed') THEN event_type END
                      IGNORE NULLS) OVER before_this AS shoe_state,
           -- the shoe in play was loaded with no burn owed (13:69F-6.9, burn_exempt_loads)
           last_value(CASE WHEN event_type = 'CardsLoaded' THEN x.no_burn_owed
                           WHEN event_type = 'ShoeClosed' THEN false END
                      IGNORE NULLS) OVER before_this AS shoe_exempt,
           first_value(CASE WHEN event_type = 'CardDrawn' THEN seq END IGNORE NULLS)
               OVER from_this AS next_draw_seq,
           first_value(CASE WHEN event_type = 'ShoeClosed' THEN seq END IGNORE NULLS)
               OVER from_this AS next_close_seq
    FROM events_once_of(NULL, NULL, NULL, NULL) AS e  -- each card event once (views.sql)
    LEFT JOIN burn_exempt_loads AS x USING (table_id, seq)
    WHERE event_type IN ('CardsLoaded', 'ShoeClosed', 'DealerTappedIn', 'CardBurned', 'CardDrawn')
    WINDOW before_this AS (PARTITION BY table_id ORDER BY seq, log_offset
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
           from_this AS (PARTITION BY table_id ORDER BY seq, log_offset
                         ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)
),

burn_balance AS (
    -- A burn is owed when a shoe is loaded, and when a dealer taps in while a shoe is in play;
    -- each debt needs a burn after it and before the next card dealt (one burn pays one debt;
    -- a debt dies with its shoe). From each event on: burns still to come against debts.
    SELECT *,
           sum(owes::INTEGER) OVER later AS owed_from_here,
           sum(pays::INTEGER) OVER later AS paid_from_here
    FROM (SELECT *,
                 ((event_type = 'CardsLoaded' AND NOT no_burn_owed)
                  OR (event_type = 'DealerTappedIn' AND shoe_state = 'CardsLoaded'
                      AND NOT coalesce(shoe_exempt, false)))
                     AND (next_close_seq IS NULL OR next_close_seq > next_draw_seq) AS owes,
                 event_type = 'CardBurned' AS pays
          FROM burn_stream
          WHERE event_type <> 'CardDrawn' AND next_draw_seq IS NOT NULL)
    WINDOW later AS (PARTITION BY table_id, next_draw_seq ORDER BY seq DESC, log_offset DESC
                     ROWS UNBOUNDED PRECEDING)
),

unburned AS (
    SELECT table_id, next_draw_seq, list(seq ORDER BY seq) AS debt_seqs,
           list(CASE event_type WHEN 'CardsLoaded' THEN 'shoe ' || shoe_id || ' was loaded'
                ELSE 'dealer ' || dealer_id || ' tapped in' END ORDER BY seq) AS debts
    FROM burn_balance
    WHERE owes AND paid_from_here < owed_from_here
    GROUP BY ALL
)
SELECT * FROM (
    -- FACE_UP_CARD_USED (13:47-20.31(g)1): a card found face up in the shoe is not used; flagged
    -- when the next card out of the shoe is that same card, dealt to a box.
    SELECT 'FACE_UP_CARD_USED', table_id, shoe_id, next_round_no, [seq, next_seq],
           printf('%s was found face up in the shoe and then dealt to the %s box instead of the discard rack',
                  card_label(rank, suit), lower(next_destination)),
           occurred_at
    FROM cards_out
    WHERE used_face_up

    UNION ALL
    -- EXTRA_CARD (13:47-20.31(a)2): a shoe of N decks holds N copies of each card; the (N+1)th
    -- copy out of the shoe was introduced. Its seqs: every copy out so far.
    SELECT 'EXTRA_CARD', x.table_id, x.shoe_id, x.round_no, list(c.seq ORDER BY c.seq),
           printf('Copy %d of %s out of shoe %s, which holds %d deck%s: a card was introduced',
                  x.copy_no, card_label(x.rank, x.suit), x.shoe_id, x.decks,
                  CASE WHEN x.decks = 1 THEN '' ELSE 's' END),
           x.occurred_at
    FROM copies AS x
    JOIN copies AS c
        ON c.table_id = x.table_id AND c.shoe_id = x.shoe_id AND c.rank = x.rank AND c.suit = x.suit
       AND c.copy_no <= x.copy_no
    WHERE x.copy_no > x.decks
    GROUP BY x.table_id, x.shoe_id, x.round_no, x.copy_no, x.rank, x.suit, x.decks, x.occurred_at

    UNION ALL
    -- DRAWN_IN_ERROR_NOT_USED (13:47-20.31(g)2; 13:69F-6.7(b)): a card drawn in error is used
    -- as the next card; flagged when the next card out of the shoe is another card (or comes in
    -- another round), or the shoe closed with none. Proof: the card drawn in error and the next
    -- card out.
    SELECT 'DRAWN_IN_ERROR_NOT_USED', o.table_id, o.shoe_id, o.round_no,
           list_filter([o.seq, o.next_seq], lambda s: s IS NOT NULL),
           printf('%s was drawn in error and not used as the next card (%s)',
                  card_label(o.rank, o.suit),
                  CASE WHEN o.next_seq IS NULL THEN 'the shoe closed without it'
                       ELSE card_label(o.next_rank, o.next_suit) || ' came out next' END),
           o.occurred_at
    FROM in_error AS o
    WHERE o.event_type = 'CardDrawnInError' AND NOT o.used_in_error
      AND (o.next_seq IS NOT NULL OR EXISTS (
          SELECT 1 FROM events AS c WHERE c.table_id = o.table_id AND c.shoe_id = o.shoe_id
                                      AND c.event_type = 'ShoeClosed' AND c.seq > o.seq))

    UNION ALL
    -- BURN_MISDISCLOSED (13:47-20.31(d)1: "The burnt card shall be disclosed if requested by a
    -- player"; 13:69F-6.4): a BurnDisclosed that is not the latest card burned from the same
    -- shoe before it, or with no burn before it. Proof: the burn and the disclosure.
    SELECT 'BURN_MISDISCLOSED', d.table_id, d.shoe_id, d.round_no,
           list_filter([b.seq, d.seq], lambda s: s IS NOT NULL),
           CASE WHEN b.seq IS NULL
                THEN printf('%s was disclosed as the burnt card, but no card had been burned from shoe %s',
                            card_label(d.rank, d.suit), d.shoe_id)
                ELSE printf('%s was disclosed as the burnt card, but the card burned was %s',
                            card_label(d.rank, d.suit), card_label(b.rank, b.suit)) END,
           d.occurred_at
    FROM events AS d
    -- the latest burn before the disclosure in game order (views.sql, game_order): the burn is
    -- the shoe's line, the disclosure the terminal's
    ASOF LEFT JOIN (SELECT table_id, shoe_id, seq, game_order(occurred_at, seq) AS burned,
                           rank, suit FROM events
                    WHERE event_type = 'CardBurned') AS b
        ON b.table_id = d.table_id AND b.shoe_id = d.shoe_id
       AND game_order(d.occurred_at, d.seq) > b.burned
    WHERE d.event_type = 'BurnDisclosed'
      AND (b.seq IS NULL OR b.rank <> d.rank OR b.suit <> d.suit)

    UNION ALL
    -- MISSING_BURN (13:47-20.31(d)1; 13:69F-6.4; 6.9: see burn_exempt_loads): see burn_balance
    -- above. The row is at the card dealt while a burn was still owed.
    SELECT 'MISSING_BURN', d.table_id, d.shoe_id, d.round_no, u.debt_seqs || [d.seq],
           printf('No card burned after %s, before %s was dealt to the %s box',
                  array_to_string(u.debts, ' and '), card_label(d.rank, d.suit), lower(d.destination)),
           d.occurred_at
    FROM unburned AS u
    JOIN events AS d ON d.table_id = u.table_id AND d.seq = u.next_draw_seq AND d.event_type = 'CardDrawn'
) AS found(code, table_id, shoe_id, round_no, seqs, explanation, occurred_at);

-- What each table's opening (its paytable and profile) allows.
CREATE OR REPLACE VIEW anomalies_found_tables AS
WITH
-- MULTIPLE_BETTING_AREAS looks only at a player's wagers in a round where that player wagered
-- on more than one area at all (min(area) < max(area)): the paytable in force can only take
-- areas away, never add one.
multi_area_wagers AS (
    SELECT e.table_id, e.shoe_id, e.round_no, e.player_id, e.seq, e.area, e.occurred_at
    FROM events AS e
    SEMI JOIN (SELECT table_id, shoe_id, round_no, player_id FROM events
               WHERE event_type = 'WagerPlaced' AND round_no IS NOT NULL
               GROUP BY ALL HAVING min(area) < max(area)) AS m
        ON e.table_id IS NOT DISTINCT FROM m.table_id AND e.shoe_id IS NOT DISTINCT FROM m.shoe_id
       AND e.round_no = m.round_no AND e.player_id IS NOT DISTINCT FROM m.player_id
    WHERE e.event_type = 'WagerPlaced' AND e.round_no IS NOT NULL
)
SELECT * FROM (
    -- BELOW_MINIMUM_ODDS on the paytable itself: a TableOpened whose paytable its profile does
    -- not allow (ledger.sql's `paytables` gives the reason, word for word validate_paytable's).
    SELECT 'BELOW_MINIMUM_ODDS', p.table_id, e.shoe_id, e.round_no, [p.seq],
           'Table opened with an illegal paytable: ' || p.violation, p.opened_at
    FROM paytables AS p
    JOIN events AS e ON e.table_id = p.table_id AND e.seq = p.seq AND e.event_type = 'TableOpened'
    WHERE NOT p.valid

    UNION ALL
    -- MULTIPLE_BETTING_AREAS (13:47-20.31(g)4; 13:69F-6.8): one player's wagers on more than one
    -- area in a round, at a table whose TableOpened does not permit it.
    SELECT 'MULTIPLE_BETTING_AREAS', e.table_id, e.shoe_id, e.round_no, list(e.seq ORDER BY e.seq),
           printf('Player %s wagered on areas %s in one round; the table permits one area',
                  e.player_id, array_to_string(list_sort(list_distinct(list(e.area))), ', ')),
           max(e.occurred_at)
    FROM multi_area_wagers AS e
    ASOF LEFT JOIN paytables AS p ON e.table_id = p.table_id AND e.seq >= p.seq
    WHERE NOT coalesce(p.multiple_areas_permitted, false)
    GROUP BY e.table_id, e.shoe_id, e.round_no, e.player_id
    HAVING count(DISTINCT e.area) > 1

    UNION ALL
    -- CALL_BET: a verbal wager, at any profile. GA (2): "no call bets shall be allowed";
    -- 13:69F-6.5(b): "All wagers at red dog shall be made by placing gaming chips or plaques
    -- and, if applicable, a match play coupon on the appropriate area" (the roulette rule in the
    -- same chapter states its own exception for verbal wagers; red dog has none);
    -- 13:47-20.31(d)4: "All wagers at red dog shall be placed on the appropriate area of the red
    -- dog layout" (a call bet is spoken, not placed).
    SELECT 'CALL_BET', e.table_id, e.shoe_id, e.round_no, [e.seq],
           printf('Seat %d placed a call bet of %s on area %d; %s red dog wagers are placed on the layout',
                  e.seat, dollars(e.amount_cents), e.area, coalesce(p.profile, 'all')),
           e.occurred_at
    FROM events AS e
    ASOF LEFT JOIN paytables AS p ON e.table_id = p.table_id AND e.seq >= p.seq
    WHERE e.event_type = 'WagerPlaced' AND e.instrument = 'CALL_BET'

    UNION ALL
    -- MATCH_PLAY_NOT_ALLOWED (GA (2): "made by placing gaming chips or gaming plaques"): a match
    -- play coupon at a gaming-authority table. 13:69F-6.5(b) allows one ("if applicable, a match
    -- play coupon"); 13:47-20.31 names no instrument, so a casino night's coupon is not judged.
    SELECT 'MATCH_PLAY_NOT_ALLOWED', e.table_id, e.shoe_id, e.round_no, [e.seq],
           printf('Seat %d wagered %s with a match play coupon on area %d; gaming-authority tables take chips and plaques only',
                  e.seat, dollars(e.amount_cents), e.area),
           e.occurred_at
    FROM events AS e
    ASOF JOIN paytables AS p ON e.table_id = p.table_id AND e.seq >= p.seq
    WHERE e.event_type = 'WagerPlaced' AND e.instrument = 'MATCH_PLAY_COUPON'
      AND p.profile = 'gaming-authority'

    UNION ALL
    -- TOO_MANY_DECKS (13:47-20.31(a)2: "A deck of cards"): a shoe of more than one deck loaded
    -- at a casino-night table (13:69F-6.1(a): "at least one deck" at a casino; GA: no limit).
    -- Proof: the table's opening and the loading.
    SELECT 'TOO_MANY_DECKS', e.table_id, e.shoe_id, NULL, [p.seq, e.seq],
           printf('Shoe %s was loaded with %d decks at a casino-night table, which deals from one deck',
                  e.shoe_id, e.decks),
           e.occurred_at
    FROM events AS e
    ASOF JOIN paytables AS p ON e.table_id = p.table_id AND e.seq >= p.seq
    WHERE e.event_type = 'CardsLoaded' AND e.decks > 1 AND p.profile = 'nj-casino-night'
) AS found(code, table_id, shoe_id, round_no, seqs, explanation, occurred_at);

-- Each table's event stream: sequence numbers and hash links (integrity).
CREATE OR REPLACE VIEW anomalies_found_streams AS
WITH
-- Each table's stream in seq order (docs/architecture.md, principle 2).
chained AS (
    SELECT table_id, shoe_id, round_no, seq, occurred_at, prev_hash,
           lag(seq) OVER w AS prev_seq, lag(hash) OVER w AS prev_event_hash
    FROM events
    WINDOW w AS (PARTITION BY table_id ORDER BY seq, log_offset)
)
SELECT * FROM (
    -- SEQUENCE_GAP (integrity): a jump in a table's seq (an event lost or deleted).
    SELECT 'SEQUENCE_GAP', table_id, shoe_id, round_no,
           list_filter([prev_seq, seq], lambda s: s IS NOT NULL),
           CASE WHEN seq - coalesce(prev_seq, 0) = 2
                THEN printf('Sequence number %d is missing from table %s''s stream (an event lost or deleted)',
                            coalesce(prev_seq, 0) + 1, table_id)
                ELSE printf('Sequence numbers %d to %d are missing from table %s''s stream (events lost or deleted)',
                            coalesce(prev_seq, 0) + 1, seq - 1, table_id) END,
           occurred_at
    FROM chained
    WHERE seq > coalesce(prev_seq, 0) + 1

    UNION ALL
    -- CHAIN_BROKEN (integrity): an event whose bytes do not match its own hash, as the
    -- projector found when it loaded it (events.hash_ok; NULL in rows loaded before it checked).
    SELECT 'CHAIN_BROKEN', table_id, shoe_id, round_no, [seq],
           printf('Event %d of table %s does not match its own hash: its bytes were altered after it was recorded',
                  seq, table_id),
           occurred_at
    FROM events
    WHERE hash_ok = false

    UNION ALL
    -- CHAIN_BROKEN (integrity): between neighbouring seqs, the later event's prev_hash must be
    -- the earlier one's hash (the first event's: 32 zero bytes). An event altered in place
    -- without resealing keeps valid links here, and the check above finds it.
    SELECT 'CHAIN_BROKEN', table_id, shoe_id, round_no,
           list_filter([prev_seq, seq], lambda s: s IS NOT NULL),
           CASE WHEN prev_seq IS NULL
                THEN printf('Event %d, the first of table %s, does not start the hash chain', seq, table_id)
                ELSE printf('Event %d of table %s does not link to event %d: its prev_hash is not that event''s hash (an event altered)',
                            seq, table_id, prev_seq) END,
           occurred_at
    FROM chained
    WHERE seq <= coalesce(prev_seq, 0) + 1
      AND prev_hash IS DISTINCT FROM coalesce(prev_event_hash, repeat('\x00', 32)::BLOB)

    UNION ALL
    -- DUPLICATE_EVENT (integrity): one event id more than once in a table's stream, e.g. a
    -- device line re-sent and recorded again (events/recording/event_ids.py refuses that at ingest, but
    -- two writers at the same instant, or another writer, can still do it). One row per id,
    -- at its last copy; every copy's seq is proof.
    SELECT 'DUPLICATE_EVENT', table_id, arg_max(shoe_id, seq), arg_max(round_no, seq),
           list(seq ORDER BY seq),
           printf('Event id %s is recorded %d times in table %s''s stream (seqs %s): one event counted more than once',
                  event_id, count(*), table_id, array_to_string(list(seq ORDER BY seq), ', ')),
           max(occurred_at)
    FROM events
    WHERE event_id IS NOT NULL
    GROUP BY table_id, event_id
    HAVING count(*) > 1
) AS found(code, table_id, shoe_id, round_no, seqs, explanation, occurred_at);

-- Cards out of the shoe where the rules allow none: a burn inside a round, and a card dealt
-- outside any round in play (views.sql, round_intruders_of, reads both inside a round; the
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
    SELECT table_id, shoe_id, round_no, seq, event_type, rank, suit, destination, occurred_at,
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
racks AS (
    SELECT table_id, shoe_id, round_no, min(seq) AS racked_seq FROM events
    WHERE event_type = 'CardsRacked' AND round_no IS NOT NULL AND shoe_id IS NOT NULL
    GROUP BY ALL
),
-- Why a card dealt, or found face up, is outside any round in play (the first reason that
-- holds), and the event that shows it. A card found face up comes out of the shoe like any
-- other (13:47-20.31(g)1; 13:69F-6.7(a): it "shall be placed in the discard rack"), so the same
-- checks hold for it, but for one: it may be found between rounds, so no round is no fault.
loose AS (
    SELECT c.table_id, c.shoe_id, c.round_no, c.seq, c.event_type, c.rank, c.suit,
           c.destination, c.occurred_at,
           CASE WHEN c.round_no IS NULL AND c.event_type <> 'CardFoundFaceUp' THEN 'with no round'
                WHEN c.round_no <= 0 THEN printf('for round %d, which is no round', c.round_no)
                WHEN c.shoe_id IS NULL THEN 'with no shoe'
                WHEN c.shoe_state IS NULL THEN printf('from shoe %s, which was never loaded', c.shoe_id)
                WHEN c.shoe_state.type = 'ShoeClosed' THEN printf('from shoe %s after it was closed', c.shoe_id)
                WHEN r.racked_seq < c.seq
                THEN printf('for round %d after its cards were racked (the round was concluded)', c.round_no)
                WHEN c.latest.round_no > c.round_no
                THEN printf('for round %d after round %d had begun', c.round_no, c.latest.round_no)
           END AS why,
           CASE WHEN (c.round_no IS NULL AND c.event_type <> 'CardFoundFaceUp')
                     OR c.round_no <= 0 OR c.shoe_id IS NULL THEN NULL
                WHEN c.shoe_state IS NULL THEN NULL
                WHEN c.shoe_state.type = 'ShoeClosed' THEN c.shoe_state.seq
                WHEN r.racked_seq < c.seq THEN r.racked_seq
                WHEN c.latest.round_no > c.round_no THEN -c.latest.neg_seq
           END AS shown_by
    FROM (SELECT * FROM shoe_stream
          WHERE event_type IN ('CardDrawn', 'CardDrawnInError', 'CardFoundFaceUp')
          UNION ALL BY NAME
          SELECT table_id, shoe_id, round_no, seq, event_type, rank, suit, destination, occurred_at
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
                  CASE WHEN raises_closed_seq < seq
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
    -- another round (views.sql, round_intruders_of) the row is that round's, whose ledger rows
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
                                   CASE WHEN i.raises_closed_seq < l.seq THEN ' and "Raises closed"' ELSE '' END)
                       ELSE '' END),
           l.occurred_at
    FROM loose AS l
    LEFT JOIN intruders AS i ON i.table_id = l.table_id AND i.seq = l.seq
    WHERE l.why IS NOT NULL
) AS found(code, table_id, shoe_id, round_no, seqs, explanation, occurred_at);

-- Every rule and integrity anomaly, with its severity and rule.
CREATE OR REPLACE VIEW anomalies AS
SELECT f.code, c.severity, f.table_id, f.shoe_id, f.round_no, f.seqs, f.explanation, c.rule,
       f.occurred_at
FROM (SELECT * FROM anomalies_found_rounds
      UNION ALL SELECT * FROM anomalies_found_money
      UNION ALL SELECT * FROM anomalies_found_shoes
      UNION ALL SELECT * FROM anomalies_found_tables
      UNION ALL SELECT * FROM anomalies_found_streams
      UNION ALL SELECT * FROM anomalies_found_places) AS f
JOIN anomaly_codes AS c USING (code);

-- pitlog anomalies: every rule and integrity code of the catalogue (anomaly_codes), decided in
-- plain DuckDB SQL over the raw `events` table and the `ledger` and `paytables` views of
-- sql/ledger.sql (created before this file). The `anomalies` view is the union of five families
-- (anomalies_found_*), each a UNION ALL of one commented SELECT per code over a few shared,
-- materialised facts; `SELECT * FROM anomalies WHERE code = '...'` shows one code.
-- docs/anomalies.md explains every decision; HOLD_VARIANCE and OUTCOME_FREQUENCY are
-- statistics (projections/statistics.py).
--
-- Every row: code, severity, table_id, shoe_id, round_no, seqs (the sequence numbers of the
-- events that prove it), explanation (one line to read aloud), rule, occurred_at.
-- Within a table, the log's events are ordered by seq (gapless per table), then log offset:
-- the order the recorder received them. Every "before" or "after" within a round is game order
-- instead (sql/macros.sql, game_order: occurred_at, then seq), since across the shoe and the dealer
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
-- (sql/macros.sql, round_cards: every card out of the shoe in game order, wherever it went; one
-- definition with the `rounds` view, so the checks judge the cards the ledger judges). The left
-- and right cards are the first and second cards out, whatever their boxes (WRONG_BOX judges
-- the boxes); the middle card the deciding third card (sql/cards.sql, deciding_index) and
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
        -- the cards out of the shoe in game order (sql/macros.sql, round_cards)
        list({'seq': seq, 'at': occurred_at, 'type': event_type, 'rank': rank, 'suit': suit,
              'dest': destination} ORDER BY occurred_at, seq, log_offset)
            FILTER (is_card_event(event_type)) AS outs,
        coalesce(bool_or(event_type = 'RoundVoided'), false) AS voided,
        -- 13:69F-34.16(n) by analogy: a dealing-shoe fault in the round (any fault but
        -- SHUFFLER_JAM; sql/rounds.sql, void_allowed)
        coalesce(bool_or(event_type = 'DeviceFaulted' AND fault <> 'SHUFFLER_JAM'), false)
            AS shoe_faulted,
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
    FROM events_once_of(NULL, NULL, NULL, NULL)  -- each card event once (sql/macros.sql)
    WHERE round_no IS NOT NULL
    GROUP BY table_id, shoe_id, round_no
),
table_end AS (
    SELECT table_id, max(seq) AS table_last_seq FROM events GROUP BY table_id
),
carded AS (
    SELECT * EXCLUDE (outs), coalesce(round_cards(outs), []) AS cards,
           -- 13:47-20.31(d)3, (d)6: the first card out of the shoe in game order, as the ledger
           -- counts it (sql/macros.sql, first_card_out): a wager typed at the terminal before the
           -- shoe's first card is on time even when its line reaches the recorder after the card's.
           first_card_out(outs) AS first
    FROM per_round
),
kinds AS (
    SELECT *, game_order(first.at, first.seq) AS first_card_order,
           cards[1] AS l, cards[2] AS r, round_kind(cards[1].rank, cards[2].rank) AS kind,
           list_transform(cards, lambda x: {'seq': x.seq, 'card': card_label(x.rank, x.suit),
                                            'dest': x.dest, 'at': x.at}) AS placed
    FROM carded
),
decided AS (
    -- The deciding third card (sql/cards.sql, deciding_index: one definition with the rounds view)
    SELECT *, deciding_index(cards, kind, raises_closed) AS third_pos FROM kinds
),
drawn AS (
    SELECT *, cards[third_pos] AS m,
           CASE WHEN third_pos IS NULL THEN [] ELSE placed[third_pos + 1:] END AS redraws,
           -- 13:47-20.31(d)7-8, (d)13: every card beyond the first two
           placed[3:] AS beyond,
           -- 13:47-20.31(g)3: a spread's cards out before "Raises closed" (sql/cards.sql)
           exposed_cards(placed, kind, raises_closed) AS exposed
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
    exposure_window_end(p.placed, p.raises_closed, p.third_pos) AS exposure_window_end,
    p.kind,
    CASE WHEN abs(p.l.rank - p.r.rank) >= 2 THEN abs(p.l.rank - p.r.rank) - 1 END AS spread,
    p.voided, p.shoe_faulted, p.first_card_order.seq AS first_card_seq, p.first_card_order,
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

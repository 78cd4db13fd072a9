-- Per round, the cards as dealt (the round's cards, round_cards in macros.sql: every card out of the
-- shoe in game order, wherever it went, a card drawn in error and not used included) next to the cards as racked (13:47-20.31(d)15: "in order", so the two should be equal).
--
-- hands_of(in_table, in_shoe, from_seq, to_seq) is the hands of one table and shoe (a NULL
-- argument: all of them; the `hands` view below is hands_of(NULL, NULL, NULL, NULL)). from_seq
-- and to_seq, given with in_table, only speed the scan up: they must bracket every event of the
-- shoes asked for (the rack positions count from the shoe's first card), or be NULL.
CREATE OR REPLACE MACRO hands_of(in_table, in_shoe, from_seq, to_seq) AS TABLE
WITH dealt AS (
    -- round_cards: the cards out of the shoe in the round (one definition with the rounds view).
    SELECT table_id, shoe_id, round_no,
           list_transform(round_cards(outs), lambda x: card_label(x.rank, x.suit)) AS dealt_cards
    FROM (
        SELECT table_id, shoe_id, round_no,
               list({'seq': seq, 'at': occurred_at, 'type': event_type, 'rank': rank,
                     'suit': suit, 'dest': destination}
                    ORDER BY occurred_at, seq, log_offset) AS outs
        FROM card_events_of(in_table, in_shoe, from_seq, to_seq)  -- card events, each once
        WHERE round_no IS NOT NULL
        GROUP BY table_id, shoe_id, round_no
    )
    WHERE len(round_cards(outs)) > 0
),
racked AS (
    SELECT table_id, shoe_id, round_no,
           list(card ORDER BY rack_position) AS racked_cards,
           min(rack_position) AS first_rack_position,
           max(rack_position) AS last_rack_position
    FROM rack_of(in_table, in_shoe, from_seq, to_seq)
    WHERE source = 'round'
    GROUP BY table_id, shoe_id, round_no
)
SELECT
    coalesce(d.table_id, r.table_id) AS table_id, coalesce(d.shoe_id, r.shoe_id) AS shoe_id,
    coalesce(d.round_no, r.round_no) AS round_no,
    array_to_string(dealt_cards, ' ') AS dealt, array_to_string(racked_cards, ' ') AS racked,
    coalesce(dealt_cards IS NOT DISTINCT FROM racked_cards, false) AS racked_in_dealing_order,
    dealt_cards, racked_cards, first_rack_position, last_rack_position
-- A round dealt with no shoe is one hand too (its cards and rack, both with no shoe).
FROM dealt AS d FULL OUTER JOIN racked AS r
  ON r.table_id = d.table_id AND r.shoe_id IS NOT DISTINCT FROM d.shoe_id
 AND r.round_no = d.round_no;

CREATE OR REPLACE VIEW hands AS
SELECT * FROM hands_of(NULL, NULL, NULL, NULL)
ORDER BY table_id, shoe_id, round_no;

-- One row per shoe. Dealers are listed in the order they first dealt or tapped in.
--
-- shoes_of(in_table, in_shoe, from_seq, to_seq) is the shoes view's rows of one table and shoe
-- (a NULL argument: all of them; the `shoes` view below is shoes_of(NULL, NULL, NULL, NULL)).
-- from_seq and to_seq, given with in_table, only speed the scan up: they must bracket every
-- event of the shoes asked for, or be NULL; taps_from too, as rounds_of's.
CREATE OR REPLACE MACRO shoes_of(in_table, in_shoe, from_seq, to_seq, taps_from := NULL) AS TABLE
WITH shoe_events AS NOT MATERIALIZED (
    SELECT * FROM events_once_of(in_table, in_shoe, from_seq, to_seq)
    WHERE shoe_id IS NOT NULL
),
per_shoe AS (
    SELECT
        table_id, shoe_id,
        -- sql/macros.sql shoe_decks_of's pick, in this one pass over the shoe's events
        arg_min(decks, (seq, log_offset)) FILTER (event_type = 'CardsLoaded') AS decks,
        min(occurred_at) AS opened_at,
        min(occurred_at) FILTER (event_type = 'CardsLoaded') AS loaded_at,
        min(occurred_at) FILTER (event_type = 'ShoeClosed') AS closed_at,
        count(DISTINCT round_no) AS rounds,
        count(*) FILTER (event_type = 'CardDrawn') AS cards_dealt,
        count(*) FILTER (event_type = 'CardBurned') AS burns,
        count(*) FILTER (event_type = 'CardFoundFaceUp') AS cards_found_face_up,
        min(occurred_at) FILTER (event_type = 'CuttingCardReached') AS cutting_card_reached_at,
        arg_min(cards_remaining, (seq, log_offset)) FILTER (event_type = 'ShoeClosed') AS cards_remaining,
        min(seq) AS first_seq, max(seq) AS last_seq, count(*) AS events
    FROM shoe_events
    GROUP BY table_id, shoe_id
),
shoe_dealers AS (
    SELECT table_id, shoe_id, list(dealer ORDER BY first_seq, dealer) AS dealers
    FROM (
        SELECT table_id, shoe_id, dealer, min(at_seq) AS first_seq
        FROM (
            SELECT table_id, shoe_id, dealer, first_seq AS at_seq
            FROM rounds_of(in_table, in_shoe, NULL, from_seq, to_seq, taps_from := taps_from)
            WHERE dealer IS NOT NULL AND shoe_id IS NOT NULL
            UNION ALL
            -- no card event: events_in gives it as shoe_events would, without a second
            -- plan of events_once_of's union and window
            SELECT table_id, shoe_id, dealer_id, seq
            FROM events_in(in_table, in_shoe, from_seq, to_seq)
            WHERE event_type = 'DealerTappedIn' AND shoe_id IS NOT NULL
        )
        GROUP BY table_id, shoe_id, dealer
    )
    GROUP BY table_id, shoe_id
)
SELECT
    s.table_id, s.shoe_id, decks, opened_at, loaded_at, closed_at, rounds, cards_dealt, burns,
    cards_found_face_up, cutting_card_reached_at, cards_remaining,
    coalesce(d.dealers, []::VARCHAR[]) AS dealers, first_seq, last_seq, events
FROM per_shoe AS s LEFT JOIN shoe_dealers AS d USING (table_id, shoe_id);

CREATE OR REPLACE VIEW shoes AS
SELECT * FROM shoes_of(NULL, NULL, NULL, NULL)
ORDER BY table_id, opened_at, shoe_id;

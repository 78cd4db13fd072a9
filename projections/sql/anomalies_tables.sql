-- What each table's opening (its paytable and profile) allows.
CREATE OR REPLACE VIEW anomalies_found_tables AS
WITH
-- MULTIPLE_BETTING_AREAS looks only at a player's wagers in a round where that player wagered
-- on more than one area at all (min(area) < max(area)): the paytable in force can only take
-- areas away, never add one.
placements AS (
    -- Each placement with the area's next placement or removal (game order, then the log's).
    SELECT table_id, shoe_id, round_no, player_id, seq, area, occurred_at, event_type,
           lead(event_type) OVER area_events AS next_type,
           lead(game_order(occurred_at, seq)) OVER area_events AS next_order
    FROM events
    WHERE event_type IN ('WagerPlaced', 'WagerRemoved') AND round_no IS NOT NULL
    WINDOW area_events AS (PARTITION BY table_id, shoe_id, round_no, seat, area
                           ORDER BY occurred_at, seq, log_offset)
),
moved_rounds_first_cards AS (
    -- The first card of the rounds where a placement was removed (sql/macros.sql,
    -- first_card_out, over each card event once as card_events_of reads them; few rounds).
    SELECT table_id, shoe_id, round_no,
           game_order(first_out.at, first_out.seq) AS first_card_order
    FROM (SELECT table_id, shoe_id, round_no,
                 first_card_out(list({'seq': seq, 'at': occurred_at, 'type': event_type,
                                      'rank': rank, 'suit': suit, 'dest': destination}
                                     ORDER BY occurred_at, seq, log_offset)) AS first_out
          FROM (SELECT e.* FROM events AS e
                SEMI JOIN (SELECT DISTINCT table_id, shoe_id, round_no FROM placements
                           WHERE next_type = 'WagerRemoved') AS m
                    ON e.table_id = m.table_id AND e.shoe_id IS NOT DISTINCT FROM m.shoe_id
                   AND e.round_no = m.round_no
                WHERE is_card_event(e.event_type)
                QUALIFY e.event_id IS NULL OR row_number() OVER (
                    PARTITION BY e.table_id, e.event_id ORDER BY e.seq, e.log_offset) = 1)
          GROUP BY ALL)
),
standing_placements AS (
    -- A placement counts unless the area's next placement or removal removes it before the
    -- round's first card ((d)3 allows it then): a player who moves a wager to another area
    -- before the deal holds one (an outside audit, session 39: placed on area 1, removed,
    -- placed on area 2 was flagged). A removal after the first card does not count ((d)6).
    SELECT p.table_id, p.shoe_id, p.round_no, p.player_id, p.seq, p.area, p.occurred_at
    FROM placements AS p
    LEFT JOIN moved_rounds_first_cards AS f
           ON f.table_id = p.table_id AND f.shoe_id IS NOT DISTINCT FROM p.shoe_id
          AND f.round_no = p.round_no
    WHERE p.event_type = 'WagerPlaced'
      AND NOT coalesce(p.next_type = 'WagerRemoved'
                       AND (f.first_card_order IS NULL OR p.next_order < f.first_card_order),
                       false)
),
multi_area_wagers AS (
    SELECT e.* FROM standing_placements AS e
    SEMI JOIN (SELECT table_id, shoe_id, round_no, player_id FROM standing_placements
               GROUP BY ALL HAVING min(area) < max(area)) AS m
        ON e.table_id IS NOT DISTINCT FROM m.table_id AND e.shoe_id IS NOT DISTINCT FROM m.shoe_id
       AND e.round_no = m.round_no AND e.player_id IS NOT DISTINCT FROM m.player_id
)
SELECT * FROM (
    -- BELOW_MINIMUM_ODDS on the paytable itself: a TableOpened whose paytable its profile does
    -- not allow (sql/ledger.sql's `paytables` gives the reason, word for word validate_paytable's).
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
    ASOF LEFT JOIN paytables_in_force_of(NULL, NULL) AS p ON e.table_id = p.table_id AND e.seq >= p.seq
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
    ASOF LEFT JOIN paytables_in_force_of(NULL, NULL) AS p ON e.table_id = p.table_id AND e.seq >= p.seq
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
    ASOF JOIN paytables_in_force_of(NULL, NULL) AS p ON e.table_id = p.table_id AND e.seq >= p.seq
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
    ASOF JOIN paytables_in_force_of(NULL, NULL) AS p ON e.table_id = p.table_id AND e.seq >= p.seq
    WHERE e.event_type = 'CardsLoaded' AND e.decks > 1 AND p.profile = 'nj-casino-night'
) AS found(code, table_id, shoe_id, round_no, seqs, explanation, occurred_at);

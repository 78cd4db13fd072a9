-- The cards out of each shoe: face-up cards, extra copies and burns.
CREATE OR REPLACE VIEW anomalies_found_shoes AS
WITH
-- The physical cards that left each shoe: drawn, burned, or found face up, each with the next
-- card out of its shoe in game order (sql/macros.sql, game_order, as the round's cards are read).
-- By ONE CARD (sql/macros.sql, one_card), a card found face up and then drawn at once is one
-- card, counted once (as its CardDrawn): to a box it was used (FACE_UP_CARD_USED); to the discard
-- rack it was placed where 13:47-20.31(g)1 puts it (sql/macros.sql, round_cards: then no card of
-- the round either).
cards_out AS MATERIALIZED (
    SELECT *,
           face_up_then_drawn AND next_card.dest IN ('LEFT', 'RIGHT', 'MIDDLE') AS used_face_up
    FROM (SELECT *,
                 event_type = 'CardFoundFaceUp' AND one_card(this_card, next_card) AS face_up_then_drawn
    FROM (
        SELECT table_id, shoe_id, round_no, seq, log_offset, occurred_at, event_type, rank, suit,
               {'type': event_type, 'rank': rank, 'suit': suit} AS this_card,
               lead({'type': event_type, 'rank': rank, 'suit': suit, 'dest': destination,
                     'seq': seq, 'round_no': round_no}) OVER w AS next_card
        FROM card_events_of(NULL, NULL, NULL, NULL)  -- each card once (sql/macros.sql)
        WHERE shoe_id IS NOT NULL
        WINDOW w AS (PARTITION BY table_id, shoe_id ORDER BY occurred_at, seq, log_offset)
    ))
),

-- 13:47-20.31(g)2; 13:69F-6.7(b): a card drawn in error "shall be used as though it were the
-- next card": when the next card out of the shoe, in the same round, is the same card (ONE
-- CARD, sql/macros.sql, one_card; round_cards says the same per round), that is the one
-- physical card being placed, counted once as its CardDrawn; where it went is WRONG_BOX's or
-- THIRD_CARD_DIVERTED's to judge. Otherwise the card drawn in error was not used: it still
-- left the shoe and is counted.
in_error AS MATERIALIZED (
    SELECT *,
           event_type = 'CardDrawnInError' AND one_card(this_card, next_card)
           AND next_card.round_no IS NOT DISTINCT FROM round_no AS used_in_error
    FROM cards_out
),

copies AS (
    SELECT *, row_number() OVER (PARTITION BY table_id, shoe_id, load_seq, rank, suit
                                 ORDER BY seq, log_offset) AS copy_no
    FROM (SELECT o.*, coalesce(l.decks, f.first.decks) AS decks,
                 coalesce(l.load_seq, f.first.load_seq) AS load_seq
          FROM in_error AS o
          -- the load the card came out of: its shoe's last load before it (a card recorded
          -- before any load of its shoe: the first load's); each load's copies count against
          -- its own decks (macros.sql shoe_loads_of)
          ASOF LEFT JOIN shoe_loads_of() AS l
              ON l.table_id = o.table_id AND l.shoe_id = o.shoe_id AND o.seq > l.load_seq
          JOIN (SELECT table_id, shoe_id,
                       arg_min({'load_seq': load_seq, 'decks': decks}, load_seq) AS first
                FROM shoe_loads_of() GROUP BY ALL) AS f
              ON f.table_id = o.table_id AND f.shoe_id = o.shoe_id
          WHERE NOT o.face_up_then_drawn AND NOT o.used_in_error)
),

-- 13:69F-6.9: "In lieu of the dealing and shuffling requirements set forth in N.J.A.C.
-- 13:69F-6.3 and 6.4 [6.4: the burns], a casino licensee may utilize a dealing shoe or other
-- device designed to automatically reshuffle the cards." A shoe loaded at an nj-casino table
-- (the profile in force at its CardsLoaded) whose last shuffle event before it (ShuffleStarted or
-- ShuffleCompleted) names the automatic reshuffling shoe (CONTINUOUS_SHUFFLER) owes no burn,
-- neither its first card nor a new dealer's. 13:47-20.31 (casino nights) and GA have no such
-- exemption.
burn_exempt_loads AS (
    SELECT l.table_id, l.seq, l.log_offset,
           coalesce(l.shuffled_by = 'CONTINUOUS_SHUFFLER' AND p.profile = 'nj-casino', false)
               AS no_burn_owed
    FROM (SELECT table_id, seq, log_offset, event_type,
                 -- the shuffle of the cards this load put in the shoe: the shoe's last shuffle
                 -- event before the load, not one after it (a shoe id closed and loaded again
                 -- after another shuffle; an outside review, session 37)
                 last_value(method IGNORE NULLS) OVER (
                     PARTITION BY table_id, shoe_id ORDER BY seq, log_offset
                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS shuffled_by
          FROM events
          WHERE event_type = 'CardsLoaded'  -- every load: one naming no shoe owes its burn
             OR (event_type IN ('ShuffleStarted', 'ShuffleCompleted') AND shoe_id IS NOT NULL)
         ) AS l
    ASOF LEFT JOIN paytables_in_force_of(NULL, NULL) AS p ON l.table_id = p.table_id AND l.seq >= p.seq
    WHERE l.event_type = 'CardsLoaded'
),

-- Burns owed and paid (13:47-20.31(d)1; 13:69F-6.4), per stretch up to the next card dealt.
burn_stream AS (
    SELECT table_id, shoe_id, seq, log_offset, event_type, dealer_id, no_burn_owed,
           last_value(CASE WHEN event_type = 'CardsLoaded' OR ends_shoe THEN event_type END
                      IGNORE NULLS) OVER before_this AS shoe_state,
           -- the shoe in play was loaded with no burn owed (13:69F-6.9, burn_exempt_loads)
           last_value(CASE WHEN event_type = 'CardsLoaded' THEN no_burn_owed
                           WHEN ends_shoe THEN false END
                      IGNORE NULLS) OVER before_this AS shoe_exempt,
           -- a card found face up and placed in the rack is no card dealt (macros.sql)
           first_value(CASE WHEN event_type = 'CardDrawn' AND placed_face_up IS NULL THEN seq END
                       IGNORE NULLS) OVER from_this AS next_draw_seq,
           -- a debt dies with its shoe: at its ShoeClosed, or when another shoe is loaded
           first_value(CASE WHEN ends_shoe OR replaces_shoe THEN seq END
                       IGNORE NULLS) OVER after_this AS shoe_end_seq
    FROM (SELECT *,
                 -- a load of a shoe other than the one in play (a load doubled by two writers
                 -- at one seq is one shoe loaded twice, each owing its burn)
                 event_type = 'CardsLoaded' AND (in_play IS NULL OR shoe_id IS DISTINCT FROM
                                                 in_play.shoe_id) AS replaces_shoe,
                 -- a close of the shoe in play, or naming no shoe, or where the shoe in play
                 -- is not known (none loaded yet, or loaded naming none): a close of another
                 -- shoe (an old shoe's line arriving late) ends nothing, and the shoe in play
                 -- still owes its burns, (d)1
                 event_type = 'ShoeClosed' AND (shoe_id IS NULL OR in_play.shoe_id IS NULL
                                                OR shoe_id = in_play.shoe_id) AS ends_shoe
          FROM (SELECT e.table_id, e.shoe_id, e.seq, e.log_offset, e.event_type, e.dealer_id,
                       x.no_burn_owed, p.placed_face_up,
                       -- the shoe in play before this event: the last load's, named or not
                       -- (NULL: no load yet)
                       last_value(CASE WHEN e.event_type = 'CardsLoaded'
                                       THEN {'shoe_id': e.shoe_id} END IGNORE NULLS)
                           OVER (PARTITION BY e.table_id ORDER BY e.seq, e.log_offset
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS in_play
                FROM (SELECT * FROM events_once_of(NULL, NULL, NULL, NULL)  -- each card
                      WHERE event_type IN ('CardBurned', 'CardDrawn')  -- event once (macros.sql)
                      UNION ALL
                      -- and each load, tap-in and close once: one recorded again under its
                      -- event id (a line re-sent, a producer's retry; DUPLICATE_EVENT) is one
                      -- load or tap-in, owing one burn, or one close, ending the debts of its
                      -- own moment only (as card_events_of, its first copy in seq order)
                      SELECT * FROM events_in(NULL, NULL, NULL, NULL)
                      WHERE is_burn_state_event(event_type)
                      QUALIFY event_id IS NULL OR row_number() OVER (
                          PARTITION BY table_id, event_id ORDER BY seq, log_offset) = 1) AS e
                -- by offset too: two writers can both append a load at one seq
                -- (docs/integrity.md)
                LEFT JOIN burn_exempt_loads AS x USING (table_id, seq, log_offset)
                LEFT JOIN face_up_placements_of(NULL) AS p USING (table_id, seq, log_offset)))
    WINDOW before_this AS (PARTITION BY table_id ORDER BY seq, log_offset
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
           from_this AS (PARTITION BY table_id ORDER BY seq, log_offset
                         ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING),
           after_this AS (PARTITION BY table_id ORDER BY seq, log_offset
                          ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)
),

burn_balance AS (
    -- A burn is owed when a shoe is loaded, and when a dealer taps in while a shoe is in play;
    -- each debt needs a burn after it and before the next card dealt (one burn pays one debt;
    -- a debt dies with its shoe, closed or replaced by another shoe loaded: that one owes its
    -- own burn). From each event on: debts less burns still to come.
    SELECT *, owed_from_here - paid_from_here AS short_from_here
    FROM (SELECT *,
                 sum(owes::INTEGER) OVER later AS owed_from_here,
                 sum(pays::INTEGER) OVER later AS paid_from_here
          FROM (SELECT *,
                       ((event_type = 'CardsLoaded' AND NOT no_burn_owed)
                        OR (event_type = 'DealerTappedIn' AND shoe_state = 'CardsLoaded'
                            AND NOT coalesce(shoe_exempt, false)))
                           AND (shoe_end_seq IS NULL OR shoe_end_seq > next_draw_seq) AS owes,
                       event_type = 'CardBurned' AS pays
                FROM burn_stream
                WHERE event_type <> 'CardDrawn' AND next_draw_seq IS NOT NULL)
          WINDOW later AS (PARTITION BY table_id, next_draw_seq ORDER BY seq DESC, log_offset DESC
                           ROWS UNBOUNDED PRECEDING))
),

burn_shortfall AS (
    -- The burns fall short by the most debts from the latest debt at which the shortfall peaks:
    -- the debts and burns from there on are the proof (a burn before it paid an earlier debt).
    SELECT *,
           max(short_from_here) OVER after_this AS short_after,
           max(short_from_here) OVER (PARTITION BY table_id, next_draw_seq) AS short_most
    FROM burn_balance
    WINDOW after_this AS (PARTITION BY table_id, next_draw_seq ORDER BY seq DESC, log_offset DESC
                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),

unburned AS (
    SELECT table_id, next_draw_seq, list(seq ORDER BY seq, log_offset) AS proof_seqs,
           list(CASE event_type WHEN 'CardsLoaded' THEN 'shoe ' || shoe_id || ' was loaded'
                ELSE 'dealer ' || dealer_id || ' tapped in' END ORDER BY seq, log_offset)
               FILTER (WHERE owes) AS debts,
           count(*) FILTER (WHERE pays) AS burned
    FROM burn_shortfall
    WHERE short_most > 0 AND (owes OR pays) AND coalesce(short_after < short_most, true)
    GROUP BY ALL
)
SELECT * FROM (
    -- FACE_UP_CARD_USED (13:47-20.31(g)1): a card found face up in the shoe is not used; flagged
    -- when the next card out of the shoe is that same card, dealt to a box.
    SELECT 'FACE_UP_CARD_USED', table_id, shoe_id, next_card.round_no, [seq, next_card.seq],
           printf('%s was found face up in the shoe and then dealt to the %s box instead of the discard rack',
                  card_label(rank, suit), lower(next_card.dest)),
           occurred_at
    FROM cards_out
    WHERE used_face_up

    UNION ALL
    -- EXTRA_CARD (13:47-20.31(a)2): a shoe of N decks holds N copies of each card; the (N+1)th
    -- copy out of the shoe (of one load of it) was introduced. Its seqs: every copy out so far.
    SELECT 'EXTRA_CARD', x.table_id, x.shoe_id, x.round_no, list(c.seq ORDER BY c.seq),
           printf('Copy %d of %s out of shoe %s, which holds %d deck%s: a card was introduced',
                  x.copy_no, card_label(x.rank, x.suit), x.shoe_id, x.decks,
                  CASE WHEN x.decks = 1 THEN '' ELSE 's' END),
           x.occurred_at
    FROM copies AS x
    JOIN copies AS c
        ON c.table_id = x.table_id AND c.shoe_id = x.shoe_id AND c.load_seq = x.load_seq
       AND c.rank = x.rank AND c.suit = x.suit AND c.copy_no <= x.copy_no
    WHERE x.copy_no > x.decks
    GROUP BY x.table_id, x.shoe_id, x.load_seq, x.round_no, x.copy_no, x.rank, x.suit, x.decks,
             x.occurred_at

    UNION ALL
    -- DRAWN_IN_ERROR_NOT_USED (13:47-20.31(g)2; 13:69F-6.7(b)): a card drawn in error is used
    -- as the next card; flagged when the next card out of the shoe is another card (or comes in
    -- another round), or the shoe closed with none. Proof: the card drawn in error and the next
    -- card out.
    SELECT 'DRAWN_IN_ERROR_NOT_USED', o.table_id, o.shoe_id, o.round_no,
           list_filter([o.seq, o.next_card.seq], lambda s: s IS NOT NULL),
           printf('%s was drawn in error and not used as the next card (%s)',
                  card_label(o.rank, o.suit),
                  CASE WHEN o.next_card.seq IS NULL THEN 'the shoe closed without it'
                       ELSE card_label(o.next_card.rank, o.next_card.suit) || ' came out next' END),
           o.occurred_at
    FROM in_error AS o
    WHERE o.event_type = 'CardDrawnInError' AND NOT o.used_in_error
      AND (o.next_card.seq IS NOT NULL OR EXISTS (
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
    -- the latest burn before the disclosure in game order (sql/macros.sql, game_order): the burn is
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
    SELECT 'MISSING_BURN', d.table_id, d.shoe_id, d.round_no, u.proof_seqs || [d.seq],
           CASE WHEN u.burned = 0
                THEN printf('No card burned after %s, before %s was dealt to the %s box',
                            array_to_string(u.debts, ' and '), card_label(d.rank, d.suit),
                            lower(d.destination))
                ELSE printf('%d burns owed (after %s) but %d card%s burned, before %s was dealt to the %s box',
                            len(u.debts), array_to_string(u.debts, ' and '), u.burned,
                            CASE WHEN u.burned = 1 THEN '' ELSE 's' END,
                            card_label(d.rank, d.suit), lower(d.destination)) END,
           d.occurred_at
    FROM unburned AS u
    JOIN events AS d ON d.table_id = u.table_id AND d.seq = u.next_draw_seq AND d.event_type = 'CardDrawn'
) AS found(code, table_id, shoe_id, round_no, seqs, explanation, occurred_at);

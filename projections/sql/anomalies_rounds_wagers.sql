-- The rounds family (sql/anomalies_rounds.sql), its wagers and raises against the cards: an early
-- third card and what followed it, wagers moved after the first card, raises out of their time.
CREATE OR REPLACE MACRO round_wager_anomalies(round_facts) AS TABLE
WITH
-- the round facts, read once by the family view (sql/anomalies_rounds.sql)
facts AS NOT MATERIALIZED (SELECT * FROM query_table(round_facts)),

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
           f.exposure_window_end AS window_end,
           CASE WHEN f.raises_closed IS NOT NULL THEN f.middle_card END AS new_third_card
    FROM facts AS f
    WHERE f.kind = 'spread' AND len(f.exposed) > 0
),

-- After an exposure, per betting area: what was at stake when the card came out (the last
-- wager placed or changed, nothing if removed; the raises placed), and, before the new third
-- card, the player's last choice and the wager and raise returned (game order).
exposure_areas AS (
    SELECT x.table_id, x.shoe_id, x.round_no, e.seat, e.area,
           -- ties of game order (two writers) by log order, as the ledger takes them
           arg_max(CASE WHEN e.event_type = 'WagerRemoved' THEN 0 ELSE e.amount_cents END,
                   (game_order(e.occurred_at, e.seq), e.log_offset))
               FILTER (e.event_type IN ('WagerPlaced', 'WagerChanged', 'WagerRemoved')
                       AND game_order(e.occurred_at, e.seq) < x.exposed_order) AS wager_cents,
           coalesce(sum(e.amount_cents) FILTER (e.event_type = 'RaisePlaced'
                        AND game_order(e.occurred_at, e.seq) < x.exposed_order), 0)
               AS raise_cents,
           arg_max(e.choice, (game_order(e.occurred_at, e.seq), e.log_offset))
               FILTER (e.event_type = 'VoidOrPlayChosen' AND after_exposure)
               AS choice,
           arg_max(e.seq, (game_order(e.occurred_at, e.seq), e.log_offset))
               FILTER (e.event_type = 'VoidOrPlayChosen' AND after_exposure)
               AS choice_seq,
           coalesce(sum(e.amount_cents) FILTER (e.event_type = 'WagerSettled' AND e.outcome = 'VOID'
               AND e.wager_kind = 'ORIGINAL' AND after_exposure), 0) AS wager_back,
           coalesce(sum(e.amount_cents) FILTER (e.event_type = 'WagerSettled' AND e.outcome = 'VOID'
               AND e.wager_kind = 'RAISE' AND after_exposure), 0) AS raise_back
    FROM exposures AS x
    JOIN events AS e
      ON e.table_id = x.table_id AND e.shoe_id IS NOT DISTINCT FROM x.shoe_id
     AND e.round_no = x.round_no,
    -- the protocol's window (sql/cards.sql, in_exposure_window: one definition with the ledger)
    LATERAL (SELECT in_exposure_window(game_order(e.occurred_at, e.seq), x.exposed_order,
                                       x.window_end) AS after_exposure)
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
-- the area held a wager when the first card left the shoe and whether its decision came before the event.
-- Before and after are game order (sql/macros.sql, game_order): the wagers come from the dealer
-- terminal and the first card from the shoe, so their seqs are arrival order only.
moves AS (
    SELECT e.table_id, e.shoe_id, e.round_no, e.seat, e.area, e.seq, e.event_type,
           e.amount_cents, e.instrument, e.occurred_at, f.first_card_seq, f.first_card,
           f.first_card_order, game_order(e.occurred_at, e.seq) AS move_order,
           -- the area's first wager event after the first card that puts chips there (game
           -- order): a placement or a change to an amount; a removal puts none (an outside
           -- audit, session 39: a removal first on an empty area hid the late wager after it)
           -- (then the log's order, as the ledger's at_order: two lines at one time and seq
           -- were both taken for it; a second read, session 39)
           e.puts_chips AND row_number() OVER (
               PARTITION BY e.table_id, e.shoe_id, e.round_no, e.seat, e.area, e.puts_chips
               ORDER BY e.occurred_at, e.seq, e.log_offset) = 1 AS first_chips
    FROM (SELECT *, coalesce(event_type <> 'WagerRemoved' AND amount_cents > 0, false)
                        AS puts_chips
          FROM events) AS e
    JOIN facts AS f
      ON f.table_id = e.table_id AND f.shoe_id IS NOT DISTINCT FROM e.shoe_id
     AND f.round_no = e.round_no
    WHERE e.event_type IN ('WagerPlaced', 'WagerChanged', 'WagerRemoved')
      AND game_order(e.occurred_at, e.seq) > f.first_card_order
),

late_moves AS (
    SELECT m.table_id, m.shoe_id, m.round_no, m.seat, m.area, m.seq, m.event_type,
           m.amount_cents, m.instrument, m.occurred_at, m.first_card_seq, m.first_card,
           m.first_card_order, m.move_order, m.first_chips,
           -- the area's state after its last wager event before the first card (game order,
           -- then the log's): a wager removed, or changed to nothing, held none, so chips put
           -- there after the card are late, not added to it (outside audits, sessions 38 and
           -- 39; docs/auditing.md, the ledger's `late`)
           coalesce(arg_max(CASE WHEN b.event_type = 'WagerRemoved' THEN 0 ELSE b.amount_cents END,
                            {'at': b.occurred_at, 'seq': b.seq, 'log_offset': b.log_offset})
                        FILTER (b.event_type <> 'WagerSettled'
                                AND game_order(b.occurred_at, b.seq) < m.first_card_order)
                        > 0, false) AS had_wager,
           coalesce(bool_or(b.event_type = 'WagerSettled' AND b.wager_kind = 'ORIGINAL'
                            AND game_order(b.occurred_at, b.seq) < m.move_order), false) AS decided
    FROM moves AS m
    LEFT JOIN events AS b
        ON b.table_id = m.table_id AND b.shoe_id IS NOT DISTINCT FROM m.shoe_id
       AND b.round_no = m.round_no
       AND b.seat = m.seat AND b.area = m.area
       AND b.event_type IN ('WagerPlaced', 'WagerChanged', 'WagerRemoved', 'WagerSettled')
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
    LEFT JOIN exposure_faults AS p
           ON p.table_id = x.table_id AND p.shoe_id IS NOT DISTINCT FROM x.shoe_id
          AND p.round_no = x.round_no
    WHERE x.finished
      AND (x.new_third_seq IS NULL OR len(p.no_choice_seats) > 0 OR len(p.unrefunded_seats) > 0)

    UNION ALL
    -- LATE_WAGER (13:47-20.31(d)3; GA (1)): chips put after the first card left the shoe on an
    -- area that held no wager when it did (none placed, or the one placed removed or changed to
    -- nothing): the area's first wager event after the card that puts chips there, a placement
    -- or a change (the ledger's `late` wager, owed as that event left it; a second review,
    -- session 38, found a change there WAGER_ALTERED while the ledger owed it as late). Every
    -- other wager event after the card alters a wager (WAGER_ALTERED below).
    SELECT 'LATE_WAGER', table_id, shoe_id, round_no, [first_card_seq, seq],
           printf('Seat %d placed %s%s on area %d after the first card %s left the shoe',
                  seat, dollars(amount_cents),
                  coalesce(' (' || replace(lower(instrument), '_', ' ') || ')', ''), area,
                  first_card),
           occurred_at
    FROM late_moves
    WHERE NOT had_wager AND first_chips

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
    WHERE NOT decided AND NOT (NOT had_wager AND first_chips)

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
    JOIN facts AS f
      ON f.table_id = e.table_id AND f.shoe_id IS NOT DISTINCT FROM e.shoe_id
     AND f.round_no = e.round_no
    -- game order (sql/macros.sql, game_order): the raise is keyed at the terminal, the card is the shoe's
    WHERE e.event_type = 'RaisePlaced' AND f.kind = 'spread'
      AND game_order(e.occurred_at, e.seq) < f.second_card_order

    UNION ALL
    -- LATE_RAISE (13:47-20.31(d)12-13; GA (11)): a raise placed after "Raises closed", or
    -- after the third card was dealt ((d)12: "All raise wagers shall be made ... prior to the
    -- third card being dealt"): the round's first card dealt beyond the first two (an early
    -- exposed card, or the third card dealt with "Raises closed" never said before it). Proof:
    -- the earlier of the two, and the raise.
    SELECT 'LATE_RAISE', table_id, shoe_id, round_no,
           [CASE WHEN raises_closed < third THEN raises_closed_seq
                 ELSE coalesce(third_seq, raises_closed_seq) END, seq],
           CASE WHEN raises_closed < third OR third IS NULL
                THEN printf('Seat %d raised %s on area %d after "Raises closed"%s', seat,
                            dollars(amount_cents), area,
                            CASE WHEN raised > third_card_order
                                 THEN ', with the third card ' || middle_card || ' already out'
                                 ELSE '' END)
                ELSE printf('Seat %d raised %s on area %d after the third card %s was dealt (%s)',
                            seat, dollars(amount_cents), area, third_card,
                            CASE WHEN raises_closed IS NULL THEN '"Raises closed" never said'
                                 ELSE '"Raises closed" said only after it' END) END,
           occurred_at
    -- game order (sql/macros.sql, game_order): a raise keyed before "Raises closed" is on time
    -- whichever line reached the recorder first
    FROM (SELECT e.table_id, e.shoe_id, e.round_no, e.seq, e.seat, e.area, e.amount_cents,
                 e.occurred_at, f.raises_closed, f.raises_closed_seq, f.third_card_order,
                 f.middle_card, f.beyond_two[1].seq AS third_seq,
                 f.beyond_two[1].card AS third_card,
                 game_order(e.occurred_at, e.seq) AS raised,
                 game_order(f.beyond_two[1].at, f.beyond_two[1].seq) AS third
          FROM events AS e
          JOIN facts AS f
            ON f.table_id = e.table_id AND f.shoe_id IS NOT DISTINCT FROM e.shoe_id
           AND f.round_no = e.round_no
          WHERE e.event_type = 'RaisePlaced' AND f.kind = 'spread')
    WHERE raised > raises_closed OR raised > third
) AS found(code, table_id, shoe_id, round_no, seqs, explanation, occurred_at);

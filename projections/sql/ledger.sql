-- pitlog settlement ledger: the paytable in force at every table, and every wager and raise
-- with the ONE decision the rules require next to the settlements actually recorded.
--
-- Plain DuckDB SQL over the raw `events` table and rounds_of (the `rounds` view's rows) of
-- sql/rounds.sql (which must be created first); no Python functions, so an auditor's stock DuckDB
-- client shows the same rows. Rules are cited as in docs/architecture.md: 13:47-20.31 (casino nights,
-- seed 000), 13:69F-6 (casinos, seed 001), GA (n) (the other gaming authority, seed 004).
--
-- Money is integer cents. A settlement's amount is what WagerSettled records: the winnings
-- paid if WON (the winner's own stake comes back on top and is NOT in it), the wager collected
-- if LOST, the wager returned if VOID (events/reddog/rules.py, ExpectedSettlement).

-- The calendar of a casino, whose gaming day does not start at midnight. `tz` is a time zone
-- DuckDB knows ('America/New_York', 'UTC', or a fixed offset written 'GMT+05:30').
-- gaming_day: the local date of the moment `day_start_minutes` after local midnight began the
-- day (06:00 -> 360): 03:00 local on 29 November belongs to the gaming day of 28 November.
CREATE OR REPLACE MACRO gaming_day(ts, tz, day_start_minutes) AS
    CAST(timezone(tz, ts) - to_minutes(day_start_minutes) AS DATE);

-- shift_name: `shift_starts` are the shifts' start times in minutes after local midnight,
-- ascending, and `shift_names` their names; a moment belongs to the last shift started at or
-- before its local time of day, and before the first start, to the last shift (past midnight).
CREATE OR REPLACE MACRO shift_name(ts, tz, shift_starts, shift_names) AS
    shift_names[coalesce(nullif(len(list_filter(shift_starts,
        lambda b: b <= hour(timezone(tz, ts)) * 60 + minute(timezone(tz, ts)))), 0),
        len(shift_names))];

-- One paytable line checked against its profile; NULL when the line is allowed. The messages
-- are word for word those of events.reddog.rules.validate_paytable (a test compares them).
CREATE OR REPLACE MACRO paytable_line_violation(profile, board_approved, line, odds, standard) AS
    CASE
        -- 13:47-20.31(d)9: three of a kind "shall be paid at odds of 11 to 1" at a casino night,
        -- neither lower nor higher ((f) only protects the spread odds of (e)).
        WHEN profile = 'nj-casino-night' AND line = 'three_of_a_kind' AND odds <> standard
        THEN printf('%s paytable line %s pays %d to 1, not the %d to 1 that 13:47-20.31(d)9 fixes',
                    profile, line, odds, standard)
        -- 13:47-20.31(f): a casino night may not decrease the odds below (e) (three of a kind:
        -- (d)9); 13:69F-6: a casino pays never below the table. Higher odds are allowed.
        WHEN profile IN ('nj-casino', 'nj-casino-night') AND odds < standard THEN printf(
            '%s paytable line %s pays %d to 1, below the minimum %d to 1 (%s)',
            profile, line, odds, standard,
            CASE WHEN profile = 'nj-casino' THEN '13:69F-6'
                 WHEN line = 'three_of_a_kind' THEN '13:47-20.31(d)9'
                 ELSE '13:47-20.31(e)-(f)' END)
        -- GA (11)(c): neither less nor more than the table without the Board's approval.
        WHEN profile = 'gaming-authority' AND odds <> standard AND NOT coalesce(board_approved, false)
        THEN printf('%s paytable line %s pays %d to 1, %s the table''s %d to 1, '
                    'without the Board''s approval (GA (11)(c))',
                    profile, line, odds, CASE WHEN odds < standard THEN 'below' ELSE 'above' END,
                    standard)
    END;

-- The first reason a paytable may not be used under its profile, NULL when it may.
CREATE OR REPLACE MACRO paytable_violation(profile, board_approved, s1, s2, s3, s4, trips) AS
    CASE
        -- An ill-formed line ("X to 1" with X >= 1) is reported before the profile is looked at.
        WHEN coalesce(s1, 0) < 1 THEN printf('paytable line spread_1 must be an integer >= 1 (X to 1), got %s', coalesce(CAST(s1 AS VARCHAR), 'None'))
        WHEN coalesce(s2, 0) < 1 THEN printf('paytable line spread_2 must be an integer >= 1 (X to 1), got %s', coalesce(CAST(s2 AS VARCHAR), 'None'))
        WHEN coalesce(s3, 0) < 1 THEN printf('paytable line spread_3 must be an integer >= 1 (X to 1), got %s', coalesce(CAST(s3 AS VARCHAR), 'None'))
        WHEN coalesce(s4, 0) < 1 THEN printf('paytable line spread_4_to_11 must be an integer >= 1 (X to 1), got %s', coalesce(CAST(s4 AS VARCHAR), 'None'))
        WHEN coalesce(trips, 0) < 1 THEN printf('paytable line three_of_a_kind must be an integer >= 1 (X to 1), got %s', coalesce(CAST(trips AS VARCHAR), 'None'))
        WHEN profile IS NULL OR profile NOT IN ('nj-casino', 'nj-casino-night', 'gaming-authority')
        THEN printf('unknown jurisdiction profile ''%s'' (known: nj-casino, nj-casino-night, gaming-authority)', profile)
        -- The standard table: 13:47-20.31(e) for the spreads, (d)9 for three of a kind.
        ELSE coalesce(
            paytable_line_violation(profile, board_approved, 'spread_1', s1, standard_line('spread_1')),
            paytable_line_violation(profile, board_approved, 'spread_2', s2, standard_line('spread_2')),
            paytable_line_violation(profile, board_approved, 'spread_3', s3, standard_line('spread_3')),
            paytable_line_violation(profile, board_approved, 'spread_4_to_11', s4, standard_line('spread_4_to_11')),
            paytable_line_violation(profile, board_approved, 'three_of_a_kind', trips, standard_line('three_of_a_kind')))
    END;

-- One row per TableOpened: a table's profile and paytable, in force from `seq` until the
-- table's next TableOpened (`until_seq`, NULL while in force). `valid` is false, with the
-- reason in `violation`, when the profile does not allow the paytable (the anomaly engine's
-- BELOW_MINIMUM_ODDS reads this view).
--
-- paytables_of(in_table, to_seq): the same rows but until_seq, of one table (NULL: every table)
-- and opened at or before to_seq (NULL: all); ledger_of looks the paytable in force up here.
CREATE OR REPLACE MACRO paytables_of(in_table, to_seq) AS TABLE
SELECT
    table_id, seq, log_offset,
    occurred_at AS opened_at, actor, profile,
    pays_spread_1, pays_spread_2, pays_spread_3, pays_spread_4_to_11, pays_three_of_a_kind,
    min_wager_cents, max_wager_cents, multiple_areas_permitted, board_approved,
    paytable_violation(profile, board_approved, pays_spread_1, pays_spread_2, pays_spread_3,
                       pays_spread_4_to_11, pays_three_of_a_kind) IS NULL AS valid,
    paytable_violation(profile, board_approved, pays_spread_1, pays_spread_2, pays_spread_3,
                       pays_spread_4_to_11, pays_three_of_a_kind) AS violation
FROM events
WHERE event_type = 'TableOpened'
  AND (in_table IS NULL OR table_id = in_table) AND (to_seq IS NULL OR seq <= to_seq);

-- paytables_in_force_of(in_table, to_seq): the rows a "paytable in force" look-up reads (an
-- ASOF join on seq: the table's latest TableOpened at or before a seq). Two openings at one
-- seq (two writers of a table, docs/integrity.md): the later in the log is in force, as for the
-- dealers' taps (sql/rounds.sql); over both, an ASOF join picks either, so a wager's verdict
-- could change from one run of the same query to the next.
CREATE OR REPLACE MACRO paytables_in_force_of(in_table, to_seq) AS TABLE
SELECT * FROM paytables_of(in_table, to_seq)
QUALIFY row_number() OVER (PARTITION BY table_id, seq ORDER BY log_offset DESC) = 1;

CREATE OR REPLACE VIEW paytables AS
SELECT table_id, seq, lead(seq) OVER (PARTITION BY table_id ORDER BY seq, log_offset) AS until_seq,
       * EXCLUDE (table_id, seq, log_offset)
FROM paytables_of(NULL, NULL)
ORDER BY table_id, seq;

-- One row per wager (ORIGINAL) and per raise (RAISE), keyed by table, shoe, round, seat, area
-- and kind, and one row per settlement key that has no wager at all. See docs/auditing.md
-- for every column and status.
--
-- ledger_of(in_table, in_shoe, in_round, from_seq, to_seq) is the ledger's rows of one table,
-- shoe and round (a NULL argument: all of them), computed from that round's events alone, so a
-- dispute does not build the whole ledger to read one round (the `ledger` view below is
-- ledger_of(NULL, NULL, NULL, NULL, NULL)). from_seq and to_seq only speed the scan up: they must
-- bracket every event of the round (the rounds view's first_seq and last_seq do), or be NULL;
-- taps_from, as rounds_of's, shortens the dealer's look-up, and shoe_from, the shoe's first seq
-- at the table (a replay's or dispute's context, sql/macros.sql shoe_decks_of), its decks'.
CREATE OR REPLACE MACRO ledger_of(in_table, in_shoe, in_round, from_seq, to_seq,
                                  taps_from := NULL, shoe_from := NULL) AS TABLE
WITH round_events AS NOT MATERIALIZED (
    -- The events of the rows asked for (inlined where read, as `events` was before, so that the
    -- whole ledger is planned as it was); the shoe's decks and the paytable are looked up wider.
    SELECT * FROM events
    WHERE (in_table IS NULL OR table_id = in_table) AND (in_shoe IS NULL OR shoe_id = in_shoe)
      AND (in_round IS NULL OR round_no = in_round)
      AND (from_seq IS NULL OR seq >= from_seq) AND (to_seq IS NULL OR seq <= to_seq)
),
first_cards AS (
    -- 13:47-20.31(d)6; GA (4): once the first card of the round is out of the shoe, no one
    -- may alter a wager until its decision. A card drawn in error is a card out of the shoe.
    -- First in game order (sql/macros.sql, game_order): the wagers are the terminal's lines, the
    -- card the shoe's, and their seqs are only the order they reached the recorder.
    -- A card found face up and put in the rack is none (sql/macros.sql, first_card_out), read
    -- from each card event once, as the anomaly round facts read it (a re-sent copy of the
    -- placement was taken for the first card: a second read, session 39).
    -- A round with no card found face up has no such placement: its first card out is its
    -- first draw, found without the list (built, in game order, for the few rounds with one:
    -- the list for every round cost a sixth of the whole ledger's time, session 40).
    SELECT table_id, shoe_id, round_no,
           CASE WHEN face_up THEN game_order(first_out.at, first_out.seq)
                ELSE first_draw END AS first_card_order
    FROM (SELECT table_id, shoe_id, round_no,
                 any_value(in_face_up_round) AS face_up,
                 min(game_order(occurred_at, seq))
                     FILTER (event_type IN ('CardDrawn', 'CardDrawnInError')) AS first_draw,
                 first_card_out(list({'seq': seq, 'at': occurred_at, 'type': event_type,
                                      'rank': rank, 'suit': suit, 'dest': destination}
                                     ORDER BY occurred_at, seq, log_offset)
                                FILTER (in_face_up_round)) AS first_out
          FROM (SELECT *, bool_or(event_type = 'CardFoundFaceUp') OVER (
                              PARTITION BY table_id, shoe_id, round_no) AS in_face_up_round
                FROM card_events_of(in_table, in_shoe, from_seq, to_seq)
                WHERE (in_round IS NULL OR round_no = in_round) AND round_no IS NOT NULL)
          GROUP BY table_id, shoe_id, round_no)
),
original_events AS (
    SELECT e.table_id, e.shoe_id, e.round_no, e.seat, e.area, e.event_type, e.seq,
           e.amount_cents, e.player_id, e.instrument, e.occurred_at,
           -- 13:47-20.31(d)3, (d)6; GA (1), (4): placements, changes and removals before the
           -- first card are legal and count; later ones are not allowed and do not.
           f.first_card_order IS NULL OR game_order(e.occurred_at, e.seq) < f.first_card_order
               AS before_first_card,
           -- game order, then log order: two lines at one seq and time (two writers of a
           -- table) are taken in the order the log holds them, so every run picks the same
           {'at': e.occurred_at, 'seq': e.seq, 'log_offset': e.log_offset} AS at_order,
           -- The wager's state after this event: its amount, or -1 once removed.
           CASE WHEN e.event_type = 'WagerRemoved' THEN -1 ELSE e.amount_cents END AS state
    FROM round_events AS e
    LEFT JOIN first_cards AS f
           ON f.table_id = e.table_id AND f.shoe_id IS NOT DISTINCT FROM e.shoe_id
          AND f.round_no = e.round_no
    WHERE e.event_type IN ('WagerPlaced', 'WagerChanged', 'WagerRemoved')
),
emptied AS (
    -- When an area was last left empty before the first card (removed or changed to nothing):
    -- the wager standing at the card was placed after it. Few areas are: a join to them, not a
    -- window over every wager event (a sixth of the ledger's time, session 40).
    SELECT table_id, shoe_id, round_no, seat, area, max(at_order) AS last_emptied
    FROM original_events
    WHERE before_first_card AND state <= 0
    GROUP BY table_id, shoe_id, round_no, seat, area
),
original_emptied AS (
    SELECT e.*, x.last_emptied
    FROM original_events AS e
    -- NULL-safe as the window's partition was: money recorded outside any round has no
    -- round_no (a second read, session 40: an area emptied there had its first placer named)
    LEFT JOIN emptied AS x
           ON x.table_id = e.table_id AND x.shoe_id IS NOT DISTINCT FROM e.shoe_id
          AND x.round_no IS NOT DISTINCT FROM e.round_no
          AND x.seat IS NOT DISTINCT FROM e.seat AND x.area IS NOT DISTINCT FROM e.area
),
original_states AS (
    SELECT
        table_id, shoe_id, round_no, seat, area,
        -- The area's state when the first card left the shoe (NULL: no event before it), and
        -- after the first event after it, and after the first one after it that put chips
        -- there (a removal puts none: an outside audit, session 39).
        arg_max(state, at_order) FILTER (before_first_card) AS state_at_first_card,
        arg_min(state, at_order) FILTER (NOT before_first_card) AS first_state_after,
        -- The placement of the wager standing at the first card: the first since the area was
        -- last left empty (placed again by another player after a removal, it is theirs; an
        -- outside audit, session 39, found the first placer ever named; two writers' lines at
        -- one seq and moment, the first in the log), else, for a wager removed before the
        -- card, the last placement before it; and the event that made a late wager, the first
        -- after the card that put chips there (its player when it is a placement; a second
        -- read, session 39: the first placement after the card was taken, even after a change
        -- made the late wager).
        coalesce(
            arg_min({'type': event_type, 'cents': amount_cents, 'player_id': player_id,
                     'instrument': instrument}, at_order)
                FILTER (before_first_card AND event_type = 'WagerPlaced'
                        AND (last_emptied IS NULL OR at_order > last_emptied)),
            arg_max({'type': event_type, 'cents': amount_cents, 'player_id': player_id,
                     'instrument': instrument}, at_order)
                FILTER (before_first_card AND event_type = 'WagerPlaced')) AS placed_before,
        arg_min({'type': event_type, 'cents': amount_cents, 'player_id': player_id,
                 'instrument': instrument}, at_order)
            FILTER (NOT before_first_card AND state > 0) AS chips_after,
        count(*) FILTER (before_first_card) AS events_before,
        count(*) FILTER (NOT before_first_card) AS events_after,
        min(occurred_at) AS placed_at,
        list_sort(list(seq)) AS wager_seqs
    FROM original_emptied
    GROUP BY table_id, shoe_id, round_no, seat, area
),
original_owed AS (
    -- Late: the area held no wager when the first card left the shoe (no event before it, or
    -- its wager removed or changed to nothing before it: (d)3 allows the removal) and an event
    -- after it put chips there. Such a wager stands as that event left it.
    SELECT *,
           coalesce(state_at_first_card, -1) <= 0 AND chips_after IS NOT NULL AS late_wager
    FROM original_states
),
originals AS (
    -- What is owed is the wager as it stood when the first card left the shoe. A late wager
    -- (placed after it: (d)3; GA (1)) stands at the amount it was placed with: on an area
    -- whose wager was removed before the first card too (an outside audit, session 38: that
    -- one was owed nothing, its collection NOT_OWED and the chips taken missing from
    -- conservation), and its player is the one who placed it then.
    SELECT
        table_id, shoe_id, round_no, seat, area, 'ORIGINAL' AS wager_kind,
        placed.player_id, placed.instrument,
        CASE WHEN late_wager THEN chips_after.cents ELSE placed.cents END AS placed_cents,
        greatest(owed_state, 0) AS amount_cents,
        owed_state = -1 AS removed,
        -- Any event after the first card, other than the one that made a late wager.
        events_after > CASE WHEN late_wager THEN 1 ELSE 0 END AS altered_after_first_card,
        late_wager AS late,
        placed_at, wager_seqs
    FROM (SELECT *,
                 CASE WHEN late_wager THEN chips_after.cents
                      ELSE coalesce(state_at_first_card, first_state_after) END AS owed_state,
                 -- the placement of the wager owed: the late one's when a placement made it,
                 -- else the one standing at (or removed before) the first card
                 CASE WHEN late_wager AND chips_after.type = 'WagerPlaced' THEN chips_after
                      ELSE placed_before END AS placed
          FROM original_owed)
),
placers AS (
    -- A raise belongs to the player of the wager it raises, the ORIGINAL row's (a wager placed
    -- on the area after the first card by another player, not owed, does not take it: an
    -- outside audit, session 39).
    SELECT table_id, shoe_id, round_no, seat, area, player_id FROM originals
),
raises AS (
    -- 13:47-20.31(d)12: chips added to the raise area; several RaisePlaced on one area add up.
    SELECT e.table_id, e.shoe_id, e.round_no, e.seat, e.area, 'RAISE' AS wager_kind,
           p.player_id, NULL::VARCHAR AS instrument,
           sum(e.amount_cents)::BIGINT AS placed_cents, sum(e.amount_cents)::BIGINT AS amount_cents,
           false AS removed, false AS altered_after_first_card, false AS late,
           min(e.occurred_at) AS placed_at, list_sort(list(e.seq)) AS wager_seqs
    FROM round_events AS e
    LEFT JOIN placers AS p
           ON p.table_id = e.table_id AND p.shoe_id IS NOT DISTINCT FROM e.shoe_id
          AND p.round_no IS NOT DISTINCT FROM e.round_no AND p.seat = e.seat AND p.area = e.area
    WHERE e.event_type = 'RaisePlaced'
    GROUP BY e.table_id, e.shoe_id, e.round_no, e.seat, e.area, p.player_id
),
wagered AS (
    SELECT * FROM originals
    UNION ALL BY NAME
    SELECT * FROM raises
),
choices AS (
    -- 13:47-20.31(g)3; 13:69F-6.7: after a third card exposed before "Raises closed", a player
    -- who voids the round gets the wager and any raise back. Every choice of the area, in game
    -- order (sql/macros.sql game_order); with_paytable keeps those the protocol counts.
    SELECT table_id, shoe_id, round_no, seat, area,
           list({'o': game_order(occurred_at, seq), 'log_offset': log_offset, 'choice': choice})
               AS choices
    FROM round_events
    WHERE event_type = 'VoidOrPlayChosen'
    GROUP BY table_id, shoe_id, round_no, seat, area
),
settled AS (
    SELECT
        table_id, shoe_id, round_no, seat, area, wager_kind,
        count(*) AS settlement_count,
        -- The outcome, or for several settlements all of them, e.g. 'WON+WON' for a double
        -- payment (WON, then LOST, then VOID; settlement_seqs gives their order).
        rtrim(repeat('WON+', count(*) FILTER (outcome = 'WON')::INTEGER)
              || repeat('LOST+', count(*) FILTER (outcome = 'LOST')::INTEGER)
              || repeat('VOID+', count(*) FILTER (outcome = 'VOID')::INTEGER), '+')
            AS actual_outcome,
        arg_max(odds, (seq, log_offset)) AS actual_odds,
        coalesce(sum(amount_cents) FILTER (outcome = 'WON'), 0)::BIGINT AS actual_paid_cents,
        coalesce(sum(amount_cents) FILTER (outcome = 'LOST'), 0)::BIGINT AS actual_collected_cents,
        coalesce(sum(amount_cents) FILTER (outcome = 'VOID'), 0)::BIGINT AS actual_returned_cents,
        count(*) FILTER (outcome = 'WON') AS won_settlements,
        min(occurred_at) AS settled_at,
        list_sort(list(seq)) AS settlement_seqs
    FROM round_events
    WHERE event_type = 'WagerSettled'
    GROUP BY table_id, shoe_id, round_no, seat, area, wager_kind
),
intruded AS (
    -- A card burned, or dealt for another round or none, inside the round (sql/intruders.sql,
    -- round_intruders_of: BURN_DURING_ROUND, CARD_OUTSIDE_ROUND): which card decided the round
    -- is in doubt, so its settlements are never confirmed (status IRREGULAR_ROUND).
    SELECT DISTINCT table_id, shoe_id, round_no, true AS cards_intruded
    FROM round_intruders_of(in_table, from_seq, to_seq)
),
keyed AS (
    SELECT
        coalesce(w.table_id, s.table_id) AS table_id, coalesce(w.shoe_id, s.shoe_id) AS shoe_id,
        coalesce(w.round_no, s.round_no) AS round_no, coalesce(w.seat, s.seat) AS seat,
        coalesce(w.area, s.area) AS area, coalesce(w.wager_kind, s.wager_kind) AS wager_kind,
        w.player_id, w.instrument, w.placed_cents, w.amount_cents,
        coalesce(w.removed, false) AS removed, w.table_id IS NULL AS no_wager,
        coalesce(w.altered_after_first_card, false) AS altered_after_first_card,
        coalesce(w.late, false) AS late, w.placed_at, w.wager_seqs,
        coalesce(s.settlement_count, 0) AS settlement_count, s.actual_outcome, s.actual_odds,
        coalesce(s.actual_paid_cents, 0) AS actual_paid_cents,
        coalesce(s.actual_collected_cents, 0) AS actual_collected_cents,
        coalesce(s.actual_returned_cents, 0) AS actual_returned_cents,
        coalesce(s.won_settlements, 0) AS won_settlements, s.settled_at,
        coalesce(s.settlement_seqs, []::BIGINT[]) AS settlement_seqs
    FROM wagered AS w
    -- NULL-safe on the round too: a wager and its settlement both recorded with no round are
    -- one row, as in a round (matched with `=`, they were two: the stake set aside as open
    -- and collected too, and the settlement NOT_OWED; a second read, session 44).
    FULL OUTER JOIN settled AS s
         ON s.table_id = w.table_id AND s.shoe_id IS NOT DISTINCT FROM w.shoe_id
        AND s.round_no IS NOT DISTINCT FROM w.round_no AND s.seat = w.seat AND s.area = w.area
        AND s.wager_kind = w.wager_kind
),
round_context AS (
    -- Per round: the dealer and cards (the rounds view's, from rounds_of), the shoe's decks and
    -- the paytable in force: the table's latest TableOpened before the round began.
    SELECT
        r.table_id, r.shoe_id, r.round_no, r.dealer, r.started_at, r.first_seq,
        r.left_rank, r.right_rank, r.middle_rank, r.kind, r.spread, r.voided, r.exposed_order, r.exposure_window_end,
        sh.decks,
        p.seq AS paytable_seq, p.profile, p.pays_spread_1, p.pays_spread_2, p.pays_spread_3,
        p.pays_spread_4_to_11, p.pays_three_of_a_kind, p.valid, p.violation
    FROM rounds_of(in_table, in_shoe, in_round, from_seq, to_seq, taps_from := taps_from) AS r
    LEFT JOIN shoe_decks_of(in_table, in_shoe, from_seq := shoe_from) AS sh  -- macros.sql
        USING (table_id, shoe_id)
    -- Only a TableOpened at or before the round began (its first card, else its first event,
    -- as its dealer: sql/rounds.sql; (d)5) can be in force for it: a table opened again between
    -- a wager and the first card deals the round at the new paytable (an outside audit,
    -- session 38).
    ASOF LEFT JOIN paytables_in_force_of(in_table, to_seq) AS p
        ON r.table_id = p.table_id AND coalesce(r.left_seq, r.first_seq) >= p.seq
),
with_paytable AS (
    SELECT
        k.*, r.dealer, coalesce(r.started_at, k.placed_at, k.settled_at) AS started_at,
        r.first_seq AS round_first_seq, r.left_rank, r.right_rank, r.middle_rank,
        r.kind AS hand, r.spread, coalesce(r.voided, false) AS round_voided,
        -- (g)3: the player's last choice between the exposure and the next third card
        -- (sql/cards.sql, in_exposure_window); a choice with no card exposed, or made after
        -- that card was seen, voids nothing: the cards decide.
        coalesce(list_sort(list_filter(c.choices, lambda x: in_exposure_window(
                     x.o, r.exposed_order, r.exposure_window_end)))[-1].choice = 'VOID', false)
            AS voided_by_choice, r.decks,
        r.paytable_seq, r.profile,
        -- No TableOpened yet: the standard table of 13:47-20.31(e), (d)9 is assumed, and the
        -- row says so in paytable_violation.
        coalesce(r.pays_spread_1, standard_line('spread_1')) AS pays_spread_1,
        coalesce(r.pays_spread_2, standard_line('spread_2')) AS pays_spread_2,
        coalesce(r.pays_spread_3, standard_line('spread_3')) AS pays_spread_3,
        coalesce(r.pays_spread_4_to_11, standard_line('spread_4_to_11')) AS pays_spread_4_to_11,
        coalesce(r.pays_three_of_a_kind, standard_line('three_of_a_kind')) AS pays_three_of_a_kind,
        coalesce(r.valid, false) AS paytable_valid,
        CASE WHEN r.round_no IS NULL
             THEN 'recorded outside any round: no paytable applies'
             WHEN r.paytable_seq IS NULL
             THEN 'no TableOpened before this round: the standard paytable of 13:47-20.31(e) is assumed'
             ELSE r.violation END AS paytable_violation
    FROM keyed AS k
    LEFT JOIN round_context AS r
           ON r.table_id = k.table_id AND r.shoe_id IS NOT DISTINCT FROM k.shoe_id
          AND r.round_no = k.round_no
    LEFT JOIN choices AS c
           ON c.table_id = k.table_id AND c.shoe_id IS NOT DISTINCT FROM k.shoe_id
          AND c.round_no = k.round_no AND c.seat = k.seat AND c.area = k.area
),
with_intruders AS (
    SELECT p.*, coalesce(x.cards_intruded, false) AS cards_intruded
    FROM with_paytable AS p
    LEFT JOIN intruded AS x
           ON x.table_id = p.table_id AND x.shoe_id IS NOT DISTINCT FROM p.shoe_id
          AND x.round_no = p.round_no
),
decided AS (
    SELECT
        *,
        CASE
            WHEN no_wager OR removed THEN NULL         -- nothing owed (13:47-20.31(d)3)
            -- 13:69F-34.16(n) by analogy, (d)7, (d)10: a void the rules allow (sql/rounds.sql,
            -- void_allowed; the rounds view's `voided`); one they do not allow voids nothing.
            WHEN round_voided THEN 'VOID'
            WHEN voided_by_choice THEN 'VOID'          -- 13:47-20.31(g)3; 13:69F-6.7
            WHEN hand IS NULL THEN NULL                -- the first two cards are not both out
            WHEN hand = 'consecutive' THEN 'VOID'      -- (d)7; GA (5): tie hand
            WHEN middle_rank IS NULL THEN NULL         -- no third card yet
            WHEN hand = 'pair' THEN CASE WHEN middle_rank = left_rank
                                         THEN 'WON'    -- (d)9; GA (7): three of a kind
                                         ELSE 'VOID'   -- (d)10; GA (8): tie hand
                                    END
            -- (d)14; GA (11)(a): strictly between wins, equal to either card loses.
            WHEN middle_rank > least(left_rank, right_rank)
                 AND middle_rank < greatest(left_rank, right_rank) THEN 'WON'
            ELSE 'LOST'
        END AS expected_outcome
    FROM with_intruders
),
priced AS (
    SELECT
        *,
        CASE WHEN expected_outcome IS DISTINCT FROM 'WON' THEN NULL
             WHEN hand = 'pair' THEN pays_three_of_a_kind          -- (d)9; GA (7)
             -- (e); GA (11)(b): winning wagers and raise wagers are paid by the spread.
             WHEN spread = 1 THEN pays_spread_1
             WHEN spread = 2 THEN pays_spread_2
             WHEN spread = 3 THEN pays_spread_3
             ELSE pays_spread_4_to_11 END AS expected_odds
    FROM decided
),
expected AS (
    SELECT
        *,
        CASE WHEN expected_outcome = 'WON' THEN amount_cents * expected_odds ELSE 0 END::BIGINT
            AS expected_paid_cents,
        CASE WHEN expected_outcome = 'LOST' THEN amount_cents ELSE 0 END::BIGINT
            AS expected_collected_cents,
        CASE WHEN expected_outcome = 'VOID' THEN amount_cents ELSE 0 END::BIGINT
            AS expected_returned_cents
    FROM priced
)
SELECT
    table_id, shoe_id, round_no, seat, area, wager_kind, player_id, instrument, dealer,
    started_at, decks, profile, paytable_seq, paytable_valid, paytable_violation,
    pays_spread_1, pays_spread_2, pays_spread_3, pays_spread_4_to_11, pays_three_of_a_kind,
    left_rank, right_rank, middle_rank, hand, spread,
    placed_cents, coalesce(amount_cents, 0)::BIGINT AS amount_cents, removed, late,
    altered_after_first_card, voided_by_choice, round_voided,
    expected_outcome, expected_odds, expected_paid_cents, expected_collected_cents,
    expected_returned_cents,
    settlement_count, actual_outcome, actual_odds, actual_paid_cents, actual_collected_cents,
    actual_returned_cents,
    -- A winner's stake comes back with the winnings but is not in WagerSettled's amount; each
    -- WON settlement hands it back once (the conservation check counts it).
    CASE WHEN expected_outcome = 'WON' THEN amount_cents ELSE 0 END::BIGINT
        AS expected_winner_stake_cents,
    (won_settlements * coalesce(amount_cents, 0))::BIGINT AS actual_winner_stake_cents,
    expected_collected_cents - expected_paid_cents AS expected_net_win_cents,
    actual_collected_cents - actual_paid_cents AS actual_net_win_cents,
    (actual_collected_cents - actual_paid_cents)
        - (expected_collected_cents - expected_paid_cents) AS net_win_difference_cents,
    CASE
        WHEN no_wager OR removed THEN CASE WHEN settlement_count > 0 THEN 'NOT_OWED'
                                           ELSE 'REMOVED' END
        WHEN expected_outcome IS NULL THEN CASE WHEN settlement_count > 0
                                                THEN 'SETTLED_BEFORE_DECISION'
                                                ELSE 'IN_PLAY' END
        WHEN settlement_count = 0 THEN 'UNSETTLED'
        WHEN settlement_count > 1 THEN 'DOUBLE_SETTLED'
        WHEN actual_outcome <> expected_outcome THEN 'WRONG_OUTCOME'
        WHEN actual_paid_cents <> expected_paid_cents
             OR actual_collected_cents <> expected_collected_cents
             OR actual_returned_cents <> expected_returned_cents THEN 'WRONG_AMOUNT'
        -- odds are optional on WagerSettled ("X to 1" when WON, events/reddog/model.py): the
        -- right amount with none recorded is right; only other odds recorded are wrong
        WHEN expected_outcome = 'WON' AND actual_odds <> expected_odds
        THEN 'WRONG_ODDS'
        -- BURN_DURING_ROUND, CARD_OUTSIDE_ROUND (intruded above): settled as the recorded
        -- cards say, but a card left the shoe inside the round where the rules allow none.
        WHEN cards_intruded THEN 'IRREGULAR_ROUND'
        ELSE 'OK'
    END AS status,
    wager_seqs, settlement_seqs, round_first_seq
FROM expected;
-- No ORDER BY here: sorting 300,000 rows per million events costs a sixth of the view's time
-- and every aggregate over it would pay it. Add ORDER BY table_id, shoe_id, round_no, seat,
-- area, wager_kind when reading rows (pitlog ledger does).

CREATE OR REPLACE VIEW ledger AS
SELECT * FROM ledger_of(NULL, NULL, NULL, NULL, NULL);

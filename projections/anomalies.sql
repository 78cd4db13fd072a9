-- pitlog anomalies: every rule code of the catalogue in DESIGN.md, decided in plain DuckDB SQL
-- over the raw `events` table and the views of views.sql and ledger.sql (created before this
-- file). One view per code, `anomaly_<code>`, and `anomalies`, their UNION ALL with the
-- severity and the rule of each code. docs/anomalies.md explains every decision.
--
-- Every row: code, severity, table_id, shoe_id, round_no, seqs (the sequence numbers of the
-- events that prove it), explanation (one line to read aloud), rule, occurred_at.
-- Within a table, events are ordered by seq (gapless per table), then log offset.
--
-- "Finished": a round whose table recorded anything after the round's last event. What a
-- round LACKS (an announcement, a settlement, the rack) is judged only once it is finished,
-- so a live table's round in progress is never flagged for what is still to come.

-- The catalogue: code, severity, rule (DESIGN.md's anomaly catalogue, word for word).
CREATE OR REPLACE VIEW anomaly_codes AS
SELECT code, severity, CASE severity WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END AS severity_rank,
       rule, flags
FROM (VALUES
    ('EARLY_THIRD_CARD', 'medium', '13:47-20.31(g)3; 13:69F-6.7', 'a third card exposed before "Raises closed"'),
    ('EARLY_EXPOSURE_MISHANDLED', 'high', '13:47-20.31(g)3; 13:69F-6.7', 'after an early exposure: the exposed card used, no void-or-play choice offered, or a voiding player not refunded the wager and raise before the new third card'),
    ('LATE_WAGER', 'high', '13:47-20.31(d)3; GA (1)', 'wager placed after the first card left the shoe'),
    ('WAGER_ALTERED', 'high', '13:47-20.31(d)6; GA (4)', 'wager changed or removed after the first card, before its decision'),
    ('RAISE_OVER_LIMIT', 'medium', '13:47-20.31(d)12', 'raise larger than the original wager'),
    ('RAISE_NOT_ALLOWED', 'medium', '13:47-20.31(d)12', 'raise on a consecutive or pair round, or with no original wager'),
    ('LATE_RAISE', 'high', '13:47-20.31(d)12-13; GA (11)', 'raise after "Raises closed"'),
    ('WRONG_PAYOUT', 'high', '13:47-20.31(e); GA (11)(b)', 'a winner paid at other than the table''s paytable, under or over'),
    ('BELOW_MINIMUM_ODDS', 'high', '13:47-20.31(e)-(f); GA (11)(c)', 'a paytable or payout below the jurisdiction''s minimum'),
    ('WRONG_SETTLEMENT', 'high', '13:47-20.31(d)7, 10, 14', 'a winner collected, a loser paid, or a void/tie not returned'),
    ('WRONG_ANNOUNCEMENT', 'low', '13:47-20.31(d)7-11, 13', 'an announcement missing or contradicting the cards'),
    ('THIRD_CARD_ON_CONSECUTIVE', 'medium', '13:47-20.31(d)7', 'a third card drawn in a consecutive round'),
    ('PAIR_WITHOUT_THIRD_CARD', 'medium', '13:47-20.31(d)8', 'a pair not followed at once by the third card'),
    ('MISSING_BURN', 'medium', '13:47-20.31(d)1', 'no burn after a new shoe or a dealer change'),
    ('FACE_UP_CARD_USED', 'high', '13:47-20.31(g)1', 'a card found face up in the shoe played instead of discarded'),
    ('NO_RESHUFFLE_AFTER_CUT_CARD', 'medium', '13:47-20.31(d)16; GA (13)', 'a new round dealt after the cutting card was reached'),
    ('ROUND_ABANDONED_AT_CUT_CARD', 'medium', '13:47-20.31(d)16', 'the round stopped at the cutting card instead of completed'),
    ('DISCARD_RACK_ORDER', 'medium', '13:47-20.31(d)15; GA (12)', 'cards racked out of dealing order, or missing from the rack'),
    ('CARD_UNACCOUNTED', 'high', '13:47-20.31(d)15', 'a card that left the shoe never reached the rack'),
    ('EXTRA_CARD', 'high', '13:47-20.31(a)2', 'more copies of a card than the shoe''s decks hold (a card introduced)'),
    ('MULTIPLE_BETTING_AREAS', 'medium', '13:47-20.31(g)4; 13:69F-6.8', 'one player on more than one area without permission'),
    ('CALL_BET', 'medium', 'GA (2)', 'a verbal wager where call bets are forbidden'),
    ('DEVICE_FAULT_NOT_VOIDED', 'high', '13:69F-34.16(m)-(n) by analogy', 'a shuffler or shoe fault not followed by void and reshuffle'),
    ('SEQUENCE_GAP', 'high', 'integrity', 'a missing sequence number in a table stream (an event lost or deleted)'),
    ('CHAIN_BROKEN', 'high', 'integrity', 'a hash link that does not verify (an event altered)'),
    ('HOLD_VARIANCE', 'low', 'statistical reports in the style of the minimum internal control standards', 'hold for a table, shift or day outside statistical bounds of theoretical'),
    ('OUTCOME_FREQUENCY', 'low', 'deck-integrity statistics', 'pairs, trips or spreads off their combinatorial frequencies (chi-square)')
) AS catalogue(code, severity, rule, flags);

-- A card-event label for explanations: "7S".
CREATE OR REPLACE MACRO anomaly_seats(seats) AS
    CASE WHEN len(seats) = 1 THEN 'seat ' ELSE 'seats ' END
    || array_to_string(list_sort(list_distinct(seats)), ', ');

-- Per round: the views' `rounds` row plus the marks the checks need.
CREATE OR REPLACE VIEW anomaly_round_facts AS
WITH marks AS (
    SELECT
        table_id, shoe_id, round_no,
        -- 13:47-20.31(d)3, (d)6: the first card out of the shoe (as the ledger counts it).
        min(seq) FILTER (event_type IN ('CardDrawn', 'CardDrawnInError')) AS first_card_seq,
        arg_min(card_label(rank, suit), seq) FILTER (event_type IN ('CardDrawn', 'CardDrawnInError')) AS first_card,
        min(seq) FILTER (event_type = 'Announced' AND meaning = 'RAISES_CLOSED') AS raises_closed_seq,
        min(seq) FILTER (event_type = 'CuttingCardReached') AS cut_seq,
        min(seq) FILTER (event_type = 'WagerSettled') AS first_settlement_seq,
        min(seq) FILTER (event_type = 'CardDrawn' AND destination = 'MIDDLE') AS first_middle_seq,
        max(seq) FILTER (event_type = 'CardDrawn' AND destination = 'MIDDLE') AS last_middle_seq,
        list(seq ORDER BY seq) FILTER (event_type = 'CardDrawn') AS card_seqs,
        list(seq ORDER BY seq) FILTER (event_type = 'CardDrawn' AND destination = 'MIDDLE') AS middle_seqs,
        min(seq) FILTER (event_type = 'CardsRacked') AS racked_seq
    FROM events
    WHERE round_no IS NOT NULL
    GROUP BY table_id, shoe_id, round_no
),
table_end AS (
    SELECT table_id, max(seq) AS table_last_seq FROM events GROUP BY table_id
)
SELECT r.*, m.first_card_seq, m.first_card, m.raises_closed_seq, m.cut_seq,
       m.first_settlement_seq, m.first_middle_seq, m.last_middle_seq,
       coalesce(m.card_seqs, []::BIGINT[]) AS card_seqs,
       coalesce(m.middle_seqs, []::BIGINT[]) AS middle_seqs, m.racked_seq,
       r.last_seq < t.table_last_seq AS finished
FROM rounds AS r
JOIN marks AS m USING (table_id, shoe_id, round_no)
JOIN table_end AS t USING (table_id);

-- Spread rounds whose third card came out before "Raises closed" (13:47-20.31(g)3), with the
-- new third card: the first card to the middle box after "Raises closed".
CREATE OR REPLACE VIEW anomaly_early_exposures AS
SELECT
    f.table_id, f.shoe_id, f.round_no, f.finished, f.started_at,
    min(e.seq) FILTER (f.raises_closed_seq IS NULL OR e.seq < f.raises_closed_seq) AS exposed_seq,
    arg_min(card_label(e.rank, e.suit), e.seq)
        FILTER (f.raises_closed_seq IS NULL OR e.seq < f.raises_closed_seq) AS exposed_card,
    arg_min(e.occurred_at, e.seq)
        FILTER (f.raises_closed_seq IS NULL OR e.seq < f.raises_closed_seq) AS exposed_at,
    f.raises_closed_seq,
    min(e.seq) FILTER (e.seq > f.raises_closed_seq) AS new_third_seq,
    arg_min(card_label(e.rank, e.suit), e.seq) FILTER (e.seq > f.raises_closed_seq) AS new_third_card,
    f.left_card, f.right_card, f.spread
FROM anomaly_round_facts AS f
JOIN events AS e USING (table_id, shoe_id, round_no)
WHERE f.kind = 'spread' AND e.event_type = 'CardDrawn' AND e.destination = 'MIDDLE'
GROUP BY ALL
HAVING exposed_seq IS NOT NULL;

-- EARLY_THIRD_CARD: a spread round's card to the middle box before "Raises closed" was said.
CREATE OR REPLACE VIEW anomaly_early_third_card AS
SELECT 'EARLY_THIRD_CARD' AS code, table_id, shoe_id, round_no,
       list_filter([exposed_seq, raises_closed_seq], lambda s: s IS NOT NULL) AS seqs,
       printf('Third card %s exposed before "Raises closed" (%s and %s, spread %d)%s',
              exposed_card, left_card, right_card, spread,
              CASE WHEN raises_closed_seq IS NULL THEN '; "Raises closed" was never said' ELSE '' END)
           AS explanation,
       exposed_at AS occurred_at
FROM anomaly_early_exposures;

-- EARLY_EXPOSURE_MISHANDLED (13:47-20.31(g)3): after the exposure, each player with a wager
-- at stake must choose (VoidOrPlayChosen) before the new third card, and a player who voids
-- must get the wager and any raise back (WagerSettled VOID) before it; the exposed card itself
-- must never decide the round (a new third card after "Raises closed").
CREATE OR REPLACE VIEW anomaly_early_exposure_mishandled AS
WITH stakes AS (
    -- What each area had at stake when the card was exposed: the last wager placed or changed
    -- (nothing if removed), and the raises placed before it.
    SELECT x.table_id, x.shoe_id, x.round_no, e.seat, e.area,
           arg_max(CASE WHEN e.event_type = 'WagerRemoved' THEN 0 ELSE e.amount_cents END, e.seq)
               FILTER (e.event_type <> 'RaisePlaced') AS wager_cents,
           coalesce(sum(e.amount_cents) FILTER (e.event_type = 'RaisePlaced'), 0) AS raise_cents
    FROM anomaly_early_exposures AS x
    JOIN events AS e USING (table_id, shoe_id, round_no)
    WHERE e.event_type IN ('WagerPlaced', 'WagerChanged', 'WagerRemoved', 'RaisePlaced')
      AND e.seq < x.exposed_seq
    GROUP BY ALL
),
answers AS (
    -- Choices and refunds between the exposure and the new third card.
    SELECT x.table_id, x.shoe_id, x.round_no, e.seat, e.area,
           arg_max(e.choice, e.seq) FILTER (e.event_type = 'VoidOrPlayChosen') AS choice,
           arg_max(e.seq, e.seq) FILTER (e.event_type = 'VoidOrPlayChosen') AS choice_seq,
           coalesce(sum(e.amount_cents) FILTER (e.event_type = 'WagerSettled' AND e.outcome = 'VOID'
                                               AND e.wager_kind = 'ORIGINAL'), 0) AS wager_back,
           coalesce(sum(e.amount_cents) FILTER (e.event_type = 'WagerSettled' AND e.outcome = 'VOID'
                                               AND e.wager_kind = 'RAISE'), 0) AS raise_back
    FROM anomaly_early_exposures AS x
    JOIN events AS e USING (table_id, shoe_id, round_no)
    WHERE e.event_type IN ('VoidOrPlayChosen', 'WagerSettled')
      AND e.seq > x.exposed_seq AND e.seq < coalesce(x.new_third_seq, 9223372036854775807)
    GROUP BY ALL
),
per_area AS (
    SELECT s.table_id, s.shoe_id, s.round_no, s.seat, s.area, s.wager_cents, s.raise_cents,
           a.choice, a.choice_seq,
           a.choice IS NULL AS no_choice,
           a.choice = 'VOID' AND (coalesce(a.wager_back, 0) < s.wager_cents
                                  OR coalesce(a.raise_back, 0) < s.raise_cents) AS not_refunded
    FROM stakes AS s
    LEFT JOIN answers AS a USING (table_id, shoe_id, round_no, seat, area)
    WHERE s.wager_cents > 0
),
per_round AS (
    SELECT table_id, shoe_id, round_no,
           list(seat ORDER BY seat, area) FILTER (no_choice) AS no_choice_seats,
           list(seat ORDER BY seat, area) FILTER (not_refunded) AS unrefunded_seats,
           list(choice_seq ORDER BY choice_seq) FILTER (not_refunded) AS unrefunded_seqs
    FROM per_area
    GROUP BY ALL
)
SELECT 'EARLY_EXPOSURE_MISHANDLED' AS code, x.table_id, x.shoe_id, x.round_no,
       list_filter([x.exposed_seq, x.new_third_seq], lambda s: s IS NOT NULL)
           || coalesce(p.unrefunded_seqs, []::BIGINT[]) AS seqs,
       'After ' || x.exposed_card || ' was exposed early: ' || concat_ws('; ',
           CASE WHEN x.new_third_seq IS NULL THEN 'it was used as the third card instead of discarded' END,
           CASE WHEN len(p.no_choice_seats) > 0
                THEN 'no void-or-play choice for ' || anomaly_seats(p.no_choice_seats) END,
           CASE WHEN len(p.unrefunded_seats) > 0
                THEN anomaly_seats(p.unrefunded_seats) || ' voided but did not get the wager and raise back before the new third card'
                     || coalesce(' ' || x.new_third_card, '') END) AS explanation,
       x.exposed_at AS occurred_at
FROM anomaly_early_exposures AS x
LEFT JOIN per_round AS p USING (table_id, shoe_id, round_no)
WHERE x.finished
  AND (x.new_third_seq IS NULL OR len(p.no_choice_seats) > 0 OR len(p.unrefunded_seats) > 0);

-- Wager events after the first card (13:47-20.31(d)3, (d)6; GA (1), (4)), with whether the
-- area held a wager before the first card and whether the wager was decided before the event.
CREATE OR REPLACE VIEW anomaly_wager_moves AS
WITH moves AS (
    SELECT e.table_id, e.shoe_id, e.round_no, e.seat, e.area, e.seq, e.event_type,
           e.amount_cents, e.instrument, e.occurred_at, f.first_card_seq, f.first_card
    FROM events AS e
    JOIN anomaly_round_facts AS f USING (table_id, shoe_id, round_no)
    WHERE e.event_type IN ('WagerPlaced', 'WagerChanged', 'WagerRemoved')
      AND e.seq > f.first_card_seq
)
SELECT m.*,
       coalesce(bool_or(b.event_type = 'WagerPlaced' AND b.seq < m.first_card_seq), false) AS had_wager,
       coalesce(bool_or(b.event_type = 'WagerSettled' AND b.wager_kind = 'ORIGINAL' AND b.seq < m.seq),
                false) AS decided
FROM moves AS m
LEFT JOIN events AS b
    ON b.table_id = m.table_id AND b.shoe_id = m.shoe_id AND b.round_no = m.round_no
   AND b.seat = m.seat AND b.area = m.area
   AND b.event_type IN ('WagerPlaced', 'WagerSettled')
GROUP BY ALL;

CREATE OR REPLACE VIEW anomaly_late_wager AS
SELECT 'LATE_WAGER' AS code, table_id, shoe_id, round_no, [first_card_seq, seq] AS seqs,
       printf('Seat %d placed %s (%s) on area %d after the first card %s left the shoe',
              seat, dollars(amount_cents), replace(lower(instrument), '_', ' '), area, first_card)
           AS explanation,
       occurred_at
FROM anomaly_wager_moves
WHERE event_type = 'WagerPlaced' AND NOT had_wager;

CREATE OR REPLACE VIEW anomaly_wager_altered AS
SELECT 'WAGER_ALTERED' AS code, table_id, shoe_id, round_no, [first_card_seq, seq] AS seqs,
       printf('Seat %d %s on area %d after the first card %s left the shoe, before its decision',
              seat, CASE event_type WHEN 'WagerRemoved' THEN 'removed the wager'
                                    WHEN 'WagerChanged' THEN 'changed the wager to ' || dollars(amount_cents)
                                    ELSE 'added ' || dollars(amount_cents) || ' to the wager' END,
              area, first_card) AS explanation,
       occurred_at
FROM anomaly_wager_moves
WHERE NOT decided AND (event_type <> 'WagerPlaced' OR had_wager);

-- LATE_RAISE (13:47-20.31(d)12-13; GA (11)): a raise placed after "Raises closed".
CREATE OR REPLACE VIEW anomaly_late_raise AS
SELECT 'LATE_RAISE' AS code, e.table_id, e.shoe_id, e.round_no,
       [f.raises_closed_seq, e.seq] AS seqs,
       printf('Seat %d raised %s on area %d after "Raises closed"%s', e.seat, dollars(e.amount_cents),
              e.area, CASE WHEN e.seq > f.first_middle_seq
                           THEN ', with the third card ' || f.middle_card || ' already out' ELSE '' END)
           AS explanation,
       e.occurred_at
FROM events AS e
JOIN anomaly_round_facts AS f USING (table_id, shoe_id, round_no)
WHERE e.event_type = 'RaisePlaced' AND f.kind = 'spread' AND e.seq > f.raises_closed_seq;

-- The money checks, all read from the ledger (ledger.sql: one row per wager and per raise with
-- the decision the rules require next to the settlements made). One pass over the ledger:
--   WRONG_PAYOUT: a winner (the rules say WON, and it was paid as WON) paid other than the
--     table's line, under or over, or recorded at other odds (13:47-20.31(e); GA (11)(b));
--   BELOW_MINIMUM_ODDS: a winner paid exactly at a line of an illegal paytable that is below
--     the standard odds (13:47-20.31(e)-(f); GA (11)(c)); a payout that differs from the table
--     is WRONG_PAYOUT instead, so one payout raises at most one of the two;
--   WRONG_SETTLEMENT: the wrong outcome (a winner collected, a loser paid, a void kept), a
--     short collection or return, a wager never settled in a finished round, one settled twice,
--     or a settlement with no wager (13:47-20.31(d)7, 10, 14);
--   RAISE_OVER_LIMIT: raises on an area above its original wager (13:47-20.31(d)12);
--   RAISE_NOT_ALLOWED: a raise on a consecutive or pair round, or with no original wager.
-- Settlements made before the round's decision (a pair with no third card, a round abandoned
-- at the cutting card) are left to PAIR_WITHOUT_THIRD_CARD and ROUND_ABANDONED_AT_CUT_CARD.
CREATE OR REPLACE VIEW anomaly_money AS
WITH l AS (
    SELECT l.*,
           max(CASE WHEN l.wager_kind = 'ORIGINAL' AND l.status NOT IN ('NOT_OWED', 'REMOVED')
                    THEN l.amount_cents END)
               OVER (PARTITION BY l.table_id, l.shoe_id, l.round_no, l.seat, l.area) AS original_cents,
           CASE WHEN l.hand = 'pair' THEN 'three of a kind' ELSE printf('spread %d', l.spread) END AS line,
           -- The standard table's odds for this win: 13:47-20.31(e), (d)9.
           CASE WHEN l.hand = 'pair' THEN 11 WHEN l.spread = 1 THEN 5 WHEN l.spread = 2 THEN 4
                WHEN l.spread = 3 THEN 2 ELSE 1 END AS standard_odds,
           CASE l.wager_kind WHEN 'RAISE' THEN 'raise' ELSE 'wager' END AS what,
           f.finished, f.left_card, f.right_card
    FROM ledger AS l
    LEFT JOIN anomaly_round_facts AS f USING (table_id, shoe_id, round_no)
),
judged AS (
    SELECT *,
        CASE
            WHEN status IN ('WRONG_AMOUNT', 'WRONG_ODDS') AND expected_outcome = 'WON'
                THEN 'WRONG_PAYOUT'
            WHEN status = 'OK' AND expected_outcome = 'WON' AND NOT paytable_valid
                 AND paytable_seq IS NOT NULL AND expected_odds < standard_odds
                THEN 'BELOW_MINIMUM_ODDS'
            WHEN status IN ('WRONG_OUTCOME', 'WRONG_AMOUNT', 'DOUBLE_SETTLED', 'NOT_OWED')
                 OR (status = 'UNSETTLED' AND finished)
                THEN 'WRONG_SETTLEMENT'
        END AS money_code,
        CASE
            WHEN wager_kind = 'RAISE' AND status <> 'NOT_OWED' AND hand IN ('consecutive', 'pair')
                THEN 'RAISE_NOT_ALLOWED'
            WHEN wager_kind = 'RAISE' AND status <> 'NOT_OWED' AND coalesce(original_cents, 0) = 0
                THEN 'RAISE_NOT_ALLOWED'
            WHEN wager_kind = 'RAISE' AND status <> 'NOT_OWED' AND amount_cents > original_cents
                THEN 'RAISE_OVER_LIMIT'
        END AS raise_code
    FROM l
),
found AS (
    SELECT money_code AS code, *,
        CASE money_code
            WHEN 'WRONG_PAYOUT' THEN printf(
                'Seat %d %s of %s won on %s: paid %s at %s to 1, the table pays %s at %d to 1',
                seat, what, dollars(amount_cents), line, dollars(actual_paid_cents),
                coalesce(CAST(actual_odds AS VARCHAR), '?'), dollars(expected_paid_cents), expected_odds)
            WHEN 'BELOW_MINIMUM_ODDS' THEN printf(
                'Seat %d %s of %s won on %s and was paid %s at the table''s %d to 1, below the minimum %d to 1 (%s)',
                seat, what, dollars(amount_cents), line, dollars(actual_paid_cents), expected_odds,
                standard_odds, profile)
            ELSE printf('Seat %d %s of %s %s', seat, what, dollars(amount_cents),
                CASE status
                    WHEN 'UNSETTLED' THEN 'was never settled; it should have '
                    WHEN 'DOUBLE_SETTLED' THEN printf('was settled %d times (%s); it should have ',
                                                      settlement_count, actual_outcome)
                    WHEN 'NOT_OWED' THEN printf('was settled as %s, but no wager was on area %d',
                                                actual_outcome, area)
                    ELSE printf('was settled %s (paid %s, collected %s, returned %s); it should have ',
                                actual_outcome, dollars(actual_paid_cents),
                                dollars(actual_collected_cents), dollars(actual_returned_cents))
                END
                || CASE WHEN status = 'NOT_OWED' THEN ''
                        WHEN expected_outcome = 'WON'
                        THEN printf('won %s at %d to 1', dollars(expected_paid_cents), expected_odds)
                        WHEN expected_outcome = 'LOST'
                        THEN printf('lost (%s collected)', dollars(expected_collected_cents))
                        ELSE printf('been returned (%s)', dollars(expected_returned_cents)) END)
        END AS explanation
    FROM judged WHERE money_code IS NOT NULL
    UNION ALL BY NAME
    SELECT raise_code AS code, *,
        CASE
            WHEN raise_code = 'RAISE_OVER_LIMIT' THEN printf(
                'Seat %d raised %s on area %d, more than the original wager of %s',
                seat, dollars(amount_cents), area, dollars(original_cents))
            WHEN hand IN ('consecutive', 'pair') THEN printf(
                'Seat %d raised %s on area %d in a %s round (%s and %s): raises are for a spread only',
                seat, dollars(amount_cents), area, hand, left_card, right_card)
            ELSE printf('Seat %d raised %s on area %d with no original wager there',
                        seat, dollars(amount_cents), area)
        END AS explanation
    FROM judged WHERE raise_code IS NOT NULL
)
SELECT f.code, f.table_id, f.shoe_id, f.round_no,
       CASE WHEN f.code IN ('RAISE_OVER_LIMIT', 'RAISE_NOT_ALLOWED')
            THEN coalesce(f.wager_seqs, []::BIGINT[])
            ELSE list_sort(coalesce(f.wager_seqs, []::BIGINT[]) || coalesce(f.settlement_seqs, []::BIGINT[])) END AS seqs,
       f.explanation,
       coalesce(e.occurred_at, f.started_at) AS occurred_at,
       f.seat, f.area, f.wager_kind
FROM found AS f
LEFT JOIN events AS e
    ON e.table_id = f.table_id
   AND e.seq = CASE WHEN f.code IN ('RAISE_OVER_LIMIT', 'RAISE_NOT_ALLOWED') THEN f.wager_seqs[-1]
                    ELSE coalesce(f.settlement_seqs[-1], f.wager_seqs[-1]) END;

-- BELOW_MINIMUM_ODDS on the paytable itself: a TableOpened whose paytable its profile does not
-- allow (ledger.sql's `paytables` view gives the reason, word for word validate_paytable's).
CREATE OR REPLACE VIEW anomaly_illegal_paytable AS
SELECT 'BELOW_MINIMUM_ODDS' AS code, p.table_id, e.shoe_id, e.round_no, [p.seq] AS seqs,
       'Table opened with an illegal paytable: ' || p.violation AS explanation,
       p.opened_at AS occurred_at
FROM paytables AS p
JOIN events AS e ON e.table_id = p.table_id AND e.seq = p.seq AND e.event_type = 'TableOpened'
WHERE NOT p.valid;

-- WRONG_ANNOUNCEMENT (13:47-20.31(d)7-11, 13; GA (5)-(11)): the structured meaning of each
-- announcement against the cards (the phrase's wording is not judged). One row per announcement
-- that contradicts the cards, and one per announcement a finished round lacks:
--   the first two cards: "consecutive", "pair" or "spread N" with N the spread;
--   a pair's third card: "three of a kind" or "no three of a kind";
--   a spread's third card: its value, said after it (the last card to the middle box before
--   the announcement is the one announced).
-- "Raises closed" missing before a third card is EARLY_THIRD_CARD's finding, not this one.
CREATE OR REPLACE VIEW anomaly_wrong_announcement AS
WITH middles AS (
    SELECT table_id, shoe_id, round_no, seq, rank FROM events
    WHERE event_type = 'CardDrawn' AND destination = 'MIDDLE' AND round_no IS NOT NULL
),
said AS (
    SELECT a.table_id, a.shoe_id, a.round_no, a.seq, a.occurred_at, a.phrase, a.meaning, a."value",
           f.kind, f.spread, f.left_rank, f.left_card, f.right_card, f.voided, f.finished,
           m.rank AS middle_rank_before  -- the last card to the middle box before it was said
    FROM events AS a
    JOIN anomaly_round_facts AS f USING (table_id, shoe_id, round_no)
    ASOF LEFT JOIN middles AS m
        ON m.table_id = a.table_id AND m.shoe_id = a.shoe_id AND m.round_no = a.round_no
       AND a.seq > m.seq
    WHERE a.event_type = 'Announced' AND f.kind IS NOT NULL
),
contradictions AS (
    SELECT table_id, shoe_id, round_no, [seq] AS seqs, occurred_at,
           printf('"%s" (%s%s) contradicts the cards %s and %s%s', phrase, lower(meaning),
                  coalesce(' ' || CAST("value" AS VARCHAR), ''), left_card, right_card,
                  CASE WHEN meaning IN ('THREE_OF_A_KIND', 'NO_THREE_OF_A_KIND', 'THIRD_CARD')
                            AND middle_rank_before IS NOT NULL
                       THEN ' with the third card ' || CASE middle_rank_before WHEN 11 THEN 'J' WHEN 12 THEN 'Q'
                            WHEN 13 THEN 'K' WHEN 14 THEN 'A' ELSE CAST(middle_rank_before AS VARCHAR) END
                       ELSE '' END) AS explanation
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
),
per_round AS (
    SELECT f.table_id, f.shoe_id, f.round_no, f.kind, f.left_card, f.right_card, f.spread,
           f.middle_card, f.last_middle_seq, f.card_seqs, f.ended_at,
           count(*) FILTER (a.meaning IN ('CONSECUTIVE', 'PAIR', 'SPREAD')) AS kind_said,
           count(*) FILTER (a.meaning IN ('THREE_OF_A_KIND', 'NO_THREE_OF_A_KIND')
                            AND a.seq > f.last_middle_seq) AS outcome_said,
           count(*) FILTER (a.meaning = 'THIRD_CARD' AND a.seq > f.last_middle_seq) AS value_said
    FROM (SELECT * FROM anomaly_round_facts WHERE kind IS NOT NULL AND finished AND NOT voided) AS f
    LEFT JOIN events AS a
        ON a.table_id = f.table_id AND a.shoe_id IS NOT DISTINCT FROM f.shoe_id
       AND a.round_no = f.round_no AND a.event_type = 'Announced'
    GROUP BY ALL
),
missing AS (
    SELECT table_id, shoe_id, round_no, card_seqs[:2] AS seqs, ended_at AS occurred_at,
           printf('No "%s" announced after %s and %s',
                  CASE kind WHEN 'consecutive' THEN 'consecutive' WHEN 'pair' THEN 'pair'
                            ELSE printf('spread %d', spread) END, left_card, right_card) AS explanation
    FROM per_round WHERE kind_said = 0
    UNION ALL
    SELECT table_id, shoe_id, round_no, [last_middle_seq], ended_at,
           printf('No "three of a kind" or "no three of a kind" announced after the pair %s and %s drew %s',
                  left_card, right_card, middle_card)
    FROM per_round WHERE kind = 'pair' AND last_middle_seq IS NOT NULL AND outcome_said = 0
    UNION ALL
    SELECT table_id, shoe_id, round_no, [last_middle_seq], ended_at,
           printf('The third card %s was never announced (%s and %s, spread %d)',
                  middle_card, left_card, right_card, spread)
    FROM per_round WHERE kind = 'spread' AND last_middle_seq IS NOT NULL AND value_said = 0
)
SELECT 'WRONG_ANNOUNCEMENT' AS code, table_id, shoe_id, round_no, seqs, explanation, occurred_at
FROM contradictions
UNION ALL
SELECT 'WRONG_ANNOUNCEMENT', table_id, shoe_id, round_no, seqs, explanation, occurred_at
FROM missing;

-- THIRD_CARD_ON_CONSECUTIVE (13:47-20.31(d)7): a consecutive round is concluded with no third card.
CREATE OR REPLACE VIEW anomaly_third_card_on_consecutive AS
SELECT 'THIRD_CARD_ON_CONSECUTIVE' AS code, table_id, shoe_id, round_no, middle_seqs AS seqs,
       printf('%s drawn to the middle box after the consecutive cards %s and %s (a tie hand: no third card)',
              middle_card, left_card, right_card) AS explanation,
       (SELECT e.occurred_at FROM events AS e
        WHERE e.table_id = f.table_id AND e.seq = f.first_middle_seq) AS occurred_at
FROM anomaly_round_facts AS f
WHERE kind = 'consecutive' AND first_middle_seq IS NOT NULL;

-- PAIR_WITHOUT_THIRD_CARD (13:47-20.31(d)8): after a pair the third card is drawn at once: not
-- at all in a finished round, or only after settling wagers, is flagged. A round voided, or
-- stopped at the cutting card (ROUND_ABANDONED_AT_CUT_CARD), is not.
CREATE OR REPLACE VIEW anomaly_pair_without_third_card AS
SELECT 'PAIR_WITHOUT_THIRD_CARD' AS code, table_id, shoe_id, round_no,
       card_seqs[:2] || list_filter([first_settlement_seq], lambda s: s IS NOT NULL) AS seqs,
       CASE WHEN first_middle_seq IS NULL
            THEN printf('The pair %s and %s got no third card', left_card, right_card)
            ELSE printf('The pair %s and %s got its third card %s only after wagers were settled',
                        left_card, right_card, middle_card) END AS explanation,
       ended_at AS occurred_at
FROM anomaly_round_facts
WHERE kind = 'pair' AND NOT voided AND finished
  AND ((first_middle_seq IS NULL AND cut_seq IS NULL)
       OR first_middle_seq > first_settlement_seq);

-- ROUND_ABANDONED_AT_CUT_CARD (13:47-20.31(d)16; GA (13)): the cutting card came out in this
-- round, and the round never reached its decision (two cards, and a third unless consecutive).
CREATE OR REPLACE VIEW anomaly_round_abandoned_at_cut_card AS
SELECT 'ROUND_ABANDONED_AT_CUT_CARD' AS code, table_id, shoe_id, round_no,
       [cut_seq] || card_seqs AS seqs,
       printf('The cutting card came out and the round stopped with %s on the layout instead of being completed',
              CASE WHEN len(card_seqs) = 0 THEN 'no card'
                   WHEN kind IS NULL THEN coalesce(left_card, right_card)
                   ELSE left_card || ' and ' || right_card END) AS explanation,
       ended_at AS occurred_at
FROM anomaly_round_facts
WHERE cut_seq IS NOT NULL AND NOT voided AND finished
  AND (kind IS NULL OR (kind <> 'consecutive' AND first_middle_seq IS NULL));

-- NO_RESHUFFLE_AFTER_CUT_CARD (13:47-20.31(d)16; GA (13)): once the cutting card is out, the
-- round in progress is completed and the cards reshuffled: any later round from the shoe.
CREATE OR REPLACE VIEW anomaly_no_reshuffle_after_cut_card AS
WITH cut AS (
    SELECT table_id, shoe_id, min(seq) AS cut_seq, arg_min(round_no, seq) AS cut_round
    FROM events WHERE event_type = 'CuttingCardReached' AND shoe_id IS NOT NULL
    GROUP BY ALL
)
SELECT 'NO_RESHUFFLE_AFTER_CUT_CARD' AS code, f.table_id, f.shoe_id, f.round_no,
       [c.cut_seq] || f.card_seqs[:1] AS seqs,
       printf('Round %d was dealt from shoe %s after the cutting card came out%s',
              f.round_no, f.shoe_id, coalesce(printf(' in round %d', c.cut_round), '')) AS explanation,
       f.started_at AS occurred_at
FROM anomaly_round_facts AS f
JOIN cut AS c USING (table_id, shoe_id)
WHERE f.first_seq > c.cut_seq AND f.round_no IS DISTINCT FROM c.cut_round
  AND len(f.card_seqs) > 0;

-- The discard rack, round by round (13:47-20.31(d)15; GA (12)): every card drawn in a round
-- (CardDrawn, any box) against the cards of its CardsRacked, as multisets and in order.
CREATE OR REPLACE VIEW anomaly_rack_check AS
WITH dealt AS (
    SELECT table_id, shoe_id, round_no,
           list({'rank': rank, 'suit': suit} ORDER BY seq, log_offset) AS cards,
           list(seq ORDER BY seq, log_offset) AS seqs
    FROM events WHERE event_type = 'CardDrawn' AND round_no IS NOT NULL
    GROUP BY ALL
),
racked AS (
    SELECT table_id, shoe_id, round_no, flatten(list(cards ORDER BY seq, log_offset)) AS cards,
           min(seq) AS racked_seq
    FROM events WHERE event_type = 'CardsRacked' AND round_no IS NOT NULL
    GROUP BY ALL
),
differ AS (
    -- Only the rounds whose rack is not exactly the cards as dealt are looked at further.
    SELECT table_id, shoe_id, round_no, d.cards AS dealt, r.cards AS racked,
           coalesce(d.seqs, []::BIGINT[]) AS card_seqs, r.racked_seq
    FROM dealt AS d FULL OUTER JOIN racked AS r USING (table_id, shoe_id, round_no)
    WHERE d.cards IS DISTINCT FROM r.cards
),
copies AS (
    SELECT table_id, shoe_id, round_no, c.rank, c.suit, count(*) FILTER (src = 'dealt') AS dealt_n,
           count(*) FILTER (src = 'racked') AS racked_n, list(s) FILTER (src = 'dealt') AS seqs
    FROM (SELECT table_id, shoe_id, round_no, 'dealt' AS src, unnest(dealt) AS c,
                 unnest(card_seqs) AS s FROM differ
          UNION ALL
          SELECT table_id, shoe_id, round_no, 'racked', unnest(racked), NULL FROM differ)
    GROUP BY ALL
),
per_round AS (
    SELECT table_id, shoe_id, round_no,
           list(card_label(rank, suit) ORDER BY rank, suit) FILTER (dealt_n > racked_n) AS missing,
           flatten(list(seqs ORDER BY rank, suit) FILTER (dealt_n > racked_n)) AS missing_seqs,
           list(card_label(rank, suit) ORDER BY rank, suit) FILTER (racked_n > dealt_n) AS not_dealt
    FROM copies
    GROUP BY ALL
)
SELECT d.table_id, d.shoe_id, d.round_no,
       coalesce(p.missing, []::VARCHAR[]) AS missing,
       coalesce(p.missing_seqs, []::BIGINT[]) AS missing_seqs,
       coalesce(p.not_dealt, []::VARCHAR[]) AS not_dealt,
       array_to_string(list_transform(d.dealt, lambda c: card_label(c.rank, c.suit)), ' ') AS dealt,
       array_to_string(list_transform(d.racked, lambda c: card_label(c.rank, c.suit)), ' ') AS racked,
       d.racked_seq, d.card_seqs, f.finished, f.ended_at
FROM differ AS d
LEFT JOIN per_round AS p USING (table_id, shoe_id, round_no)
LEFT JOIN anomaly_round_facts AS f USING (table_id, shoe_id, round_no);

-- DISCARD_RACK_ORDER: a finished round never racked; a racked card not drawn in the round; or
-- the same cards racked in another order. When a card is missing from the rack, that is
-- CARD_UNACCOUNTED, and the order of the rest is not judged.
CREATE OR REPLACE VIEW anomaly_discard_rack_order AS
SELECT 'DISCARD_RACK_ORDER' AS code, table_id, shoe_id, round_no,
       CASE WHEN racked_seq IS NULL THEN card_seqs ELSE [racked_seq] END AS seqs,
       CASE WHEN racked_seq IS NULL THEN 'The cards ' || dealt || ' were never racked'
            WHEN len(not_dealt) > 0 THEN printf('Racked %s, which were not drawn in this round (dealt %s, racked %s)',
                                                 array_to_string(not_dealt, ' '), dealt, racked)
            ELSE printf('Racked %s, dealt %s: not in dealing order', racked, dealt) END AS explanation,
       ended_at AS occurred_at
FROM anomaly_rack_check
WHERE (racked_seq IS NULL AND finished AND len(card_seqs) > 0)
   OR (racked_seq IS NOT NULL AND len(not_dealt) > 0)
   OR (racked_seq IS NOT NULL AND len(missing) = 0 AND len(not_dealt) = 0);

-- CARD_UNACCOUNTED (13:47-20.31(d)15): a card drawn in a round is not in its rack.
CREATE OR REPLACE VIEW anomaly_card_unaccounted AS
SELECT 'CARD_UNACCOUNTED' AS code, table_id, shoe_id, round_no,
       list_sort(missing_seqs || [racked_seq]) AS seqs,
       printf('%s left the shoe but never reached the rack (dealt %s, racked %s)',
              array_to_string(missing, ' '), dealt, racked) AS explanation,
       ended_at AS occurred_at
FROM anomaly_rack_check
WHERE racked_seq IS NOT NULL AND len(missing) > 0;

-- The physical cards that left each shoe: drawn, burned, or found face up. A card found face up
-- and then drawn at once (FACE_UP_CARD_USED) is one card, counted once.
CREATE OR REPLACE VIEW anomaly_cards_out AS
WITH out AS (
    SELECT table_id, shoe_id, round_no, seq, log_offset, occurred_at, event_type, rank, suit,
           destination,
           lead(event_type) OVER w AS next_type, lead(rank) OVER w AS next_rank,
           lead(suit) OVER w AS next_suit, lead(destination) OVER w AS next_destination,
           lead(seq) OVER w AS next_seq, lead(round_no) OVER w AS next_round_no
    FROM events
    WHERE event_type IN ('CardDrawn', 'CardBurned', 'CardFoundFaceUp') AND shoe_id IS NOT NULL
    WINDOW w AS (PARTITION BY table_id, shoe_id ORDER BY seq, log_offset)
)
SELECT *,
       event_type = 'CardFoundFaceUp' AND next_type = 'CardDrawn' AND next_rank = rank
           AND next_suit = suit AND next_destination IN ('LEFT', 'RIGHT', 'MIDDLE') AS used_face_up
FROM out;

-- FACE_UP_CARD_USED (13:47-20.31(g)1): a card found face up in the shoe is not used; flagged
-- when the next card out of the shoe is that same card, dealt to a box.
CREATE OR REPLACE VIEW anomaly_face_up_card_used AS
SELECT 'FACE_UP_CARD_USED' AS code, table_id, shoe_id, next_round_no AS round_no,
       [seq, next_seq] AS seqs,
       printf('%s was found face up in the shoe and then dealt to the %s box instead of the discard rack',
              card_label(rank, suit), lower(next_destination)) AS explanation,
       occurred_at
FROM anomaly_cards_out
WHERE used_face_up;

-- EXTRA_CARD (13:47-20.31(a)2): a shoe of N decks holds N copies of each card; the (N+1)th copy
-- out of the shoe was introduced.
CREATE OR REPLACE VIEW anomaly_extra_card AS
WITH copies AS (
    SELECT o.*, s.decks,
           row_number() OVER (PARTITION BY o.table_id, o.shoe_id, o.rank, o.suit
                              ORDER BY o.seq, o.log_offset) AS copy_no
    FROM anomaly_cards_out AS o
    JOIN shoes AS s USING (table_id, shoe_id)
    WHERE NOT o.used_face_up AND s.decks IS NOT NULL
),
extra AS (SELECT * FROM copies WHERE copy_no > decks)
SELECT 'EXTRA_CARD' AS code, x.table_id, x.shoe_id, x.round_no,
       list(c.seq ORDER BY c.seq) AS seqs,
       printf('Copy %d of %s out of shoe %s, which holds %d deck%s: a card was introduced',
              x.copy_no, card_label(x.rank, x.suit), x.shoe_id, x.decks,
              CASE WHEN x.decks = 1 THEN '' ELSE 's' END) AS explanation,
       x.occurred_at
FROM extra AS x
JOIN copies AS c
    ON c.table_id = x.table_id AND c.shoe_id = x.shoe_id AND c.rank = x.rank AND c.suit = x.suit
   AND c.copy_no <= x.copy_no
GROUP BY ALL;

-- MISSING_BURN (13:47-20.31(d)1; 13:69F-6.4): a burn is owed when a shoe is loaded
-- (CardsLoaded) and when a dealer taps in while a shoe is in play; each one owed needs a burn
-- (CardBurned) after it and before the next card is dealt (CardDrawn). One burn can pay only
-- one debt. A debt dies with its shoe (ShoeClosed before the next card).
CREATE OR REPLACE VIEW anomaly_missing_burn AS
WITH stream AS (
    SELECT table_id, shoe_id, round_no, seq, log_offset, event_type, dealer_id, occurred_at,
           last_value(CASE WHEN event_type IN ('CardsLoaded', 'ShoeClosed') THEN event_type END
                      IGNORE NULLS) OVER before_this AS shoe_state,
           first_value(CASE WHEN event_type = 'CardDrawn' THEN seq END IGNORE NULLS)
               OVER from_this AS next_draw_seq,
           first_value(CASE WHEN event_type = 'ShoeClosed' THEN seq END IGNORE NULLS)
               OVER from_this AS next_close_seq
    FROM events
    WHERE event_type IN ('CardsLoaded', 'ShoeClosed', 'DealerTappedIn', 'CardBurned', 'CardDrawn')
    WINDOW before_this AS (PARTITION BY table_id ORDER BY seq, log_offset
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
           from_this AS (PARTITION BY table_id ORDER BY seq, log_offset
                         ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)
),
debts AS (
    SELECT *,
           (event_type = 'CardsLoaded' OR (event_type = 'DealerTappedIn' AND shoe_state = 'CardsLoaded'))
               AND (next_close_seq IS NULL OR next_close_seq > next_draw_seq) AS owes,
           event_type = 'CardBurned' AS pays
    FROM stream
    WHERE event_type <> 'CardDrawn' AND next_draw_seq IS NOT NULL
),
balance AS (
    -- From each event to the next card dealt: burns still to come against debts still to come.
    SELECT *,
           sum(owes::INTEGER) OVER later AS owed_from_here,
           sum(pays::INTEGER) OVER later AS paid_from_here
    FROM debts
    WINDOW later AS (PARTITION BY table_id, next_draw_seq ORDER BY seq DESC, log_offset DESC
                     ROWS UNBOUNDED PRECEDING)
),
unpaid AS (
    SELECT table_id, next_draw_seq, list(seq ORDER BY seq) AS debt_seqs,
           list(CASE event_type WHEN 'CardsLoaded' THEN 'shoe ' || shoe_id || ' was loaded'
                ELSE 'dealer ' || dealer_id || ' tapped in' END ORDER BY seq) AS debts
    FROM balance
    WHERE owes AND paid_from_here < owed_from_here
    GROUP BY ALL
)
SELECT 'MISSING_BURN' AS code, d.table_id, d.shoe_id, d.round_no,
       u.debt_seqs || [d.seq] AS seqs,
       printf('No card burned after %s, before %s was dealt to the %s box',
              array_to_string(u.debts, ' and '), card_label(d.rank, d.suit), lower(d.destination))
           AS explanation,
       d.occurred_at
FROM unpaid AS u
JOIN events AS d ON d.table_id = u.table_id AND d.seq = u.next_draw_seq AND d.event_type = 'CardDrawn';

-- MULTIPLE_BETTING_AREAS (13:47-20.31(g)4; 13:69F-6.8): one player's wagers on more than one
-- area in a round, at a table whose TableOpened does not permit it.
CREATE OR REPLACE VIEW anomaly_multiple_betting_areas AS
WITH placed AS (
    SELECT e.table_id, e.shoe_id, e.round_no, e.player_id, e.area, e.seq, e.occurred_at,
           coalesce(p.multiple_areas_permitted, false) AS permitted
    FROM events AS e
    ASOF LEFT JOIN paytables AS p ON e.table_id = p.table_id AND e.seq >= p.seq
    WHERE e.event_type = 'WagerPlaced' AND e.round_no IS NOT NULL
)
SELECT 'MULTIPLE_BETTING_AREAS' AS code, table_id, shoe_id, round_no,
       list(seq ORDER BY seq) AS seqs,
       printf('Player %s wagered on areas %s in one round; the table permits one area',
              player_id, array_to_string(list_sort(list_distinct(list(area))), ', ')) AS explanation,
       max(occurred_at) AS occurred_at
FROM placed
WHERE NOT permitted
GROUP BY table_id, shoe_id, round_no, player_id
HAVING count(DISTINCT area) > 1;

-- CALL_BET (GA (2)): a verbal wager at a table whose profile forbids call bets.
CREATE OR REPLACE VIEW anomaly_call_bet AS
SELECT 'CALL_BET' AS code, e.table_id, e.shoe_id, e.round_no, [e.seq] AS seqs,
       printf('Seat %d placed a call bet of %s on area %d; %s tables allow chips and plaques only',
              e.seat, dollars(e.amount_cents), e.area, p.profile) AS explanation,
       e.occurred_at
FROM events AS e
ASOF JOIN paytables AS p ON e.table_id = p.table_id AND e.seq >= p.seq
WHERE e.event_type = 'WagerPlaced' AND e.instrument = 'CALL_BET' AND p.profile = 'gaming-authority';

-- DEVICE_FAULT_NOT_VOIDED (13:69F-34.16(m)-(n), applied by analogy): a shuffler that jams must
-- be followed by a reshuffle (ShuffleStarted) before any card comes out; a dealing shoe that
-- jams must be followed by RoundVoided in its round, and no further card from that shoe.
CREATE OR REPLACE VIEW anomaly_device_fault_not_voided AS
WITH faults AS (
    SELECT f.table_id, f.shoe_id, f.round_no, f.seq, f.occurred_at, f.fault, f.device_id,
           (SELECT min(e.seq) FROM events AS e
            WHERE e.table_id = f.table_id AND e.seq > f.seq
              AND e.event_type IN ('CardDrawn', 'CardBurned', 'CardFoundFaceUp', 'CardDrawnInError')
              AND (f.fault = 'SHUFFLER_JAM' OR e.shoe_id IS NOT DISTINCT FROM f.shoe_id)) AS card_seq,
           (SELECT min(e.seq) FROM events AS e
            WHERE e.table_id = f.table_id AND e.seq > f.seq AND e.event_type = 'ShuffleStarted')
               AS reshuffle_seq,
           (SELECT min(e.seq) FROM events AS e
            WHERE e.table_id = f.table_id AND e.seq > f.seq AND e.event_type = 'RoundVoided'
              AND e.shoe_id IS NOT DISTINCT FROM f.shoe_id AND e.round_no = f.round_no) AS void_seq,
           (SELECT max(e.seq) FROM events AS e WHERE e.table_id = f.table_id) AS table_last_seq,
           (SELECT max(e.seq) FROM events AS e
            WHERE e.table_id = f.table_id AND e.shoe_id IS NOT DISTINCT FROM f.shoe_id
              AND e.round_no = f.round_no) AS round_last_seq
    FROM events AS f
    WHERE f.event_type = 'DeviceFaulted'
)
SELECT 'DEVICE_FAULT_NOT_VOIDED' AS code, table_id, shoe_id, round_no,
       list_filter([seq, card_seq], lambda s: s IS NOT NULL) AS seqs,
       CASE fault
           WHEN 'SHUFFLER_JAM' THEN printf('Shuffler %s jammed and cards were dealt without a reshuffle', device_id)
           ELSE printf('Dealing shoe %s jammed and the round was %s', device_id,
                       concat_ws(' and ',
                           CASE WHEN void_seq IS NULL THEN 'not voided' END,
                           CASE WHEN card_seq IS NOT NULL THEN 'dealt on from the same shoe' END)) END
           AS explanation,
       occurred_at
FROM faults
WHERE CASE fault
    WHEN 'SHUFFLER_JAM' THEN card_seq IS NOT NULL AND (reshuffle_seq IS NULL OR reshuffle_seq > card_seq)
    ELSE card_seq IS NOT NULL
         OR (round_no IS NOT NULL AND void_seq IS NULL AND round_last_seq < table_last_seq) END;

-- SEQUENCE_GAP and CHAIN_BROKEN (DESIGN, principle 2) over the projected rows, in seq order per
-- table: a jump in seq is a gap (an event lost or deleted); between neighbouring seqs, the
-- later event's prev_hash must be the earlier one's hash (the first event's: 32 zero bytes).
-- An event altered in place without resealing keeps valid links here; `pitlog verify`, which
-- re-hashes the log's bytes, finds that one.
CREATE OR REPLACE VIEW anomaly_integrity AS
WITH chained AS (
    SELECT table_id, shoe_id, round_no, seq, occurred_at, prev_hash,
           lag(seq) OVER w AS prev_seq, lag(hash) OVER w AS prev_event_hash
    FROM events
    WINDOW w AS (PARTITION BY table_id ORDER BY seq, log_offset)
)
SELECT 'SEQUENCE_GAP' AS code, table_id, shoe_id, round_no,
       list_filter([prev_seq, seq], lambda s: s IS NOT NULL) AS seqs,
       CASE WHEN seq - coalesce(prev_seq, 0) = 2
            THEN printf('Sequence number %d is missing from table %s''s stream (an event lost or deleted)',
                        coalesce(prev_seq, 0) + 1, table_id)
            ELSE printf('Sequence numbers %d to %d are missing from table %s''s stream (events lost or deleted)',
                        coalesce(prev_seq, 0) + 1, seq - 1, table_id) END AS explanation,
       occurred_at
FROM chained
WHERE seq > coalesce(prev_seq, 0) + 1
UNION ALL
SELECT 'CHAIN_BROKEN', table_id, shoe_id, round_no,
       list_filter([prev_seq, seq], lambda s: s IS NOT NULL),
       CASE WHEN prev_seq IS NULL
            THEN printf('Event %d, the first of table %s, does not start the hash chain', seq, table_id)
            ELSE printf('Event %d of table %s does not link to event %d: its prev_hash is not that event''s hash (an event altered)',
                        seq, table_id, prev_seq) END,
       occurred_at
FROM chained
WHERE seq <= coalesce(prev_seq, 0) + 1
  AND prev_hash IS DISTINCT FROM coalesce(prev_event_hash, '\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'::BLOB);

CREATE OR REPLACE VIEW anomaly_sequence_gap AS
SELECT * FROM anomaly_integrity WHERE code = 'SEQUENCE_GAP';

CREATE OR REPLACE VIEW anomaly_chain_broken AS
SELECT * FROM anomaly_integrity WHERE code = 'CHAIN_BROKEN';

-- Every rule and integrity anomaly, with its severity and rule. (HOLD_VARIANCE and
-- OUTCOME_FREQUENCY are statistics over many rounds: projections/statistics.py computes them.)
CREATE OR REPLACE VIEW anomalies AS
WITH found AS (
    SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_early_third_card
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_early_exposure_mishandled
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_late_wager
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_wager_altered
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_late_raise
    -- WRONG_PAYOUT, WRONG_SETTLEMENT, RAISE_OVER_LIMIT, RAISE_NOT_ALLOWED and the payouts of
    -- BELOW_MINIMUM_ODDS, in one pass over the ledger:
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_money
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_illegal_paytable
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_wrong_announcement
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_third_card_on_consecutive
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_pair_without_third_card
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_missing_burn
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_face_up_card_used
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_no_reshuffle_after_cut_card
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_round_abandoned_at_cut_card
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_discard_rack_order
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_card_unaccounted
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_extra_card
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_multiple_betting_areas
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_call_bet
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_device_fault_not_voided
    UNION ALL SELECT code, table_id, shoe_id, round_no, seqs, explanation, occurred_at FROM anomaly_integrity
)
SELECT f.code, c.severity, f.table_id, f.shoe_id, f.round_no, f.seqs, f.explanation, c.rule,
       f.occurred_at
FROM found AS f
JOIN anomaly_codes AS c USING (code);

-- The money: every wager and raise of the ledger against what the rules say it was owed.
CREATE OR REPLACE VIEW anomalies_found_money AS
WITH
-- The money, from the ledger (sql/ledger.sql: one row per wager and per raise, with the decision
-- the rules require next to the settlements made), in one pass:
--   WRONG_PAYOUT: a winner (the rules say WON and it was settled WON) paid other than the
--     table's line, under or over, or at other recorded odds (13:47-20.31(e); GA (11)(b));
--   BELOW_MINIMUM_ODDS: a winner paid exactly at a line of an illegal paytable that is below
--     the standard odds (13:47-20.31(e)-(f); GA (11)(c)). A payout that differs from the
--     table is WRONG_PAYOUT instead: one payout raises at most one of the two;
--   WRONG_SETTLEMENT: the wrong outcome (a winner collected, a loser paid, a void kept), a
--     short collection or return, a wager never settled in a finished round, one settled
--     twice, a settlement with no wager, or one that paid or collected in a finished round
--     whose first two cards were never recorded, so no hand decided it, or handed the wager
--     back after a card with nothing to own it (below; 13:47-20.31(d)7, 10, 14);
--   RAISE_OVER_LIMIT: raises on an area above its original wager (13:47-20.31(d)12);
--   RAISE_NOT_ALLOWED: a raise on a consecutive or pair round, with no original wager, or
--   recorded with no round.
-- Other settlements made before any decision are left to the code that owns the round: a pair
-- or spread with no third card (PAIR_WITHOUT_THIRD_CARD, SPREAD_WITHOUT_THIRD_CARD), a round
-- abandoned at the cutting card (ROUND_ABANDONED_AT_CUT_CARD), a RoundVoided (one the rules
-- allow owes the wagers back; ROUND_VOIDED_WITHOUT_CAUSE), a dealing-shoe fault not voided
-- (DEVICE_FAULT_NOT_VOIDED).
-- The ledger is read once. `suspect` marks the rows that can raise a code at all: every raise,
-- the wagers whose status is not a clean one, and those settled in a round with no hand
-- (the CASEs in `money` below need one of these); only those are joined to the originals and
-- the round facts.
ledger_rows AS MATERIALIZED (
    SELECT table_id, shoe_id, round_no, seat, area, wager_kind, amount_cents, status, hand,
           spread, profile, paytable_valid, paytable_seq, expected_outcome, expected_odds,
           expected_paid_cents, expected_collected_cents, expected_returned_cents,
           settlement_count, actual_outcome, actual_odds, actual_paid_cents,
           actual_collected_cents, actual_returned_cents, wager_seqs, settlement_seqs, started_at,
           coalesce(wager_kind <> 'ORIGINAL'
                    OR status IN ('WRONG_AMOUNT', 'WRONG_ODDS', 'WRONG_OUTCOME', 'DOUBLE_SETTLED',
                                  'NOT_OWED', 'UNSETTLED')
                    OR (status = 'OK' AND expected_outcome = 'WON' AND NOT paytable_valid)
                    OR (status = 'SETTLED_BEFORE_DECISION' AND hand IS NULL), true)
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
    SEMI JOIN suspects AS s
           ON s.table_id = l.table_id AND s.shoe_id IS NOT DISTINCT FROM l.shoe_id
          AND s.round_no = l.round_no AND s.seat = l.seat AND s.area = l.area
    WHERE l.wager_kind = 'ORIGINAL' AND l.status NOT IN ('NOT_OWED', 'REMOVED')
    GROUP BY ALL
),

money AS (
    SELECT b.*, o.original_cents, o.original_seqs, f.finished, f.left_card, f.right_card,
           f.card_seqs, f.voided, f.cut_seq, f.shoe_faulted,
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
            -- 13:47-20.31(d)7, (d)10, (d)14: the cards alone decide a wager, so one paid or
            -- collected in a finished round whose first two cards were never both recorded was
            -- settled on no hand. A wager handed back whole (once, nothing paid or collected)
            -- is not flagged where the rules allow it or another code owns the round (one
            -- mishap, one code): in a round with no card recorded, a removal by another name
            -- ((d)3, (d)6; money-neutral); in a round with a RoundVoided (an allowed one owes
            -- it back, never this status; one without cause is ROUND_VOIDED_WITHOUT_CAUSE), a
            -- cutting card (ROUND_ABANDONED_AT_CUT_CARD) or a dealing-shoe fault (DEVICE_FAULT_
            -- NOT_VOIDED, which judges a round of a shoe only), before or after the return.
            -- Handed back in a round with a card recorded and none of those, it is flagged:
            -- (d)6 fixes the wager once the first card is out. A wager recorded with no round
            -- and settled with none (the ledger's one row, ledger.sql `keyed`) was settled on
            -- no hand too, and handed back whole, is a removal by another name.
            WHEN b.status = 'SETTLED_BEFORE_DECISION' AND b.hand IS NULL
                 AND (f.finished OR b.round_no IS NULL)
                 AND NOT (b.actual_paid_cents = 0 AND b.actual_collected_cents = 0
                          AND b.actual_returned_cents = b.amount_cents
                          AND b.settlement_count = 1
                          AND (b.round_no IS NULL OR len(f.card_seqs) = 0 OR f.voided
                               OR f.cut_seq IS NOT NULL
                               OR (f.shoe_faulted AND b.shoe_id IS NOT NULL)))
                THEN 'WRONG_SETTLEMENT'
        END AS money_code,
        CASE
            WHEN b.wager_kind <> 'RAISE' OR b.status = 'NOT_OWED' THEN NULL
            -- (d)12: a raise only on a spread, and money recorded with no round has none,
            -- whatever wager is under it (one mishap, one code: not also over its limit)
            WHEN b.round_no IS NULL THEN 'RAISE_NOT_ALLOWED'
            WHEN b.hand IN ('consecutive', 'pair') THEN 'RAISE_NOT_ALLOWED'
            WHEN coalesce(o.original_cents, 0) = 0 THEN 'RAISE_NOT_ALLOWED'
            WHEN b.amount_cents > o.original_cents THEN 'RAISE_OVER_LIMIT'
        END AS raise_code,
        CASE WHEN b.hand = 'pair' THEN 'three of a kind' ELSE printf('spread %d', b.spread) END AS line,
        standard_odds(b.hand, b.spread) AS standard_odds,
        CASE b.wager_kind WHEN 'RAISE' THEN 'raise' ELSE 'wager' END AS what
    FROM suspects AS b
    LEFT JOIN originals AS o
           ON o.table_id = b.table_id AND o.shoe_id IS NOT DISTINCT FROM b.shoe_id
          AND o.round_no = b.round_no AND o.seat = b.seat AND o.area = b.area
    LEFT JOIN anomaly_round_facts AS f
           ON f.table_id = b.table_id AND f.shoe_id IS NOT DISTINCT FROM b.shoe_id
          AND f.round_no = b.round_no
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
                          WHEN 'SETTLED_BEFORE_DECISION' THEN printf(
                              'was settled %s (paid %s, collected %s, returned %s) %s: only the cards decide a wager',
                              m.actual_outcome, dollars(m.actual_paid_cents),
                              dollars(m.actual_collected_cents), dollars(m.actual_returned_cents),
                              CASE WHEN m.round_no IS NULL
                                   THEN 'outside any round (no round number)'
                                   ELSE printf('in a round whose first two cards were never recorded (%s)',
                                               CASE WHEN len(m.card_seqs) = 0 THEN 'no card of the round'
                                                    ELSE 'only ' || m.left_card END) END)
                          ELSE printf('was settled %s (paid %s, collected %s, returned %s); it should have ',
                                      m.actual_outcome, dollars(m.actual_paid_cents),
                                      dollars(m.actual_collected_cents), dollars(m.actual_returned_cents))
                      END
                   || CASE WHEN m.status IN ('NOT_OWED', 'SETTLED_BEFORE_DECISION') THEN ''
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
               WHEN m.round_no IS NULL THEN printf(
                   'Seat %d raised %s on area %d outside any round (no round number): raises are for a spread only',
                   m.seat, dollars(m.amount_cents), m.area)
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

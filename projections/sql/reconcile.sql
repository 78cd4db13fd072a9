-- pitlog reconciliation queries (projections/reconcile.py runs them; docs/auditing.md explains).
--
-- Each query is a section starting with a `-- name: NAME` line. Parameters are named ($tz,
-- $day_start_minutes, $shift_starts, $shift_names, $day, $table) and always bound, never pasted.
-- `{keys}` is replaced by column names from reconcile.GROUPINGS (a fixed whitelist), never by
-- user input; `{standard_paytable}` by the standard table's five odds from
-- events/reddog/rules.py (spreads 1, 2, 3, 4 to 11, then three of a kind).
--
-- The calendar: a casino's gaming day does not start at midnight. A round belongs to the
-- gaming day and shift in which it started, on the wall clock of $tz:
--   gaming_day = the local date of (started_at - $day_start_minutes);
--   shift      = the last of $shift_starts (minutes after local midnight) at or before the
--                local time of day; before the first one, the last one (it runs past midnight).

-- name: calendar_check
SELECT timezone($tz, TIMESTAMPTZ '2000-01-01 00:00:00+00') AS local_time;

-- name: edge_keys
-- Every (deck count, paytable) pair a table could have wagered on (each shoe's decks with each
-- paytable its table ever opened with, and the standard table the ledger assumes before any):
-- reconcile.py computes their exact edges. A superset is harmless and cheaper than the ledger.
WITH decks AS (
    SELECT DISTINCT table_id, decks FROM events
    WHERE event_type = 'CardsLoaded' AND decks IS NOT NULL
),
tables AS (
    SELECT table_id, pays_spread_1, pays_spread_2, pays_spread_3, pays_spread_4_to_11,
           pays_three_of_a_kind
    FROM paytables
    UNION
    SELECT DISTINCT table_id, {standard_paytable} FROM decks
)
SELECT DISTINCT d.decks, t.pays_spread_1, t.pays_spread_2, t.pays_spread_3,
       t.pays_spread_4_to_11, t.pays_three_of_a_kind
FROM decks AS d JOIN tables AS t USING (table_id)
ORDER BY ALL;

-- name: round_money
-- One row per round of the `rounds` view (rounds without wagers count as dealt), with its
-- money from the ledger and its theoretical win as an exact fraction theo_num / theo_den of
-- cents; and one row per ledger row recorded outside any round (round_no NULL: a wager or a
-- settlement with no round number), so that every cent the conservation check counts is in
-- the reconciliation too. Such a row is named by its first seq (first_seq), dated by its
-- first event (the ledger's started_at, as conservation dates it), has no dealer, decks or
-- outcome, and is never counted as a round (reconcile: rounds are round_no > 0). theo_edges is the temporary table reconcile.py loads: per (decks, paytable, spread)
-- the exact edge times theo_den (spread 0 = an original wager). It reads the `rounds` and
-- `ledger` views, or (projections/round_money.py, keeping the stored `round_money` table
-- current) the same views over a batch's window: one definition of a round's money, whether
-- computed at read time or stored by the writer.
WITH money AS (
    SELECT
        l.table_id, l.shoe_id, l.round_no,
        -- Outside any round, each ledger row is a row of its own: money recorded with no
        -- round depends on nothing but its own events (no cards, paytable or dealer decide
        -- it), and may be days apart from the next.
        CASE WHEN l.round_no IS NULL THEN list_min(list_concat(coalesce(l.wager_seqs, []),
                                                              l.settlement_seqs)) END
            AS outside_seq,
        min(CASE WHEN l.round_no IS NULL THEN l.started_at END) AS started_at,
        max(CASE WHEN l.round_no IS NULL THEN list_max(list_concat(coalesce(l.wager_seqs, []),
                                                                   l.settlement_seqs)) END)
            AS last_seq,
        -- A stake recorded with no round is owed no decision (no round's cards can decide
        -- it: it stays IN_PLAY, and conservation sets it aside as open), so it is in none of
        -- wagers, handle, raises and the wager flags below; its settlements' money is.
        count(*) FILTER (NOT l.removed AND l.status <> 'NOT_OWED' AND l.round_no IS NOT NULL)
            AS wagers,
        -- Handle: every original wager and raise in force when its decision came, void ones
        -- included (theory's edges count a tie hand as a wager that won 0).
        coalesce(sum(l.amount_cents) FILTER (l.round_no IS NOT NULL), 0)::BIGINT AS handle_cents,
        sum(l.amount_cents) FILTER (l.wager_kind = 'RAISE' AND l.round_no IS NOT NULL)::BIGINT
            AS raises_cents,
        sum(l.actual_paid_cents)::BIGINT AS paid_cents,
        sum(l.actual_collected_cents)::BIGINT AS collected_cents,
        sum(l.actual_returned_cents)::BIGINT AS returned_cents,
        sum(l.expected_net_win_cents)::BIGINT AS expected_win_cents,
        count(*) FILTER (l.status NOT IN ('OK', 'REMOVED', 'IN_PLAY')) AS exceptions,
        -- No paytable or deck count applies outside a round (the ledger's paytable_violation
        -- says so): not a wager at an invalid paytable or on a shoe of unknown decks.
        count(*) FILTER (NOT l.paytable_valid AND l.round_no IS NOT NULL)
            AS invalid_paytable_wagers,
        count(*) FILTER (l.decks IS NULL AND l.amount_cents > 0 AND l.round_no IS NOT NULL)
            AS unknown_decks_wagers,
        -- Exact: cents times an integer edge numerator, all over the deck count's theo_den.
        sum(CAST(l.amount_cents AS HUGEINT) * coalesce(e.edge_num, 0)) AS theo_num,
        max(e.edge_den) AS theo_den
    FROM ledger AS l
    LEFT JOIN theo_edges AS e
        ON e.decks = l.decks
       AND e.pays_spread_1 = l.pays_spread_1 AND e.pays_spread_2 = l.pays_spread_2
       AND e.pays_spread_3 = l.pays_spread_3 AND e.pays_spread_4_to_11 = l.pays_spread_4_to_11
       AND e.pays_three_of_a_kind = l.pays_three_of_a_kind
       -- An original wager has the edge of the whole round; a raise that of its spread
       -- (13:47-20.31(d)12: raises only on a spread; any other raise has no edge here).
       AND e.spread = CASE WHEN l.wager_kind = 'ORIGINAL' THEN 0 ELSE l.spread END
    GROUP BY l.table_id, l.shoe_id, l.round_no, outside_seq
),
decks AS (
    -- The shoe's deck count as the shoes view has it (sql/shoes.sql): its first CardsLoaded's
    -- by (seq, log_offset) (13:69F-6.1(a): one or more decks); events_once_of never drops a
    -- CardsLoaded, so `events` is read straight. Written here, not as a macro of the views: a
    -- reader of a store an older pitlog built runs this query over that file's views.
    SELECT table_id, shoe_id, arg_min(decks, (seq, log_offset)) AS decks
    FROM events
    WHERE shoe_id IS NOT NULL AND event_type = 'CardsLoaded'
    GROUP BY table_id, shoe_id
)
SELECT
    -- A row of money with no round (m.round_no NULL) matches no round: its own key and times.
    coalesce(r.table_id, m.table_id) AS table_id, coalesce(r.shoe_id, m.shoe_id) AS shoe_id,
    coalesce(r.round_no, m.round_no) AS round_no, r.dealer,
    coalesce(r.started_at, m.started_at) AS started_at,
    coalesce(r.first_seq, m.outside_seq) AS first_seq, coalesce(r.last_seq, m.last_seq) AS last_seq,
    coalesce(m.wagers, 0) AS wagers, coalesce(m.handle_cents, 0) AS handle_cents,
    coalesce(m.raises_cents, 0) AS raises_cents,
    coalesce(m.paid_cents, 0) AS paid_cents, coalesce(m.collected_cents, 0) AS collected_cents,
    coalesce(m.returned_cents, 0) AS returned_cents,
    coalesce(m.collected_cents, 0) - coalesce(m.paid_cents, 0) AS net_win_cents,
    coalesce(m.expected_win_cents, 0) AS expected_win_cents,
    coalesce(m.exceptions, 0) AS exceptions,
    coalesce(m.invalid_paytable_wagers, 0) AS invalid_paytable_wagers,
    coalesce(m.unknown_decks_wagers, 0) AS unknown_decks_wagers,
    coalesce(m.theo_num, 0) AS theo_num, m.theo_den,
    -- What OUTCOME_FREQUENCY counts (projections/statistics.py), kept with the round so that
    -- it reads these rows, not the views over every round: the shoe's decks and the round's
    -- outcome when its cards decide one (a pair with no third card does not): consecutive
    -- (13:47-20.31(d)7), trips or pair_no_trips ((d)9-10), spread_1..spread_11 ((d)11).
    d.decks,
    -- Round 0 is no round of play (13:47-20.31(d)5; docs/anomalies.md): its cards are
    -- counted as no round's outcome.
    CASE WHEN r.round_no = 0 THEN NULL
         WHEN r.kind = 'consecutive' THEN 'consecutive'
         WHEN r.kind = 'spread' THEN 'spread_' || r.spread
         WHEN r.kind = 'pair' AND r.middle_rank = r.left_rank THEN 'trips'
         WHEN r.kind = 'pair' AND r.middle_rank IS NOT NULL THEN 'pair_no_trips'
    END AS outcome
FROM rounds AS r
-- A round dealt with no shoe has money too (its wagers, with no shoe, are its own). Every
-- round number of the ledger is a round of the view, so only the money with no round joins
-- no round (one join: a second read of `money` would compute the ledger twice).
FULL OUTER JOIN money AS m
       ON m.table_id = r.table_id AND m.shoe_id IS NOT DISTINCT FROM r.shoe_id
      AND m.round_no = r.round_no
LEFT JOIN decks AS d ON d.table_id = r.table_id AND d.shoe_id = r.shoe_id

-- name: by_round
-- Each round's money (the round_money query above over the views, or the stored
-- `round_money` table, which holds its rows) with its calendar place. A day asked for first
-- bounds started_at to the days around it (a gaming day's rounds start within two days of its
-- date, whatever the zone, day start or session time zone), so a stored table in time order
-- is read only there; the exact gaming_day test follows in the reconcile query.
SELECT *,
    gaming_day(started_at, $tz, $day_start_minutes) AS gaming_day,
    shift_name(started_at, $tz, $shift_starts, $shift_names) AS shift
FROM {round_rows}
WHERE $day IS NULL OR (started_at >= CAST($day AS TIMESTAMPTZ) - INTERVAL 3 DAY
                       AND started_at < CAST($day AS TIMESTAMPTZ) + INTERVAL 4 DAY)

-- name: reconcile
-- One row per group and deck-count denominator: reconcile.py adds the fractions exactly.
-- deviation = net win - theoretical win of one round; its square sums the statistic (DOUBLE:
-- a statistic for a flag, never money).
WITH by_round AS ({by_round})
SELECT
    {keys}, theo_den,
    -- A row of money recorded outside any round (round_no NULL) is no round, nor is round 0
    -- (no round of play: docs/anomalies.md); money_rows counts every row (the running sums
    -- drop a group when it has none).
    count(*) FILTER (round_no > 0) AS rounds, count(*) AS money_rows,
    sum(wagers)::BIGINT AS wagers,
    sum(handle_cents)::BIGINT AS handle_cents, sum(raises_cents)::BIGINT AS raises_cents,
    sum(paid_cents)::BIGINT AS paid_cents, sum(collected_cents)::BIGINT AS collected_cents,
    sum(returned_cents)::BIGINT AS returned_cents, sum(net_win_cents)::BIGINT AS net_win_cents,
    sum(expected_win_cents)::BIGINT AS expected_win_cents,
    sum(theo_num) AS theo_num,
    sum(power(net_win_cents - CASE WHEN theo_den IS NULL THEN 0
                                   ELSE CAST(theo_num AS DOUBLE) / theo_den END, 2))
        AS sum_sq_deviation,
    sum(exceptions)::BIGINT AS exceptions,
    sum(invalid_paytable_wagers)::BIGINT AS invalid_paytable_wagers,
    sum(unknown_decks_wagers)::BIGINT AS unknown_decks_wagers,
    -- the latest round's start (HOLD_VARIANCE's time), as the `rounds` view gives it too
    max(started_at) FILTER (round_no > 0) AS last_at
FROM by_round
WHERE ($day IS NULL OR gaming_day = $day) AND ($table IS NULL OR table_id = $table)
GROUP BY {keys}, theo_den
ORDER BY {keys}, theo_den;

-- name: conservation
-- Money in = money out + net win, to the cent, per group (docs/auditing.md):
--   money in  = handle: the stakes of every wager and raise in force at its decision;
--   money out = paid winnings + stakes returned to winners + void wagers returned;
--   net win   = collected - paid.
-- Stakes still in play (no decision yet) are set aside as open_cents. Anything else left
-- over - an unsettled or doubly settled stake, a short collection or return, a settlement
-- with no wager - is the difference.
WITH placed AS (
    SELECT *, gaming_day(started_at, $tz, $day_start_minutes) AS gaming_day,
           shift_name(started_at, $tz, $shift_starts, $shift_names) AS shift
    FROM ledger
),
sums AS (
    SELECT
        {keys},
        count(*) FILTER (NOT removed AND status <> 'NOT_OWED') AS wagers,
        sum(amount_cents)::BIGINT AS handle_cents,
        sum(actual_paid_cents)::BIGINT AS paid_cents,
        sum(actual_winner_stake_cents)::BIGINT AS winner_stakes_cents,
        sum(actual_returned_cents)::BIGINT AS returned_cents,
        sum(actual_collected_cents)::BIGINT AS collected_cents,
        coalesce(sum(amount_cents) FILTER (status = 'IN_PLAY'), 0)::BIGINT AS open_cents,
        count(*) FILTER (status NOT IN ('OK', 'REMOVED', 'IN_PLAY')) AS exceptions
    FROM placed
    WHERE ($day IS NULL OR gaming_day = $day) AND ($table IS NULL OR table_id = $table)
    GROUP BY {keys}
)
SELECT
    {keys}, wagers, handle_cents AS money_in_cents,
    paid_cents, winner_stakes_cents, returned_cents,
    paid_cents + winner_stakes_cents + returned_cents AS money_out_cents,
    collected_cents, collected_cents - paid_cents AS net_win_cents, open_cents,
    handle_cents - open_cents
        - (paid_cents + winner_stakes_cents + returned_cents)
        - (collected_cents - paid_cents) AS difference_cents,
    exceptions
FROM sums
ORDER BY {keys};

-- name: ledger
-- The ledger, filtered. Exceptions are the rows an auditor must look at: everything but a
-- correct settlement (OK), a legally removed wager (REMOVED) and a round still in play.
SELECT *
FROM ledger
WHERE ($table IS NULL OR table_id = $table)
  AND ($shoe IS NULL OR shoe_id = $shoe)
  AND ($status IS NULL OR status = $status)
  AND (NOT $exceptions_only OR status NOT IN ('OK', 'REMOVED', 'IN_PLAY'))
  AND ($day IS NULL OR gaming_day(started_at, $tz, $day_start_minutes) = $day)
ORDER BY table_id, shoe_id, round_no, seat, area, wager_kind;

-- name: latest_day
-- The latest gaming day with a round or money recorded outside any round (the round_money
-- query's rows, stored or over the views): the report's default.
SELECT max(gaming_day(started_at, $tz, $day_start_minutes)) AS day FROM {round_rows};

-- name: days_with_rounds
-- The rounds on gaming day $day (of one table and one shoe, or all), and the first and last
-- gaming days with a round and how many: what an error about a day with none names.
SELECT count(*) FILTER (d = $day) AS on_day, min(d) AS first_day, max(d) AS last_day,
       count(DISTINCT d) AS days
FROM (SELECT gaming_day(started_at, $tz, $day_start_minutes) AS d FROM rounds
      WHERE ($table IS NULL OR table_id = $table) AND ($shoe IS NULL OR shoe_id = $shoe));

-- name: day_span
-- The local wall-clock span of a gaming day's play, its rounds, and its rows of the round_money
-- query (its rounds and the money recorded outside any round: a day with only such money is
-- still a day to report, its money to account for).
SELECT min(timezone($tz, started_at)) AS first_local, max(timezone($tz, started_at)) AS last_local,
       count(*) FILTER (round_no > 0) AS rounds, count(*) AS money_rows
FROM {round_rows}
WHERE gaming_day(started_at, $tz, $day_start_minutes) = $day;

-- name: outcomes
-- The outcome of every round of the day whose cards decide one, by the shoe's deck count, as
-- the round_money query gives them (the stored rows, or the query over the views).
SELECT decks, outcome, count(*) AS rounds
FROM {round_rows}
WHERE gaming_day(started_at, $tz, $day_start_minutes) = $day
  AND outcome IS NOT NULL AND decks IS NOT NULL
GROUP BY ALL
ORDER BY ALL;

-- name: statuses
-- The ledger's statuses on one gaming day.
SELECT status, count(*) AS wagers, sum(amount_cents)::BIGINT AS amount_cents
FROM ledger
WHERE gaming_day(started_at, $tz, $day_start_minutes) = $day
GROUP BY status
ORDER BY wagers DESC, status;

-- One row per settlement (WagerSettled). `amount_cents` is paid if WON, collected if LOST,
-- returned if VOID; the three money columns split it for reconciliation.
CREATE OR REPLACE VIEW settlements AS
SELECT
    table_id, shoe_id, round_no, seat, area, wager_kind, outcome, amount_cents, odds,
    CASE WHEN outcome = 'WON' THEN amount_cents ELSE 0 END AS paid_cents,
    CASE WHEN outcome = 'LOST' THEN amount_cents ELSE 0 END AS collected_cents,
    CASE WHEN outcome = 'VOID' THEN amount_cents ELSE 0 END AS returned_cents,
    seq, occurred_at, actor, log_partition, log_offset
FROM events
WHERE event_type = 'WagerSettled'
ORDER BY table_id, seq, log_offset;

-- One row per wager (ORIGINAL) and per raise (RAISE) per seat, area and round, with its
-- settlement. `amount_cents` is the wager as it stood at its decision: the last placed or
-- changed amount, or 0 if it was removed afterwards; raises on one area are summed.
CREATE OR REPLACE VIEW wagers AS
WITH originals AS (
    SELECT
        table_id, shoe_id, round_no, seat, area, 'ORIGINAL' AS wager_kind,
        arg_min(player_id, (seq, log_offset)) FILTER (event_type = 'WagerPlaced') AS player_id,
        arg_min(instrument, (seq, log_offset)) FILTER (event_type = 'WagerPlaced') AS instrument,
        arg_min(amount_cents, (seq, log_offset)) FILTER (event_type = 'WagerPlaced') AS placed_cents,
        arg_max(amount_cents, (seq, log_offset)) FILTER (event_type <> 'WagerRemoved') AS last_cents,
        max(seq) FILTER (event_type <> 'WagerRemoved') AS last_set_seq,
        max(seq) FILTER (event_type = 'WagerRemoved') AS removed_seq,
        min(seq) AS first_seq,
        min(occurred_at) AS placed_at,
        count(*) FILTER (event_type = 'WagerChanged') AS changes,
        count(*) FILTER (event_type = 'WagerPlaced') AS placements
    FROM events
    WHERE event_type IN ('WagerPlaced', 'WagerChanged', 'WagerRemoved')
    GROUP BY table_id, shoe_id, round_no, seat, area
),
raises AS (
    SELECT
        table_id, shoe_id, round_no, seat, area, 'RAISE' AS wager_kind,
        sum(amount_cents)::BIGINT AS placed_cents, min(seq) AS first_seq,
        min(occurred_at) AS placed_at, count(*) AS placements
    FROM events
    WHERE event_type = 'RaisePlaced'
    GROUP BY table_id, shoe_id, round_no, seat, area
),
all_wagers AS (
    SELECT table_id, shoe_id, round_no, seat, area, wager_kind, player_id, instrument,
           placed_cents,
           CASE WHEN removed_seq > last_set_seq THEN 0 ELSE last_cents END AS amount_cents,
           coalesce(removed_seq > last_set_seq, false) AS removed,
           changes, placements, first_seq, placed_at
    FROM originals
    UNION ALL
    SELECT r.table_id, r.shoe_id, r.round_no, r.seat, r.area, r.wager_kind, o.player_id,
           NULL, r.placed_cents, r.placed_cents, false, 0, r.placements, r.first_seq,
           r.placed_at
    FROM raises AS r
    LEFT JOIN originals AS o
           ON o.table_id = r.table_id AND o.shoe_id IS NOT DISTINCT FROM r.shoe_id
          AND o.round_no = r.round_no AND o.seat = r.seat AND o.area = r.area
),
settled AS (
    SELECT table_id, shoe_id, round_no, seat, area, wager_kind,
           count(*) AS settlements,
           arg_max(outcome, (seq, log_offset)) AS settled_outcome,
           arg_max(amount_cents, (seq, log_offset)) AS settled_cents,
           arg_max(odds, (seq, log_offset)) AS settled_odds
    FROM settlements
    GROUP BY table_id, shoe_id, round_no, seat, area, wager_kind
)
SELECT w.*, coalesce(s.settlements, 0) AS settlements, s.settled_outcome, s.settled_cents,
       s.settled_odds
FROM all_wagers AS w
-- a round dealt with no shoe: its settlements with no shoe are its wagers' (docs/auditing.md)
LEFT JOIN settled AS s
       ON s.table_id = w.table_id AND s.shoe_id IS NOT DISTINCT FROM w.shoe_id
      AND s.round_no = w.round_no AND s.seat = w.seat AND s.area = w.area
      AND s.wager_kind = w.wager_kind
ORDER BY table_id, shoe_id, round_no, seat, area, wager_kind;

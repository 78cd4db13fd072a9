-- Each table's event stream: sequence numbers and hash links (integrity).
CREATE OR REPLACE VIEW anomalies_found_streams AS
WITH
-- Each table's stream in seq order (docs/architecture.md, principle 2).
chained AS (
    SELECT table_id, shoe_id, round_no, seq, occurred_at, prev_hash,
           lag(seq) OVER w AS prev_seq, lag(hash) OVER w AS prev_event_hash
    FROM events
    WINDOW w AS (PARTITION BY table_id ORDER BY seq, log_offset)
)
SELECT * FROM (
    -- SEQUENCE_GAP (integrity): a jump in a table's seq (an event lost or deleted).
    SELECT 'SEQUENCE_GAP', table_id, shoe_id, round_no,
           list_filter([prev_seq, seq], lambda s: s IS NOT NULL),
           CASE WHEN seq - coalesce(prev_seq, 0) = 2
                THEN printf('Sequence number %d is missing from table %s''s stream (an event lost or deleted)',
                            coalesce(prev_seq, 0) + 1, table_id)
                ELSE printf('Sequence numbers %d to %d are missing from table %s''s stream (events lost or deleted)',
                            coalesce(prev_seq, 0) + 1, seq - 1, table_id) END,
           occurred_at
    FROM chained
    WHERE seq > coalesce(prev_seq, 0) + 1

    UNION ALL
    -- CHAIN_BROKEN (integrity): an event whose bytes do not match its own hash, as the
    -- projector found when it loaded it (events.hash_ok; NULL in rows loaded before it checked).
    SELECT 'CHAIN_BROKEN', table_id, shoe_id, round_no, [seq],
           printf('Event %d of table %s does not match its own hash: its bytes were altered after it was recorded',
                  seq, table_id),
           occurred_at
    FROM events
    WHERE hash_ok = false

    UNION ALL
    -- CHAIN_BROKEN (integrity): between neighbouring seqs, the later event's prev_hash must be
    -- the earlier one's hash (the first event's: 32 zero bytes). An event altered in place
    -- without resealing keeps valid links here, and the check above finds it.
    SELECT 'CHAIN_BROKEN', table_id, shoe_id, round_no,
           list_filter([prev_seq, seq], lambda s: s IS NOT NULL),
           CASE WHEN prev_seq IS NULL
                THEN printf('Event %d, the first of table %s, does not start the hash chain', seq, table_id)
                ELSE printf('Event %d of table %s does not link to event %d: its prev_hash is not that event''s hash (an event altered)',
                            seq, table_id, prev_seq) END,
           occurred_at
    FROM chained
    WHERE seq <= coalesce(prev_seq, 0) + 1
      AND prev_hash IS DISTINCT FROM coalesce(prev_event_hash, repeat('\x00', 32)::BLOB)

    UNION ALL
    -- DUPLICATE_EVENT (integrity): one event id more than once in a table's stream, e.g. a
    -- device line re-sent and recorded again (events/recording/event_ids.py refuses that at ingest, but
    -- two writers at the same instant, or another writer, can still do it). One row per id,
    -- at its last copy; every copy's seq is proof.
    SELECT 'DUPLICATE_EVENT', table_id, arg_max(shoe_id, (seq, log_offset)),
           arg_max(round_no, (seq, log_offset)),
           list(seq ORDER BY seq),
           printf('Event id %s is recorded %d times in table %s''s stream (seqs %s): one event counted more than once',
                  event_id, count(*), table_id, array_to_string(list(seq ORDER BY seq), ', ')),
           max(occurred_at)
    -- the ids with copies first: the picks above then run over their rows alone (this
    -- query in 0.58x the CPU of one pass picking over every id, benchmarks/results.md)
    FROM events SEMI JOIN (SELECT table_id, event_id FROM events WHERE event_id IS NOT NULL
                           GROUP BY ALL HAVING count(*) > 1) AS copied USING (table_id, event_id)
    GROUP BY table_id, event_id
) AS found(code, table_id, shoe_id, round_no, seqs, explanation, occurred_at);

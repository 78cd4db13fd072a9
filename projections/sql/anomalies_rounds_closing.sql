-- The rounds family (sql/anomalies_rounds.sql), how its rounds ended: the cutting card, the discard
-- rack (every card out of the shoe reaches it), device faults and voids.
CREATE OR REPLACE MACRO round_closing_anomalies(round_facts) AS TABLE
WITH
-- the round facts, read once by the family view (sql/anomalies_rounds.sql)
facts AS NOT MATERIALIZED (SELECT * FROM query_table(round_facts)),

-- The discard rack round by round (13:47-20.31(d)15; GA (12)): every card drawn in a round
-- (CardDrawn, any box) against the cards of its CardsRacked, as lists (the round facts'
-- dealt_cards and racked_cards) and, where they differ, as multisets (copies of each card).
-- A round whose shoe_id is NULL is not judged (it matches no round by table, shoe and round).
rack_differs AS MATERIALIZED (
    SELECT table_id, shoe_id, round_no, dealt_cards AS dealt, racked_cards AS racked,
           dealt_seqs AS card_seqs, racked_seq, finished, ended_at
    FROM facts
    WHERE rack_differs AND shoe_id IS NOT NULL
),

rack_copies AS (
    SELECT table_id, shoe_id, round_no, c.rank, c.suit,
           count(*) FILTER (src = 'dealt') AS dealt_n, count(*) FILTER (src = 'racked') AS racked_n,
           list(s) FILTER (src = 'dealt') AS seqs
    FROM (SELECT table_id, shoe_id, round_no, 'dealt' AS src, unnest(dealt) AS c,
                 unnest(card_seqs) AS s FROM rack_differs
          UNION ALL
          SELECT table_id, shoe_id, round_no, 'racked', unnest(racked), NULL FROM rack_differs)
    GROUP BY ALL
),

rack_check AS (
    SELECT d.table_id, d.shoe_id, d.round_no, d.racked_seq, d.card_seqs, d.finished, d.ended_at,
           coalesce(list(card_label(c.rank, c.suit) ORDER BY c.rank, c.suit)
                    FILTER (c.dealt_n > c.racked_n), []) AS missing,
           coalesce(flatten(list(c.seqs ORDER BY c.rank, c.suit) FILTER (c.dealt_n > c.racked_n)),
                    []::BIGINT[]) AS missing_seqs,
           coalesce(list(card_label(c.rank, c.suit) ORDER BY c.rank, c.suit)
                    FILTER (c.racked_n > c.dealt_n), []) AS not_dealt,
           -- 'nothing' for no card: a round racked whose cards were all stamped with another
           -- round or shoe id still has an explanation (a NULL would make it NULL)
           coalesce(nullif(array_to_string(list_transform(d.dealt, lambda x: card_label(x.rank, x.suit)), ' '), ''),
                    'nothing') AS dealt,
           coalesce(nullif(array_to_string(list_transform(d.racked, lambda x: card_label(x.rank, x.suit)), ' '), ''),
                    'nothing') AS racked
    FROM rack_differs AS d
    LEFT JOIN rack_copies AS c USING (table_id, shoe_id, round_no)
    GROUP BY ALL
),

-- 13:47-20.31(d)15, (g)1-2: every card out of the shoe reaches the discard rack. A card dealt
-- with no round, or for round 0 (no round of play, (d)5: "To begin each round of play";
-- sql/anomalies_rounds.sql reads rounds 1 and up), is no round's card (CARD_OUTSIDE_ROUND), so
-- no round's rack check above sees it:
-- by the time its shoe is closed it must be racked, beyond the cards of the round whose
-- CardsRacked holds it (rack_copies: a round's racked copies over its dealt ones) or in a
-- CardsRacked with no round (or round 0). The cards dealt are sql/macros.sql's is_dealt_card,
-- each card's neighbours the cards out just before and after it in its shoe, burns included (as
-- round_cards, the shoes' cards_out and face_up_placements_of read them), in game order, when
-- they too have no round (or round 0): a card drawn in error and then drawn (the same card, (g)2) is one card, and a card
-- found face up then drawn to the rack is racked as found ((g)1); with a burn, or a round's
-- card, out between them they are two cards (as CARD_OUTSIDE_ROUND counts them).
loose_cards AS (
    SELECT table_id, shoe_id, round_no, rank, suit, seq, destination,
           row_number() OVER (PARTITION BY table_id, shoe_id, rank, suit ORDER BY seq, log_offset)
               AS copy_no
    FROM (SELECT *,
                 CASE WHEN coalesce(lag(round_no) OVER w <= 0, true) THEN lag(this_card) OVER w END
                     AS card_before,
                 CASE WHEN coalesce(lead(round_no) OVER w <= 0, true) THEN lead(this_card) OVER w END
                     AS card_after
          FROM (SELECT *, {'type': event_type, 'rank': rank, 'suit': suit, 'dest': destination}
                              AS this_card
                FROM card_events_of(NULL, NULL, NULL, NULL)  -- each card once (sql/macros.sql)
                -- only a shoe with a card drawn with no round (or round 0) has any (most have
                -- none: the burns have no round, but no burn is a card dealt)
                WHERE shoe_id IS NOT NULL AND (table_id, shoe_id) IN (
                    SELECT (table_id, shoe_id) FROM events
                    WHERE coalesce(round_no <= 0, true) AND shoe_id IS NOT NULL
                      AND event_type IN ('CardDrawn', 'CardDrawnInError')))
          WINDOW w AS (PARTITION BY table_id, shoe_id ORDER BY occurred_at, seq, log_offset))
    WHERE coalesce(round_no <= 0, true) AND is_dealt_card(card_before, this_card, card_after)
),

racked_beyond_rounds AS (
    SELECT table_id, shoe_id, rank, suit, sum(n)::BIGINT AS racked_n
    FROM (SELECT table_id, shoe_id, rank, suit, racked_n - dealt_n AS n FROM rack_copies
          WHERE racked_n > dealt_n
          UNION ALL
          SELECT table_id, shoe_id, c.rank, c.suit, 1
          FROM (SELECT table_id, shoe_id, unnest(cards) AS c FROM events
                WHERE event_type = 'CardsRacked' AND coalesce(round_no <= 0, true)
                  AND shoe_id IS NOT NULL))
    GROUP BY ALL
),

loose_unracked AS (
    SELECT l.table_id, l.shoe_id, l.round_no, l.rank, l.suit, l.seq, l.destination,
           c.seq AS closed_seq,
           c.occurred_at
    FROM loose_cards AS l
    LEFT JOIN racked_beyond_rounds AS r USING (table_id, shoe_id, rank, suit)
    ASOF JOIN (SELECT table_id, shoe_id, seq, occurred_at FROM events
               WHERE event_type = 'ShoeClosed') AS c
        ON c.table_id = l.table_id AND c.shoe_id = l.shoe_id AND c.seq > l.seq
    WHERE l.copy_no > coalesce(r.racked_n, 0)
),

-- Each round's first RoundVoided and dealing-shoe fault, in game order (sql/rounds.sql, void_allowed
-- and game_order, which the rounds view and the ledger read too).
voids AS (
    SELECT table_id, shoe_id, round_no,
           min(game_order(occurred_at, seq)) FILTER (event_type = 'RoundVoided') AS void_order,
           arg_min(reason, (game_order(occurred_at, seq), log_offset)) FILTER (event_type = 'RoundVoided') AS void_reason,
           min(game_order(occurred_at, seq)) FILTER (event_type = 'DeviceFaulted' AND fault <> 'SHUFFLER_JAM')
               AS shoe_fault_order
    FROM events
    WHERE event_type IN ('RoundVoided', 'DeviceFaulted') AND round_no IS NOT NULL
    GROUP BY ALL
    HAVING min(seq) FILTER (event_type = 'RoundVoided') IS NOT NULL
),

-- Device faults (13:69F-34.16(m)-(n), applied by analogy) and what followed each.
faults AS (
    SELECT f.table_id, f.shoe_id, f.round_no, f.seq, f.occurred_at, f.fault, f.device_id,
           -- a dealing shoe's jam: a card of the cards it held, not of the shoe id loaded
           -- again with new cards after it (the handling the rule asks for: the shoe closed and
           -- a new shoe; an outside review, session 37). A shuffler's jam: any card before a
           -- reshuffle, loaded again or not.
           CASE WHEN f.fault = 'SHUFFLER_JAM' OR l.seq IS NULL OR c.seq < l.seq THEN c.seq END
               AS card_seq,
           s.seq AS reshuffle_seq, min(v.seq) AS void_seq, r.finished
    FROM events AS f
    -- the next card out of the same shoe, the next shuffle begun for it and its next load (seq:
    -- the fault, the cards, the shuffle and the load are the devices' own lines, each in its own
    -- order)
    ASOF LEFT JOIN (SELECT table_id, shoe_id, seq FROM events
                    WHERE is_card_event(event_type)) AS c
        ON c.table_id = f.table_id AND c.shoe_id = f.shoe_id AND f.seq < c.seq
    ASOF LEFT JOIN (SELECT table_id, shoe_id, seq FROM events WHERE event_type = 'ShuffleStarted') AS s
        ON s.table_id = f.table_id AND s.shoe_id = f.shoe_id AND f.seq < s.seq
    ASOF LEFT JOIN (SELECT table_id, shoe_id, load_seq AS seq FROM shoe_loads_of()) AS l
        ON l.table_id = f.table_id AND l.shoe_id = f.shoe_id AND f.seq < l.seq
    -- the void (a terminal line) after the fault (the device's) in game order (sql/macros.sql)
    LEFT JOIN events AS v
        ON v.table_id = f.table_id AND v.shoe_id = f.shoe_id AND v.round_no = f.round_no
       AND v.event_type = 'RoundVoided'
       AND game_order(v.occurred_at, v.seq) > game_order(f.occurred_at, f.seq)
    LEFT JOIN facts AS r
        ON r.table_id = f.table_id AND r.shoe_id = f.shoe_id AND r.round_no = f.round_no
    WHERE f.event_type = 'DeviceFaulted'
    GROUP BY ALL
)
SELECT * FROM (
    -- ROUND_ABANDONED_AT_CUT_CARD (13:47-20.31(d)16; GA (13)): the cutting card came out in
    -- this round and the finished round never reached its decision (two cards, and a third
    -- unless consecutive).
    SELECT 'ROUND_ABANDONED_AT_CUT_CARD', table_id, shoe_id, round_no, [cut_seq] || card_seqs,
           printf('The cutting card came out and the round stopped with %s on the layout instead of being completed',
                  CASE WHEN len(card_seqs) = 0 THEN 'no card'
                       WHEN kind IS NULL THEN coalesce(left_card, right_card, 'a card')
                       ELSE left_card || ' and ' || right_card END),
           ended_at
    FROM facts
    WHERE cut_seq IS NOT NULL AND NOT voided AND finished
      AND (kind IS NULL OR (kind <> 'consecutive' AND third_card_seq IS NULL))

    UNION ALL
    -- NO_RESHUFFLE_AFTER_CUT_CARD (13:47-20.31(d)16; GA (13)): once the cutting card is out,
    -- the round in progress is completed and the cards reshuffled: any later round dealt from
    -- the same shoe, of the same load (a shoe id loaded again after a reshuffle holds new cards
    -- and its own cutting card; an outside review, session 37).
    SELECT 'NO_RESHUFFLE_AFTER_CUT_CARD', f.table_id, f.shoe_id, f.round_no,
           [c.cut_seq] || f.card_seqs[:1],
           printf('Round %d was dealt from shoe %s after the cutting card came out%s',
                  f.round_no, f.shoe_id, coalesce(printf(' in round %d', c.cut_round), '')),
           f.started_at
    FROM facts AS f
    -- a cut recorded for round 0 is a cut with no round (round 0 is no round of play, (d)5:
    -- sql/anomalies_rounds.sql); each load's first cut (its load: the shoe's last before it)
    JOIN (SELECT table_id, shoe_id, load_seq, min(seq) AS cut_seq,
                 nullif(arg_min(round_no, (seq, log_offset)), 0) AS cut_round
          FROM (SELECT e.table_id, e.shoe_id, e.seq, e.log_offset, e.round_no,
                       coalesce(l.seq, -1) AS load_seq
                FROM events AS e
                ASOF LEFT JOIN (SELECT table_id, shoe_id, load_seq AS seq
                                FROM shoe_loads_of()) AS l  -- each load once (macros.sql)
                    ON l.table_id = e.table_id AND l.shoe_id = e.shoe_id AND e.seq > l.seq
                WHERE e.event_type = 'CuttingCardReached' AND e.shoe_id IS NOT NULL)
          GROUP BY ALL) AS c USING (table_id, shoe_id)
    WHERE f.first_seq > c.cut_seq AND f.round_no IS DISTINCT FROM c.cut_round
      -- the round is of the cut's load: no load of the shoe between the cut and the round
      AND NOT EXISTS (SELECT 1 FROM shoe_loads_of() AS l
                      WHERE l.table_id = f.table_id AND l.shoe_id = f.shoe_id
                        AND l.load_seq > c.cut_seq AND l.load_seq < f.first_seq)
      AND len(f.card_seqs) > 0

    UNION ALL
    -- DISCARD_RACK_ORDER (13:47-20.31(d)15; GA (12)): a finished round never racked; a racked
    -- card not drawn in the round; or the same cards racked in another order. When a card is
    -- missing from the rack that is CARD_UNACCOUNTED, and the order of the rest is not judged.
    SELECT 'DISCARD_RACK_ORDER', table_id, shoe_id, round_no,
           CASE WHEN racked_seq IS NULL THEN card_seqs ELSE [racked_seq] END,
           CASE WHEN racked_seq IS NULL THEN 'The cards ' || dealt || ' were never racked'
                WHEN len(not_dealt) > 0
                THEN printf('Racked %s, which were not drawn in this round (dealt %s, racked %s)',
                            array_to_string(not_dealt, ' '), dealt, racked)
                ELSE printf('Racked %s, dealt %s: not in dealing order', racked, dealt) END,
           ended_at
    FROM rack_check
    WHERE (racked_seq IS NULL AND finished AND len(card_seqs) > 0)
       OR (racked_seq IS NOT NULL AND len(not_dealt) > 0)
       OR (racked_seq IS NOT NULL AND len(missing) = 0 AND len(not_dealt) = 0)

    UNION ALL
    -- CARD_UNACCOUNTED (13:47-20.31(d)15): a card drawn in a round is not in its rack.
    SELECT 'CARD_UNACCOUNTED', table_id, shoe_id, round_no, list_sort(missing_seqs || [racked_seq]),
           printf('%s left the shoe but never reached the rack (dealt %s, racked %s)',
                  array_to_string(missing, ' '), dealt, racked),
           ended_at
    FROM rack_check
    WHERE racked_seq IS NOT NULL AND len(missing) > 0

    UNION ALL
    -- CARD_UNACCOUNTED (13:47-20.31(d)15; (g)1-2): a card dealt with no round (or for round 0)
    -- never reached the rack before its shoe was closed (loose_unracked). Proof: the card and
    -- the shoe's closing.
    SELECT 'CARD_UNACCOUNTED', table_id, shoe_id, NULL, [seq, closed_seq],
           CASE WHEN destination = 'DISCARD_RACK'  -- drawn there, but in no rack's count
                THEN printf('%s left shoe %s %s, drawn to the discard rack, but no rack count held it before the shoe was closed',
                            card_label(rank, suit), shoe_id, no_round)
                ELSE printf('%s left shoe %s %s and never reached the rack before the shoe was closed',
                            card_label(rank, suit), shoe_id, no_round) END,
           occurred_at
    FROM (SELECT *, coalesce(printf('for round %d, which is no round', round_no), 'with no round')
                        AS no_round
          FROM loose_unracked)

    UNION ALL
    -- DEVICE_FAULT_NOT_VOIDED (13:69F-34.16(m)-(n) by analogy): a shuffler jam must be followed
    -- by a reshuffle (ShuffleStarted) before any card comes out; a dealing-shoe jam by
    -- RoundVoided in its round (once the round is over) and no further card from that shoe.
    SELECT 'DEVICE_FAULT_NOT_VOIDED', table_id, shoe_id, round_no,
           list_filter([seq, card_seq], lambda s: s IS NOT NULL),
           CASE fault
               WHEN 'SHUFFLER_JAM' THEN printf('Shuffler %s jammed and cards were dealt without a reshuffle', device_id)
               ELSE printf('Dealing shoe %s jammed and the round was %s', device_id,
                           concat_ws(' and ',
                               CASE WHEN void_seq IS NULL THEN 'not voided' END,
                               CASE WHEN card_seq IS NOT NULL THEN 'dealt on from the same shoe' END)) END,
           occurred_at
    FROM faults
    WHERE CASE fault
        WHEN 'SHUFFLER_JAM' THEN card_seq IS NOT NULL AND (reshuffle_seq IS NULL OR reshuffle_seq > card_seq)
        ELSE card_seq IS NOT NULL
             OR (round_no IS NOT NULL AND void_seq IS NULL AND finished) END

    UNION ALL
    -- ROUND_VOIDED_WITHOUT_CAUSE: a RoundVoided the rules do not allow (sql/rounds.sql, void_allowed:
    -- 13:69F-34.16(n) by analogy, a dealing-shoe fault in the round before it; 13:47-20.31(d)7
    -- and (d)10, a tie hand), before the deciding third card or after it. It voids nothing: the
    -- ledger judges every wager against the deciding third card (13:47-20.31(d)13-14: "The
    -- player shall win if the value of the third card dealt is between ... and shall lose if ...
    -- not between"), so wagers returned on a decided round are also WRONG_SETTLEMENT, and on an
    -- undecided one SETTLED_BEFORE_DECISION. Proof: the deciding third card, if any, and the void.
    SELECT 'ROUND_VOIDED_WITHOUT_CAUSE', v.table_id, v.shoe_id, v.round_no,
           list_filter([f.third_card_seq, v.void_order.seq], lambda s: s IS NOT NULL),
           CASE WHEN f.third_card_order IS NULL OR f.third_card_order > v.void_order
                THEN printf('Round %d was voided ("%s") before any third card decided it, with no dealing-shoe fault before the void and no tie hand: nothing in the rules voids it',
                            v.round_no, v.void_reason)
                ELSE printf('Round %d was voided ("%s") after the third card %s had decided it (%s and %s, %s: %s); no dealing-shoe fault came before the void and the cards are no tie hand, so nothing voids it',
                            v.round_no, v.void_reason, f.middle_card, f.left_card, f.right_card,
                            CASE WHEN f.kind = 'pair' THEN 'a pair' ELSE printf('spread %d', f.spread) END,
                            third_card_verdict(f.kind, f.left_rank, f.right_rank, f.middle_rank)) END,
           v.void_order.at
    FROM voids AS v
    JOIN facts AS f
        ON f.table_id = v.table_id AND f.shoe_id IS NOT DISTINCT FROM v.shoe_id AND f.round_no = v.round_no
    WHERE NOT void_allowed(f.kind, f.left_rank, f.middle_rank, v.void_order, v.shoe_fault_order)
) AS found(code, table_id, shoe_id, round_no, seqs, explanation, occurred_at);

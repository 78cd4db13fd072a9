-- Whether a round's RoundVoided (its first in game order, at void_order) is one the rules allow; a void they
-- do not allow voids nothing: the ledger judges the wagers against the cards (with no deciding
-- card yet, wagers returned are SETTLED_BEFORE_DECISION), and sql/anomalies_rounds.sql flags it
-- (ROUND_VOIDED_WITHOUT_CAUSE). The seeds void every wager of a round only:
--   13:47-20.31(d)7; GA (5): consecutive cards, "all wagers shall be void";
--   13:47-20.31(d)10; GA (8): a pair whose deciding third card is "not identical in value to
--     the initial two cards", "all wagers shall be void";
--   13:69F-34.16(n), by analogy: "If an automated dealing shoe ... jams, stops dealing cards, or
--     fails to deal all cards during a round of play, the round of play shall be void": a
--     dealing-shoe fault (DeviceFaulted, any fault but SHUFFLER_JAM) in the round before the void.
-- Nothing else: (g)3's void is each player's own choice (VoidOrPlayChosen), never a RoundVoided,
-- and no clause lets a dealer void a round on his own word, before the deciding card or after
-- it. So a void needs its cause in the events, before or after the deciding card alike. What
-- the events cannot tell: a DeviceFaulted is a device's own report, and one recorded falsely
-- (a terminal line typed to cover a void) reads exactly as a real one; only the device's own
-- log or the surveillance video can tell them apart.
-- void_order and shoe_fault_order are game_order structs (game_order in macros.sql): a fault keyed at
-- the shoe before the void comes before it, whichever line reached the recorder first.
CREATE OR REPLACE MACRO void_allowed(kind, left_rank, third_rank, void_order, shoe_fault_order) AS
    void_order IS NOT NULL AND (
        coalesce(shoe_fault_order < void_order, false)
        OR coalesce(kind = 'consecutive', false)
        OR coalesce(kind = 'pair' AND third_rank <> left_rank, false));

-- One row per round. The dealer is the one whose DealerTappedIn is the table's latest at or
-- before the round's first card ((d)5), or its first event while no card is out. The round's cards are round_cards in macros.sql (every card out of
-- the shoe, in game order, wherever it went): the left and right cards (left_*, right_*,
-- left_seq, right_seq) are the FIRST and SECOND cards out, whichever box they went to
-- (13:47-20.31(d)5 names them "the first card" and "the second card"; a wrong box is WRONG_BOX,
-- it never changes the spread). The middle card (middle_rank, middle_suit, middle_card,
-- third_card_seq, third_card_pos: its place in the round's cards) is the deciding third card
-- of deciding_index in cards.sql, never a later one, and `third_card_box` says where the dealer put it
-- ('MIDDLE'; elsewhere: THIRD_CARD_DIVERTED; NULL: a card drawn in error and not used);
-- `redrawn_cards` lists every card out after it, to any box; `card_seqs` the seqs of the
-- round's cards in order; `middle_cards_drawn` counts every card to the middle box. `voided` is a
-- RoundVoided the rules allow (void_allowed above); a void without cause voids nothing, and
-- `outcome` follows the cards (ROUND_VOIDED_WITHOUT_CAUSE). `exposed_order` and
-- `exposure_window_end` bound the window in which a player's void-or-play choice counts
-- ((g)3; sql/cards.sql, in_exposure_window): the ledger's voids by choice.
--
-- rounds_of(in_table, in_shoe, in_round, from_seq, to_seq) is the rounds view's rows of one
-- table, shoe and round (a NULL argument: all of them), so that a dispute or a replay does not
-- aggregate every round of the store to read a few (the `rounds` view below is
-- rounds_of(NULL, NULL, NULL, NULL, NULL)). from_seq and to_seq, given with in_table, only speed
-- the scan up (events are stored in log order, so DuckDB skips the row groups outside them):
-- they must bracket every event of the rounds asked for, or be NULL. The dealer is still looked
-- up among all the table's DealerTappedIn up to to_seq, and from taps_from when given: the seq
-- of the table's latest DealerTappedIn at or before from_seq (projections/lookup.py finds it),
-- before which no tap can be a round's latest, so only the scan is shorter.
CREATE OR REPLACE MACRO rounds_of(in_table, in_shoe, in_round, from_seq, to_seq,
                                  taps_from := NULL) AS TABLE
WITH per_round AS (
    SELECT
        table_id, shoe_id, round_no,
        min(occurred_at) AS started_at, max(occurred_at) AS ended_at,
        min(seq) AS first_seq, max(seq) AS last_seq, count(*) AS events,
        min(game_order(occurred_at, seq)) FILTER (event_type = 'Announced' AND meaning = 'RAISES_CLOSED')
            AS raises_closed,
        -- the cards out of the shoe in game order (round_cards)
        round_cards(list({'seq': seq, 'at': occurred_at, 'type': event_type, 'rank': rank,
                          'suit': suit, 'dest': destination}
                         ORDER BY occurred_at, seq, log_offset)
                    FILTER (is_card_event(event_type))) AS cards,
        count(*) FILTER (event_type = 'CardDrawn' AND destination = 'MIDDLE') AS middle_cards_drawn,
        string_agg(phrase, ' | ' ORDER BY seq, log_offset) FILTER (event_type = 'Announced') AS announcements,
        list(meaning ORDER BY seq, log_offset) FILTER (event_type = 'Announced') AS announced,
        count(*) FILTER (event_type = 'RoundVoided') > 0 AS void_recorded,
        -- void_allowed above: the round's first RoundVoided and dealing-shoe fault, in game order
        min(game_order(occurred_at, seq)) FILTER (event_type = 'RoundVoided') AS void_order,
        min(game_order(occurred_at, seq)) FILTER (event_type = 'DeviceFaulted' AND fault <> 'SHUFFLER_JAM')
            AS shoe_fault_order
    FROM events_once_of(in_table, in_shoe, from_seq, to_seq)
    WHERE round_no IS NOT NULL AND (in_round IS NULL OR round_no = in_round)
    GROUP BY table_id, shoe_id, round_no
),
dealer_taps AS (
    -- A dealer taps in before the rounds dealt: only the seq upper bound applies here. Of two
    -- taps at one seq (two writers, docs/integrity.md) the later in the log is the latest: the
    -- join below matches by seq alone.
    SELECT table_id, seq, dealer_id FROM events
    WHERE event_type = 'DealerTappedIn'
      AND (in_table IS NULL OR table_id = in_table) AND (to_seq IS NULL OR seq <= to_seq)
      AND (taps_from IS NULL OR seq >= taps_from)
    QUALIFY row_number() OVER (PARTITION BY table_id, seq ORDER BY log_offset DESC) = 1
),
classified AS (
    SELECT
        r.* EXCLUDE (cards), coalesce(r.cards, []) AS cards, t.dealer_id AS dealer,
        r.cards[1] AS l, r.cards[2] AS rt,
        round_kind(r.cards[1].rank, r.cards[2].rank) AS kind
    FROM per_round AS r
    -- The dealer in at the round's first card ((d)5: "To begin each round of play, the dealer
    -- shall place the first card"), else at its first event: a wager placed before a dealer
    -- change is no part of the dealing (an outside audit, session 38: the dealer who had
    -- tapped out was credited with the round).
    ASOF LEFT JOIN dealer_taps AS t
        ON r.table_id = t.table_id AND coalesce(r.cards[1].seq, r.first_seq) >= t.seq
),
decided AS (
    SELECT *, deciding_index(cards, kind, raises_closed) AS third_pos
    FROM classified
),
placed AS (
    SELECT *, cards[third_pos] AS third,
           exposed_cards(cards, kind, raises_closed)[1] AS exposed  -- sql/cards.sql
    FROM decided
),
void_judged AS (
    -- `voided`: a RoundVoided the rules allow (void_allowed); one they do not voids nothing.
    SELECT * EXCLUDE (void_recorded),
           void_recorded AND void_allowed(kind, l.rank, third.rank, void_order, shoe_fault_order)
               AS voided
    FROM placed
)
SELECT
    table_id, shoe_id, round_no, started_at, ended_at, dealer,
    l.rank AS left_rank, l.suit AS left_suit, card_label(l.rank, l.suit) AS left_card,
    rt.rank AS right_rank, rt.suit AS right_suit, card_label(rt.rank, rt.suit) AS right_card,
    l.seq AS left_seq, rt.seq AS right_seq,
    third.rank AS middle_rank, third.suit AS middle_suit,
    card_label(third.rank, third.suit) AS middle_card, third.seq AS third_card_seq,
    third.dest AS third_card_box, third_pos AS third_card_pos,
    CASE WHEN third_pos IS NULL THEN []::VARCHAR[]
         ELSE list_transform(cards[third_pos + 1:], lambda m: card_label(m.rank, m.suit)) END
        AS redrawn_cards,
    list_transform(cards, lambda c: c.seq) AS card_seqs,
    middle_cards_drawn, kind,
    CASE WHEN abs(l.rank - rt.rank) >= 2 THEN abs(l.rank - rt.rank) - 1 END AS spread,
    announcements, announced, voided,
    -- The players' result, from the cards (settlements are judged against it elsewhere):
    CASE WHEN voided THEN 'void'                   -- 13:69F-34.16(n) by analogy: a voided round
         WHEN kind IS NULL THEN NULL               -- the first two cards are not both out
         WHEN kind = 'consecutive' THEN 'void'     -- 13:47-20.31(d)7: tie hand, wagers returned
         WHEN third.rank IS NULL THEN NULL        -- no third card (yet)
         WHEN kind = 'pair' THEN CASE WHEN third.rank = l.rank
                                      THEN 'won'   -- (d)9: three of a kind
                                      ELSE 'void' END  -- (d)10: no three of a kind, tie hand
         -- (d)14; GA (11)(a): strictly between wins; equal to either card loses.
         WHEN third.rank > least(l.rank, rt.rank)
              AND third.rank < greatest(l.rank, rt.rank) THEN 'won'
         ELSE 'lost' END AS outcome,
    -- 13:47-20.31(g)3: the early-exposure protocol's window (sql/cards.sql,
    -- in_exposure_window), game_order structs: the first card exposed before "Raises closed",
    -- and where the window closes (exposure_window_end).
    game_order(exposed.at, exposed.seq) AS exposed_order,
    exposure_window_end(cards, raises_closed, third_pos) AS exposure_window_end,
    first_seq, last_seq, events
FROM void_judged;

CREATE OR REPLACE VIEW rounds AS
SELECT * FROM rounds_of(NULL, NULL, NULL, NULL, NULL)
ORDER BY table_id, shoe_id, round_no;

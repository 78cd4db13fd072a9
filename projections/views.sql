-- pitlog views over the raw `events` table (one row per event; see projections/store.py).
--
-- Written for auditors: plain DuckDB SQL, no Python functions, so these views work in any
-- DuckDB client that opens the file. Rules are cited as in docs/architecture.md:
--   13:47-20.31 (casino nights), 13:69F-6 (casinos), GA (n) (the other gaming authority).
--
-- Ordering: within a table, events are ordered by their gapless sequence number `seq`, with
-- the log offset as a tie-breaker (a table's events all live in one log partition), so every
-- view is a pure function of the log's contents: a rebuild gives the same rows, bit for bit.

-- A card as surveillance reads it aloud: rank (2..10, J, Q, K, A) then suit: "AS", "10H".
-- rank_label is generated from events/reddog/rules.py (projections/reddog_macros.py).
CREATE OR REPLACE MACRO card_label(rank, suit) AS rank_label(rank) || suit;

-- Integer cents as dollars: 2500 -> '$25.00'. Money is never a float.
CREATE OR REPLACE MACRO dollars(cents) AS
    CASE WHEN cents < 0 THEN '-' ELSE '' END
    || printf('$%d.%02d', abs(cents) // 100, abs(cents) % 100);

-- The game order of a table's events: when each happened at the table, then seq. A table's
-- events reach the log from several devices (the card-reading shoe, the dealer terminal, the
-- shuffler), each in its own order; `seq` is the order the recorder received them, which across
-- devices is arrival order (batches, retries, a slow link), not the order of play. So "before"
-- and "after" in a round (a card before "Raises closed", a choice before the new third card)
-- compare occurred_at, each device's stamp of the moment at the table, and seq breaks ties and
-- keeps one device's lines in its own order. seq stays the order of the log for integrity
-- (SEQUENCE_GAP, CHAIN_BROKEN) and names the events that prove an anomaly.
-- NULL for no event (a NULL seq): a struct of NULLs would compare greater than every order.
CREATE OR REPLACE MACRO game_order(happened_at, at_seq) AS
    CASE WHEN at_seq IS NOT NULL THEN {'at': happened_at, 'seq': at_seq} END;

-- THE CARDS OF A ROUND: every card out of the shoe in the round, in game order, wherever it
-- went, from `outs` (a list of {seq, at, type, rank, suit, dest} of the round's CardDrawn,
-- CardDrawnInError, CardFoundFaceUp and CardBurned in game order). One definition, used by the
-- rounds view (so the ledger, reconciliation, theo win, statistics, dispute and replay), the
-- hands view and the anomaly round facts:
--   - every CardDrawn, to any box or the discard rack: the first two out make the spread
--     (13:47-20.31(d)5: "the first card ... the second card"), the deciding third card is
--     counted from them (deciding_index), and where each went is judged only by WRONG_BOX,
--     THIRD_CARD_DIVERTED and THIRD_CARD_REDRAWN. A card racked between the first two is the
--     second card, not invisible;
--   - a card drawn in error "shall be used as though it were the next card from the shoe"
--     (13:47-20.31(g)2; 13:69F-6.7(b)): it takes its place in the order where it came out.
--     When the next card out is a CardDrawn of the same card (to any box or the rack), that is
--     the same physical card being placed: one card, the CardDrawn. Otherwise the card drawn
--     in error is the card at that place (dest NULL) and the cards after it come after it:
--     the dealer who draws a loser in error and deals a winner instead is judged on the loser
--     (DRAWN_IN_ERROR_NOT_USED flags it).
-- Burns and cards found face up are not cards of the round ((d)1, (g)1). A card found face up
-- "shall not be used in the game and shall be placed in the discard rack" (13:47-20.31(g)1;
-- 13:69F-6.7(a)): when the next card out is a CardDrawn of the same card to the discard rack,
-- that is the dealer placing it there, the same physical card: no card of the round (to a box,
-- it was used: FACE_UP_CARD_USED, and it counts where it went).
CREATE OR REPLACE MACRO round_cards(outs) AS
    list_filter(outs, lambda x, i: (x.type = 'CardDrawn' AND NOT coalesce(
                x.dest = 'DISCARD_RACK' AND i > 1 AND outs[i - 1].type = 'CardFoundFaceUp'
                AND outs[i - 1].rank = x.rank AND outs[i - 1].suit = x.suit, false))
        OR (x.type = 'CardDrawnInError' AND NOT coalesce(
                outs[i + 1].type = 'CardDrawn' AND outs[i + 1].rank = x.rank
                AND outs[i + 1].suit = x.suit, false)));

-- The kind of a round from its first two cards' ranks (13:47-20.31(d)7-8, (d)11; GA (5), (6),
-- (9)-(10)).
CREATE OR REPLACE MACRO round_kind(first_rank, second_rank) AS
    CASE WHEN first_rank IS NULL OR second_rank IS NULL THEN NULL
         WHEN first_rank = second_rank THEN 'pair'
         WHEN abs(first_rank - second_rank) = 1 THEN 'consecutive'
         ELSE 'spread' END;

-- The card events: every card out of the shoe, whichever way it came out (13:47-20.31(d)1-2,
-- (g)1-2): CardDrawn, CardDrawnInError, CardFoundFaceUp, CardBurned.
CREATE OR REPLACE MACRO is_card_event(kind) AS
    kind IN ('CardDrawn', 'CardDrawnInError', 'CardFoundFaceUp', 'CardBurned');

-- The events of the tables and shoes asked for (a NULL argument: all of them). from_seq and
-- to_seq, given with in_table, only narrow the scan (events are stored in log order, so DuckDB
-- skips the row groups outside them). The one place these predicates are written: every
-- *_of macro below reads its events through here (card_events_of, events_once_of).
CREATE OR REPLACE MACRO events_in(in_table, in_shoe, from_seq, to_seq) AS TABLE
SELECT * FROM events
WHERE (in_table IS NULL OR table_id = in_table) AND (in_shoe IS NULL OR shoe_id = in_shoe)
  AND (from_seq IS NULL OR seq >= from_seq) AND (to_seq IS NULL OR seq <= to_seq);

-- Each card event once (DUPLICATE_EVENT is the finding, docs/anomalies.md): the card events
-- (is_card_event) of the tables asked for (events_in), each event id at its first copy in seq
-- order. A card event recorded twice (a device line re-sent and recorded again) is one card out
-- of the shoe, so no card view counts the copy: the hands, the rounds, the rack, the shoes'
-- counts, the card anomalies, the dispute and the replay read their cards from here. An event
-- without an id is kept.
CREATE OR REPLACE MACRO card_events_of(in_table, in_shoe, from_seq, to_seq) AS TABLE
SELECT * FROM events_in(in_table, in_shoe, from_seq, to_seq)
WHERE is_card_event(event_type)
QUALIFY event_id IS NULL
     OR row_number() OVER (PARTITION BY table_id, event_id ORDER BY seq, log_offset) = 1;

-- The events of the tables asked for with each card event once (card_events_of); every other
-- event as recorded (a repeated wager or settlement is the ledger's to judge).
CREATE OR REPLACE MACRO events_once_of(in_table, in_shoe, from_seq, to_seq) AS TABLE
SELECT * FROM events_in(in_table, in_shoe, from_seq, to_seq)
WHERE NOT is_card_event(event_type)
UNION ALL
SELECT * FROM card_events_of(in_table, in_shoe, from_seq, to_seq);

-- Every event with a readable one-line description, in table order (pitlog replay).
CREATE OR REPLACE VIEW timeline AS
SELECT
    table_id, shoe_id, round_no, seq, occurred_at, recorded_at, actor, event_type,
    CASE event_type
        WHEN 'TableOpened' THEN printf('table opened: %s, pays %d/%d/%d/%d, three of a kind %d to 1, wagers %s to %s',
            profile, pays_spread_1, pays_spread_2, pays_spread_3, pays_spread_4_to_11,
            pays_three_of_a_kind, dollars(min_wager_cents), dollars(max_wager_cents))
        WHEN 'TableClosed' THEN 'table closed' || CASE WHEN reason <> '' THEN ': ' || reason ELSE '' END
        WHEN 'DealerTappedIn' THEN 'dealer ' || dealer_id || ' taps in'
        WHEN 'DealerTappedOut' THEN 'dealer ' || dealer_id || ' taps out'
        WHEN 'ShuffleStarted' THEN 'shuffle started (' || lower(method)
            || coalesce(', device ' || device_id, '') || ')'
        WHEN 'ShuffleCompleted' THEN 'shuffle completed (' || lower(method)
            || coalesce(', device ' || device_id, '') || ')'
        WHEN 'CardsCut' THEN printf('cards cut at %d', "position")
        WHEN 'CuttingCardPlaced' THEN printf('cutting card placed, %d cards behind it', cards_behind)
        WHEN 'CardsLoaded' THEN printf('%d deck%s loaded into shoe %s', decks,
            CASE WHEN decks = 1 THEN '' ELSE 's' END, shoe_id)
        WHEN 'CardBurned' THEN 'burns ' || card_label(rank, suit)
            || ' face down to the rack (' || lower(reason) || ')'
        WHEN 'BurnDisclosed' THEN 'burnt card disclosed: ' || card_label(rank, suit)
            || coalesce(printf(' (asked by seat %d)', requested_by_seat), '')
        WHEN 'CuttingCardReached' THEN 'cutting card reached'
        WHEN 'ShoeClosed' THEN printf('shoe closed, %d cards remaining', cards_remaining)
        WHEN 'DeviceFaulted' THEN 'device ' || device_id || ' fault: ' || lower(fault)
            || CASE WHEN detail <> '' THEN ' (' || detail || ')' ELSE '' END
        WHEN 'CardDrawn' THEN card_label(rank, suit)
            || CASE WHEN face_up THEN ' face up' ELSE ' face down' END
            || CASE destination WHEN 'DISCARD_RACK' THEN ' to the discard rack'
                   ELSE ' to the ' || lower(destination) || ' box' END
        WHEN 'CardFoundFaceUp' THEN card_label(rank, suit) || ' found face up in the shoe (not used)'
        WHEN 'CardDrawnInError' THEN card_label(rank, suit)
            || ' drawn in error (to be used as the next card, 13:47-20.31(g)2)'
        WHEN 'CardsRacked' THEN 'racks ' || array_to_string(
            list_transform(cards, lambda c: card_label(c.rank, c.suit)), ' ')
        WHEN 'Announced' THEN '"' || phrase || '" (' || lower(meaning)
            || coalesce(' ' || CAST("value" AS VARCHAR), '') || ')'
        WHEN 'RoundVoided' THEN 'round voided: ' || reason
        WHEN 'WagerPlaced' THEN printf('seat %d wagers %s (%s)', seat, dollars(amount_cents),
            replace(lower(instrument), '_', ' '))
            || CASE WHEN area <> seat THEN printf(' on area %d', area) ELSE '' END
        WHEN 'WagerChanged' THEN printf('seat %d changes the wager to %s', seat, dollars(amount_cents))
        WHEN 'WagerRemoved' THEN printf('seat %d removes the wager', seat)
        WHEN 'RaisePlaced' THEN printf('seat %d raises %s', seat, dollars(amount_cents))
        WHEN 'VoidOrPlayChosen' THEN printf('seat %d chooses to %s', seat,
            CASE choice WHEN 'VOID' THEN 'void the round' ELSE 'play the round out' END)
        WHEN 'WagerSettled' THEN printf('seat %d %s %s', seat,
            CASE wager_kind WHEN 'RAISE' THEN 'raise' ELSE 'wager' END,
            CASE outcome
                WHEN 'WON' THEN printf('won: paid %s at %d to 1', dollars(amount_cents), odds)
                WHEN 'LOST' THEN printf('lost: %s collected', dollars(amount_cents))
                ELSE printf('void: %s returned', dollars(amount_cents)) END)
        WHEN 'EventCorrected' THEN printf('corrects seq %d: %s', corrects_seq, reason)
        ELSE event_type
    END AS description,
    log_partition, log_offset
FROM events
ORDER BY table_id, seq, log_offset;

-- Every card that entered the discard rack, in rack order, per shoe (13:47-20.31(d)15; GA (12)):
-- burns (13:47-20.31(d)1, face down to the rack), cards found face up in the shoe
-- (13:47-20.31(g)1, not used, to the rack), and each round's cards in the order the dealer
-- actually racked them (CardsRacked). A hand is read back by its round_no.
--
-- rack_of(in_table, in_shoe, from_seq, to_seq) is the rack of one table and shoe (a NULL
-- argument: all of them; the `rack` view below is rack_of(NULL, NULL, NULL, NULL)). from_seq and
-- to_seq, given with in_table, only speed the scan up: they must bracket every event of the
-- shoes asked for (rack positions count from the shoe's first card), or be NULL.
CREATE OR REPLACE MACRO rack_of(in_table, in_shoe, from_seq, to_seq) AS TABLE
WITH shoe_events AS NOT MATERIALIZED (
    SELECT * FROM events_once_of(in_table, in_shoe, from_seq, to_seq)
),
entries AS (
    SELECT table_id, shoe_id, NULL::INTEGER AS round_no, 'burn' AS source, rank, suit,
           seq, log_offset, 1::BIGINT AS card_index, occurred_at
    FROM shoe_events WHERE event_type = 'CardBurned'
    UNION ALL
    SELECT table_id, shoe_id, round_no, 'face_up', rank, suit,
           seq, log_offset, 1::BIGINT, occurred_at
    FROM shoe_events WHERE event_type = 'CardFoundFaceUp'
    UNION ALL
    -- unnest in the select list (not a lateral join), so that a filter on the table and shoe
    -- is pushed down to the scan of events.
    SELECT table_id, shoe_id, round_no, 'round', card.rank, card.suit,
           seq, log_offset, card_index, occurred_at
    FROM (SELECT table_id, shoe_id, round_no, seq, log_offset, occurred_at,
                 unnest(cards) AS card, generate_subscripts(cards, 1) AS card_index
          FROM shoe_events WHERE event_type = 'CardsRacked')
)
SELECT
    table_id, shoe_id,
    row_number() OVER (PARTITION BY table_id, shoe_id
                       ORDER BY seq, log_offset, card_index) AS rack_position,
    round_no, source, rank, suit, card_label(rank, suit) AS card,
    seq, card_index, occurred_at
FROM entries;

CREATE OR REPLACE VIEW rack AS
SELECT * FROM rack_of(NULL, NULL, NULL, NULL)
ORDER BY table_id, shoe_id, rack_position;

-- Where the third card that decides a round sits in the round's cards (round_cards above, in
-- game order, every destination), from the round's kind and its first "Raises closed" (a
-- game_order struct, or NULL). Exactly one third card decides, and it is a card out of the shoe
-- counted from the first two, wherever the dealer put it (13:47-20.31(d)13: "The dealer shall
-- then draw a third card, place it face up on the box between the initial two cards"):
--   pair: the third card out (13:47-20.31(d)8-10; GA (6)-(8): "shall immediately draw a third
--     card");
--   spread: the first card out after the first "Raises closed", beyond the first two
--     (13:47-20.31(d)13-14; GA (11)); one exposed before it is discarded ((g)3; 13:69F-6.7).
--     When "Raises closed" was never said, the third card out, wherever it went: nothing
--     discarded it (EARLY_THIRD_CARD and EARLY_EXPOSURE_MISHANDLED flag the round), and which
--     card decides does not depend on the box it was put on.
-- A deciding card placed anywhere but the middle box is THIRD_CARD_DIVERTED, any card out after
-- it THIRD_CARD_REDRAWN (anomalies.sql); neither changes which card decides.
CREATE OR REPLACE MACRO deciding_index(cards, kind, raises_closed) AS
    CASE WHEN kind NOT IN ('pair', 'spread') OR len(cards) < 3 THEN NULL
         WHEN kind = 'pair' OR raises_closed IS NULL THEN 3
         ELSE list_position(list_transform(cards, lambda c, i: i >= 3
                  AND game_order(c.at, c.seq) > raises_closed), true) END;

-- Where a card went, as read aloud: "the middle box", "the discard rack".
CREATE OR REPLACE MACRO card_place(dest) AS
    CASE dest WHEN 'DISCARD_RACK' THEN 'the discard rack' ELSE 'the ' || lower(dest) || ' box' END;

-- What a card of a round did, for the dispute and the replay: from its place in the round's
-- cards (round_cards: `pos`, 1-based) and where it went (`dest`, NULL for a card drawn in error
-- and not used), the deciding third card's place (deciding_index) and the round's kind.
CREATE OR REPLACE MACRO card_role(pos, dest, third_pos, kind) AS
    CASE WHEN pos IS NULL THEN NULL
         WHEN pos = third_pos AND dest = 'MIDDLE' THEN 'the deciding third card'
         WHEN pos = third_pos AND dest IS NULL
         THEN 'the deciding third card, drawn in error: used as the next card, it decides (13:47-20.31(g)2)'
         WHEN pos = third_pos
         THEN 'the deciding third card, diverted to ' || card_place(dest)
              || ' instead of the middle box: it still decides (13:47-20.31(d)8, (d)13)'
         WHEN pos > third_pos
         THEN 'redrawn after the deciding third card: decides nothing (13:47-20.31(d)13-14)'
         WHEN pos <= 2 AND dest IS NULL
         THEN printf('the %s card, drawn in error: used as the next card (13:47-20.31(g)2)',
                     CASE pos WHEN 1 THEN 'first' ELSE 'second' END)
         WHEN pos <= 2 AND dest <> CASE pos WHEN 1 THEN 'LEFT' ELSE 'RIGHT' END
         THEN printf('the %s card out of the shoe, put on %s instead of the %s box: it still counts (13:47-20.31(d)5)',
                     CASE pos WHEN 1 THEN 'first' ELSE 'second' END, card_place(dest),
                     CASE pos WHEN 1 THEN 'left' ELSE 'right' END)
         WHEN pos <= 2 THEN NULL
         WHEN kind = 'consecutive'
         THEN 'drawn in a consecutive round: decides nothing (13:47-20.31(d)7)'
         WHEN kind = 'spread'
         THEN 'exposed before "Raises closed": discarded, decides nothing (13:47-20.31(g)3)'
         ELSE 'drawn out of turn: decides nothing' END;

-- Whether a round's RoundVoided (its first in game order, at void_order) is one the rules allow; a void they
-- do not allow voids nothing: the ledger judges the wagers against the cards (with no deciding
-- card yet, wagers returned are SETTLED_BEFORE_DECISION), and anomalies.sql flags it
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
-- void_order and shoe_fault_order are game_order structs (game_order above): a fault keyed at
-- the shoe before the void comes before it, whichever line reached the recorder first.
CREATE OR REPLACE MACRO void_allowed(kind, left_rank, third_rank, void_order, shoe_fault_order) AS
    void_order IS NOT NULL AND (
        coalesce(shoe_fault_order < void_order, false)
        OR coalesce(kind = 'consecutive', false)
        OR coalesce(kind = 'pair' AND third_rank <> left_rank, false));

-- One row per round. The dealer is the one whose DealerTappedIn is the table's latest at or
-- before the round's first event. The round's cards are round_cards above (every card out of
-- the shoe, in game order, wherever it went): the left and right cards (left_*, right_*,
-- left_seq, right_seq) are the FIRST and SECOND cards out, whichever box they went to
-- (13:47-20.31(d)5 names them "the first card" and "the second card"; a wrong box is WRONG_BOX,
-- it never changes the spread). The middle card (middle_rank, middle_suit, middle_card,
-- third_card_seq, third_card_pos: its place in the round's cards) is the deciding third card
-- of deciding_index above, never a later one, and `third_card_box` says where the dealer put it
-- ('MIDDLE'; elsewhere: THIRD_CARD_DIVERTED; NULL: a card drawn in error and not used);
-- `redrawn_cards` lists every card out after it, to any box; `card_seqs` the seqs of the
-- round's cards in order; `middle_cards_drawn` counts every card to the middle box. `voided` is a
-- RoundVoided the rules allow (void_allowed above); a void without cause voids nothing, and
-- `outcome` follows the cards (ROUND_VOIDED_WITHOUT_CAUSE).
--
-- rounds_of(in_table, in_shoe, in_round, from_seq, to_seq) is the rounds view's rows of one
-- table, shoe and round (a NULL argument: all of them), so that a dispute or a replay does not
-- aggregate every round of the store to read a few (the `rounds` view below is
-- rounds_of(NULL, NULL, NULL, NULL, NULL)). from_seq and to_seq, given with in_table, only speed
-- the scan up (events are stored in log order, so DuckDB skips the row groups outside them):
-- they must bracket every event of the rounds asked for, or be NULL. The dealer is still looked
-- up among all the table's DealerTappedIn up to to_seq.
CREATE OR REPLACE MACRO rounds_of(in_table, in_shoe, in_round, from_seq, to_seq) AS TABLE
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
    -- A dealer taps in before the rounds dealt: only the seq upper bound applies here.
    SELECT table_id, seq, dealer_id FROM events
    WHERE event_type = 'DealerTappedIn'
      AND (in_table IS NULL OR table_id = in_table) AND (to_seq IS NULL OR seq <= to_seq)
),
classified AS (
    SELECT
        r.* EXCLUDE (cards), coalesce(r.cards, []) AS cards, t.dealer_id AS dealer,
        r.cards[1] AS l, r.cards[2] AS rt,
        round_kind(r.cards[1].rank, r.cards[2].rank) AS kind
    FROM per_round AS r
    ASOF LEFT JOIN dealer_taps AS t ON r.table_id = t.table_id AND r.first_seq >= t.seq
),
decided AS (
    SELECT *, deciding_index(cards, kind, raises_closed) AS third_pos
    FROM classified
),
placed AS (
    SELECT *, cards[third_pos] AS third FROM decided
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
    first_seq, last_seq, events
FROM void_judged;

CREATE OR REPLACE VIEW rounds AS
SELECT * FROM rounds_of(NULL, NULL, NULL, NULL, NULL)
ORDER BY table_id, shoe_id, round_no;

-- One row per shoe. Dealers are listed in the order they first dealt or tapped in.
--
-- shoes_of(in_table, in_shoe, from_seq, to_seq) is the shoes view's rows of one table and shoe
-- (a NULL argument: all of them; the `shoes` view below is shoes_of(NULL, NULL, NULL, NULL)).
-- from_seq and to_seq, given with in_table, only speed the scan up: they must bracket every
-- event of the shoes asked for, or be NULL.
CREATE OR REPLACE MACRO shoes_of(in_table, in_shoe, from_seq, to_seq) AS TABLE
WITH shoe_events AS NOT MATERIALIZED (
    SELECT * FROM events_once_of(in_table, in_shoe, from_seq, to_seq)
    WHERE shoe_id IS NOT NULL
),
per_shoe AS (
    SELECT
        table_id, shoe_id,
        arg_min(decks, (seq, log_offset)) FILTER (event_type = 'CardsLoaded') AS decks,
        min(occurred_at) AS opened_at,
        min(occurred_at) FILTER (event_type = 'CardsLoaded') AS loaded_at,
        min(occurred_at) FILTER (event_type = 'ShoeClosed') AS closed_at,
        count(DISTINCT round_no) AS rounds,
        count(*) FILTER (event_type = 'CardDrawn') AS cards_dealt,
        count(*) FILTER (event_type = 'CardBurned') AS burns,
        count(*) FILTER (event_type = 'CardFoundFaceUp') AS cards_found_face_up,
        min(occurred_at) FILTER (event_type = 'CuttingCardReached') AS cutting_card_reached_at,
        arg_min(cards_remaining, (seq, log_offset)) FILTER (event_type = 'ShoeClosed') AS cards_remaining,
        min(seq) AS first_seq, max(seq) AS last_seq, count(*) AS events
    FROM shoe_events
    GROUP BY table_id, shoe_id
),
shoe_dealers AS (
    SELECT table_id, shoe_id, list(dealer ORDER BY first_seq, dealer) AS dealers
    FROM (
        SELECT table_id, shoe_id, dealer, min(at_seq) AS first_seq
        FROM (
            SELECT table_id, shoe_id, dealer, first_seq AS at_seq
            FROM rounds_of(in_table, in_shoe, NULL, from_seq, to_seq)
            WHERE dealer IS NOT NULL AND shoe_id IS NOT NULL
            UNION ALL
            SELECT table_id, shoe_id, dealer_id, seq
            FROM shoe_events WHERE event_type = 'DealerTappedIn'
        )
        GROUP BY table_id, shoe_id, dealer
    )
    GROUP BY table_id, shoe_id
)
SELECT
    s.table_id, s.shoe_id, decks, opened_at, loaded_at, closed_at, rounds, cards_dealt, burns,
    cards_found_face_up, cutting_card_reached_at, cards_remaining,
    coalesce(d.dealers, []::VARCHAR[]) AS dealers, first_seq, last_seq, events
FROM per_shoe AS s LEFT JOIN shoe_dealers AS d USING (table_id, shoe_id);

CREATE OR REPLACE VIEW shoes AS
SELECT * FROM shoes_of(NULL, NULL, NULL, NULL)
ORDER BY table_id, opened_at, shoe_id;

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
    FROM raises AS r LEFT JOIN originals AS o USING (table_id, shoe_id, round_no, seat, area)
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
LEFT JOIN settled AS s USING (table_id, shoe_id, round_no, seat, area, wager_kind)
ORDER BY table_id, shoe_id, round_no, seat, area, wager_kind;

-- Per round, the cards as dealt (the round's cards, round_cards above: every card out of the
-- shoe in game order, wherever it went, a card drawn in error and not used included) next to the cards as racked (13:47-20.31(d)15: "in order", so the two should be equal).
--
-- hands_of(in_table, in_shoe, from_seq, to_seq) is the hands of one table and shoe (a NULL
-- argument: all of them; the `hands` view below is hands_of(NULL, NULL, NULL, NULL)). from_seq
-- and to_seq, given with in_table, only speed the scan up: they must bracket every event of the
-- shoes asked for (the rack positions count from the shoe's first card), or be NULL.
CREATE OR REPLACE MACRO hands_of(in_table, in_shoe, from_seq, to_seq) AS TABLE
WITH dealt AS (
    -- round_cards: the cards out of the shoe in the round (one definition with the rounds view).
    SELECT table_id, shoe_id, round_no,
           list_transform(round_cards(outs), lambda x: card_label(x.rank, x.suit)) AS dealt_cards
    FROM (
        SELECT table_id, shoe_id, round_no,
               list({'seq': seq, 'at': occurred_at, 'type': event_type, 'rank': rank,
                     'suit': suit, 'dest': destination}
                    ORDER BY occurred_at, seq, log_offset) AS outs
        FROM card_events_of(in_table, in_shoe, from_seq, to_seq)  -- card events, each once
        WHERE round_no IS NOT NULL
        GROUP BY table_id, shoe_id, round_no
    )
    WHERE len(round_cards(outs)) > 0
),
racked AS (
    SELECT table_id, shoe_id, round_no,
           list(card ORDER BY rack_position) AS racked_cards,
           min(rack_position) AS first_rack_position,
           max(rack_position) AS last_rack_position
    FROM rack_of(in_table, in_shoe, from_seq, to_seq)
    WHERE source = 'round'
    GROUP BY table_id, shoe_id, round_no
)
SELECT
    table_id, shoe_id, round_no,
    array_to_string(dealt_cards, ' ') AS dealt, array_to_string(racked_cards, ' ') AS racked,
    coalesce(dealt_cards IS NOT DISTINCT FROM racked_cards, false) AS racked_in_dealing_order,
    dealt_cards, racked_cards, first_rack_position, last_rack_position
FROM dealt FULL OUTER JOIN racked USING (table_id, shoe_id, round_no);

CREATE OR REPLACE VIEW hands AS
SELECT * FROM hands_of(NULL, NULL, NULL, NULL)
ORDER BY table_id, shoe_id, round_no;

-- Cards out of the shoe inside a round where the rules allow none (anomalies.sql:
-- BURN_DURING_ROUND, CARD_OUTSIDE_ROUND; ledger.sql does not confirm that round's settlements).
-- A round lies from its first card out of the shoe (CardDrawn or CardDrawnInError with its
-- round_no, round_no > 0) to its last event other than a burn. A card event between the two is an
-- intruder when it is:
--   a burn: 13:47-20.31(d)1 burns "the first card" after "each full deck of cards is placed in
--     the shoe", and "Each new dealer who comes to the table shall also "burn" one card before
--     dealing any card in a round of lay"; 13:69F-6.4 the same: a burn comes before a round's
--     first card, never inside the round (13:69F-6.9's reshuffling shoe owes none at all);
--   a card dealt (CardDrawn, CardDrawnInError) recorded for another round or shoe, or for none.
-- Each intruder, with the round it lies in (table_id, shoe_id, round_no), that round's first
-- card and "Raises closed", and the intruder's own shoe and round (card_shoe_id, card_round_no).
-- Cards are read once each (events_once_of). from_seq and to_seq, given with in_table, only
-- narrow the scan: they must bracket the rounds asked about.
CREATE OR REPLACE MACRO round_intruders_of(in_table, from_seq, to_seq) AS TABLE
WITH round_events AS NOT MATERIALIZED (
    SELECT * FROM events_once_of(in_table, NULL, from_seq, to_seq)
),
spans AS (
    -- From the first card to the end in game order (game_order above): the round's end is
    -- often the terminal's rack line, the intruder the shoe's, and a burn for the next round
    -- that reaches the recorder before the rack line is not inside the round.
    SELECT table_id, shoe_id, round_no,
           min(game_order(occurred_at, seq)) FILTER (event_type IN ('CardDrawn', 'CardDrawnInError'))
               AS first_card,
           max(game_order(occurred_at, seq)) FILTER (event_type NOT IN ('CardBurned', 'BurnDisclosed'))
               AS round_end,
           min(game_order(occurred_at, seq)) FILTER (event_type = 'Announced' AND meaning = 'RAISES_CLOSED')
               AS raises_closed
    FROM round_events
    WHERE round_no > 0
    GROUP BY ALL
    HAVING min(seq) FILTER (event_type IN ('CardDrawn', 'CardDrawnInError')) IS NOT NULL
),
cards AS (
    SELECT table_id, shoe_id AS card_shoe_id, round_no AS card_round_no, seq, event_type,
           rank, suit, destination, occurred_at, game_order(occurred_at, seq) AS at_order
    FROM round_events
    WHERE event_type IN ('CardDrawn', 'CardDrawnInError', 'CardBurned')
)
SELECT s.table_id, s.shoe_id, s.round_no, s.first_card.seq AS first_card_seq,
       s.raises_closed.seq AS raises_closed_seq,
       c.card_shoe_id, c.card_round_no, c.seq, c.event_type, c.rank, c.suit, c.destination,
       c.occurred_at
FROM cards AS c
ASOF JOIN spans AS s ON c.table_id = s.table_id AND c.at_order > s.first_card
WHERE c.event_type <> 'CardBurned' AND c.at_order < s.round_end
  AND (c.card_shoe_id IS DISTINCT FROM s.shoe_id OR c.card_round_no IS DISTINCT FROM s.round_no)
UNION ALL
-- A burn is an intruder inside ANY round's span, not only the latest begun: a misplaced card
-- carrying its own round number (a card for round 5 dealt inside round 1) makes a span of one
-- event, and the latest span before a later burn, so the burn would hide behind it. The row is
-- the burn's own round when it lies inside that round, else the earliest round it lies inside.
SELECT table_id, shoe_id, round_no, first_card_seq, raises_closed_seq, card_shoe_id,
       card_round_no, seq, event_type, rank, suit, destination, occurred_at
FROM (SELECT s.table_id, s.shoe_id, s.round_no, s.first_card.seq AS first_card_seq,
             s.raises_closed.seq AS raises_closed_seq,
             c.card_shoe_id, c.card_round_no, c.seq, c.event_type, c.rank, c.suit,
             c.destination, c.occurred_at,
             row_number() OVER (PARTITION BY c.table_id, c.seq
                                ORDER BY (c.card_shoe_id IS NOT DISTINCT FROM s.shoe_id
                                          AND c.card_round_no IS NOT DISTINCT FROM s.round_no) DESC,
                                         s.first_card) AS pick
      FROM cards AS c
      JOIN spans AS s
        ON c.table_id = s.table_id AND c.at_order > s.first_card AND c.at_order < s.round_end
      WHERE c.event_type = 'CardBurned')
WHERE pick = 1;

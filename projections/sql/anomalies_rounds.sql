-- The anomalies fall into six families, one view each (anomalies_found_rounds, _money, _shoes,
-- _tables, _streams, _places); `anomalies` is their union, with each code's severity and rule. The
-- families share nothing but the round facts (which the rounds and money families each compute),
-- so each can be evaluated, and read, by itself. Every rule is decided within one table: the
-- projector stores the rows a family and a group of whole tables at a time, through these same
-- views over an `events` view of the group alone (projections/anomalies.py,
-- refresh_stored_anomalies), so no query holds more than one family's state for 1M events.

-- The rules of a round: its cards, announcements, wagers and rack, from the round facts, in three
-- parts by concern, one table macro each (sql/anomalies_rounds_wagers.sql,
-- _dealing.sql, _closing.sql), each handed the round facts read once here, by name (query_table
-- resolves the name to this query's materialized CTE): the facts are most of the family's work.
CREATE OR REPLACE VIEW anomalies_found_rounds AS
WITH
-- The round facts, read once. A round's dealt and racked lists are kept only where they differ
-- (DISCARD_RACK_ORDER and CARD_UNACCOUNTED look at those rounds alone).
-- Only the rounds of play, round 1 and up (13:47-20.31(d)5; GA (3): "To begin each round of
-- play, the dealer shall place the first card ..."): round 0 is no round (the recorder accepts
-- it, limits.ROUND_BOUNDS), so its cards are cards dealt outside any round, as cards with no
-- round are: CARD_OUTSIDE_ROUND flags each (sql/anomalies_places.sql) and CARD_UNACCOUNTED one
-- never racked before its shoe closed (sql/anomalies_rounds_closing.sql, loose_cards). No rule
-- of this family judges them as a hand (its box, words, third card, wagers, rack or void). The
-- money family still reads round 0's facts (sql/anomalies_money.sql: the ledger keys its wagers).
facts AS MATERIALIZED (
    SELECT * EXCLUDE (dealt_cards, racked_cards),
           dealt_cards IS DISTINCT FROM racked_cards AS rack_differs,
           CASE WHEN dealt_cards IS DISTINCT FROM racked_cards THEN dealt_cards END AS dealt_cards,
           CASE WHEN dealt_cards IS DISTINCT FROM racked_cards THEN racked_cards END AS racked_cards
    FROM anomaly_round_facts
    WHERE round_no > 0
)
SELECT * FROM round_wager_anomalies('facts')
UNION ALL SELECT * FROM round_dealing_anomalies('facts')
UNION ALL SELECT * FROM round_closing_anomalies('facts');

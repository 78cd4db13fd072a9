"""The round-level stretch of incremental detection (projections/incremental.py): per touched
table, the first event K_r of the earliest round a batch can change, and the small state that
finds it without reading the table's events: one row per round (its first and last seq) and one
per device fault.

Why a round is enough (anomalies.sql, family by family). A row whose greatest proving seq is
below K_r cannot change, when K_r is at or before:
- the first event of every round that received events, and of the round the batch finishes (the
  round of the table's last event: "finished" and what a finished round lacks);
- the first event of the round of an open device fault: a fault in a touched shoe with no card
  dealt after it yet (DEVICE_FAULT_NOT_VOIDED's proof grows from [fault] to [fault, next card]);
- the start of the rounds that straddle it (a round is evaluated whole or not at all);
- the batch's first event.
Rows at or after K_r cite only events at or after K_r, plus context from before it: the shoe's
cards, burns, loads, shuffles, cut card, faults and voids (EXTRA_CARD counts copies across the
shoe; MISSING_BURN reads debts back to the last card dealt; NO_RESHUFFLE_AFTER_CUT_CARD and
DEVICE_FAULT_NOT_VOIDED reach back to an earlier round), the predecessor of K_r in seq
(SEQUENCE_GAP, CHAIN_BROKEN), earlier copies of a later event id (DUPLICATE_EVENT), and the
table's openings (the paytable). So before K_r the window keeps only those (CONTEXT_TYPES and
the two look-ups), not the wagers, settlements, announcements and racks of the shoe's earlier
rounds, which are most of its events.

A batch that loads, shuffles, closes a shoe or opens the table changes what earlier rows of the
shoe read (DRAWN_IN_ERROR_NOT_USED "the shoe closed without it", the burn exemption of a
load): its table keeps the shoe-level stretch (K_r = K, the shoe's first event).
"""

from __future__ import annotations

import duckdb

ROUNDS = "detect_rounds"
FAULTS = "detect_faults"

# Event types read before K_r (see above); everything at or after K_r is read whole.
CONTEXT_TYPES = (
    "CardDrawn", "CardBurned", "CardFoundFaceUp", "CardDrawnInError", "BurnDisclosed",
    "CardsLoaded", "ShoeClosed", "ShuffleStarted", "ShuffleCompleted", "CuttingCardPlaced",
    "CardsCut", "CuttingCardReached", "DealerTappedIn", "DealerTappedOut", "DeviceFaulted",
    "RoundVoided", "TableOpened")
CONTEXT_SQL = "('" + "', '".join(CONTEXT_TYPES) + "')"
# The cards out of the shoe, and the families that read them before K_r: EXTRA_CARD,
# MISSING_BURN, FACE_UP_CARD_USED, DRAWN_IN_ERROR_NOT_USED, BURN_MISDISCLOSED. The other
# families read a card before K_r only as the next card out after a device fault
# (DEVICE_FAULT_NOT_VOIDED), so their window keeps that card alone (Detector.evaluate).
CARD_OUT = ("CardDrawn", "CardBurned", "CardFoundFaceUp", "CardDrawnInError")
CARD_TYPES = (*CARD_OUT, "BurnDisclosed")
CARD_SQL = "('" + "', '".join(CARD_TYPES) + "')"
CARD_OUT_SQL = "('" + "', '".join(CARD_OUT) + "')"
CARD_FAMILIES = ("anomalies_found_shoes",)
# Money recorded with neither a shoe nor a round: the ledger keys it by table, seat, area and
# kind alone (sql/ledger.sql `keyed`), so one ledger row may pair a wager and its settlement, or
# two settlements, any number of shoes apart. Every such event of a table is context
# (incremental.detect_context, read into the windows by copy_windows), and its rows are found
# again whole at every batch of the table (incremental.Detector, loose_money_row).
MONEY_TYPES = ("WagerPlaced", "WagerChanged", "WagerRemoved", "RaisePlaced", "WagerSettled")
MONEY_SQL = "('" + "', '".join(MONEY_TYPES) + "')"


def loose_money(alias: str = "") -> str:
    """Whether an event (of the relation `alias`, when given) is money with no shoe or round."""
    e = f"{alias}." if alias else ""
    return f"{e}shoe_id IS NULL AND {e}round_no IS NULL AND {e}event_type IN {MONEY_SQL}"


# The codes the money family (sql/anomalies_money.sql) can give such a ledger row: no hand
# decides it, so never WRONG_PAYOUT or BELOW_MINIMUM_ODDS, and a raise with no round is
# RAISE_NOT_ALLOWED, never RAISE_OVER_LIMIT; no other family gives these two.
_LOOSE_MONEY_CODES = "('WRONG_SETTLEMENT', 'RAISE_NOT_ALLOWED')"


def loose_money_row(alias: str) -> str:
    """Whether an anomaly row of the relation `alias` is one of such a ledger row's."""
    return (f"{alias}.shoe_id IS NULL AND {alias}.round_no IS NULL "
            f"AND {alias}.code IN {_LOOSE_MONEY_CODES}")


# A batch with one of these keeps its table's shoe-level stretch (see above).
SHOE_CHANGES = ("CardsLoaded", "ShoeClosed", "ShuffleStarted", "ShuffleCompleted", "TableOpened")

_ROUND_AGG = """
SELECT table_id, shoe_id, round_no, min(seq) AS first_seq, max(seq) AS last_seq
FROM {src} WHERE round_no IS NOT NULL GROUP BY ALL
"""
_FAULTS = "SELECT table_id, shoe_id, round_no, seq FROM {src} WHERE event_type = 'DeviceFaulted'"


def rebuild(con: duckdb.DuckDBPyConnection) -> None:
    """The round state from the whole store (incremental.rebuild_state, in its transaction)."""
    con.execute(f"CREATE OR REPLACE TABLE {ROUNDS} AS {_ROUND_AGG.format(src='events')}")
    con.execute(f"CREATE OR REPLACE TABLE {FAULTS} AS {_FAULTS.format(src='events')}")


def advance(con: duckdb.DuckDBPyConnection) -> None:
    """Inside the batch's transaction: the batch's rows (`pitlog_batch`) into the state."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE pitlog_new_rounds AS "
                f"{_ROUND_AGG.format(src='pitlog_batch')}")
    con.execute(f"""UPDATE {ROUNDS} AS r
        SET first_seq = least(r.first_seq, n.first_seq), last_seq = greatest(r.last_seq, n.last_seq)
        FROM pitlog_new_rounds AS n
        WHERE r.table_id = n.table_id AND r.shoe_id IS NOT DISTINCT FROM n.shoe_id
          AND r.round_no = n.round_no""")
    con.execute(f"""INSERT INTO {ROUNDS} SELECT n.* FROM pitlog_new_rounds AS n
        WHERE NOT EXISTS (SELECT 1 FROM {ROUNDS} AS r WHERE r.table_id = n.table_id
                          AND r.shoe_id IS NOT DISTINCT FROM n.shoe_id
                          AND r.round_no = n.round_no)""")
    con.execute(f"INSERT INTO {FAULTS} {_FAULTS.format(src='pitlog_batch')}")
    con.execute("DROP TABLE IF EXISTS temp.pitlog_new_rounds")


def round_starts(s: duckdb.DuckDBPyConnection, db: str, batch: str,
                 tables: dict[str, tuple[int, set[str]]]) -> dict[str, int | None]:
    """K_r of each table of `tables` (table -> (K, its affected shoes)), from the state in
    catalog `db` before the batch (registered as `batch`); None: keep the shoe-level K."""
    names = list(tables)
    if not names:
        return {}
    keep_k = {t for (t,) in s.execute(
        f"SELECT DISTINCT table_id FROM {batch} WHERE list_contains($t, table_id) AND "
        f"event_type IN ('" + "', '".join(SHOE_CHANGES) + "')", {"t": names}).fetchall()}
    cands: dict[str, list[int]] = {t: [] for t in names}
    for t, seq in s.execute(f"""
            SELECT table_id, min(seq) FROM {batch} WHERE list_contains($t, table_id)
            GROUP BY ALL
            UNION ALL  -- rounds that received events
            SELECT r.table_id, min(r.first_seq) FROM {db}.main.{ROUNDS} AS r
            JOIN (SELECT DISTINCT table_id, shoe_id, round_no FROM {batch}
                  WHERE round_no IS NOT NULL AND list_contains($t, table_id)) AS n
              ON r.table_id = n.table_id AND r.shoe_id IS NOT DISTINCT FROM n.shoe_id
             AND r.round_no = n.round_no
            GROUP BY ALL
            UNION ALL  -- the round the batch finishes: the round of the table's last event
            SELECT r.table_id, min(r.first_seq) FROM {db}.main.{ROUNDS} AS r
            JOIN {db}.main.detect_tables AS d ON d.table_id = r.table_id
             AND r.last_seq = d.last_seq
            WHERE list_contains($t, r.table_id) GROUP BY ALL""", {"t": names}).fetchall():
        cands[t].append(seq)
    # Open faults: a fault with no card dealt after it yet, in a shoe the batch touches.
    for t, shoe, seq in s.execute(f"""
            SELECT f.table_id, f.shoe_id, coalesce(r.first_seq, f.seq)
            FROM {db}.main.{FAULTS} AS f
            LEFT JOIN {db}.main.detect_shoes AS s USING (table_id, shoe_id)
            LEFT JOIN {db}.main.{ROUNDS} AS r ON r.table_id = f.table_id
             AND r.shoe_id IS NOT DISTINCT FROM f.shoe_id AND r.round_no = f.round_no
            WHERE list_contains($t, f.table_id) AND f.shoe_id IS NOT NULL
              AND (s.last_draw_seq IS NULL OR f.seq > s.last_draw_seq)""",
                                  {"t": names}).fetchall():
        if shoe in tables[t][1]:
            cands[t].append(seq)
    kr = {t: min(c) for t, c in cands.items() if t not in keep_k}
    while kr:  # a round that straddles K_r joins it (none, in a normal stream)
        moved = dict(s.execute(f"""
            SELECT r.table_id, min(r.first_seq) FROM {db}.main.{ROUNDS} AS r
            JOIN (SELECT unnest($t) AS table_id, unnest($k) AS k) AS q USING (table_id)
            WHERE r.first_seq < q.k AND r.last_seq >= q.k GROUP BY ALL""",
                               {"t": list(kr), "k": list(kr.values())}).fetchall())
        if not moved:
            break
        kr.update(moved)
    return {t: (kr[t] if t in kr and kr[t] >= tables[t][0] else None) for t in names}


def copy_windows(s: duckdb.DuckDBPyConnection, db: str, cards: str, context: str,
                 parts: list[int], low: int) -> None:
    """The batch's two windows (incremental.Detector.evaluate), from the store in catalog `db`,
    its context table `context`, the scope table and the batch (`pitlog_new`) on `s`: the
    cards window into `cards`.events, the rounds window into `events` of `s`'s catalog."""
    # The partition and offset bounds are constants, so DuckDB skips the row groups
    # before the stretch; the join then keeps each table's own window. Before K_r
    # (sc.k) only the context is kept (module docstring): its types, the predecessor of K_r
    # and earlier copies of a later event id.
    s.execute(f"""
        CREATE OR REPLACE TABLE {cards}.events AS
        WITH src AS MATERIALIZED (
            SELECT e.*, sc.k AS pitlog_k
            FROM {db}.main.events AS e JOIN scope AS sc USING (table_id)
            WHERE e.log_partition IN ({", ".join(map(str, parts))})
              AND e.log_offset >= {low} AND e.log_offset >= sc.o
              AND (sc.w IS NULL OR e.seq >= sc.w)),
        pred AS (SELECT table_id, max(seq) AS seq FROM src WHERE seq < pitlog_k
                 GROUP BY ALL),
        later AS (SELECT DISTINCT table_id, event_id FROM (
                      SELECT table_id, event_id FROM src WHERE seq >= pitlog_k
                      UNION ALL SELECT table_id, event_id FROM pitlog_new)
                  WHERE event_id IS NOT NULL)
        SELECT src.* EXCLUDE (pitlog_k) FROM src
        LEFT JOIN pred AS p ON p.table_id = src.table_id AND p.seq = src.seq
        LEFT JOIN later AS l ON l.table_id = src.table_id AND l.event_id = src.event_id
        WHERE src.pitlog_k IS NULL OR src.seq >= src.pitlog_k
           OR src.event_type IN {CONTEXT_SQL}
           -- money with no shoe or round between W and K too (before W: detect_context below)
           OR ({loose_money("src")})
           OR p.seq IS NOT NULL OR l.event_id IS NOT NULL
        UNION ALL BY NAME
        SELECT c.* FROM {db}.main.{context} AS c JOIN scope AS sc USING (table_id)
        WHERE sc.w IS NOT NULL AND c.seq < sc.w
          AND (c.event_type = 'TableOpened' OR list_contains(sc.state_seqs, c.seq)
               OR ({loose_money("c")}))
        UNION ALL BY NAME
        SELECT * FROM pitlog_new""")
    # The other families' window: the same, less the cards before K_r but the next card
    # after each device fault there (DEVICE_FAULT_NOT_VOIDED; CARD_TYPES above).
    s.execute(f"""
    CREATE OR REPLACE TABLE events AS
    WITH w AS MATERIALIZED (
        SELECT e.*, sc.k AS pitlog_k
        FROM {cards}.events AS e JOIN scope AS sc USING (table_id)),
    pred AS (SELECT table_id, max(seq) AS seq FROM w WHERE seq < pitlog_k
             GROUP BY ALL),
    later AS (SELECT DISTINCT table_id, event_id FROM w
              WHERE (pitlog_k IS NULL OR seq >= pitlog_k) AND event_id IS NOT NULL),
    after_fault AS (  -- the next card out of the shoe after each fault before K_r
        SELECT f.table_id, min(c.seq) AS seq
        FROM w AS f JOIN w AS c ON c.table_id = f.table_id AND c.shoe_id = f.shoe_id
         AND c.seq > f.seq AND c.event_type IN {CARD_OUT_SQL}
        WHERE f.event_type = 'DeviceFaulted' AND f.seq < f.pitlog_k
        GROUP BY f.table_id, f.seq),
    highest AS (  -- per shoe, the first card of the highest round dealt before K_r
        -- (CARD_OUTSIDE_ROUND "for round r after round N had begun" reads the highest round
        -- dealt earlier in the shoe, which lies before K_r when round numbers go back)
        SELECT table_id, -max({{'round_no': round_no, 'neg_seq': -seq}}).neg_seq AS seq
        FROM w WHERE event_type IN ('CardDrawn', 'CardDrawnInError') AND round_no > 0
          AND shoe_id IS NOT NULL AND seq < pitlog_k
        GROUP BY table_id, shoe_id)
    SELECT w.* EXCLUDE (pitlog_k) FROM w
    LEFT JOIN pred AS p ON p.table_id = w.table_id AND p.seq = w.seq
    LEFT JOIN later AS l ON l.table_id = w.table_id AND l.event_id = w.event_id
    LEFT JOIN after_fault AS f ON f.table_id = w.table_id AND f.seq = w.seq
    LEFT JOIN highest AS h ON h.table_id = w.table_id AND h.seq = w.seq
    WHERE w.pitlog_k IS NULL OR w.seq >= w.pitlog_k
       OR w.event_type NOT IN {CARD_SQL}
       OR f.seq IS NOT NULL OR p.seq IS NOT NULL OR l.event_id IS NOT NULL
       OR h.seq IS NOT NULL""")

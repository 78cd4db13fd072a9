"""Where a lookup's dealer look-up can start: the table's latest dealer tap before a seq.

A round's dealer is the table's latest DealerTappedIn at or before the round's first card (or
its first event while no card is out), so at or after the latest one at or before its first event
(sql/rounds.sql, rounds_of). Left unbounded, that look-up reads every row group of the table
up to the round: at 10M events it was among the largest scans of a replay or a dispute, and
every query that builds the round read it again (benchmarks/results.md, session 13). A lookup
finds the tap once, in windows that widen backwards from the round, and passes its seq to the
macros (taps_from), which then read the taps only from there: no earlier tap can be a round's
latest, so the answer is the same.
"""

from __future__ import annotations

import duckdb

# The first window reaches this many seqs back (a dealer's shift is a few thousand events);
# each next one WIDEN times further, down to seq 0.
FIRST_WINDOW = 4096
WIDEN = 16

_LATEST_TAP = """
SELECT max(seq) FROM events
WHERE table_id = $table AND event_type = 'DealerTappedIn' AND seq BETWEEN $lo AND $hi
"""


def taps_from(con: duckdb.DuckDBPyConnection, table: str, seq: int) -> int | None:
    """The seq of the table's latest DealerTappedIn at or before `seq`; None when there is
    none (the macros then read the taps from the table's start, as without it)."""
    hi, width = seq, FIRST_WINDOW
    while hi >= 0:
        lo = max(hi - width, 0)
        ((found,),) = con.execute(_LATEST_TAP, {"table": table, "lo": lo, "hi": hi}).fetchall()
        if found is not None:
            return int(found)
        hi, width = lo - 1, width * WIDEN
    return None

"""p50 CPU of a shoe's replay and a round's dispute, in process, on one store with the pitlog on
PYTHONPATH (session 22: old code on a store it projected beside new code on a copy the new
code projected, run in turns).

    PYTHONPATH=CHECKOUT python benchmarks/bench_lookup_cpu.py STORE.duckdb LABEL

The first 30 (table, shoe) pairs in id order and 30 rounds sampled with seed 7; prints one JSON
line: the label and the p50 CPU ms per call of each.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable

import duckdb

from projections.dispute import dispute
from projections.replay import replay_shoe


def _cpu_ms(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return (time.process_time() - start) * 1000


def main(store: str, label: str) -> None:
    con = duckdb.connect(store, read_only=True)
    shoes = con.execute("SELECT DISTINCT table_id, shoe_id FROM events WHERE shoe_id IS NOT NULL "
                        "ORDER BY 1, 2 LIMIT 30").fetchall()
    rounds = con.execute("SELECT table_id, shoe_id, round_no FROM (SELECT DISTINCT table_id, "
                         "shoe_id, round_no FROM events WHERE round_no > 0) "
                         "USING SAMPLE 30 ROWS (reservoir, 7) ORDER BY ALL").fetchall()
    replays = [_cpu_ms(lambda t=t, s=s: replay_shoe(con, s, t)) for t, s in shoes]
    disputes = [_cpu_ms(lambda t=t, s=s, r=r: dispute(con, t, shoe=s, round_no=r))
                for t, s, r in rounds]
    print(json.dumps({"side": label, "replay_p50_cpu_ms": round(statistics.median(replays), 1),
                      "dispute_p50_cpu_ms": round(statistics.median(disputes), 1)}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

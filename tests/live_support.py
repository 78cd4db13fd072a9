"""Helpers of the incremental-detection and alert tests: a log in which every rule code of the
catalogue appears, copied into another log in pieces (the split points of a live feed), and
the comparison of the stored anomaly rows with a full evaluation."""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb

from events.log.base import EventLog
from events.log.embedded.log import EmbeddedLog
from events.log.registry import open_log
from events.simulation.simulator import SimConfig, simulate
from projections import dispute_sql, replay
from projections.anomalies import STATISTICAL, STORED
from projections.follow import Follower
from projections.queries import rows
from projections.reconcile import (
    OUTCOME_COUNTS,
    ROUND_MONEY,
    SHIFT_KEYS,
    SHIFT_MONEY,
    load_edges,
    outcome_counts_sql,
    round_money_sql,
    running_sums_current,
    shift_money_params,
    shift_money_sql,
    stored_money_current,
)

ROOT = Path(__file__).resolve().parent.parent

# High rates on three tables of the three profiles, one-deck shoes (the cutting card comes out
# often: NO_RESHUFFLE_AFTER_CUT_CARD, ROUND_ABANDONED_AT_CUT_CARD) and frequent dealer changes
# (MISSING_BURN on a dealer change): every rule code of the catalogue appears.
CONFIG = SimConfig(seed=12, tables=3, rounds=150, seats=4, decks=1, irregularities=0.08,
                   dealer_shift_rounds=25,
                   profiles=("nj-casino", "nj-casino-night", "gaming-authority"),
                   per_code={"NO_RESHUFFLE_AFTER_CUT_CARD": 0.5,
                             "ROUND_ABANDONED_AT_CUT_CARD": 0.5,
                             "PAIR_WITHOUT_THIRD_CARD": 0.5, "WRONG_PAYOUT": 0.3,
                             # late in a round or once a shoe: too rare at 0.08 here
                             "CARD_UNACCOUNTED": 0.3, "BELOW_MINIMUM_ODDS": 0.3,
                             # one slip among the third-card ones (redrawn, diverted, early)
                             "THIRD_CARD_REDRAWN": 0.3})

# The same evening cut to 100 rounds a table (4,435 records instead of 6,755), RAISE_NOT_ALLOWED
# made a little likelier: every rule code still appears (checked with assert_exact), for tests
# whose batch sizes are fixed, so that their batches, each paying detection, are a third fewer.
# Not for the tests whose point needs the size: a child killed part-way (kill_repeatedly),
# scans in proportion to the history, a number of batches asserted.
SHORT = dataclasses.replace(CONFIG, rounds=100,
                            per_code={**CONFIG.per_code, "RAISE_NOT_ALLOWED": 0.1})


def source_log(folder: Path, config: SimConfig = CONFIG) -> list[tuple[bytes, bytes]]:
    """The simulated evening's records, in log order per partition, merged by seq time."""
    log = EmbeddedLog(folder)
    simulate(log, config)
    records = [rec for batch in log.read() for rec in batch]
    log.close()
    # Interleave the partitions as a live feed would; each table keeps its order.
    rng = random.Random(5)
    by_part: dict[int, list[tuple[bytes, bytes]]] = {}
    for rec in records:
        by_part.setdefault(rec.partition, []).append((rec.key, rec.value))
    out: list[tuple[bytes, bytes]] = []
    queues = [q for q in by_part.values() if q]
    while queues:
        q = rng.choice(queues)
        take = rng.randint(1, 40)
        out.extend(q[:take])
        del q[:take]
        queues = [q for q in queues if q]
    return out


def random_cuts(n: int, pieces: int, seed: int) -> list[int]:
    """Split points in 0..n: some one record apart (a round split anywhere)."""
    rng = random.Random(seed)
    cuts = sorted(set(rng.sample(range(1, n), pieces - 1)) | {n})
    return cuts


def feed(target: EventLog, records: list[tuple[bytes, bytes]], start: int, stop: int) -> None:
    target.append(records[start:stop])


def rule_codes(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Every code of the catalogue that SQL decides (the statistical two are computed apart)."""
    return {c for (c,) in con.execute("SELECT code FROM anomaly_codes").fetchall()} \
        - set(STATISTICAL)


def both_ways(kept: str, fresh: str, cols: str = "*") -> str:
    """One query: (rows of `kept` not in `fresh`, rows of `fresh` not in `kept`), EXCEPT ALL
    on `cols`, with `fresh` (a full evaluation: the costly side) evaluated once, not once a
    direction."""
    return (f"WITH f AS MATERIALIZED ({fresh}), k AS MATERIALIZED ({kept}) "
            f"SELECT (SELECT count(*) FROM (SELECT {cols} FROM k EXCEPT ALL "
            f"SELECT {cols} FROM f)), (SELECT count(*) FROM (SELECT {cols} FROM f "
            f"EXCEPT ALL SELECT {cols} FROM k)), (SELECT count(*) FROM f)")


def differences(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """(stored rows not in a full evaluation, full-evaluation rows not stored), EXCEPT ALL."""
    ((extra, missing, _),) = con.execute(
        both_ways(f"SELECT * FROM {STORED}", "SELECT * FROM anomalies")).fetchall()
    return int(extra), int(missing)


def money_differences(con: duckdb.DuckDBPyConnection) -> tuple[int, int, int]:
    """(stored round_money rows not in the round_money query over the views, the query's rows
    not stored, the query's row count), EXCEPT ALL."""
    load_edges(con)
    ((extra, missing, rounds),) = con.execute(
        both_ways(f"SELECT * FROM {ROUND_MONEY}", f"SELECT * FROM ({round_money_sql()})")
    ).fetchall()
    return int(extra), int(missing), int(rounds)


def shift_money_differences(con: duckdb.DuckDBPyConnection) -> tuple[int, int, int]:
    """(stored shift sums not in the same sums made afresh from the stored round_money rows,
    those not stored, the groups), EXCEPT ALL on every column but sum_sq_deviation (a DOUBLE
    summed in another order, so compared to 1e-9 of its size; any other pair of rows counts
    as a difference)."""
    fresh = f"SELECT * FROM ({shift_money_sql(ROUND_MONEY)})"
    params = shift_money_params()
    cols = "* EXCLUDE (sum_sq_deviation)"
    out = []
    for a, b in ((f"SELECT * FROM {SHIFT_MONEY}", fresh), (fresh, f"SELECT * FROM {SHIFT_MONEY}")):
        ((n,),) = con.execute(f"SELECT count(*) FROM (SELECT {cols} FROM ({a}) EXCEPT ALL "
                              f"SELECT {cols} FROM ({b}))", params).fetchall()
        out.append(int(n))
    keys = " AND ".join(f"s.{k} IS NOT DISTINCT FROM f.{k}" for k in (*SHIFT_KEYS, "theo_den"))
    ((off, groups),) = con.execute(
        f"SELECT count(*) FILTER (abs(s.sum_sq_deviation - f.sum_sq_deviation) > "
        f"1e-9 * greatest(abs(f.sum_sq_deviation), 1)), count(*) FROM {SHIFT_MONEY} AS s "
        f"JOIN ({fresh}) AS f ON {keys}", params).fetchall()
    return out[0] + int(off), out[1], int(groups)


def outcome_counts_differences(con: duckdb.DuckDBPyConnection) -> tuple[int, int, int]:
    """(stored outcome counts not in the same counts made afresh from the stored round_money
    rows, those not stored, the groups), EXCEPT ALL on every column."""
    ((extra, missing, groups),) = con.execute(
        both_ways(f"SELECT * FROM {OUTCOME_COUNTS}", outcome_counts_sql(ROUND_MONEY))
    ).fetchall()
    return int(extra), int(missing), int(groups)


def assert_money_exact(con: duckdb.DuckDBPyConnection) -> None:
    """The writer's round_money rows are the view's, row for row, and marked current; so are
    its running sums (projections/running_sums.py) those rows' sums: per table and shift, and
    per table, deck count and outcome."""
    extra, missing, rounds = money_differences(con)
    assert (extra, missing) == (0, 0)
    assert rounds > 0
    assert stored_money_current(con)
    for differences_of in (shift_money_differences, outcome_counts_differences):
        extra, missing, groups = differences_of(con)
        assert (extra, missing) == (0, 0), differences_of.__name__
        assert groups > 0
    assert running_sums_current(con)


def assert_exact(con: duckdb.DuckDBPyConnection) -> None:
    assert differences(con) == (0, 0)
    assert_money_exact(con)
    stored = {c for (c,) in con.execute(f"SELECT DISTINCT code FROM {STORED}").fetchall()}
    assert rule_codes(con) - stored == set(), "the simulation must raise every rule code"


_CHILD = """
import sys
from events.log.registry import open_log
from projections.projector import project
log = open_log(sys.argv[1])
while True:
    project(log, sys.argv[2], batch_size=int(sys.argv[3]), publish_alerts=sys.argv[4] == "1",
            progress=lambda done: print(done, flush=True))
"""


def kill_repeatedly(uri: str, db: Path, seed: int, *, publish: bool, times: int = 3) -> None:
    """A child process projects `uri` into `db` in small batches; SIGKILL it at a random
    moment after its first committed batch (so each child commits some, however slow the
    machine), `times` times (each child starts where the last was killed)."""
    rng = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(times):
        child = subprocess.Popen([sys.executable, "-c", _CHILD, uri, str(db),
                                  str(rng.choice([200, 400])), "1" if publish else "0"],
                                 env=env, cwd=ROOT, stdout=subprocess.PIPE)
        assert child.stdout is not None
        child.stdout.readline()  # the first batch committed (or the child ended: EOF)
        time.sleep(rng.uniform(0.2, 3.0))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()


def fill(uri: str, records: list[tuple[bytes, bytes]]) -> None:
    """The whole evening into the log at `uri` (file:// or kafka://)."""
    log = open_log(uri)
    try:
        log.append(records)
    finally:
        log.close()


def assert_kept_replays_hold(con: duckdb.DuckDBPyConnection) -> int:
    """Every kept replay of the store (projections/replay_kept.py) is read and is the replay its
    queries give, and its kept rounds and settlements (for disputes) are the rows their queries
    give, but an open shoe's dealt since it was kept, which is not read; the number of kept
    replays (0 when the store keeps none)."""
    if not replay.kept_tables_current(con):
        return 0
    kept = con.execute(f"SELECT table_id, shoe_id FROM {replay.SHOES}").fetchall()
    for table, shoe in kept:
        span = replay.shoe_span(con, shoe, table)
        stored = replay.stored(con, span)
        if stored is None and not span.closed and span.last != _kept_last(con, table, shoe):
            # an open shoe kept while the follower was idle, dealt since: not read (any other
            # kept rows must hold once the follower caught up)
            continue
        assert stored is not None and stored == replay.computed(con, span), (table, shoe)
        params = replay.query_params(con, span)
        key = {"table": table, "shoe": shoe}
        for name, sql, extra in ((replay.ROUNDS, dispute_sql.ROUNDS, ""),
                                 (replay.SETTLEMENTS, dispute_sql.SETTLEMENTS,
                                  "table_id, shoe_id, ")):
            held = rows(con, f"SELECT * EXCLUDE ({extra}ord) FROM {name} WHERE "
                             "table_id = $table AND shoe_id = $shoe ORDER BY ord", key)
            assert held == rows(con, sql, {**params, "round": None}), (name, table, shoe)
    return len(kept)


def _kept_last(con: duckdb.DuckDBPyConnection, table: str, shoe: str) -> int:
    """The last seq of the shoe's span when its replay was kept."""
    ((last,),) = con.execute(f"SELECT last_seq FROM {replay.SHOES} WHERE table_id = $t AND "
                             "shoe_id = $s", {"t": table, "s": shoe}).fetchall()
    return int(last)


FOLLOW_HANG_S = 120.0  # a follower not caught up after this is stuck, not slow


def follow_until_caught_up(con: duckdb.DuckDBPyConnection, log: EventLog,
                           **options: object) -> None:
    """A Follower on `con` (options: Follower's) run in a thread until it has caught up with
    `log` (its `ready`), then stopped."""
    stop = threading.Event()
    follower = Follower(con, log, stop_event=stop, poll_interval=0.05,
                        **options)  # type: ignore[arg-type]
    thread = threading.Thread(target=follower.run)
    thread.start()
    assert follower.ready.wait(FOLLOW_HANG_S)
    stop.set()
    thread.join(FOLLOW_HANG_S)

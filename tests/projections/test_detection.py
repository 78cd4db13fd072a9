"""Detection against the simulator's ground truth at scale: precision and recall 1.0 for every
injected code on 100,000 rounds at 8 tables (the evenings of a few thousand rounds are in
test_detection_evenings.py). Also here: the statistics behind HOLD_VARIANCE and
OUTCOME_FREQUENCY (a table failing both is in test_detection_evenings.py).

The 100k test is the suite's longest: under pytest-xdist (--dist loadfile) a module runs on one
worker, so the shorter evenings live in a module of their own and run beside it. The statistics'
tests stay after it on purpose: a worker is sent another module once fewer than three of its
tests are left (xdist's loadscope scheduler), so with them queued no other module waits behind
the long test on this worker.
"""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest
from detection_support import PROFILES, RATES, RESHUFFLING_EVERY, detect, exact

from events.log.embedded.log import EmbeddedLog
from events.reddog.catalogue import INJECTABLE
from events.simulation.irregularities import TruthLabel
from events.simulation.simulator import SimConfig, simulate
from projections.statistics import chi_square_sf, pearson


def _play(args: tuple[Path, SimConfig, list[int]]) -> tuple[int, int, list[TruthLabel]]:
    folder, config, tables = args
    with EmbeddedLog(folder) as log:
        report = simulate(log, config, only=tables)
    return report.rounds, report.events, report.truth


def simulate_in_parallel(folder: Path, config: SimConfig,
                         workers: int = 2) -> tuple[int, int, list[TruthLabel]]:
    """The evening's tables split between processes recording to one log (each table is its
    own seeded stream, so the tables' records are those of a one-process run)."""
    EmbeddedLog(folder).close()  # created once, before the writers race to open it
    shares = [list(range(i, config.tables, workers)) for i in range(workers)]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        parts = pool.map(_play, [(folder, config, share) for share in shares])
    return (sum(p[0] for p in parts), sum(p[1] for p in parts),
            [label for p in parts for label in p[2]])


@pytest.mark.slow
@pytest.mark.timeout(1800)  # ~1M events simulated and projected; a busy machine is slow
def test_precision_and_recall_are_one_on_100k_rounds_at_8_tables(tmp_path: Path) -> None:
    config = SimConfig(seed=2026, tables=8, rounds=12_500, seats=2, profiles=PROFILES,
                       per_code=RATES, reshuffling_every=RESHUFFLING_EVERY)
    started = time.perf_counter()
    rounds, events, truth = simulate_in_parallel(tmp_path / "log", config)
    found = detect(tmp_path / "log", tmp_path / "db.duckdb")
    seconds = time.perf_counter() - started
    assert rounds >= 100_000 and len({t.table_id for t in truth}) == 8
    result = exact(truth, found, least=30)
    assert {c: r[:2] for c, r in result.items()} == {c: (1.0, 1.0) for c in INJECTABLE}
    print(f"\n{rounds} rounds, {events} events, {len(truth)} labels, {seconds:.0f} s")
    for code, (precision, recall, labelled) in sorted(result.items()):
        print(f"{code}: precision {precision:.3f} recall {recall:.3f} on {labelled} injected")


# --- the statistics ----------------------------------------------------------------------------


def test_chi_square_tail_matches_the_tables() -> None:
    assert chi_square_sf(3.841459, 1) == pytest.approx(0.05, abs=1e-7)
    assert chi_square_sf(10.0, 5) == pytest.approx(0.0752352, abs=1e-6)
    assert chi_square_sf(30.0, 12) == pytest.approx(0.0027924, abs=1e-6)
    assert chi_square_sf(32.909, 12) == pytest.approx(0.001, abs=1e-6)
    assert chi_square_sf(0.0, 3) == 1.0


def test_cells_expected_below_five_are_pooled() -> None:
    stat, df = pearson([10, 0, 1, 20], [9.0, 2.0, 2.0, 20.0])
    # the cells expected 2 and 2 pool into one expected 4, then with the 9: (11 - 13)^2 / 13
    assert (round(stat, 6), df) == (round(4 / 13, 6), 1)

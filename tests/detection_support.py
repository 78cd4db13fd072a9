"""Detection against the simulator's ground truth (tests/projections/test_detection*.py): the
injection rates, the projection of a simulated log, and the exact precision and recall per code.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from events.log.embedded.log import EmbeddedLog
from events.reddog.catalogue import INJECTABLE
from events.simulation.irregularities import TruthLabel
from projections.anomalies import AnomalyFilter, list_anomalies, score
from projections.projector import project

PROFILES = ("nj-casino", "nj-casino-night", "gaming-authority")
# Chances per opportunity (docs/anomalies.md): each code gets well over 30 injections in 100k
# rounds, while the rounds with one stay a few per cent.
RATES = {
    "SEQUENCE_GAP": 0.001, "CHAIN_BROKEN": 0.0005, "DUPLICATE_EVENT": 0.0005,
    "EXTRA_CARD": 0.002, "CALL_BET": 0.004,
    "MULTIPLE_BETTING_AREAS": 0.002, "FACE_UP_CARD_USED": 0.001,
    "ROUND_ABANDONED_AT_CUT_CARD": 0.1, "DEVICE_FAULT_NOT_VOIDED": 0.002, "LATE_WAGER": 0.002,
    "WAGER_ALTERED": 0.002, "THIRD_CARD_ON_CONSECUTIVE": 0.01, "RAISE_NOT_ALLOWED": 0.003,
    "PAIR_WITHOUT_THIRD_CARD": 0.03, "RAISE_OVER_LIMIT": 0.003, "EARLY_THIRD_CARD": 0.004,
    "LATE_RAISE": 0.003, "WRONG_ANNOUNCEMENT": 0.001, "WRONG_PAYOUT": 0.004,
    "WRONG_SETTLEMENT": 0.002, "DISCARD_RACK_ORDER": 0.002, "CARD_UNACCOUNTED": 0.002,
    "NO_RESHUFFLE_AFTER_CUT_CARD": 0.1, "MISSING_BURN": 0.05, "BELOW_MINIMUM_ODDS": 0.05,
    # issue 13
    "MATCH_PLAY_NOT_ALLOWED": 0.004, "TOO_MANY_DECKS": 0.02, "THIRD_CARD_REDRAWN": 0.002,
    "SPREAD_WITHOUT_THIRD_CARD": 0.002, "EARLY_RAISE": 0.002, "WRONG_BOX": 0.002,
    "BURN_MISDISCLOSED": 0.05, "DRAWN_IN_ERROR_NOT_USED": 0.003, "THIRD_CARD_DIVERTED": 0.002,
    # events where the rules allow none
    "BURN_DURING_ROUND": 0.003, "CARD_OUTSIDE_ROUND": 0.003, "ROUND_VOIDED_WITHOUT_CAUSE": 0.003,
}
# Every 4th shoe of a table comes from an automatic reshuffling shoe (13:69F-6.9): no burn is
# owed at the nj-casino tables, while casino nights and the gaming authority still owe them.
RESHUFFLING_EVERY = 4


def detect(log_folder: Path, db: Path) -> list[dict[str, Any]]:
    with EmbeddedLog(log_folder) as log:
        project(log, db)
    with duckdb.connect(str(db), read_only=True) as con:
        return list_anomalies(con, AnomalyFilter(statistics=False))


def exact(truth: Sequence[TruthLabel], found: list[dict[str, Any]],
           least: int) -> dict[str, tuple[float, float, int]]:
    """{code: (precision, recall, injected)}, every injectable code injected at least
    `least` times."""
    scores = score(truth, found, codes=INJECTABLE)
    assert all(s.truth >= least for s in scores), {s.code: s.truth for s in scores}
    return {s.code: (s.precision, s.recall, s.truth) for s in scores}

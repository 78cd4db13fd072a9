"""A deterministic evening dealt by the rules through a hand-built table, and the views'
digests: shared by the projector's tests (tests/projections/test_projection*.py)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import duckdb

from projections.views import digest_views

RANKS = "2 3 4 5 6 7 8 9 10 J Q K A".split()


def record_evening(table: Callable[..., object], tables: int = 2, rounds: int = 30,
                   seed: int = 1, first: int = 1) -> None:
    """A deterministic evening: per table a dealer, a 6-deck shoe with its burn, then rounds
    dealt from it by the rules, with a few wagers and raises each."""
    rng = random.Random(seed)
    for t in range(first, first + tables):
        tb = table(f"T{t:02d}")
        shoe = [r + s for r in RANKS for s in "SHDC"] * 6
        rng.shuffle(shoe)
        tb.tap_in(f"D{t}")
        tb.new_shoe(f"T{t:02d}-S1", burn=shoe.pop())
        for n in range(1, rounds + 1):
            left, right = shoe.pop(), shoe.pop()
            gap = abs(RANKS.index(left[:-1]) - RANKS.index(right[:-1]))
            cards = f"{left} {right}" if gap == 1 else f"{left} {right} {shoe.pop()}"
            wagers = {s: rng.choice((500, 1000, 2500)) for s in range(1, 4) if rng.random() < .8}
            raises = {s: c for s, c in wagers.items() if gap >= 8}
            tb.play(n, cards, wagers, raises)
        tb.flush()


def digests_of(db: Path) -> dict[str, tuple[int, str]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return digest_views(con)


def round_kinds(db: Path) -> set[tuple[str, str, bool | None]]:
    """(table, kind, spread of 8 or more) of every round in the projected `db`: which kinds of
    round an evening deals, for the tests whose point needs every kind."""
    with duckdb.connect(str(db), read_only=True) as con:
        return set(con.execute("SELECT table_id, kind, spread >= 8 FROM rounds").fetchall())

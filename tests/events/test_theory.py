"""Tests of events.reddog.theory: the closed forms against independent brute-force enumerations."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from fractions import Fraction

import pytest

from events.errors import RuleError
from events.reddog.rules import STANDARD_PAYTABLE, Paytable, settle_wager
from events.reddog.theory import (
    HouseEdge,
    house_edge,
    original_wager_edge,
    outcome_probabilities,
    p_first_two,
    p_trips_given_pair,
    p_win_given_spread,
    raise_edge,
)

RANKS = range(2, 15)
DECKS = (1, 2, 4, 6, 8)
PROMO = Paytable(spread_1=6, spread_4_to_11=2, three_of_a_kind=12)


# --- brute force -------------------------------------------------------------------------------
# Deliberately independent of events.reddog.theory and events.reddog.rules: its own payout table
# and logic.


def _odds(table: Paytable, s: int) -> int:
    return {1: table.spread_1, 2: table.spread_2, 3: table.spread_3}.get(s, table.spread_4_to_11)


def rank_triples(decks: int) -> Iterator[tuple[int, int, int, int]]:
    """(left, right, third, weight): ordered draws without replacement from a multiset with
    4*decks copies of each rank; weights sum to N(N-1)(N-2)."""
    c = 4 * decks
    for a, b, t in itertools.product(RANKS, repeat=3):
        yield a, b, t, c * (c - (b == a)) * (c - (t == a) - (t == b))


def card_triples() -> Iterator[tuple[int, int, int, int]]:
    """The same for one real 52-card deck: every ordered triple of distinct cards, weight 1."""
    deck = [r for r in RANKS for _suit in range(4)]
    for i, j, k in itertools.permutations(range(52), 3):
        yield deck[i], deck[j], deck[k], 1


def brute(
    triples: Iterator[tuple[int, int, int, int]], raise_from: int | None, table: Paytable
) -> dict[str, Fraction]:
    """Outcome frequencies and the house's win and wagered amount per unit of original wager."""
    total = 0
    counts: dict[str, int] = {}
    win = wagered = 0
    for a, b, t, w in triples:
        total += w
        d = abs(a - b)
        wagered += w
        if d == 1:
            key = "consecutive"
        elif d == 0:
            key = "trips" if t == a else "pair_no_trips"
            win -= w * table.three_of_a_kind if t == a else 0
        else:
            s = d - 1
            key = f"spread_{s}"
            units = 2 if raise_from is not None and s >= raise_from else 1
            wagered += w * (units - 1)
            win += w * units * (-_odds(table, s) if min(a, b) < t < max(a, b) else 1)
        counts[key] = counts.get(key, 0) + w
    out = {k: Fraction(v, total) for k, v in counts.items()}
    out["pair"] = out["trips"] + out["pair_no_trips"]
    out["win"] = Fraction(win, total)
    out["wagered"] = Fraction(wagered, total)
    return out


# --- probabilities -----------------------------------------------------------------------------


@pytest.mark.parametrize("decks", DECKS)
def test_probabilities_match_enumeration_and_sum_to_one(decks: int) -> None:
    b = brute(rank_triples(decks), None, STANDARD_PAYTABLE)
    probs = outcome_probabilities(decks)
    assert set(probs) == {"consecutive", "pair", "trips", "pair_no_trips"} | {
        f"spread_{s}" for s in range(1, 12)
    }
    for key, p in probs.items():
        assert p == b[key], key
    first = p_first_two(decks)
    assert set(first) == set(probs) - {"trips", "pair_no_trips"}
    assert sum(first.values()) == 1
    assert sum(v for k, v in probs.items() if k != "pair") == 1
    assert probs["pair"] == probs["trips"] + probs["pair_no_trips"]


def test_single_deck_probabilities_by_hand() -> None:
    first = p_first_two(1)
    assert first["pair"] == Fraction(13 * 4 * 3, 52 * 51) == Fraction(1, 17)
    assert first["consecutive"] == Fraction(2 * 12 * 16, 52 * 51) == Fraction(32, 221)
    assert first["spread_11"] == Fraction(2 * 16, 52 * 51)  # a deuce and an ace
    assert p_trips_given_pair(1) == Fraction(2, 50)
    assert p_win_given_spread(1, 7) == Fraction(28, 50)
    assert p_win_given_spread(8, 1) == Fraction(32, 414)
    assert p_trips_given_pair(8) == Fraction(30, 414)


# --- house edge --------------------------------------------------------------------------------


@pytest.mark.parametrize("decks", DECKS)
@pytest.mark.parametrize("raise_from", [None, *range(1, 12)])
@pytest.mark.parametrize("table", [STANDARD_PAYTABLE, PROMO], ids=["standard", "promo"])
def test_house_edge_matches_enumeration(
    decks: int, raise_from: int | None, table: Paytable
) -> None:
    b = brute(rank_triples(decks), raise_from, table)
    h = house_edge(decks, raise_from, table)
    assert h == HouseEdge(b["win"], b["win"] / b["wagered"], b["wagered"])
    if raise_from is None:
        assert original_wager_edge(decks, table) == b["win"]


def test_single_deck_matches_real_cards() -> None:
    # every ordered triple of the 52 actual cards, not the rank multiset
    for raise_from in (None, 7):
        b = brute(card_triples(), raise_from, STANDARD_PAYTABLE)
        h = house_edge(1, raise_from)
        assert (h.per_original_wager, h.expected_wagered_per_original) == (b["win"], b["wagered"])


def test_settle_wager_agrees_with_theory() -> None:
    # the same expectation, settled wager by wager in cents with events.reddog.rules
    for decks in (1, 8):
        c = 4 * decks
        total = win = 0
        for a, b, t, w in rank_triples(decks):
            third = None if abs(a - b) == 1 else t
            s = settle_wager(STANDARD_PAYTABLE, a, b, third, 100)
            assert s.paid_cents + s.collected_cents + s.returned_cents > 0
            total += w
            win += w * s.net_win_cents
        assert total == (13 * c) * (13 * c - 1) * (13 * c - 2)
        assert Fraction(win, total * 100) == original_wager_edge(decks)


EXACT = {
    # decks: (never raise, raise at spread >= 7), per original wager; verified by enumeration
    1: (Fraction(1523, 16575), Fraction(523, 16575)),
    2: (Fraction(5861, 68289), Fraction(2101, 68289)),
    6: (Fraction(3841, 48205), Fraction(17533, 626665)),
    8: (Fraction(88001, 1116765), Fraction(30721, 1116765)),
}


@pytest.mark.parametrize("decks", sorted(EXACT))
def test_exact_values(decks: int) -> None:
    never, at7 = EXACT[decks]
    assert house_edge(decks, None).per_original_wager == never
    assert house_edge(decks, 7).per_original_wager == at7


def test_published_figures_assume_raising_at_seven() -> None:
    # The published 3.155% (1 deck), 2.80% (6 decks), 2.75% (8 decks) are per original wager
    # with the player raising on spreads of 7 or more. Never raising costs far more (~8-9%).
    assert round(float(house_edge(1, 7).per_original_wager), 5) == 0.03155
    assert round(float(house_edge(6, 7).per_original_wager), 4) == 0.0280
    assert round(float(house_edge(8, 7).per_original_wager), 4) == 0.0275
    assert round(float(house_edge(1, None).per_original_wager), 4) == 0.0919
    assert round(float(house_edge(8, None).per_original_wager), 4) == 0.0788


@pytest.mark.parametrize("decks", DECKS)
def test_raising_at_seven_is_optimal(decks: int) -> None:
    # with the standard table a raise favours the player exactly when the spread is >= 7
    assert [s for s in range(1, 12) if raise_edge(decks, s) < 0] == list(range(7, 12))
    never = house_edge(decks, None)
    at7 = house_edge(decks, 7)
    first = p_first_two(decks)
    gain = sum(first[f"spread_{s}"] * raise_edge(decks, s) for s in range(7, 12))
    assert gain < 0
    assert at7.per_original_wager == never.per_original_wager + gain < never.per_original_wager
    assert at7.per_total_wagered < never.per_total_wagered
    assert at7.expected_wagered_per_original == 1 + sum(first[f"spread_{s}"] for s in range(7, 12))
    for k in [None, *range(1, 12)]:
        assert house_edge(decks, k).per_original_wager >= at7.per_original_wager


def test_never_raising_has_no_extra_wager() -> None:
    h = house_edge(6, None)
    assert h.expected_wagered_per_original == 1
    assert h.per_total_wagered == h.per_original_wager == original_wager_edge(6)


def test_raise_edge_single_deck_by_hand() -> None:
    # 1 deck, spread 1: wins 4/50 at 5 to 1 -> house 46/50 - 20/50 = 26/50
    assert raise_edge(1, 1) == Fraction(26, 50)
    assert raise_edge(1, 7) == Fraction(22 - 28, 50)
    assert raise_edge(1, 11) == Fraction(6 - 44, 50)


@pytest.mark.parametrize(
    "call",
    [
        lambda: p_first_two(0),
        lambda: p_first_two(True),
        lambda: house_edge(-1, None),
        lambda: house_edge(6, 0),
        lambda: house_edge(6, 12),
        lambda: raise_edge(6, 0),
        lambda: p_win_given_spread(1, 12),
    ],
)
def test_rejects_bad_input(call: object) -> None:
    with pytest.raises(RuleError):
        call()  # type: ignore[operator]

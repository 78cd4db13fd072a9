"""Exact red dog theory from the combinatorics: outcome probabilities and the house edge.

Model: every round is dealt from a full, freshly shuffled shoe of `decks` standard decks
(52 * decks cards, 4 * decks of each of the 13 ranks); the only cards removed are the ones on
the layout (the first two when the third is drawn). Burns and earlier rounds are ignored.
All results are exact Fractions; the CLI does the presentation.

The payout rules are those of events.reddog.rules (13:47-20.31(d)7-14, (e); GA (5)-(11)).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from events.errors import RuleError
from events.reddog.rules import (
    SPREAD_MAX,
    SPREAD_MIN,
    STANDARD_PAYTABLE,
    Paytable,
    spread_odds,
    trips_odds,
)

RANKS = 13  # 13:47-20.31(a)2ii: two through ace
SPREADS = tuple(range(SPREAD_MIN, SPREAD_MAX + 1))


class TheoryError(RuleError):
    """Ill-formed input to a theoretical calculation (a deck count, a raise policy)."""


def _check_decks(decks: int) -> int:
    if isinstance(decks, bool) or not isinstance(decks, int) or decks < 1:
        raise TheoryError(f"decks must be an integer >= 1, got {decks!r}")
    return decks


def _check_spread(spread: int) -> int:
    if isinstance(spread, bool) or not isinstance(spread, int) or spread not in SPREADS:
        raise TheoryError(f"spread must be an integer {SPREAD_MIN}..{SPREAD_MAX}, got {spread!r}")
    return spread


def p_first_two(decks: int) -> dict[str, Fraction]:
    """Probabilities of the first two cards: keys "consecutive", "pair", "spread_1".."spread_11".

    Ordered pairs without replacement from N = 52*decks cards, c = 4*decks of each rank:
    a pair is one of 13 ranks, c*(c-1) ordered ways; two ranks k apart (k = spread + 1) can be
    chosen in 13-k ways, in either order, c*c ways each.
    """
    c = 4 * _check_decks(decks)
    n = RANKS * c
    ordered = n * (n - 1)
    probs = {
        "consecutive": Fraction(2 * (RANKS - 1) * c * c, ordered),
        "pair": Fraction(RANKS * c * (c - 1), ordered),
    }
    for s in SPREADS:
        probs[f"spread_{s}"] = Fraction(2 * (RANKS - 1 - s) * c * c, ordered)
    return probs


def p_win_given_spread(decks: int, spread: int) -> Fraction:
    """P(third card strictly between | spread): 4*decks*spread of the 52*decks-2 cards left."""
    c = 4 * _check_decks(decks)
    return Fraction(c * _check_spread(spread), RANKS * c - 2)


def p_trips_given_pair(decks: int) -> Fraction:
    """P(three of a kind | pair): 4*decks-2 of the 52*decks-2 cards left."""
    c = 4 * _check_decks(decks)
    return Fraction(c - 2, RANKS * c - 2)


def outcome_probabilities(decks: int) -> dict[str, Fraction]:
    """Round outcome probabilities: "consecutive", "pair", "trips", "pair_no_trips" and
    "spread_1".."spread_11". "pair" = "trips" + "pair_no_trips"; the probabilities of
    "consecutive", "pair" and the spreads sum to 1 (and so do those of "consecutive",
    "trips", "pair_no_trips" and the spreads)."""
    first = p_first_two(decks)
    trips = first["pair"] * p_trips_given_pair(decks)
    out = {
        "consecutive": first["consecutive"],
        "pair": first["pair"],
        "trips": trips,
        "pair_no_trips": first["pair"] - trips,
    }
    out.update((f"spread_{s}", first[f"spread_{s}"]) for s in SPREADS)
    return out


def raise_edge(decks: int, spread: int, paytable: Paytable = STANDARD_PAYTABLE) -> Fraction:
    """Expected house win per unit wagered at this spread, once the spread is known: the same
    for an original wager and a raise (13:47-20.31(e)). Negative when the wager favours the
    player (with the standard table: spread >= 7)."""
    q = p_win_given_spread(decks, spread)
    return (1 - q) - q * spread_odds(paytable, spread)


def _pair_house_win(decks: int, paytable: Paytable) -> Fraction:
    # 13:47-20.31(d)9-10: trips pay the three-of-a-kind odds, anything else is a tie hand.
    return -p_trips_given_pair(decks) * trips_odds(paytable)


def original_wager_edge(decks: int, paytable: Paytable = STANDARD_PAYTABLE) -> Fraction:
    """Expected house win per unit of original wager when the player never raises.
    A consecutive round is a tie hand (13:47-20.31(d)7) and contributes 0."""
    first = p_first_two(decks)
    edge = first["pair"] * _pair_house_win(decks, paytable)
    for s in SPREADS:
        edge += first[f"spread_{s}"] * raise_edge(decks, s, paytable)
    return edge


@dataclass(frozen=True, slots=True)
class HouseEdge:
    """The house edge under one raise policy.

    per_original_wager: expected house win / original wager (raises included in the win);
    per_total_wagered: expected house win / expected total wagered, original plus raises
        (the "element of risk"); void wagers count as wagered;
    expected_wagered_per_original: expected total wagered / original wager (1 + P(raise)).
    """

    per_original_wager: Fraction
    per_total_wagered: Fraction
    expected_wagered_per_original: Fraction


def house_edge(
    decks: int, raise_from: int | None, paytable: Paytable = STANDARD_PAYTABLE
) -> HouseEdge:
    """The exact house edge when the player raises the full original wager (the most
    13:47-20.31(d)12 allows) whenever the spread is >= raise_from; raise_from None never
    raises. raise_from must be 1..11 or None."""
    if raise_from is not None:
        _check_spread(raise_from)
    first = p_first_two(decks)
    win = original_wager_edge(decks, paytable)
    wagered = Fraction(1)
    if raise_from is not None:
        for s in range(raise_from, SPREAD_MAX + 1):
            win += first[f"spread_{s}"] * raise_edge(decks, s, paytable)
            wagered += first[f"spread_{s}"]
    return HouseEdge(
        per_original_wager=win,
        per_total_wagered=win / wagered,
        expected_wagered_per_original=wagered,
    )

"""The red dog rules as pure functions: card values, spread, classification, the third-card
decision, jurisdiction profiles, paytables and the expected settlement of one wager.

Sources (the regulations quoted in docs/anomalies.md):
- 13:47-20.31: N.J.A.C. rules of red dog at casino nights (seed 000);
- 13:69F-6.x: N.J.A.C. rules of red dog in casinos (seed 001);
- GA (n): the other gaming authority's red dog rules, paragraph n (seed 004).

No I/O, no clock. Money is integer cents, odds are integers "X to 1".
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Final

from events.errors import RuleError

# 13:47-20.31(a)2ii: two to 10 at face value, jack 11, queen 12, king 13, ace 14.
RANK_MIN: Final = 2
RANK_MAX: Final = 14
RANK_NAMES: Final[dict[int, str]] = {
    r: {11: "J", 12: "Q", 13: "K", 14: "A"}.get(r, str(r)) for r in range(RANK_MIN, RANK_MAX + 1)
}
# The ranks in words, as the dealer announces the third card's value (13:47-20.31(d)13).
RANK_WORDS: Final[dict[int, str]] = {
    2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven", 8: "Eight", 9: "Nine",
    10: "Ten", 11: "Jack", 12: "Queen", 13: "King", 14: "Ace"}
# 13:47-20.31(d)11; GA (10): "a number from one to 11 inclusive".
SPREAD_MIN: Final = 1
SPREAD_MAX: Final = 11
# The decks in a shoe that pitlog accepts. The floor is 13:69F-6.1(a): "Red dog shall be played
# with at least one deck of cards"; no rule given sets a ceiling, so MAX_DECKS is what pitlog
# supports (events/recording/limits.py says why). Here, beside the rules, so `pitlog theo` and
# `pitlog simulate` read their bounds without importing the recorder.
MIN_DECKS: Final = 1
MAX_DECKS: Final = 8
# 13:47-20.31(a)2: a deck is the 13 ranks above in four suits, 52 cards; so no shoe pitlog
# accepts holds more than MAX_SHOE_CARDS (a cut, a cutting card's place or a count of the cards
# left in a shoe beyond it is impossible, events/recording/device_line.py).
CARDS_PER_DECK: Final = 4 * (RANK_MAX - RANK_MIN + 1)
MAX_SHOE_CARDS: Final = CARDS_PER_DECK * MAX_DECKS
# Seats and betting areas are numbered from 1, as a layout shows them ("table 7, seat 3"): no
# rule given numbers them, so this is pitlog's numbering, the one `pitlog dispute --seat`, the
# console and `pitlog simulate` use; a place numbered 0 is one no dispute could ask about.
FIRST_SEAT: Final = 1
# A round number within its shoe is never negative; 0 is a number a device may record, as
# pitlog's read side treats it: cards dealt for round 0 are cards outside any round
# (CARD_OUTSIDE_ROUND, 13:47-20.31(d)5 and (d)15), and the rounds view lists round 0 as a
# round, so `pitlog dispute --round SHOE:0`, the HTTP API and the console all ask for it.
MIN_ROUND_NO: Final = 0


class PaytableError(RuleError):
    """A paytable line is ill-formed or outside what the jurisdiction allows."""


def card_value(rank: int) -> int:
    """The value of a card of this rank; raises RuleError outside 2..14 (13:47-20.31(a)2ii)."""
    if type(rank) is int and RANK_MIN <= rank <= RANK_MAX:  # the usual case, in one test
        return rank
    if isinstance(rank, bool) or not isinstance(rank, int) or not RANK_MIN <= rank <= RANK_MAX:
        raise RuleError(f"card rank must be an integer {RANK_MIN}..{RANK_MAX}, got {rank!r}")
    return rank


class HandKind(StrEnum):
    """What the first two cards of a round are."""

    CONSECUTIVE = "consecutive"  # 13:47-20.31(d)7; GA (5)
    PAIR = "pair"  # 13:47-20.31(d)8; GA (6)
    SPREAD = "spread"  # 13:47-20.31(d)11; GA (9)-(10)


@dataclass(frozen=True, slots=True)
class Classification:
    """The kind of the first two cards; `spread` is 1..11 for SPREAD and None otherwise."""

    kind: HandKind
    spread: int | None

    def __post_init__(self) -> None:
        if self.kind is HandKind.SPREAD:
            _check_spread(self.spread)
        elif self.spread is not None:
            raise RuleError(f"a {self.kind} hand has no spread, got {self.spread!r}")


def spread(a: int, b: int) -> int:
    """The number of ranks strictly between a and b: 0 when consecutive, -1 for a pair.

    13:47-20.31(d)11: "determined by the number of cards whose value can fall between the
    values of the initial two cards dealt"; four and seven give 2, nine and king give 3.
    """
    return abs(card_value(a) - card_value(b)) - 1


def classify(a: int, b: int) -> Classification:
    """Classify the first two cards (left box, right box) of a round."""
    s = spread(a, b)
    if s == -1:
        return Classification(HandKind.PAIR, None)  # 13:47-20.31(d)8
    if s == 0:
        return Classification(HandKind.CONSECUTIVE, None)  # 13:47-20.31(d)7
    return Classification(HandKind.SPREAD, s)  # 13:47-20.31(d)11


def third_card_wins(left: int, right: int, third: int) -> bool:
    """True when the third card's value is strictly between the first two.

    13:47-20.31(d)14; GA (11)(a): a third card equal to the first or second card is not
    deemed to be between them, so it loses.
    """
    lo, hi = sorted((card_value(left), card_value(right)))
    return lo < card_value(third) < hi


def _check_spread(s: object) -> int:
    if isinstance(s, bool) or not isinstance(s, int) or not SPREAD_MIN <= s <= SPREAD_MAX:
        raise RuleError(f"spread must be an integer {SPREAD_MIN}..{SPREAD_MAX}, got {s!r}")
    return s


# --- jurisdiction profiles -------------------------------------------------------------------


class Profile(StrEnum):
    """The rule set a table runs under (docs/architecture.md, "Jurisdiction profiles")."""

    NJ_CASINO = "nj-casino"
    NJ_CASINO_NIGHT = "nj-casino-night"
    GAMING_AUTHORITY = "gaming-authority"


@dataclass(frozen=True, slots=True)
class ProfileRules:
    """What a profile allows.

    `payout_floor_only`: True when the table's odds are a floor (paying more is allowed);
    False when a payout must equal the table exactly (unless the Board approved another table).
    """

    max_decks: int | None
    min_decks: int
    call_bets_allowed: bool
    match_play_allowed: bool
    payout_floor_only: bool


PROFILES: Final[dict[Profile, ProfileRules]] = {
    Profile.NJ_CASINO: ProfileRules(
        max_decks=None,  # 13:69F-6.1(a): "at least one deck"
        min_decks=1,
        # 13:69F-6.5(b): wagers are made "by placing gaming chips or plaques and, if
        # applicable, a match play coupon on the appropriate area"; unlike the roulette rule
        # of the same chapter, red dog states no exception for verbal wagers.
        call_bets_allowed=False,
        match_play_allowed=True,  # 13:69F-6.5(b): "and, if applicable, a match play coupon"
        payout_floor_only=True,  # 13:69F-6 (docs/architecture.md: payouts never below the table)
    ),
    Profile.NJ_CASINO_NIGHT: ProfileRules(
        max_decks=1,  # 13:47-20.31(a)2: "A deck of cards"
        min_decks=1,
        # 13:47-20.31(d)4: "All wagers ... shall be placed on the appropriate area of the red
        # dog layout": a spoken call bet is not placed.
        call_bets_allowed=False,
        # 13:47-20.31 names no instrument, so a coupon is not judged there (docs/anomalies.md).
        match_play_allowed=True,
        payout_floor_only=True,  # 13:47-20.31(f): not "decrease ... below" (e)
    ),
    Profile.GAMING_AUTHORITY: ProfileRules(
        max_decks=None,  # GA says nothing about the number of decks
        min_decks=1,
        call_bets_allowed=False,  # GA (2): "no call bets shall be allowed"
        match_play_allowed=False,  # GA (2): chips or plaques only
        payout_floor_only=False,  # GA (11)(c): "less than or more than" needs the Board
    ),
}


def _profile(profile: Profile | str) -> Profile:
    try:
        return Profile(profile)
    except ValueError:
        known = ", ".join(p.value for p in Profile)
        raise RuleError(f"unknown jurisdiction profile {profile!r} (known: {known})") from None


def profile_rules(profile: Profile | str) -> ProfileRules:
    """The rules of a profile, given as a Profile or its string value."""
    return PROFILES[_profile(profile)]


def burn_owed(profile: Profile | str, reshuffling_shoe: bool) -> bool:
    """Whether a burn is owed after a new shoe or a new dealer (13:47-20.31(d)1; 13:69F-6.4).

    13:69F-6.9: "In lieu of the dealing and shuffling requirements set forth in N.J.A.C.
    13:69F-6.3 and 6.4, a casino licensee may utilize a dealing shoe or other device designed
    to automatically reshuffle the cards": at an nj-casino table dealing from such a device
    (ShuffleMethod.CONTINUOUS_SHUFFLER) no burn is owed. Casino nights (13:47-20.31) and the
    gaming authority state no such exemption. projections/sql/anomalies_shoes.sql
    (burn_exempt_loads) decides the same.
    """
    return not (reshuffling_shoe and _profile(profile) is Profile.NJ_CASINO)


# --- paytables -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Paytable:
    """Payout odds, each "X to 1" (X cents won per cent wagered).

    The defaults are the standard table: 13:47-20.31(e) for spreads and (d)9 for three of a kind.
    """

    spread_1: int = 5
    spread_2: int = 4
    spread_3: int = 2
    spread_4_to_11: int = 1
    three_of_a_kind: int = 11

    def __post_init__(self) -> None:
        for f in fields(self):
            odds = getattr(self, f.name)
            if isinstance(odds, bool) or not isinstance(odds, int) or odds < 1:
                raise PaytableError(
                    f"paytable line {f.name} must be an integer >= 1 (X to 1), got {odds!r}"
                )

    def lines(self) -> tuple[tuple[str, int], ...]:
        """(line name, odds) for every line, in layout order."""
        return tuple((f.name, getattr(self, f.name)) for f in fields(self))


STANDARD_PAYTABLE: Final = Paytable()  # 13:47-20.31(e), (d)9; GA (7), (11)(b)


def spread_odds(paytable: Paytable, spread: int) -> int:
    """The odds ("X to 1") a winning wager or raise is paid at this spread (13:47-20.31(e))."""
    s = _check_spread(spread)
    if s == 1:
        return paytable.spread_1
    if s == 2:
        return paytable.spread_2
    if s == 3:
        return paytable.spread_3
    return paytable.spread_4_to_11


def trips_odds(paytable: Paytable) -> int:
    """The odds a three of a kind is paid at (13:47-20.31(d)9; GA (7))."""
    return paytable.three_of_a_kind


def _paytable_clause(profile: Profile, line: str) -> str:
    # 13:47-20.31(f) only names the spread odds of (e); three of a kind is fixed at 11 to 1 by
    # (d)9 ("shall be paid at odds of 11 to 1"), neither lower nor higher at a casino night
    # (see _fixed_odds). A promotional 12 to 1 is allowed at an nj-casino table.
    # 13:69F-6: the seed omits the red dog payout-odds section's text (6.6 is empty there);
    # docs/architecture.md: "payouts never below the table".
    if profile is Profile.NJ_CASINO_NIGHT:
        return "13:47-20.31(d)9" if line == "three_of_a_kind" else "13:47-20.31(e)-(f)"
    if profile is Profile.NJ_CASINO:
        return "13:69F-6"
    return "GA (11)(c)"


def _fixed_odds(profile: Profile, line: str) -> bool:
    """True when the line's odds are fixed, neither lower nor higher: three of a kind at a
    casino night (13:47-20.31(d)9 "shall be paid at odds of 11 to 1"; (f) only protects the
    spread odds of (e) from a decrease, so only those may be raised)."""
    return profile is Profile.NJ_CASINO_NIGHT and line == "three_of_a_kind"


def validate_paytable(
    profile: Profile | str, paytable: Paytable, *, board_approved: bool = False
) -> None:
    """Raise PaytableError, naming the first offending line and its clause, if this profile
    may not use this paytable.

    NJ profiles: every line must be at least the standard line (13:47-20.31(f): the odds may not
    be decreased below (e); 13:69F-6: never below the table); higher odds are allowed, but for
    three of a kind at a casino night, which 13:47-20.31(d)9 fixes at exactly 11 to 1.
    gaming-authority: every line must equal the standard line, neither less nor more, unless
    the Board of the Gaming Authority approved the table (GA (11)(c)). `board_approved` has no
    effect on the NJ profiles.
    """
    p = _profile(profile)
    floor_only = PROFILES[p].payout_floor_only
    for (name, odds), (_, standard) in zip(
        paytable.lines(), STANDARD_PAYTABLE.lines(), strict=True
    ):
        clause = _paytable_clause(p, name)
        if _fixed_odds(p, name) and odds != standard:
            raise PaytableError(
                f"{p} paytable line {name} pays {odds} to 1, not the {standard} to 1 that "
                f"{clause} fixes"
            )
        if floor_only and odds < standard:
            raise PaytableError(
                f"{p} paytable line {name} pays {odds} to 1, below the minimum {standard} to 1 "
                f"({clause})"
            )
        if not floor_only and odds != standard and not board_approved:
            word = "below" if odds < standard else "above"
            raise PaytableError(
                f"{p} paytable line {name} pays {odds} to 1, {word} the table's {standard} to 1, "
                f"without the Board's approval ({clause})"
            )


# --- settlement ------------------------------------------------------------------------------


class SettledAs(StrEnum):
    """The decision on one wager, as the rules expect it (ExpectedSettlement) and as the dealer
    records it (model.WagerSettled, stored in these spellings). WON: the winnings paid; LOST:
    the wager collected; VOID: docs/architecture.md's "void or push", the wager returned (a tie
    hand or a voided round)."""

    WON = "WON"
    LOST = "LOST"
    VOID = "VOID"


@dataclass(frozen=True, slots=True)
class ExpectedSettlement:
    """What the dealer should do with one wager (or one raise).

    `paid_cents` is the winnings only: a winner also gets the wager itself back, which is NOT
    counted in paid_cents (nor in returned_cents). `collected_cents` is a lost wager taken by
    the house; `returned_cents` is a void wager handed back. So the house's net win on the
    wager is collected_cents - paid_cents, the figure auditors reconcile. `odds` is the
    "X to 1" a winner is paid at, None unless WON.
    """

    outcome: SettledAs
    odds: int | None
    paid_cents: int
    collected_cents: int
    returned_cents: int

    @property
    def net_win_cents(self) -> int:
        """The house's net win on this wager: collected - paid."""
        return self.collected_cents - self.paid_cents


def _void(amount_cents: int) -> ExpectedSettlement:
    return ExpectedSettlement(SettledAs.VOID, None, 0, 0, amount_cents)


def settle_wager(
    paytable: Paytable,
    left: int,
    right: int,
    third: int | None,
    amount_cents: int,
    *,
    is_raise: bool = False,
) -> ExpectedSettlement:
    """The expected settlement of one wager (or, with is_raise, one raise) of amount_cents.

    - consecutive: VOID, the amount returned; a third card, if one was drawn, is ignored
      (13:47-20.31(d)7; GA (5));
    - pair and a third card of the same value: WON, paid amount * three-of-a-kind odds
      (13:47-20.31(d)9; GA (7));
    - pair and any other third card: VOID, the amount returned (13:47-20.31(d)10; GA (8));
    - spread and a third card strictly between: WON, paid amount * the spread's odds;
      otherwise LOST, the amount collected (13:47-20.31(d)14, (e); GA (11)(a)-(b)).

    `paid_cents` is the winnings only; the winner's own wager comes back on top of it and is not
    in any of the three amounts. A raise is settled exactly like an original wager
    (13:47-20.31(e): "Winning wagers and raise wagers"). A raise on a consecutive or pair round
    is not allowed ((d)12, the RAISE_NOT_ALLOWED anomaly), but if asked it is settled the same
    way as the original wager, so the expected money can still be compared.

    Raises RuleError for a rank outside 2..14, a negative amount, or a missing third card on a
    round that needs one (a pair or a spread).
    """
    del is_raise  # a raise settles like the original wager, see above
    if isinstance(amount_cents, bool) or not isinstance(amount_cents, int) or amount_cents < 0:
        raise RuleError(
            f"wager amount must be a non-negative integer of cents, got {amount_cents!r}"
        )
    c = classify(left, right)
    if third is not None:
        card_value(third)
    if c.kind is HandKind.CONSECUTIVE:
        return _void(amount_cents)  # 13:47-20.31(d)7
    if third is None:
        raise RuleError(
            f"a {c.kind} round of {RANK_NAMES[left]} and {RANK_NAMES[right]} needs a "
            "third card to settle (13:47-20.31(d)8, (d)13)"
        )
    if c.kind is HandKind.PAIR:
        if third == left:
            odds = trips_odds(paytable)  # 13:47-20.31(d)9
            return ExpectedSettlement(SettledAs.WON, odds, amount_cents * odds, 0, 0)
        return _void(amount_cents)  # 13:47-20.31(d)10
    assert c.spread is not None
    if third_card_wins(left, right, third):  # 13:47-20.31(d)14
        odds = spread_odds(paytable, c.spread)  # 13:47-20.31(e)
        return ExpectedSettlement(SettledAs.WON, odds, amount_cents * odds, 0, 0)
    return ExpectedSettlement(SettledAs.LOST, None, 0, amount_cents, 0)

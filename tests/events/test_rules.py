"""Tests of events.reddog.rules: card values, spread, classification, profiles, paytables,
settlement."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events.errors import PitlogError, RuleError
from events.reddog.rules import (
    PROFILES,
    RANK_MAX,
    RANK_MIN,
    RANK_NAMES,
    RANK_WORDS,
    STANDARD_PAYTABLE,
    Classification,
    ExpectedSettlement,
    HandKind,
    Paytable,
    PaytableError,
    Profile,
    ProfileRules,
    SettledAs,
    card_value,
    classify,
    profile_rules,
    settle_wager,
    spread,
    spread_odds,
    third_card_wins,
    trips_odds,
    validate_paytable,
)

J, Q, K, A = 11, 12, 13, 14
RANKS = range(RANK_MIN, RANK_MAX + 1)
NJ_PROFILES = (Profile.NJ_CASINO, Profile.NJ_CASINO_NIGHT)

# --- cards, spread, classification -------------------------------------------------------------


def test_card_values_and_names() -> None:
    # 13:47-20.31(a)2ii
    assert [card_value(r) for r in RANKS] == list(range(2, 15))
    assert RANK_NAMES == {
        2: "2", 3: "3", 4: "4", 5: "5", 6: "6", 7: "7", 8: "8", 9: "9", 10: "10",
        11: "J", 12: "Q", 13: "K", 14: "A",
    }  # fmt: skip


@pytest.mark.parametrize("bad", [0, 1, 15, -2, True, 2.0, "5", None])
def test_card_value_rejects_non_ranks(bad: object) -> None:
    with pytest.raises(RuleError):
        card_value(bad)  # type: ignore[arg-type]


def test_spread_regulation_and_guide_examples() -> None:
    assert spread(4, 7) == 2  # 13:47-20.31(d)11i: four and seven -> five, six
    assert spread(9, K) == 3  # 13:47-20.31(d)11ii: nine and king -> 10, jack, queen
    assert spread(3, 9) == 5  # player's guide: 4, 5, 6, 7, 8


def test_spread_edges_and_symmetry() -> None:
    assert spread(2, A) == 11
    assert spread(J, Q) == 0
    assert spread(Q, Q) == -1
    for a in RANKS:
        for b in RANKS:
            assert spread(a, b) == spread(b, a) == abs(a - b) - 1
    with pytest.raises(RuleError):
        spread(1, 5)


def test_classify_every_pair_of_ranks() -> None:
    for a in RANKS:
        for b in RANKS:
            c = classify(a, b)
            if a == b:
                assert c == Classification(HandKind.PAIR, None)
            elif abs(a - b) == 1:
                assert c == Classification(HandKind.CONSECUTIVE, None)
            else:
                assert c == Classification(HandKind.SPREAD, abs(a - b) - 1)
                assert 1 <= c.spread <= 11  # type: ignore[operator]


@pytest.mark.parametrize(
    ("kind", "s"),
    [(HandKind.SPREAD, None), (HandKind.SPREAD, 0), (HandKind.SPREAD, 12), (HandKind.PAIR, 3),
     (HandKind.CONSECUTIVE, 0)],
)  # fmt: skip
def test_classification_rejects_inconsistent_spread(kind: HandKind, s: int | None) -> None:
    with pytest.raises(RuleError):
        Classification(kind, s)


def test_classification_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        classify(4, 7).spread = 3  # type: ignore[misc]


def test_third_card_strictly_between_wins_and_ends_lose() -> None:
    assert third_card_wins(4, 7, 5) and third_card_wins(7, 4, 6)
    # GA (11)(a): a third card equal to the first or second card is not between them
    assert not third_card_wins(4, 7, 4)
    assert not third_card_wins(4, 7, 7)
    assert not third_card_wins(4, 7, 3) and not third_card_wins(4, 7, A)
    assert not any(third_card_wins(8, 8, t) for t in RANKS)
    assert not any(third_card_wins(8, 9, t) for t in RANKS)
    assert [t for t in RANKS if third_card_wins(2, A, t)] == list(range(3, 14))


# --- profiles ----------------------------------------------------------------------------------


def test_profiles() -> None:
    assert set(PROFILES) == set(Profile)
    # 13:69F-6.5(b): chips, plaques, match play coupons; no exception for verbal wagers.
    assert PROFILES[Profile.NJ_CASINO] == ProfileRules(
        max_decks=None, min_decks=1, call_bets_allowed=False, match_play_allowed=True,
        payout_floor_only=True,
    )  # fmt: skip
    # 13:47-20.31(d)4: wagers placed on the layout; no instrument named.
    assert PROFILES[Profile.NJ_CASINO_NIGHT] == ProfileRules(
        max_decks=1, min_decks=1, call_bets_allowed=False, match_play_allowed=True,
        payout_floor_only=True,
    )  # fmt: skip
    assert PROFILES[Profile.GAMING_AUTHORITY] == ProfileRules(
        max_decks=None, min_decks=1, call_bets_allowed=False, match_play_allowed=False,
        payout_floor_only=False,
    )  # fmt: skip


def test_profile_rules_by_value_and_unknown() -> None:
    assert profile_rules("gaming-authority") is PROFILES[Profile.GAMING_AUTHORITY]
    assert profile_rules(Profile.NJ_CASINO) is PROFILES[Profile.NJ_CASINO]
    with pytest.raises(RuleError, match="unknown jurisdiction profile 'nevada'"):
        profile_rules("nevada")


# --- paytables ---------------------------------------------------------------------------------


def test_standard_paytable() -> None:
    # 13:47-20.31(e) and (d)9
    assert [spread_odds(STANDARD_PAYTABLE, s) for s in range(1, 12)] == [5, 4, 2] + [1] * 8
    assert trips_odds(STANDARD_PAYTABLE) == 11
    assert STANDARD_PAYTABLE.lines() == (
        ("spread_1", 5), ("spread_2", 4), ("spread_3", 2), ("spread_4_to_11", 1),
        ("three_of_a_kind", 11),
    )  # fmt: skip


@pytest.mark.parametrize("bad", [0, 12, -1, True])
def test_spread_odds_rejects_bad_spread(bad: int) -> None:
    with pytest.raises(RuleError):
        spread_odds(STANDARD_PAYTABLE, bad)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, None])
def test_paytable_rejects_ill_formed_lines(bad: object) -> None:
    with pytest.raises(PaytableError, match="spread_2"):
        Paytable(spread_2=bad)  # type: ignore[arg-type]
    assert issubclass(PaytableError, RuleError) and issubclass(PaytableError, PitlogError)


@pytest.mark.parametrize("profile", list(Profile))
def test_standard_paytable_valid_everywhere(profile: Profile) -> None:
    validate_paytable(profile, STANDARD_PAYTABLE)
    validate_paytable(profile.value, Paytable())


PROMO_TRIPS = Paytable(three_of_a_kind=12)


@pytest.mark.parametrize("profile", NJ_PROFILES)
def test_nj_allows_higher_spread_odds(profile: Profile) -> None:
    # 13:47-20.31(f); 13:69F-6: only a decrease below the table is forbidden
    validate_paytable(profile, Paytable(spread_1=6, spread_2=5, spread_3=3, spread_4_to_11=2))


def test_nj_casino_allows_a_promotional_three_of_a_kind() -> None:
    validate_paytable(Profile.NJ_CASINO, PROMO_TRIPS)  # 13:69F-6: never below the table


def test_casino_night_three_of_a_kind_is_fixed_at_eleven_to_one() -> None:
    # 13:47-20.31(d)9: "shall be paid at odds of 11 to 1"; (f) only protects (e)'s spreads
    with pytest.raises(PaytableError, match=r"^nj-casino-night paytable line three_of_a_kind "
                                            r"pays 12 to 1, not the 11 to 1 that "
                                            r"13:47-20\.31\(d\)9 fixes$"):
        validate_paytable(Profile.NJ_CASINO_NIGHT, PROMO_TRIPS)


def test_nj_casino_night_rejects_lower_odds_citing_clause() -> None:
    with pytest.raises(PaytableError, match=r"spread_3 pays 1 to 1.*13:47-20\.31\(e\)-\(f\)"):
        validate_paytable(Profile.NJ_CASINO_NIGHT, Paytable(spread_3=1))
    with pytest.raises(PaytableError, match=r"three_of_a_kind pays 10 to 1.*13:47-20\.31\(d\)9"):
        validate_paytable(Profile.NJ_CASINO_NIGHT, Paytable(three_of_a_kind=10))


def test_nj_casino_rejects_lower_odds_even_if_board_approved() -> None:
    with pytest.raises(PaytableError, match=r"spread_1 pays 4 to 1.*13:69F-6"):
        validate_paytable(Profile.NJ_CASINO, Paytable(spread_1=4), board_approved=True)


def test_gaming_authority_requires_exact_table_unless_board_approved() -> None:
    # GA (11)(c): neither less nor more than the table without the Board's approval
    with pytest.raises(PaytableError, match=r"three_of_a_kind pays 12 to 1, above.*GA \(11\)\(c\)"):
        validate_paytable(Profile.GAMING_AUTHORITY, PROMO_TRIPS)
    with pytest.raises(PaytableError, match=r"spread_4_to_11 pays 2 to 1, above"):
        validate_paytable("gaming-authority", Paytable(spread_4_to_11=2))
    with pytest.raises(PaytableError, match=r"spread_1 pays 4 to 1, below"):
        validate_paytable(Profile.GAMING_AUTHORITY, Paytable(spread_1=4))
    validate_paytable(Profile.GAMING_AUTHORITY, PROMO_TRIPS, board_approved=True)
    validate_paytable(Profile.GAMING_AUTHORITY, Paytable(spread_1=4), board_approved=True)


def test_validate_paytable_unknown_profile() -> None:
    with pytest.raises(RuleError):
        validate_paytable("atlantis", STANDARD_PAYTABLE)


# --- settlement --------------------------------------------------------------------------------


def won(odds: int, paid: int) -> ExpectedSettlement:
    return ExpectedSettlement(SettledAs.WON, odds, paid, 0, 0)


def void(returned: int) -> ExpectedSettlement:
    return ExpectedSettlement(SettledAs.VOID, None, 0, 0, returned)


def lost(collected: int) -> ExpectedSettlement:
    return ExpectedSettlement(SettledAs.LOST, None, 0, collected, 0)


@pytest.mark.parametrize(
    ("left", "right", "third", "expected"),
    [
        (4, 6, 5, won(5, 12500)),  # spread 1: 5 to 1, 13:47-20.31(e)
        (4, 7, 6, won(4, 10000)),  # spread 2: 4 to 1
        (9, K, J, won(2, 5000)),  # spread 3: 2 to 1
        (3, 8, 4, won(1, 2500)),  # spread 4: 1 to 1
        (3, 9, 8, won(1, 2500)),  # spread 5
        (2, A, K, won(1, 2500)),  # spread 11
        (Q, Q, Q, won(11, 27500)),  # three of a kind: 11 to 1, (d)9
        (Q, Q, 3, void(2500)),  # no three of a kind, tie hand: (d)10
        (J, Q, None, void(2500)),  # consecutive, tie hand: (d)7
        (A, K, 5, void(2500)),  # consecutive even if a third card was (wrongly) drawn
        (4, 6, 4, lost(2500)),  # an end loses: (d)14; GA (11)(a)
        (4, 6, 6, lost(2500)),
        (2, A, 2, lost(2500)),
        (9, K, A, lost(2500)),
    ],
)
def test_settle_wager_every_line(
    left: int, right: int, third: int | None, expected: ExpectedSettlement
) -> None:
    assert settle_wager(STANDARD_PAYTABLE, left, right, third, 2500) == expected
    # a raise is settled exactly like the original wager, 13:47-20.31(e)
    assert settle_wager(STANDARD_PAYTABLE, left, right, third, 2500, is_raise=True) == expected


def test_settle_wager_promo_paytable() -> None:
    promo = Paytable(spread_1=6, three_of_a_kind=12)
    assert settle_wager(promo, 4, 6, 5, 1000) == won(6, 6000)
    assert settle_wager(promo, 7, 7, 7, 1000) == won(12, 12000)


def test_net_win() -> None:
    assert settle_wager(STANDARD_PAYTABLE, 4, 6, 5, 2500).net_win_cents == -12500
    assert settle_wager(STANDARD_PAYTABLE, 4, 6, 6, 2500).net_win_cents == 2500
    assert settle_wager(STANDARD_PAYTABLE, 4, 5, None, 2500).net_win_cents == 0


@pytest.mark.parametrize(("left", "right"), [(Q, Q), (4, 9)])
def test_settle_wager_needs_third_card(left: int, right: int) -> None:
    with pytest.raises(RuleError, match="needs a third card"):
        settle_wager(STANDARD_PAYTABLE, left, right, None, 2500)


@pytest.mark.parametrize(
    ("left", "right", "third", "amount"),
    [(1, 5, 3, 100), (4, 15, 5, 100), (4, 9, 0, 100), (4, 5, 15, 100), (4, 9, 6, -1),
     (4, 9, 6, 2.5), (4, 9, 6, True)],
)  # fmt: skip
def test_settle_wager_rejects_structurally_invalid(
    left: int, right: int, third: int, amount: int
) -> None:
    with pytest.raises(RuleError):
        settle_wager(STANDARD_PAYTABLE, left, right, third, amount)


ranks = st.integers(RANK_MIN, RANK_MAX)
amounts = st.integers(0, 10**9)


@given(left=ranks, right=ranks, third=ranks, amount=amounts)
def test_settlement_accounts_for_the_whole_wager(
    left: int, right: int, third: int, amount: int
) -> None:
    s = settle_wager(STANDARD_PAYTABLE, left, right, third, amount)
    if s.outcome is SettledAs.WON:
        assert s.odds is not None and s.paid_cents == amount * s.odds
        assert s.collected_cents == s.returned_cents == 0
    elif s.outcome is SettledAs.LOST:
        assert (s.paid_cents, s.collected_cents, s.returned_cents, s.odds) == (0, amount, 0, None)
    else:
        assert (s.paid_cents, s.collected_cents, s.returned_cents, s.odds) == (0, 0, amount, None)
    expected = {
        HandKind.CONSECUTIVE: SettledAs.VOID,
        HandKind.PAIR: SettledAs.WON if third == left else SettledAs.VOID,
        HandKind.SPREAD: SettledAs.WON if third_card_wins(left, right, third) else SettledAs.LOST,
    }
    assert s.outcome is expected[classify(left, right).kind]


@st.composite
def nj_valid_paytables(draw: st.DrawFn) -> Paytable:
    """Any paytable; the test skips the ones the NJ profile rejects."""
    odds = st.integers(1, 40)
    return Paytable(
        spread_1=draw(odds), spread_2=draw(odds), spread_3=draw(odds),
        spread_4_to_11=draw(odds), three_of_a_kind=draw(odds),
    )  # fmt: skip


@st.composite
def spread_wins(draw: st.DrawFn) -> tuple[int, int, int]:
    lo = draw(st.integers(RANK_MIN, RANK_MAX - 2))
    hi = draw(st.integers(lo + 2, RANK_MAX))
    third = draw(st.integers(lo + 1, hi - 1))
    return (lo, hi, third) if draw(st.booleans()) else (hi, lo, third)


@given(
    profile=st.sampled_from(NJ_PROFILES),
    paytable=nj_valid_paytables(),
    bump=st.tuples(*[st.integers(0, 20)] * 5),
    win=spread_wins(),
    amount=amounts,
)
def test_nj_valid_paytable_never_pays_less_than_standard(
    profile: Profile,
    paytable: Paytable,
    bump: tuple[int, ...],
    win: tuple[int, int, int],
    amount: int,
) -> None:
    # 13:47-20.31(f); 13:69F-6: whatever table an NJ profile accepts, a winner gets at least
    # what the standard table pays. Tested on arbitrary tables (those rejected are skipped) and
    # on the standard table plus a non-negative bump per line (always accepted).
    bumped = Paytable(*(o + b for (_, o), b in zip(STANDARD_PAYTABLE.lines(), bump, strict=True)))
    if profile is Profile.NJ_CASINO_NIGHT:  # 13:47-20.31(d)9: three of a kind stays 11 to 1
        bumped = dataclasses.replace(bumped, three_of_a_kind=11)
    validate_paytable(profile, bumped)
    for table in (paytable, bumped):
        try:
            validate_paytable(profile, table)
        except PaytableError:
            continue
        left, right, third = win
        got = settle_wager(table, left, right, third, amount)
        std = settle_wager(STANDARD_PAYTABLE, left, right, third, amount)
        assert got.outcome is std.outcome is SettledAs.WON
        assert got.paid_cents >= std.paid_cents
        trips = settle_wager(table, left, left, left, amount)
        std_trips = settle_wager(STANDARD_PAYTABLE, left, left, left, amount)
        assert trips.paid_cents >= std_trips.paid_cents


def test_the_rules_decision_is_what_the_dealer_records() -> None:
    """One SettledAs: the decision settle_wager expects is the value a WagerSettled stores,
    spelled as the schema's enum symbols (stored logs keep reading)."""
    import json

    from repo_paths import REPO

    from events.reddog import model

    assert model.SettledAs is SettledAs
    schema = json.loads((REPO / "schemas" / "WagerSettled.v1.avsc")
                        .read_text())
    (field,) = [f for f in schema["fields"] if f["name"] == "outcome"]
    assert field["type"]["symbols"] == [s.value for s in SettledAs] == ["WON", "LOST", "VOID"]
    assert settle_wager(STANDARD_PAYTABLE, 3, 9, 5, 1000).outcome is SettledAs.WON
    assert settle_wager(STANDARD_PAYTABLE, 3, 9, 9, 1000).outcome is SettledAs.LOST
    assert settle_wager(STANDARD_PAYTABLE, 5, 6, None, 1000).outcome is SettledAs.VOID


def test_rank_words_are_the_one_spelling_of_ranks_in_words() -> None:
    """RANK_WORDS names every rank; a face card's word starts with its label (Queen: Q); the
    console's card names and the simulated dealer's third-card call both use it."""
    from events.reddog.model import Meaning
    from events.simulation.simulator import phrase
    from projections.serve.templates.cards import card_name

    assert set(RANK_WORDS) == set(RANK_NAMES) == set(RANKS)
    for rank, label in RANK_NAMES.items():
        if label != str(rank):
            assert RANK_WORDS[rank][0] == label
        assert phrase("nj-casino", Meaning.THIRD_CARD, rank) == RANK_WORDS[rank]
    assert card_name("QH") == "queen of hearts" and card_name("10C") == "10 of clubs"

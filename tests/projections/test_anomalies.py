"""Every code of the anomaly catalogue, each on a small hand-built table a reader can follow.

Each test records its events through the real Recorder to a real embedded log, projects them
into a real DuckDB file, and asserts the complete list of anomalies found: the expected ones,
exactly (code, table, shoe, round, the seqs that prove it), and so the absence of every other.
The anomalies of one plain spread round changed a step or two are rows of a table in
test_anomaly_rounds.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_paths import DOCS
from surveillance_pit import LEFT, MIDDLE, ORIGINAL, RAISE, RIGHT, VOID, WON, Pit, card, opened

from events.reddog import model
from events.reddog.model import BurnReason, Choice, Fault, Instrument, Meaning, ShuffleMethod
from events.reddog.rules import Paytable

SPREAD, RAISES_CLOSED, THIRD_CARD = Meaning.SPREAD, Meaning.RAISES_CLOSED, Meaning.THIRD_CARD


def test_a_shoe_dealt_by_the_rules_has_no_anomaly(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.play(1, "5S 6H", {1: 1000, 2: 500})  # consecutive: a tie hand
    pit.play(2, "8S 8H 8D", {1: 500})  # three of a kind: 11 to 1
    pit.play(3, "8C 8D 2S", {1: 500})  # no three of a kind: a tie hand
    pit.play(4, "3S QH 7C", {1: 1000, 2: 500}, raises={1: 1000})  # spread 8, raised, won
    pit.play(5, "2H 9C 9D", {1: 2500})  # spread 6: a card equal to an end loses
    pit.tap_in("D2")
    pit.burn("KC", BurnReason.NEW_DEALER)  # 13:47-20.31(d)1: a new dealer burns a card
    pit.play(6, "4D 10S 6H", {3: 5000})
    pit.close_shoe()
    assert pit.judge() == []


# --- the early third card (13:47-20.31(g)3; 13:69F-6.7) ------------------------------------------


def _early(pit: Pit) -> int:
    """Round 1: seats 1 and 2 wager, 4S and 9H (spread 4), then 7D exposed too early."""
    pit.begin(1)
    pit.wager(1, 1000)
    pit.wager(2, 500)
    pit.draw("4S", LEFT)
    pit.draw("9H", RIGHT)
    pit.say(SPREAD, 4)
    return pit.draw("7D", MIDDLE)


def test_early_third_card_handled_by_the_protocol_is_early_third_card_only(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    exposed = _early(pit)
    pit.choose(1, Choice.VOID)
    pit.choose(2, Choice.PLAY)
    pit.settle(1, ORIGINAL, VOID, 1000)  # the voider's wager back before another third card
    closed = pit.say(RAISES_CLOSED)
    pit.draw("8C", MIDDLE)
    pit.say(THIRD_CARD, 8)
    pit.settle(2, ORIGINAL, WON, 500, 1)
    pit.rack("4S 9H 7D 8C")
    pit.close_shoe()
    assert pit.judge() == [("EARLY_THIRD_CARD", "T01", "S1", 1, [exposed, closed])]


def test_exposed_card_used_as_the_third_card_is_also_mishandled(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    exposed = _early(pit)
    pit.say(THIRD_CARD, 7)  # the dealer plays on with the exposed card
    pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.settle(2, ORIGINAL, WON, 500, 1)
    pit.rack("4S 9H 7D")
    pit.close_shoe()
    assert pit.judge() == [("EARLY_EXPOSURE_MISHANDLED", "T01", "S1", 1, [exposed]),
                           ("EARLY_THIRD_CARD", "T01", "S1", 1, [exposed])]


def test_voider_refunded_only_after_the_new_third_card_is_mishandled(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    exposed = _early(pit)
    chose = pit.choose(1, Choice.VOID)
    pit.choose(2, Choice.PLAY)
    closed = pit.say(RAISES_CLOSED)
    third = pit.draw("8C", MIDDLE)
    pit.say(THIRD_CARD, 8)
    pit.settle(1, ORIGINAL, VOID, 1000)  # too late: the new card is already out
    pit.settle(2, ORIGINAL, WON, 500, 1)
    pit.rack("4S 9H 7D 8C")
    pit.close_shoe()
    found = pit.anomalies()
    assert sorted((a["code"], a["seqs"]) for a in found) == [
        ("EARLY_EXPOSURE_MISHANDLED", [exposed, third, chose]),
        ("EARLY_THIRD_CARD", [exposed, closed])]
    mishandled = next(a for a in found if a["code"] == "EARLY_EXPOSURE_MISHANDLED")
    assert mishandled["explanation"] == (
        "After 7D was exposed early: seat 1 voided but did not get the wager and raise back "
        "before the new third card 8C")


def test_player_offered_no_choice_after_an_early_card_is_mishandled(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    exposed = _early(pit)
    pit.choose(2, Choice.PLAY)  # seat 1 is never asked
    closed = pit.say(RAISES_CLOSED)
    third = pit.draw("8C", MIDDLE)
    pit.say(THIRD_CARD, 8)
    pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.settle(2, ORIGINAL, WON, 500, 1)
    pit.rack("4S 9H 7D 8C")
    pit.close_shoe()
    assert pit.judge() == [("EARLY_EXPOSURE_MISHANDLED", "T01", "S1", 1, [exposed, third]),
                           ("EARLY_THIRD_CARD", "T01", "S1", 1, [exposed, closed])]


# --- wagers and raises (13:47-20.31(d)3, 6, 12-13; GA (1), (2), (4), (11)) ----------------------


def test_raise_on_a_consecutive_round_is_not_allowed(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.begin(1)
    pit.wager(1, 1000)
    left, right = pit.draw("5S", LEFT), pit.draw("6H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    raised = pit.raise_(1, 1000)
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.settle(1, RAISE, VOID, 1000)
    pit.rack("5S 6H")
    pit.close_shoe()
    assert pit.judge() == [("RAISE_NOT_ALLOWED", "T01", "S1", 1, [left, right, raised])]


def test_verbal_wager_at_a_gaming_authority_table_is_a_call_bet(tmp_path: Path) -> None:
    pit = opened(tmp_path, "gaming-authority")
    pit.begin(1)
    called = pit.wager(1, 1000, instrument=Instrument.CALL_BET)
    pit.draw("5S", LEFT)
    pit.draw("6H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("5S 6H")
    pit.close_shoe()
    assert pit.judge() == [("CALL_BET", "T01", "S1", 1, [called])]


def test_verbal_wager_at_an_nj_casino_is_a_call_bet_too(tmp_path: Path) -> None:
    # 13:69F-6.5(b): wagers are made "by placing gaming chips or plaques and, if applicable, a
    # match play coupon on the appropriate area"; red dog states no exception for verbal ones.
    pit = opened(tmp_path, "nj-casino")
    pit.begin(1)
    called = pit.wager(1, 1000, instrument=Instrument.CALL_BET)
    pit.draw("5S", LEFT)
    pit.draw("6H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("5S 6H")
    pit.close_shoe()
    assert pit.judge() == [("CALL_BET", "T01", "S1", 1, [called])]


def test_one_player_on_two_areas_is_multiple_betting_areas(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.begin(1)
    first = pit.wager(1, 1000, player="P-ANNA")
    second = pit.wager(1, 500, area=2, player="P-ANNA")
    pit.draw("5S", LEFT)
    pit.draw("6H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.settle(1, ORIGINAL, VOID, 500, area=2)
    pit.rack("5S 6H")
    pit.close_shoe()
    assert pit.judge() == [("MULTIPLE_BETTING_AREAS", "T01", "S1", 1, [first, second])]


def test_a_wager_moved_to_another_area_before_the_deal_is_one_area(tmp_path: Path) -> None:
    """(g)4 limits the wagers a player holds; one moved (placed, removed, placed on another
    area) is one (an outside audit, session 39: MULTIPLE_BETTING_AREAS). Two standing after
    it still are two."""
    pit = opened(tmp_path)
    pit.begin(1)
    pit.wager(1, 1000, player="P-ANNA")
    pit.emit(model.WagerRemoved(seat=1, area=1))
    pit.wager(1, 1000, area=2, player="P-ANNA")
    pit.draw("5S", LEFT)
    pit.draw("6H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    pit.settle(1, ORIGINAL, VOID, 1000, area=2)
    pit.rack("5S 6H")
    pit.begin(2)
    first = pit.wager(1, 1000, player="P-ANNA")
    pit.emit(model.WagerRemoved(seat=1, area=1))
    again = pit.wager(1, 800, player="P-ANNA")
    other = pit.wager(1, 500, area=2, player="P-ANNA")
    pit.draw("7S", LEFT)
    pit.draw("8H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    pit.settle(1, ORIGINAL, VOID, 800)
    pit.settle(1, ORIGINAL, VOID, 500, area=2)
    pit.rack("7S 8H")
    # a removal after the first card counts for nothing ((d)6): two areas held when it came
    # out (a second read, session 39: the removal hid them)
    pit.begin(3)
    held = pit.wager(1, 1000, player="P-ANNA")
    also = pit.wager(1, 500, area=2, player="P-ANNA")
    left = pit.draw("9S", LEFT)
    late_removal = pit.emit(model.WagerRemoved(seat=1, area=1))
    pit.draw("10H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.settle(1, ORIGINAL, VOID, 500, area=2)
    pit.rack("9S 10H")
    pit.close_shoe()
    assert first < again
    assert pit.judge() == [("MULTIPLE_BETTING_AREAS", "T01", "S1", 2, [again, other]),
                           ("MULTIPLE_BETTING_AREAS", "T01", "S1", 3, [held, also]),
                           ("WAGER_ALTERED", "T01", "S1", 3, [left, late_removal])]


def test_two_areas_at_a_table_that_permits_them_is_no_anomaly(tmp_path: Path) -> None:
    pit = opened(tmp_path, multiple_areas_permitted=True)
    pit.begin(1)
    pit.wager(1, 1000, player="P-ANNA")
    pit.wager(1, 500, area=2, player="P-ANNA")
    pit.draw("5S", LEFT)
    pit.draw("6H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.settle(1, ORIGINAL, VOID, 500, area=2)
    pit.rack("5S 6H")
    pit.close_shoe()
    assert pit.judge() == []


# --- money (13:47-20.31(d)7-14, (e)-(f); GA (11)) -----------------------------------------------


def test_winner_paid_under_the_table_is_a_wrong_payout(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.begin(1)
    wager = pit.wager(1, 1000)
    pit.draw("5S", LEFT)
    pit.draw("7H", RIGHT)
    pit.say(SPREAD, 1)
    pit.say(RAISES_CLOSED)
    pit.draw("6D", MIDDLE)
    pit.say(THIRD_CARD, 6)
    paid = pit.settle(1, ORIGINAL, WON, 4000, 4)  # spread 1 pays 5 to 1: $50, not $40
    pit.rack("5S 7H 6D")
    pit.close_shoe()
    found = pit.anomalies()
    assert [(a["code"], a["seqs"]) for a in found] == [("WRONG_PAYOUT", [wager, paid])]
    assert found[0]["explanation"] == (
        "Seat 1 wager of $10.00 won on spread 1: paid $40.00 at 4 to 1, the table pays $50.00 "
        "at 5 to 1")


def test_paytable_below_the_minimum_and_its_payouts_are_below_minimum_odds(tmp_path: Path) -> None:
    pit = Pit(tmp_path)
    table = pit.open_table("nj-casino", Paytable(spread_1=4))  # 13:69F-6: never below 5 to 1
    pit.tap_in("D1")
    pit.new_shoe("S1")
    pit.begin(1)
    wager = pit.wager(1, 1000)
    pit.draw("5S", LEFT)
    pit.draw("7H", RIGHT)
    pit.say(SPREAD, 1)
    pit.say(RAISES_CLOSED)
    pit.draw("6D", MIDDLE)
    pit.say(THIRD_CARD, 6)
    paid = pit.settle(1, ORIGINAL, WON, 4000, 4)  # exactly the table's illegal line
    pit.rack("5S 7H 6D")
    pit.close_shoe()
    assert pit.judge() == [("BELOW_MINIMUM_ODDS", "T01", None, None, [table]),
                           ("BELOW_MINIMUM_ODDS", "T01", "S1", 1, [wager, paid])]


def test_tie_hand_wager_never_returned_is_a_wrong_settlement(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.begin(1)
    wager = pit.wager(1, 1000)
    pit.draw("5S", LEFT)
    pit.draw("6H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    pit.rack("5S 6H")  # no WagerSettled: the $10 was kept
    pit.close_shoe()
    found = pit.anomalies()
    assert [(a["code"], a["seqs"]) for a in found] == [("WRONG_SETTLEMENT", [wager])]
    assert found[0]["explanation"] == (
        "Seat 1 wager of $10.00 was never settled; it should have been returned ($10.00)")


# --- announcements and the third card (13:47-20.31(d)7-13) --------------------------------------


# A spread no two cards can have (0, negative, past 11) is recorded as said and judged, like any
# wrong one: Announced.value has no bound on the write side (events/recording/limits.py takes
# only the bounds the domain implies; what the dealer said is the rule's to judge).
@pytest.mark.parametrize("value", [7, 0, -3, 99])
def test_wrong_spread_announced_is_a_wrong_announcement(tmp_path: Path, value: int) -> None:
    pit = opened(tmp_path)
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("3S", LEFT)
    pit.draw("QH", RIGHT)
    said = pit.say(SPREAD, value)  # 4..J between 3 and Q: spread 8
    pit.say(RAISES_CLOSED)
    pit.draw("7C", MIDDLE)
    pit.say(THIRD_CARD, 7)
    pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack("3S QH 7C")
    pit.close_shoe()
    assert pit.judge() == [("WRONG_ANNOUNCEMENT", "T01", "S1", 1, [said])]


def test_pair_not_announced_is_a_wrong_announcement(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.begin(1)
    pit.wager(1, 1000)
    left, right = pit.draw("8S", LEFT), pit.draw("8H", RIGHT)
    pit.draw("2D", MIDDLE)  # "We have a pair" was never said
    pit.say(Meaning.NO_THREE_OF_A_KIND)
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("8S 8H 2D")
    pit.close_shoe()
    assert pit.judge() == [("WRONG_ANNOUNCEMENT", "T01", "S1", 1, [left, right])]


def test_third_card_on_a_consecutive_round_is_flagged(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("5S", LEFT)
    pit.draw("6H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    third = pit.draw("9D", MIDDLE)
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("5S 6H 9D")
    pit.close_shoe()
    assert pit.judge() == [("THIRD_CARD_ON_CONSECUTIVE", "T01", "S1", 1, [third])]


def test_pair_with_no_third_card_is_flagged(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.begin(1)
    pit.wager(1, 1000)
    left, right = pit.draw("8S", LEFT), pit.draw("8H", RIGHT)
    pit.say(Meaning.PAIR)
    returned = pit.settle(1, ORIGINAL, VOID, 1000)  # treated as a tie without the third card
    pit.rack("8S 8H")
    pit.close_shoe()
    assert pit.judge() == [("PAIR_WITHOUT_THIRD_CARD", "T01", "S1", 1, [left, right, returned])]


# --- the shoe: burns, the cutting card, faces up (13:47-20.31(d)1, 16; (g)1) -------------------


def test_first_card_of_a_new_shoe_dealt_without_a_burn_is_a_missing_burn(tmp_path: Path) -> None:
    pit = Pit(tmp_path)
    pit.open_table()
    pit.tap_in("D1")
    loaded = pit.load("S1")  # no CardBurned follows
    left = pit.play(1, "4S 9H 8C", {1: 1000})["left"]
    pit.close_shoe()
    assert pit.judge() == [("MISSING_BURN", "T01", "S1", 1, [loaded, left])]


def test_new_dealer_dealing_without_a_burn_is_a_missing_burn(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.play(1, "4S 9H 8C", {1: 1000})
    tapped = pit.tap_in("D2")
    left = pit.play(2, "5D 10C 7H", {1: 1000})["left"]
    pit.close_shoe()
    assert pit.judge() == [("MISSING_BURN", "T01", "S1", 2, [tapped, left])]


def _burns_after_a_new_shoe(tmp_path: Path, steps: str) -> tuple[Pit, dict[str, int]]:
    """A shoe loaded, then `steps` in order ("tap D2", "burn"), then a round dealt."""
    pit = Pit(tmp_path)
    pit.open_table()
    pit.tap_in("D1")
    seqs = {"load": pit.load("S1")}
    for n, step in enumerate(steps.split(", ")):
        seqs[f"{n}:{step}"] = (pit.burn(f"{n + 2}C") if step == "burn"
                               else pit.tap_in(step.split()[1]))
    seqs["left"] = pit.play(1, "4S 9H 8C", {1: 1000})["left"]
    pit.close_shoe()
    return pit, seqs


def _burn_finding(pit: Pit) -> tuple[list[int], str]:
    (row,) = [r for r in pit.anomalies() if r["code"] == "MISSING_BURN"]
    return row["seqs"], row["explanation"]


def test_a_burn_pays_the_debt_before_it_and_only_the_debt_left_unpaid_is_named(
        tmp_path: Path) -> None:
    # (d)1: the new shoe's burn was made; the new dealer after it burned nothing
    pit, seqs = _burns_after_a_new_shoe(tmp_path, "burn, tap D2")
    assert _burn_finding(pit) == (
        [seqs["1:tap D2"], seqs["left"]],
        "No card burned after dealer D2 tapped in, before 4S was dealt to the left box")


def test_one_burn_for_two_debts_says_so_and_shows_the_burn(tmp_path: Path) -> None:
    # a burn came after both debts: neither is "not burned after", one burn is short
    pit, seqs = _burns_after_a_new_shoe(tmp_path, "tap D2, burn")
    assert _burn_finding(pit) == (
        [seqs["load"], seqs["0:tap D2"], seqs["1:burn"], seqs["left"]],
        "2 burns owed (after shoe S1 was loaded and dealer D2 tapped in) but 1 card burned, "
        "before 4S was dealt to the left box")


def test_the_proof_starts_where_the_burns_fall_shortest(tmp_path: Path) -> None:
    # load, burn (paid), tap D2, tap D3, burn: one of the two dealers' burns is missing; the
    # load and its burn are no part of it
    pit, seqs = _burns_after_a_new_shoe(tmp_path, "burn, tap D2, tap D3, burn")
    assert _burn_finding(pit) == (
        [seqs["1:tap D2"], seqs["2:tap D3"], seqs["3:burn"], seqs["left"]],
        "2 burns owed (after dealer D2 tapped in and dealer D3 tapped in) but 1 card burned, "
        "before 4S was dealt to the left box")


def _found_and_placed(pit: Pit, label: str) -> tuple[int, int]:
    """(g)1: a card found face up in the shoe between rounds, then placed in the discard rack
    (its CardDrawn to the rack, with no round)."""
    c = card(label)
    found = pit.emit(model.CardFoundFaceUp(rank=c.rank, suit=c.suit))
    placed = pit.emit(model.CardDrawn(rank=c.rank, suit=c.suit, face_up=True,
                                      destination=model.Box.DISCARD_RACK))
    return found, placed


@pytest.mark.parametrize("burned", [True, False])
def test_a_card_found_face_up_and_placed_in_the_rack_is_no_card_dealt(
        tmp_path: Path, burned: bool) -> None:
    # After a new shoe's load the first card out is found face up and placed in the rack, as
    # (g)1 says: no card dealt with no round (CARD_OUTSIDE_ROUND), and not the first card dealt,
    # so the burn after it pays the load's debt; without one, the first card dealt is flagged.
    pit = Pit(tmp_path)
    pit.open_table()
    pit.tap_in("D1")
    loaded = pit.load("S1")
    _found_and_placed(pit, "KH")
    if burned:
        pit.burn("2C")
    left = pit.play(1, "4S 9H 8C", {1: 1000})["left"]
    _found_and_placed(pit, "QD")  # between rounds, mid-shoe: no fault either
    pit.play(2, "5D 10C 7H", {1: 1000})
    pit.close_shoe()
    assert pit.judge() == ([] if burned else [("MISSING_BURN", "T01", "S1", 1, [loaded, left])])


def test_a_card_found_with_no_round_and_drawn_to_the_rack_in_a_round_is_its_first_card(
        tmp_path: Path) -> None:
    # As the round's own cards are read (round_cards): its first card went to the rack, and
    # the load's burn was owed before it
    pit = Pit(tmp_path)
    pit.open_table()
    pit.tap_in("D1")
    loaded = pit.load("S1")
    c = card("KH")
    pit.emit(model.CardFoundFaceUp(rank=c.rank, suit=c.suit))
    pit.begin(1)
    first = pit.emit(model.CardDrawn(rank=c.rank, suit=c.suit, face_up=True,
                                     destination=model.Box.DISCARD_RACK))
    pit.end()
    pit.play(1, "4S 9H 8C", {1: 1000})
    pit.close_shoe()
    assert ("MISSING_BURN", "T01", "S1", 1, [loaded, first]) in pit.judge()


def test_a_card_drawn_to_the_rack_between_rounds_unfound_is_still_outside_any_round(
        tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.play(1, "4S 9H 8C", {1: 1000})
    c = card("KH")
    found = pit.emit(model.CardFoundFaceUp(rank=c.rank, suit=c.suit))
    racked = pit.emit(model.CardDrawn(rank=12, suit=c.suit, face_up=True,  # another card
                                      destination=model.Box.DISCARD_RACK))
    pit.play(2, "5D 10C 7H", {1: 1000})
    closed = pit.close_shoe()
    # the queen is a card drawn with no round that no rack took (CARD_UNACCOUNTED too); the
    # king found before it is no card dealt
    assert found < racked
    assert pit.judge() == [("CARD_OUTSIDE_ROUND", "T01", "S1", None, [racked]),
                           ("CARD_UNACCOUNTED", "T01", "S1", None, [racked, closed])]


def test_a_card_found_between_rounds_and_drawn_to_the_rack_after_a_round_is_unaccounted(
        tmp_path: Path) -> None:
    # A round's cards came out between the find and the draw: the draw is no placement of the
    # found card (face_up_placements_of: the next card out, in the same round), so it is a card
    # dealt with no round (CARD_OUTSIDE_ROUND) that no rack took, as the shoe's closing shows
    # (CARD_UNACCOUNTED: loose_cards reads its neighbours in the shoe the same way)
    pit = opened(tmp_path)
    c = card("KH")
    pit.emit(model.CardFoundFaceUp(rank=c.rank, suit=c.suit))
    pit.play(1, "4S 9H 8C", {1: 1000})
    racked = pit.emit(model.CardDrawn(rank=c.rank, suit=c.suit, face_up=True,
                                      destination=model.Box.DISCARD_RACK))
    closed = pit.close_shoe()
    assert pit.judge() == [("CARD_OUTSIDE_ROUND", "T01", "S1", None, [racked]),
                           ("CARD_UNACCOUNTED", "T01", "S1", None, [racked, closed])]
    [row] = [r for r in pit.anomalies() if r["code"] == "CARD_UNACCOUNTED"]
    assert row["explanation"] == (
        "KH left shoe S1 with no round, drawn to the discard rack, but no rack "
        "count held it before the shoe was closed")


def test_every_debt_paid_in_any_order_is_no_missing_burn(tmp_path: Path) -> None:
    pit, _ = _burns_after_a_new_shoe(tmp_path, "tap D2, burn, burn")
    assert [r for r in pit.anomalies() if r["code"] == "MISSING_BURN"] == []


def test_round_stopped_at_the_cutting_card_is_abandoned(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.begin(1)
    pit.wager(1, 1000)
    left = pit.draw("4S", LEFT)
    cut = pit.emit(model.CuttingCardReached())
    pit.settle(1, ORIGINAL, VOID, 1000)  # the dealer stops and returns the wager
    pit.rack("4S")
    pit.close_shoe()
    assert pit.judge() == [("ROUND_ABANDONED_AT_CUT_CARD", "T01", "S1", 1, [cut, left])]


def test_a_cut_recorded_for_round_0_is_a_cut_with_no_round(tmp_path: Path) -> None:
    """Round 0 is no round of play (13:47-20.31(d)5; docs/anomalies.md): the cutting card
    recorded with it came out in no round, so the next round dealt is judged, and named, as
    after a cut with no round, never "in round 0"."""
    pit = opened(tmp_path)
    pit.play(1, "4S 9H 7C", {1: 1000})
    pit.begin(0)
    cut = pit.emit(model.CuttingCardReached())
    pit.end()
    dealt = pit.play(2, "5S JH 8C", {1: 1000})
    (row,) = [r for r in pit.anomalies() if r["code"] == "NO_RESHUFFLE_AFTER_CUT_CARD"]
    assert (row["round_no"], row["seqs"]) == (2, [cut, dealt["left"]])
    assert row["explanation"] == ("Round 2 was dealt from shoe S1 after the cutting card came "
                                  "out")


# --- the discard rack (13:47-20.31(a)2, (d)15; GA (12)) -----------------------------------------


def test_second_copy_of_a_card_from_a_one_deck_shoe_is_an_extra_card(tmp_path: Path) -> None:
    pit = opened(tmp_path, "nj-casino-night", decks=1)
    first = pit.play(1, "4S 9H 8C", {1: 1000})["left"]
    second = pit.play(2, "4S JD 7C", {1: 1000})["left"]  # 4S again: one deck has one
    pit.close_shoe()
    assert pit.judge() == [("EXTRA_CARD", "T01", "S1", 2, [first, second])]


# --- devices (13:69F-34.16(m)-(n) by analogy) ----------------------------------------------------


def test_shoe_jam_voided_and_reshuffled_is_no_anomaly(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("4S", LEFT)
    pit.emit(model.DeviceFaulted(device_id="SHOE-1", fault=Fault.SHOE_JAM), actor="SHOE-1")
    pit.emit(model.RoundVoided(reason="dealing shoe jammed"))
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("4S")
    pit.close_shoe()
    pit.new_shoe("S2")  # the cards reshuffled into a new shoe
    pit.play(1, "5D 10C 7H", {1: 1000})
    pit.close_shoe()
    assert pit.judge() == []


def test_shuffler_jam_without_a_reshuffle_is_not_voided(tmp_path: Path) -> None:
    pit = Pit(tmp_path)
    pit.open_table()
    pit.tap_in("D1")
    pit.shoe_id = "S1"
    auto = ShuffleMethod.AUTOMATIC_SHUFFLER
    pit.emit(model.ShuffleStarted(method=auto, device_id="SHUF-1"))
    jam = pit.emit(model.DeviceFaulted(device_id="SHUF-1", fault=Fault.SHUFFLER_JAM))
    pit.emit(model.ShuffleCompleted(method=auto, device_id="SHUF-1"))  # no new shuffle
    pit.load("S1")
    burn = pit.burn("2C")
    pit.play(1, "4S 9H 8C", {1: 1000})
    pit.close_shoe()
    assert pit.judge() == [("DEVICE_FAULT_NOT_VOIDED", "T01", "S1", None, [jam, burn])]


# --- integrity (docs/architecture.md, principle 2)
# -------------------------------------------------------------


def test_missing_sequence_number_is_a_sequence_gap(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    last = pit.play(1, "4S 9H 8C", {1: 1000})["rack"]
    pit.begin(2)
    after = pit.tampered("gap", model.WagerPlaced(seat=1, area=1, player_id="P1",
                                                  amount_cents=1000))
    pit.draw("5S", LEFT)
    pit.draw("6H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("5S 6H")
    pit.close_shoe()
    assert after == last + 2
    assert pit.judge() == [("SEQUENCE_GAP", "T01", "S1", 2, [last, after])]


def test_event_linking_to_an_unknown_hash_breaks_the_chain(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    last = pit.play(1, "4S 9H 8C", {1: 1000})["rack"]
    pit.begin(2)
    broken = pit.tampered("chain", model.WagerPlaced(seat=1, area=1, player_id="P1",
                                                     amount_cents=1000))
    pit.draw("5S", LEFT)
    pit.draw("6H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("5S 6H")
    pit.close_shoe()
    assert pit.judge() == [("CHAIN_BROKEN", "T01", "S1", 2, [last, broken])]


# --- what is not (yet) an anomaly ---------------------------------------------------------------


def test_round_still_in_play_is_not_flagged_for_what_is_still_to_come(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("4S", LEFT)
    pit.draw("9H", RIGHT)
    pit.say(SPREAD, 4)
    pit.say(RAISES_CLOSED)
    pit.draw("8C", MIDDLE)  # the log ends here: no value said, no settlement, no rack yet
    assert pit.judge() == []


# The catalogue of a store holding an opened table: projected once for the two tests that read
# it (a projection is most of their cost).
@pytest.fixture(scope="module")
def opened_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return opened(tmp_path_factory.mktemp("opened")).project()


def test_every_catalogue_code_has_its_rule_and_severity(opened_store: Path) -> None:
    import duckdb

    from projections.anomalies import catalogue

    db = opened_store
    with duckdb.connect(str(db), read_only=True) as con:
        rows = {r["code"]: (r["severity"], r["rule"]) for r in catalogue(con)}
    assert len(rows) == 40
    assert rows["DUPLICATE_EVENT"] == ("high", "integrity")
    assert rows["THIRD_CARD_REDRAWN"] == ("high", "13:47-20.31(d)10, (d)13-14; GA (8), (11)")
    assert rows["THIRD_CARD_DIVERTED"] == ("high", "13:47-20.31(d)8, (d)13; GA (6), (11)")
    assert rows["EARLY_THIRD_CARD"] == ("medium", "13:47-20.31(g)3; 13:69F-6.7")
    assert rows["CALL_BET"] == ("medium", "13:47-20.31(d)4; 13:69F-6.5(b); GA (2)")
    assert rows["CHAIN_BROKEN"] == ("high", "integrity")
    assert {s for s, _ in rows.values()} == {"low", "medium", "high"}


def test_the_catalogue_is_the_same_everywhere_it_is_written(opened_store: Path) -> None:
    """The codes of the anomaly_codes view are the simulator's injectable codes plus the
    two statistics; their severities are the CLI's and list_anomalies' severities; and
    docs/anomalies.md has a section per code with its rule and severity, and names every rule
    code in its opening table of clauses."""
    import re

    import duckdb

    from cli.commands.anomalies import Severity
    from events.reddog.catalogue import INJECTABLE
    from projections.anomalies import SEVERITIES, STATISTICAL, catalogue

    db = opened_store
    with duckdb.connect(str(db), read_only=True) as con:
        rows = {r["code"]: (r["severity"], r["rule"]) for r in catalogue(con)}
    assert set(rows) == set(INJECTABLE) | set(STATISTICAL)
    assert len(INJECTABLE) == len(set(INJECTABLE))
    assert {s for s, _ in rows.values()} <= set(SEVERITIES) == {s.value for s in Severity}
    doc = (DOCS / "anomalies.md").read_text()
    headings = [h for h in doc.splitlines() if h.startswith("### ")]
    clauses = doc.split("## The deciding third card")[0]
    for code, (severity, rule) in rows.items():
        (heading,) = [h for h in headings if re.search(rf"\b{code}\b", h)]
        assert heading.endswith(f"({severity})"), heading
        if code not in STATISTICAL and "same rules" not in heading:
            assert f" — {rule} (" in heading, (heading, rule)
        assert code in clauses, code

"""Issue 13: the card that decides a round, and every checkable clause of the seeds.

Each misreading of the rules is a hand-made round in the table below: the events as a dealer
and a player produced them (recorded through the real Recorder to a real embedded log, projected
into a real DuckDB file), the anomalies that must be found (code and the seqs that prove them,
exactly, so no other anomaly is raised) and the ledger's status of every wager, integer cents.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from surveillance_pit import LEFT, LOST, MIDDLE, ORIGINAL, RAISE, RIGHT, VOID, WON, Pit, opened
from surveillance_pit import card as card_of

from events.reddog import model
from events.reddog.model import Box, BurnReason, Instrument, Meaning, ShuffleMethod, Suit
from events.reddog.rules import Paytable
from projections.dispute import dispute
from projections.replay import replay_shoe

SPREAD, RAISES_CLOSED, THIRD_CARD = Meaning.SPREAD, Meaning.RAISES_CLOSED, Meaning.THIRD_CARD
RACK = Box.DISCARD_RACK
Seqs = dict[str, int]
# (seat, kind) -> (status, expected outcome, expected paid, collected, returned) in cents
Ledger = dict[tuple[int, str], tuple[str, str | None, int, int, int]]


@dataclass(frozen=True)
class Case:
    """One hand-made table: `build` records it and returns the seqs by name; `found` names the
    anomalies as (code, round, [seq names]); `ledger` round 1's wagers' statuses."""

    build: Callable[[Path], tuple[Pit, Seqs]]
    found: list[tuple[str, int | None, list[str]]]
    ledger: Ledger


def _spread_redraw_cheat(tmp: Path) -> tuple[Pit, Seqs]:
    """3C QD (spread 8): 2S falls outside, the players lose; the dealer draws again, 9H falls
    between, and pays everyone. 13:47-20.31(d)13-14: the 2S decides."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    s["w1"], s["w2"] = pit.wager(1, 1000), pit.wager(2, 2500)
    s["l"], s["r"] = pit.draw("3C", LEFT), pit.draw("QD", RIGHT)
    pit.say(SPREAD, 8)
    pit.say(RAISES_CLOSED)
    s["third"] = pit.draw("2S", MIDDLE)
    pit.say(THIRD_CARD, 2)
    s["redraw"] = pit.draw("9H", MIDDLE)
    pit.say(THIRD_CARD, 9)
    s["p1"] = pit.settle(1, ORIGINAL, WON, 1000, 1)
    s["p2"] = pit.settle(2, ORIGINAL, WON, 2500, 1)
    pit.rack("3C QD 2S 9H")
    pit.close_shoe()
    return pit, s


def _spread_redraw_settled_on_the_deciding_card(tmp: Path) -> tuple[Pit, Seqs]:
    """The same redraw, but the dealer collects as the 2S says: the money is right, the redraw
    is still an irregularity."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    s["w1"] = pit.wager(1, 1000)
    pit.draw("3C", LEFT)
    pit.draw("QD", RIGHT)
    pit.say(SPREAD, 8)
    pit.say(RAISES_CLOSED)
    s["third"] = pit.draw("2S", MIDDLE)
    pit.say(THIRD_CARD, 2)
    s["redraw"] = pit.draw("9H", MIDDLE)
    pit.settle(1, ORIGINAL, LOST, 1000)
    pit.rack("3C QD 2S 9H")
    pit.close_shoe()
    return pit, s


def _pair_redraw(third: str, redraw: str, paid: int) -> Callable[[Path], tuple[Pit, Seqs]]:
    """7S 7H; the `third` card after the pair decides ((d)8-10); `redraw` comes after it and
    the dealer pays seat 1's $10 `paid` (WON at 11 to 1, or VOID returned when 0)."""
    def build(tmp: Path) -> tuple[Pit, Seqs]:
        pit, s = opened(tmp), {}
        pit.begin(1)
        s["w1"] = pit.wager(1, 1000)
        pit.draw("7S", LEFT)
        pit.draw("7H", RIGHT)
        pit.say(Meaning.PAIR)
        for name, label in (("third", third), ("redraw", redraw)):
            s[name] = pit.draw(label, MIDDLE)
            pit.say(Meaning.THREE_OF_A_KIND if label[0] == "7" else Meaning.NO_THREE_OF_A_KIND)
        s["p1"] = (pit.settle(1, ORIGINAL, WON, paid, 11) if paid
                   else pit.settle(1, ORIGINAL, VOID, 1000))
        pit.rack(f"7S 7H {third} {redraw}")
        pit.close_shoe()
        return pit, s
    return build


def _spread_third_card_diverted(box: Box) -> Callable[[Path], tuple[Pit, Seqs]]:
    """The reviewer's cheat: 3C QD (spread 8), "Raises closed", the dealer draws 2S (the players
    lose), slips it into `box` instead of the middle box, deals 9H to the middle box and pays
    everyone. 13:47-20.31(d)13: the 2S is the third card, wherever it went."""
    def build(tmp: Path) -> tuple[Pit, Seqs]:
        pit, s = opened(tmp), {}
        pit.begin(1)
        s["w1"], s["w2"] = pit.wager(1, 1000), pit.wager(2, 2500)
        pit.draw("3C", LEFT)
        pit.draw("QD", RIGHT)
        pit.say(SPREAD, 8)
        pit.say(RAISES_CLOSED)
        s["third"] = pit.draw("2S", box)
        s["after"] = pit.draw("9H", MIDDLE)
        pit.say(THIRD_CARD, 9)
        s["p1"] = pit.settle(1, ORIGINAL, WON, 1000, 1)
        s["p2"] = pit.settle(2, ORIGINAL, WON, 2500, 1)
        pit.rack("3C QD 2S 9H")  # (d)15: every card of the round, in dealing order, once
        pit.close_shoe()
        return pit, s
    return build


def _pair_third_card_diverted(tmp: Path) -> tuple[Pit, Seqs]:
    """7S 7H: 9D comes out (no three of a kind: a tie hand), goes to the discard rack, and 7D to
    the middle box is paid 11 to 1. (d)8-10: the 9D decides."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    s["w1"] = pit.wager(1, 1000)
    pit.draw("7S", LEFT)
    pit.draw("7H", RIGHT)
    pit.say(Meaning.PAIR)
    s["third"] = pit.draw("9D", RACK)
    s["after"] = pit.draw("7D", MIDDLE)
    pit.say(Meaning.THREE_OF_A_KIND)
    s["p1"] = pit.settle(1, ORIGINAL, WON, 11000, 11)
    pit.rack("7S 7H 9D 7D")
    pit.close_shoe()
    return pit, s


def _consecutive_card_to_the_rack(tmp: Path) -> tuple[Pit, Seqs]:
    """5S 6H: a tie hand, no third card owed ((d)7); the dealer draws 9D to the discard rack."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("5S", LEFT)
    pit.draw("6H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    s["extra"] = pit.draw("9D", RACK)
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("5S 6H 9D")
    pit.close_shoe()
    return pit, s


def _redrawn_to_the_rack(tmp: Path) -> tuple[Pit, Seqs]:
    """4S 9H: 7C to the middle box decides (the players win, paid); then 2D is drawn to the
    discard rack: a card drawn after the deciding one, wherever it goes."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("4S", LEFT)
    pit.draw("9H", RIGHT)
    pit.say(SPREAD, 4)
    pit.say(RAISES_CLOSED)
    s["third"] = pit.draw("7C", MIDDLE)
    pit.say(THIRD_CARD, 7)
    s["redraw"] = pit.draw("2D", RACK)
    pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack("4S 9H 7C 2D")
    pit.close_shoe()
    return pit, s


def _early_card_to_the_rack(tmp: Path) -> tuple[Pit, Seqs]:
    """(g)3: 3D drawn before "Raises closed" and put straight in the discard rack; the player
    chooses to play on and 8C after "Raises closed" decides."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("4S", LEFT)
    pit.draw("9H", RIGHT)
    pit.say(SPREAD, 4)
    s["exposed"] = pit.draw("3D", RACK)
    pit.choose(1, model.Choice.PLAY)
    s["closed"] = pit.say(RAISES_CLOSED)
    pit.draw("8C", MIDDLE)
    pit.say(THIRD_CARD, 8)
    pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack("4S 9H 3D 8C")
    pit.close_shoe()
    return pit, s


def _void_chosen(exposed: bool) -> Callable[[Path], tuple[Pit, Seqs]]:
    """(g)3: 4S 9H (spread 4), seat 1's $10 (`w1`); with `exposed`, 3D comes out to the middle
    box before "Raises closed" and the player says nothing before KC, the new third card, is
    seen; without, no card is exposed. Then seat 1 says VOID (`choice`: after KC when exposed,
    before it otherwise) and gets the $10 back (`p1`). KC is outside 4-9: the wager lost, and
    a void-or-play choice counts only after an exposure and before the new third card, so
    the refund is a wrong settlement."""
    def build(tmp: Path) -> tuple[Pit, Seqs]:
        pit, s = opened(tmp), {}
        pit.begin(1)
        s["w1"] = pit.wager(1, 1000)
        pit.draw("4S", LEFT)
        pit.draw("9H", RIGHT)
        pit.say(SPREAD, 4)
        if exposed:
            s["exposed"] = pit.draw("3D", MIDDLE)
        s["closed"] = pit.say(RAISES_CLOSED)
        if not exposed:
            s["choice"] = pit.choose(1, model.Choice.VOID)
        s["third"] = pit.draw("KC", MIDDLE)
        pit.say(THIRD_CARD, 13)
        if exposed:
            s["choice"] = pit.choose(1, model.Choice.VOID)
        s["p1"] = pit.settle(1, ORIGINAL, VOID, 1000)
        pit.rack("4S 9H 3D KC" if exposed else "4S 9H KC")
        pit.close_shoe()
        return pit, s
    return build


def _void_chosen_after_the_next_card(tmp: Path) -> tuple[Pit, Seqs]:
    """(g)3 with "Raises closed" never said: 4S 9H (spread 4), seat 1's $10 (`w1`), 3D out to
    the middle box (`exposed`: it decides, outside 4-9, the wager lost), then KC (`next`, a
    redraw); seat 1 says VOID only after KC was seen (`choice`) and gets the $10 back (`p1`).
    The choice comes after the next card out: it voids nothing."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    s["w1"] = pit.wager(1, 1000)
    pit.draw("4S", LEFT)
    pit.draw("9H", RIGHT)
    pit.say(SPREAD, 4)
    s["exposed"] = pit.draw("3D", MIDDLE)
    s["next"] = pit.draw("KC", MIDDLE)
    s["choice"] = pit.choose(1, model.Choice.VOID)
    s["p1"] = pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("4S 9H 3D KC")
    pit.close_shoe()
    return pit, s


def _pair_dealt_right_box_first(tmp: Path) -> tuple[Pit, Seqs]:
    """7S to the right box, then 7H to the left (WRONG_BOX); the third card is the first after
    both, 7D: three of a kind, paid 11 to 1."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    pit.wager(1, 1000)
    s["first"], s["second"] = pit.draw("7S", RIGHT), pit.draw("7H", LEFT)
    pit.say(Meaning.PAIR)
    pit.draw("7D", MIDDLE)
    pit.say(Meaning.THREE_OF_A_KIND)
    pit.settle(1, ORIGINAL, WON, 11000, 11)
    pit.rack("7S 7H 7D")
    pit.close_shoe()
    return pit, s


def _correct_spread_round(tmp: Path) -> tuple[Pit, Seqs]:
    pit = opened(tmp)
    pit.play(1, "4S 9H 7C", {1: 1000})
    pit.close_shoe()
    return pit, {}


def _spread_tail(pit: Pit, racked: str, spread: int = 4, raised: int = 0) -> int:
    """The rest of a spread round that 7C wins for seat 1's $10 wager (and its raise): "spread",
    "Raises closed", the third card and its value, the settlements at 1 to 1, the rack; returns
    the rack's seq."""
    pit.say(SPREAD, spread)
    pit.say(RAISES_CLOSED)
    pit.draw("7C", MIDDLE)
    pit.say(THIRD_CARD, 7)
    pit.settle(1, ORIGINAL, WON, 1000, 1)
    if raised:
        pit.settle(1, RAISE, WON, raised, 1)  # (e): a raise is paid like the wager
    seq = pit.rack(racked)
    pit.close_shoe()
    return seq


def _spread_settled_without_a_third_card(tmp: Path) -> tuple[Pit, Seqs]:
    """4S 9H (spread 4), "Raises closed", and the wager collected with no card drawn: (d)13."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    s["w1"] = pit.wager(1, 1000)
    s["l"], s["r"] = pit.draw("4S", LEFT), pit.draw("9H", RIGHT)
    pit.say(SPREAD, 4)
    pit.say(RAISES_CLOSED)
    s["p1"] = pit.settle(1, ORIGINAL, LOST, 1000)
    pit.rack("4S 9H")
    pit.close_shoe()
    return pit, s


def _raise_before_the_first_two_cards(tmp: Path) -> tuple[Pit, Seqs]:
    """(d)12: raises come "immediately after the initial two cards have been dealt"."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    s["w1"] = pit.wager(1, 1000)
    s["raise"] = pit.raise_(1, 1000)
    pit.draw("4S", LEFT)
    s["r"] = pit.draw("10H", RIGHT)
    _spread_tail(pit, "4S 10H 7C", spread=5, raised=1000)
    return pit, s


def _first_card_to_the_right_box(tmp: Path) -> tuple[Pit, Seqs]:
    """(d)5: the first card goes to the left box, the second to the right."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    pit.wager(1, 1000)
    s["first"], s["second"] = pit.draw("4S", RIGHT), pit.draw("9H", LEFT)
    _spread_tail(pit, "4S 9H 7C")
    return pit, s


def _drawn_in_error(tmp: Path, *, racked: str) -> tuple[Pit, Seqs]:
    """(g)2: a card drawn in error (8D, after "Raises closed") must be the next card; here 7C
    comes out after it instead. The 8D is the third card all the same (sql/macros.sql, round_cards):
    it wins on 4S 9H as the 7C does, so the payment is right."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("4S", LEFT)
    pit.draw("9H", RIGHT)
    pit.say(SPREAD, 4)
    pit.say(RAISES_CLOSED)
    s["error"] = pit.emit(model.CardDrawnInError(rank=8, suit=Suit.DIAMONDS))
    s["l"] = pit.draw("7C", MIDDLE)
    pit.say(THIRD_CARD, 7)
    pit.settle(1, ORIGINAL, WON, 1000, 1)
    s["rack"] = pit.rack(racked)
    pit.close_shoe()
    return pit, s


def _burn_misdisclosed(tmp: Path) -> tuple[Pit, Seqs]:
    """(d)1: the burnt card (2C, burned by `opened`) is disclosed on request as 3D."""
    pit = Pit(tmp)
    pit.open_table()
    pit.tap_in("D1")
    pit.load("S1")
    s = {"burn": pit.burn("2C")}
    s["disclosed"] = pit.emit(model.BurnDisclosed(rank=3, suit=Suit.DIAMONDS,
                                                  requested_by_seat=2))
    pit.emit(model.BurnDisclosed(rank=2, suit=Suit.CLUBS, requested_by_seat=3))  # the truth
    pit.play(1, "4S 9H 7C", {1: 1000})
    pit.close_shoe()
    return pit, s


def _wager_with(profile: str, instrument: Instrument) -> Callable[[Path], tuple[Pit, Seqs]]:
    def build(tmp: Path) -> tuple[Pit, Seqs]:
        pit, s = opened(tmp, profile, decks=1), {}
        pit.begin(1)
        s["w1"] = pit.wager(1, 1000, instrument=instrument)
        pit.draw("4S", LEFT)
        pit.draw("9H", RIGHT)
        _spread_tail(pit, "4S 9H 7C")
        return pit, s
    return build


def _casino_night_shoe_of_two_decks(tmp: Path) -> tuple[Pit, Seqs]:
    """(a)2: "A deck of cards"."""
    pit = Pit(tmp)
    s = {"opened": pit.open_table("nj-casino-night")}
    pit.tap_in("D1")
    s["load"] = pit.new_shoe("S1", decks=2)
    pit.play(1, "4S 9H 7C", {1: 1000})
    pit.close_shoe()
    return pit, s


def _casino_night_trips_at_twelve(tmp: Path) -> tuple[Pit, Seqs]:
    """(d)9: three of a kind "shall be paid at odds of 11 to 1"; (f) protects only (e)."""
    pit = Pit(tmp)
    s = {"opened": pit.open_table("nj-casino-night", Paytable(three_of_a_kind=12))}
    pit.tap_in("D1")
    pit.new_shoe("S1", decks=1)
    s.update(pit.play(1, "8S 8H 8D", {1: 1000}))
    pit.close_shoe()
    return pit, s


def _reshuffling_shoe(profile: str) -> Callable[[Path], tuple[Pit, Seqs]]:
    """13:69F-6.9: an automatic reshuffling shoe replaces 6.3 and 6.4 (the burns) at a casino:
    no burn after loading nor after a new dealer. Casino nights have no such exemption."""
    def build(tmp: Path) -> tuple[Pit, Seqs]:
        pit = Pit(tmp)
        pit.open_table(profile)
        pit.tap_in("D1")
        pit.shoe_id = "S1"
        pit.emit(model.ShuffleStarted(method=ShuffleMethod.CONTINUOUS_SHUFFLER, device_id="CSM1"))
        pit.emit(model.ShuffleCompleted(method=ShuffleMethod.CONTINUOUS_SHUFFLER,
                                        device_id="CSM1"))
        s = {"load": pit.load("S1", decks=1)}
        s.update({f"first_{k}": v for k, v in pit.play(1, "4S 9H 7C", {1: 1000}).items()})
        s["tap"] = pit.tap_in("D2")
        s.update({f"second_{k}": v for k, v in pit.play(2, "5S JH 8C", {1: 1000}).items()})
        pit.close_shoe()
        return pit, s
    return build


def _third_card_line_arrives_after_the_rack(tmp: Path) -> tuple[Pit, Seqs]:
    """3C QD (spread 8), "Raises closed", 7H out of the shoe, "Third card 7", seat 1 paid, the
    rack read: in that order at the table, but the shoe's link is slow and its 7H line reaches
    the recorder after the terminal's and the rack's (a higher seq, an earlier time). The card
    was dealt in the round, before its rack (game order, docs/anomalies.md "Order"): it was a
    high-severity CARD_OUTSIDE_ROUND "after its cards were racked" when judged by seq."""
    pit = opened(tmp)
    s = {"w1": pit.open_spread()["w1"]}  # 3C QD, spread 8, "Raises closed"
    closed_at = pit.clock
    pit.clock = closed_at + timedelta(seconds=1)  # the terminal's lines, on time
    pit.say(THIRD_CARD, 7)
    s["p1"] = pit.settle(1, ORIGINAL, WON, 1000, 1)
    s["rack"] = pit.rack("3C QD 7H")
    after = pit.clock
    pit.clock = closed_at  # the shoe's line, late: stamped a second after "Raises closed"
    s["third"] = pit.draw("7H", MIDDLE)
    pit.clock = after
    pit.close_shoe()
    assert s["third"] > s["rack"]
    return pit, s


def _won_with_odds_recorded(odds: int | None) -> Callable[[Path], tuple[Pit, Seqs]]:
    """3C QD 7H (spread 8, pays 1 to 1): seat 1's $10 paid $10, the terminal recording `odds`.
    With none (odds are optional on WagerSettled) the amount is right: it was WRONG_ODDS and a
    high-severity WRONG_PAYOUT "paid $10.00 at ? to 1, the table pays $10.00 at 1 to 1". With
    other odds recorded, the payout is recorded as another bet's: WRONG_ODDS still."""
    return lambda tmp: _won_with(tmp, odds)


def _won_with(tmp: Path, odds: int | None) -> tuple[Pit, Seqs]:
    pit = opened(tmp)
    s = {"w1": pit.open_spread()["w1"]}  # 3C QD, spread 8, "Raises closed"
    pit.draw("7H", MIDDLE)
    pit.say(THIRD_CARD, 7)
    s["p1"] = pit.settle(1, ORIGINAL, WON, 1000, odds)
    pit.rack("3C QD 7H")
    pit.close_shoe()
    return pit, s


OK_WON_1000 = ("OK", "WON", 1000, 0, 0)
CASES: dict[str, Case] = {
    "spread_redraw_cheat": Case(
        _spread_redraw_cheat,
        [("THIRD_CARD_REDRAWN", 1, ["third", "redraw"]), ("WRONG_SETTLEMENT", 1, ["w1", "p1"]),
         ("WRONG_SETTLEMENT", 1, ["w2", "p2"])],
        {(1, "ORIGINAL"): ("WRONG_OUTCOME", "LOST", 0, 1000, 0),
         (2, "ORIGINAL"): ("WRONG_OUTCOME", "LOST", 0, 2500, 0)}),
    "spread_redraw_settled_on_the_deciding_card": Case(
        _spread_redraw_settled_on_the_deciding_card,
        [("THIRD_CARD_REDRAWN", 1, ["third", "redraw"])],
        {(1, "ORIGINAL"): ("OK", "LOST", 0, 1000, 0)}),
    "pair_redraw_cheat": Case(
        _pair_redraw("9D", "7D", paid=11000),
        [("THIRD_CARD_REDRAWN", 1, ["third", "redraw"]), ("WRONG_SETTLEMENT", 1, ["w1", "p1"])],
        {(1, "ORIGINAL"): ("WRONG_OUTCOME", "VOID", 0, 0, 1000)}),
    "pair_decided_by_the_first_card": Case(
        _pair_redraw("7D", "9D", paid=11000),
        [("THIRD_CARD_REDRAWN", 1, ["third", "redraw"])],
        {(1, "ORIGINAL"): ("OK", "WON", 11000, 0, 0)}),
    "pair_three_of_a_kind_redrawn_and_voided": Case(
        _pair_redraw("7D", "9D", paid=0),
        [("THIRD_CARD_REDRAWN", 1, ["third", "redraw"]), ("WRONG_SETTLEMENT", 1, ["w1", "p1"])],
        {(1, "ORIGINAL"): ("WRONG_OUTCOME", "WON", 11000, 0, 0)}),
    # the reviewer's cheat: the losing 2S to the rack, the left or the right box; 9H paid
    **{f"spread_third_card_diverted_to_{place}": Case(
        _spread_third_card_diverted(box),
        [("THIRD_CARD_DIVERTED", 1, ["third", "after"]), ("WRONG_SETTLEMENT", 1, ["w1", "p1"]),
         ("WRONG_SETTLEMENT", 1, ["w2", "p2"])],
        {(1, "ORIGINAL"): ("WRONG_OUTCOME", "LOST", 0, 1000, 0),
         (2, "ORIGINAL"): ("WRONG_OUTCOME", "LOST", 0, 2500, 0)})
       for place, box in (("the_discard_rack", RACK), ("the_left_box", LEFT),
                          ("the_right_box", RIGHT))},
    "pair_third_card_diverted_to_the_discard_rack": Case(
        _pair_third_card_diverted,
        [("THIRD_CARD_DIVERTED", 1, ["third", "after"]), ("WRONG_SETTLEMENT", 1, ["w1", "p1"])],
        {(1, "ORIGINAL"): ("WRONG_OUTCOME", "VOID", 0, 0, 1000)}),
    "consecutive_round_with_a_card_to_the_discard_rack": Case(
        _consecutive_card_to_the_rack, [("THIRD_CARD_ON_CONSECUTIVE", 1, ["extra"])],
        {(1, "ORIGINAL"): ("OK", "VOID", 0, 0, 1000)}),
    "won_with_no_odds_recorded": Case(
        _won_with_odds_recorded(None), [], {(1, "ORIGINAL"): ("OK", "WON", 1000, 0, 0)}),
    "won_with_other_odds_recorded": Case(
        _won_with_odds_recorded(2), [("WRONG_PAYOUT", 1, ["w1", "p1"])],
        {(1, "ORIGINAL"): ("WRONG_ODDS", "WON", 1000, 0, 0)}),
    "third_card_line_arrives_after_the_rack": Case(
        _third_card_line_arrives_after_the_rack, [], {(1, "ORIGINAL"): ("OK", "WON", 1000, 0, 0)}),
    "card_redrawn_to_the_discard_rack": Case(
        _redrawn_to_the_rack, [("THIRD_CARD_REDRAWN", 1, ["third", "redraw"])],
        {(1, "ORIGINAL"): OK_WON_1000}),
    "early_card_to_the_discard_rack_handled_by_the_protocol": Case(
        _early_card_to_the_rack, [("EARLY_THIRD_CARD", 1, ["exposed", "closed"])],
        {(1, "ORIGINAL"): OK_WON_1000}),
    "void_chosen_with_no_card_exposed_voids_nothing": Case(
        _void_chosen(exposed=False), [("WRONG_SETTLEMENT", 1, ["w1", "p1"])],
        {(1, "ORIGINAL"): ("WRONG_OUTCOME", "LOST", 0, 1000, 0)}),
    "void_chosen_after_the_new_third_card_voids_nothing": Case(
        _void_chosen(exposed=True),
        [("EARLY_EXPOSURE_MISHANDLED", 1, ["exposed", "third"]),
         ("EARLY_THIRD_CARD", 1, ["exposed", "closed"]), ("WRONG_SETTLEMENT", 1, ["w1", "p1"])],
        {(1, "ORIGINAL"): ("WRONG_OUTCOME", "LOST", 0, 1000, 0)}),
    "void_chosen_after_the_next_card_with_no_raises_closed_voids_nothing": Case(
        _void_chosen_after_the_next_card,
        [("EARLY_EXPOSURE_MISHANDLED", 1, ["exposed"]), ("EARLY_THIRD_CARD", 1, ["exposed"]),
         ("THIRD_CARD_REDRAWN", 1, ["exposed", "next"]), ("WRONG_ANNOUNCEMENT", 1, ["exposed"]),
         ("WRONG_SETTLEMENT", 1, ["w1", "p1"])],
        {(1, "ORIGINAL"): ("WRONG_OUTCOME", "LOST", 0, 1000, 0)}),
    "pair_dealt_to_the_right_box_first_is_decided_after_both_cards": Case(
        _pair_dealt_right_box_first, [("WRONG_BOX", 1, ["first", "second"])],
        {(1, "ORIGINAL"): ("OK", "WON", 11000, 0, 0)}),
    "correct_spread_round_raises_nothing": Case(
        _correct_spread_round, [], {(1, "ORIGINAL"): OK_WON_1000}),
    "spread_settled_without_a_third_card": Case(
        _spread_settled_without_a_third_card,
        [("SPREAD_WITHOUT_THIRD_CARD", 1, ["l", "r", "p1"])],
        {(1, "ORIGINAL"): ("SETTLED_BEFORE_DECISION", None, 0, 0, 0)}),
    "raise_before_the_first_two_cards": Case(
        _raise_before_the_first_two_cards, [("EARLY_RAISE", 1, ["raise", "r"])],
        {(1, "ORIGINAL"): OK_WON_1000, (1, "RAISE"): OK_WON_1000}),
    "first_card_to_the_right_box": Case(
        _first_card_to_the_right_box, [("WRONG_BOX", 1, ["first", "second"])],
        {(1, "ORIGINAL"): OK_WON_1000}),
    "drawn_in_error_not_used_and_racked": Case(
        lambda tmp: _drawn_in_error(tmp, racked="4S 9H 8D 7C"),
        [("DRAWN_IN_ERROR_NOT_USED", 1, ["error", "l"])], {(1, "ORIGINAL"): OK_WON_1000}),
    "drawn_in_error_not_used_and_never_racked": Case(
        lambda tmp: _drawn_in_error(tmp, racked="4S 9H 7C"),
        [("CARD_UNACCOUNTED", 1, ["error", "rack"]),
         ("DRAWN_IN_ERROR_NOT_USED", 1, ["error", "l"])],
        {(1, "ORIGINAL"): OK_WON_1000}),
    "burnt_card_disclosed_wrong": Case(
        _burn_misdisclosed, [("BURN_MISDISCLOSED", None, ["burn", "disclosed"])],
        {(1, "ORIGINAL"): OK_WON_1000}),
    "call_bet_at_an_nj_casino": Case(
        _wager_with("nj-casino", Instrument.CALL_BET), [("CALL_BET", 1, ["w1"])],
        {(1, "ORIGINAL"): OK_WON_1000}),
    "call_bet_at_a_casino_night": Case(
        _wager_with("nj-casino-night", Instrument.CALL_BET), [("CALL_BET", 1, ["w1"])],
        {(1, "ORIGINAL"): OK_WON_1000}),
    "match_play_coupon_at_the_gaming_authority": Case(
        _wager_with("gaming-authority", Instrument.MATCH_PLAY_COUPON),
        [("MATCH_PLAY_NOT_ALLOWED", 1, ["w1"])], {(1, "ORIGINAL"): OK_WON_1000}),
    "match_play_coupon_at_an_nj_casino_is_allowed": Case(
        _wager_with("nj-casino", Instrument.MATCH_PLAY_COUPON), [],
        {(1, "ORIGINAL"): OK_WON_1000}),
    "casino_night_shoe_of_two_decks": Case(
        _casino_night_shoe_of_two_decks, [("TOO_MANY_DECKS", None, ["opened", "load"])],
        {(1, "ORIGINAL"): OK_WON_1000}),
    "casino_night_three_of_a_kind_at_twelve_to_one": Case(
        _casino_night_trips_at_twelve,
        [("BELOW_MINIMUM_ODDS", None, ["opened"]),
         ("BELOW_MINIMUM_ODDS", 1, ["wager1", "settle1"])],
        {(1, "ORIGINAL"): ("OK", "WON", 12000, 0, 0)}),
    "reshuffling_shoe_at_an_nj_casino_owes_no_burn": Case(
        _reshuffling_shoe("nj-casino"), [],
        {(1, "ORIGINAL"): OK_WON_1000}),
    "reshuffling_shoe_at_a_casino_night_still_owes_burns": Case(
        _reshuffling_shoe("nj-casino-night"),
        [("MISSING_BURN", 1, ["load", "first_left"]),
         ("MISSING_BURN", 2, ["tap", "second_left"])],
        {(1, "ORIGINAL"): OK_WON_1000}),
}


def _ledger(db: Path) -> Ledger:
    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute(
            "SELECT seat, wager_kind, status, expected_outcome, expected_paid_cents, "
            "expected_collected_cents, expected_returned_cents FROM ledger "
            "WHERE round_no = 1").fetchall()
    return {(seat, kind): tuple(rest) for seat, kind, *rest in got}  # type: ignore[misc]


@pytest.mark.parametrize("name", CASES)
def test_each_misreading_raises_its_code_with_its_proof_and_ledger_status(
        tmp_path: Path, name: str) -> None:
    case = CASES[name]
    pit, seqs = case.build(tmp_path)
    found = pit.judge()
    # a finding about the table's opening alone has no shoe
    expected = sorted(((code, "T01", None if names == ["opened"] else "S1", round_no,
                        sorted(seqs[n] for n in names))
                       for code, round_no, names in case.found),
                      key=lambda f: (f[0], f[1], f[2] or "", f[3] or 0, f[4]))
    assert found == expected
    assert _ledger(pit.folder / "pitlog.duckdb") == case.ledger


@pytest.mark.parametrize(("odds", "said"), [(None, "seat 1 wager won: paid $10.00"),
                                             (1, "seat 1 wager won: paid $10.00 at 1 to 1")])
def test_a_win_reads_in_the_replay_with_or_without_its_odds(
        tmp_path: Path, odds: int | None, said: str) -> None:
    """With no odds recorded the replay's line was empty (printf of a NULL is NULL)."""
    pit, seqs = _won_with(tmp_path, odds)
    with duckdb.connect(str(pit.project()), read_only=True) as con:
        events = replay_shoe(con, "S1").events
    assert [e["description"] for e in events if e["seq"] == seqs["p1"]] == [said]


# The redraw cheat and the 2S diverted to the rack, each recorded and projected once for the
# tests that only read its store (a projection is most of such a test's cost); the cases of
# CASES still record and project their own.
@pytest.fixture(scope="module")
def redraw_cheat(tmp_path_factory: pytest.TempPathFactory) -> tuple[Pit, Seqs]:
    pit, seqs = _spread_redraw_cheat(tmp_path_factory.mktemp("redraw"))
    pit.project()
    return pit, seqs


@pytest.fixture(scope="module")
def diverted_to_rack(tmp_path_factory: pytest.TempPathFactory) -> tuple[Pit, Seqs]:
    pit, seqs = _spread_third_card_diverted(RACK)(tmp_path_factory.mktemp("diverted"))
    pit.project()
    return pit, seqs


def test_the_redraw_cheat_is_explained_with_the_deciding_card(
        redraw_cheat: tuple[Pit, Seqs]) -> None:
    pit, _ = redraw_cheat
    (redraw,) = [a for a in pit.anomalies() if a["code"] == "THIRD_CARD_REDRAWN"]
    assert redraw["severity"] == "high"
    assert redraw["rule"] == "13:47-20.31(d)10, (d)13-14; GA (8), (11)"
    assert redraw["explanation"] == (
        "9H was dealt to the middle box after the third card 2S had decided the round "
        "(3C and QD, spread 8: players lose)")


def test_dispute_shows_the_deciding_card_and_the_redraw(
        redraw_cheat: tuple[Pit, Seqs]) -> None:
    pit, seqs = redraw_cheat
    db = pit.project()
    with duckdb.connect(str(db), read_only=True) as con:
        d = dispute(con, "T01", shoe="S1", round_no=1)
    assert (d.round["third_card"], d.round["third_card_seq"], d.round["redrawn_cards"],
            d.round["players_result"]) == ("2S", seqs["third"], ["9H"], "lost")
    assert [(c["card"], c["box"], c["role"]) for c in d.cards] == [
        ("3C", "left", None), ("QD", "right", None),
        ("2S", "middle", "the deciding third card"),
        ("9H", "middle",
         "redrawn after the deciding third card: decides nothing (13:47-20.31(d)13-14)")]
    assert [(s["seat"], s["required"], s["made"], s["status"]) for s in d.settlements] == [
        (1, "LOST: collect $10.00", "WON: paid $10.00 at 1 to 1", "WRONG_OUTCOME"),
        (2, "LOST: collect $25.00", "WON: paid $25.00 at 1 to 1", "WRONG_OUTCOME")]


def test_replay_shows_the_deciding_card_and_the_redraw(
        redraw_cheat: tuple[Pit, Seqs]) -> None:
    from projections.replay import replay_shoe

    pit, _ = redraw_cheat
    db = pit.project()
    with duckdb.connect(str(db), read_only=True) as con:
        hands = replay_shoe(con, "S1").hands
    (hand,) = [h for h in hands if h["source"] == "round"]
    assert (hand["dealt"], hand["third_card"], hand["redrawn"], hand["outcome"]) == (
        "3C QD 2S 9H", "2S", "9H", "lost")


def test_an_early_exposure_replaced_by_the_protocol_is_not_a_redraw(tmp_path: Path) -> None:
    """(g)3: a card exposed before "Raises closed" is discarded; the first card after it
    decides, and nothing is redrawn."""
    pit = opened(tmp_path)
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("4S", LEFT)
    pit.draw("9H", RIGHT)
    pit.say(SPREAD, 4)
    exposed = pit.draw("3D", MIDDLE)  # outside: it would lose
    pit.choose(1, model.Choice.PLAY)
    closed = pit.say(RAISES_CLOSED)
    third = pit.draw("8C", MIDDLE)
    pit.say(THIRD_CARD, 8)
    pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack("4S 9H 3D 8C")
    pit.close_shoe()
    assert pit.judge() == [("EARLY_THIRD_CARD", "T01", "S1", 1, [exposed, closed])]
    assert _ledger(pit.folder / "pitlog.duckdb") == {(1, "ORIGINAL"): OK_WON_1000}
    with duckdb.connect(str(pit.folder / "pitlog.duckdb"), read_only=True) as con:
        (row,) = con.execute("SELECT middle_card, third_card_seq, redrawn_cards FROM rounds"
                             ).fetchall()
    assert row == ("8C", third, [])


def test_a_card_drawn_in_error_and_used_counts_once_in_the_shoe(tmp_path: Path) -> None:
    """(g)2: used as the next card, it is one card: 1 deck, and its only copy out."""
    pit = opened(tmp_path, "nj-casino-night", decks=1)
    pit.begin(1)
    pit.wager(1, 1000)
    pit.emit(model.CardDrawnInError(rank=4, suit=Suit.SPADES))
    pit.draw("4S", LEFT)
    pit.draw("9H", RIGHT)
    pit.say(SPREAD, 4)
    pit.say(RAISES_CLOSED)
    pit.draw("7C", MIDDLE)
    pit.say(THIRD_CARD, 7)
    pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack("4S 9H 7C")
    pit.close_shoe()
    assert pit.judge() == []


def test_a_card_drawn_in_error_and_not_used_stays_in_the_card_count(tmp_path: Path) -> None:
    """The unused card left the shoe: a second KD out of a one-deck shoe is an extra card. The
    KD is round 1's third card ((g)2; sql/macros.sql, round_cards): it loses on 4S 9H, as collected,
    though 8C was dealt after it."""
    pit = opened(tmp_path, "nj-casino-night", decks=1)
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("4S", LEFT)
    pit.draw("9H", RIGHT)
    pit.say(SPREAD, 4)
    pit.say(RAISES_CLOSED)
    error = pit.emit(model.CardDrawnInError(rank=13, suit=Suit.DIAMONDS))
    dealt = pit.draw("8C", MIDDLE)
    pit.say(THIRD_CARD, 8)
    pit.settle(1, ORIGINAL, LOST, 1000)
    pit.rack("4S 9H KD 8C")
    pit.end()
    extra = pit.play(2, "KD 5S 9C", {1: 1000})["left"]
    pit.close_shoe()
    assert pit.judge() == [("DRAWN_IN_ERROR_NOT_USED", "T01", "S1", 1, [error, dealt]),
                           ("EXTRA_CARD", "T01", "S1", 2, [error, extra])]
    assert _ledger(pit.folder / "pitlog.duckdb")[(1, "ORIGINAL")] == ("OK", "LOST", 0, 1000, 0)


def test_a_correct_burn_disclosure_and_a_reshuffling_shoe_without_burns_raise_nothing(
        tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.emit(model.BurnDisclosed(rank=2, suit=Suit.CLUBS, requested_by_seat=1))
    pit.play(1, "4S 9H 7C", {1: 1000})
    pit.tap_in("D2")
    pit.burn("5D", BurnReason.NEW_DEALER)
    pit.emit(model.BurnDisclosed(rank=5, suit=Suit.DIAMONDS))  # the latest burn
    pit.play(2, "5S JH 8C", {1: 1000})
    pit.close_shoe()
    assert pit.judge() == []


def test_clean_rounds_keep_their_theoretical_win_and_ledger(tmp_path: Path) -> None:
    """Rounds dealt correctly: the reconciliation's theoretical win is the exact edge times the
    wagers (events.reddog.theory), as before this issue, and every settlement is OK."""
    import json
    from fractions import Fraction

    from events.reddog import theory
    from projections.reconcile import reconcile

    pit = opened(tmp_path)
    pit.play(1, "5S 6H", {1: 1000})
    pit.play(2, "8S 8H 8D", {1: 500})
    pit.play(3, "8C 8D 2S", {1: 500})
    pit.play(4, "3S QH 7C", {1: 1000, 2: 500}, raises={1: 1000})
    pit.play(5, "2H 9C 9D", {1: 2500})
    pit.close_shoe()
    assert pit.judge() == []
    with duckdb.connect(str(pit.folder / "pitlog.duckdb"), read_only=True) as con:
        statuses = {s for (s,) in con.execute("SELECT DISTINCT status FROM ledger").fetchall()}
        (group,) = reconcile(con, ("table",))
    assert statuses == {"OK"}
    originals = 1000 + 500 + 500 + 1000 + 500 + 2500
    assert group["theo_win_exact"] == (originals * theory.original_wager_edge(6)
                                    + 1000 * theory.raise_edge(6, 8))
    assert isinstance(group["theo_win_exact"], Fraction)
    # `pitlog theo` is the same exact edge: 3841/48205 per original wager from a 6-deck shoe.
    from typer.testing import CliRunner

    from cli.app import app

    theo = CliRunner().invoke(app, ["theo", "--decks", "6", "--format", "json"])
    assert theo.exit_code == 0, theo.output
    edge = json.loads(theo.output)[0]
    assert (edge["measure"], Fraction(edge["exact"])) == (
        "house edge per original wager", theory.original_wager_edge(6))
    assert theory.original_wager_edge(6) == Fraction(3841, 48205)


def _line(n: int, type_: str, round_no: int | None, **fields: object) -> str:
    import json

    return json.dumps({"type": type_, "table": "T07", "shoe": "T07-S1", "round": round_no,
                       "seq": n, "at": f"2026-11-28T21:00:{n:02d}.000Z", "actor": "TERM-7",
                       **fields})


def test_the_redraw_cheats_reproduced_through_pitlog_ingest(tmp_path: Path) -> None:
    """Issue 13 as a surveillance officer found it: device lines through `pitlog ingest`, then
    `pitlog project` and `pitlog anomalies`. Round 1: 3C QD, 2S decides (lose), 9H redrawn and
    paid. Round 2: 7S 7H, 9D decides (tie hand), 7D redrawn and paid 11 to 1."""
    import json

    from cli_support import run

    rounds = [(1, "3C QD 2S 9H", ("SPREAD", 8), [("THIRD_CARD", 2), ("THIRD_CARD", 9)],
               ("WON", 2500, 1)),
              (2, "7S 7H 9D 7D", ("PAIR", None),
               [("NO_THREE_OF_A_KIND", None), ("THREE_OF_A_KIND", None)], ("WON", 27500, 11))]
    lines = [_line(1, "TableOpened", None, shoe=None, profile="nj-casino"),
             _line(2, "DealerTappedIn", None, shoe=None, dealer_id="D1"),
             _line(3, "CardsLoaded", None, decks=6),
             _line(4, "CardBurned", None, rank=13, suit="C", reason="NEW_SHOE")]
    boxes = ("LEFT", "RIGHT", "MIDDLE", "MIDDLE")
    for round_no, cards, (kind, spread), values, (outcome, cents, odds) in rounds:
        def add(type_: str, rn: int = round_no, **fields: object) -> None:
            lines.append(_line(len(lines) + 1, type_, rn, **fields))
        add("WagerPlaced", seat=1, area=1, player_id="P1", amount_cents=2500)
        for i, label in enumerate(cards.split()):
            if i == 2:
                add("Announced", phrase=kind.title(), meaning=kind, value=spread)
                if kind == "SPREAD":
                    add("Announced", phrase="Raises closed", meaning="RAISES_CLOSED")
            c = card_of(label)
            add("CardDrawn", rank=c.rank, suit=c.suit.value, face_up=True, destination=boxes[i])
            if i >= 2:
                meaning, value = values[i - 2]
                add("Announced", phrase=meaning.lower(), meaning=meaning, value=value)
        add("WagerSettled", seat=1, area=1, wager_kind="ORIGINAL", outcome=outcome,
            amount_cents=cents, odds=odds)
        add("CardsRacked", cards=[{"rank": card_of(x).rank, "suit": card_of(x).suit.value}
                                  for x in cards.split()])
    lines.append(_line(len(lines) + 1, "ShoeClosed", None, cards_remaining=200))
    feed = tmp_path / "floor.jsonl"
    feed.write_text("\n".join(lines) + "\n")
    log, db = tmp_path / "log", tmp_path / "pitlog.duckdb"
    ingested = run("ingest", str(feed), "--log", str(log))
    assert ingested.returncode == 0, ingested.stdout + ingested.stderr
    assert run("project", "--log", str(log), "--db", str(db)).returncode == 0
    found = run("anomalies", "--db", str(db), "--no-statistics", "--format", "json")
    assert found.returncode == 0, found.stderr
    codes = sorted((a["code"], a["round_no"]) for a in json.loads(found.stdout))
    assert codes == [("THIRD_CARD_REDRAWN", 1), ("THIRD_CARD_REDRAWN", 2),
                     ("WRONG_SETTLEMENT", 1), ("WRONG_SETTLEMENT", 2)]
    with duckdb.connect(str(db), read_only=True) as con:
        ledger = con.execute("SELECT round_no, status, expected_outcome FROM ledger "
                             "ORDER BY round_no").fetchall()
    assert ledger == [(1, "WRONG_OUTCOME", "LOST"), (2, "WRONG_OUTCOME", "VOID")]


def test_the_diverted_card_is_explained_with_where_it_went_and_what_followed(
        diverted_to_rack: tuple[Pit, Seqs]) -> None:
    pit, _ = diverted_to_rack
    (found,) = [a for a in pit.anomalies() if a["code"] == "THIRD_CARD_DIVERTED"]
    assert (found["severity"], found["rule"]) == ("high", "13:47-20.31(d)8, (d)13; GA (6), (11)")
    assert found["explanation"] == (
        "The third card 2S went to the discard rack, not the middle box; after it came 9H to "
        "the middle box (3C and QD, spread 8: 2S decides, players lose)")


def test_dispute_and_replay_label_the_diverted_card_and_the_card_after_it(
        tmp_path: Path) -> None:
    from projections.replay import replay_shoe

    pit, seqs = _spread_third_card_diverted(LEFT)(tmp_path)
    db = pit.project()
    with duckdb.connect(str(db), read_only=True) as con:
        d = dispute(con, "T01", shoe="S1", round_no=1)
        replay = replay_shoe(con, "S1")
    assert (d.round["third_card"], d.round["third_card_seq"], d.round["third_card_box"],
            d.round["redrawn_cards"], d.round["players_result"]) == (
        "2S", seqs["third"], "left", ["9H"], "lost")
    assert [(c["card"], c["box"], c["role"]) for c in d.cards] == [
        ("3C", "left", None), ("QD", "right", None),
        ("2S", "left", "the deciding third card, diverted to the left box instead of the "
                       "middle box: it still decides (13:47-20.31(d)8, (d)13)"),
        ("9H", "middle",
         "redrawn after the deciding third card: decides nothing (13:47-20.31(d)13-14)")]
    assert [s["status"] for s in d.settlements] == ["WRONG_OUTCOME", "WRONG_OUTCOME"]
    roles = {e["seq"]: e["role"] for e in replay.events if e["event_type"] == "CardDrawn"}
    assert roles[seqs["third"]].startswith("the deciding third card, diverted to the left box")
    assert roles[seqs["after"]].startswith("redrawn after the deciding third card")
    assert list(roles.values()).count(None) == 2  # the left and right cards
    (hand,) = [h for h in replay.hands if h["source"] == "round"]
    assert (hand["third_card"], hand["third_card_box"], hand["redrawn"], hand["outcome"]) == (
        "2S", "left", "9H", "lost")


def test_a_card_drawn_to_the_discard_rack_is_racked_and_counted_once(
        diverted_to_rack: tuple[Pit, Seqs]) -> None:
    """The diverted 2S went straight to the rack and is listed once by the round's racking: the
    rack holds every card once, the hand is racked in dealing order, and a one-deck shoe's card
    count finds no extra copy and nothing unaccounted."""
    pit, _ = diverted_to_rack
    db = pit.project()
    with duckdb.connect(str(db), read_only=True) as con:
        rack = con.execute("SELECT card FROM rack WHERE source = 'round' ORDER BY rack_position"
                           ).fetchall()
        hand = con.execute("SELECT dealt, racked, racked_in_dealing_order FROM hands").fetchall()
    assert [c for (c,) in rack] == ["3C", "QD", "2S", "9H"]
    assert hand == [("3C QD 2S 9H", "3C QD 2S 9H", True)]
    assert {a["code"] for a in pit.anomalies()} == {"THIRD_CARD_DIVERTED", "WRONG_SETTLEMENT"}


def _device_lines(rows: list[tuple[str, dict[str, object]]]) -> str:
    """Device lines (docs/ingest.md) of one table and shoe, numbered from seq 1."""
    lines = []
    for n, (type_, fields) in enumerate(rows, start=1):
        round_no = fields.pop("round", 1)
        lines.append(_line(n, type_, round_no, **fields))  # type: ignore[arg-type]
    return "\n".join(lines) + "\n"


def test_the_diverted_card_reproduced_through_pitlog_ingest(tmp_path: Path) -> None:
    """The reviewer's repro end to end: 3C QD, "Raises closed", 2S drawn to the discard rack,
    9H to the middle box, $25 paid at 1 to 1; every card racked. `pitlog anomalies` names the
    diverted card and the one after it, the ledger says WRONG_OUTCOME, and `pitlog dispute` and
    `pitlog replay` label the deciding card and the redrawn one."""
    import json

    from cli_support import run

    def drawn(label: str, box: str) -> tuple[str, dict[str, object]]:
        c = card_of(label)
        return ("CardDrawn", {"rank": c.rank, "suit": c.suit.value, "face_up": True,
                              "destination": box})

    rows: list[tuple[str, dict[str, object]]] = [
        ("TableOpened", {"round": None, "shoe": None, "profile": "nj-casino"}),
        ("DealerTappedIn", {"round": None, "shoe": None, "dealer_id": "D1"}),
        ("CardsLoaded", {"round": None, "decks": 6}),
        ("CardBurned", {"round": None, "rank": 13, "suit": "C", "reason": "NEW_SHOE"}),
        ("WagerPlaced", {"seat": 1, "area": 1, "player_id": "P1", "amount_cents": 2500}),
        drawn("3C", "LEFT"), drawn("QD", "RIGHT"),                        # seqs 6, 7
        ("Announced", {"phrase": "Spread 8", "meaning": "SPREAD", "value": 8}),
        ("Announced", {"phrase": "Raises closed", "meaning": "RAISES_CLOSED"}),
        drawn("2S", "DISCARD_RACK"),                                      # seq 10: decides
        drawn("9H", "MIDDLE"),                                            # seq 11
        ("Announced", {"phrase": "9", "meaning": "THIRD_CARD", "value": 9}),
        ("WagerSettled", {"seat": 1, "area": 1, "wager_kind": "ORIGINAL", "outcome": "WON",
                          "amount_cents": 2500, "odds": 1}),               # seq 13
        ("CardsRacked", {"cards": [{"rank": card_of(x).rank, "suit": card_of(x).suit.value}
                                   for x in "3C QD 2S 9H".split()]}),
        ("ShoeClosed", {"round": None, "cards_remaining": 300}),
    ]
    feed = tmp_path / "floor.jsonl"
    feed.write_text(_device_lines(rows))
    log, db = tmp_path / "log", tmp_path / "pitlog.duckdb"
    ingested = run("ingest", str(feed), "--log", str(log))
    assert ingested.returncode == 0, ingested.stdout + ingested.stderr
    assert run("project", "--log", str(log), "--db", str(db)).returncode == 0
    found = run("anomalies", "--db", str(db), "--no-statistics", "--format", "json")
    assert found.returncode == 0, found.stderr
    assert sorted((a["code"], a["round_no"], a["seqs"]) for a in json.loads(found.stdout)) == [
        ("THIRD_CARD_DIVERTED", 1, [10, 11]), ("WRONG_SETTLEMENT", 1, [5, 13])]
    (diverted,) = [a for a in json.loads(found.stdout) if a["code"] == "THIRD_CARD_DIVERTED"]
    assert "2S went to the discard rack" in diverted["explanation"]
    assert "after it came 9H to the middle box" in diverted["explanation"]
    with duckdb.connect(str(db), read_only=True) as con:
        ledger = con.execute("SELECT status, expected_outcome, expected_collected_cents, "
                             "actual_paid_cents FROM ledger").fetchall()
    assert ledger == [("WRONG_OUTCOME", "LOST", 2500, 2500)]

    shown = run("dispute", "--db", str(db), "--table", "T07", "--round", "T07-S1:1",
                "--format", "json")
    assert shown.returncode == 0, shown.stderr
    sections = json.loads(shown.stdout)
    (head,) = [r for r in sections if r["section"] == "round"]
    assert (head["third_card"], head["third_card_seq"], head["third_card_box"],
            head["redrawn_cards"]) == ("2S", 10, "discard_rack", ["9H"])
    roles = {r["card"]: r["role"] for r in sections if r["section"] == "card"}
    assert roles["2S"].startswith("the deciding third card, diverted to the discard rack")
    assert roles["9H"].startswith("redrawn after the deciding third card: decides nothing")
    table = run("dispute", "--db", str(db), "--table", "T07", "--round", "T07-S1:1")
    assert table.returncode == 0, table.stderr
    assert "diverted to the discard rack" in " ".join(table.stdout.split())

    replayed = run("replay", "T07-S1", "--db", str(db), "--format", "json")
    assert replayed.returncode == 0, replayed.stderr
    replay = json.loads(replayed.stdout)
    events = {r["seq"]: r for r in replay if r["section"] == "event"}
    assert events[10]["role"].startswith("the deciding third card, diverted to the discard rack")
    assert events[11]["role"].startswith("redrawn after the deciding third card")
    (hand,) = [r for r in replay if r["section"] == "hand" and r["source"] == "round"]
    assert (hand["third_card"], hand["third_card_box"], hand["redrawn"]) == (
        "2S", "discard_rack", "9H")


def test_the_console_labels_the_deciding_card_and_the_diverted_and_redrawn_ones(
        diverted_to_rack: tuple[Pit, Seqs], tmp_path: Path) -> None:
    """The dispute page tags each card drawn with its role (the full sentence on hover), and
    the replay page's steps carry it beside each card's event."""
    import json
    import re
    from datetime import UTC

    from projections.console_data import replay_steps
    from projections.serve.templates.dispute import cards_panel
    from projections.serve.templates.replay import steps_json

    pit, seqs = diverted_to_rack
    with duckdb.connect(str(pit.project()), read_only=True) as con:
        d = dispute(con, "T01", shoe="S1", round_no=1)
        steps = replay_steps(con, "S1")
    dealing = cards_panel(d, UTC, set()).split('id="dealing"')[1].split('id="rack"')[0]
    tags = []
    for figure in dealing.split("<figure")[1:]:
        card = re.search(r'data-card="([^"]+)"', figure)
        role = re.search(r'data-role="([^"]+)"[^>]*>([^<]+)<', figure)
        tags.append((card and card[1], role and (role[1], role[2])))
    assert tags == [("3C", None), ("QD", None), ("2S", ("diverted", "decides · diverted")),
                    ("9H", ("redrawn", "redrawn · decides nothing"))]
    roles = {s["seq"]: s["role"] for s in json.loads(steps_json(steps, UTC))}
    assert roles[seqs["third"]].startswith("the deciding third card, diverted to the discard")
    assert roles[seqs["after"]].startswith("redrawn after the deciding third card")

    pit2, seqs2 = _correct_spread_round(tmp_path / "clean")
    with duckdb.connect(str(pit2.project()), read_only=True) as con:
        clean = dispute(con, "T01", shoe="S1", round_no=1)
    assert 'data-role="deciding"' in cards_panel(clean, UTC, set())


def test_a_rack_under_another_rounds_number_is_explained(tmp_path: Path) -> None:
    """4S 9H 7C are drawn in round 1, but the terminal stamps their CardsRacked with round 2
    (`rack`), a round that drew nothing: round 1 was never racked, and round 2 racked cards
    it never drew. Both say so in words, the second with "dealt nothing" (it was NULL)."""
    pit = opened(tmp_path)
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("4S", LEFT)
    pit.draw("9H", RIGHT)
    pit.say(SPREAD, 4)
    pit.say(RAISES_CLOSED)
    pit.draw("7C", MIDDLE)
    pit.say(THIRD_CARD, 7)
    pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.begin(2)
    rack = pit.rack("4S 9H 7C")
    pit.close_shoe()
    found = {(a["round_no"], a["code"]): a for a in pit.anomalies()}
    assert sorted(found) == [(1, "DISCARD_RACK_ORDER"), (2, "DISCARD_RACK_ORDER")]
    assert found[1, "DISCARD_RACK_ORDER"]["explanation"] == "The cards 4S 9H 7C were never racked"
    assert found[2, "DISCARD_RACK_ORDER"]["seqs"] == [rack]
    assert found[2, "DISCARD_RACK_ORDER"]["explanation"] == (
        "Racked 4S 7C 9H, which were not drawn in this round (dealt nothing, racked 4S 9H 7C)")

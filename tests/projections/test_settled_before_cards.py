"""A wager settled in a round whose first two cards were never recorded: no hand (not
consecutive, not a pair, not a spread) existed to decide it, and under 13:47-20.31(d)7, (d)10,
(d)14 only the cards decide a wager, so a finished round's payment or collection made so is
WRONG_SETTLEMENT (the ledger's status SETTLED_BEFORE_DECISION), once. A wager handed back whole is
not flagged before any card of the round (a removal by another name, (d)3, (d)6) nor where
another code owns the round: a RoundVoided (one the rules allow owes the wagers back; one they do
not is ROUND_VOIDED_WITHOUT_CAUSE), the cutting card out (ROUND_ABANDONED_AT_CUT_CARD), a
dealing-shoe fault not voided (DEVICE_FAULT_NOT_VOIDED). A payment or collection there is a
second mishap beside that code, and is flagged too.

Each is a hand-made table (real Recorder, real embedded log, real DuckDB), judged by the real
views: the exact anomalies (code, shoe, round and the seqs that prove them, so no other code is
raised) and the ledger's verdict on round 1's wagers, integer cents.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from surveillance_pit import LEFT, ORIGINAL, RIGHT, VOID, WON, Pit, opened
from test_red_dog_rules import Ledger, Seqs
from test_red_dog_rules import _ledger as round_one_ledger

from events.reddog import model
from events.reddog.model import Fault, Meaning

JAM = model.DeviceFaulted(device_id="SHOE-1", fault=Fault.SHOE_JAM, detail="stopped")


PAID, RETURNED_WHOLE = "paid", "returned"  # how round 1's $10 wager is settled
CUT, CONSECUTIVE, VOID_NO_CAUSE, VOIDED = "cut", "consecutive", "void", "voided"  # besides


def _round(cards: str, how: str, *, before: str | None = None, jam: bool = False,
           shoe: bool = True, finished: bool = True) -> Callable[[Path], tuple[Pit, Seqs]]:
    """Round 1: seat 1 wagers $10 (`w1`); `cards` come out to the left box (`c1`...); then,
    as asked, the cutting card (CUT), a dealing-shoe jam (`jam`; VOIDED after it or not), a
    void without cause (VOID_NO_CAUSE), or 5S 6H and the tie hand's void (CONSECUTIVE); then
    the wager is settled (`p1`): paid $10 at 1 to 1, or handed back whole. Then the cards are
    racked and the shoe closed (a round with no shoe: the table goes on, a dealer taps in),
    unless not `finished`."""
    def build(tmp: Path) -> tuple[Pit, Seqs]:
        pit, s = opened(tmp), {}
        if not shoe:
            pit.close_shoe()
            pit.shoe_id = None
        pit.begin(1)
        s["w1"] = pit.wager(1, 1000)
        for n, label in enumerate(cards.split(), start=1):
            s[f"c{n}"] = pit.draw(label, LEFT)
        if before == CUT:
            s["cut"] = pit.emit(model.CuttingCardReached())
        if jam:
            s["jam"] = pit.emit(JAM, actor="SHOE-1")
        if before == CONSECUTIVE:
            pit.draw("5S", LEFT)
            pit.draw("6H", RIGHT)
            pit.say(Meaning.CONSECUTIVE)
        if before in (CONSECUTIVE, VOID_NO_CAUSE, VOIDED):
            s["void"] = pit.emit(model.RoundVoided(reason="the dealer's call"))
        s["p1"] = (pit.settle(1, ORIGINAL, WON, 1000, 1) if how == PAID
                   else pit.settle(1, ORIGINAL, VOID, 1000))
        if not finished:
            return pit, s
        racked = " ".join(cards.split() + (["5S", "6H"] if before == CONSECUTIVE else []))
        if racked:
            pit.rack(racked)
        if shoe:
            pit.close_shoe()
        else:
            pit.end()
            pit.tap_in("D2")
        return pit, s
    return build


BEFORE_DECISION = ("SETTLED_BEFORE_DECISION", None, 0, 0, 0)
RETURNED = ("OK", "VOID", 0, 0, 1000)
WRONG = ("WRONG_SETTLEMENT", "S1", ["w1", "p1"])
CASES: dict[str, tuple[Callable[[Path], tuple[Pit, Seqs]],
                       list[tuple[str, str | None, list[str]]], Ledger]] = {
    # no hand and nothing to own the round
    "returned_before_any_card": (_round("", RETURNED_WHOLE), [],
                                 {(1, "ORIGINAL"): BEFORE_DECISION}),
    "paid_with_no_card": (_round("", PAID), [WRONG], {(1, "ORIGINAL"): BEFORE_DECISION}),
    "paid_on_one_card": (_round("4S", PAID), [WRONG], {(1, "ORIGINAL"): BEFORE_DECISION}),
    "returned_after_one_card": (_round("4S", RETURNED_WHOLE), [WRONG],
                                {(1, "ORIGINAL"): BEFORE_DECISION}),
    "paid_with_no_card_and_no_shoe": (
        _round("", PAID, shoe=False), [("WRONG_SETTLEMENT", None, ["w1", "p1"])],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
    "paid_but_not_finished": (_round("", PAID, finished=False), [],
                              {(1, "ORIGINAL"): BEFORE_DECISION}),
    # voids the rules allow: the return is owed
    "void_after_a_shoe_jam_with_one_card": (
        _round("4S", RETURNED_WHOLE, jam=True, before=VOIDED), [],
        {(1, "ORIGINAL"): RETURNED}),
    "void_after_a_shoe_jam_with_no_card": (
        _round("", RETURNED_WHOLE, jam=True, before=VOIDED), [],
        {(1, "ORIGINAL"): RETURNED}),
    "void_on_consecutive_cards": (_round("", RETURNED_WHOLE, before=CONSECUTIVE), [],
                                  {(1, "ORIGINAL"): RETURNED}),
    # another code owns the round: a return is that code's alone, a payment a second mishap
    "void_without_cause_returned_with_no_card": (
        _round("", RETURNED_WHOLE, before=VOID_NO_CAUSE),
        [("ROUND_VOIDED_WITHOUT_CAUSE", "S1", ["void"])], {(1, "ORIGINAL"): BEFORE_DECISION}),
    "void_without_cause_returned_with_one_card": (
        _round("4S", RETURNED_WHOLE, before=VOID_NO_CAUSE),
        [("ROUND_VOIDED_WITHOUT_CAUSE", "S1", ["void"])], {(1, "ORIGINAL"): BEFORE_DECISION}),
    "void_without_cause_paid": (
        _round("4S", PAID, before=VOID_NO_CAUSE),
        [("ROUND_VOIDED_WITHOUT_CAUSE", "S1", ["void"]), WRONG],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
    "abandoned_at_the_cutting_card_returned": (
        _round("", RETURNED_WHOLE, before=CUT), [("ROUND_ABANDONED_AT_CUT_CARD", "S1", ["cut"])],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
    "abandoned_at_the_cutting_card_paid": (
        _round("", PAID, before=CUT), [("ROUND_ABANDONED_AT_CUT_CARD", "S1", ["cut"]), WRONG],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
    "shoe_jam_not_voided_returned": (
        _round("4S", RETURNED_WHOLE, jam=True), [("DEVICE_FAULT_NOT_VOIDED", "S1", ["jam"])],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
    "shoe_jam_not_voided_returned_with_no_shoe": (  # DEVICE_FAULT_NOT_VOIDED judges a shoe's
        _round("4S", RETURNED_WHOLE, jam=True, shoe=False),
        [("CARD_OUTSIDE_ROUND", None, ["c1"]), ("WRONG_SETTLEMENT", None, ["w1", "p1"])],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
    "shoe_jam_not_voided_paid": (
        _round("4S", PAID, jam=True), [("DEVICE_FAULT_NOT_VOIDED", "S1", ["jam"]), WRONG],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
}


@pytest.mark.parametrize("name", CASES)
def test_a_settlement_with_no_hand_raises_what_it_owes(tmp_path: Path, name: str) -> None:
    build, found, ledger = CASES[name]
    pit, seqs = build(tmp_path)
    expected = sorted((code, "T01", shoe, 1, sorted(seqs[n] for n in names))
                      for code, shoe, names in found)
    assert pit.judge() == expected
    assert round_one_ledger(pit.folder / "pitlog.duckdb") == ledger


def test_the_settlement_with_no_hand_is_explained_with_the_cards_recorded(tmp_path: Path) -> None:
    pit, _ = _round("", PAID)(tmp_path / "none")
    (none,) = pit.anomalies()
    assert (none["code"], none["severity"], none["rule"]) == (
        "WRONG_SETTLEMENT", "high", "13:47-20.31(d)7, 10, 14")
    assert none["explanation"] == (
        "Seat 1 wager of $10.00 was settled WON (paid $10.00, collected $0.00, returned "
        "$0.00) in a round whose first two cards were never recorded (no card of the round): "
        "only the cards decide a wager")
    pit, _ = _round("4S", RETURNED_WHOLE)(tmp_path / "one")
    (one,) = pit.anomalies()
    assert one["explanation"] == (
        "Seat 1 wager of $10.00 was settled VOID (paid $0.00, collected $0.00, returned "
        "$10.00) in a round whose first two cards were never recorded (only 4S): only the "
        "cards decide a wager")

"""A wager settled before its round's first two cards were out: no hand (not consecutive, not a
pair, not a spread) existed to decide it, and under 13:47-20.31(d)7, (d)10, (d)14 only the cards
decide a wager, so a finished round's settlement made so is WRONG_SETTLEMENT (the ledger's
status SETTLED_BEFORE_DECISION), once; unless another code owns the round: a RoundVoided (one
the rules allow owes the wagers back; one they do not is ROUND_VOIDED_WITHOUT_CAUSE), the cutting
card out (ROUND_ABANDONED_AT_CUT_CARD), a dealing-shoe fault not voided (DEVICE_FAULT_NOT_VOIDED).

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


def _settled_with_no_card(tmp: Path) -> tuple[Pit, Seqs]:
    """Round 1: seat 1 wagers $10 and it is returned before any card; the shoe is closed."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    s["w1"] = pit.wager(1, 1000)
    s["p1"] = pit.settle(1, ORIGINAL, VOID, 1000)
    pit.close_shoe()
    return pit, s


def _paid_on_one_card(tmp: Path) -> tuple[Pit, Seqs]:
    """Round 1: seat 1 wagers $10, the 4S comes out to the left box and the wager is paid at
    1 to 1 with no second card; the 4S racked, the shoe closed."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    s["w1"] = pit.wager(1, 1000)
    pit.draw("4S", LEFT)
    s["p1"] = pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack("4S")
    pit.close_shoe()
    return pit, s


def _with_no_shoe(tmp: Path) -> tuple[Pit, Seqs]:
    """Round 1 dealt by a device that stamps no shoe id: seat 1's $10 returned before any card;
    the table goes on (a dealer taps in), so the round is finished."""
    pit, s = opened(tmp), {}
    pit.close_shoe()
    pit.shoe_id = None
    pit.begin(1)
    s["w1"] = pit.wager(1, 1000)
    s["p1"] = pit.settle(1, ORIGINAL, VOID, 1000)
    pit.end()
    pit.tap_in("D2")
    return pit, s


def _voided(cards: str, *, jam: bool) -> Callable[[Path], tuple[Pit, Seqs]]:
    """Round 1 voided after `cards` came out and the wager returned. After a dealing-shoe jam
    (`jam`; 13:69F-34.16(n) by analogy) the void stands and nothing is flagged; on the dealer's
    own word, ROUND_VOIDED_WITHOUT_CAUSE owns the returns, so no WRONG_SETTLEMENT too."""
    def build(tmp: Path) -> tuple[Pit, Seqs]:
        pit, s = opened(tmp), {}
        pit.begin(1)
        pit.wager(1, 1000)
        for label in cards.split():
            pit.draw(label, LEFT)
        if jam:
            pit.emit(JAM, actor="SHOE-1")
            pit.emit(model.RoundVoided(reason="dealing shoe jammed"))
        else:
            s["void"] = pit.emit(model.RoundVoided(reason="dealer's call"))
        pit.settle(1, ORIGINAL, VOID, 1000)
        if cards:
            pit.rack(cards)
        pit.close_shoe()
        return pit, s
    return build


def _void_on_consecutive_cards(tmp: Path) -> tuple[Pit, Seqs]:
    """13:47-20.31(d)7: 5S 6H is a tie hand, the dealer also records RoundVoided and returns
    the wager: nothing is flagged."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("5S", LEFT)
    pit.draw("6H", RIGHT)
    pit.say(Meaning.CONSECUTIVE)
    pit.emit(model.RoundVoided(reason="tie hand"))
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("5S 6H")
    pit.close_shoe()
    return pit, s


def _abandoned_at_the_cutting_card(tmp: Path) -> tuple[Pit, Seqs]:
    """The cutting card comes out before round 1's first card; the dealer stops and returns the
    wager (13:47-20.31(d)16): ROUND_ABANDONED_AT_CUT_CARD owns it."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    pit.wager(1, 1000)
    s["cut"] = pit.emit(model.CuttingCardReached())
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.close_shoe()
    return pit, s


def _shoe_jam_not_voided(tmp: Path) -> tuple[Pit, Seqs]:
    """The dealing shoe jams after the 4S; the dealer returns the wager without recording the
    void: DEVICE_FAULT_NOT_VOIDED owns it (the return is what 13:69F-34.16(n) owes)."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("4S", LEFT)
    s["jam"] = pit.emit(JAM, actor="SHOE-1")
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("4S")
    pit.close_shoe()
    return pit, s


def _still_in_play(tmp: Path) -> tuple[Pit, Seqs]:
    """The wager returned before any card is the log's last event: the round is not finished
    (a RoundVoided or the cutting card may still be recorded), so nothing yet."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    pit.wager(1, 1000)
    pit.settle(1, ORIGINAL, VOID, 1000)
    return pit, s


BEFORE_DECISION = ("SETTLED_BEFORE_DECISION", None, 0, 0, 0)
RETURNED = ("OK", "VOID", 0, 0, 1000)
CASES: dict[str, tuple[Callable[[Path], tuple[Pit, Seqs]],
                       list[tuple[str, str | None, list[str]]], Ledger]] = {
    "settled_with_no_card": (
        _settled_with_no_card, [("WRONG_SETTLEMENT", "S1", ["w1", "p1"])],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
    "paid_on_one_card": (
        _paid_on_one_card, [("WRONG_SETTLEMENT", "S1", ["w1", "p1"])],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
    "settled_with_no_card_and_no_shoe": (
        _with_no_shoe, [("WRONG_SETTLEMENT", None, ["w1", "p1"])],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
    "void_after_a_shoe_jam_with_one_card": (
        _voided("4S", jam=True), [], {(1, "ORIGINAL"): RETURNED}),
    "void_after_a_shoe_jam_with_no_card": (
        _voided("", jam=True), [], {(1, "ORIGINAL"): RETURNED}),
    "void_on_consecutive_cards": (
        _void_on_consecutive_cards, [], {(1, "ORIGINAL"): RETURNED}),
    "void_without_cause_with_no_card": (
        _voided("", jam=False), [("ROUND_VOIDED_WITHOUT_CAUSE", "S1", ["void"])],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
    "void_without_cause_with_one_card": (
        _voided("4S", jam=False), [("ROUND_VOIDED_WITHOUT_CAUSE", "S1", ["void"])],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
    "abandoned_at_the_cutting_card": (
        _abandoned_at_the_cutting_card, [("ROUND_ABANDONED_AT_CUT_CARD", "S1", ["cut"])],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
    "shoe_jam_not_voided": (
        _shoe_jam_not_voided, [("DEVICE_FAULT_NOT_VOIDED", "S1", ["jam"])],
        {(1, "ORIGINAL"): BEFORE_DECISION}),
    "still_in_play": (
        _still_in_play, [], {(1, "ORIGINAL"): BEFORE_DECISION}),
}


@pytest.mark.parametrize("name", CASES)
def test_a_settlement_before_the_first_two_cards_raises_one_code(tmp_path: Path,
                                                                  name: str) -> None:
    build, found, ledger = CASES[name]
    pit, seqs = build(tmp_path)
    expected = sorted((code, "T01", shoe, 1, sorted(seqs[n] for n in names))
                      for code, shoe, names in found)
    assert pit.judge() == expected
    assert round_one_ledger(pit.folder / "pitlog.duckdb") == ledger


def test_the_settlement_before_any_hand_is_explained_with_what_was_out(tmp_path: Path) -> None:
    pit, _ = _settled_with_no_card(tmp_path / "none")
    (none,) = pit.anomalies()
    assert (none["code"], none["severity"], none["rule"]) == (
        "WRONG_SETTLEMENT", "high", "13:47-20.31(d)7, 10, 14")
    assert none["explanation"] == (
        "Seat 1 wager of $10.00 was settled VOID (paid $0.00, collected $0.00, returned "
        "$10.00) before the round's first two cards were dealt (no card was out): only the "
        "cards decide a wager")
    pit, _ = _paid_on_one_card(tmp_path / "one")
    (one,) = pit.anomalies()
    assert one["explanation"] == (
        "Seat 1 wager of $10.00 was settled WON (paid $10.00, collected $0.00, returned "
        "$0.00) before the round's first two cards were dealt (only 4S was out): only the "
        "cards decide a wager")

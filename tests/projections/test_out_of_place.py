"""Events where the rules allow none: a burn inside a round, a card dealt outside any round in
play, a round voided without cause, and a card event recorded twice.

Each is a hand-made table (real Recorder, real embedded log, real DuckDB), judged by the real
views: the exact anomalies (code, round and the seqs that prove them, so no other code is
raised) and the ledger's verdict on round 1's wagers, integer cents. The last test is the
reviewer's attack as device lines through `pitlog ingest`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from cli_support import run
from surveillance_pit import LEFT, MIDDLE, ORIGINAL, RIGHT, VOID, WON, Pit, opened
from surveillance_pit import card as card_of
from test_red_dog_rules import Ledger, Seqs
from test_red_dog_rules import _ledger as round_one_ledger

from events.reddog import model
from events.reddog.model import BurnReason, CardDrawn, Fault, Meaning

SPREAD, RAISES_CLOSED, THIRD_CARD = Meaning.SPREAD, Meaning.RAISES_CLOSED, Meaning.THIRD_CARD


def _nine_paid(pit: Pit, s: Seqs, racked: str = "3C QD 9H") -> None:
    """9H to the middle box decides for the players; seat 1's $10 paid at 1 to 1; racked."""
    s["third"] = pit.draw("9H", MIDDLE)
    pit.say(THIRD_CARD, 9)
    s["p1"] = pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack(racked)
    s["close"] = pit.close_shoe()


def _burn_after_raises_closed(round_no: int | None) -> Callable[[Path], tuple[Pit, Seqs]]:
    """The reviewer's F1: after "Raises closed" the dealer burns the 2S (the players would lose)
    face down, deals 9H to the middle box and pays. The burn carries `round_no`."""
    def build(tmp: Path) -> tuple[Pit, Seqs]:
        pit, s = opened(tmp), {}
        s.update(pit.open_spread())  # round 1: seat 1 $10 on 3C QD, "Raises closed"
        pit.round_no = round_no
        s["burn"] = pit.burn("2S", BurnReason.OTHER)
        pit.round_no = 1
        _nine_paid(pit, s)
        return pit, s
    return build


def _second_card_burned(tmp: Path) -> tuple[Pit, Seqs]:
    """A card burned between the first and the second card."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    s["w1"] = pit.wager(1, 1000)
    s["left"] = pit.draw("3C", LEFT)
    s["burn"] = pit.burn("4D", BurnReason.OTHER)
    pit.draw("QD", RIGHT)
    pit.say(SPREAD, 8)
    pit.say(RAISES_CLOSED)
    _nine_paid(pit, s)
    return pit, s


def _burns_where_the_rules_put_them(tmp: Path) -> tuple[Pit, Seqs]:
    """The new shoe's burn, then a new dealer's burn recorded with the next round's number
    before its first card, and one recorded with no round between rounds: none is flagged."""
    pit, s = opened(tmp), {}
    pit.play(1, "4S 9H 7C", {1: 1000})
    pit.tap_in("D2")
    pit.begin(2)
    pit.burn("KC", BurnReason.NEW_DEALER)
    pit.play(2, "5S JH 8C", {1: 1000})
    pit.tap_in("D3")
    pit.burn("KD", BurnReason.NEW_DEALER)
    pit.play(3, "6S QH 9C", {1: 1000})
    pit.close_shoe()
    return pit, s


def _void_after_a_losing_third_card(tmp: Path) -> tuple[Pit, Seqs]:
    """The reviewer's F3: 2S decides (the players lose), the dealer records RoundVoided and
    returns the wager."""
    pit, s = opened(tmp), {}
    s.update(pit.open_spread())
    s["third"] = pit.draw("2S", MIDDLE)
    pit.say(THIRD_CARD, 2)
    s["void"] = pit.emit(model.RoundVoided(reason="dealer's call"))
    s["p1"] = pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("3C QD 2S")
    pit.close_shoe()
    return pit, s


def _void_before_the_third_card(tmp: Path) -> tuple[Pit, Seqs]:
    """A round voided after "Raises closed", before any third card, on the dealer's word: no
    clause voids a round but a tie hand ((d)7, (d)10) or a dealing-shoe fault (13:69F-34.16(n)
    by analogy), so the void voids nothing and is flagged; the wager returned before any
    decision is SETTLED_BEFORE_DECISION."""
    pit, s = opened(tmp), {}
    s.update(pit.open_spread())
    s["void"] = pit.emit(model.RoundVoided(reason="dealer's call"))
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("3C QD")
    pit.close_shoe()
    return pit, s


def _void_after_a_shoe_jam(tmp: Path) -> tuple[Pit, Seqs]:
    """13:69F-34.16(n) by analogy: the dealing shoe jams after the first card, the round is
    voided, the wager returned, the card racked and the shoe closed: nothing is flagged."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("3C", LEFT)
    pit.emit(model.DeviceFaulted(device_id="SHOE-1", fault=Fault.SHOE_JAM, detail="stopped"),
             actor="SHOE-1")
    pit.emit(model.RoundVoided(reason="dealing shoe jammed"))
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("3C")
    pit.close_shoe()
    return pit, s


def _void_on_a_pair_tie(tmp: Path) -> tuple[Pit, Seqs]:
    """13:47-20.31(d)10: 7S 7H 9D is a tie hand, void anyway; a RoundVoided says the same."""
    pit, s = opened(tmp), {}
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("7S", LEFT)
    pit.draw("7H", RIGHT)
    pit.say(Meaning.PAIR)
    pit.draw("9D", MIDDLE)
    pit.say(Meaning.NO_THREE_OF_A_KIND)
    pit.emit(model.RoundVoided(reason="tie hand"))
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.rack("7S 7H 9D")
    pit.close_shoe()
    return pit, s


def _card_with_no_round_hides_the_third_card(tmp: Path) -> tuple[Pit, Seqs]:
    """The reviewer's F4: after "Raises closed" the losing 2S is recorded with no round, 9H to
    the middle box decides in the views, and the dealer pays."""
    pit, s = opened(tmp), {}
    s.update(pit.open_spread())
    pit.round_no = None
    s["hidden"] = pit.draw("2S", MIDDLE)
    pit.round_no = 1
    _nine_paid(pit, s)
    return pit, s


def _card_from_a_closed_shoe(tmp: Path) -> tuple[Pit, Seqs]:
    """A card dealt to round 2 of shoe S1 after S1 was closed."""
    pit, s = opened(tmp), {}
    pit.play(1, "4S 9H 7C", {1: 1000})
    s["closed"] = pit.close_shoe()
    pit.begin(2)
    s["late"] = pit.draw("5D", LEFT)
    return pit, s


def _card_drawn_twice(tmp: Path) -> tuple[Pit, Seqs]:
    """The left card's event recorded twice with one event id (a device line re-sent), in a
    one-deck shoe: one card, so only DUPLICATE_EVENT."""
    pit, s = opened(tmp, decks=1), {}
    pit.begin(1)
    pit.wager(1, 1000)
    c = card_of("4S")
    pit.tampered("duplicate", CardDrawn(rank=c.rank, suit=c.suit, face_up=True,
                                        destination=LEFT))
    s["copy"] = pit.recorder.heads[pit.table_id].seq
    s["left"] = s["copy"] - 1
    pit.draw("QD", RIGHT)
    pit.say(SPREAD, 7)
    pit.say(RAISES_CLOSED)
    _nine_paid(pit, s, "4S QD 9H")
    return pit, s


OK_WON = ("OK", "WON", 1000, 0, 0)
IRREGULAR_WON = ("IRREGULAR_ROUND", "WON", 1000, 0, 0)
CASES: dict[str, tuple[Callable[[Path], tuple[Pit, Seqs]],
                       list[tuple[str, int | None, list[str]]], Ledger]] = {
    "burn_after_raises_closed": (
        _burn_after_raises_closed(1), [("BURN_DURING_ROUND", 1, ["left", "burn"])],
        {(1, "ORIGINAL"): IRREGULAR_WON}),
    "burn_with_no_round_after_raises_closed": (
        _burn_after_raises_closed(None), [("BURN_DURING_ROUND", 1, ["left", "burn"])],
        {(1, "ORIGINAL"): IRREGULAR_WON}),
    "second_card_burned": (
        _second_card_burned, [("BURN_DURING_ROUND", 1, ["left", "burn"])],
        {(1, "ORIGINAL"): IRREGULAR_WON}),
    "burns_at_a_new_shoe_and_a_new_dealer": (
        _burns_where_the_rules_put_them, [], {(1, "ORIGINAL"): OK_WON}),
    "void_after_a_losing_third_card": (
        _void_after_a_losing_third_card,
        [("ROUND_VOIDED_WITHOUT_CAUSE", 1, ["third", "void"]),
         ("WRONG_SETTLEMENT", 1, ["w1", "p1"])],
        {(1, "ORIGINAL"): ("WRONG_OUTCOME", "LOST", 0, 1000, 0)}),
    "void_before_the_third_card_without_cause": (
        _void_before_the_third_card, [("ROUND_VOIDED_WITHOUT_CAUSE", 1, ["void"])],
        {(1, "ORIGINAL"): ("SETTLED_BEFORE_DECISION", None, 0, 0, 0)}),
    "void_after_a_shoe_jam": (
        _void_after_a_shoe_jam, [], {(1, "ORIGINAL"): ("OK", "VOID", 0, 0, 1000)}),
    "void_on_a_pair_tie": (
        _void_on_a_pair_tie, [], {(1, "ORIGINAL"): ("OK", "VOID", 0, 0, 1000)}),
    "card_with_no_round_hides_the_third_card": (
        _card_with_no_round_hides_the_third_card,
        [("CARD_OUTSIDE_ROUND", 1, ["hidden"]),
         # (d)15: the 2S left the shoe and was never racked; no round's rack check saw it
         ("CARD_UNACCOUNTED", None, ["hidden", "close"])], {(1, "ORIGINAL"): IRREGULAR_WON}),
    "card_from_a_closed_shoe": (
        _card_from_a_closed_shoe, [("CARD_OUTSIDE_ROUND", 2, ["closed", "late"])],
        {(1, "ORIGINAL"): OK_WON}),
    "card_event_recorded_twice": (
        _card_drawn_twice, [("DUPLICATE_EVENT", 1, ["left", "copy"])], {(1, "ORIGINAL"): OK_WON}),
}


@pytest.mark.parametrize("name", CASES)
def test_each_event_out_of_place_raises_its_code_and_the_ledger_does_not_confirm_it(
        tmp_path: Path, name: str) -> None:
    build, found, ledger = CASES[name]
    pit, seqs = build(tmp_path)
    expected = sorted((code, "T01", "S1", round_no, sorted(seqs[n] for n in names))
                      for code, round_no, names in found)
    assert pit.judge() == expected
    assert round_one_ledger(pit.folder / "pitlog.duckdb") == ledger


def test_the_burn_and_the_void_are_explained_with_their_clause(tmp_path: Path) -> None:
    pit, _ = _burn_after_raises_closed(1)(tmp_path / "burn")
    (burn,) = pit.anomalies()
    assert (burn["severity"], burn["rule"]) == ("high", "13:47-20.31(d)1; 13:69F-6.4")
    assert burn["explanation"] == (
        '2S was burned face down in round 1 after "Raises closed", where the third card is '
        "dealt: a card is burned only after a new deck is loaded or when a new dealer arrives, "
        "before a round")
    pit, _ = _void_after_a_losing_third_card(tmp_path / "void")
    (void,) = [a for a in pit.anomalies() if a["code"] == "ROUND_VOIDED_WITHOUT_CAUSE"]
    assert void["severity"] == "high"
    assert void["explanation"].startswith(
        "Round 1 was voided (\"dealer's call\") after the third card 2S had decided it (3C and "
        "QD, spread 8: players lose)")
    with duckdb.connect(str(pit.folder / "pitlog.duckdb"), read_only=True) as con:
        assert con.execute("SELECT voided, outcome FROM rounds").fetchall() == [(False, "lost")]


def _line(n: int, type_: str, round_no: int | None, **fields: object) -> str:
    return json.dumps({"type": type_, "table": "T07", "shoe": "T07-S1", "round": round_no,
                       "seq": n, "at": f"2026-11-28T21:{n // 60:02d}:{n % 60:02d}.000Z",
                       "actor": "TERM-7", **fields})


def test_the_reviewers_attacks_reproduced_through_pitlog_ingest(tmp_path: Path) -> None:
    """Device lines through `pitlog ingest`, `pitlog project`, `pitlog anomalies`. Round 1:
    3C QD, "Raises closed", 2S burned, 9H paid. Round 2: 3C QD, 2S decides, RoundVoided, the
    wager returned. Round 3: 3C QD, "Raises closed", 2S recorded with no round, 9H paid."""
    lines: list[str] = []

    def add(type_: str, round_no: int | None, **fields: object) -> int:
        lines.append(_line(len(lines) + 1, type_, round_no, **fields))
        return len(lines)

    def drawn(label: str, box: str, round_no: int | None) -> int:
        c = card_of(label)
        return add("CardDrawn", round_no, rank=c.rank, suit=c.suit.value, face_up=True,
                   destination=box)

    def racked(labels: str, round_no: int) -> None:
        add("CardsRacked", round_no, cards=[{"rank": card_of(x).rank,
                                             "suit": card_of(x).suit.value}
                                            for x in labels.split()])

    add("TableOpened", None, shoe=None, profile="nj-casino")
    add("DealerTappedIn", None, shoe=None, dealer_id="D1")
    add("CardsLoaded", None, decks=6)
    add("CardBurned", None, rank=13, suit="C", reason="NEW_SHOE")
    seqs: dict[str, int] = {}
    for rn in (1, 2, 3):
        seqs[f"w{rn}"] = add("WagerPlaced", rn, seat=1, area=1, player_id="P1",
                             amount_cents=2500)
        seqs[f"l{rn}"] = drawn("3C", "LEFT", rn)
        drawn("QD", "RIGHT", rn)
        add("Announced", rn, phrase="Spread 8", meaning="SPREAD", value=8)
        add("Announced", rn, phrase="Raises closed", meaning="RAISES_CLOSED")
        if rn == 1:
            seqs["burn"] = add("CardBurned", 1, rank=2, suit="S", reason="OTHER")
        elif rn == 3:
            seqs["hidden"] = drawn("2S", "MIDDLE", None)
        if rn == 2:
            seqs["third"] = drawn("2S", "MIDDLE", 2)
            add("Announced", 2, phrase="2", meaning="THIRD_CARD", value=2)
            seqs["void"] = add("RoundVoided", 2, reason="dealer's call")
            seqs["p2"] = add("WagerSettled", 2, seat=1, area=1, wager_kind="ORIGINAL",
                             outcome="VOID", amount_cents=2500)
            racked("3C QD 2S", 2)
            continue
        drawn("9H", "MIDDLE", rn)
        add("Announced", rn, phrase="9", meaning="THIRD_CARD", value=9)
        add("WagerSettled", rn, seat=1, area=1, wager_kind="ORIGINAL", outcome="WON",
            amount_cents=2500, odds=1)
        racked("3C QD 9H", rn)
    seqs["close"] = add("ShoeClosed", None, cards_remaining=300)
    feed = tmp_path / "floor.jsonl"
    feed.write_text("\n".join(lines) + "\n")
    log, db = tmp_path / "log", tmp_path / "pitlog.duckdb"
    ingested = run("ingest", str(feed), "--log", str(log))
    assert ingested.returncode == 0, ingested.stdout + ingested.stderr
    assert run("project", "--log", str(log), "--db", str(db)).returncode == 0
    found = run("anomalies", "--db", str(db), "--no-statistics", "--format", "json")
    assert found.returncode == 0, found.stderr
    assert sorted((a["code"], a["round_no"], a["seqs"]) for a in json.loads(found.stdout)) == [
        ("BURN_DURING_ROUND", 1, [seqs["l1"], seqs["burn"]]),
        ("CARD_OUTSIDE_ROUND", 3, [seqs["hidden"]]),
        # (d)15: the 2S with no round never reached the rack before the shoe closed
        ("CARD_UNACCOUNTED", None, [seqs["hidden"], seqs["close"]]),
        ("ROUND_VOIDED_WITHOUT_CAUSE", 2, [seqs["third"], seqs["void"]]),
        ("WRONG_SETTLEMENT", 2, [seqs["w2"], seqs["p2"]])]
    with duckdb.connect(str(db), read_only=True) as con:
        ledger = con.execute("SELECT round_no, status, expected_outcome FROM ledger "
                             "ORDER BY round_no").fetchall()
    assert ledger == [(1, "IRREGULAR_ROUND", "WON"), (2, "WRONG_OUTCOME", "LOST"),
                      (3, "IRREGULAR_ROUND", "WON")]
    shown = run("dispute", "--db", str(db), "--table", "T07", "--round", "T07-S1:2",
                "--format", "json")
    assert shown.returncode == 0, shown.stderr
    sections = json.loads(shown.stdout)
    (head,) = [r for r in sections if r["section"] == "round"]
    assert (head["players_result"], head["voided"]) == ("lost", False)
    assert {r["code"] for r in sections if r["section"] == "anomaly"} == {
        "ROUND_VOIDED_WITHOUT_CAUSE", "WRONG_SETTLEMENT"}

"""Every card out of the shoe is counted once and reaches the rack, wherever and however it came
out: a card dealt with no round, a card found face up and put in the rack, a card for another
round dealt inside a round, a card found face up where no card may come out, and a card event
recorded twice (the dispute and the replay read the cards once).

Each test is a hand-made table (real Recorder, real embedded log, real DuckDB) judged by the real
views: the exact anomalies (code, round and the seqs that prove them, so no other code is raised)
and the ledger's verdict on the round's wagers, integer cents.
"""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path

import duckdb
import pytest
from surveillance_pit import MIDDLE, ORIGINAL, WON, Pit, opened
from test_out_of_place import _card_drawn_twice

from events.reddog import model
from events.reddog.model import Box, BurnReason, Meaning, Suit
from projections.dispute import dispute
from projections.queries import rows
from projections.replay import replay_shoe

RACK = Box.DISCARD_RACK
Seqs = dict[str, int]
OK_WON = ("OK", "WON", 1000, 0, 0)


def _found(pit: Pit, s: Seqs) -> list[tuple[str, int | None, list[int]]]:
    return sorted(((code, round_no, seqs) for code, _t, _s, round_no, seqs in pit.judge()),
                  key=lambda f: (f[0], f[1] or 0, f[2]))


def _ledger(pit: Pit) -> dict[int, tuple[object, ...]]:
    with duckdb.connect(str(pit.folder / "pitlog.duckdb"), read_only=True) as con:
        got = con.execute(
            "SELECT round_no, status, expected_outcome, expected_paid_cents, "
            "expected_collected_cents, expected_returned_cents FROM ledger "
            "WHERE seat = 1 AND wager_kind = 'ORIGINAL' ORDER BY round_no").fetchall()
    return {r: tuple(rest) for r, *rest in got}


def _nine_paid(pit: Pit, s: Seqs, racked: str = "3C QD 9H") -> None:
    """9H to the middle box decides for the players; $10 paid at 1 to 1; racked; shoe closed."""
    s["third"] = pit.draw("9H", MIDDLE)
    pit.say(Meaning.THIRD_CARD, 9)
    s["p1"] = pit.settle(1, ORIGINAL, WON, 1000, 1)
    s["rack"] = pit.rack(racked)
    s["close"] = pit.close_shoe()


# --- a card with no round must reach the rack (13:47-20.31(d)15) -----------------------------

def _loose_card_between_rounds(tmp: Path, *, racked: bool) -> tuple[Pit, Seqs]:
    """Round 1 by the rules; then 5D is dealt to the discard rack with no round (racked by a
    CardsRacked with no round when `racked`); round 2 by the rules; the shoe is closed."""
    pit, s = opened(tmp), {}
    pit.play(1, "4S 9H 7C", {1: 1000})
    s["loose"] = pit.draw("5D", RACK)
    if racked:
        pit.rack("5D")
    pit.play(2, "5S JH 8C", {1: 1000})
    s["close"] = pit.close_shoe()
    return pit, s


def test_a_card_with_no_round_never_racked_is_unaccounted(tmp_path: Path) -> None:
    """Between two rounds 5D leaves the shoe recorded with no round and never reaches the rack:
    CARD_OUTSIDE_ROUND (no round) and, once the shoe is closed without it, CARD_UNACCOUNTED
    (the card and the shoe's closing prove it). The rounds themselves are by the rules."""
    pit, s = _loose_card_between_rounds(tmp_path, racked=False)
    assert _found(pit, s) == [("CARD_OUTSIDE_ROUND", None, [s["loose"]]),
                              ("CARD_UNACCOUNTED", None, [s["loose"], s["close"]])]
    assert _ledger(pit) == {1: OK_WON, 2: OK_WON}


def test_a_card_with_no_round_that_was_racked_is_accounted_for(tmp_path: Path) -> None:
    """The same 5D, racked (a CardsRacked with no round): out of place, but in the rack."""
    pit, s = _loose_card_between_rounds(tmp_path, racked=True)
    assert _found(pit, s) == [("CARD_OUTSIDE_ROUND", None, [s["loose"]])]
    assert _ledger(pit) == {1: OK_WON, 2: OK_WON}


def test_a_card_with_no_round_racked_with_a_round_is_accounted_for(tmp_path: Path) -> None:
    """The reviewer's F4 card (2S recorded with no round after "Raises closed"), racked with the
    round's cards: in the rack, so not CARD_UNACCOUNTED; the round's rack holds a card its round
    did not deal (DISCARD_RACK_ORDER)."""
    pit = opened(tmp_path)
    s = pit.open_spread()  # seat 1 $10 on 3C QD, "spread 8", "Raises closed"
    pit.round_no = None
    s["hidden"] = pit.draw("2S", MIDDLE)
    pit.round_no = 1
    _nine_paid(pit, s, "3C QD 2S 9H")
    assert _found(pit, s) == [("CARD_OUTSIDE_ROUND", 1, [s["hidden"]]),
                              ("DISCARD_RACK_ORDER", 1, [s["rack"]])]
    assert _ledger(pit) == {1: ("IRREGULAR_ROUND", "WON", 1000, 0, 0)}


# --- a card dealt for round 0 is a card dealt with no round (13:47-20.31(d)5, (d)15) -----------

# Round 0's cards, each (card, box): two consecutive cards; a pair on the wrong boxes; a pair and
# its third card. As a hand of play they would owe words, boxes and a third card.
ROUND_0_CARDS = {
    "two_cards": [("7C", Box.LEFT), ("8D", Box.RIGHT)],
    "pair_on_the_wrong_boxes": [("7C", Box.RIGHT), ("7D", Box.LEFT)],
    "pair_and_a_third_card": [("7C", Box.LEFT), ("7D", Box.RIGHT), ("KS", MIDDLE)],
}


@pytest.mark.parametrize("rack", ["never", "with_no_round", "for_round_0"])
@pytest.mark.parametrize("cards", ROUND_0_CARDS)
def test_cards_dealt_for_round_0_are_cards_with_no_round(tmp_path: Path, cards: str,
                                                          rack: str) -> None:
    """Round 0 is no round of play ("To begin each round of play", (d)5; the recorder accepts
    it, limits.ROUND_BOUNDS): between rounds 1 and 2 a device records cards for round 0, with a
    wager for round 0 placed after its first card and handed back whole. Each card is
    CARD_OUTSIDE_ROUND (no round), and, when never racked before the shoe is closed,
    CARD_UNACCOUNTED; racked with no round or for round 0, it is in the rack. Nothing judges
    round 0 as a hand: no WRONG_BOX, WRONG_ANNOUNCEMENT, PAIR_WITHOUT_THIRD_CARD,
    DISCARD_RACK_ORDER or LATE_WAGER (all raised before), and rounds 1 and 2 stay clean."""
    pit, s = opened(tmp_path), {}
    pit.play(1, "4S 9H 7C", {1: 1000})
    pit.begin(0)
    dealt = [pit.draw(label, box) for label, box in ROUND_0_CARDS[cards]]
    pit.wager(2, 500)
    pit.settle(2, ORIGINAL, model.SettledAs.VOID, 500)
    pit.end()
    labels = " ".join(label for label, _ in ROUND_0_CARDS[cards])
    if rack == "with_no_round":
        pit.rack(labels)
    pit.play(2, "5S JH 8C", {1: 1000})
    if rack == "for_round_0":
        pit.begin(0)
        pit.rack(labels)
        pit.end()
    s["close"] = pit.close_shoe()
    expected = [("CARD_OUTSIDE_ROUND", None, [seq]) for seq in dealt]
    if rack == "never":
        expected += [("CARD_UNACCOUNTED", None, [seq, s["close"]]) for seq in dealt]
    assert _found(pit, s) == expected
    assert _ledger(pit) == {1: OK_WON, 2: OK_WON}
    if rack == "never":
        said = sorted(a["explanation"] for a in pit.anomalies() if a["code"] == "CARD_UNACCOUNTED")
        assert said == sorted(f"{label} left shoe S1 for round 0, which is no round and never "
                              "reached the rack before the shoe was closed"
                              for label, _ in ROUND_0_CARDS[cards])


# --- a card found face up, then put in the rack, is one card (13:47-20.31(g)1) ----------------

def test_a_card_found_face_up_then_racked_is_one_card(tmp_path: Path) -> None:
    """One deck. After "Raises closed" 8H is found face up in the shoe and the dealer puts it in
    the discard rack (a CardDrawn of the same card to the rack), then deals 9H to the middle
    box. (g)1: the face-up card "shall not be used in the game and shall be placed in
    the discard rack": one physical card, no card of the round. Before, it was counted twice
    (EXTRA_CARD in a one-deck shoe) and its CardDrawn decided the round (THIRD_CARD_DIVERTED,
    CARD_UNACCOUNTED). Now nothing is flagged and 9H decides."""
    pit = opened(tmp_path, decks=1)
    s = pit.open_spread()
    s["up"] = pit.emit(model.CardFoundFaceUp(rank=8, suit=Suit.HEARTS))
    s["racked"] = pit.draw("8H", RACK)
    _nine_paid(pit, s)
    assert _found(pit, s) == []
    assert _ledger(pit) == {1: OK_WON}
    db = pit.folder / "pitlog.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT middle_card, third_card_seq, card_seqs, outcome FROM rounds"
                           ).fetchall() == [
                               ("9H", s["third"], [s["left"], s["left"] + 1, s["third"]], "won")]
        assert con.execute("SELECT dealt, racked_in_dealing_order FROM hands").fetchall() == [
            ("3C QD 9H", True)]
        d = dispute(con, "T01", shoe="S1", round_no=1)
    assert [(c["card"], c["box"]) for c in d.cards] == [
        ("3C", "left"), ("QD", "right"), ("9H", "middle"), ("8H", "found face up")]


def test_a_card_found_face_up_then_dealt_to_a_box_is_still_used(tmp_path: Path) -> None:
    """The same 8H dealt to the middle box instead: FACE_UP_CARD_USED, it is the third card
    (one card, no EXTRA_CARD in the one-deck shoe), and it wins."""
    pit = opened(tmp_path, decks=1)
    s = pit.open_spread()
    s["up"] = pit.emit(model.CardFoundFaceUp(rank=8, suit=Suit.HEARTS))
    s["used"] = pit.draw("8H", MIDDLE)
    pit.say(Meaning.THIRD_CARD, 8)
    pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack("3C QD 8H")
    pit.close_shoe()
    assert _found(pit, s) == [("FACE_UP_CARD_USED", 1, [s["up"], s["used"]])]
    assert _ledger(pit) == {1: OK_WON}


# --- a misplaced card cannot hide a burn (13:47-20.31(d)1) -------------------------------------

def test_a_card_for_another_round_does_not_hide_a_later_burn(tmp_path: Path) -> None:
    """After "Raises closed" a 4D recorded for round 5 goes to the rack, then the losing 2S is
    burned (recorded in round 1) and 9H is paid. The round-5 card made a span of its own, the
    latest before the burn, and the burn hid behind it: now the burn is judged against every
    round it lies inside, its own first: BURN_DURING_ROUND in round 1 (its first card and the
    burn). The 9H, dealt for round 1 after round 5's card, is CARD_OUTSIDE_ROUND; the rack and
    round 5's lone card are judged as before."""
    pit = opened(tmp_path)
    s = pit.open_spread()  # seat 1 $10 on 3C QD, "spread 8", "Raises closed"
    pit.round_no = 5
    s["misplaced"] = pit.draw("4D", RACK)
    pit.round_no = 1
    s["burn"] = pit.burn("2S", BurnReason.OTHER)
    _nine_paid(pit, s, "3C QD 4D 9H")
    assert _found(pit, s) == [
        ("BURN_DURING_ROUND", 1, [s["left"], s["burn"]]),
        ("CARD_OUTSIDE_ROUND", 1, [s["misplaced"], s["third"]]),
        ("DISCARD_RACK_ORDER", 1, [s["rack"]]),
        ("DISCARD_RACK_ORDER", 5, [s["misplaced"]]),
        ("WRONG_BOX", 5, [s["misplaced"]]),
    ]
    assert _ledger(pit) == {1: ("IRREGULAR_ROUND", "WON", 1000, 0, 0)}


# --- a card found face up is held to the places of any card out of the shoe --------------------

def test_a_card_found_face_up_from_a_closed_shoe_is_out_of_place(tmp_path: Path) -> None:
    pit, s = opened(tmp_path), {}
    pit.play(1, "4S 9H 7C", {1: 1000})
    s["close"] = pit.close_shoe()
    s["up"] = pit.emit(model.CardFoundFaceUp(rank=8, suit=Suit.HEARTS))
    pit.tap_in("D2")  # the table goes on: the shoe is closed
    (row,) = pit.anomalies()
    assert (row["code"], row["round_no"], row["seqs"]) == (
        "CARD_OUTSIDE_ROUND", None, [s["close"], s["up"]])
    assert row["explanation"] == "8H was found face up in the shoe from shoe S1 after it was closed"
    assert _ledger(pit) == {1: OK_WON}


def test_a_card_found_face_up_for_a_concluded_round_is_out_of_place(tmp_path: Path) -> None:
    """8H found face up recorded for round 1 after round 1's cards were racked."""
    pit, s = opened(tmp_path), {}
    s.update({k: v for k, v in pit.play(1, "4S 9H 7C", {1: 1000}).items() if k == "rack"})
    pit.round_no = 1
    s["up"] = pit.emit(model.CardFoundFaceUp(rank=8, suit=Suit.HEARTS))
    pit.close_shoe()
    assert _found(pit, s) == [("CARD_OUTSIDE_ROUND", 1, [s["rack"], s["up"]])]
    assert _ledger(pit) == {1: OK_WON}


def test_a_card_found_face_up_between_rounds_with_no_round_is_in_place(tmp_path: Path) -> None:
    """(g)1 at its plainest: found between rounds, no round recorded, into the rack."""
    pit, s = opened(tmp_path), {}
    pit.play(1, "4S 9H 7C", {1: 1000})
    pit.emit(model.CardFoundFaceUp(rank=8, suit=Suit.HEARTS))
    pit.play(2, "5S JH 8C", {1: 1000})
    pit.close_shoe()
    assert _found(pit, s) == []
    assert _ledger(pit) == {1: OK_WON, 2: OK_WON}


# --- the dispute and the replay read each card once ----------------------------------------------

def test_a_card_recorded_twice_shows_once_in_the_dispute_and_is_marked_in_the_replay(
        tmp_path: Path) -> None:
    """4S's CardDrawn recorded twice with one event id in a one-deck shoe: the dispute lists
    4S once, with its first copy's seq; the replay shows the log (both copies), the copy marked
    as the same card."""
    pit, s = _card_drawn_twice(tmp_path)
    db = pit.project()
    with duckdb.connect(str(db), read_only=True) as con:
        d = dispute(con, "T01", shoe="S1", round_no=1)
        replay = replay_shoe(con, "S1", "T01")
    assert [(c["card"], c["drawn_seq"], c["note"]) for c in d.cards] == [
        ("4S", s["left"], ""), ("QD", s["left"] + 2, ""), ("9H", s["third"], "")]
    roles = {e["seq"]: e["role"] for e in replay.events}
    assert roles[s["copy"]] == ("recorded again (the event id of an earlier card event): "
                                "one card, counted once")
    assert roles[s["left"]] is None  # the first copy: the first card, on its box


def test_a_burn_between_a_loose_card_in_error_and_the_same_card_drawn_parts_them(
        tmp_path: Path) -> None:
    """Between two rounds, with no round: 5D drawn in error, a burn, then 5D drawn to the rack;
    one 5D racked (a CardsRacked with no round). ONE CARD pairs a card drawn in error with the
    NEXT card out of the shoe ((g)2; sql/macros.sql, as round_cards and the shoes' cards_out
    read it): the burn came out between, so these are two physical cards (the 5D in error was
    already out when the burn left the shoe) and only one reached the rack: CARD_UNACCOUNTED
    for the second. Leaving burns out of a loose card's neighbours paired them as one card."""
    pit, s = opened(tmp_path), {}
    pit.play(1, "4S 9H 7C", {1: 1000})
    s["error"] = pit.emit(model.CardDrawnInError(rank=5, suit=Suit.DIAMONDS))
    s["burn"] = pit.burn("2S", BurnReason.OTHER)
    s["drawn"] = pit.draw("5D", RACK)
    pit.rack("5D")
    pit.play(2, "5S JH 8C", {1: 1000})
    s["close"] = pit.close_shoe()
    # Two cards out with no round, the first not used (DRAWN_IN_ERROR_NOT_USED: the burn is the
    # next card out), as every other rule already saw them; one of them unracked.
    assert _found(pit, s) == [("CARD_OUTSIDE_ROUND", None, [s["error"]]),
                              ("CARD_OUTSIDE_ROUND", None, [s["drawn"]]),
                              ("CARD_UNACCOUNTED", None, [s["drawn"], s["close"]]),
                              ("DRAWN_IN_ERROR_NOT_USED", None, [s["error"], s["burn"]])]
    assert _ledger(pit) == {1: OK_WON, 2: OK_WON}


def test_a_card_event_id_used_again_in_a_later_round_is_read_as_the_views_read_it(
        tmp_path: Path) -> None:
    """Round 2's left card recorded with the event id of round 1's left card (a device that
    used an id again). Every card view keeps an id's first copy (sql/macros.sql
    card_events_of), so the rounds view and the ledger do not count round 2's 5C. A dispute
    reads a round in its shoe's context (projections/dispute_sql.py), so its round and its
    settlements are the views' rows, and its cards do not deal the 5C either; read in the
    round's own seqs, it took 5C as round 2's left card."""
    pit = opened(tmp_path, decks=1)
    s1 = pit.play(1, "4S QD 9H", {1: 1000})
    minted, calls = pit.recorder.new_id, itertools.count()
    shared = str(uuid.UUID(int=s1["left"]))  # recorder_for: id n at seq n

    def left_card_reuses_the_id() -> str:  # round 2's ids: its wager's, then its left card's
        return shared if next(calls) == 1 else minted()

    pit.recorder.new_id = left_card_reuses_the_id
    left2 = pit.play(2, "5C JD 8S", {1: 1000})["left"]
    pit.recorder.new_id = minted
    pit.close_shoe()
    db = pit.project()
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT list(seq ORDER BY seq) FROM events WHERE event_id = "
                           "(SELECT event_id FROM events WHERE seq = $s)",
                           {"s": left2}).fetchall() == [([s1["left"], left2],)]
        d = dispute(con, "T01", shoe="S1", round_no=2)
        view = rows(con, "SELECT * FROM rounds WHERE round_no = 2")[0]
        ledger = con.execute("SELECT seat, wager_kind, status FROM ledger WHERE round_no = 2 "
                             "ORDER BY seat, area, wager_kind").fetchall()
    assert (d.round["left_card"], d.round["right_card"], d.round["third_card"],
            d.round["kind"], d.round["spread"]) == (
        view["left_card"], view["right_card"], view["middle_card"], view["kind"],
        view["spread"])
    assert d.round["left_card"] != "5C"
    assert [(s["seat"], s["wager_kind"], s["status"]) for s in d.settlements] == ledger
    assert [c["drawn_seq"] for c in d.cards if c["card"] == "5C"] == [None]  # racked, not dealt

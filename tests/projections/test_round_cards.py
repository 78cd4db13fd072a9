"""Which cards make a round (sql/macros.sql, round_cards): every card out of the shoe, in game order
(occurred_at, then seq), wherever it went. The first two out are the spread, the deciding third
card is counted from them, and a box is judged only by the box codes (WRONG_BOX,
THIRD_CARD_DIVERTED, THIRD_CARD_REDRAWN). Each test is one finding of the outside review of
issue 13: the events as recorded (hand-built through the real Recorder, or device lines through
`pitlog ingest`), the exact anomalies with the seqs that prove them (so no other is raised), the
ledger's verdict in integer cents, and the card the rounds view and the dispute say decided.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from surveillance_pit import EVENING, LEFT, MIDDLE, ORIGINAL, RIGHT, WON, Pit, opened
from table_builder import project_device_lines

from events.reddog import model
from events.reddog.model import Box, Meaning, Suit
from projections.anomalies import AnomalyFilter, list_anomalies
from projections.dispute import dispute

RACK = Box.DISCARD_RACK
PAIR, SPREAD, RAISES_CLOSED = Meaning.PAIR, Meaning.SPREAD, Meaning.RAISES_CLOSED
THIRD_CARD, TRIPS = Meaning.THIRD_CARD, Meaning.THREE_OF_A_KIND
Seqs = dict[str, int]


def _judged(pit: Pit, s: Seqs) -> list[tuple[str, list[int]]]:
    return [(code, seqs) for code, _t, _s, _r, seqs in pit.judge()]


def _expect(s: Seqs, *found: tuple[str, list[str]]) -> list[tuple[str, list[int]]]:
    return sorted((code, sorted(s[n] for n in names)) for code, names in found)


def _round(db: Path, round_no: int = 1) -> tuple[object, ...]:
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "SELECT left_card, right_card, kind, spread, middle_card, third_card_seq, "
            "third_card_box, outcome FROM rounds WHERE round_no = $r", {"r": round_no}).fetchone()
    assert row is not None
    return row


def _ledger(db: Path, round_no: int = 1) -> dict[tuple[int, str], tuple[object, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute(
            "SELECT seat, wager_kind, status, expected_outcome, expected_paid_cents, "
            "expected_collected_cents, expected_returned_cents FROM ledger "
            "WHERE round_no = $r", {"r": round_no}).fetchall()
    return {(seat, kind): tuple(rest) for seat, kind, *rest in got}


def _dispute_roles(db: Path, round_no: int = 1) -> dict[str, str | None]:
    with duckdb.connect(str(db), read_only=True) as con:
        d = dispute(con, "T01", shoe="S1", round_no=round_no)
    return {c["card"]: c["role"] for c in d.cards}


# --- F2: a card racked between the first two is the second card ---------------------------------

def test_a_card_racked_between_the_first_two_is_the_second_card(tmp_path: Path) -> None:
    """7S, then 3C straight to the discard rack, then 7H to the right box: the dealer calls a
    pair and pays three of a kind on 7D. 13:47-20.31(d)5: the first and second cards are the
    first two out of the shoe, so the round is 7S 3C (spread 3), no "Raises closed" was said,
    and the third card out, 7H (on the right box), decides: it matches an end, the player loses.
    """
    pit, s = opened(tmp_path, decks=6), {}
    pit.begin(1)
    s["w1"] = pit.wager(1, 1000)
    s["first"] = pit.draw("7S", LEFT)
    s["racked"] = pit.draw("3C", RACK)
    s["right"] = pit.draw("7H", RIGHT)
    s["pair"] = pit.say(PAIR)
    s["middle"] = pit.draw("7D", MIDDLE)
    s["trips"] = pit.say(TRIPS)
    s["paid"] = pit.settle(1, ORIGINAL, WON, 11000, 11)
    pit.rack("7S 3C 7H 7D")
    pit.close_shoe()
    assert _judged(pit, s) == _expect(
        s,
        ("WRONG_BOX", ["first", "racked"]),          # (d)5: the second card went to the rack
        ("WRONG_ANNOUNCEMENT", ["pair"]),            # a spread called a pair
        ("WRONG_ANNOUNCEMENT", ["trips"]),           # "three of a kind" on a spread
        ("WRONG_ANNOUNCEMENT", ["right"]),           # the deciding card's value never said
        ("EARLY_THIRD_CARD", ["right"]),             # (g)3: no "Raises closed" before it
        ("EARLY_EXPOSURE_MISHANDLED", ["right"]),    # ... and it was used
        ("THIRD_CARD_DIVERTED", ["right", "middle"]),  # (d)13: it went to the right box
        ("WRONG_SETTLEMENT", ["w1", "paid"]),        # paid 11 to 1 on a losing round
    )
    db = pit.folder / "pitlog.duckdb"
    assert _round(db) == ("7S", "3C", "spread", 3, "7H", s["right"], "RIGHT", "lost")
    assert _ledger(db)[(1, "ORIGINAL")][1:] == ("LOST", 0, 1000, 0)
    roles = _dispute_roles(db)
    assert roles["3C"] == ("the second card out of the shoe, put on the discard rack instead "
                           "of the right box: it still counts (13:47-20.31(d)5)")
    assert roles["7H"].startswith("the deciding third card, diverted to the right box")
    assert roles["7D"].startswith("redrawn after the deciding third card")


# --- F5: a card drawn in error and not used still decides where (g)2 puts it ------------------

def test_a_card_drawn_in_error_decides_where_it_came_out(tmp_path: Path) -> None:
    """3C QD, "Raises closed"; 2S comes out drawn in error (a loser), and the dealer deals 9H to
    the middle box instead and pays. 13:47-20.31(g)2: "A card drawn in error without its face
    being exposed shall be used as though it were the next card from the shoe": the 2S is the
    third card and the players lose."""
    pit = opened(tmp_path)
    s = pit.open_spread()  # seat 1 $10 on 3C QD, "spread 8", "Raises closed"
    s["error"] = pit.emit(model.CardDrawnInError(rank=2, suit=Suit.SPADES))
    s["dealt"] = pit.draw("9H", MIDDLE)
    pit.say(THIRD_CARD, 9)
    s["paid"] = pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack("3C QD 2S 9H")
    pit.close_shoe()
    assert _judged(pit, s) == _expect(
        s, ("DRAWN_IN_ERROR_NOT_USED", ["error", "dealt"]), ("WRONG_SETTLEMENT", ["w1", "paid"]))
    db = pit.folder / "pitlog.duckdb"
    assert _round(db) == ("3C", "QD", "spread", 8, "2S", s["error"], None, "lost")
    assert _ledger(db)[(1, "ORIGINAL")] == ("WRONG_OUTCOME", "LOST", 0, 1000, 0)
    roles = _dispute_roles(db)
    assert roles["2S"] == ("the deciding third card, drawn in error: used as the next card, "
                           "it decides (13:47-20.31(g)2)")
    assert roles["9H"].startswith("redrawn after the deciding third card")


# --- F6: a card stacked on a box is still the card it was out of the shoe ----------------------

def test_a_second_card_stacked_on_the_left_box_is_the_second_card(tmp_path: Path) -> None:
    """5C to the left box, 6D on top of it (consecutive: a tie hand), then KH to the right box,
    "spread 7" and 9S paid as between. The first two out are 5C 6D: 13:47-20.31(d)7, every
    wager is void and no third card is drawn."""
    pit, s = opened(tmp_path), {}
    pit.begin(1)
    s["w1"] = pit.wager(1, 1000)
    s["first"] = pit.draw("5C", LEFT)
    s["stacked"] = pit.draw("6D", LEFT)
    s["right"] = pit.draw("KH", RIGHT)
    s["spread"] = pit.say(SPREAD, 7)
    s["closed"] = pit.say(RAISES_CLOSED)
    s["third"] = pit.draw("9S", MIDDLE)
    s["value"] = pit.say(THIRD_CARD, 9)
    s["paid"] = pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack("5C 6D KH 9S")
    pit.close_shoe()
    assert _judged(pit, s) == _expect(
        s,
        ("WRONG_BOX", ["first", "stacked"]),
        ("WRONG_ANNOUNCEMENT", ["spread"]),
        ("WRONG_ANNOUNCEMENT", ["closed"]),
        ("WRONG_ANNOUNCEMENT", ["value"]),
        ("THIRD_CARD_ON_CONSECUTIVE", ["right", "third"]),
        ("WRONG_SETTLEMENT", ["w1", "paid"]),
    )
    db = pit.folder / "pitlog.duckdb"
    assert _round(db) == ("5C", "6D", "consecutive", None, None, None, None, "void")
    assert _ledger(db)[(1, "ORIGINAL")] == ("WRONG_OUTCOME", "VOID", 0, 0, 1000)


def test_a_middle_card_before_the_right_card_is_the_second_card(tmp_path: Path) -> None:
    """3C to the left box, 8H to the middle box, QD to the right: the dealer calls spread 8 and
    pays 9S. The spread is 3C 8H (spread 4); QD came out before "Raises closed" ((g)3: an early
    third card, no choice offered) and 9S, the first card after it, decides: outside 3..8, lost.
    """
    pit, s = opened(tmp_path), {}
    pit.begin(1)
    s["w1"] = pit.wager(1, 1000)
    s["first"] = pit.draw("3C", LEFT)
    s["middle"] = pit.draw("8H", MIDDLE)
    s["right"] = pit.draw("QD", RIGHT)
    s["spread"] = pit.say(SPREAD, 8)
    s["closed"] = pit.say(RAISES_CLOSED)
    s["third"] = pit.draw("9S", MIDDLE)
    pit.say(THIRD_CARD, 9)
    s["paid"] = pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack("3C 8H QD 9S")
    pit.close_shoe()
    assert _judged(pit, s) == _expect(
        s,
        ("WRONG_BOX", ["first", "middle"]),
        ("WRONG_ANNOUNCEMENT", ["spread"]),
        ("EARLY_THIRD_CARD", ["right", "closed"]),
        ("EARLY_EXPOSURE_MISHANDLED", ["right", "third"]),
        ("WRONG_SETTLEMENT", ["w1", "paid"]),
    )
    db = pit.folder / "pitlog.duckdb"
    assert _round(db) == ("3C", "8H", "spread", 4, "9S", s["third"], "MIDDLE", "lost")
    assert _ledger(db)[(1, "ORIGINAL")] == ("WRONG_OUTCOME", "LOST", 0, 1000, 0)


# --- F7: a card drawn in error and then racked is one card ------------------------------------

def test_a_card_drawn_in_error_then_racked_is_one_card(tmp_path: Path) -> None:
    """One deck. After "Raises closed" 8H comes out drawn in error and the dealer puts it in the
    discard rack (a CardDrawn of the same card), then deals 9S to the middle box. The 8H is one
    card ((g)2: the next card; (d)15: racked once), so no CARD_UNACCOUNTED and no EXTRA_CARD; it
    is the deciding third card, put in the rack (THIRD_CARD_DIVERTED). Both win: the payment is
    right."""
    pit = opened(tmp_path, decks=1)
    s = pit.open_spread()
    s["error"] = pit.emit(model.CardDrawnInError(rank=8, suit=Suit.HEARTS))
    s["racked"] = pit.draw("8H", RACK)
    s["middle"] = pit.draw("9S", MIDDLE)
    pit.say(THIRD_CARD, 9)
    pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack("3C QD 8H 9S")
    pit.close_shoe()
    assert _judged(pit, s) == _expect(s, ("THIRD_CARD_DIVERTED", ["racked", "middle"]))
    db = pit.folder / "pitlog.duckdb"
    assert _round(db) == ("3C", "QD", "spread", 8, "8H", s["racked"], "DISCARD_RACK", "won")
    assert _ledger(db)[(1, "ORIGINAL")] == ("OK", "WON", 1000, 0, 0)


# --- F8: with no "Raises closed", the third card out decides, wherever it went -----------------

@pytest.mark.parametrize("box", [MIDDLE, RACK, LEFT])
def test_with_no_raises_closed_the_third_card_out_decides_wherever_it_went(
        tmp_path: Path, box: Box) -> None:
    """3C QD, "spread 8", no "Raises closed": 2S (a loser) comes out to `box`, then 9H to the
    middle box is announced and paid. Nothing discarded the 2S ((g)3 discards a card only in
    favour of one dealt after "Raises closed"), so it decides, whatever box it went to."""
    pit = opened(tmp_path)
    s = pit.open_spread(closed=False)
    s["exposed"] = pit.draw("2S", box)
    s["next"] = pit.draw("9H", MIDDLE)
    pit.say(THIRD_CARD, 9)
    s["paid"] = pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack("3C QD 2S 9H")
    pit.close_shoe()
    box_code = "THIRD_CARD_REDRAWN" if box is MIDDLE else "THIRD_CARD_DIVERTED"
    assert _judged(pit, s) == _expect(
        s,
        ("EARLY_THIRD_CARD", ["exposed"]),
        ("EARLY_EXPOSURE_MISHANDLED", ["exposed"]),
        (box_code, ["exposed", "next"]),
        ("WRONG_SETTLEMENT", ["w1", "paid"]),
    )
    db = pit.folder / "pitlog.duckdb"
    assert _round(db) == ("3C", "QD", "spread", 8, "2S", s["exposed"], box.value, "lost")
    assert _ledger(db)[(1, "ORIGINAL")] == ("WRONG_OUTCOME", "LOST", 0, 1000, 0)


# --- F9: two devices' lines out of time order are judged in game order --------------------------

def _line(kind: str, seq: int, second: int, actor: str, round_no: int | None = 1,
          **payload: object) -> dict[str, object]:
    at = (EVENING + timedelta(seconds=second)).isoformat().replace("+00:00", "Z")
    return {"type": kind, "table": "T01", "shoe": "S1", "round": round_no, "seq": seq,
            "at": at, "actor": actor, **payload}


def test_lines_from_two_devices_out_of_time_order_are_judged_in_game_order(
        tmp_path: Path) -> None:
    """A correct early exposure ((g)3): 9S exposed before "Raises closed", seat 1 voids and is
    refunded, seat 2 plays, "Raises closed", the new third card 8H. The card-reading shoe's two
    middle cards reach the log before the dealer terminal's choice, refund and "Raises closed"
    (a slow terminal): in log order the new third card would precede "Raises closed". In game
    order (occurred_at) the round is correct: EARLY_THIRD_CARD alone, and the ledger is right.
    """
    term, shoe = "TERM-1", "SHOE-1"
    lines = [
        _line("TableOpened", 1, 0, term, None, profile="nj-casino") | {"shoe": None},
        _line("DealerTappedIn", 2, 1, term, None, dealer_id="D1") | {"shoe": None},
        _line("CardsLoaded", 1, 2, shoe, None, decks=6),
        _line("CardBurned", 2, 3, shoe, None, rank=2, suit="C", reason="NEW_SHOE"),
        _line("WagerPlaced", 3, 4, term, seat=1, area=1, player_id="P1", amount_cents=1000),
        _line("WagerPlaced", 4, 5, term, seat=2, area=2, player_id="P2", amount_cents=1000),
        _line("CardDrawn", 3, 6, shoe, rank=3, suit="C", face_up=True, destination="LEFT"),
        _line("CardDrawn", 4, 7, shoe, rank=12, suit="D", face_up=True, destination="RIGHT"),
        _line("Announced", 5, 8, term, phrase="Spread 8", meaning="SPREAD", value=8),
        _line("CardDrawn", 5, 9, shoe, rank=9, suit="S", face_up=True, destination="MIDDLE"),
        # the shoe's next line arrives before the terminal's four (which happened before it)
        _line("CardDrawn", 6, 14, shoe, rank=8, suit="H", face_up=True, destination="MIDDLE"),
        _line("VoidOrPlayChosen", 6, 10, term, seat=1, area=1, choice="VOID"),
        _line("VoidOrPlayChosen", 7, 11, term, seat=2, area=2, choice="PLAY"),
        _line("WagerSettled", 8, 12, term, seat=1, area=1, wager_kind="ORIGINAL",
              outcome="VOID", amount_cents=1000),
        _line("Announced", 9, 13, term, phrase="Raises closed", meaning="RAISES_CLOSED"),
        _line("Announced", 10, 15, term, phrase="8", meaning="THIRD_CARD", value=8),
        _line("WagerSettled", 11, 16, term, seat=2, area=2, wager_kind="ORIGINAL",
              outcome="WON", amount_cents=1000, odds=1),
        _line("CardsRacked", 12, 17, term,
              cards=[{"rank": 3, "suit": "C"}, {"rank": 12, "suit": "D"},
                     {"rank": 9, "suit": "S"}, {"rank": 8, "suit": "H"}]),
        _line("ShoeClosed", 7, 18, shoe, None, cards_remaining=40),
    ]
    db = project_device_lines(lines, tmp_path)
    with duckdb.connect(str(db), read_only=True) as con:
        seq = dict(con.execute("SELECT seq, event_type FROM events").fetchall())
        by = {(t, s): q for q, t, s in con.execute(
            "SELECT seq, event_type, coalesce(CAST(rank AS VARCHAR), meaning, choice, '') "
            "FROM events").fetchall()}
        found = [(a["code"], a["seqs"]) for a in list_anomalies(con, AnomalyFilter())]
    exposed, new_third = by[("CardDrawn", "9")], by[("CardDrawn", "8")]
    closed = by[("Announced", "RAISES_CLOSED")]
    assert new_third < closed  # the log order really is out of time order
    assert seq[new_third] == "CardDrawn"
    assert found == [("EARLY_THIRD_CARD", [exposed, closed])]
    assert _round(db) == ("3C", "QD", "spread", 8, "8H", new_third, "MIDDLE", "won")
    assert _ledger(db) == {(1, "ORIGINAL"): ("OK", "VOID", 0, 0, 1000),
                           (2, "ORIGINAL"): ("OK", "WON", 1000, 0, 0)}
    # The exposed card's note says what the rule does with it, not what the dealer did: it
    # read "discarded" beside an EARLY_EXPOSURE_MISHANDLED that says it was used (a review,
    # session 41).
    from projections.dispute import dispute

    with duckdb.connect(str(db), read_only=True) as con:
        roles = {c["card"]: c["role"] for c in dispute(con, "T01", shoe="S1", round_no=1).cards}
    assert roles["9S"] == ('exposed before "Raises closed": the rule discards it, so it decides '
                           'nothing (13:47-20.31(g)3)')

"""Which cards make a round (views.sql, round_cards): every card out of the shoe, in game order
(occurred_at, then seq), wherever it went. The first two out are the spread, the deciding third
card is counted from them, and a box is judged only by the box codes (WRONG_BOX,
THIRD_CARD_DIVERTED, THIRD_CARD_REDRAWN). Each test is one finding of the outside review of
issue 13: the events as recorded (hand-built through the real Recorder, or device lines through
`pitlog ingest`), the exact anomalies with the seqs that prove them (so no other is raised), the
ledger's verdict in integer cents, and the card the rounds view and the dispute say decided.
"""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from surveillance_pit import EVENING, LEFT, MIDDLE, ORIGINAL, RIGHT, WON, Pit, opened

from events.log.embedded.log import EmbeddedLog
from events.recording.ingest import ingest
from events.reddog import model
from events.reddog.model import Box, Meaning, Suit
from projections.anomalies import AnomalyFilter, list_anomalies
from projections.dispute import dispute
from projections.projector import project

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

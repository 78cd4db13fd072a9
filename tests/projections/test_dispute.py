"""Dispute reconstruction: the hand in play at a table at a moment, rebuilt card by card.

The hand-built pit records one event a second from 23:00:00 UTC, so the event with sequence
number n happened at 23:00:00 + n seconds; a test can name a moment by the event at it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import unquote

import duckdb
import pytest
from surveillance_pit import EVENING, LEFT, MIDDLE, ORIGINAL, RIGHT, VOID, WON, Pit, opened

from events.errors import NotFoundError
from events.reddog.model import Choice, Meaning
from projections.dispute import Dispute, dispute
from projections.localtime import parse_local, parse_zone
from projections.moment import OutsideRound
from projections.serve.templates.dispute import outside_body
from projections.serve.templates.incident import incident_page


def _at(seq: int) -> object:
    return EVENING + timedelta(seconds=seq)


def _rebuild(pit: Pit, **where: object) -> Dispute:
    db = pit.project()
    with duckdb.connect(str(db), read_only=True) as con:
        return dispute(con, "T01", **where)  # type: ignore[arg-type]


def test_the_round_in_play_at_a_moment_is_rebuilt_card_by_card(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.play(1, "5S 6H", {1: 1000})
    r2 = pit.play(2, "3S QH 7C", {1: 1000, 3: 2500}, raises={3: 2500})
    pit.play(3, "8C 8D 2S", {1: 500})
    pit.close_shoe()
    d = _rebuild(pit, at=_at(r2["third"]))
    assert (d.round["shoe_id"], d.round["round_no"], d.round["kind"], d.round["spread"],
            d.round["players_result"]) == ("S1", 2, "spread", 8, "won")
    assert [(c["rack_position"], c["card"], c["box"], c["drawn_seq"], c["drawn_at"])
            for c in d.cards] == [
        (1, "3S", "left", r2["left"], _at(r2["left"])),
        (2, "QH", "right", r2["right"], _at(r2["right"])),
        (3, "7C", "middle", r2["third"], _at(r2["third"]))]
    assert [(a["phrase"], a["meaning"], a["value"]) for a in d.announcements] == [
        ("Spread 8", "spread", 8), ("Raises closed", "raises_closed", None),
        ("Seven", "third_card", 7)]
    assert [(w["seat"], w["action"], w["amount_cents"]) for w in d.wagers] == [
        (1, "wager placed", 1000), (3, "wager placed", 2500), (3, "raise placed", 2500)]
    assert [(s["seat"], s["wager_kind"], s["required"], s["made"], s["status"])
            for s in d.settlements] == [
        (1, "ORIGINAL", "WON: pay $10.00 at 1 to 1", "WON: paid $10.00 at 1 to 1", "OK"),
        (3, "ORIGINAL", "WON: pay $25.00 at 1 to 1", "WON: paid $25.00 at 1 to 1", "OK"),
        (3, "RAISE", "WON: pay $25.00 at 1 to 1", "WON: paid $25.00 at 1 to 1", "OK")]
    assert d.anomalies == []


def test_one_seat_shows_only_its_wagers_and_settlements(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    r1 = pit.play(1, "3S QH 7C", {1: 1000, 3: 2500}, raises={3: 2500})
    pit.close_shoe()
    d = _rebuild(pit, at=_at(r1["said"]), seat=3)
    assert {w["seat"] for w in d.wagers} == {3} and len(d.wagers) == 2
    assert [(s["seat"], s["wager_kind"]) for s in d.settlements] == [(3, "ORIGINAL"), (3, "RAISE")]
    assert len(d.cards) == 3  # the cards are everyone's


def short_payout(folder: Path) -> Pit:
    """Shoe S1 round 1: seat 1's $10.00 won on spread 1 (5 to 1), paid $40.00 at 4 to 1."""
    pit = opened(folder)
    pit.begin(1)
    pit.wager(1, 1000)
    pit.draw("5S", LEFT)
    pit.draw("7H", RIGHT)
    pit.say(Meaning.SPREAD, 1)
    pit.say(Meaning.RAISES_CLOSED)
    pit.draw("6D", MIDDLE)
    pit.say(Meaning.THIRD_CARD, 6)
    pit.settle(1, ORIGINAL, WON, 4000, 4)
    pit.rack("5S 7H 6D")
    pit.close_shoe()
    return pit


def test_a_short_payout_shows_the_settlement_required_beside_the_one_made(tmp_path: Path) -> None:
    d = _rebuild(short_payout(tmp_path), shoe="S1", round_no=1)
    assert [(s["required"], s["made"], s["status"]) for s in d.settlements] == [
        ("WON: pay $50.00 at 5 to 1", "WON: paid $40.00 at 4 to 1", "WRONG_AMOUNT")]
    assert [a["code"] for a in d.anomalies] == ["WRONG_PAYOUT"]


def test_an_early_exposure_shows_both_middle_cards_the_choices_and_the_refund(
        tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.begin(1)
    pit.wager(1, 1000)
    pit.wager(2, 500)
    pit.draw("4S", LEFT)
    pit.draw("9H", RIGHT)
    pit.say(Meaning.SPREAD, 4)
    pit.draw("7D", MIDDLE)
    pit.choose(1, Choice.VOID)
    pit.choose(2, Choice.PLAY)
    pit.settle(1, ORIGINAL, VOID, 1000)
    pit.say(Meaning.RAISES_CLOSED)
    pit.draw("8C", MIDDLE)
    pit.say(Meaning.THIRD_CARD, 8)
    pit.settle(2, ORIGINAL, WON, 500, 1)
    pit.rack("4S 9H 7D 8C")
    pit.close_shoe()
    d = _rebuild(pit, shoe="S1", round_no=1)
    assert [(c["card"], c["box"]) for c in d.cards] == [
        ("4S", "left"), ("9H", "right"), ("7D", "middle"), ("8C", "middle")]
    assert [(w["seat"], w["action"]) for w in d.wagers] == [
        (1, "wager placed"), (1, "chose to void"), (2, "wager placed"), (2, "chose to play")]
    assert [(s["seat"], s["required"], s["made"]) for s in d.settlements] == [
        (1, "VOID: return $10.00", "VOID: returned $10.00"),
        (2, "WON: pay $5.00 at 1 to 1", "WON: paid $5.00 at 1 to 1")]
    assert [a["code"] for a in d.anomalies] == ["EARLY_THIRD_CARD"]


def test_cards_racked_out_of_order_are_listed_in_rack_order_with_their_draws(
        tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.begin(1)
    pit.wager(1, 1000)
    left, right = pit.draw("4S", LEFT), pit.draw("9H", RIGHT)
    pit.say(Meaning.SPREAD, 4)
    pit.say(Meaning.RAISES_CLOSED)
    third = pit.draw("8C", MIDDLE)
    pit.say(Meaning.THIRD_CARD, 8)
    pit.settle(1, ORIGINAL, WON, 1000, 1)
    pit.rack("9H 4S")  # 8C never racked, the rest swapped
    pit.close_shoe()
    d = _rebuild(pit, shoe="S1", round_no=1)
    assert [(c["rack_position"], c["card"], c["drawn_seq"], c["note"]) for c in d.cards] == [
        (1, "9H", right, ""), (2, "4S", left, ""), (None, "8C", third, "drawn but never racked")]
    assert [a["code"] for a in d.anomalies] == ["CARD_UNACCOUNTED"]


def test_an_unknown_round_is_not_found(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.play(1, "5S 6H", {1: 1000})
    pit.close_shoe()
    with pytest.raises(NotFoundError, match="no round 7 of shoe S1 at table T01"):
        _rebuild(pit, shoe="S1", round_no=7)
    db = pit.folder / "pitlog.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        # a shoe never seen: no `pitlog replay` of it to advise
        with pytest.raises(NotFoundError, match=r"^no shoe 'S9' in the store; `pitlog shoes`"):
            dispute(con, "T01", shoe="S9", round_no=1)
        # the shoe of another table: that table named
        with pytest.raises(NotFoundError, match="^shoe S1 was used at table T01, not at T02: "):
            dispute(con, "T02", shoe="S1", round_no=1)


def test_a_round_dealt_with_no_shoe_shows_its_wagers_and_announcements(tmp_path: Path) -> None:
    """A table whose device stamps no shoe id: the dispute's wagers, announcements and a seat's
    view read the round's events with no shoe (they compared shoe_id = NULL, so they were
    empty, and asking for seat 1 said no seat had played)."""
    pit = Pit(tmp_path)
    pit.open_table()
    pit.tap_in("D1")
    s = pit.play(1, "4S QD 9H", {1: 1000, 2: 500})
    pit.tap_in("D2")
    db = pit.project()
    with duckdb.connect(str(db), read_only=True) as con:
        ((at,),) = con.execute("SELECT occurred_at FROM events WHERE seq = $s",
                               {"s": s["left"]}).fetchall()
        d = dispute(con, "T01", at=at)
        seat = dispute(con, "T01", at=at, seat=2)
        wagers = con.execute("SELECT seat, amount_cents, settlements, settled_outcome "
                             "FROM wagers ORDER BY seat").fetchall()
        hands = con.execute("SELECT shoe_id, round_no, dealt FROM hands").fetchall()
    # One row per wager, settled as owed (4S QD: spread 7, 9H between: won at 1 to 1); they
    # were two each (IN_PLAY beside a NOT_OWED settlement), with WRONG_SETTLEMENT rows.
    assert [(x["seat"], x["status"], x["required"], x["made"]) for x in d.settlements] == [
        (1, "OK", "WON: pay $10.00 at 1 to 1", "WON: paid $10.00 at 1 to 1"),
        (2, "OK", "WON: pay $5.00 at 1 to 1", "WON: paid $5.00 at 1 to 1")]
    assert {a["code"] for a in d.anomalies} == {"CARD_OUTSIDE_ROUND"}
    assert wagers == [(1, 1000, 1, "WON"), (2, 500, 1, "WON")]
    assert hands == [(None, 1, "4S QD 9H")]
    assert (d.round["shoe_id"], d.round["left_card"], d.round["right_card"]) == (None, "4S", "QD")
    assert [(w["seat"], w["action"], w["amount_cents"]) for w in d.wagers] == [
        (1, "wager placed", 1000), (2, "wager placed", 500)]
    assert [a["meaning"] for a in d.announcements] == ["spread", "raises_closed", "third_card"]
    assert [(w["seat"], w["amount_cents"]) for w in seat.wagers] == [(2, 500)]


def test_a_round_dealt_with_no_shoe_is_named_by_a_moment_the_dispute_takes(tmp_path: Path) -> None:
    """A moment between two rounds dealt with no shoe names them by a start time `--at` takes,
    not `--round None:1` (which --round reads as a shoe called "None"), and that time finds
    the round."""
    pit = Pit(tmp_path)
    pit.open_table()
    pit.tap_in("D1")
    one = pit.play(1, "4S QD 9H", {1: 1000})
    pit.tap_in("D2")
    pit.play(2, "2C 9D 5H", {1: 1000})
    db = pit.project()
    with duckdb.connect(str(db), read_only=True) as con:
        ((ended, started),) = con.execute(
            "SELECT max(occurred_at) FILTER (round_no = 1), min(occurred_at) FILTER "
            "(round_no = 2) FROM events").fetchall()
        between = ended + (started - ended) / 2
        with pytest.raises(OutsideRound) as caught:
            dispute(con, "T01", at=between)
        said = caught.value.describe(UTC)
        before = caught.value.before
        assert before is not None and before.shoe_id is None
        given = parse_local(said.split("(--at ")[1].split(")")[0], UTC, "--at")
        found = dispute(con, "T01", at=given)
        # The console's page offers the same rounds as links by that start (no shoe=None).
        page = outside_body(caught.value, UTC)
        linked = [parse_local(unquote(m), UTC, "at") for m in re.findall(r"at=([^&\"]+)", page)]
        after = dispute(con, "T01", at=linked[1])
    assert "None" not in page and "round 1 (no shoe)" in page
    assert linked[0] == given and after.round["round_no"] == 2
    assert "None" not in said
    assert "round 1 dealt with no shoe" in said and "round 2 dealt with no shoe" in said
    assert (found.round["shoe_id"], found.round["round_no"]) == (None, 1)
    assert (found.round["left_card"], found.round["right_card"]) == ("4S", "QD")
    assert found.round["first_seq"] <= one["left"]


def test_cards_dealt_for_round_0_are_never_the_round_in_play_at_a_moment(tmp_path: Path) -> None:
    """Two cards dealt for round 0 (cards outside any round, rules.MIN_ROUND_NO) before round 2
    and after round 3: round 0's first and last events bracketed every moment between, so a
    moment between rounds 2 and 3 rebuilt "round 0", its two stray cards shown as a hand. Now
    that moment is between rounds 2 and 3, and round 0 is still asked for by --round."""
    pit = opened(tmp_path)
    pit.play(1, "5S 6H", {1: 1000})
    pit.begin(0)
    early = pit.draw("9C", LEFT)
    pit.end()
    pit.play(2, "3S QH 7C", {1: 1000})
    pit.play(3, "4S 9H 7C", {1: 1000})
    pit.begin(0)
    late = pit.draw("9H", LEFT)
    pit.end()
    pit.close_shoe()
    db = pit.project()
    with duckdb.connect(str(db), read_only=True) as con:
        ((r2_last, r3_first),) = con.execute(
            "SELECT max(occurred_at) FILTER (round_no = 2), min(occurred_at) FILTER "
            "(round_no = 3) FROM events").fetchall()
        with pytest.raises(OutsideRound) as caught:
            dispute(con, "T01", at=r2_last + (r3_first - r2_last) / 2)
        zero = dispute(con, "T01", shoe="S1", round_no=0)
        with pytest.raises(OutsideRound):  # the moment of a round-0 card is no hand either
            dispute(con, "T01", at=_at(early))
    assert caught.value.where == "between rounds"
    assert (caught.value.before.round_no, caught.value.after.round_no) == (2, 3)  # type: ignore[union-attr]
    assert [c["card"] for c in zero.cards] == ["9C", "9H"] and late > early


def test_the_incident_reports_legend_names_the_zone_of_the_round_not_of_the_day_printed(
        tmp_path: Path) -> None:
    """Every time in the report is on the round's own offset (EDT in July); the legend named
    the zone on the day the report was prepared (EST in December)."""
    pit = opened(tmp_path)
    pit.clock = datetime(2026, 7, 4, 1, 0, tzinfo=UTC)  # 21:00 EDT on July 3
    pit.play(1, "3S QH 7C", {1: 1000})
    new_york = parse_zone("America/New_York")
    with duckdb.connect(str(pit.project()), read_only=True) as con:
        d = dispute(con, "T01", shoe="S1", round_no=1)
    page = incident_page(d, new_york, now=datetime(2026, 12, 1, 15, 0, tzinfo=UTC))
    assert "Times are on the casino's clock (EDT)" in page
    assert "prepared 2026-12-01 10:00:00 EST" in page  # the preparation's own stamp, its zone


def test_a_moment_to_the_second_takes_the_round_begun_within_it(tmp_path: Path) -> None:
    """The screens and the video show seconds. Round 2 begins half a second into the second
    after round 1's last event: asked for that whole second (a time copied from the screen),
    the dispute rebuilds round 2, not "outside any round"; asked for an instant in it before
    round 2 began, it says the moment is between the rounds; asked for the second in which
    round 2 ends and round 3 begins, round 2, the one in play at the second's start."""
    pit = opened(tmp_path)
    pit.play(1, "5S 6H", {1: 1000})
    pit.clock += timedelta(milliseconds=500)
    pit.play(2, "3S QH 7C", {1: 1000})
    pit.clock -= timedelta(milliseconds=750)  # round 3 begins in the second round 2 ends in
    pit.play(3, "4S 9H 7C", {2: 1000})
    pit.close_shoe()
    db = pit.project()
    with duckdb.connect(str(db), read_only=True) as con:
        ((r1_last, r2_first, r2_last, r3_first),) = con.execute(
            "SELECT max(occurred_at) FILTER (round_no = 1), "
            "min(occurred_at) FILTER (round_no = 2), max(occurred_at) FILTER (round_no = 2), "
            "min(occurred_at) FILTER (round_no = 3) "
            "FROM events").fetchall()
        second = r2_first.replace(microsecond=0)
        assert r1_last < second < r2_first and r2_first.microsecond == 500_000
        assert dispute(con, "T01", at=second).round["round_no"] == 2
        with pytest.raises(OutsideRound) as outside:
            dispute(con, "T01", at=second + timedelta(milliseconds=200))
        assert outside.value.where == "between rounds"
        assert dispute(con, "T01", at=r1_last).round["round_no"] == 1
        # a second in which round 2 ends and round 3 begins: round 2, in play at its start
        third = r2_last.replace(microsecond=0)
        assert third <= r2_last < r3_first < third + timedelta(seconds=1)
        assert dispute(con, "T01", at=third).round["round_no"] == 2
        # ... but asked for seat 2, which played round 3 alone: round 3
        assert dispute(con, "T01", at=third, seat=2).round["round_no"] == 3

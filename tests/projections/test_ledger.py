"""The settlement ledger (projections/sql/ledger.sql): every wager and raise with the one decision
the rules and the table's paytable require, next to what was actually settled. Exact cents."""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import pytest
from audit_scenarios import ORIGINAL, RAISE, Floor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from repo_paths import REPO

from events.reddog import model, rules
from events.reddog.model import Box, Choice, Meaning, SettledAs
from events.reddog.rules import STANDARD_PAYTABLE, Paytable, PaytableError
from projections.reconcile import ledger_rows
from projections.reddog_macros import macros_sql
from projections.replay import replay_shoe

WON, LOST, VOID = SettledAs.WON, SettledAs.LOST, SettledAs.VOID
LEDGER_SQL = REPO / "projections" / "sql" / "ledger.sql"


def _build(floor: Floor) -> Path:
    """The floor projected without the stored anomaly rows: the ledger view never reads them
    (projections/sql/ledger.sql), and their detection pass was most of each build's time."""
    return floor.build(store_anomalies=False)


def _ledger(db: Path, **filters: Any) -> dict[tuple[int, int, str], dict[str, Any]]:
    """(round_no, seat, kind) -> ledger row."""
    with duckdb.connect(str(db), read_only=True) as con:
        return {(r["round_no"], r["seat"], r["wager_kind"]): r for r in ledger_rows(con, **filters)}


def _money(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["amount_cents"], row["expected_outcome"], row["expected_odds"],
            row["expected_paid_cents"], row["expected_collected_cents"],
            row["expected_returned_cents"], row["status"])


def test_promotional_three_of_a_kind_pays_twelve_to_one_at_an_nj_casino(tmp_path: Path) -> None:
    floor = Floor(tmp_path)
    t = floor.table("T01")
    t.open_table("nj-casino", Paytable(three_of_a_kind=12))  # 13:69F-6: above the floor is fine
    t.new_shoe("T01-S1", decks=6)
    # 13:47-20.31(d)9 at the table's promotional odds; seat 2 is paid the standard 11 to 1.
    t.play("7S 7H 7D", {1: 2500, 2: 1000}, override={(2, ORIGINAL): [(WON, 11000, 11)]})
    rows = _ledger(_build(floor))
    assert _money(rows[1, 1, "ORIGINAL"]) == (2500, "WON", 12, 30000, 0, 0, "OK")
    seat2 = rows[1, 2, "ORIGINAL"]
    assert _money(seat2) == (1000, "WON", 12, 12000, 0, 0, "WRONG_AMOUNT")
    assert (seat2["actual_paid_cents"], seat2["actual_odds"]) == (11000, 11)
    assert seat2["net_win_difference_cents"] == 1000  # the player was shorted $10.00
    assert seat2["paytable_valid"] is True and seat2["profile"] == "nj-casino"


@pytest.mark.parametrize(("approved", "valid"), [(False, False), (True, True)])
def test_gaming_authority_promotion_needs_the_boards_approval(
        tmp_path: Path, approved: bool, valid: bool) -> None:
    floor = Floor(tmp_path)
    t = floor.table("T03")
    promo = Paytable(three_of_a_kind=12)
    t.open_table("gaming-authority", promo, board_approved=approved)
    t.new_shoe("T03-S1", decks=6)
    t.play("QS QH QD", {1: 500})
    db = _build(floor)
    rows = _ledger(db)
    row = rows[1, 1, "ORIGINAL"]
    # The table's posted odds are what is owed; its validity is reported beside them.
    assert _money(row) == (500, "WON", 12, 6000, 0, 0, "OK")
    assert row["paytable_valid"] is valid
    with duckdb.connect(str(db), read_only=True) as con:
        (violation,) = con.execute("SELECT violation FROM paytables WHERE table_id = 'T03'"
                                   ).fetchall()
    if approved:
        assert violation[0] is None
    else:
        with pytest.raises(PaytableError) as err:
            rules.validate_paytable("gaming-authority", promo, board_approved=False)
        assert violation[0] == str(err.value) == (
            "gaming-authority paytable line three_of_a_kind pays 12 to 1, above the table's "
            "11 to 1, without the Board's approval (GA (11)(c))")


def test_casino_night_single_deck_spread_win_raise_and_a_loss_on_an_equal_card(
        tmp_path: Path) -> None:
    floor = Floor(tmp_path)
    t = floor.table("T02")
    t.open_table("nj-casino-night")
    t.new_shoe("T02-S1", decks=1)
    t.play("4S 7H 5D", {1: 500, 2: 1000}, raises={1: 500})  # spread 2 pays 4 to 1 ((e))
    t.play("4C 9H 9D", {1: 500}, raises={1: 500})  # (d)14: equal to an end card loses
    rows = _ledger(_build(floor))
    assert _money(rows[1, 1, "ORIGINAL"]) == (500, "WON", 4, 2000, 0, 0, "OK")
    assert _money(rows[1, 1, "RAISE"]) == (500, "WON", 4, 2000, 0, 0, "OK")
    assert _money(rows[1, 2, "ORIGINAL"]) == (1000, "WON", 4, 4000, 0, 0, "OK")
    assert _money(rows[2, 1, "ORIGINAL"]) == (500, "LOST", None, 0, 500, 0, "OK")
    assert _money(rows[2, 1, "RAISE"]) == (500, "LOST", None, 0, 500, 0, "OK")
    assert rows[1, 1, "ORIGINAL"]["decks"] == 1 and rows[1, 1, "ORIGINAL"]["spread"] == 2


def test_a_voided_round_returns_every_wager(tmp_path: Path) -> None:
    floor = Floor(tmp_path)
    t = floor.table("T01")
    t.open_table("nj-casino")
    t.new_shoe("T01-S1")
    t.begin()
    t.wager(1, 2500)
    t.wager(2, 500)
    t.draw("9S", Box.LEFT)
    # 13:69F-34.16(n) by analogy: a dealing-shoe jam voids the round.
    t.emit(model.DeviceFaulted(device_id="SHOE-1", fault=model.Fault.SHOE_JAM))
    t.emit(model.RoundVoided(reason="dealing shoe jammed"))
    t.settle(1, ORIGINAL, VOID, 2500)
    t.settle(2, ORIGINAL, LOST, 500)  # wrongly collected
    t.end(["9S"])
    rows = _ledger(_build(floor))
    assert _money(rows[1, 1, "ORIGINAL"]) == (2500, "VOID", None, 0, 0, 2500, "OK")
    assert _money(rows[1, 2, "ORIGINAL"]) == (500, "VOID", None, 0, 0, 500, "WRONG_OUTCOME")
    assert rows[1, 2, "ORIGINAL"]["round_voided"] is True


def test_consecutive_and_pair_without_trips_are_tie_hands(tmp_path: Path) -> None:
    floor = Floor(tmp_path)
    t = floor.table("T01")
    t.open_table("nj-casino")
    t.new_shoe("T01-S1")
    t.play("8S 9H", {1: 1000})  # (d)7
    t.play("KS KH 2D", {1: 1000})  # (d)10
    rows = _ledger(_build(floor))
    assert _money(rows[1, 1, "ORIGINAL"]) == (1000, "VOID", None, 0, 0, 1000, "OK")
    assert _money(rows[2, 1, "ORIGINAL"]) == (1000, "VOID", None, 0, 0, 1000, "OK")
    assert rows[1, 1, "ORIGINAL"]["hand"] == "consecutive"


def test_wager_changes_count_before_the_first_card_and_not_after(tmp_path: Path) -> None:
    floor = Floor(tmp_path)
    t = floor.table("T01")
    t.open_table("nj-casino")
    t.new_shoe("T01-S1")
    t.begin()
    for seat in (1, 2, 3, 4):
        t.wager(seat, 1000)
    t.emit(model.WagerChanged(seat=1, area=1, amount_cents=2500))  # (d)3: legal, owed 2500
    t.emit(model.WagerRemoved(seat=2, area=2))  # legal: nothing owed
    t.draw("3S", Box.LEFT)
    t.emit(model.WagerChanged(seat=3, area=3, amount_cents=5000))  # (d)6: not allowed
    t.emit(model.WagerRemoved(seat=4, area=4))  # (d)6: not allowed, still owed
    t.wager(5, 500)  # (d)3: a late wager
    t.draw("8H", Box.RIGHT)
    t.say(Meaning.SPREAD, 4)
    t.say(Meaning.RAISES_CLOSED)
    t.draw("KD", Box.MIDDLE)  # loses
    t.settle(1, ORIGINAL, LOST, 2500)
    t.settle(3, ORIGINAL, LOST, 5000)
    t.settle(5, ORIGINAL, LOST, 500)
    t.end(["3S", "8H", "KD"])
    rows = _ledger(_build(floor))
    assert _money(rows[1, 1, "ORIGINAL"]) == (2500, "LOST", None, 0, 2500, 0, "OK")
    assert _money(rows[1, 2, "ORIGINAL"]) == (0, None, None, 0, 0, 0, "REMOVED")
    seat3 = rows[1, 3, "ORIGINAL"]
    assert _money(seat3) == (1000, "LOST", None, 0, 1000, 0, "WRONG_AMOUNT")
    assert seat3["altered_after_first_card"] is True and seat3["placed_cents"] == 1000
    seat4 = rows[1, 4, "ORIGINAL"]
    assert _money(seat4) == (1000, "LOST", None, 0, 1000, 0, "UNSETTLED")
    assert seat4["altered_after_first_card"] is True and seat4["removed"] is False
    seat5 = rows[1, 5, "ORIGINAL"]
    assert _money(seat5) == (500, "LOST", None, 0, 500, 0, "OK") and seat5["late"] is True


def test_a_wager_placed_again_after_the_first_card_on_an_area_emptied_before_it_is_late(
        tmp_path: Path) -> None:
    """(d)3: the removal before the first card counts, so the area held no wager when it came
    out; the chips placed there after it are a late wager, owed at their amount (an outside
    audit, session 38: that row was REMOVED, its collection NOT_OWED, and conservation short
    by the stake). A later change to the late wager is an alteration ((d)6) and does not count."""
    floor = Floor(tmp_path)
    t = floor.table("T01")
    t.open_table("nj-casino")
    t.new_shoe("T01-S1")
    t.begin()
    t.wager(1, 1000)
    t.wager(2, 1000)
    t.wager(3, 1000)
    t.wager(4, 1000, player="PA")
    for seat in (1, 2, 3, 4):
        t.emit(model.WagerRemoved(seat=seat, area=seat))  # legal before the first card
    t.draw("3S", Box.LEFT)
    t.wager(1, 700)  # late, on an empty area
    t.wager(2, 400)
    t.emit(model.WagerChanged(seat=2, area=2, amount_cents=900))  # (d)6: does not count
    t.emit(model.WagerChanged(seat=3, area=3, amount_cents=800))  # chips put on an empty area
    t.wager(4, 500, player="PB")  # another player's late wager, then their raise
    t.draw("8H", Box.RIGHT)
    t.say(Meaning.SPREAD, 4)
    t.raise_(4, 500)
    t.say(Meaning.RAISES_CLOSED)
    t.draw("KD", Box.MIDDLE)  # loses
    t.settle(1, ORIGINAL, LOST, 700)
    t.settle(2, ORIGINAL, LOST, 400)
    t.settle(3, ORIGINAL, LOST, 800)
    t.settle(4, ORIGINAL, LOST, 500)
    t.settle(4, RAISE, LOST, 500)
    t.end(["3S", "8H", "KD"])
    rows = _ledger(_build(floor))
    seat1, seat2, seat3 = rows[1, 1, "ORIGINAL"], rows[1, 2, "ORIGINAL"], rows[1, 3, "ORIGINAL"]
    assert _money(seat1) == (700, "LOST", None, 0, 700, 0, "OK")
    assert (seat1["late"], seat1["removed"], seat1["altered_after_first_card"],
            seat1["placed_cents"]) == (True, False, False, 700)
    assert _money(seat2) == (400, "LOST", None, 0, 400, 0, "OK")
    assert (seat2["late"], seat2["removed"], seat2["altered_after_first_card"],
            seat2["placed_cents"]) == (True, False, True, 400)
    # as an area that held nothing before the card and got chips by a change after it (a
    # second review, session 38: this one was owed nothing, conservation short by 800)
    assert _money(seat3) == (800, "LOST", None, 0, 800, 0, "OK")
    assert (seat3["late"], seat3["removed"], seat3["placed_cents"]) == (True, False, 800)
    # the late wager and its raise are PB's, not PA's who removed theirs
    assert [(rows[1, 4, k]["player_id"], _money(rows[1, 4, k])) for k in (ORIGINAL, RAISE)] == [
        ("PB", (500, "LOST", None, 0, 500, 0, "OK")), ("PB", (500, "LOST", None, 0, 500, 0, "OK"))]


def test_the_wager_owed_is_the_one_standing_when_the_first_card_of_the_game_came_out(
        tmp_path: Path) -> None:
    """An outside audit, session 39, each on its own area: (1) a card found face up and put in
    the rack ((g)1: not used in the game) does not close the wagers, so a change after it
    counts; (2) a removal after the first card puts no chips on an empty area, so the wager
    placed after it is the late one, owed; (3) a wager changed to nothing before the first card
    held none then, so chips after it are late; (4) a wager removed and placed again by another
    player before the card is theirs, raise included; (5) a wager placed on a standing one
    after the card by another player is not owed, and the raise stays with the player owed;
    (6) below."""
    floor = Floor(tmp_path)
    t = floor.table("T01")
    t.open_table("nj-casino")
    t.new_shoe("T01-S1")
    t.begin()  # (1)
    t.wager(1, 1000)
    t.emit(model.CardFoundFaceUp(rank=9, suit=model.Suit.HEARTS))
    t.draw("9H", Box.DISCARD_RACK)
    t.emit(model.WagerChanged(seat=1, area=1, amount_cents=2000))  # before the first card
    t.wager(2, 500)  # on time
    t.draw("4H", Box.LEFT)
    t.draw("10S", Box.RIGHT)
    t.say(Meaning.SPREAD, 5)
    t.say(Meaning.RAISES_CLOSED)
    t.draw("KD", Box.MIDDLE)  # loses
    t.settle(1, ORIGINAL, LOST, 2000)
    t.settle(2, ORIGINAL, LOST, 500)
    t.end(["9H", "4H", "10S", "KD"])
    t.begin()
    t.wager(3, 700)  # (3)
    t.emit(model.WagerChanged(seat=3, area=3, amount_cents=0))
    t.wager(4, 1000, player="PA")  # (4)
    t.emit(model.WagerRemoved(seat=4, area=4))
    t.wager(4, 2000, player="PB")
    t.wager(5, 1000, player="PC")  # (5)
    t.wager(6, 500, player="PE")  # (6)
    t.emit(model.WagerRemoved(seat=6, area=6))
    t.draw("3S", Box.LEFT)
    t.emit(model.WagerRemoved(seat=1, area=1))  # (2): nothing there
    t.wager(1, 1000, player="PL")
    t.wager(3, 600)
    t.wager(5, 400, player="PD")  # (d)6: does not count
    t.emit(model.WagerChanged(seat=6, area=6, amount_cents=1000))  # the late wager
    t.wager(6, 2000, player="PF")  # (d)6: does not count
    t.draw("9C", Box.RIGHT)
    t.say(Meaning.SPREAD, 5)
    t.raise_(4, 2000)
    t.raise_(5, 1000)
    t.say(Meaning.RAISES_CLOSED)
    t.draw("QD", Box.MIDDLE)  # loses
    t.settle(1, ORIGINAL, LOST, 1000)
    t.settle(3, ORIGINAL, LOST, 600)
    t.settle(4, ORIGINAL, LOST, 2000)
    t.settle(4, RAISE, LOST, 2000)
    t.settle(5, ORIGINAL, LOST, 1000)
    t.settle(5, RAISE, LOST, 1000)
    t.settle(6, ORIGINAL, LOST, 1000)
    t.end(["3S", "9C", "QD"])
    rows = _ledger(_build(floor))
    changed, on_time = rows[1, 1, "ORIGINAL"], rows[1, 2, "ORIGINAL"]
    assert _money(changed) == (2000, "LOST", None, 0, 2000, 0, "OK")
    assert (changed["late"], changed["altered_after_first_card"]) == (False, False)
    assert _money(on_time) == (500, "LOST", None, 0, 500, 0, "OK") and on_time["late"] is False
    after_removal = rows[2, 1, "ORIGINAL"]
    assert _money(after_removal) == (1000, "LOST", None, 0, 1000, 0, "OK")
    assert (after_removal["late"], after_removal["removed"], after_removal["player_id"],
            after_removal["placed_cents"]) == (True, False, "PL", 1000)
    after_zero = rows[2, 3, "ORIGINAL"]
    assert _money(after_zero) == (600, "LOST", None, 0, 600, 0, "OK")
    assert (after_zero["late"], after_zero["placed_cents"]) == (True, 600)
    assert [(rows[2, 4, k]["player_id"], rows[2, 4, k]["placed_cents"], _money(rows[2, 4, k]))
            for k in (ORIGINAL, RAISE)] == [
        ("PB", 2000, (2000, "LOST", None, 0, 2000, 0, "OK")),
        ("PB", 2000, (2000, "LOST", None, 0, 2000, 0, "OK"))]
    assert [(rows[2, 5, k]["player_id"], _money(rows[2, 5, k])) for k in (ORIGINAL, RAISE)] == [
        ("PC", (1000, "LOST", None, 0, 1000, 0, "OK")),
        ("PC", (1000, "LOST", None, 0, 1000, 0, "OK"))]
    assert rows[2, 5, ORIGINAL]["altered_after_first_card"] is True
    # (6) a late wager made by a change is owed as the change left it, its player the one who
    # placed on the area last before the card, not a placement after the change (a second
    # read, session 39: PF's $20.00 was named as placed)
    by_change = rows[2, 6, ORIGINAL]
    assert _money(by_change) == (1000, "LOST", None, 0, 1000, 0, "OK")
    assert (by_change["late"], by_change["player_id"], by_change["placed_cents"],
            by_change["altered_after_first_card"]) == (True, "PE", 1000, True)


def test_a_round_is_dealt_by_the_dealer_and_at_the_paytable_in_at_its_first_card(
        tmp_path: Path) -> None:
    """(d)5: "To begin each round of play, the dealer shall place the first card". A wager
    placed, then a new dealer tapped in and the table opened again at another paytable, then
    the first card: the round is the new dealer's, at the new paytable (an outside audit,
    session 38: it was credited to the dealer who had left, and judged at the old 6 to 1,
    WRONG_AMOUNT on a payout made right at 5 to 1). A round with no card is still placed by
    its first event."""
    floor = Floor(tmp_path)
    t = floor.table("T01", dealer="D-OLD")
    t.open_table("nj-casino", Paytable(spread_1=6))
    t.new_shoe("T01-S1")
    t.begin()
    t.wager(1, 1000)
    t.tap_in("D-NEW")
    t.burn("4C", model.BurnReason.NEW_DEALER)
    t.open_table("nj-casino")  # the standard paytable: spread 1 pays 5 to 1
    t.draw("5D", Box.LEFT)
    t.draw("7D", Box.RIGHT)
    t.say(Meaning.SPREAD, 1)
    t.say(Meaning.RAISES_CLOSED)
    t.draw("6D", Box.MIDDLE)  # wins at the spread-1 odds
    t.settle(1, ORIGINAL, WON, 5000, 5)
    t.end(["5D", "7D", "6D"])
    t.begin()  # a wager and nothing dealt yet: placed by that wager
    t.wager(2, 300)
    rows = _ledger(_build(floor))
    first = rows[1, 1, "ORIGINAL"]
    assert _money(first) == (1000, "WON", 5, 5000, 0, 0, "OK")
    assert first["dealer"] == "D-NEW" and first["paytable_seq"] > first["round_first_seq"]
    waiting = rows[2, 2, "ORIGINAL"]
    assert (waiting["dealer"], waiting["expected_outcome"], waiting["status"]) == (
        "D-NEW", None, "IN_PLAY")


def test_unsettled_double_settled_not_owed_and_in_play_are_listed(tmp_path: Path) -> None:
    floor = Floor(tmp_path)
    t = floor.table("T01")
    t.open_table("nj-casino")
    t.new_shoe("T01-S1")
    t.play("2S 10H 6D", {1: 1000, 2: 1000, 3: 1000}, override={
        (1, ORIGINAL): [],  # never settled
        (2, ORIGINAL): [(WON, 1000, 1), (WON, 1000, 1)],  # paid twice
        (3, ORIGINAL): [(LOST, 1000, None)],  # a winner collected
    })
    t.begin()
    t.settle(6, ORIGINAL, WON, 500, 1)  # seat 6 had no wager in round 2
    t.end([])
    t.begin()
    t.wager(1, 500)
    t.draw("2H", Box.LEFT)
    t.draw("9C", Box.RIGHT)  # no third card yet: the round is in play
    t.recorder.flush()
    rows = _ledger(_build(floor))
    assert rows[1, 1, "ORIGINAL"]["status"] == "UNSETTLED"
    seat2 = rows[1, 2, "ORIGINAL"]
    assert (seat2["status"], seat2["settlement_count"], seat2["actual_paid_cents"],
            seat2["actual_outcome"]) == ("DOUBLE_SETTLED", 2, 2000, "WON+WON")
    assert len(seat2["settlement_seqs"]) == 2
    assert rows[1, 3, "ORIGINAL"]["status"] == "WRONG_OUTCOME"
    ghost = rows[2, 6, "ORIGINAL"]
    assert (ghost["status"], ghost["amount_cents"], ghost["actual_paid_cents"]) == \
        ("NOT_OWED", 0, 500)
    assert rows[3, 1, "ORIGINAL"]["status"] == "IN_PLAY"
    exceptions = _ledger(_build(floor), exceptions_only=True)
    assert sorted(exceptions) == [(1, 1, "ORIGINAL"), (1, 2, "ORIGINAL"), (1, 3, "ORIGINAL"),
                                  (2, 6, "ORIGINAL")]


def test_a_player_who_voids_after_an_early_third_card_gets_a_void(tmp_path: Path) -> None:
    floor = Floor(tmp_path)
    t = floor.table("T01")
    t.open_table("nj-casino")
    t.new_shoe("T01-S1")
    t.begin()
    t.wager(1, 1000)
    t.wager(2, 1000)
    t.draw("3S", Box.LEFT)
    t.draw("10H", Box.RIGHT)
    t.say(Meaning.SPREAD, 6)
    t.draw("5D", Box.MIDDLE)  # 13:47-20.31(g)3: exposed before "Raises closed"
    t.emit(model.VoidOrPlayChosen(seat=1, area=1, choice=Choice.VOID))
    t.emit(model.VoidOrPlayChosen(seat=2, area=2, choice=Choice.PLAY))
    t.settle(1, ORIGINAL, VOID, 1000)  # returned before another third card
    t.emit(model.RaisePlaced(seat=2, area=2, amount_cents=1000))
    t.say(Meaning.RAISES_CLOSED)
    t.draw("QC", Box.MIDDLE)  # the third card that counts: not between 3 and 10
    t.settle(2, ORIGINAL, LOST, 1000)
    t.settle(2, RAISE, LOST, 1000)
    t.end(["3S", "10H", "5D", "QC"])
    rows = _ledger(_build(floor))
    assert _money(rows[1, 1, "ORIGINAL"]) == (1000, "VOID", None, 0, 0, 1000, "OK")
    assert rows[1, 1, "ORIGINAL"]["voided_by_choice"] is True
    assert _money(rows[1, 2, "ORIGINAL"]) == (1000, "LOST", None, 0, 1000, 0, "OK")
    assert _money(rows[1, 2, "RAISE"]) == (1000, "LOST", None, 0, 1000, 0, "OK")


# --- SQL against Python: the ledger's expected settlement is rules.settle_wager's ----------------

RANKS = st.integers(min_value=2, max_value=14)
ODDS = st.integers(min_value=1, max_value=15)
_LABEL = {11: "J", 12: "Q", 13: "K", 14: "A"}


def _label(rank: int, suit: str) -> str:
    return f"{_LABEL.get(rank, rank)}{suit}"


round_strategy = st.tuples(
    RANKS, RANKS, RANKS,
    st.dictionaries(st.integers(1, 6), st.integers(1, 200).map(lambda n: n * 25), min_size=1,
                    max_size=4),
    st.booleans())
paytable_strategy = st.builds(Paytable, ODDS, ODDS, ODDS, ODDS, ODDS)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paytable=paytable_strategy, decks=st.integers(1, 8),
       played=st.lists(round_strategy, min_size=1, max_size=10))
def test_sql_expected_settlement_equals_settle_wager(
        paytable: Paytable, decks: int, played: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        floor = Floor(Path(tmp))
        t = floor.table("T01")
        t.open_table("nj-casino", paytable)
        t.new_shoe("T01-S1", decks=decks)
        for left, right, third, wagers, raise_all in played:
            spread = rules.classify(left, right).kind is rules.HandKind.SPREAD
            raises = {s: a for s, a in wagers.items()} if raise_all and spread else {}
            t.play(f"{_label(left, 'S')} {_label(right, 'H')} {_label(third, 'D')}",
                   wagers, raises)
        rows = _ledger(_build(floor))
        assert len(rows) == sum(len(w) + (len(w) if r and rules.classify(a, b).kind is
                                          rules.HandKind.SPREAD else 0)
                                for a, b, _, w, r in played)
        for (round_no, _seat, kind), row in rows.items():
            left, right, third, _, _ = played[round_no - 1]
            consecutive = rules.classify(left, right).kind is rules.HandKind.CONSECUTIVE
            e = rules.settle_wager(paytable, left, right, None if consecutive else third,
                                   row["amount_cents"], is_raise=kind == "RAISE")
            assert (row["expected_outcome"], row["expected_odds"], row["expected_paid_cents"],
                    row["expected_collected_cents"], row["expected_returned_cents"]) == (
                e.outcome.value.upper(), e.odds, e.paid_cents, e.collected_cents,
                e.returned_cents)
            assert row["status"] == "OK"


@settings(max_examples=300, deadline=None)
@given(profile=st.sampled_from(["nj-casino", "nj-casino-night", "gaming-authority"]),
       lines=st.tuples(*(st.integers(0, 14) for _ in range(5))), approved=st.booleans())
def test_sql_paytable_violation_equals_validate_paytable(
        profile: str, lines: tuple[int, ...], approved: bool) -> None:
    try:
        rules.validate_paytable(profile, Paytable(*lines), board_approved=approved)
        expected = None
    except PaytableError as exc:
        expected = str(exc)
    (got,) = _macros().execute("SELECT paytable_violation(?, ?, ?, ?, ?, ?, ?)",
                               [profile, approved, *lines]).fetchall()
    assert got[0] == expected


@cache
def _macros() -> duckdb.DuckDBPyConnection:
    """An in-memory database with sql/ledger.sql's macros only (they need no events table), over
    the red dog macros generated from events/reddog/rules.py."""
    con = duckdb.connect()
    con.execute(macros_sql())
    con.execute(LEDGER_SQL.read_text().split("-- One row per TableOpened")[0])
    return con


def test_standard_paytable_is_valid_under_every_profile(tmp_path: Path) -> None:
    floor = Floor(tmp_path)
    for table_id, profile in (("T1", "nj-casino"), ("T2", "nj-casino-night"),
                              ("T3", "gaming-authority")):
        floor.table(table_id).open_table(profile, STANDARD_PAYTABLE)
    with duckdb.connect(str(_build(floor)), read_only=True) as con:
        got = con.execute("SELECT table_id, valid, violation FROM paytables ORDER BY table_id"
                          ).fetchall()
    assert got == [("T1", True, None), ("T2", True, None), ("T3", True, None)]


def test_a_correction_is_a_note_beside_the_event_and_changes_no_ledger_row(
        tmp_path: Path) -> None:
    """docs/auditing.md, "Corrections": an EventCorrected names a seq and a reason; the replay
    shows it, the ledger judges the settlement as recorded, and a second settlement made to put
    the money right is DOUBLE_SETTLED."""
    floor = Floor(tmp_path)
    t = floor.table("T01")
    t.open_table("nj-casino")
    t.new_shoe("T01-S1")
    t.play("3C 9H 5D", {1: 1000}, override={(1, ORIGINAL): [(WON, 500, 1)]})  # underpaid
    ((settled, _),) = [(r["settlement_seqs"][0], r) for r in
                       _ledger(_build(floor)).values()]  # before the correction
    t.emit(model.EventCorrected(corrects_seq=settled, reason="paid 5.00 of 10.00"))
    t.round_no = 1
    t.settle(1, ORIGINAL, WON, 500, 1)  # the difference, as a settlement of its own
    t.round_no = None
    db = floor.build(store_anomalies=False)
    rows = _ledger(db)
    with duckdb.connect(str(db), read_only=True) as con:
        shown = [e for e in replay_shoe(con, "T01-S1").events
                 if e["event_type"] == "EventCorrected"]
    assert [e["description"] for e in shown] == [f"corrects seq {settled}: paid 5.00 of 10.00"]
    row = rows[1, 1, "ORIGINAL"]
    assert (row["status"], row["settlement_count"], row["actual_paid_cents"]) == \
        ("DOUBLE_SETTLED", 2, 1000)

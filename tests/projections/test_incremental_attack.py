"""Attacks on the round-level stretch of incremental detection (projections/incremental.py,
projections/detect_rounds.py): hand-built tables projected in two batches, the stored rows
compared row for row with a full evaluation (the `anomalies` view), as
test_incremental.py's test_a_card_after_a_higher_round_wholly_before_the_stretch_is_still_flagged
does. Each test is a hole session 9's review found in the round-level stretch: with it on
(incremental.ROUND_LEVEL_STRETCH) the stored rows differ from the full evaluation after an
ordinary second batch; the comment names the rule and the missing window input or stale row.
With the shoe-level stretch they pass. The DUPLICATE_EVENT tests at the end attack the
shoe-level window too: copies of an event id before W, found by the look-up of the batch's ids
over the whole history (incremental.Detector.earlier_copies, the index of
projections/id_index.py). The last ones attack it by game order: a card of a later shoe
stamped back among an earlier shoe's rounds (incremental._stretch_start)."""

from __future__ import annotations

import shutil
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from live_support import assert_money_exact, money_differences
from store_template import store_at
from table_builder import EVENING, TableBuilder, card, recorder_for

from events.errors import ProjectionError
from events.log.embedded.log import EmbeddedLog
from events.reddog import model
from events.reddog.model import Box, Meaning, WagerKind
from projections import id_index, incremental, round_money
from projections.anomalies import STORED
from projections.projector import project

# Eight tables, each projected in two or three batches with detection: started first
# (tests/conftest.py) so this file is not the suite's tail.
pytestmark = pytest.mark.slow


def _rows_apart(con: duckdb.DuckDBPyConnection) -> tuple[list, list]:
    """(stored rows not in a full evaluation, full-evaluation rows not stored), EXCEPT ALL,
    each as code, round, seqs and explanation; the full evaluation made once."""
    rows = con.execute(f"""
        WITH f AS MATERIALIZED (SELECT * FROM anomalies)
        SELECT 'stored', code, round_no, seqs, explanation
        FROM (SELECT * FROM {STORED} EXCEPT ALL SELECT * FROM f)
        UNION ALL
        SELECT 'full', code, round_no, seqs, explanation
        FROM (SELECT * FROM f EXCEPT ALL SELECT * FROM {STORED})""").fetchall()
    return (sorted(r[1:] for r in rows if r[0] == "stored"),
            sorted(r[1:] for r in rows if r[0] == "full"))


def _table(tmp_path: Path) -> tuple[EmbeddedLog, TableBuilder]:
    log = EmbeddedLog(tmp_path / "log")
    t = TableBuilder(recorder_for(log))
    t.open_table()
    t.tap_in("D1")
    return log, t


def _two_shoes(tmp_path: Path) -> tuple[EmbeddedLog, TableBuilder, int]:
    """_table's opening and tap-in (event and id 2), then a round of shoe S1 (its load: event
    and id 3, returned) and one of shoe S2, each shoe burned at its load."""
    log, t = _table(tmp_path)
    s1 = t.new_shoe("S1")
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    t.new_shoe("S2")
    t.round_no = 1
    t.deal_round("3H 10S 6D", {1: 500})
    return log, t, s1


@contextmanager
def _two_batches(tmp_path: Path, log: EmbeddedLog,
                 t: TableBuilder) -> Iterator[tuple[duckdb.DuckDBPyConnection, Callable[[], None]]]:
    """The shape of these attacks: what `t` recorded so far projected as a first batch into a
    new store; `second_batch()` flushes and projects what the test recorded since; on leaving,
    the stored rows equal a full evaluation (_rows_apart: nothing apart either way), and the
    stored round_money rows the round_money query over the views."""
    def second_batch() -> None:
        t.flush()
        project(log, con, publish_alerts=False)

    t.flush()
    with duckdb.connect(str(store_at(tmp_path / "v.duckdb"))) as con:
        project(log, con, publish_alerts=False)
        yield con, second_batch
        assert _rows_apart(con) == ([], [])
        assert_money_exact(con)  # the rounds' stored money too (projections/round_money.py)


def _at(seq: int) -> timedelta:
    """The builder's clock at event `seq` of a one-table log: one second per event."""
    return timedelta(seconds=seq)


# With the round-level stretch on (incremental.ROUND_LEVEL_STRETCH) this fails: DUPLICATE_EVENT:
# one row per event id, proved by every copy; a third copy makes the row [a, b] into [a, b, c],
# but the old row's greatest seq b lies before K_r (the round the batch finishes), so it is never
# deleted: stored holds both rows
def test_a_third_copy_of_an_event_id_replaces_the_duplicate_row(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    tap_id = str(uuid.UUID(int=2))  # recorder_for: the second event (the tap-in) has id 2
    t.new_shoe("S1")
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    t.clock += timedelta(seconds=1)  # the tap-in's device line recorded again
    again = t.recorder.record(t.table_id, model.DealerTappedIn(dealer_id="D1"), shoe_id="S1",
                      round_no=1, actor="D1", occurred_at=t.clock, recorded_at=t.clock,
                      event_id=tap_id)
    t.round_no = 2
    t.deal_round("3H 10S 6D", {1: 500})
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        t.round_no = 3
        t.clock += timedelta(seconds=1)  # and a third time, in the next round
        third = t.recorder.record(t.table_id, model.DealerTappedIn(dealer_id="D1"),
                                  shoe_id="S1", round_no=3, actor="D1", occurred_at=t.clock,
                                  recorded_at=t.clock, event_id=tap_id)
        second_batch()
        assert con.execute("SELECT seqs FROM anomalies WHERE code = 'DUPLICATE_EVENT'"
                           ).fetchall() == [([2, again, third],)]


# With the round-level stretch on (incremental.ROUND_LEVEL_STRETCH) this fails: CARD_UNACCOUNTED
# (a card dealt with no round, never racked before the shoe closed): proof [card, ShoeClosed]; the
# ShoeClosed lies in the stretch, so the row is deleted, but the rounds window drops every card
# before K_r (CARD_TYPES) but the after-fault and highest-round cards, so loose_cards never sees
# the card and the row is not found again
def test_an_unracked_loose_card_before_the_stretch_stays_unaccounted(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S1")
    loose = t.draw("5H", Box.LEFT)  # round_no None: a card dealt with no round
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    t.round_no = 2
    t.deal_round("3H 10S 6D", {1: 500})
    closed = t.emit(model.ShoeClosed(cards_remaining=200))  # still round 2 in the builder
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        assert con.execute(f"SELECT seqs FROM {STORED} WHERE code = 'CARD_UNACCOUNTED'"
                           ).fetchall() == [([loose, closed],)]
        t.tap_in("D2")  # a dealer change after the close (shoe S1, round 2: K_r = round 2)
        second_batch()


# With the round-level stretch on (incremental.ROUND_LEVEL_STRETCH) this fails: BURN_DURING_ROUND
# via sql/intruders.sql: a burn whose line arrives late (a new seq, an occurred_at inside round 1)
# lies inside round 1 in game order; round 1 lies wholly before K_r (round 3, the round the batch
# finishes), and the rounds window keeps none of its cards, so round 1 has no span there and the
# row [round 1's first card, burn] is missing
def test_a_late_burn_inside_an_earlier_round_is_burned_during_that_round(
        tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S1")
    t.round_no = 1
    first = t.deal_round("4C JS 7D", {1: 500})
    t.round_no = 2
    t.deal_round("3H 10S 6D", {1: 500})
    t.round_no = 3
    t.deal_round("2D QS 8H", {1: 500})
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        late_clock = t.clock
        t.round_no = None
        t.clock = EVENING + _at(first["left"])  # occurred between round 1's first two cards
        burn = t.burn("9C")
        t.clock = late_clock
        second_batch()
        full = con.execute("SELECT round_no, seqs FROM anomalies "
                           "WHERE code = 'BURN_DURING_ROUND'").fetchall()
        assert full == [(1, [first["left"], burn])]


# With the round-level stretch on (incremental.ROUND_LEVEL_STRETCH) this fails: BURN_MISDISCLOSED
# reads the latest burn before the disclosure in game order: a burn line arriving late with an
# occurred_at between the first burn and the disclosure makes the disclosure right, but the stored
# row [burn, disclosure] lies wholly before K_r and is never deleted
def test_a_late_burn_before_a_disclosure_clears_the_misdisclosure(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S1")  # its burn, 2C
    shown = card("3D")
    disclosed = t.emit(model.BurnDisclosed(rank=shown.rank, suit=shown.suit))
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    t.round_no = 2
    t.deal_round("5H 10S 6D", {1: 500})
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        assert con.execute(f"SELECT seqs FROM {STORED} WHERE code = 'BURN_MISDISCLOSED'"
                           ).fetchall() == [([disclosed - 1, disclosed],)]
        late_clock = t.clock
        t.round_no = None
        # the shoe's line of a 3D burned just before the disclosure, recorded late
        t.clock = EVENING + _at(disclosed - 1) - timedelta(seconds=1) + timedelta(milliseconds=500)
        t.burn("3D")
        t.clock = late_clock
        second_batch()
        assert con.execute("SELECT count(*) FROM anomalies WHERE code = 'BURN_MISDISCLOSED'"
                           ).fetchall() == [(0,)]


# With the round-level stretch on (incremental.ROUND_LEVEL_STRETCH) this fails: EXTRA_CARD counts
# a card found face up as a copy until the next card out shows it was then drawn (ONE CARD: then
# the CardDrawn is the copy). A face-up card found between rounds (round_no NULL) is the table's
# last event, so no round holds it and K_r is the batch's first event; the row [first copy, face-
# up card] lies before K_r and is never deleted, beside the new row [first copy, CardDrawn]
def test_a_face_up_card_then_racked_moves_the_extra_copy_to_the_draw(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S1", decks=1)
    t.round_no = 1
    nine = t.deal_round("4C 9C 7D", {1: 500})["right"]
    t.round_no = None  # found between rounds (13:47-20.31(g)1)
    found = t.emit(model.CardFoundFaceUp(rank=9, suit=model.Suit.CLUBS))
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        assert con.execute(f"SELECT seqs FROM {STORED} WHERE code = 'EXTRA_CARD'"
                           ).fetchall() == [([nine, found],)]
        racked = t.draw("9C", Box.DISCARD_RACK)  # where (g)1 puts it
        second_batch()
        assert con.execute("SELECT seqs FROM anomalies WHERE code = 'EXTRA_CARD'"
                           ).fetchall() == [([nine, racked],)]


# With the round-level stretch on (incremental.ROUND_LEVEL_STRETCH) this fails: the same lookahead
# across rounds: a card found face up late in round 1 is the shoe's last card out when round 2
# begins (a wager); the next batch deals it to round 2's left box (FACE_UP_CARD_USED), so it is no
# copy of its own, but K_r is round 2's first event and the stored EXTRA_CARD row [first copy,
# face-up card] of round 1 is never deleted
def test_a_face_up_card_used_in_the_next_round_moves_the_extra_copy(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S1", decks=1)
    t.round_no = 1
    nine = t.deal_round("4C 9C 7D", {1: 500})["right"]
    found = t.emit(model.CardFoundFaceUp(rank=9, suit=model.Suit.CLUBS))  # still round 1
    t.round_no = 2
    t.wager(1, 500)
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        assert con.execute(f"SELECT seqs FROM {STORED} WHERE code = 'EXTRA_CARD'"
                           ).fetchall() == [([nine, found],)]
        used = t.draw("9C", Box.LEFT)
        second_batch()
        assert con.execute("SELECT seqs FROM anomalies WHERE code = 'EXTRA_CARD'"
                           ).fetchall() == [([nine, used],)]


def test_a_cut_and_a_shuffler_jam_of_an_earlier_round_are_judged_in_a_later_batch(
        tmp_path: Path) -> None:
    # Believed risky, found safe: NO_RESHUFFLE_AFTER_CUT_CARD and DEVICE_FAULT_NOT_VOIDED read
    # a cut and a fault of round 1, wholly before the stretch, for a round dealt in the next
    # batch. Both are context (detect_rounds.CONTEXT_TYPES); the open fault (no card dealt
    # after it) pulls K_r back to round 1, and the rounds window keeps them.
    log, t = _table(tmp_path)
    t.new_shoe("S1")
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    cut = t.emit(model.CuttingCardReached())
    jam = t.emit(model.DeviceFaulted(device_id="SH-1", fault=model.Fault.SHUFFLER_JAM))
    t.round_no = 2
    t.wager(1, 500)
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        left = t.draw("3H", Box.LEFT)
        t.draw("10S", Box.RIGHT)
        second_batch()
        found = {(code, tuple(seqs)) for code, seqs in con.execute(
            f"SELECT code, seqs FROM {STORED} WHERE code IN "
            "('NO_RESHUFFLE_AFTER_CUT_CARD', 'DEVICE_FAULT_NOT_VOIDED')").fetchall()}
        assert found == {("NO_RESHUFFLE_AFTER_CUT_CARD", (cut, left)),
                         ("DEVICE_FAULT_NOT_VOIDED", (jam, left))}


# DUPLICATE_EVENT: the windows start at W (the end of the shoe before K); a copy of an event of
# an earlier shoe (here the tap-in before shoe S1) lies before it, and only the look-up over
# the history (projections/id_index.py) brings it to the streams family: the row [first copy,
# new copy]
def test_a_copy_of_an_event_of_an_earlier_shoe_is_a_duplicate(tmp_path: Path) -> None:
    log, t, _ = _two_shoes(tmp_path)  # the tap-in is event 2, id 2
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        t.clock += timedelta(seconds=1)  # the tap-in's line re-sent as it was: no shoe, no round
        again = t.recorder.record(t.table_id, model.DealerTappedIn(dealer_id="D1"),
                                  shoe_id=None, round_no=None, actor="D1", occurred_at=t.clock,
                                  recorded_at=t.clock, event_id=str(uuid.UUID(int=2)))
        second_batch()
        assert con.execute("SELECT seqs FROM anomalies WHERE code = 'DUPLICATE_EVENT'"
                           ).fetchall() == [([2, again],)]



def _resend(t: TableBuilder, event_id: str, shoe_id: str | None, round_no: int | None) -> int:
    """A line recorded again at t's table, as a device re-sends it: the event id, shoe and round
    given (a tap-in's body: DUPLICATE_EVENT reads only ids); returns the copy's seq."""
    t.clock += timedelta(seconds=1)
    return t.recorder.record(t.table_id, model.DealerTappedIn(dealer_id=t.dealer),
                             shoe_id=shoe_id, round_no=round_no, actor=t.dealer,
                             occurred_at=t.clock, recorded_at=t.clock, event_id=event_id)


def _line(con: duckdb.DuckDBPyConnection, table_id: str, seq: int) -> tuple:
    """(event id, shoe, round) of a projected event."""
    ((line),) = con.execute(
        "SELECT event_id, shoe_id, round_no FROM events WHERE table_id = $t AND seq = $s",
        {"t": table_id, "s": seq}).fetchall()
    return tuple(line)


def _two_tables(tmp_path: Path) -> tuple[EmbeddedLog, TableBuilder, TableBuilder]:
    """T01 and T02 opened and tapped in, in that order (event ids 1 to 4)."""
    log = EmbeddedLog(tmp_path / "log")
    recorder = recorder_for(log)
    a, b = TableBuilder(recorder, "T01"), TableBuilder(recorder, "T02")
    for t in (a, b):
        t.open_table()
        t.tap_in("D1")
    return log, a, b


def _duplicates(con: duckdb.DuckDBPyConnection) -> list:
    return sorted(con.execute("SELECT table_id, seqs FROM anomalies "
                              "WHERE code = 'DUPLICATE_EVENT'").fetchall())


# DUPLICATE_EVENT is per table: a copy of an event three shoes back must be found (though it
# lies before W), while another table's event id recorded here is no duplicate (the other
# table's copies are not this table's), and the other table's stretch is untouched
def test_a_copy_from_shoes_back_is_a_duplicate_and_another_tables_id_is_not(
        tmp_path: Path) -> None:
    log, a, b = _two_tables(tmp_path)
    b.new_shoe("S1")
    b.round_no = 1
    a_dealt: dict[str, int] = {}
    for shoe in ("S1", "S2", "S3"):
        a.new_shoe(shoe)
        a.round_no = 1
        a_dealt = a_dealt or a.deal_round("4C JS 7D", {1: 500})
    b.deal_round("3H 10S 6D", {1: 500})
    with _two_batches(tmp_path, log, a) as (con, second_batch):
        a.round_no = 2
        a.deal_round("5C QS 9D", {1: 500})
        # S1's wager id, 3 shoes back, in a line of S3's round 2 (a line re-sent as it was
        # would carry S1 and pull K back to S1 itself)
        copy = _resend(a, _line(con, "T01", a_dealt["wager1"])[0], "S3", 2)
        _resend(a, *_line(con, "T02", 2))  # T02's tap-in's id: no duplicate at T01
        b.round_no = 2
        b.deal_round("2H KS 8D", {1: 500})
        second_batch()
        assert _duplicates(con) == [("T01", [a_dealt["wager1"], copy])]


# An original and its copy in the same batch, with a copy of the tap-in two shoes back; then,
# after a restart (a new connection: a new Detector over the stored state), a batch in
# the same shoe with no copy: the stretch deletes the stored rows (their last copies lie in the
# shoe) and must find them again, the tap-in lying before W; then a third copy of the tap-in
def test_a_copy_in_its_originals_batch_and_a_stored_duplicate_survive_later_batches(
        tmp_path: Path) -> None:
    log, t = _table(tmp_path)  # one table: event ids are the seqs (recorder_for)
    t.new_shoe("S1")
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    t.flush()
    db = str(tmp_path / "v.duckdb")
    with duckdb.connect(db) as con:
        project(log, con, publish_alerts=False)
        t.new_shoe("S2")
        t.round_no = 1
        wager = t.deal_round("3H 10S 6D", {1: 500})["wager1"]
        wager_copy = _resend(t, str(uuid.UUID(int=wager)), "S2", 1)
        tap_copy = _resend(t, str(uuid.UUID(int=2)), None, None)
        t.flush()
        project(log, con, publish_alerts=False)
        assert _duplicates(con) == [("T01", [2, tap_copy]), ("T01", [wager, wager_copy])]
        assert _rows_apart(con) == ([], [])
        assert_money_exact(con)
    with duckdb.connect(db) as con:  # a restart
        t.round_no = 2
        t.deal_round("5C QS 9D", {1: 500})
        t.flush()
        project(log, con, publish_alerts=False)
        assert _rows_apart(con) == ([], [])
        assert_money_exact(con)
        third = _resend(t, str(uuid.UUID(int=2)), None, None)
        t.flush()
        project(log, con, publish_alerts=False)
        assert _duplicates(con) == [("T01", [2, tap_copy, third]), ("T01", [wager, wager_copy])]
        assert _rows_apart(con) == ([], [])
        assert_money_exact(con)


def _shoes(t: TableBuilder, names: tuple[str, ...]) -> dict[str, int]:
    """A round dealt in each of the shoes `names` at t's table; the first round's seqs."""
    first: dict[str, int] = {}
    for shoe in names:
        t.new_shoe(shoe)
        t.round_no = 1
        first = first or t.deal_round("4C JS 7D", {1: 500})
    return first


def _stored_duplicates(con: duckdb.DuckDBPyConnection) -> list:
    return sorted(con.execute(f"SELECT table_id, seqs FROM {STORED} "
                              "WHERE code = 'DUPLICATE_EVENT'").fetchall())


# The table's opening (TableOpened, event 1) re-sent by the pit terminal shoes later. The
# opening, from before the window's start, is already in the rounds window (every TableOpened
# is context there, as is the shoe state's load and close); the look-up of earlier copies found it
# again and the streams family read it twice: a stored row [1, 1, copy], "recorded 3 times",
# where the full evaluation has [1, copy]
def test_a_copy_of_the_opening_shoes_later_is_counted_once(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    _shoes(t, ("S1", "S2", "S3"))
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        copy = _resend(t, str(uuid.UUID(int=1)), None, None)
        second_batch()
        assert _stored_duplicates(con) == [("T01", [1, copy])]


# A shoe that dealt no card (loaded, a new dealer, one burn), then the cards of a shoe whose
# load was never recorded: the load's and the tap-in's burns are both still owed at S2's first
# card (two debts, one burn: MISSING_BURN). No card was dealt before K (S2's first event), so
# the window must reach back to the table's start: from the end of S1 (its burn) it held the
# load as context but not the tap-in, and S2's next batch deleted the row and did not find it
# again (an outside attack)
# (with `placed`, the same when S1's only CardDrawn is a card found face up and placed in the
# rack, no card dealt: the window started at that draw, after the tap-in; a second attack)
@pytest.mark.parametrize("placed", [False, True])
def test_burns_owed_before_any_card_was_dealt_stay_owed_in_later_batches(
        tmp_path: Path, placed: bool) -> None:
    log, t = _table(tmp_path)
    loaded, tapped = t.load("S1"), t.tap_in("D2")
    if placed:
        found = card("KH")
        t.emit(model.CardFoundFaceUp(rank=found.rank, suit=found.suit))
        t.emit(model.CardDrawn(rank=found.rank, suit=found.suit, face_up=True,
                               destination=Box.DISCARD_RACK))
    burned = t.burn("2C")
    t.shoe_id, t.round_no = "S2", 1  # S2's CardsLoaded never recorded
    t.wager(1, 500)
    first = t.draw("4C", Box.LEFT)
    proof = [("MISSING_BURN", [loaded, tapped, burned, first])]
    with duckdb.connect(str(store_at(tmp_path / "v.duckdb"))) as con:
        # (not _two_batches: a shoe with no load has no deck count, so no outcome to count)
        for _ in range(2):
            t.flush()
            project(log, con, publish_alerts=False)
            assert _stored_codes(con, "MISSING_BURN") == proof
            assert _rows_apart(con) == ([], [])
            assert money_differences(con)[:2] == (0, 0)
            t.draw("JS", Box.RIGHT)  # the second batch: S2's next card


def _stored_codes(con: duckdb.DuckDBPyConnection, code: str) -> list:
    return sorted(con.execute(f"SELECT code, seqs FROM {STORED} WHERE code = $c",
                              {"c": code}).fetchall())


# A copy of a copy: the tap-in (event 2) copied in shoe S3, then again in S6, three shoes on.
# The stored row [2, copy] lies wholly before the third batch's stretch (its greatest seq is in
# S3) and must be replaced by [2, copy, third], not kept beside it
def test_a_copy_of_a_copy_shoes_later_replaces_the_row(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    _shoes(t, ("S1", "S2"))
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        _shoes(t, ("S3",))
        copy = _resend(t, str(uuid.UUID(int=2)), "S3", 1)
        second_batch()
        assert _stored_duplicates(con) == [("T01", [2, copy])]
        _shoes(t, ("S4", "S5", "S6"))
        third = _resend(t, str(uuid.UUID(int=2)), "S6", 1)
        second_batch()
        assert _stored_duplicates(con) == [("T01", [2, copy, third])]
        # each proof raised once: the row [2, copy] and, when it grew, [2, copy, third]
        assert sorted(s for (s,) in con.execute(
            "SELECT seqs FROM alerts WHERE code = 'DUPLICATE_EVENT'").fetchall()) == [
                [2, copy], [2, copy, third]]


def _index(con: duckdb.DuckDBPyConnection) -> id_index.Index:
    """The index of ids the connection's detector used (projections/id_index.py)."""
    index = incremental._DETECTORS[con].index
    assert index is not None
    return index


def _index_file(db: str) -> sqlite3.Connection:
    return sqlite3.connect(db + id_index.SUFFIX, isolation_level=None)


# A restart between the original and its copy: the look-up reads the index kept beside the
# store (projections/id_index.py), not anything the first process held. An index whose hashes
# another DuckDB's hash() made (its meta differs) is not read: it is built anew from `events`,
# so the copy is still found (the stored rows stay current: no full evaluation)
def test_a_copy_across_a_restart_and_an_index_of_another_hash_are_found(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    wager = _shoes(t, ("S1", "S2"))["wager1"]
    t.flush()
    db = str(tmp_path / "v.duckdb")
    with duckdb.connect(db) as con:
        project(log, con, publish_alerts=False)
    with duckdb.connect(db) as con:  # a restart
        assert incremental.state_ready(con)
        _shoes(t, ("S3",))
        copy = _resend(t, str(uuid.UUID(int=wager)), "S3", 1)
        t.flush()
        project(log, con, publish_alerts=False)
        assert _index(con).built == "used"
        assert _stored_duplicates(con) == [("T01", [wager, copy])]
    with closing(_index_file(db)) as other:
        other.execute("UPDATE meta SET value = 'another hash' WHERE name = 'hash'")
    with duckdb.connect(db) as con:  # a restart with that index
        _shoes(t, ("S4",))
        tap = _resend(t, str(uuid.UUID(int=2)), "S4", 1)
        t.flush()
        project(log, con, publish_alerts=False)
        assert _index(con).built == "built"
        assert _stored_duplicates(con) == [("T01", [2, tap]), ("T01", [wager, copy])]
        assert _rows_apart(con) == ([], [])
        assert_money_exact(con)


# An original and two copies in one batch, in a shoe after two earlier shoes (W is the end of
# S2): no look-up is needed, and none must add or double a copy
def test_copies_whose_original_is_in_the_same_batch(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    _shoes(t, ("S1", "S2"))
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        t.new_shoe("S3")
        t.round_no = 1
        wager = t.deal_round("4C JS 7D", {1: 500})["wager1"]
        copies = [_resend(t, str(uuid.UUID(int=wager)), "S3", 1) for _ in range(2)]
        second_batch()
        assert _stored_duplicates(con) == [("T01", [wager, *copies])]


# One event id string at two tables: each table's copies are its own (DUPLICATE_EVENT is per
# table; the look-up hashes the table with the id). T01's tap-in id is re-sent at T01 and, in
# the same batch, recorded twice at T02 (whose first copy of it lies shoes back): two rows, each
# with its own table's seqs
def test_one_id_at_two_tables_makes_a_row_at_each(tmp_path: Path) -> None:
    log, a, b = _two_tables(tmp_path)
    tap_id = str(uuid.UUID(int=2))  # T01's tap-in (T01 opened first: ids 1 and 2)
    b_first = _resend(b, tap_id, None, None)  # T02 records T01's id once: no duplicate yet
    for t in (a, b):
        _shoes(t, ("S1", "S2"))
    with _two_batches(tmp_path, log, a) as (con, second_batch):
        assert _stored_duplicates(con) == []
        for t in (a, b):
            _shoes(t, ("S3",))
        a_copy = _resend(a, tap_id, "S3", 1)
        b_copy = _resend(b, tap_id, "S3", 1)
        second_batch()
        assert _stored_duplicates(con) == [("T01", [2, a_copy]), ("T02", [b_first, b_copy])]


# A card event re-sent shoes later is one card (macros.sql card_events_of keeps an id's first
# copy): the full evaluation drops the copy from the new round's cards, so the round's next card
# is its first, dealt to the wrong box. The card families must see the earlier copy (before W)
# to drop the later one too: the look-up brings a card event's copy into both windows
def test_a_card_event_copied_shoes_later_is_not_dealt_again(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    left = _shoes(t, ("S1", "S2"))["left"]
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        t.new_shoe("S3")
        t.round_no = 1
        t.wager(1, 500)
        t.clock += timedelta(seconds=1)  # S1's first card's line, re-sent into S3's round 1
        c = card("4C")
        copy = t.recorder.record(
            t.table_id, model.CardDrawn(rank=c.rank, suit=c.suit, face_up=True,
                                        destination=Box.LEFT),
            shoe_id="S3", round_no=1, actor=t.dealer, occurred_at=t.clock, recorded_at=t.clock,
            event_id=_line(con, "T01", left)[0])
        right = t.draw("10S", Box.RIGHT)
        second_batch()
        assert sorted(con.execute(f"SELECT code, seqs FROM {STORED} WHERE code IN "
                                  "('DUPLICATE_EVENT', 'WRONG_BOX')").fetchall()) == [
            ("DUPLICATE_EVENT", [left, copy]), ("WRONG_BOX", [right])]


# A store projected by this pitlog, then continued by one that does not keep the index (an
# older pitlog, a rolled-back deploy: it advances the store's checkpoints and leaves the index
# as it was), then by this pitlog again. The older one's batch is played here by projecting and
# then putting the index back as it stood before it. S2's wager, recorded in that batch, is
# copied in S4: the index, behind the checkpoints, is caught up from `events` at open, so the
# look-up finds it. Was (an index read as it stood): no DUPLICATE_EVENT stored
def test_an_index_an_older_pitlog_left_behind_is_caught_up(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    _shoes(t, ("S1",))
    t.flush()
    db = str(tmp_path / "v.duckdb")
    with duckdb.connect(db) as con:
        project(log, con, publish_alerts=False)
        with closing(_index_file(db)) as index:
            saved = {name: index.execute(f"SELECT * FROM {name}").fetchall()
                     for name in ("ids", "upto")}
        wager = _shoes(t, ("S2", "S3"))["wager1"]
        t.flush()
        project(log, con, publish_alerts=False)
        with closing(_index_file(db)) as index:  # what the older pitlog's batch leaves
            for name, rows in saved.items():
                index.execute(f"DELETE FROM {name}")
                index.executemany(f"INSERT INTO {name} VALUES "
                                  f"({', '.join('?' * len(rows[0]))})", rows)
    with duckdb.connect(db) as con:  # this pitlog again
        _shoes(t, ("S4",))
        copy = _resend(t, _line(con, "T01", wager)[0], "S4", 1)
        t.flush()
        project(log, con, publish_alerts=False)
        assert _index(con).built == "caught up"
        assert _stored_duplicates(con) == [("T01", [wager, copy])]
        assert _rows_apart(con) == ([], [])
        assert_money_exact(con)


# The index belongs to its store: a database copied elsewhere without it gets one built from
# its `events`, and a store given another store's index (same log, same checkpoints, but its
# key differs; here that index lacks S2's wager) does not read it but builds its own. In both
# the copy of S2's wager recorded in S4 is found.
# Was (an index read by its checkpoints alone): the second store stored no DUPLICATE_EVENT
def test_a_copied_store_and_another_stores_index_get_their_own(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    wager = _shoes(t, ("S1", "S2", "S3"))["wager1"]
    t.flush()
    first, other = str(tmp_path / "v.duckdb"), str(tmp_path / "other.duckdb")
    with duckdb.connect(first) as con:
        project(log, con, publish_alerts=False)
        ((h,),) = con.execute(f"SELECT {id_index.HASH} FROM events WHERE seq = $s",
                              {"s": wager}).fetchall()
        line = _line(con, "T01", wager)[0]
    with duckdb.connect(other) as con:
        project(log, con, publish_alerts=False)
    shutil.copy(first, tmp_path / "copy.duckdb")
    with closing(_index_file(first)) as index:
        assert index.execute("DELETE FROM ids WHERE h = ?", [h]).rowcount == 1
    for suffix in ("", "-wal", "-shm"):  # the first store's index, beside the other store
        if Path(first + id_index.SUFFIX + suffix).exists():
            shutil.copy(first + id_index.SUFFIX + suffix, other + id_index.SUFFIX + suffix)
    _shoes(t, ("S4",))
    copy = _resend(t, line, "S4", 1)
    t.flush()
    for db in (str(tmp_path / "copy.duckdb"), other):
        with duckdb.connect(db) as con:
            project(log, con, publish_alerts=False)
            assert _index(con).built == "built", db
            assert _stored_duplicates(con) == [("T01", [wager, copy])], db
            assert _rows_apart(con) == ([], [])


# A batch whose DuckDB transaction fails after the index's commit (here the round money's
# apply, the last step before the commit, fails once): the index holds the batch's rows and
# checkpoints, the store neither. Projected again by a new detector (as after a restart), the
# batch is exact, and a later copy of its wager is found once, with the index opened as it
# stood (ahead of the store: used, not rebuilt).
def test_a_batch_rolled_back_after_the_index_committed_is_exact_when_projected_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log, t = _table(tmp_path)
    _shoes(t, ("S1",))
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        wager = _shoes(t, ("S2", "S3"))["wager1"]
        kept = round_money.Keeper.apply

        def failing(self: round_money.Keeper, c: duckdb.DuckDBPyConnection,
                    changed: bool) -> None:
            raise duckdb.IOException("the disk is full")

        monkeypatch.setattr(round_money.Keeper, "apply", failing)
        with pytest.raises(ProjectionError, match="the disk is full"):
            second_batch()
        monkeypatch.setattr(round_money.Keeper, "apply", kept)
        assert con.execute("SELECT count(*) FROM events WHERE seq >= $s",
                           {"s": wager}).fetchall() == [(0,)]
        with closing(_index_file(str(tmp_path / "v.duckdb"))) as index:
            ((ahead,),) = index.execute("SELECT sum(next_offset) FROM upto").fetchall()
        ((stored,),) = con.execute("SELECT sum(next_offset) FROM checkpoints").fetchall()
        assert ahead > stored  # the failed batch's rows and checkpoints are in the index
        incremental._DETECTORS.pop(con).close()
        second_batch()  # the same batch again
        _shoes(t, ("S4",))
        copy = _resend(t, _line(con, "T01", wager)[0], "S4", 1)
        second_batch()
        assert _index(con).built == "used"
        assert _stored_duplicates(con) == [("T01", [wager, copy])]

# An index SQLite will not write (its -shm left read-only by a run under another user; here
# SQLite's query_only, since the tests run as root): the batch fails with the one Error that
# names the index, rolled back (not an "internal error" from BEGIN); writable again, exact.
def test_an_index_that_cannot_be_written_is_an_error_naming_it(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    _shoes(t, ("S1",))
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        wager = _shoes(t, ("S2",))["wager1"]
        _index(con).db.execute("PRAGMA query_only = 1")
        with pytest.raises(ProjectionError, match=r"index of event ids .*v\.duckdb\.detect-ids"):
            second_batch()
        assert con.execute("SELECT count(*) FROM events WHERE seq >= $s",
                           {"s": wager}).fetchall() == [(0,)]
        _index(con).db.execute("PRAGMA query_only = 0")
        second_batch()


# An index SQLite cannot open (a folder in its place here; permissions or a failing disk
# alike): the whole index was taken for damaged and deleted to be built anew, which failed on
# the folder with a bare "Is a directory". Now one Error naming the index, nothing touched, the
# batch rolled back; once the path is free, the index is built and the store exact. A file
# that is no SQLite database (damaged) is still built anew.
def test_an_index_that_cannot_be_opened_is_an_error_and_a_damaged_one_is_built_anew(
        tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    _shoes(t, ("S1",))
    t.flush()
    db = tmp_path / "v.duckdb"
    index_path = Path(str(db) + id_index.SUFFIX)
    index_path.mkdir()
    (index_path / "kept").write_text("not the index's to delete")
    with duckdb.connect(str(db)) as con:
        with pytest.raises(ProjectionError) as caught:
            project(log, con, publish_alerts=False)
        assert str(caught.value).startswith(f"cannot use the index of event ids {index_path}: "
                                            f"unable to open database file; check the disk")
        assert (index_path / "kept").read_text() == "not the index's to delete"
        assert con.execute("SELECT count(*) FROM events").fetchall() == [(0,)]
    shutil.rmtree(index_path)
    index_path.write_bytes(b"\x00garbage, not SQLite" * 100)
    _project_a_shoe_building_the_index(log, t, db, "S2")
    # Another program's SQLite file at the path (its `meta` has other columns: SQLite says
    # "no such column", an OperationalError like "unable to open"): built anew, as before.
    for suffix in ("", "-wal", "-shm"):
        Path(str(index_path) + suffix).unlink(missing_ok=True)
    with closing(sqlite3.connect(index_path)) as other, other:
        other.execute("CREATE TABLE meta (k, v)")
    _project_a_shoe_building_the_index(log, t, db, "S3")


# A page damaged inside the index (a disk fault): open reads only its first pages, so the next
# batch's look-up meets it. The Error said "check the disk ... deleted, it is built anew", but
# a run again met the same page. Now it says the index is damaged and to delete it; the batch
# is rolled back, and once deleted the index is built anew and the store exact.
def test_a_page_damaged_inside_the_index_is_an_error_that_says_to_delete_it(
        tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    for i in range(200):
        _shoes(t, (f"S{i}",))
    t.flush()
    db = tmp_path / "v.duckdb"
    project(log, db, publish_alerts=False)
    index_path = Path(str(db) + id_index.SUFFIX)
    with closing(sqlite3.connect(index_path)) as index:
        ((page,),) = index.execute("PRAGMA page_size").fetchall()
        ((last_root,),) = index.execute("SELECT max(rootpage) FROM sqlite_master").fetchall()
    data = bytearray(index_path.read_bytes())
    assert len(data) // page > last_root + 4  # the ids' rows fill pages past the tables' roots
    data[last_root * page:] = b"\xa5" * (len(data) - last_root * page)
    index_path.write_bytes(data)
    _shoes(t, ("N1",))
    t.flush()
    with duckdb.connect(str(db)) as con:
        ((before,),) = con.execute("SELECT count(*) FROM events").fetchall()
        with pytest.raises(ProjectionError) as caught:
            project(log, con, publish_alerts=False)
        assert str(caught.value).startswith(
            f"the index of event ids {index_path} is damaged (database disk image is "
            f"malformed); nothing of this batch was projected. Delete {index_path} and run "
            f"again"), caught.value
        assert con.execute("SELECT count(*) FROM events").fetchall() == [(before,)]
    index_path.unlink()
    with duckdb.connect(str(db)) as con:
        project(log, con, publish_alerts=False)
        assert _index(con).built == "built"
        assert con.execute("SELECT count(*) FROM events").fetchall() > [(before,)]
        assert _rows_apart(con) == ([], [])
        assert_money_exact(con)


def _project_a_shoe_building_the_index(log: EmbeddedLog, t: TableBuilder, db: Path,
                                       shoe: str) -> None:
    """A round in one more shoe, projected: the index is built anew, the store exact."""
    _shoes(t, (shoe,))
    t.flush()
    with duckdb.connect(str(db)) as con:
        project(log, con, publish_alerts=False)
        assert _index(con).built == "built"
        assert _rows_apart(con) == ([], [])
        assert_money_exact(con)


# project() given a path closes what it opened: the index too, so no -wal or -shm stays beside
# the store (`pitlog demo` signs its folder's files after projecting; --replace compares them)
def test_a_projection_into_a_path_leaves_the_index_closed(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    _shoes(t, ("S1",))
    t.flush()
    project(log, tmp_path / "v.duckdb", publish_alerts=False)
    assert sorted(p.name for p in tmp_path.glob("v.duckdb*")) == [
        "v.duckdb", "v.duckdb" + id_index.SUFFIX]


# The stored round money's keeper (projections/round_money.py) computes again only the rounds a
# batch can change (REDO). An ordinary batch (the next round, later in seq and in game order)
# redoes that round alone; the earlier rounds' rows stay as stored, equal to the views
def test_an_ordinary_batch_recomputes_the_money_of_its_own_round_only(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S1")
    for n, cards in enumerate(("4C JS 7D", "3H 10S 6D", "2D QS 8H"), start=1):
        t.round_no = n
        t.deal_round(cards, {1: 500})
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        t.round_no = 4
        t.deal_round("5C KD 9S", {1: 500, 2: 300})
        second_batch()
        assert con.execute(f"SELECT round_no FROM {round_money.WINDOW}.main.redo WHERE redo"
                           ).fetchall() == [(4,)]
        assert con.execute("SELECT handle_cents FROM round_money WHERE round_no = 4"
                           ).fetchall() == [(800,)]


def _round_two_around_a_burn(t: TableBuilder, round_one_after_burn: bool) -> dict[str, int]:
    """Shoe S1: round 1 dealt whole, then round 2 (a 1,000-cent wager, 3H 10S 6D) with a burn
    of no round after its first two cards and, when `round_one_after_burn`, a last line of
    round 1 right after that burn. Returns round 2's seqs (open_spread's, and its rack)."""
    t.new_shoe("S1")
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    second = t.open_spread(2, "3H 10S")
    t.round_no = None
    t.burn("9C")
    if round_one_after_burn:
        t.round_no = 1
        t.emit(model.DealerTappedOut(dealer_id="D1"))
    t.round_no = 2
    t.draw("6D", Box.MIDDLE)
    t.settle_by_the_rules(1, model.WagerKind.ORIGINAL, 1000, "3H 10S 6D")
    second["rack"] = t.rack("3H 10S 6D")
    return second


_EXCEPTIONS = "SELECT round_no, exceptions FROM round_money ORDER BY round_no"


# A late line of round 1 stamped after round 2 ended (occurred_at, not seq, is game order)
# stretches round 1's span over round 2 (sql/intruders.sql: a span ends at its last event but
# burns): a burn with no round inside round 2 is then matched to round 1, the earliest span
# around it, so round 2's wager is no longer IRREGULAR_ROUND and round 1's is. Round 2 has no
# event in the batch; a keeper that redid only the rounds with one kept round 2's old row
def test_a_late_line_that_stretches_an_earlier_round_moves_a_burn_out_of_the_next(
        tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    second = _round_two_around_a_burn(t, round_one_after_burn=False)
    t.round_no = 3
    t.deal_round("2D QS 8H", {1: 500})
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        assert con.execute(_EXCEPTIONS).fetchall() == [(1, 0), (2, 1), (3, 0)]
        late_clock = t.clock
        t.round_no = 1
        t.clock = EVENING + _at(second["closed"] + 2)  # after round 2's burn and third card
        t.emit(model.DealerTappedOut(dealer_id="D1"))
        t.clock = late_clock
        second_batch()
        assert con.execute(_EXCEPTIONS).fetchall() == [(1, 1), (2, 0), (3, 0)]


# Round 1's last line is stamped after round 2's first card, and a burn with no round comes
# out between them: the burn lies in both spans and belongs to round 1, the earliest. Round 2's
# rack is stamped after round 3's first line, so the batch of round 3 redoes round 2, but not
# round 1 (it ends before round 3 begins): round 2's row must still be computed with round 1's
# span beside it (round_money.REDO's second threshold), or the burn is matched to round 2
def test_a_redone_round_keeps_the_earlier_span_its_burn_belongs_to(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    rack = _round_two_around_a_burn(t, round_one_after_burn=True)["rack"]
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        assert con.execute(_EXCEPTIONS).fetchall() == [(1, 1), (2, 0)]
        t.round_no = 3
        t.clock = EVENING + _at(rack) - timedelta(seconds=2)  # its wager before round 2's rack
        t.deal_round("2D QS 8H", {1: 500})
        second_batch()
        assert con.execute(f"SELECT round_no FROM {round_money.WINDOW}.main.redo WHERE redo "
                           "ORDER BY 1").fetchall() == [(2,), (3,)]
        assert con.execute(_EXCEPTIONS).fetchall() == [(1, 1), (2, 0), (3, 0)]


# A burn line of shoe S2 with no round, stamped (occurred_at) inside S1's round 1, after its
# raises closed: the full evaluation makes it an intruder of S1's round 1 (sql/intruders.sql
# matches cards to spans by game order, whatever their shoe): BURN_DURING_ROUND there, and the
# round's wager IRREGULAR_ROUND. A stretch from S2 (by seq) with its window after S1 left
# neither the stored anomaly row nor the stored round money of S1's round 1 right (found on
# integ14 and main alike): K now reaches back to S1, whose latest event is stamped after the
# burn (incremental._stretch_start)
def test_a_burn_of_a_later_shoe_stamped_inside_an_earlier_round_is_stored_as_evaluated(
        tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    _shoes(t, ("S1",))
    inside = t.clock - timedelta(seconds=3)  # after S1 round 1's raises closed, before its rack
    _shoes(t, ("S2",))
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        later, t.round_no, t.clock = t.clock, None, inside
        t.burn("9C")
        t.clock = later
        second_batch()
        assert con.execute("SELECT round_no, exceptions FROM round_money WHERE shoe_id = 'S1'"
                           ).fetchall() == [(1, 1)]


def _stamped(t: TableBuilder, at: datetime, shoe_id: str | None, round_no: int | None,
             line: Callable[[], int]) -> int:
    """`line()` recorded now (the table's next seq) for `shoe_id` and `round_no`, stamped
    `at` (occurred_at); the builder's clock, shoe and round are left as they were."""
    kept = t.clock, t.shoe_id, t.round_no
    t.clock, t.shoe_id, t.round_no = at - timedelta(seconds=1), shoe_id, round_no  # emit: +1 s
    try:
        return line()
    finally:
        t.clock, t.shoe_id, t.round_no = kept


def _burned_during(con: duckdb.DuckDBPyConnection) -> list:
    return con.execute(f"SELECT shoe_id, round_no, seqs FROM {STORED} "
                       "WHERE code = 'BURN_DURING_ROUND' ORDER BY ALL").fetchall()


def _exceptions(con: duckdb.DuckDBPyConnection, shoe_id: str) -> list:
    return con.execute("SELECT round_no, exceptions FROM round_money WHERE shoe_id = $s "
                       "ORDER BY round_no", {"s": shoe_id}).fetchall()


def _exact(con: duckdb.DuckDBPyConnection) -> None:
    """The stored rows equal a full evaluation, and the stored round money the views' (what
    _two_batches checks on leaving, between two batches)."""
    assert _rows_apart(con) == ([], [])
    assert_money_exact(con)


def _k_is_first_of(con: duckdb.DuckDBPyConnection) -> str | None:
    """The shoe whose first event is the last batch's K (its one table's scope)."""
    found = con.execute("SELECT s.shoe_id FROM pitlog_detect.main.scope AS sc "
                        "JOIN detect_shoes AS s ON s.table_id = sc.table_id "
                        "AND s.first_seq = sc.k").fetchall()
    return found[0][0] if len(found) == 1 else None


def _reached_back(con: duckdb.DuckDBPyConnection) -> float:
    """How many tables the last batch's K reached back to an earlier shoe by game order."""
    return incremental._DETECTORS[con].stretches["reached_back"]


# A burn of the current shoe with no round, stamped back in S1 (two rounds): between its two
# rounds (in no round's span: no row), inside its last round, or, with S3 current, inside round
# 1 two shoes back (S2's events are stamped after it too, so S2 joins the stretch as well). The
# burn is an intruder of the S1 round it lies in (BURN_DURING_ROUND, IRREGULAR_ROUND), so K
# reaches back to S1 in its batch, and in every later batch whose stretch still holds it (the
# next round of its shoe: its row [S1's first card, burn] is replaced and must be found again),
# but no longer once a new shoe's batch is the stretch
@pytest.mark.parametrize(("later", "where"), [(("S2",), "between"), (("S2",), "last"),
                                              (("S2", "S3"), "first")])
def test_a_burn_stamped_back_in_an_earlier_shoe_is_exact_until_a_new_shoe(
        tmp_path: Path, later: tuple[str, ...], where: str) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S1")
    t.round_no = 1
    first = t.deal_round("4C JS 7D", {1: 500})
    t.round_no = 2
    second = t.deal_round("3H 10S 6D", {1: 500})
    _shoes(t, later)
    at = {"first": first["third"], "between": second["wager1"], "last": second["third"]}[where]
    inside = {"first": (1, first["left"]), "between": None, "last": (2, second["left"])}[where]
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        burn = _stamped(t, EVENING + _at(at), t.shoe_id, None, lambda: t.burn("9C"))
        second_batch()
        assert _reached_back(con) == 1
        assert _k_is_first_of(con) == "S1"
        rows = [] if inside is None else [("S1", inside[0], [inside[1], burn])]
        assert _burned_during(con) == rows
        assert _exceptions(con, "S1") == [(r, int(inside is not None and inside[0] == r))
                                          for r in (1, 2)]
        _exact(con)
        t.round_no = 2  # the burn's shoe goes on: its row is replaced, so found again
        t.deal_round("5D 9H 2S", {1: 500})
        second_batch()
        assert _reached_back(con) == 1
        assert _burned_during(con) == rows
        _exact(con)
        _shoes(t, ("S9",))  # K from the burn's shoe (the table's last), so still back
        second_batch()
        t.round_no = 2  # S9's round 2: the stretch is S9, whose cards are stamped after S1
        t.deal_round("8S 2D QH", {1: 500})
        second_batch()
        assert _reached_back(con) == 0
        assert _k_is_first_of(con) == "S9"


# A burn with no shoe at all (a device that lost the shoe id), recorded during S2 and stamped
# inside S1's round 1: no shoe's extent holds it, so detect_context keeps it (the cards with no
# shoe), and the next batch of S2, whose stretch holds it by seq, reaches back to S1 again; else
# its row [S1's first card, burn], replaced with the stretch, was not found again
def test_a_burn_with_no_shoe_stamped_back_in_an_earlier_shoe_stays_exact(
        tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    first = _shoes(t, ("S1",))
    _shoes(t, ("S2",))
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        burn = _stamped(t, EVENING + _at(first["third"]), None, None, lambda: t.burn("9C"))
        second_batch()
        assert _reached_back(con) == 1
        assert _burned_during(con) == [("S1", 1, [first["left"], burn])]
        _exact(con)
        t.round_no = 2
        t.deal_round("5D 9H 2S", {1: 500})
        second_batch()
        assert _reached_back(con) == 1
        assert _burned_during(con) == [("S1", 1, [first["left"], burn])]


# A card dealt for S2's round 2, stamped between S1 round 1's first two cards: a card of
# another shoe inside that round (sql/intruders.sql), which makes S1's round IRREGULAR_ROUND
# with no anomaly row of its own (the card is in order within S2). Round 2 then goes on in
# the next batch: its span, from that early card to its rack, now holds S1's later cards,
# so S2's round 2 is irregular too. Both batches reach back to S1
def test_a_card_of_a_later_round_stamped_inside_an_earlier_shoe_is_exact(
        tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    first = _shoes(t, ("S1",))
    _shoes(t, ("S2",))
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        _stamped(t, EVENING + _at(first["left"]), "S2", 2, lambda: t.draw("5D", Box.LEFT))
        second_batch()
        assert _reached_back(con) == 1
        assert _exceptions(con, "S1") == [(1, 1)]
        assert _exceptions(con, "S2") == [(1, 0), (2, 0)]
        _exact(con)
        t.round_no = 2
        t.wager(1, 500)
        t.draw("9H", Box.RIGHT)
        t.say(model.Meaning.SPREAD, 3)
        t.say(model.Meaning.RAISES_CLOSED)
        t.draw("2S", Box.MIDDLE)
        t.say(model.Meaning.THIRD_CARD, card("2S").rank)
        t.settle_by_the_rules(1, model.WagerKind.ORIGINAL, 500, "5D 9H 2S")
        t.rack("5D 9H 2S")
        second_batch()
        assert _reached_back(con) == 1
        assert _exceptions(con, "S1") == [(1, 1)]
        assert _exceptions(con, "S2") == [(1, 0), (2, 1)]


# A store whose state was made before detect_shoes kept the shoes' game-order extents
# (card_us, last_us) and detect_context the cards with no shoe: the next projection builds the
# state again from `events` (incremental.upgrade_state), without evaluating the store whole
# (the stored table is the same one), and the next batch reaches back as a new store's would
def test_a_state_without_the_shoes_game_order_is_built_again_not_evaluated_whole(
        tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    first = _shoes(t, ("S1",))
    _shoes(t, ("S2",))
    burn = _stamped(t, EVENING + _at(first["third"]), None, None, lambda: t.burn("9C"))
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        con.execute("ALTER TABLE detect_shoes DROP COLUMN card_us")
        con.execute("ALTER TABLE detect_shoes DROP COLUMN last_us")
        con.execute("DELETE FROM detect_context WHERE event_type = 'CardBurned'")
        ((oid,),) = con.execute("SELECT table_oid FROM duckdb_tables() WHERE table_name = $t",
                                {"t": STORED}).fetchall()
        t.round_no = 2
        t.deal_round("5D 9H 2S", {1: 500})
        second_batch()
        assert con.execute("SELECT table_oid FROM duckdb_tables() WHERE table_name = $t",
                           {"t": STORED}).fetchall() == [(oid,)]
        assert con.execute("SELECT seq FROM detect_context WHERE event_type = 'CardBurned'"
                           ).fetchall() == [(burn,)]
        assert _reached_back(con) == 1
        assert _burned_during(con) == [("S1", 1, [first["left"], burn])]


# The same burn line, but of S1 itself, arriving after S2's: S1 received an event, so K is S1's
# first event by seq already (a touched shoe; S1 then has events on both sides of S2), without
# game order
# Shoes loaded one after another with no ShoeClosed, the table's first card in a later batch:
# the window starts near the last load, so a debt of a replaced shoe, its burns and its
# shuffle lay before it. A debt dies with its shoe, replaced too (13:47-20.31(d)1: the burn is
# the new shoe's first card), so only the last shoe's load and what follows it decide; before,
# the batches stored "No card burned after shoe S1" (burned at once) or lost a row.
@pytest.mark.parametrize("before", ["load S1, burn, load S2, load S3",
                                    "load S1, tap D2, burn, load S2, burn",
                                    "reshuffling S1, reshuffling S2"])
def test_a_shoe_replaced_before_any_card_takes_its_burn_debts_with_it(
        tmp_path: Path, before: str) -> None:
    log, t = _table(tmp_path)
    seqs: dict[str, int] = {}
    for n, step in enumerate(before.split(", ")):
        kind, _, arg = step.partition(" ")
        if kind == "reshuffling":  # 13:69F-6.9: a continuous shuffler's shoe owes no burn
            t.shoe_id = arg
            t.emit(model.ShuffleCompleted(method=model.ShuffleMethod.CONTINUOUS_SHUFFLER))
        seqs[step] = (t.load(arg) if kind in ("load", "reshuffling") else
                      t.tap_in(arg) if kind == "tap" else t.burn(f"{n + 2}C"))
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        t.round_no = 1
        left = t.deal_round("4S 9H 8C", {1: 1000})["left"]
        second_batch()
        stored = con.execute(f"SELECT seqs, explanation FROM {STORED} "
                             "WHERE code = 'MISSING_BURN'").fetchall()
    # S3's load alone is owed; S2's burn paid S2's load (S1's load and D2's tap died with S1);
    # S2's reshuffling shoe owes nothing
    assert stored == ([([seqs["load S3"], left], "No card burned after shoe S3 was loaded, "
                                                 "before 4S was dealt to the left box")]
                      if before.endswith("load S3") else [])


def test_a_late_burn_of_the_earlier_shoe_itself_needs_no_reach_by_game_order(
        tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    first = _shoes(t, ("S1",))
    _shoes(t, ("S2",))
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        burn = _stamped(t, EVENING + _at(first["third"]), "S1", None, lambda: t.burn("9C"))
        second_batch()
        assert _reached_back(con) == 0
        assert _k_is_first_of(con) == "S1"
        assert _burned_during(con) == [("S1", 1, [first["left"], burn])]


# A card with no shoe for round 3 (a device that lost the shoe id), recorded before S1; in a
# later batch another event with no shoe for round 3, stamped after S2: sql/intruders.sql
# groups the cards with no shoe by round, so round 3's span now runs from the first card over
# S1 and S2, and their burns lie inside it (BURN_DURING_ROUND, seqs all before the batch). K
# stayed at the new event: those rows were never stored, and a new card was judged the round's
# first (WRONG_BOX for the right box), which the full evaluation does not find. The card with
# no shoe of the same round now joins the stretch
@pytest.mark.parametrize("late", ["card", "wager"])
def test_an_event_with_no_shoe_joins_its_rounds_earlier_card_with_no_shoe(
        tmp_path: Path, late: str) -> None:
    log, t = _table(tmp_path)
    early = _stamped(t, t.clock + timedelta(seconds=1), None, 3,
                     lambda: t.draw("5D", Box.LEFT))
    t.clock += timedelta(seconds=2)
    _shoes(t, ("S1",))
    _shoes(t, ("S2",))
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        _stamped(t, t.clock + timedelta(seconds=5), None, 3,
                 (lambda: t.draw("6D", Box.RIGHT)) if late == "card" else
                 (lambda: t.wager(1, 500)))
        second_batch()
        assert _reached_back(con) == 1
        burns = con.execute("SELECT seq FROM events WHERE event_type = 'CardBurned' "
                            "ORDER BY seq").fetchall()
        assert len(burns) == 2  # S1's and S2's
        assert _burned_during(con) == [(None, 3, [early, b]) for (b,) in burns]


# A table whose device stamps no shoe id: its rounds are keyed (table, no shoe, round), and the
# ledger and the rounds family join a round's wagers, announcements and settlements with no shoe
# to its cards with no shoe (they joined nothing, so a correct round showed each wager twice,
# IN_PLAY and NOT_OWED, with WRONG_SETTLEMENT and WRONG_ANNOUNCEMENT rows it did not earn). The
# stretch of a batch holds every event with no shoe of the rounds it touches: projected in
# three batches, split inside each part of the two rounds, the stored rows equal a full evaluation.
_NO_SHOE_EVENTS = 21


def _deal_with_no_shoe(t: TableBuilder) -> None:
    """Round 1 by the rules (a raise, both seats paid right); round 2 three of a kind paid at
    10 to 1 where 11 to 1 is owed (13:47-20.31(d)9): both with no shoe, 21 events."""
    t.round_no = 1
    t.deal_round("4S QD 9H", {1: 1000, 2: 500}, {1: 1000})
    t.round_no = 2

    def underpaid(seat: int, kind: model.WagerKind, cents: int, cards: object) -> int:
        return t.settle(seat, kind, model.SettledAs.WON, cents * 10, 10)
    t.deal_round("7C 7D 7H", {1: 500}, settle=underpaid)


def _project_after(t: TableBuilder, split: int, second_batch: Callable[[], None],
                   check: Callable[[], None]) -> list[int]:
    """From now on, `t` projects the batch so far (`second_batch`) right after its `split`-th
    event and then runs `check`; returns the count of events emitted since (one item)."""
    emit, emitted = t.emit, [0]

    def emit_then_maybe_project(event: model.DomainEvent, *, actor: str | None = None) -> int:
        seq = emit(event, actor=actor)
        emitted[0] += 1
        if emitted[0] == split:
            second_batch()
            check()
        return seq
    t.emit = emit_then_maybe_project  # type: ignore[method-assign]
    return emitted


# After: the first wager; the left card; "spread 7"; the third card; the first settlement;
# round 2's first card; its "pair"; its "three of a kind" (before its settlement).
@pytest.mark.parametrize("split", [1, 3, 5, 8, 10, 15, 17, 19])
def test_rounds_with_no_shoe_are_judged_on_their_own_events_in_any_batches(
        tmp_path: Path, split: int) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S1")  # a round of shoe S1 first, numbered 1 as the first round with no shoe
    t.round_no = 1
    t.deal_round("5S 9H 7C", {1: 1000})
    t.shoe_id = None

    with _two_batches(tmp_path, log, t) as (con, second_batch):
        def check() -> None:
            assert _rows_apart(con) == ([], [])
            assert money_differences(con)[:2] == (0, 0)
        emitted = _project_after(t, split, second_batch, check)
        _deal_with_no_shoe(t)
        assert emitted[0] == _NO_SHOE_EVENTS
        second_batch()
        ledger = con.execute("SELECT shoe_id, round_no, seat, wager_kind, amount_cents, status "
                             "FROM ledger ORDER BY ALL NULLS FIRST").fetchall()
        codes = con.execute("SELECT code, shoe_id, round_no, count(*) FROM anomalies "
                            "GROUP BY ALL ORDER BY ALL NULLS FIRST").fetchall()
    assert ledger == [(None, 1, 1, "ORIGINAL", 1000, "OK"), (None, 1, 1, "RAISE", 1000, "OK"),
                      (None, 1, 2, "ORIGINAL", 500, "OK"),
                      (None, 2, 1, "ORIGINAL", 500, "WRONG_AMOUNT"),
                      ("S1", 1, 1, "ORIGINAL", 1000, "OK")]
    # Every card with no shoe is out of place (CARD_OUTSIDE_ROUND), and round 2's payout is
    # 10 to 1 (WRONG_PAYOUT): nothing else, so no announcement or settlement is flagged that
    # was made right.
    assert codes == [("CARD_OUTSIDE_ROUND", None, 1, 3), ("CARD_OUTSIDE_ROUND", None, 2, 3),
                     ("WRONG_PAYOUT", None, 2, 1)]


# A wager with no shoe, then two shoes, then its settlement with no shoe in a later batch: in
# a round (round 0 is one the views list) the two are one ledger row, and the batch's stretch
# reaches back to the wager (without round 0 among the rounds that do, the stored rows kept a
# WRONG_SETTLEMENT "no wager" the full evaluation does not make); with no round they are one
# ledger row too (session 44: they paired with nothing, the stake counted open and the payment
# NOT_OWED), and the payment is flagged at once (no round to finish:
# settled on no hand). In a round, the payment with no card dealt is WRONG_SETTLEMENT once the
# round is finished (13:47-20.31(d)7, (d)10, (d)14: no hand decided it), in the third batch,
# whose dealer change finishes it.
@pytest.mark.parametrize("round_no", [0, None, 1])
def test_a_wager_with_no_shoe_meets_its_settlement_batches_later_in_a_round_or_none(
        tmp_path: Path, round_no: int | None) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S0")
    t.round_no = 1
    t.deal_round("4C JS 7D", {2: 500})
    t.shoe_id, t.round_no = None, round_no
    wager = t.wager(1, 1000)
    t.new_shoe("S1")
    t.round_no = 1
    t.deal_round("5S 9H 7C", {2: 1000})
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        t.shoe_id, t.round_no = None, round_no
        paid = t.settle(1, model.WagerKind.ORIGINAL, model.SettledAs.WON, 1000, 1)
        second_batch()
        rows = con.execute("SELECT status, wager_seqs, settlement_seqs FROM ledger "
                           "WHERE shoe_id IS NULL ORDER BY status").fetchall()
        flagged = con.execute("SELECT seqs FROM anomalies WHERE shoe_id IS NULL "
                              "AND code = 'WRONG_SETTLEMENT'").fetchall()
        assert _rows_apart(con) == ([], [])
        t.shoe_id, t.round_no = "S1", None
        t.tap_in("D2")  # the table goes on: a round that ended with the payment is finished
        second_batch()
        finished = con.execute(f"SELECT seqs FROM {STORED} WHERE shoe_id IS NULL "
                               "AND code = 'WRONG_SETTLEMENT'").fetchall()
    assert rows == [("SETTLED_BEFORE_DECISION", [wager], [paid])]
    if round_no is None:
        assert flagged == finished == [([wager, paid],)]
    else:  # settled though no card of the round was dealt: flagged once the round is finished
        assert flagged == []
        assert finished == [([wager, paid],)]


# A wager settled before its round's first two cards were out (13:47-20.31(d)7, (d)10, (d)14:
# WRONG_SETTLEMENT once the round is finished), in a round of shoe S1 and in one with no shoe,
# projected in two batches split at each of its events: no batch stores the row before the
# round is finished (the next round's wager), the batch that finishes it does, and the stored
# rows equal a full evaluation after every batch.
@pytest.mark.parametrize("shoe", ["S1", None])
@pytest.mark.parametrize("split", [1, 2, 3, 4, 5])
def test_a_settlement_before_the_first_two_cards_is_flagged_once_finished_in_any_batches(
        tmp_path: Path, shoe: str | None, split: int) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S1")
    t.round_no = 1
    t.deal_round("5S 9H 7C", {1: 1000})
    t.shoe_id = shoe

    def flagged(con: duckdb.DuckDBPyConnection) -> list:
        return con.execute(f"SELECT round_no, seqs FROM {STORED} "
                           "WHERE code = 'WRONG_SETTLEMENT'").fetchall()

    with _two_batches(tmp_path, log, t) as (con, second_batch):
        def check() -> None:
            assert _rows_apart(con) == ([], [])
            assert len(flagged(con)) == (0 if split < 5 else 1)
        emitted = _project_after(t, split, second_batch, check)
        t.round_no = 2
        wager = t.wager(1, 1000)
        t.draw("4S", Box.LEFT)  # no second card: no hand
        paid = t.settle(1, model.WagerKind.ORIGINAL, model.SettledAs.VOID, 1000)
        t.rack("4S")
        t.round_no = 3
        t.wager(1, 500)  # the next round: round 2 is finished
        assert emitted[0] == 5
        second_batch()
        assert flagged(con) == [(2, [wager, paid])]


# Cards dealt for round 0 (no round of play, 13:47-20.31(d)5: cards dealt outside any round),
# arriving over several batches: a pair and its third card between rounds 1 and 2, racked with
# no round or never, then the shoe closed. After every batch the stored rows equal a full
# evaluation (_two_batches); in the end each card is CARD_OUTSIDE_ROUND, and CARD_UNACCOUNTED
# only once the shoe closes without a rack holding it; nothing judges round 0 as a hand.
@pytest.mark.parametrize("racked", [False, True])
def test_cards_dealt_for_round_0_over_several_batches_are_cards_with_no_round(
        tmp_path: Path, racked: bool) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S1")
    t.round_no = 1
    t.deal_round("4S 9H 7C", {1: 1000})
    with _two_batches(tmp_path, log, t) as (con, next_batch):
        t.round_no = 0
        cards = [t.draw("7C", Box.LEFT)]
        next_batch()
        assert _rows_apart(con) == ([], [])
        cards += [t.draw("7D", Box.RIGHT), t.draw("KS", Box.MIDDLE)]
        t.round_no = None
        if racked:
            t.rack("7C 7D KS")
        next_batch()
        assert _rows_apart(con) == ([], [])
        t.round_no = 2
        t.deal_round("5S JH 8C", {1: 1000})
        t.round_no = None
        next_batch()
        before_close = con.execute(f"SELECT code, round_no, seqs FROM {STORED} "
                                   "ORDER BY ALL").fetchall()
        assert _rows_apart(con) == ([], [])
        closed = t.emit(model.ShoeClosed(cards_remaining=40))
        next_batch()
        stored = con.execute(f"SELECT code, round_no, seqs FROM {STORED} ORDER BY ALL").fetchall()
    outside = [("CARD_OUTSIDE_ROUND", None, [seq]) for seq in cards]
    assert before_close == outside
    assert stored == outside + ([] if racked else
                                [("CARD_UNACCOUNTED", None, [seq, closed]) for seq in cards])


# A load or tap-in line recorded again under its event id (a device re-sending it, a producer
# retry) is one load or one tap-in: DUPLICATE_EVENT is the finding, not a burn owed a second
# time. The copy owed its own burn: a tap-in re-sent while shoe S2 was in play, and S1's load
# re-sent during S2 (a load of another shoe, which also ended S2's debts), each raised
# MISSING_BURN at the next card dealt. Live, the tap-in's original lies before W (a shoe
# back): the look-up of earlier copies brings it to the shoes family's window too, so the
# window drops the copy as the full evaluation does (the load's copy names S1, so K reaches
# back to S1 and the original is in the window; _two_batches: stored rows equal to the full
# evaluation after each batch).
@pytest.mark.parametrize("resent", ["tap-in", "load"])
def test_a_load_or_tap_in_recorded_again_owes_no_second_burn(tmp_path: Path,
                                                              resent: str) -> None:
    log, t, s1 = _two_shoes(tmp_path)  # the tap-in: id 2; S1's load: id s1
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        t.clock += timedelta(seconds=1)
        event: model.DomainEvent = (model.DealerTappedIn(dealer_id="D1") if resent == "tap-in"
                                    else model.CardsLoaded(decks=6))
        copy_of = 2 if resent == "tap-in" else s1
        again = t.recorder.record(
            t.table_id, event, shoe_id=None if resent == "tap-in" else "S1", round_no=None,
            actor="D1", occurred_at=t.clock, recorded_at=t.clock,
            event_id=str(uuid.UUID(int=copy_of)))
        t.round_no = 2
        t.deal_round("5C 9D 2H", {1: 500})  # no burn: none is owed
        second_batch()
        for source in (STORED, "anomalies"):
            assert con.execute(f"SELECT code, seqs FROM {source} WHERE code IN "
                               "('MISSING_BURN', 'DUPLICATE_EVENT')").fetchall() == [
                ("DUPLICATE_EVENT", [copy_of, again])]


# The same in one batch, the copy right after its original (a producer's retry): one load, one
# burn owed and paid
def test_a_load_recorded_twice_in_a_row_owes_one_burn(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    load = t.load("S1")
    t.clock += timedelta(seconds=1)
    again = t.recorder.record(t.table_id, model.CardsLoaded(decks=6), shoe_id="S1",
                              round_no=None, actor="D1", occurred_at=t.clock,
                              recorded_at=t.clock, event_id=str(uuid.UUID(int=load)))
    t.burn("2C")
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        t.round_no = 2
        t.deal_round("3H 10S 6D", {1: 500})
        second_batch()
        assert con.execute(f"SELECT code, seqs FROM {STORED} WHERE code IN "
                           "('MISSING_BURN', 'DUPLICATE_EVENT')").fetchall() == [
            ("DUPLICATE_EVENT", [load, again])]


# From an outside review: a tap-in copy between W and K (after the last card dealt before K,
# here S1's round) whose original lies before W. Its DUPLICATE_EVENT row ends before K, so the
# look-up of earlier copies did not ask for its id; the cards window kept it as a tap-in owing
# a burn, which the full evaluation drops: MISSING_BURN [copy, card] stored, none in the view.
# The ids of the loads and tap-ins in the cards window are looked up too.
def test_a_tap_in_copy_between_w_and_k_whose_original_is_before_w_owes_nothing(
        tmp_path: Path) -> None:
    log, t = _table(tmp_path)  # the tap-in is event 2, id 2
    t.new_shoe("S1")
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    t.clock += timedelta(seconds=1)
    again = t.recorder.record(t.table_id, model.DealerTappedIn(dealer_id="D1"), shoe_id=None,
                              round_no=None, actor="D1", occurred_at=t.clock,
                              recorded_at=t.clock, event_id=str(uuid.UUID(int=2)))
    t.shoe_id, t.round_no = "S2", 1  # the next shoe's load line lost: S1 never closed
    t.wager(1, 500)
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        t.draw("3H", Box.LEFT)
        t.draw("10S", Box.RIGHT)
        second_batch()
        for source in (STORED, "anomalies"):
            assert con.execute(f"SELECT code, seqs FROM {source} WHERE code IN "
                               "('MISSING_BURN', 'DUPLICATE_EVENT')").fetchall() == [
                ("DUPLICATE_EVENT", [2, again])]


# A ShoeClosed recorded again the same way: a debt dies with its shoe at its ShoeClosed, so a
# copy of S1's close re-sent while S2 was in play ended the new dealer's debt there, and the
# card dealt with no burn after it was not flagged (a missing MISSING_BURN). Each close once;
# live, with the copy's shoe (K reaches back to S1) and with none (the original before W,
# found by the look-up).
@pytest.mark.parametrize("copy_shoe", ["S1", None])
def test_a_shoe_close_recorded_again_does_not_end_the_next_shoes_burn_debts(
        tmp_path: Path, copy_shoe: str | None) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S1")
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    closed = t.emit(model.ShoeClosed(cards_remaining=300))
    t.new_shoe("S2")
    t.round_no = 1
    t.deal_round("3H 10S 6D", {1: 500})
    tap = t.tap_in("D2")  # owes a burn before the next card
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        t.clock += timedelta(seconds=1)
        again = t.recorder.record(t.table_id, model.ShoeClosed(cards_remaining=300),
                                  shoe_id=copy_shoe, round_no=None, actor="D2",
                                  occurred_at=t.clock, recorded_at=t.clock,
                                  event_id=str(uuid.UUID(int=closed)))
        t.round_no = 2
        dealt = t.deal_round("5C 9D 2H", {1: 500})  # no burn: D2's is owed
        second_batch()
        for source in (STORED, "anomalies"):
            assert con.execute(f"SELECT code, seqs FROM {source} WHERE code IN "
                               "('MISSING_BURN', 'DUPLICATE_EVENT') ORDER BY code"
                               ).fetchall() == [("DUPLICATE_EVENT", [closed, again]),
                                                ("MISSING_BURN", [tap, dealt["left"]])]


def _resent(t: TableBuilder, event: model.DomainEvent, shoe: str | None,
            event_id: str | None = None, actor: str = "D1") -> int:
    t.clock += timedelta(seconds=1)
    return t.recorder.record(t.table_id, event, shoe_id=shoe, round_no=None, actor=actor,
                             occurred_at=t.clock, recorded_at=t.clock, event_id=event_id)


def _closed(t: TableBuilder, shoe: str | None, event_id: str | None = None) -> int:
    return _resent(t, model.ShoeClosed(cards_remaining=300), shoe, event_id)


def _round_with_no_burn(t: TableBuilder, second_batch: Callable[[], None]) -> int:
    """Round 2 dealt with no burn before it, projected; returns its first card's seq."""
    t.round_no = 2
    dealt = t.deal_round("5C 9D 2H", {1: 500})
    second_batch()
    return dealt["left"]


def _assert_missing_burns(con: duckdb.DuckDBPyConnection, expected: list[list[int]]) -> None:
    """MISSING_BURN's proofs, stored and in a full evaluation."""
    for source in (STORED, "anomalies"):
        assert [seqs for (seqs,) in con.execute(
            f"SELECT seqs FROM {source} WHERE code = 'MISSING_BURN' ORDER BY seqs").fetchall()
                ] == expected, source


# A ShoeClosed of a shoe other than the one in play (S1's close arriving late, under an id of its
# own, or a close naming a shoe never loaded) ended the shoe in play's burn debts as a close of
# it would: a new dealer who tapped in while S2 was in play owed nothing after it, and the card
# dealt with no burn was not flagged. A close ends the debts of the shoe in play only (13:47-20.31
# (d)1: the new dealer burns one card before dealing). Split before and after the close, the
# tap-in before and after it.
@pytest.mark.parametrize("closed_shoe", ["S1", "S9"])
@pytest.mark.parametrize("tap_first", [True, False])
@pytest.mark.parametrize("split_before_close", [True, False])
def test_a_close_of_another_shoe_does_not_end_the_shoe_in_plays_burn_debts(
        tmp_path: Path, closed_shoe: str, tap_first: bool, split_before_close: bool) -> None:
    log, t, _ = _two_shoes(tmp_path)
    seqs: dict[str, int] = {}

    def close_and_tap() -> None:
        for step in (("tap", "close") if tap_first else ("close", "tap")):
            if step == "tap":
                seqs["tap"] = t.tap_in("D2")  # owes a burn before the next card
            else:
                seqs["close"] = _closed(t, closed_shoe)

    if not split_before_close:
        close_and_tap()
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        if split_before_close:
            close_and_tap()
        _assert_missing_burns(con, [[seqs["tap"], _round_with_no_burn(t, second_batch)]])


# The shoe in play's own close still ends its debts, a close naming no shoe too: a dealer who
# taps in after it owes nothing until the next shoe is loaded (whose burn covers the dealer).
@pytest.mark.parametrize("closed_shoe", ["S2", None])
def test_a_close_of_the_shoe_in_play_still_ends_its_debts(tmp_path: Path,
                                                          closed_shoe: str | None) -> None:
    log, t, _ = _two_shoes(tmp_path)
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        _closed(t, closed_shoe)
        t.tap_in("D2")  # no shoe in play: no burn owed for it
        t.new_shoe("S3")  # the new shoe's burn
        t.round_no = 1
        t.deal_round("5C 9D 2H", {1: 500})
        second_batch()
        _assert_missing_burns(con, [])


# The same close while S2 deals its first round, then, in a later batch, a new dealer's tap-in
# naming no shoe (a dealer terminal that stamps none): the window starts after the close, at
# S2's last card, and must still know that S2 is in play (its load), not closed.
@pytest.mark.parametrize("closed_shoe", ["S1", "S9"])
def test_a_close_of_another_shoe_before_the_window_leaves_the_shoe_in_play(
        tmp_path: Path, closed_shoe: str) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S1")
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    t.new_shoe("S2")
    t.round_no = 1
    t.wager(1, 500)
    t.draw("3H", Box.LEFT)
    _closed(t, closed_shoe)
    t.draw("10S", Box.RIGHT)
    t.say(Meaning.SPREAD, 6)
    t.say(Meaning.RAISES_CLOSED)
    t.draw("6D", Box.MIDDLE)
    t.say(Meaning.THIRD_CARD, 6)
    t.settle_by_the_rules(1, WagerKind.ORIGINAL, 500, "3H 10S 6D")
    t.rack("3H 10S 6D")
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        tap = _resent(t, model.DealerTappedIn(dealer_id="D2"), None, actor="D2")
        second_batch()
        _assert_missing_burns(con, [[tap, _round_with_no_burn(t, second_batch)]])


# Where the window starts after the load of the shoe in play: S2 is loaded, a close of S9 (a
# shoe never loaded) arrives, S2 deals a round, then cards come from shoe S3, which was never
# loaded (CARD_OUTSIDE_ROUND's matter), so the stretch starts at S3 and the window at S2's last
# card. The shoe in play is still S2: a new dealer's tap-in owes a burn, and the window needs
# S2's load to know it (the last load before W, and a close of its shoe after it if any).
def test_the_window_knows_the_shoe_in_play_past_a_close_of_another_shoe(tmp_path: Path) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("S2")
    _closed(t, "S9")
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    t.shoe_id = "S3"  # never loaded
    t.round_no = 1
    t.deal_round("3H 10S 6D", {1: 500})
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        tap = t.tap_in("D2")
        _assert_missing_burns(con, [[tap, _round_with_no_burn(t, second_batch)]])


def _shuffled_continuously(t: TableBuilder, shoe: str) -> int:
    """Shoe `shoe` shuffled by a continuous shuffler (13:69F-6.9: at an nj-casino table its
    loads owe no burn); `t` deals from it from here. Returns the shuffle's seq."""
    t.shoe_id = shoe
    return t.emit(model.ShuffleCompleted(method=model.ShuffleMethod.CONTINUOUS_SHUFFLER))


def _shuffled_by_hand(t: TableBuilder, shoe: str) -> int:
    t.shoe_id = shoe
    return t.emit(model.ShuffleCompleted(method=model.ShuffleMethod.HAND))


def _never_loaded_shoe_deals(t: TableBuilder) -> None:
    """Shoe S3, never loaded, deals a round (CARD_OUTSIDE_ROUND's matter): the next batch's
    stretch starts at S3, so W lies at the last card of the shoe before it."""
    t.shoe_id = "S3"
    t.round_no = 1
    t.deal_round("3H 10S 6D", {1: 500})


def _new_dealer_owes_nothing(tmp_path: Path, log: EmbeddedLog, t: TableBuilder) -> None:
    """In a second batch, a new dealer taps in and a round is dealt with no burn: the shoe in
    play came from a continuous shuffler, so nothing is owed, stored or in full."""
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        t.tap_in("D2")
        _round_with_no_burn(t, second_batch)
        _assert_missing_burns(con, [])


# The same shape, S2 loaded from a continuous shuffler (13:69F-6.9: an nj-casino shoe that owes
# no burn, burn_exempt_loads, decided by its last shuffle event before the load): the window
# reads S2's load before W, and needs its shuffle too, or the new dealer's tap-in is stored as
# owing a burn the full evaluation does not owe (an outside review, session 35). Also with a
# shuffle by hand recorded for S2 after its load, without a load, and a round dealt on: the
# window reads the shuffle before the load, not that later one before W (session 37).
@pytest.mark.parametrize("shuffled_again", [False, True])
def test_the_window_knows_the_shoe_in_play_came_from_a_continuous_shuffler(
        tmp_path: Path, shuffled_again: bool) -> None:
    log, t = _table(tmp_path)
    _shuffled_continuously(t, "S2")
    t.load("S2")
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    if shuffled_again:
        _shuffled_by_hand(t, "S2")
        t.round_no = 2
        t.deal_round("8C 2S 9D", {1: 500})
    _never_loaded_shoe_deals(t)
    _new_dealer_owes_nothing(tmp_path, log, t)


# Another shoe X shuffled on a continuous shuffler before W and loaded after it with no card
# dealt (S2's last card is W; then S3, never loaded, deals): X's load is in the window, its
# shuffle is not, and X's load was stored as owing a burn (an outside review, session 36). Also
# with X used and closed before, then loaded again under its id.
@pytest.mark.parametrize("reload", [False, True])
def test_a_shoe_shuffled_before_the_window_and_loaded_in_it_keeps_its_exemption(
        tmp_path: Path, reload: bool) -> None:
    log, t = _table(tmp_path)
    if reload:
        _shuffled_continuously(t, "X")
        t.load("X")
        t.round_no = 1
        t.deal_round("4C JS 7D", {1: 500})
        _closed(t, "X")
        t.new_shoe("S2")
    else:
        t.new_shoe("S2")
        _shuffled_continuously(t, "X")
        t.shoe_id = "S2"
    t.round_no = 1
    t.deal_round("8C 9S 5D", {1: 500})
    t.load("X")  # no burn: a continuous shuffler's shoe owes none
    _never_loaded_shoe_deals(t)
    _new_dealer_owes_nothing(tmp_path, log, t)


# A load's 13:69F-6.9 exemption is decided by the shuffle of the cards it loaded, its shoe's
# last shuffle event before it: shoe X closed and loaded again after another shuffle was
# judged by its last shuffle ever, so of the two loads (one from a continuous shuffler, one
# hand-shuffled), the first owed a burn it did not and the second none it did (an outside
# review, session 37). Split between the loads: the second batch loads X again.
@pytest.mark.parametrize("first_by_hand", [False, True])
def test_a_shoe_loaded_again_owes_the_burn_of_the_shuffle_before_each_load(
        tmp_path: Path, first_by_hand: bool) -> None:
    log, t = _table(tmp_path)
    first, second = (_shuffled_by_hand, _shuffled_continuously) if first_by_hand \
        else (_shuffled_continuously, _shuffled_by_hand)
    first(t, "X")
    load1 = t.load("X")
    t.round_no = 1
    left1 = t.deal_round("4C JS 7D", {1: 500})["left"]  # no burn after either load
    _closed(t, "X")
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        second(t, "X")
        load2 = t.load("X")
        left2 = _round_with_no_burn(t, second_batch)
        _assert_missing_burns(con, [[load1, left1]] if first_by_hand else [[load2, left2]])


def _assert_found(con: duckdb.DuckDBPyConnection, codes: tuple[str, ...],
                  expected: list[tuple[str, list[int]]]) -> None:
    """The rows of `codes` (code, proof), stored and in a full evaluation."""
    for source in (STORED, "anomalies"):
        assert con.execute(f"SELECT code, seqs FROM {source} WHERE list_contains(?, code) "
                           f"ORDER BY code, seqs", [list(codes)]).fetchall() == expected, source


# A shoe id closed and loaded again holds new cards: the cutting card of its first load does
# not reach the rounds of the next (13:47-20.31(d)16: "The dealer shall then reshuffle the
# cards", which the reload after a shuffle is), and a shoe jam handled as the rule asks (the
# round voided, the shoe closed, a new shoe) is not "dealt on" by the new load's cards (an
# outside review, session 37: NO_RESHUFFLE_AFTER_CUT_CARD and DEVICE_FAULT_NOT_VOIDED). The
# reload comes in the second batch; a round dealt on after the second load's own cutting card
# is still flagged, with that cut as its proof.
@pytest.mark.parametrize("ended_by", ["cutting card", "shoe jam"])
def test_a_shoe_loaded_again_is_a_new_shoe_to_its_cutting_card_and_its_jams(
        tmp_path: Path, ended_by: str) -> None:
    log, t = _table(tmp_path)
    _shuffled_by_hand(t, "X")
    t.new_shoe("X")
    t.round_no = 1
    if ended_by == "cutting card":
        t.emit(model.CuttingCardReached())
        t.deal_round("4C JS 7D", {1: 500})  # the round in progress completed, (d)16
    else:
        t.wager(1, 500)
        t.draw("4C", Box.LEFT)
        t.emit(model.DeviceFaulted(device_id="SHOE-1", fault=model.Fault.SHOE_JAM),
               actor="SHOE-1")
        t.emit(model.RoundVoided(reason="shoe jam"))
        t.settle(1, WagerKind.ORIGINAL, model.SettledAs.VOID, 500)
        t.rack("4C")
    _closed(t, "X")
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        _shuffled_by_hand(t, "X")
        t.new_shoe("X", burn="2D")
        t.round_no = 2
        t.deal_round("5C QS 8D", {1: 500})
        t.round_no = 3
        cut = t.emit(model.CuttingCardReached())
        t.deal_round("3C 9S 6D", {1: 500})  # the round in progress completed, (d)16
        t.round_no = 4
        left = t.deal_round("2H 10C 5S", {1: 500})["left"]
        second_batch()
        _assert_found(con, ("DEVICE_FAULT_NOT_VOIDED", "NO_RESHUFFLE_AFTER_CUT_CARD"),
                      [("NO_RESHUFFLE_AFTER_CUT_CARD", [cut, left])])


# A load line sent again (its event id again: DUPLICATE_EVENT) is no new load of new cards: the
# cutting card and the jam of the load still reach the round dealt on after the copy (a second
# outside review, session 37: the copy was read as a reload). The copy comes in the second batch.
@pytest.mark.parametrize("ended_by", ["cutting card", "shoe jam"])
def test_a_load_line_sent_again_is_no_new_load_of_new_cards(tmp_path: Path,
                                                            ended_by: str) -> None:
    log, t = _table(tmp_path)
    load = t.new_shoe("X")
    t.round_no = 1
    if ended_by == "cutting card":
        code, cause = "NO_RESHUFFLE_AFTER_CUT_CARD", t.emit(model.CuttingCardReached())
        t.deal_round("4C JS 7D", {1: 500})
    else:
        t.wager(1, 500)
        t.draw("4C", Box.LEFT)
        code, cause = "DEVICE_FAULT_NOT_VOIDED", t.emit(
            model.DeviceFaulted(device_id="SHOE-1", fault=model.Fault.SHOE_JAM), actor="SHOE-1")
        t.emit(model.RoundVoided(reason="shoe jam"))
        t.settle(1, WagerKind.ORIGINAL, model.SettledAs.VOID, 500)
        t.rack("4C")
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        _resent(t, model.CardsLoaded(decks=6), "X", str(uuid.UUID(int=load)))
        t.round_no = 2
        left = t.deal_round("5C QS 8D", {1: 500})["left"]
        second_batch()
        _assert_found(con, ("DEVICE_FAULT_NOT_VOIDED", "NO_RESHUFFLE_AFTER_CUT_CARD"),
                      [(code, [cause, left])])


# A one-deck shoe id closed and loaded again with a new deck deals the same cards again: each
# load holds its own deck, so nothing is introduced (an outside review, session 37: three
# EXTRA_CARD rows); a copy beyond the second load's own deck still is, proved by that load's
# copies alone. The second load comes in the second batch, and again as a line re-sent (one
# load under one event id: its copies still count against the load).
@pytest.mark.parametrize("resent", [False, True])
def test_a_shoe_loaded_again_counts_its_copies_against_its_own_decks(
        tmp_path: Path, resent: bool) -> None:
    log, t = _table(tmp_path)
    t.new_shoe("X", decks=1)
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    _closed(t, "X")
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        load = t.new_shoe("X", decks=1, burn="2D")
        t.round_no = 2
        again = t.deal_round("4C JS 7D", {1: 500})  # the new deck's own 4C, JS and 7D
        if resent:
            _resent(t, model.CardsLoaded(decks=1), "X", str(uuid.UUID(int=load)))
        t.round_no = 3
        extra = t.deal_round("4C QS 9D", {1: 500})  # a second 4C out of the second deck
        second_batch()
        _assert_found(con, ("EXTRA_CARD",), [("EXTRA_CARD", [again["left"], extra["left"]])])


# A store whose detect_context an earlier pitlog made (without the shuffle events: its tag
# differs) may hold rows that pitlog's live detection stored wrongly, such as the burn owed
# above: the next batch evaluates the store whole (the stored table is made again), not only
# its state, so the wrong row is gone (an outside review: building the state alone kept it).
# Also one whose detect_shoes lacks the game-order columns as well (a second review: the
# columns' upgrade built the state again and stamped it current first, keeping the row).
@pytest.mark.parametrize("without_game_order", [False, True])
def test_a_state_made_by_an_earlier_definition_gets_the_store_evaluated_whole(
        tmp_path: Path, without_game_order: bool) -> None:
    log, t = _table(tmp_path)
    shuffle = _shuffled_continuously(t, "S2")
    load = t.load("S2")
    t.round_no = 1
    first = t.deal_round("4C JS 7D", {1: 500})["left"]
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        con.execute("DELETE FROM detect_context WHERE event_type LIKE 'Shuffle%'")
        con.execute("COMMENT ON TABLE detect_context IS 'pitlog detect_context 0123'")
        if without_game_order:
            con.execute("ALTER TABLE detect_shoes DROP COLUMN card_us")
            con.execute("ALTER TABLE detect_shoes DROP COLUMN last_us")
        # the row such a store could hold: S2's load owing a burn
        con.execute(f"INSERT INTO {STORED} BY NAME SELECT 'MISSING_BURN' AS code, "
                    "$t AS table_id, 'S2' AS shoe_id, 1 AS round_no, [$l, $f] AS seqs",
                    {"t": t.table_id, "l": load, "f": first})
        ((oid,),) = con.execute("SELECT table_oid FROM duckdb_tables() WHERE table_name = $t",
                                {"t": STORED}).fetchall()
        t.tap_in("D2")
        t.burn("2C")
        _round_with_no_burn(t, second_batch)
        assert con.execute("SELECT table_oid FROM duckdb_tables() WHERE table_name = $t",
                           {"t": STORED}).fetchall() != [(oid,)]
        assert con.execute("SELECT seq FROM detect_context WHERE event_type LIKE 'Shuffle%'"
                           ).fetchall() == [(shuffle,)]
        _assert_missing_burns(con, [])


# An outside review of the shoe state read before W (incremental._with_state_seqs): each case
# ends with S2's cards after the state events, so W lies after them, then S3 (never loaded)
# deals a round, and a new dealer's tap-in naming no shoe comes in a later batch with a round
# dealt with no burn. Nothing is owed: no shoe is in play (S2 closed), or the shoe in play is
# not known and the close ended it. The state was the last close "of that shoe or none" read
# from every copy (a copy re-sent later hid the real close, or the load's copy after its close
# was taken for a new load), or a load naming no shoe left the window's shoe in play unknown
# where the full evaluation's was S2.
def _null_close_copy_after_the_real_close(t: TableBuilder) -> None:
    t.new_shoe("S1")
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    first = _closed(t, None)  # closes S1, naming no shoe
    t.new_shoe("S2")
    t.round_no = 1
    t.deal_round("3H 10S 6D", {1: 500})
    _closed(t, "S2")
    _closed(t, None, event_id=str(uuid.UUID(int=first)))  # re-sent: one close, before S2


def _reloaded_shoes_close_copy(t: TableBuilder) -> None:
    t.new_shoe("S2")
    t.round_no = 1
    t.deal_round("4C JS 7D", {1: 500})
    first = _closed(t, "S2")
    t.new_shoe("S2")  # the same shoe id loaded again
    t.round_no = 2
    t.deal_round("3H 10S 6D", {1: 500})
    _closed(t, "S2")
    _closed(t, "S2", event_id=str(uuid.UUID(int=first)))  # the first close re-sent


def _load_copy_after_its_close(t: TableBuilder) -> None:
    load = t.new_shoe("S2")
    t.round_no = 1
    t.deal_round("3H 10S 6D", {1: 500})
    _closed(t, "S2")
    _resent(t, model.CardsLoaded(decks=6), "S2", event_id=str(uuid.UUID(int=load)))


def _load_naming_no_shoe(t: TableBuilder) -> None:
    t.new_shoe("S2")
    t.round_no = 1
    t.deal_round("3H 10S 6D", {1: 500})
    _resent(t, model.CardsLoaded(decks=6), None)
    t.burn("2D")


@pytest.mark.parametrize("state", [_null_close_copy_after_the_real_close,
                                   _reloaded_shoes_close_copy, _load_copy_after_its_close,
                                   _load_naming_no_shoe])
def test_the_shoe_state_before_the_window_reads_each_copy_once(
        tmp_path: Path, state: Callable[[TableBuilder], None]) -> None:
    log, t = _table(tmp_path)
    state(t)
    t.shoe_id, t.round_no = "S2", 5
    t.deal_round("5H 9S 2D", {1: 500})  # S2's cards after the state events: W is here
    t.shoe_id, t.round_no = "S3", 1  # never loaded
    t.deal_round("4H 10C 6S", {1: 500})
    with _two_batches(tmp_path, log, t) as (con, second_batch):
        _resent(t, model.DealerTappedIn(dealer_id="D2"), None, actor="D2")
        if state is _load_naming_no_shoe:  # the shoe in play is not known: any close ends it
            _closed(t, "S9")
        _round_with_no_burn(t, second_batch)
        _assert_missing_burns(con, [])

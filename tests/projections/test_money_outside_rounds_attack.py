"""An outside review's attacks on money recorded with no round (session 44, after ecdd1b4): the
stored rows, batch by batch, against a full evaluation, and the ledger and conservation of
each case."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from audit_scenarios import ORIGINAL, RAISE, Floor, Pit
from live_support import assert_money_exact, differences

from events.log.embedded.log import EmbeddedLog
from events.reddog import model
from events.reddog.model import SettledAs
from projections.anomalies import STORED
from projections.projector import project
from projections.reconcile import conservation


def _batches(tmp_path: Path, build: Callable[[Pit], list[int]]) -> duckdb.DuckDBPyConnection:
    """T11 recorded by `build`, which returns the seqs that end each batch but the last; each
    batch projected in turn, the stored rows checked against a full evaluation after each."""
    source = Floor(tmp_path / "source")
    t = source.table("T11")
    opened = t.open_table("nj-casino")
    cuts = build(t)
    t.flush()
    records = [(r.key, r.value) for batch in source.log.read() for r in batch]
    log = EmbeddedLog(tmp_path / "log")
    con = duckdb.connect(str(tmp_path / "v.duckdb"))
    start = 0
    for stop in [c - opened + 1 for c in cuts] + [len(records)]:
        log.append(records[start:stop])
        start = stop
        project(log, con, publish_alerts=False)
        assert differences(con) == (0, 0), stop
        assert_money_exact(con)
    return con


@pytest.mark.parametrize("shoes_before", [1, 0])
def test_loose_money_between_the_last_shoe_and_the_stretch_reaches_the_window(
        tmp_path: Path, shoes_before: int) -> None:
    """A wager with no shoe and no round recorded before the table's last shoe (after another
    shoe, or before any), another event with no shoe after it, and the wager's settlement,
    with no shoe, in the next batch: the stretch starts at the last shoe (K), the window at
    the first's last card (W; with no shoe before, the table's start), and the wager lies
    between them, where copy_windows kept only the context types and K's predecessor
    (detect_context's copy is read before W only). The window's settlement had no wager:
    NOT_OWED "no wager was on area 5", stored; the full evaluation pairs them."""
    seqs: dict[str, int] = {}

    def build(t: Pit) -> list[int]:
        if shoes_before:
            t.new_shoe("T11-S1")
            t.play("3C 9H 5D", {1: 1000})
            t.shoe_id = None
        seqs["wager"] = t.wager(5, 2000)
        t.wager(6, 1000)
        t.new_shoe("T11-S2")
        t.play("2C 8D 4H", {2: 3000})
        cut = t.rack("4H")  # any last event of the shoe
        t.shoe_id = None
        seqs["settled"] = t.settle(5, ORIGINAL, SettledAs.LOST, 2000)
        return [cut]

    with _batches(tmp_path, build) as con:
        rows = con.execute(f"SELECT code, seqs FROM {STORED} WHERE shoe_id IS NULL "
                           "AND round_no IS NULL").fetchall()
    assert rows == [("WRONG_SETTLEMENT", [seqs["wager"], seqs["settled"]])]


def test_a_raise_with_no_round_is_not_allowed_and_says_why(tmp_path: Path) -> None:
    """A raise recorded with no round, two shoes and a batch after a wager with no round (no
    shoe either): 13:47-20.31(d)12 allows a raise only on a spread, and no round has none, so
    every such raise is RAISE_NOT_ALLOWED, whatever the wager under it (one mishap, one code:
    not also RAISE_OVER_LIMIT). The explanation said "with no original wager there" of a raise
    on a wager the ledger names (its player, ledger.sql `placers`): an outside review (session
    44) found it; it now says outside any round."""
    seqs: dict[str, int] = {}

    def build(t: Pit) -> list[int]:
        t.new_shoe("T11-S1")
        t.play("3C 9H 5D", {1: 1000})
        t.shoe_id = None
        seqs["wager 5"] = t.wager(5, 1000, player="P-ANN")
        seqs["wager 6"] = t.wager(6, 1000)
        t.new_shoe("T11-S2")
        t.play("2C 8D 4H", {2: 3000})
        cut = t.rack("4H")
        t.shoe_id = None
        seqs["raise 5"] = t.raise_(5, 5000)
        seqs["raise 6"] = t.raise_(6, 500)
        seqs["raise 7"] = t.raise_(7, 500)
        return [cut]

    with _batches(tmp_path, build) as con:
        raises = con.execute("SELECT seat, player_id, status FROM ledger WHERE round_no IS NULL "
                             "AND wager_kind = 'RAISE' ORDER BY seat").fetchall()
        found = con.execute(f"SELECT code, seqs, explanation FROM {STORED} WHERE shoe_id IS NULL "
                            "AND round_no IS NULL ORDER BY seqs").fetchall()
    assert raises == [(5, "P-ANN", "IN_PLAY"), (6, "P6", "IN_PLAY"), (7, None, "IN_PLAY")]
    outside = "outside any round (no round number): raises are for a spread only"
    assert found == [
        ("RAISE_NOT_ALLOWED", [seqs["raise 5"]], f"Seat 5 raised $50.00 on area 5 {outside}"),
        ("RAISE_NOT_ALLOWED", [seqs["raise 6"]], f"Seat 6 raised $5.00 on area 6 {outside}"),
        ("RAISE_NOT_ALLOWED", [seqs["raise 7"]], f"Seat 7 raised $5.00 on area 7 {outside}")]


def _shoe(t: Pit, shoe: str) -> int:
    """A shoe with one round by the rules; returns its last event's seq. No shoe after it."""
    t.new_shoe(shoe)
    t.play("2C 8D 4H", {2: 3000})
    seq = t.rack("4H")
    t.shoe_id = None
    return seq


def _removed(t: Pit) -> list[int]:
    _shoe(t, "S1")
    t.wager(5, 2000)
    cut1 = _shoe(t, "S2")
    t.emit(model.WagerRemoved(seat=5, area=5))
    cut2 = _shoe(t, "S3")
    t.settle(5, ORIGINAL, SettledAs.LOST, 2000)
    return [cut1, cut2]


def _changed(t: Pit) -> list[int]:
    _shoe(t, "S1")
    t.wager(5, 2000)
    cut1 = _shoe(t, "S2")
    t.emit(model.WagerChanged(seat=5, area=5, amount_cents=3000))
    cut2 = _shoe(t, "S3")
    t.settle(5, ORIGINAL, SettledAs.LOST, 3000)
    return [cut1, cut2]


def _copied(t: Pit) -> list[int]:
    _shoe(t, "S1")
    wager = t.wager(5, 2000)
    cut1 = _shoe(t, "S2")
    t.clock += timedelta(seconds=1)  # the wager's line re-sent as it was: no shoe, no round
    t.recorder.record(t.table_id, model.WagerPlaced(seat=5, area=5, player_id="P5",
                                                    amount_cents=2000,
                                                    instrument=model.Instrument.CHIPS),
                      shoe_id=None, round_no=None, actor=t.dealer, occurred_at=t.clock,
                      recorded_at=t.clock, event_id=str(uuid.UUID(int=wager)))
    cut2 = _shoe(t, "S3")
    t.settle(5, ORIGINAL, SettledAs.LOST, 2000)
    return [cut1, cut2]


def _unloaded_shoe(t: Pit) -> list[int]:
    _shoe(t, "S1")
    t.shoe_id = "SX"  # never loaded
    t.wager(5, 2000)
    t.shoe_id = None
    cut1 = _shoe(t, "S2")
    t.shoe_id = "SX"
    t.settle(5, ORIGINAL, SettledAs.WON, 2000, 1)
    t.shoe_id = None
    cut2 = _shoe(t, "S3")
    t.shoe_id = "SX"
    t.settle(5, ORIGINAL, SettledAs.VOID, 2000)
    return [cut1, cut2]


def _seats(t: Pit) -> list[int]:
    _shoe(t, "S1")
    t.wager(5, 2000)
    t.settle(6, ORIGINAL, SettledAs.WON, 1000, 1)
    cut1 = _shoe(t, "S2")
    t.settle(5, ORIGINAL, SettledAs.LOST, 2000)
    t.wager(6, 1000)
    t.raise_(6, 1500)
    cut2 = _shoe(t, "S3")
    t.settle(5, ORIGINAL, SettledAs.VOID, 2000)
    t.settle(6, RAISE, SettledAs.LOST, 1500)
    return [cut1, cut2]


def _round_zero(t: Pit) -> list[int]:
    _shoe(t, "S1")
    t.round_no = 0
    t.wager(5, 2000)
    t.round_no = None
    cut1 = _shoe(t, "S2")
    t.settle(5, ORIGINAL, SettledAs.LOST, 2000)
    cut2 = _shoe(t, "S3")
    t.round_no = 0
    t.settle(5, ORIGINAL, SettledAs.LOST, 2000)
    t.round_no = None
    return [cut1, cut2]


# What each leaves, its money with no round (or round 0): (seat, kind, status) of the ledger
# rows, and conservation's difference (a collection of a removed wager, or of no wager, is
# money out of nothing, as in a round: NOT_OWED; a wager settled twice, WON then VOID or LOST
# then VOID, gave its stake back once too often).
@pytest.mark.parametrize(("build", "rows", "difference"), [
    (_removed, [(5, "ORIGINAL", "NOT_OWED")], -2000),
    (_changed, [(5, "ORIGINAL", "SETTLED_BEFORE_DECISION")], 0),
    (_copied, [(5, "ORIGINAL", "SETTLED_BEFORE_DECISION")], 0),
    (_unloaded_shoe, [(5, "ORIGINAL", "SETTLED_BEFORE_DECISION")], -2000),
    (_seats, [(5, "ORIGINAL", "SETTLED_BEFORE_DECISION"),
              (6, "ORIGINAL", "SETTLED_BEFORE_DECISION"),
              (6, "RAISE", "SETTLED_BEFORE_DECISION")], -2000),
    (_round_zero, [(5, "ORIGINAL", "SETTLED_BEFORE_DECISION"), (5, "ORIGINAL", "NOT_OWED")],
     -2000),
])
def test_money_with_no_round_stays_exact(tmp_path: Path, build: Callable[[Pit], list[int]],
                                         rows: list[tuple], difference: int) -> None:
    """Removed, changed, re-sent, with a shoe never loaded, at several seats, at round 0 and
    none, each spread over three batches with a shoe between: the stored rows are the full
    evaluation's after each batch (_batches)."""
    with _batches(tmp_path, build) as con:
        found = con.execute("SELECT seat, wager_kind, status FROM ledger WHERE round_no IS NULL "
                            "OR round_no = 0 ORDER BY round_no NULLS LAST, seat, wager_kind"
                            ).fetchall()
        (balance,) = conservation(con, ["table"])
    assert found == rows
    assert (balance["open_cents"], balance["difference_cents"]) == (0, difference)

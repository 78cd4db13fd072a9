"""Money recorded outside any round (a wager or settlement with no round number): the
reconciliation and the report count it as the conservation check does (docs/auditing.md), one
row of the round_money query per ledger row, dated by its first event and never a round; the
writer's stored rows keep it exact batch after batch (projections/round_money.py, OUTSIDE)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import pytest
from audit_scenarios import ORIGINAL, Floor, Pit
from live_support import assert_money_exact, differences

from events.log.embedded.log import EmbeddedLog
from events.reddog import model
from events.reddog.model import Box, SettledAs
from projections.anomalies import STORED
from projections.projector import project
from projections.reconcile import (
    OUTCOME_COUNTS,
    ROUND_MONEY,
    conservation,
    reconcile,
    stored_money_current,
)
from projections.report import build_report
from projections.statistics import hold_variance

DAY_1, DAY_2 = date(2026, 11, 28), date(2026, 11, 29)  # Calendar(): UTC, days from 06:00


def _evening(floor: Floor) -> tuple[Pit, list[int]]:
    """T07: two rounds by the rules, then money with no round on the 28th (two wins paid at
    seat 3, one ledger row settled twice; a wager at seat 5), a third round, and on the 29th a
    win paid at seat 4 and nothing else. Returns the table and the seqs of the money with no
    round."""
    t = floor.table("T07")
    t.open_table("nj-casino")
    t.new_shoe("T07-S1")
    t.play("3C 9H 5D", {1: 1000})  # spread 5, 5D inside: won 1 to 1, paid 1000
    t.play("5C 9D KH", {1: 1000})  # spread 3, KH outside: lost, 1000 collected
    outside = [t.settle(3, ORIGINAL, SettledAs.WON, 50000, 1),
               t.settle(3, ORIGINAL, SettledAs.WON, 5000, 1),
               t.wager(5, 700)]  # a stake no round can decide: IN_PLAY for good
    t.play("2C 8D 4H", {2: 3000})  # spread 5, 4H inside: won, paid 3000
    t.clock = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    outside.append(t.settle(4, ORIGINAL, SettledAs.WON, 70000, 1))
    return t, outside


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    floor = Floor(tmp_path_factory.mktemp("outside"))
    _evening(floor)
    return floor.build()


def _money(rows: list[dict], *keys: str) -> dict[tuple, tuple]:
    return {tuple(r[k] for k in keys): (r["rounds"], r["handle_cents"], r["paid_cents"],
                                         r["collected_cents"], r["net_win_cents"],
                                         r["exceptions"]) for r in rows}


def test_money_with_no_round_is_reconciled_on_its_own_day_as_conservation_counts_it(
        db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        assert stored_money_current(con)  # read from the writer's stored rows
        rows = reconcile(con, ["table", "day"])
        by_day = _money(rows, "table_id", "gaming_day")
        flags = {r["gaming_day"]: (r["flags"], r["wagers"]) for r in rows}
        kept = con.execute(f"SELECT first_seq, gaming_day(started_at, 'UTC', 360), paid_cents, "
                           f"dealer, decks, outcome FROM {ROUND_MONEY} WHERE round_no IS NULL "
                           f"ORDER BY first_seq").fetchall()
        balance = {(r["table_id"], r["gaming_day"]): (r["net_win_cents"], r["open_cents"],
                                                       r["difference_cents"])
                   for r in conservation(con, ["table", "day"])}
    # rounds, handle, paid, collected, net win, exceptions (the NOT_OWED rows)
    assert by_day == {
        ("T07", DAY_1): (3, 5000, 1000 + 3000 + 55000, 1000, 1000 - 59000, 1),
        ("T07", DAY_2): (0, 0, 70000, 0, -70000, 1),
    }
    # The same net wins as the conservation check's, which balances (a win paid on no wager
    # takes no stake back: docs/auditing.md) with seat 5's stake set aside as open; that stake
    # is in neither the handle nor the wagers, and raises no wager flag (no paytable or deck
    # count applies to it): the settlements with no wager are the exceptions.
    assert balance == {("T07", DAY_1): (-58000, 700, 0), ("T07", DAY_2): (-70000, 0, 0)}
    assert flags == {DAY_1: ("LEDGER_EXCEPTIONS", 3), DAY_2: ("LEDGER_EXCEPTIONS", 0)}
    # One row per ledger row with no round: seat 3's two settlements are one row, dated by the
    # first; no dealer, decks or outcome (OUTCOME_FREQUENCY counts rounds only).
    assert [(day, paid, dealer, decks, outcome) for _, day, paid, dealer, decks, outcome
            in kept] == [(DAY_1, 55000, None, None, None), (DAY_1, 0, None, None, None),
                         (DAY_2, 70000, None, None, None)]


def test_the_views_give_the_same_reconciliation_as_the_stored_rows(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        stored = reconcile(con, ["table", "day"])
        assert_money_exact(con)  # the stored rows are the query's over the views
    # The views' answer, from a copy whose stored rows are marked behind (readers then use the
    # round_money query over the views).
    copy = db.parent / "behind.duckdb"
    copy.write_bytes(db.read_bytes())
    with duckdb.connect(str(copy)) as con:
        hold = _hold_times(con)
        con.execute("DELETE FROM round_money_at")
        assert not stored_money_current(con)
        fresh = reconcile(con, ["table", "day"])
        hold_from_views = _hold_times(con)
    assert list(fresh) == list(stored)
    # HOLD_VARIANCE's time is its group's latest round's start on either path (the money with
    # no round of the 29th, in the stored rows, moved the table's to the 29th).
    assert hold == hold_from_views
    assert hold["table", ("T07",)] == datetime(2026, 11, 28, 23, 0, 25, tzinfo=UTC)  # round 3


def _hold_times(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, tuple], datetime]:
    keys = {"table": ("table_id",), "day": ("gaming_day",), "shift": ("gaming_day", "shift")}
    return {(g["grouping"], tuple(g[k] for k in keys[g["grouping"]])): g["last_at"]
            for g in hold_variance(con, min_rounds=1)}


def test_a_day_whose_only_money_has_no_round_is_reported(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        report = build_report(con, day=DAY_2)
        latest = build_report(con)
    assert report.day == DAY_2 and report.rounds == 0
    assert [(r["table_id"], r["paid_cents"], r["net_win_cents"]) for r in report.tables] == \
        [("T07", 70000, -70000)]
    assert latest.day == DAY_2  # the latest day with money, not only the latest with a round


def test_the_stored_rows_stay_exact_batch_by_batch_around_money_with_no_round(
        tmp_path: Path) -> None:
    source = Floor(tmp_path / "source")
    t, outside = _evening(source)
    t.flush()
    records = [(r.key, r.value) for batch in source.log.read() for r in batch]
    # T07's seqs, one a record in log order (checked against the store at the end)
    seqs = list(range(outside[-1] - len(records) + 1, outside[-1] + 1))
    # A batch ends right before and right after each event with no round (the table evaluated
    # whole in the first batch, from K after), and once inside the third round.
    cuts = sorted({seqs.index(s) for s in outside} | {seqs.index(s) + 1 for s in outside}
                  | {seqs.index(outside[1]) + 7})
    log = EmbeddedLog(tmp_path / "log")
    outside_rows = []
    with duckdb.connect(str(tmp_path / "v.duckdb")) as con:
        start = 0
        for stop in cuts:
            log.append(records[start:stop])
            start = stop
            project(log, con, publish_alerts=False)
            assert_money_exact(con)
            ((n,),) = con.execute(f"SELECT count(*) FROM {ROUND_MONEY} "
                                  f"WHERE round_no IS NULL").fetchall()
            outside_rows.append(n)
        ((paid,),) = con.execute(f"SELECT sum(paid_cents) FROM {ROUND_MONEY} "
                                 f"WHERE round_no IS NULL").fetchall()
        stored = [s for (s,) in con.execute("SELECT seq FROM events ORDER BY log_offset")
                  .fetchall()]
    assert stored == seqs and stop == len(records)
    # none, then seat 3's row (its second settlement replaces it, not a second row), seat 5's
    # wager's and seat 4's beside them
    assert outside_rows[0] == 0 and outside_rows[-1] == 3 and sorted(outside_rows) == outside_rows
    assert paid == 55000 + 70000


def test_round_0_is_no_round_to_count_but_its_money_is_summed(tmp_path: Path) -> None:
    """Round 0 is no round of play (docs/anomalies.md): reconcile does not count it among the
    rounds, OUTCOME_FREQUENCY not among the outcomes, HOLD_VARIANCE's time is not its start;
    the ledger still judges its wager (two consecutive cards: a tie, the stake returned), and
    that money is in the sums. The stored rows and the views agree."""
    floor = Floor(tmp_path)
    t = floor.table("T08")
    t.open_table("nj-casino")
    t.new_shoe("T08-S1")
    t.play("3C 9H 5D", {1: 1000})  # round 1: spread 5, won, paid 1000
    t.round_no = 0
    t.wager(2, 500)
    t.draw("7C", Box.LEFT)
    t.draw("8D", Box.RIGHT)  # consecutive: a tie hand, the wager returned (13:47-20.31(d)7)
    t.settle(2, ORIGINAL, SettledAs.VOID, 500)
    t.rack(["7C", "8D"])
    t.round_no = None
    db = floor.build()
    copy = tmp_path / "behind.duckdb"
    copy.write_bytes(db.read_bytes())
    with duckdb.connect(str(db), read_only=True) as con:
        assert stored_money_current(con)
        (row,) = reconcile(con, ["table"])
        outcomes = con.execute(f"SELECT sum(rounds) FROM {OUTCOME_COUNTS}").fetchall()
        stored_hold = _hold_times(con)
        starts = dict(con.execute("SELECT round_no, started_at FROM rounds").fetchall())
    with duckdb.connect(str(copy)) as con:
        con.execute("DELETE FROM round_money_at")
        (fresh,) = reconcile(con, ["table"])
        hold_from_views = _hold_times(con)
    assert (row["rounds"], row["handle_cents"], row["paid_cents"], row["returned_cents"]) == \
        (1, 1500, 1000, 500)
    assert row == fresh
    assert outcomes == [(1,)]  # round 1's spread; round 0's consecutive cards are none
    assert stored_hold == hold_from_views
    assert starts[0] > starts[1] == stored_hold["table", ("T08",)]  # round 1's, not round 0's


def test_a_wager_outside_any_round_removed_and_placed_again_is_the_new_players(
        tmp_path: Path) -> None:
    """A wager with no round number, removed and placed again by another player: the ledger
    names the second placement's player and amount, as in a round (docs/auditing.md). A
    second read, session 40, found ce743b8's join to the areas emptied matching no area
    outside a round (its round_no NULL), which named the first placer."""
    floor = Floor(tmp_path)
    t = floor.table("T07")
    t.open_table("nj-casino")
    t.new_shoe("T07-S1")
    t.wager(3, 1000, player="P-ALICE")
    t.emit(model.WagerRemoved(seat=3, area=3))
    t.wager(3, 2500, player="P-BOB")
    with duckdb.connect(str(floor.build()), read_only=True) as con:
        rows = con.execute("SELECT round_no, player_id, placed_cents, amount_cents, removed, "
                           "status FROM ledger WHERE seat = 3").fetchall()
    assert rows == [(None, "P-BOB", 2500, 2500, False, "IN_PLAY")]


def _paired_evening(floor: Floor) -> tuple[Pit, dict[str, int]]:
    """T09: a round by the rules, then money with no round: seat 5's $20.00 wager and its
    collection, seat 6's $10.00 wager handed back whole, then a second round. Returns the
    table and the seqs of the money with no round."""
    t = floor.table("T09")
    opened = t.open_table("nj-casino")  # the table's first event
    t.new_shoe("T09-S1")
    t.play("3C 9H 5D", {1: 1000})  # spread 5, 5D inside: won, paid 1000
    seqs = {"opened": opened, "wager 5": t.wager(5, 2000), "wager 6": t.wager(6, 1000),
            "settled 5": t.settle(5, ORIGINAL, SettledAs.LOST, 2000),
            "settled 6": t.settle(6, ORIGINAL, SettledAs.VOID, 1000)}
    t.play("2C 8D 4H", {2: 3000})  # spread 5, 4H inside: won, paid 3000
    return t, seqs


def test_a_wager_with_no_round_and_its_settlement_are_one_ledger_row(tmp_path: Path) -> None:
    """A wager and its settlement both recorded with no round are one ledger row, as in a
    round: the stake collected is the stake placed, so conservation balances. They were two
    rows (the ledger's join of wagers to settlements matched no NULL round): the stake set
    aside as open and collected too, a difference of -$20.00 invented, and WRONG_SETTLEMENT
    saying no wager was on the area. Collected outside any round, it is still settled on no
    hand (13:47-20.31(d)14: only the third card decides): WRONG_SETTLEMENT says so; handed
    back whole, it is a removal by another name ((d)3) and raises nothing."""
    floor = Floor(tmp_path)
    _, seqs = _paired_evening(floor)
    with duckdb.connect(str(floor.build()), read_only=True) as con:
        rows = con.execute(
            "SELECT seat, status, amount_cents, actual_collected_cents, actual_returned_cents, "
            "wager_seqs, settlement_seqs FROM ledger WHERE round_no IS NULL "
            "ORDER BY seat").fetchall()
        (balance,) = conservation(con, ["table"])
        found = con.execute("SELECT code, seqs, explanation FROM anomalies WHERE table_id = "
                            "'T09' AND round_no IS NULL ORDER BY code").fetchall()
        assert_money_exact(con)
    assert rows == [
        (5, "SETTLED_BEFORE_DECISION", 2000, 2000, 0, [seqs["wager 5"]], [seqs["settled 5"]]),
        (6, "SETTLED_BEFORE_DECISION", 1000, 0, 1000, [seqs["wager 6"]], [seqs["settled 6"]]),
    ]
    assert (balance["open_cents"], balance["difference_cents"]) == (0, 0)
    assert balance["net_win_cents"] == 2000 - 1000 - 3000
    assert found == [(
        "WRONG_SETTLEMENT", [seqs["wager 5"], seqs["settled 5"]],
        "Seat 5 wager of $20.00 was settled LOST (paid $0.00, collected $20.00, returned $0.00) "
        "outside any round (no round number): only the cards decide a wager")]


def test_the_stored_rows_stay_exact_with_a_wager_and_its_settlement_in_different_batches(
        tmp_path: Path) -> None:
    """The writer's anomaly and money rows, batch by batch, split between the wager with no
    round and its settlement, are the full evaluation's (projections/incremental.py: the
    table is evaluated from its shoe's start, which holds both)."""
    source = Floor(tmp_path / "source")
    t, seqs = _paired_evening(source)
    t.flush()
    records = [(r.key, r.value) for batch in source.log.read() for r in batch]
    first = seqs["opened"]  # records[i] is the event of seq first + i: T09's alone, in order
    log = EmbeddedLog(tmp_path / "log")
    with duckdb.connect(str(tmp_path / "v.duckdb")) as con:
        start = 0
        for name in ("wager 5", "wager 6", "settled 5", "settled 6"):
            stop = seqs[name] - first + 1
            log.append(records[start:stop])
            start = stop
            project(log, con, publish_alerts=False)
            assert differences(con) == (0, 0), name
            assert_money_exact(con)
        log.append(records[start:])
        project(log, con, publish_alerts=False)
        assert differences(con) == (0, 0)
        assert_money_exact(con)
        stored = con.execute(f"SELECT code, seqs FROM {STORED} WHERE table_id = 'T09' "
                             "AND round_no IS NULL").fetchall()
    assert stored == [("WRONG_SETTLEMENT", [seqs["wager 5"], seqs["settled 5"]])]


@pytest.mark.parametrize("wager_first", [True, False])
def test_money_with_no_shoe_and_no_round_pairs_across_batches_and_shoes(
        tmp_path: Path, wager_first: bool) -> None:
    """Money with no shoe and no round at one seat, two shoes played between its two events,
    each in its own batch: the stored anomaly and money rows are the full evaluation's. With
    the wager first, they are one ledger row (collected on no hand: WRONG_SETTLEMENT on both
    seqs); with two settlements, one NOT_OWED row of both, which replaces the first's. The
    detector's window for the second starts after the first of those shoes, so the first event
    reaches it as context (projections/incremental.py, detect_context), and the first's stored
    row is replaced though it lies before the stretch."""
    source = Floor(tmp_path / "source")
    t = source.table("T10")
    opened = t.open_table("nj-casino")
    t.new_shoe("T10-S1")
    t.play("3C 9H 5D", {1: 1000})
    t.shoe_id = None
    first = (t.wager(5, 2000) if wager_first
             else t.settle(5, ORIGINAL, SettledAs.WON, 2000, 1))
    t.new_shoe("T10-S2")
    t.play("2C 8D 4H", {2: 3000})
    t.new_shoe("T10-S3")
    t.play("5C 9D KH", {1: 1000})
    t.shoe_id = None
    second = t.settle(5, ORIGINAL, SettledAs.LOST, 2000)
    t.flush()
    records = [(r.key, r.value) for batch in source.log.read() for r in batch]
    log = EmbeddedLog(tmp_path / "log")
    with duckdb.connect(str(tmp_path / "v.duckdb")) as con:
        start = 0
        for stop in (first - opened + 1, second - opened, len(records)):
            log.append(records[start:stop])
            start = stop
            project(log, con, publish_alerts=False)
            assert differences(con) == (0, 0), stop
            assert_money_exact(con)
        stored = con.execute(f"SELECT code, seqs FROM {STORED} WHERE table_id = 'T10' "
                             "AND round_no IS NULL AND shoe_id IS NULL").fetchall()
        status = con.execute("SELECT status FROM ledger WHERE round_no IS NULL").fetchall()
    assert stored == [("WRONG_SETTLEMENT", [first, second])]
    assert status == ([("SETTLED_BEFORE_DECISION",)] if wager_first else [("NOT_OWED",)])

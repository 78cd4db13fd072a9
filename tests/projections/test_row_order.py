"""Two writers of one table can both append the same seq: a Kafka log with fencing off, the
default (docs/operating.md), lets a second writer that read the table's head before the first
one's last event append its own event at that seq. Every answer must still be one answer: a
pick of "the first" or "the last" event by seq breaks a tie by log offset, the order the log
holds them (as events_once_of keeps a copy's first). Here the same events are laid out in three
orders in a store's `events` table and every view, the anomaly rows and the round money are
compared row for row (as multisets of rows). Before the ties were broken, arg_min(decks, seq)
and its kind gave each order its own answer: the first row the scan met."""

from __future__ import annotations

import copy
import itertools
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from live_support import differences
from store_template import store_at
from table_builder import EVENING, TableBuilder, recorder_for

from events.log.embedded.log import EmbeddedLog
from events.recording.recorder import Recorder
from events.reddog import model
from events.reddog.model import Box, SettledAs, ShuffleMethod, WagerKind
from projections.anomalies import STORED
from projections.dispute import dispute
from projections.projector import project
from projections.reconcile import load_edges, round_money_sql
from projections.summary import demo_summary
from projections.views import VIEW_NAMES, create_views

# The same events, three ways: as the projector stores them, backwards, and shuffled.
ORDERS = ("log_partition, log_offset", "log_partition DESC, log_offset DESC",
          "hash(event_id, log_offset)")
COMPARED = (*VIEW_NAMES, "ledger", "paytables", "anomalies", "round_money")
_SECOND_IDS = itertools.count(10**6)


class _Unchecked:
    """The log as a Kafka log without fencing is to a writer: no check of the table's head at
    append (the recorder then appends as it is, docs/integrity.md)."""

    def __init__(self, log: EmbeddedLog) -> None:
        self.log = log

    def append(self, items: list[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        return self.log.append(items)


class _SecondWriter:
    """A second writer of table T01 that read the head before the first writer's next event:
    what it appends takes the same seq."""

    def __init__(self, log: _Unchecked, first: TableBuilder) -> None:
        self.log, self.first = log, first

    def same_seq(self, emit: Callable[[TableBuilder], int], *, same_time: bool = False) -> None:
        """The first writer's `emit`, then the second writer's at the same seq, half a second
        later at the table (so game order does not tie: only seq does), or with `same_time`
        at the same moment (game order ties too: only the log's order is left)."""
        head = copy.copy(self.first.recorder.heads["T01"])
        clock = self.first.clock
        seq = emit(self.first)
        self.first.flush()
        second = TableBuilder(Recorder(self.log, heads={"T01": head},  # type: ignore[arg-type]
                                       new_id=lambda: str(uuid.UUID(int=next(_SECOND_IDS))),
                                       now=lambda: EVENING), "T01",
                              clock=clock + timedelta(milliseconds=0 if same_time else 500))
        second.shoe_id, second.round_no = self.first.shoe_id, self.first.round_no
        assert emit(second) == seq
        second.flush()


def _record(folder: Path) -> EmbeddedLog:
    """A shoe at T01 where the second writer doubled a shuffle (another method), the load (6
    decks, then 1), a wager (another player), a burn inside the round (another card), a
    settlement (other odds), the rack (another order), a dealer's tap (another dealer) and the
    cutting card (the same event id, another round), each at the first writer's seq."""
    log = EmbeddedLog(folder / "log")
    unchecked = _Unchecked(log)
    first = recorder_for(log)
    first.log = unchecked  # type: ignore[assignment]
    t = TableBuilder(first)
    race = _SecondWriter(unchecked, t)
    t.open_table()
    t.tap_in("D1")
    t.shoe_id = "S1"
    race.same_seq(lambda b: b.emit(model.ShuffleCompleted(method=ShuffleMethod.HAND)) if b is t
                  else b.emit(model.ShuffleCompleted(method=ShuffleMethod.CONTINUOUS_SHUFFLER)))
    # No burn: the hand shuffle owes one (MISSING_BURN); a continuous shuffler's would not.
    race.same_seq(lambda b: b.load("S1", decks=6 if b is t else 1))
    t.round_no = 1
    race.same_seq(lambda b: b.wager(1, 1000, player="P1" if b is t else "P9"))
    t.wager(2, 500)
    # Seat 3's wager at one seq and one moment at both writers (another player and amount).
    race.same_seq(lambda b: b.wager(3, 1000 if b is t else 2000, player="P3" if b is t else "P8"),
                  same_time=True)
    t.draw("3C", Box.LEFT)
    t.draw("QD", Box.RIGHT)
    # Two burns inside the round (BURN_DURING_ROUND each), one at each writer.
    race.same_seq(lambda b: b.burn("5H" if b is t else "6H"))
    t.say(model.Meaning.SPREAD, 8)
    t.say(model.Meaning.RAISES_CLOSED)
    t.draw("7H", Box.MIDDLE)
    t.say(model.Meaning.THIRD_CARD, 7)
    race.same_seq(lambda b: b.settle(1, WagerKind.ORIGINAL, SettledAs.WON, 1000,
                                     odds=1 if b is t else 5))
    t.settle_by_the_rules(2, WagerKind.ORIGINAL, 500, "3C QD 7H")
    t.settle_by_the_rules(3, WagerKind.ORIGINAL, 1000, "3C QD 7H")
    race.same_seq(lambda b: b.rack("3C QD 7H" if b is t else "7H 3C QD"))
    # The second writer's dealer taps in last in the log: D2 deals from round 2 on.
    race.same_seq(lambda b: b.tap_in("D1" if b is t else "D2"))
    for round_no, cards in ((2, "5S 9D 8C"), (3, "2H 2D 2S"), (4, "4C 5D"), (5, "AH 3S 3D")):
        t.round_no = round_no
        t.deal_round(cards, {1: 1000, 3: 2500})
    def cutting_card(b: TableBuilder) -> int:
        """One device line sent to both writers (one event id), each stamping its own round."""
        b.clock += timedelta(seconds=1)
        return b.recorder.record("T01", model.CuttingCardReached(), shoe_id=b.shoe_id,
                                 round_no=5 if b is t else 2, actor=b.dealer,
                                 occurred_at=b.clock, recorded_at=b.clock,
                                 event_id="cutting-card-1")

    race.same_seq(cutting_card)
    t.round_no = 6
    t.deal_round("3C 9S 4S", {1: 1000})  # round 1's 3C again: one of 6 decks, not of 1
    t.emit(model.ShoeClosed(cards_remaining=40))
    t.flush()
    return log


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("row_order")
    db = folder / "store.duckdb"
    with duckdb.connect(str(db)) as con:
        project(_record(folder), con, publish_alerts=False)
    return db


@contextmanager
def _laid_out(db: Path, order: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory store of `db`'s events in `order`, with the views and the round money."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{db}' AS src (READ_ONLY)")
    con.execute(f"CREATE TABLE events AS SELECT * FROM src.events ORDER BY {order}")
    con.execute("DETACH src")
    create_views(con)
    load_edges(con)
    con.execute(f"CREATE VIEW round_money AS {round_money_sql()}")
    try:
        yield con
    finally:
        con.close()


def test_the_log_holds_events_of_both_writers_at_the_same_seqs(store: Path) -> None:
    with duckdb.connect(str(store), read_only=True) as con:
        doubled = con.execute(
            "SELECT event_type, list(DISTINCT event_id) FROM events "
            "GROUP BY seq, event_type HAVING count(*) > 1 ORDER BY seq").fetchall()
    assert [t for t, _ in doubled] == [
        "ShuffleCompleted", "CardsLoaded", "WagerPlaced", "WagerPlaced", "CardBurned",
        "WagerSettled",
        "CardsRacked", "DealerTappedIn", "CuttingCardReached"]
    # two events each, of two ids but the cutting card's (one line sent to both writers)
    assert [len(ids) for _, ids in doubled] == [2, 2, 2, 2, 2, 2, 2, 2, 1]


@pytest.mark.parametrize("order", ORDERS[1:])
def test_every_view_gives_the_same_rows_whatever_order_the_events_lie_in(
        store: Path, order: str) -> None:
    with _laid_out(store, ORDERS[0]) as ref, _laid_out(store, order) as other:
        for name in COMPARED:
            mine = ref.execute(f"SELECT * FROM {name}").fetchall()
            theirs = other.execute(f"SELECT * FROM {name}").fetchall()
            assert sorted(map(repr, mine)) == sorted(map(repr, theirs)), name
        assert demo_summary(ref) == demo_summary(other)
        # The dispute's own queries: the rack in the order the log holds the CardsRacked.
        assert dispute(ref, "T01", shoe="S1", round_no=1) == \
            dispute(other, "T01", shoe="S1", round_no=1)


def test_ties_go_by_the_order_the_log_holds_the_events_in(store: Path) -> None:
    """The first writer's events come first in the log: where the rules read a first event
    (the load's decks, the placer, the cutting card's round) its are read; where they read the
    last (a settlement's odds, the shuffle and the dealer in force), the second writer's."""
    with _laid_out(store, ORDERS[1]) as con:
        assert con.execute("SELECT decks FROM shoes").fetchall() == [(6,)]
        assert con.execute("SELECT DISTINCT decks FROM ledger").fetchall() == [(6,)]
        # Round 6 deals a second 3C: a shoe of 6 decks holds six (13:47-20.31(a)2)
        assert con.execute("SELECT count(*) FROM anomalies WHERE code = 'EXTRA_CARD'"
                           ).fetchall() == [(0,)]
        assert con.execute(
            "SELECT player_id, actual_odds FROM ledger WHERE round_no = 1 AND seat = 1 "
            "AND wager_kind = 'ORIGINAL'").fetchall() == [("P1", 5)]
        # Seat 3's two placements at one seq and moment: the first in the log placed the
        # wager (its player and amount), and what is owed is the log's last line before the
        # first card (the second writer's $20), so the $10 settled is WRONG_AMOUNT.
        assert con.execute(
            "SELECT player_id, placed_cents, amount_cents, status FROM ledger "
            "WHERE round_no = 1 AND seat = 3").fetchall() == [("P3", 1000, 2000, "WRONG_AMOUNT")]
        # The last shuffle is the second writer's continuous shuffler: the load owes no burn.
        assert con.execute("SELECT count(*) FROM anomalies WHERE code = 'MISSING_BURN'"
                           ).fetchall() == [(0,)]
        assert con.execute("SELECT round_no, dealer FROM rounds WHERE round_no IN (1, 2) "
                           "ORDER BY 1").fetchall() == [(1, "D1"), (2, "D2")]
        # 13:47-20.31(d)1: a burn comes before a round's first card; each burn is one row.
        assert con.execute("SELECT list(split_part(explanation, ' ', 1) ORDER BY explanation) "
                           "FROM anomalies WHERE code = 'BURN_DURING_ROUND'"
                           ).fetchone() == (["5H", "6H"],)
        # The cutting card came out in round 5, so round 6 was dealt after it: the rule
        # cites round 5, not the second writer's 2.
        (explanation,) = con.execute(
            "SELECT explanation FROM anomalies WHERE code = 'NO_RESHUFFLE_AFTER_CUT_CARD'"
        ).fetchone()
        assert explanation.endswith("in round 5")
        # DUPLICATE_EVENT stands at the id's last copy: the second writer's, of round 2.
        assert con.execute("SELECT round_no, len(seqs) FROM anomalies WHERE code = "
                           "'DUPLICATE_EVENT' AND explanation LIKE '%cutting-card-1%'"
                           ).fetchall() == [(2, 2)]


def test_a_load_doubled_at_one_seq_owes_a_burn_once_per_load(store: Path) -> None:
    """Without the second writer's shuffle the hand shuffle is in force and each load owes a
    burn (13:47-20.31(d)1): two debts, not each load met twice through a join by seq."""
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{store}' AS src (READ_ONLY)")
        con.execute("CREATE TABLE events AS SELECT * FROM src.events WHERE NOT "
                    "(event_type = 'ShuffleCompleted' AND method = 'CONTINUOUS_SHUFFLER')")
        create_views(con)
        ((explanation,),) = con.execute(
            "SELECT explanation FROM anomalies WHERE code = 'MISSING_BURN' "
            "AND explanation LIKE '%loaded%'").fetchall()
    finally:
        con.close()
    assert explanation == ("No card burned after shoe S1 was loaded and shoe S1 was loaded, "
                           "before 3C was dealt to the left box")


@pytest.mark.parametrize("batch_size", [4, 25])
def test_incremental_detection_of_a_doubled_seq_equals_a_full_evaluation(
        tmp_path: Path, batch_size: int) -> None:
    """Projected in small batches, so a doubled seq falls inside a batch and across two: the
    stored anomaly rows equal the full evaluation's, EXCEPT ALL both ways."""
    with duckdb.connect(str(store_at(tmp_path / "store.duckdb"))) as con:
        project(_record(tmp_path), con, batch_size=batch_size, publish_alerts=False)
        assert differences(con) == (0, 0)
        assert con.execute(f"SELECT count(*) FROM {STORED}").fetchone() == \
            con.execute("SELECT count(*) FROM anomalies").fetchone() != (0,)

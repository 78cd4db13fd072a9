"""The views and queries over one hand-built shoe whose every card is known: the discard rack
rebuilt card by card, rounds, hands, wagers, settlements, shoes, and the replay."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from conftest import START, HandBuiltTable, card

from events.errors import NotFoundError
from events.log.embedded.log import EmbeddedLog
from events.reddog import model
from projections.projector import project
from projections.queries import list_shoes
from projections.replay import replay_shoe

RACK = [  # (rack_position, source, round_no, card): 13:47-20.31(d)1, (d)15, (g)1
    (1, "burn", None, "7D"),
    (2, "round", 1, "AS"), (3, "round", 1, "3H"), (4, "round", 1, "10D"),
    (5, "round", 2, "5C"), (6, "round", 2, "6C"),
    (7, "burn", None, "2C"),
    (8, "face_up", None, "9H"),
    (9, "round", 3, "QD"), (10, "round", 3, "QS"), (11, "round", 3, "QH"),
    (12, "round", 4, "8S"), (13, "round", 4, "KC"), (14, "round", 4, "4D"),
]


def record_shoe(tb: HandBuiltTable) -> None:
    """T01-S1: a burn, a spread round with a raise, a consecutive round, a dealer change with
    its burn, a card found face up, three of a kind, and a round racked out of order."""
    tb.tap_in("D1")
    tb.new_shoe("T01-S1", burn="7D")
    tb.play(1, "AS 3H 10D", wagers={1: 2500, 2: 1000}, raises={1: 2500})
    tb.play(2, "5C 6C", wagers={2: 1000})
    tb.emit(model.DealerTappedOut(dealer_id="D1"))
    tb.tap_in("D2")
    two = card("2C")  # 13:47-20.31(d)1: a new dealer burns one card
    tb.emit(model.CardBurned(rank=two.rank, suit=two.suit, reason=model.BurnReason.NEW_DEALER))
    nine = card("9H")
    tb.emit(model.CardFoundFaceUp(rank=nine.rank, suit=nine.suit))
    tb.play(3, "QD QS QH", wagers={1: 500})
    tb.round_no = 4  # wagers changed and removed before the first card (allowed)
    tb.emit(model.WagerPlaced(seat=5, area=5, player_id="P5", amount_cents=1000))
    tb.emit(model.WagerChanged(seat=5, area=5, amount_cents=2000))
    tb.emit(model.WagerPlaced(seat=6, area=6, player_id="P6", amount_cents=500,
                              instrument=model.Instrument.MATCH_PLAY_COUPON))
    tb.emit(model.WagerRemoved(seat=6, area=6))
    tb.emit(model.CuttingCardReached())
    tb.play(4, "KC 4D 8S", wagers={1: 1000}, racked="8S KC 4D")
    tb.emit(model.ShoeClosed(cards_remaining=80))
    tb.flush()


# Built once for the module: every test only reads it, through a read-only connection (con),
# and its projection in batches of 10 (detection runs in each) was most of each test's time.
@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("views")
    log = EmbeddedLog(folder / "log", partitions=4)  # as conftest's log fixture
    record_shoe(HandBuiltTable(log, "T01"))
    other = HandBuiltTable(log, "T02")  # another table's dealer must not leak into T01's rounds
    other.tap_in("D9")
    other.new_shoe("T02-S1", burn="KH", decks=1)
    other.play(1, "2S 2H 3D", wagers={1: 500})
    other.flush()
    path = folder / "views.duckdb"
    project(log, path, batch_size=10)
    return path


@pytest.fixture
def con(db: Path) -> duckdb.DuckDBPyConnection:
    # A plain read-only DuckDB connection, as any SQL client would open the file: the views
    # need no pitlog code (no Python functions) to run.
    with duckdb.connect(str(db), read_only=True) as c:
        yield c


def test_rack_rebuilds_the_shoe_card_by_card_in_rack_order(con: duckdb.DuckDBPyConnection
                                                           ) -> None:
    rows = con.execute("SELECT rack_position, source, round_no, card FROM rack "
                       "WHERE shoe_id = 'T01-S1'").fetchall()
    assert rows == RACK
    ranks = con.execute("SELECT rank, suit FROM rack WHERE shoe_id = 'T01-S1' AND "
                        "rack_position IN (1, 4, 9) ORDER BY rack_position").fetchall()
    assert ranks == [(7, "D"), (10, "D"), (12, "D")]


def test_rack_positions_count_per_shoe(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute("SELECT rack_position, source, round_no, card FROM rack "
                       "WHERE shoe_id = 'T02-S1'").fetchall()
    assert rows == [(1, "burn", None, "KH"), (2, "round", 1, "2S"), (3, "round", 1, "2H"),
                    (4, "round", 1, "3D")]


def test_hands_put_the_cards_as_racked_next_to_the_cards_as_dealt(
        con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute("SELECT round_no, dealt, racked, racked_in_dealing_order, "
                       "first_rack_position, last_rack_position FROM hands "
                       "WHERE shoe_id = 'T01-S1'").fetchall()
    assert rows == [(1, "AS 3H 10D", "AS 3H 10D", True, 2, 4),
                    (2, "5C 6C", "5C 6C", True, 5, 6),
                    (3, "QD QS QH", "QD QS QH", True, 9, 11),
                    (4, "KC 4D 8S", "8S KC 4D", False, 12, 14)]  # 13:47-20.31(d)15 broken


def test_rounds_classify_the_cards_and_name_the_dealer_tapped_in(
        con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute("SELECT round_no, dealer, left_card, right_card, middle_card, kind, "
                       "spread, outcome, announcements FROM rounds "
                       "WHERE table_id = 'T01'").fetchall()
    assert rows == [
        (1, "D1", "AS", "3H", "10D", "spread", 10, "won", "Spread 10 | Raises closed | Ten"),
        (2, "D1", "5C", "6C", None, "consecutive", None, "void",
         "The cards are consecutive--tie hand"),
        (3, "D2", "QD", "QS", "QH", "pair", None, "won", "We have a pair | Three of a kind"),
        (4, "D2", "KC", "4D", "8S", "spread", 8, "won", "Spread 8 | Raises closed | Eight"),
    ]
    (other,) = con.execute("SELECT dealer, kind, outcome FROM rounds "
                           "WHERE table_id = 'T02'").fetchall()
    assert other == ("D9", "pair", "void")  # (d)10: no three of a kind, tie hand


def test_rounds_carry_the_wall_clock_span_of_their_events(con: duckdb.DuckDBPyConnection
                                                          ) -> None:
    # Round 1 starts with T01's 4th event (tap-in, load, burn) and ends with its 16th.
    ((started, ended, first, last),) = con.execute(
        "SELECT epoch_us(started_at), epoch_us(ended_at), first_seq, last_seq FROM rounds "
        "WHERE table_id = 'T01' AND round_no = 1").fetchall()
    epoch = START.timestamp() * 1_000_000
    assert (first, last) == (4, 16)
    assert (started - epoch, ended - epoch) == (4_000_000, 16_000_000)


def test_wagers_show_each_wager_and_raise_as_it_stood_with_its_settlement(
        con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute(
        "SELECT round_no, seat, wager_kind, player_id, instrument, placed_cents, amount_cents, "
        "removed, changes, settlements, settled_outcome, settled_cents, settled_odds "
        "FROM wagers WHERE table_id = 'T01'").fetchall()
    assert rows == [
        (1, 1, "ORIGINAL", "P1", "CHIPS", 2500, 2500, False, 0, 1, "WON", 2500, 1),
        (1, 1, "RAISE", "P1", None, 2500, 2500, False, 0, 1, "WON", 2500, 1),
        (1, 2, "ORIGINAL", "P2", "CHIPS", 1000, 1000, False, 0, 1, "WON", 1000, 1),
        (2, 2, "ORIGINAL", "P2", "CHIPS", 1000, 1000, False, 0, 1, "VOID", 1000, None),
        (3, 1, "ORIGINAL", "P1", "CHIPS", 500, 500, False, 0, 1, "WON", 5500, 11),
        (4, 1, "ORIGINAL", "P1", "CHIPS", 1000, 1000, False, 0, 1, "WON", 1000, 1),
        (4, 5, "ORIGINAL", "P5", "CHIPS", 1000, 2000, False, 1, 0, None, None, None),
        (4, 6, "ORIGINAL", "P6", "MATCH_PLAY_COUPON", 500, 0, True, 0, 0, None, None, None),
    ]


def test_settlements_split_the_amount_into_paid_collected_and_returned(
        con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute("SELECT round_no, seat, wager_kind, outcome, paid_cents, "
                       "collected_cents, returned_cents FROM settlements").fetchall()
    assert rows == [
        (1, 1, "ORIGINAL", "WON", 2500, 0, 0), (1, 1, "RAISE", "WON", 2500, 0, 0),
        (1, 2, "ORIGINAL", "WON", 1000, 0, 0), (2, 2, "ORIGINAL", "VOID", 0, 0, 1000),
        (3, 1, "ORIGINAL", "WON", 5500, 0, 0), (4, 1, "ORIGINAL", "WON", 1000, 0, 0),
        (1, 1, "ORIGINAL", "VOID", 0, 0, 500),  # T02's pair without three of a kind
    ]


def test_shoes_sum_up_each_shoe(con: duckdb.DuckDBPyConnection) -> None:
    ((decks, rounds, dealt, burns, face_up, remaining, dealers, reached, closed, opened),) = \
        con.execute("SELECT decks, rounds, cards_dealt, burns, cards_found_face_up, "
                    "cards_remaining, dealers, epoch(cutting_card_reached_at), "
                    "epoch(closed_at), epoch(opened_at) FROM shoes "
                    "WHERE shoe_id = 'T01-S1'").fetchall()
    assert (decks, rounds, dealt, burns, face_up, remaining) == (6, 4, 11, 2, 1, 80)
    assert dealers == ["D1", "D2"]
    assert (reached - opened, closed - opened) == (37, 47)


def test_list_shoes_lists_every_shoe_or_one_tables(con: duckdb.DuckDBPyConnection) -> None:
    assert [(r["table_id"], r["shoe_id"], r["decks"], r["dealers"]) for r in list_shoes(con)] \
        == [("T01", "T01-S1", 6, ["D1", "D2"]), ("T02", "T02-S1", 1, ["D9"])]
    assert [r["shoe_id"] for r in list_shoes(con, table="T02")] == ["T02-S1"]
    with pytest.raises(NotFoundError, match="no table 'T99' in the store; known tables: T01, T02"):
        list_shoes(con, table="T99")  # a typo is an error, never a clean "no shoes"


def test_replay_describes_every_event_in_order_with_its_time(
        con: duckdb.DuckDBPyConnection) -> None:
    replay = replay_shoe(con, "T01-S1")
    assert replay.shoe["table_id"] == "T01" and replay.shoe["rounds"] == 4
    assert [e["seq"] for e in replay.events] == list(range(2, 2 + len(replay.events)))
    assert replay.events[0]["occurred_at"] == START + timedelta(seconds=2)
    lines = [e["description"] for e in replay.events]
    assert lines[:16] == [
        "6 decks loaded into shoe T01-S1",
        "burns 7D face down to the rack (new_shoe)",
        "seat 1 wagers $25.00 (chips)",
        "seat 2 wagers $10.00 (chips)",
        "AS face up to the left box",
        "3H face up to the right box",
        '"Spread 10" (spread 10)',
        "seat 1 raises $25.00",
        '"Raises closed" (raises_closed)',
        "10D face up to the middle box",
        '"Ten" (third_card 10)',
        "seat 1 wager won: paid $25.00 at 1 to 1",
        "seat 1 raise won: paid $25.00 at 1 to 1",
        "seat 2 wager won: paid $10.00 at 1 to 1",
        "racks AS 3H 10D",
        "seat 2 wagers $10.00 (chips)",
    ]
    assert "dealer D2 taps in" in lines
    assert "9H found face up in the shoe (not used)" in lines
    assert "seat 6 wagers $5.00 (match play coupon)" in lines
    assert "seat 5 changes the wager to $20.00" in lines
    assert "seat 2 wager void: $10.00 returned" in lines
    assert lines[-2:] == ["racks 8S KC 4D", "shoe closed, 80 cards remaining"]


def test_replay_reads_the_hands_back_in_discard_rack_order(
        con: duckdb.DuckDBPyConnection) -> None:
    hands = [(h["rack_positions"], h["source"], h["round_no"], h["racked"], h["dealt"],
              h["outcome"], h["dealer"]) for h in replay_shoe(con, "T01-S1").hands]
    assert hands == [
        ("1", "burn", None, "7D", None, None, None),
        ("2-4", "round", 1, "AS 3H 10D", "AS 3H 10D", "won", "D1"),
        ("5-6", "round", 2, "5C 6C", "5C 6C", "void", "D1"),
        ("7", "burn", None, "2C", None, None, None),
        ("8", "face_up", None, "9H", None, None, None),
        ("9-11", "round", 3, "QD QS QH", "QD QS QH", "won", "D2"),
        ("12-14", "round", 4, "8S KC 4D", "KC 4D 8S", "won", "D2"),
    ]


@pytest.mark.parametrize("shoe_id", ["T01-S9", "", "T01-S1' OR '1'='1"])
def test_replay_of_an_unknown_shoe_raises_not_found(con: duckdb.DuckDBPyConnection,
                                                    shoe_id: str) -> None:
    with pytest.raises(NotFoundError, match="pitlog shoes"):
        replay_shoe(con, shoe_id)
    with pytest.raises(NotFoundError, match="at table T02"):
        replay_shoe(con, "T01-S1", table="T02")


@pytest.mark.parametrize(("view", "call"), [
    ("rounds", "rounds_of($table, $shoe, NULL, $first, $last)"),
    ("rack", "rack_of($table, $shoe, $first, $last)"),
    ("hands", "hands_of($table, $shoe, $first, $last)"),
    ("shoes", "shoes_of($table, $shoe, $first, $last)"),
])
def test_the_views_of_one_shoe_read_through_its_seq_span_are_the_views_rows(
        con: duckdb.DuckDBPyConnection, view: str, call: str) -> None:
    # replay_shoe and dispute read one shoe's (or round's) rows through these macros, the
    # events between the shoe's first and last seq only; the dealer tapped in before the shoe
    # (D1) and the other table's events must still be seen, and left out, as by the views.
    for table_id, shoe_id in [("T01", "T01-S1"), ("T02", "T02-S1")]:
        (first, last), = con.execute(
            "SELECT min(seq), max(seq) FROM events WHERE table_id = ? AND shoe_id = ?",
            [table_id, shoe_id]).fetchall()
        params = {"table": table_id, "shoe": shoe_id, "first": first, "last": last}
        want = con.execute(f"SELECT * FROM {view} WHERE table_id = $table AND shoe_id = $shoe "
                           "ORDER BY ALL", {"table": table_id, "shoe": shoe_id}).fetchall()
        got = con.execute(f"SELECT * FROM {call} ORDER BY ALL", params).fetchall()
        assert want and got == want
    # And all NULL, every row of the view.
    nulls = call.replace("$table", "NULL").replace("$shoe", "NULL").replace(
        "$first", "NULL").replace("$last", "NULL")
    assert (con.execute(f"SELECT * FROM {nulls} ORDER BY ALL").fetchall()
            == con.execute(f"SELECT * FROM {view} ORDER BY ALL").fetchall())

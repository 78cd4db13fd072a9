"""A shoe's replay and a dispute lookup give the same answers, field for field, with session 13's
shortened reads as without them (issue 19 item 4): the dealer's look-up started at the table's
last tap before the shoe or round (projections/lookup.py, the macros' taps_from), and the rack
and the shoes' dealers read without planning events_once_of three and two times
(sql/cards.sql rack_of, sql/shoes.sql shoes_of).

The store is a simulated evening with irregularities, dealer changes inside shoes, and a table
TX that deals from a shoe with the id of one of T01's (a shoe id used at two tables). The
"before" answers are the same functions with the look-up unbounded (taps_from None, what the
macros did before) and, for the rack and the shoes, the macros as they were (_BEFORE below,
installed under other names), compared with EXCEPT ALL both ways.
"""

from __future__ import annotations

from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from store_template import new_store
from table_builder import EVENING, TableBuilder, recorder_for

from events.errors import ProjectionError
from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections import dispute as dispute_module
from projections import lookup, replay
from projections.dispute import dispute
from projections.moment import OutsideRound
from projections.projector import project

SHARED = "T01-S0001"  # T01's first shoe id, used again at table TX

# rack_of and shoes_of as they were before session 13 (main at 9511961), renamed.
_BEFORE = """
CREATE OR REPLACE MACRO rack_of_before(in_table, in_shoe, from_seq, to_seq) AS TABLE
WITH shoe_events AS NOT MATERIALIZED (
    SELECT * FROM events_once_of(in_table, in_shoe, from_seq, to_seq)
),
entries AS (
    SELECT table_id, shoe_id, NULL::INTEGER AS round_no, 'burn' AS source, rank, suit,
           seq, log_offset, 1::BIGINT AS card_index, occurred_at
    FROM shoe_events WHERE event_type = 'CardBurned'
    UNION ALL
    SELECT table_id, shoe_id, round_no, 'face_up', rank, suit,
           seq, log_offset, 1::BIGINT, occurred_at
    FROM shoe_events WHERE event_type = 'CardFoundFaceUp'
    UNION ALL
    SELECT table_id, shoe_id, round_no, 'round', card.rank, card.suit,
           seq, log_offset, card_index, occurred_at
    FROM (SELECT table_id, shoe_id, round_no, seq, log_offset, occurred_at,
                 unnest(cards) AS card, generate_subscripts(cards, 1) AS card_index
          FROM shoe_events WHERE event_type = 'CardsRacked')
)
-- (the rack's positions as rack_of numbers them, written with a named window)
SELECT * EXCLUDE (log_offset), row_number() OVER by_rack AS rack_position,
       card_label(rank, suit) AS card
FROM entries
WINDOW by_rack AS (PARTITION BY table_id, shoe_id ORDER BY seq, log_offset, card_index);

CREATE OR REPLACE MACRO shoe_dealers_before(in_table, in_shoe, from_seq, to_seq) AS TABLE
WITH shoe_events AS NOT MATERIALIZED (
    SELECT * FROM events_once_of(in_table, in_shoe, from_seq, to_seq)
    WHERE shoe_id IS NOT NULL
)
SELECT table_id, shoe_id, list(dealer ORDER BY first_seq, dealer) AS dealers
FROM (
    SELECT table_id, shoe_id, dealer, min(at_seq) AS first_seq
    FROM (
        SELECT table_id, shoe_id, dealer, first_seq AS at_seq
        FROM rounds_of(in_table, in_shoe, NULL, from_seq, to_seq)
        WHERE dealer IS NOT NULL AND shoe_id IS NOT NULL
        UNION ALL
        SELECT table_id, shoe_id, dealer_id, seq
        FROM shoe_events WHERE event_type = 'DealerTappedIn'
    )
    GROUP BY table_id, shoe_id, dealer
)
GROUP BY table_id, shoe_id;
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("lookup")
    log = EmbeddedLog(folder / "log")
    # A new dealer every 7 rounds: taps inside shoes, so the look-up's start matters. T02
    # deals casino nights' single deck: a new shoe every few rounds.
    simulate(log, SimConfig(seed=19, tables=2, rounds=45, irregularities=0.04,
                            dealer_shift_rounds=7, profiles=("nj-casino", "nj-casino-night")))
    tx = TableBuilder(recorder_for(log), "TX", clock=EVENING + timedelta(days=30))
    tx.open_table()
    tx.tap_in("DX1")
    tx.new_shoe(SHARED)
    tx.round_no = 1
    tx.deal_round("3S QH 7C", {1: 1000, 2: 500})
    tx.tap_in("DX2")
    tx.round_no = 2
    tx.deal_round("8C 8D 2S", {1: 500})
    tx.flush()
    db = new_store(folder / "pitlog.duckdb")
    project(log, db)
    with duckdb.connect(str(db)) as con:
        con.execute(_BEFORE)
    return db


@pytest.fixture
def con(store: Path) -> Any:
    with duckdb.connect(str(store), read_only=True) as c:
        yield c


def _unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dealer's look-up from the table's start, as before lookup.py."""
    monkeypatch.setattr(replay, "taps_from", lambda *a: None)
    monkeypatch.setattr(dispute_module, "taps_from", lambda *a: None)


def _shoes(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    return [tuple(r) for r in con.execute(
        "SELECT DISTINCT table_id, shoe_id FROM events WHERE shoe_id IS NOT NULL "
        "ORDER BY ALL").fetchall()]


def _outcome(call: Any) -> Any:
    try:
        return call()
    except OutsideRound as exc:
        return exc.as_dict(UTC)


def _moments(con: duckdb.DuckDBPyConnection) -> list[tuple[str, Any, int | None]]:
    """TX's rounds and every 12th other round: a moment inside it and one just after it
    (between rounds or shoes, or after the last), each for the whole table, for seat 3 and
    for seat 7, which no table has (a seat absent from a round is an OutsideRound too)."""
    spans = con.execute("SELECT table_id, min(occurred_at), max(occurred_at) FROM events "
                        "WHERE round_no IS NOT NULL GROUP BY table_id, shoe_id, round_no "
                        "ORDER BY ALL").fetchall()
    out: list[tuple[str, Any, int | None]] = []
    for i, (table, start, end) in enumerate(spans):
        if table == "TX" or i % 12 == 0:
            for at in (start + (end - start) / 2, end + timedelta(milliseconds=1)):
                out += [(table, at, None), (table, at, 3), (table, at, 7)]
    return out


@pytest.mark.parametrize("windows", [(lookup.FIRST_WINDOW, lookup.WIDEN), (3, 2)])
def test_every_replay_is_the_same_with_the_dealers_look_up_started_at_the_last_tap(
        store: Path, windows: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    # (3, 2): windows of a few seqs, so the look-up widens many times before it finds a tap.
    monkeypatch.setattr(lookup, "FIRST_WINDOW", windows[0])
    monkeypatch.setattr(lookup, "WIDEN", windows[1])
    with duckdb.connect(str(store), read_only=True) as con:
        pairs = _shoes(con)
        assert ("T01", SHARED) in pairs and ("TX", SHARED) in pairs
        bounded = [replay.replay_shoe(con, s, t) for t, s in pairs]
        starts = {t: lookup.taps_from(con, t, 10**9) for t, _ in pairs}
        _unbounded(monkeypatch)
        before = [replay.replay_shoe(con, s, t) for t, s in pairs]
    assert bounded == before
    assert all(starts.values())  # every table has a tap: the bound was used, not None
    # A bound past the last tap before a shoe loses that tap: the comparison would see it.
    monkeypatch.setattr(replay, "taps_from", lambda con, table, seq: seq + 1)
    with duckdb.connect(str(store), read_only=True) as con:
        assert [replay.replay_shoe(con, s, t) for t, s in pairs] != before
    # The dealers changed inside shoes: the replay names more than one for some shoe.
    assert max(len(r.shoe["dealers"]) for r in bounded) > 1
    assert [r.shoe["dealers"] for r in bounded if r.shoe["table_id"] == "TX"] == [["DX1", "DX2"]]


def test_a_shoe_used_at_two_tables_still_needs_its_table(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(ProjectionError, match="used at tables T01, TX"):
        replay.replay_shoe(con, SHARED)


def test_every_dispute_is_the_same_with_the_dealers_look_up_started_at_the_last_tap(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lookup, "FIRST_WINDOW", 5)
    with duckdb.connect(str(store), read_only=True) as con:
        moments = _moments(con)
        bounded = [_outcome(lambda t=t, at=at, s=s: dispute(con, t, at=at, seat=s))
                   for t, at, s in moments]
        _unbounded(monkeypatch)
        before = [_outcome(lambda t=t, at=at, s=s: dispute(con, t, at=at, seat=s))
                  for t, at, s in moments]
    assert bounded == before
    kinds = {type(o).__name__ if not isinstance(o, dict) else o["outside"] for o in bounded}
    # Rounds found, moments between rounds and seats that did not play all compared.
    assert {"Dispute", "between rounds", "the seat did not play"} <= kinds
    found = [o for o in bounded if not isinstance(o, dict)]
    assert any(d.settlements for d in found) and any(d.round["dealer"] for d in found)


def test_the_rack_and_the_shoes_dealers_are_the_macros_rows_from_before(
        con: duckdb.DuckDBPyConnection) -> None:
    def apart(new: str, old: str) -> list[Any]:
        return con.execute(f"(SELECT * FROM {new} EXCEPT ALL SELECT * FROM {old}) UNION ALL "
                           f"(SELECT * FROM {old} EXCEPT ALL SELECT * FROM {new})").fetchall()

    dealers = "(SELECT table_id, shoe_id, dealers FROM shoes_of({}))"
    for args in ["NULL, NULL, NULL, NULL", *(
            f"'{t}', '{s}', {a}, {b}" for t, s, a, b in con.execute(
                "SELECT table_id, shoe_id, min(seq), max(seq) FROM events "
                "WHERE shoe_id IS NOT NULL GROUP BY ALL ORDER BY ALL").fetchall())]:
        rack = ("(SELECT table_id, shoe_id, rack_position, round_no, source, rank, suit, card, "
                "seq, card_index, occurred_at FROM {})")
        assert apart(rack.format(f"rack_of({args})"),
                     rack.format(f"rack_of_before({args})")) == [], args
        assert apart(dealers.format(args), f"shoe_dealers_before({args})") == [], args
    ((racked, sources),) = con.execute(
        "SELECT count(*), count(DISTINCT source) FROM rack_of(NULL, NULL, NULL, NULL)"
    ).fetchall()
    assert racked > 100 and sources >= 2

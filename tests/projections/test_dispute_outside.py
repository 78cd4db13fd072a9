"""A dispute at a moment in no round: it says where the moment fell and names the rounds just
before and after, never another hand. Also an unknown table and a seat that did not play.

The hand-built pit records one event a second from 23:00:00 UTC (surveillance_pit.py), so the
event with sequence number n happened at 23:00:00 + n seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from surveillance_pit import EVENING, opened

from events.reddog import model
from projections import moment
from projections.dispute import dispute
from projections.localtime import parse_zone
from projections.moment import OutsideRound
from projections.serve.templates.dispute import dispute_sections, outside_body


def _at(seq: int, plus: float = 0.0) -> object:
    return EVENING + timedelta(seconds=seq + plus)


def build_evening(folder: Path) -> tuple[Path, dict[str, int]]:
    """T01: opened, shoe S1 with rounds 1 and 2 (a dealer change between them), shoe S2 with
    round 1, then closed. Returns the database and the seqs of the landmarks."""
    pit = opened(folder)
    marks: dict[str, int] = {}
    r1 = pit.play(1, "5S 6H", {1: 1000})
    marks["r1_first"], marks["r1_rack"] = r1["wager1"], r1["rack"]
    marks["dealer_change"] = pit.tap_in("D2")
    r2 = pit.play(2, "3S QH 7C", {1: 1000, 3: 2500})
    marks["r2_first"], marks["r2_rack"] = r2["wager1"], r2["rack"]
    marks["shoe_closed"] = pit.close_shoe()
    marks["s2_loaded"] = pit.new_shoe("S2")
    r3 = pit.play(1, "2D 9C 4H", {2: 500})
    marks["s2r1_first"], marks["s2r1_rack"] = r3["wager2"], r3["rack"]
    pit.close_shoe()
    marks["closed"] = pit.emit(model.TableClosed(reason="end of shift"), actor="pit-terminal")
    return pit.project(), marks


@pytest.fixture(scope="module")
def evening(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    return build_evening(tmp_path_factory.mktemp("outside"))


def _outside(db: Path, table: str, at: object, seat: int | None = None) -> OutsideRound:
    with duckdb.connect(str(db), read_only=True) as con, pytest.raises(OutsideRound) as caught:
        dispute(con, table, at=at, seat=seat)  # type: ignore[arg-type]
    return caught.value


def _span(s: moment.RoundSpan | None) -> tuple[str, int] | None:
    return None if s is None else (s.shoe_id, s.round_no)


def test_inside_a_round_the_round_is_rebuilt(evening: tuple[Path, dict[str, int]]) -> None:
    db, m = evening
    with duckdb.connect(str(db), read_only=True) as con:
        d = dispute(con, "T01", at=_at(m["r2_first"], 0.5))  # type: ignore[arg-type]
    assert (d.round["shoe_id"], d.round["round_no"]) == ("S1", 2)


def test_between_rounds_names_both_rounds_with_their_times(
        evening: tuple[Path, dict[str, int]]) -> None:
    db, m = evening
    e = _outside(db, "T01", _at(m["dealer_change"]))
    assert e.where == moment.BETWEEN_ROUNDS
    assert (_span(e.before), _span(e.after)) == (("S1", 1), ("S1", 2))
    assert e.before is not None and e.after is not None
    assert e.before.ended_at == _at(m["r1_rack"]) and e.after.started_at == _at(m["r2_first"])
    text = e.describe(parse_zone("America/New_York"))
    assert text.startswith("2026-11-28 18:00:")  # 23:00 UTC is 18:00 EST
    assert "EST at table T01 is outside any round: between rounds 1 and 2 of shoe S1" in text
    end_r1 = (EVENING + timedelta(seconds=m["r1_rack"]) - timedelta(hours=5)).strftime("%H:%M:%S")
    assert "round before: shoe S1 round 1, " in text and f"to {end_r1} EST" in text
    assert "round after: shoe S1 round 2" in text and "(--round S1:2)" in text


def test_a_fraction_of_a_second_after_a_round_is_outside_it(
        evening: tuple[Path, dict[str, int]]) -> None:
    db, m = evening
    e = _outside(db, "T01", _at(m["r1_rack"], 0.25))
    assert e.where == moment.BETWEEN_ROUNDS and _span(e.before) == ("S1", 1)
    # The moment with its fraction: cut to the second it read as the round's own end.
    rack = EVENING + timedelta(seconds=m["r1_rack"])
    assert e.headline(parse_zone("UTC")).startswith(
        f"{rack:%Y-%m-%d %H:%M:%S}.250 UTC at table T01 is outside any round")
    assert f"to {rack:%H:%M:%S} UTC" in e.describe(parse_zone("UTC"))


def test_between_shoes_says_so_with_the_shoe_closing(
        evening: tuple[Path, dict[str, int]]) -> None:
    db, m = evening
    e = _outside(db, "T01", _at(m["s2_loaded"]))
    assert e.where == moment.BETWEEN_SHOES
    assert (_span(e.before), _span(e.after)) == (("S1", 2), ("S2", 1))
    assert e.since == _at(m["shoe_closed"])
    assert "between shoes S1 and S2, shoe S1 closed at 23:00:" in str(e)


def test_after_the_table_closed_offers_only_the_round_before(
        evening: tuple[Path, dict[str, int]]) -> None:
    db, m = evening
    e = _outside(db, "T01", _at(m["closed"]) + timedelta(hours=7, minutes=30))
    assert e.where == moment.TABLE_CLOSED and e.since == _at(m["closed"])
    assert (_span(e.before), e.after) == (("S2", 1), None)
    assert "no round after" in str(e)


def test_before_the_table_opened_offers_only_the_round_after(
        evening: tuple[Path, dict[str, int]]) -> None:
    db, _ = evening
    e = _outside(db, "T01", EVENING - timedelta(hours=1))
    assert e.where == moment.BEFORE_OPEN and e.since == _at(1)
    assert (e.before, _span(e.after)) == (None, ("S1", 1))
    assert "no round before" in str(e)


def test_after_opening_but_before_the_first_round(evening: tuple[Path, dict[str, int]]) -> None:
    db, m = evening
    e = _outside(db, "T01", _at(m["r1_first"] - 1))
    assert e.where == moment.BEFORE_FIRST and _span(e.after) == ("S1", 1)


@pytest.mark.parametrize("table, hint", [("t01", "did you mean T01?"), ("T09", "")])
def test_an_unknown_table_lists_the_known_ones(evening: tuple[Path, dict[str, int]],
                                               table: str, hint: str) -> None:
    db, m = evening
    e = _outside(db, table, _at(m["r2_first"]))
    assert e.where == moment.UNKNOWN_TABLE and e.known_tables == ("T01",)
    assert f"no table {table!r} in the store" in str(e) and "known tables: T01" in str(e)
    assert hint in str(e) and ("did you mean" in str(e)) == bool(hint)


def test_a_seat_that_did_not_play_is_not_shown_the_hand_of_others(
        evening: tuple[Path, dict[str, int]]) -> None:
    db, m = evening
    e = _outside(db, "T01", _at(m["r2_first"], 0.5), seat=2)
    assert e.where == moment.SEAT_ABSENT and e.seats == (1, 3)
    # Seat 2 played only in shoe S2's round 1: there is no round of seat 2 before.
    assert (e.before, _span(e.after)) == (None, ("S2", 1))
    assert "seat 2 did not play at table T01" in str(e) and "seats that played: 1, 3" in str(e)
    e9 = _outside(db, "T01", _at(m["r2_first"], 0.5), seat=9)
    assert (e9.before, e9.after) == (None, None)


# Between rounds with a seat asked for: the rounds offered are the seat's own (the table's
# round before, which seat 3 did not play, sent the officer to "seat 3 did not play"; an
# outside review, session 37), while the headline still names the table's rounds either side.
def test_between_rounds_a_seat_is_offered_its_own_rounds(
        evening: tuple[Path, dict[str, int]]) -> None:
    db, m = evening
    e = _outside(db, "T01", _at(m["dealer_change"]), seat=3)  # seat 3 played S1 round 2 only
    assert e.where == moment.BETWEEN_ROUNDS and e.seat == 3
    assert (e.before, _span(e.after)) == (None, ("S1", 2))
    assert tuple(map(_span, e.between)) == (("S1", 1), ("S1", 2))
    text = e.describe(parse_zone("UTC"))
    assert "outside any round: between rounds 1 and 2 of shoe S1; no round of seat 3 before; " \
           "round of seat 3 after: shoe S1 round 2" in text and "(--round S1:1)" not in text
    got = e.as_dict(UTC)
    assert (got["seat"], got["before"], got["after"]["round_no"]) == (3, None, 2)
    # Seat 1 played both: the same rounds as without a seat.
    e1 = _outside(db, "T01", _at(m["dealer_change"]), seat=1)
    assert (_span(e1.before), _span(e1.after)) == (("S1", 1), ("S1", 2))
    # The console's page links the rounds it offers for that seat (a link without it showed
    # every seat's wagers); without a seat, no seat.
    page = outside_body(e, UTC)
    assert 'href="/dispute?table=T01&amp;shoe=S1&amp;round=2&amp;seat=3"' in page
    assert "round=1" not in page  # no round of seat 3 before: nothing linked
    assert 'href="/dispute?table=T01&amp;shoe=S1&amp;round=1"' in outside_body(
        _outside(db, "T01", _at(m["dealer_change"])), UTC)


def test_a_seat_that_played_gets_its_rows(evening: tuple[Path, dict[str, int]]) -> None:
    db, m = evening
    with duckdb.connect(str(db), read_only=True) as con:
        d = dispute(con, "T01", at=_at(m["r2_first"], 0.5), seat=3)  # type: ignore[arg-type]
    assert {w["seat"] for w in d.wagers} == {3} and [s["seat"] for s in d.settlements] == [3]


def test_the_json_form_carries_the_neighbours(evening: tuple[Path, dict[str, int]]) -> None:
    db, m = evening
    caught = _outside(db, "T01", _at(m["dealer_change"]))
    got = caught.as_dict(UTC)
    assert got["outside"] == "between rounds"
    assert got["before"]["round_no"] == 1 and got["after"]["round_no"] == 2
    assert got["before"]["ended_at"] == _at(m["r1_rack"])  # a time, for the encoder's zone
    assert got["message"] == caught.describe(UTC)



def test_while_the_table_was_closed_between_two_sessions(tmp_path: Path) -> None:
    pit = opened(tmp_path)
    pit.play(1, "5S 6H", {1: 1000})
    pit.close_shoe()
    closed = pit.emit(model.TableClosed(reason="break"), actor="pit-terminal")
    pit.clock += timedelta(hours=2)
    pit.open_table()
    pit.tap_in("D3")
    pit.new_shoe("S2")
    r = pit.play(1, "2D 9C 4H", {2: 500})
    db = pit.project()
    e = _outside(db, "T01", _at(closed) + timedelta(hours=1))
    assert e.where == moment.TABLE_CLOSED and e.since == _at(closed)
    assert (_span(e.before), _span(e.after)) == (("S1", 1), ("S2", 1))
    assert e.after is not None and e.after.started_at == _at(r["wager2"]) + timedelta(hours=2)


def test_asked_with_a_fraction_the_rounds_beside_it_show_theirs() -> None:
    """23:06:50.500 is between a round that ended at 23:06:50.100 and one begun at
    23:06:50.996: cut to the second both read 23:06:50, as if the moment were inside the
    second round. With the moment's fraction, theirs are shown; asked to the second, the
    rounds keep the video's clock."""
    at = datetime(2026, 11, 28, 23, 6, 50, 500_000, tzinfo=UTC)
    before = moment.RoundSpan("S1", 1, at - timedelta(seconds=40), at - timedelta(
        milliseconds=400), 10, 20)
    after = moment.RoundSpan("S1", 2, at + timedelta(milliseconds=496), at + timedelta(
        seconds=30, microseconds=1), 21, 30)
    e = moment.OutsideRound("T01", at, moment.BETWEEN_ROUNDS, before=before, after=after)
    assert e.describe(parse_zone("UTC")) == (
        "2026-11-28 23:06:50.500 UTC at table T01 is outside any round: between rounds 1 and 2 "
        "of shoe S1; round before: shoe S1 round 1, 23:06:10.500 UTC to 23:06:50.100 UTC "
        "(--round S1:1); round after: shoe S1 round 2, 23:06:50.996 UTC to "
        "23:07:20.500001 UTC (--round S1:2)")
    whole = moment.OutsideRound("T01", at.replace(microsecond=0), moment.BETWEEN_ROUNDS,
                                before=before, after=after)
    assert "shoe S1 round 2, 23:06:50 UTC to 23:07:20 UTC" in whole.describe(parse_zone("UTC"))


def test_asked_with_a_fraction_the_tables_own_times_show_theirs() -> None:
    """Before a table that opened at 23:00:01.809, the moment 23:00:01.5 reads "opens at
    23:00:01.809", not "opens at 23:00:01" (as if it had opened before the moment asked)."""
    opened_at = datetime(2026, 11, 28, 23, 0, 1, 809_000, tzinfo=UTC)
    e = moment.OutsideRound("T01", opened_at - timedelta(microseconds=309_000),
                            moment.BEFORE_OPEN, since=opened_at)
    assert e.headline(parse_zone("UTC")) == (
        "2026-11-28 23:00:01.500 UTC at table T01 is outside any round: before the table "
        "opened (opens at 2026-11-28 23:00:01.809 UTC)")
    whole = moment.OutsideRound("T01", opened_at.replace(microsecond=0), moment.BEFORE_OPEN,
                                since=opened_at)
    assert whole.headline(parse_zone("UTC")).endswith("(opens at 2026-11-28 23:00:01 UTC)")


def test_a_moment_written_with_000_is_that_instant_not_the_whole_second() -> None:
    """Round 1 ends at 23:00:09.800, round 2 begins at 23:00:10.400. `23:00:10` is the whole
    second (the video's clock): round 2 begun within it is in play. `23:00:10.000` names the
    instant, which lies between the two rounds, and reads back as written."""
    from projections.localtime import form_time, parse_local

    con = duckdb.connect()
    con.execute("CREATE TABLE events (table_id VARCHAR, shoe_id VARCHAR, round_no INTEGER, "
                "seat INTEGER, event_type VARCHAR, seq BIGINT, occurred_at TIMESTAMPTZ)")
    for seq, (round_no, at) in enumerate([(1, "23:00:00"), (1, "23:00:09.8"),
                                          (2, "23:00:10.4"), (2, "23:00:20")], start=1):
        con.execute("INSERT INTO events VALUES ('T01', 'S1', ?, NULL, 'CardDrawn', ?, "
                    "?::TIMESTAMPTZ)", [round_no, seq, f"2026-11-28 {at}+00"])
    utc = parse_zone("UTC")
    whole = parse_local("2026-11-28 23:00:10", utc, "--at")
    instant = parse_local("2026-11-28 23:00:10.000", utc, "--at")
    assert whole == instant  # the same time: what differs is what was asked
    assert _span(moment.locate(con, "T01", whole)) == ("S1", 2)
    with pytest.raises(OutsideRound) as caught:
        moment.locate(con, "T01", instant)
    e = caught.value
    assert e.where == moment.BETWEEN_ROUNDS
    assert (_span(e.before), _span(e.after)) == (("S1", 1), ("S1", 2))
    assert e.headline(utc).startswith(
        "2026-11-28 23:00:10.000 UTC at table T01 is outside any round")
    assert "round after: shoe S1 round 2, 23:00:10.400 UTC" in e.describe(utc)
    # The console's form shows it as asked, so sending the form again asks the same.
    assert form_time(instant, utc) == "2026-11-28 23:00:10.000"
    assert form_time(whole, utc) == "2026-11-28 23:00:10"
    again = parse_local(form_time(instant, utc), utc, "at")
    assert again == instant and OutsideRound("T01", again, e.where).exact
    # Written in ISO 8601 (the CLI's query to a server, the console's links, JSON) it keeps
    # its fraction, so the server is asked the same instant (an outside review: `.000` was
    # dropped there, and a server answered for the whole second).
    from cli.client import plain_param
    from projections.serve.encoding import encoder
    from projections.serve.templates.base import time_cell

    assert plain_param(instant) == "2026-11-28T23:00:10.000+00:00"
    assert OutsideRound("T01", parse_local(plain_param(instant), utc, "at"), e.where).exact
    assert plain_param(whole) == "2026-11-28T23:00:10+00:00"
    assert encoder(utc)(instant) == "2026-11-28T23:00:10.000+00:00"
    assert ">2026-11-28 23:00:10.000 UTC</time>" in time_cell(instant, utc, asked=True)
    assert ">2026-11-28 23:00:10 UTC</time>" in time_cell(whole, utc, asked=True)


def test_a_moment_two_rounds_bracket_names_the_other_round_too(tmp_path: Path) -> None:
    """Round 2's first wager placed before round 1 was racked (players bet while the dealer
    racks): a moment between the two is in both rounds. The dispute rebuilt one of them and
    said nothing of the other (an outside review, session 41); now it names the other round
    in play, in the rows, the CLI's answer and the incident report."""
    from table_builder import ORIGINAL

    from events.reddog.model import Box, Meaning
    from projections.serve.templates.incident import incident_page

    pit = opened(tmp_path)

    def deal_and_settle(seat: int, cents: int, cards: str, spread: int) -> None:
        """A spread's cards, words and settlement (13:47-20.31(d)), the rack left to later."""
        left, right, third = cards.split()
        pit.draw(left, Box.LEFT)
        pit.draw(right, Box.RIGHT)
        pit.say(Meaning.SPREAD, spread)
        pit.say(Meaning.RAISES_CLOSED)
        pit.draw(third, Box.MIDDLE)
        pit.say(Meaning.THIRD_CARD, int(third[:-1]))
        pit.settle_by_the_rules(seat, ORIGINAL, cents, cards)

    pit.begin(1)
    w1 = pit.wager(1, 1000)
    deal_and_settle(1, 1000, "5S 9H 7C", 3)
    pit.begin(2)
    w2 = pit.wager(2, 500)  # round 2's first wager, before round 1 is racked
    pit.begin(1)
    rack1 = pit.rack("5S 9H 7C")
    pit.begin(2)
    deal_and_settle(2, 500, "2D JC 4H", 8)
    pit.rack("2D JC 4H")
    pit.end()
    db = pit.project()
    both = _at(w2, 0.5)  # after round 2's first wager, before round 1's rack
    assert _at(w2) < both < _at(rack1)  # type: ignore[operator]
    with duckdb.connect(str(db), read_only=True) as con:
        d = dispute(con, "T01", at=both)  # type: ignore[arg-type]
        only = dispute(con, "T01", at=_at(w1, 0.5))  # type: ignore[arg-type]
    assert (d.round["shoe_id"], d.round["round_no"]) == ("S1", 2)  # the latest begun
    assert [(r["shoe_id"], r["round_no"], r["started_at"], r["ended_at"])
            for r in d.also_in_play] == [("S1", 1, _at(w1), _at(rack1))]
    assert only.round["round_no"] == 1 and only.also_in_play == []
    # With a seat, the seat's round is shown and the other round in play is named all the
    # same, whoever played it (a second read: with a seat none was named)
    with duckdb.connect(str(db), read_only=True) as con:
        seat1 = dispute(con, "T01", at=both, seat=1)  # type: ignore[arg-type]
        seat2 = dispute(con, "T01", at=both, seat=2)  # type: ignore[arg-type]
    assert (seat1.round["round_no"], [r["round_no"] for r in seat1.also_in_play]) == (1, [2])
    assert (seat2.round["round_no"], [r["round_no"] for r in seat2.also_in_play]) == (2, [1])
    # The CLI says it beside the round, and its JSON carries it.
    environ = {**{k: v for k, v in os.environ.items() if k != "PITLOG_TZ"}, "COLUMNS": "100"}
    shown = subprocess.run(
        [sys.executable, "-m", "cli.app", "dispute", "--table", "T01", "--db", str(db),
         "--at", both.isoformat()],  # type: ignore[attr-defined]
        capture_output=True, text=True, env=environ, check=True)
    assert (f"Also in play at that moment: shoe S1 round 1, {_at(w1):%H:%M:%S} UTC to "
            f"{_at(rack1):%H:%M:%S} UTC (--round S1:1)") in shown.stdout, shown.stdout
    as_json = subprocess.run(
        [sys.executable, "-m", "cli.app", "dispute", "--table", "T01", "--db", str(db),
         "--at", both.isoformat(), "--format", "json"],  # type: ignore[attr-defined]
        capture_output=True, text=True, env=environ, check=True)
    also = [r for r in json.loads(as_json.stdout) if r["section"] == "also in play"]
    assert [(r["shoe_id"], r["round_no"]) for r in also] == [("S1", 1)]
    page = incident_page(d, UTC, at=both)  # type: ignore[arg-type]
    assert 'id="also-in-play"' in page and 'data-round="S1:1"' in page
    assert 'id="also-in-play"' not in incident_page(only, UTC)
    assert 'data-round="S1:1"' in dispute_sections(d, UTC, set())  # the console's page
    assert 'id="also-in-play"' not in dispute_sections(only, UTC, set())


def _neighbours_by_hand(events: list[tuple[str | None, int, int | None, str, int, datetime]],
                        at: datetime, seat: int | None) -> dict[str, object]:
    """moment.neighbours' definition worked out in Python over (shoe, round, seat, type, seq,
    time) rows: the rounds (of the seat, when given) with their spans, then the round in play,
    the others in play, and the last begun before and the first begun after."""
    spans: dict[tuple[str | None, int], list[object]] = {}
    played: set[tuple[str | None, int]] = set()
    for shoe, round_no, s, kind, seq, when in events:
        key = (shoe, round_no)
        span = spans.setdefault(key, [when, when, seq, seq])
        span[:] = [min(span[0], when), max(span[1], when), min(span[2], seq), max(span[3], seq)]
        if kind == "WagerPlaced" and s == seat:
            played.add(key)
    rounds = [moment.RoundSpan(k[0], k[1], *v) for k, v in spans.items()  # type: ignore[arg-type]
              if seat is None or k in played]
    # A moment with a fraction is that instant; one without is its whole second
    until = at + (timedelta(microseconds=1) if at.microsecond else timedelta(seconds=1))
    in_play = sorted((r for r in rounds if r.started_at < until and r.ended_at >= at
                      and r.round_no != 0),
                     key=lambda r: (r.started_at <= at, r.started_at, r.first_seq), reverse=True)
    before = max((r for r in rounds if r.started_at <= at and r.ended_at < at),
                 key=lambda r: (r.started_at, r.first_seq), default=None)
    after = min((r for r in rounds if r.started_at > at),
                key=lambda r: (r.started_at, r.first_seq), default=None)
    return {"in": in_play[0] if in_play else None, "before": before, "after": after,
            "also": in_play[1:]}


def test_the_tables_and_the_seats_neighbours_from_one_scan_are_those_of_their_definition(
        ) -> None:
    """neighbours_of finds the table's neighbours and the seat's in one query (a seat's dispute
    read the table's history twice before, session 47): each half equals the definition worked
    out by hand, for moments at, inside, between and around rounds that overlap or begin at the
    same instant, rounds of no shoe, round 0, wagers with no seat, and every seat that played
    (seat 0 too), none, and one that never did."""
    import random

    rng = random.Random(47)
    con = duckdb.connect()
    con.execute("CREATE TABLE events (table_id VARCHAR, shoe_id VARCHAR, round_no INTEGER, "
                "seat INTEGER, event_type VARCHAR, seq BIGINT, occurred_at TIMESTAMPTZ)")
    rows: list[tuple[str | None, int, int | None, str, int, datetime]] = []
    seq, clock = 0, EVENING
    for n in range(40):
        shoe = None if n % 13 == 5 else f"S{n // 10 + 1}"
        round_no = 0 if n % 11 == 3 else n % 10 + 1
        # A round begun at the very instant the one before began (0 s): the two are told apart
        # by their first seq
        clock += timedelta(seconds=rng.choice([0, 1, 2, 30]),
                           microseconds=rng.choice([0, 400_000]))
        when = clock
        for _ in range(rng.randint(2, 6)):
            seq += 1
            seat = rng.randint(0, 4) if rng.random() < 0.6 else None
            # A seat's other events (a raise, a settlement) do not make it a seat that played
            kind = rng.choice(["WagerPlaced", "RaisePlaced", "WagerSettled"]) \
                if seat is not None or rng.random() < 0.1 else "CardDrawn"
            rows.append((shoe, round_no, seat, kind, seq, when))
            # A round's events a second or less apart, so that the next round may begin
            # before this one's last event (rounds overlap)
            when += timedelta(microseconds=rng.choice([0, 300_000, 1_000_000]))
        if n % 7 == 6:  # the same round number of the same shoe, dealt again later
            seq += 1
            rows.append((shoe, round_no, None, "CardDrawn", seq, when + timedelta(seconds=90)))
    con.executemany("INSERT INTO events VALUES ('T01', ?, ?, ?, ?, ?, ?)", rows)
    con.execute("INSERT INTO events VALUES ('T02', 'S1', 1, 1, 'WagerPlaced', 1, ?)", [EVENING])
    moments = sorted({t + d for *_, t in rows for d in (
        timedelta(0), timedelta(microseconds=1), timedelta(microseconds=-1),
        timedelta(seconds=1), timedelta(seconds=-1), timedelta(milliseconds=500))})
    compared = 0
    for at in moments[::5]:
        for seat in (None, 0, 1, 2, 3, 4, 7):
            of_table, of_seat = moment.neighbours_of(con, "T01", at, seat)
            assert of_table == _neighbours_by_hand(rows, at, None), (at, seat)
            if seat is None:
                assert of_seat == {"in": None, "before": None, "after": None, "also": []}
            else:
                assert of_seat == _neighbours_by_hand(rows, at, seat), (at, seat)
                assert moment.neighbours(con, "T01", at, seat) == of_seat
            compared += 1
    assert compared > 300
    # Seat 7 never played: nothing of its own anywhere; the table's rounds are found regardless.
    assert moment.neighbours_of(con, "T01", moments[-1], 7)[1]["before"] is None
    assert moment.neighbours_of(con, "T01", moments[-1], 7)[0]["before"] is not None

"""Device ingestion: good lines become events; each bad line is refused with its line number
and reason, and quarantined; big inputs stream in bounded memory (docs/ingest.md)."""

from __future__ import annotations

import base64
import io
import json
import multiprocessing as mp
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from repo_paths import EXAMPLES

from events.errors import ConcurrencyError, IngestError
from events.integrity.verify import verify_log
from events.log.embedded.log import EmbeddedLog
from events.recording.event_ids import EventIdIndex, index_path
from events.recording.ingest import (
    MAX_LINE_BYTES,
    BadLine,
    LineRejected,
    default_quarantine,
    ingest,
    parse_line,
)
from events.reddog import model
from events.wire import codec


def card_line(seq: int, *, table: str = "T09", actor: str = "SHOE-9",
              **over: Any) -> dict[str, Any]:
    line = {"type": "CardDrawn", "table": table, "shoe": f"{table}-S0001", "round": 1,
            "seq": seq, "at": "2026-11-28T22:00:01.250Z", "actor": actor, "rank": 12,
            "suit": "H", "face_up": True, "destination": "MIDDLE"}
    line.update(over)
    return line


def run(tmp_path: Path, text: str | bytes, **kw: Any) -> tuple[Any, list[BadLine], EmbeddedLog]:
    log = EmbeddedLog(tmp_path / "log", partitions=2)
    bad: list[BadLine] = []
    data = text.encode() if isinstance(text, str) else text
    report = ingest(io.BytesIO(data), log, source="test", quarantine=tmp_path / "q.jsonl",
                    on_reject=bad.append, **kw)
    return report, bad, log


def events_of(log: EmbeddedLog) -> list[model.Envelope]:
    return sorted((codec.decode(r.value) for b in log.read() for r in b),
                  key=lambda e: (e.table_id, e.seq))


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_quarantine_that_cannot_be_written_is_an_error_naming_it_before_any_line_is_recorded(
        tmp_path: Path) -> None:
    """A full disk under the quarantine (/dev/full: every write fails with ENOSPC): the good
    lines were recorded first and the refused ones lost, with `Error: No space left on
    device` naming no file. Now the batch stops before its good lines are recorded, with the
    quarantine file named, so the file can be sent again whole."""
    text = (EXAMPLES / "bad-devices.jsonl").read_text()
    log = EmbeddedLog(tmp_path / "log", partitions=2)
    with pytest.raises(IngestError, match=r"cannot write the quarantine file /dev/full "
                                          r"\(No space left on device\): this batch's lines "
                                          r"were not recorded"):
        ingest(io.BytesIO(text.encode()), log, source="bad", quarantine=Path("/dev/full"))
    assert sum(log.end_offsets().values()) == 0
    report, bad, log = run(tmp_path / "again", text)  # sent again with room: all of it
    assert report.recorded > 0 and len(bad) == report.rejected > 0
    assert len((tmp_path / "again" / "q.jsonl").read_text().splitlines()) == report.rejected


def test_an_id_index_made_by_a_run_that_appends_nothing_goes_unless_another_holds_it(
        tmp_path: Path) -> None:
    """An empty log without an id index and lines all refused: the index the run made was
    left beside the log. It goes now, but not while another ingest of the log has it open
    (that one would go on writing in a file no longer there). One made by reading a log's
    records stays (a second read, session 41: else every run read the whole log again)."""
    holding = EmbeddedLog(tmp_path / "holding", partitions=2)
    holding.append([(b"T01", b"a record no index has read")])
    refused = '{"nope": 1}\n'
    report = ingest(io.BytesIO(refused.encode()), holding, source="bad",
                    quarantine=tmp_path / "q.jsonl")
    assert (report.recorded, report.rejected) == (0, 1) and index_path(holding).exists()
    log = EmbeddedLog(tmp_path / "log", partitions=2)
    report = ingest(io.BytesIO(refused.encode()), log, source="bad",
                    quarantine=tmp_path / "q.jsonl")
    assert (report.recorded, report.rejected) == (0, 1)
    assert not index_path(log).exists()
    held: list[EventIdIndex] = []  # a second ingest's, opened while this one runs
    report = ingest(io.BytesIO(refused.encode()), log, source="bad",
                    quarantine=tmp_path / "q.jsonl",
                    on_reject=lambda _: held.append(EventIdIndex(log)))
    assert report.rejected == 1 and index_path(log).exists()
    held[0].close()
    index_path(log).unlink()
    # a run that records a line keeps the index it made, as before
    report = ingest(io.BytesIO(json.dumps(card_line(1)).encode()), log, source="good",
                    quarantine=tmp_path / "q.jsonl")
    assert report.recorded == 1 and index_path(log).exists()


def test_the_example_file_is_recorded_line_for_line(tmp_path: Path) -> None:
    text = (EXAMPLES / "devices.jsonl").read_text()
    report, bad, log = run(tmp_path, text)
    assert (report.lines, report.recorded, report.rejected, report.exit_code) == (21, 21, 0, 0)
    assert bad == [] and not (tmp_path / "q.jsonl").exists()
    events = events_of(log)
    lines = [json.loads(x) for x in text.splitlines()]
    assert [e.seq for e in events] == list(range(1, 22))  # the table's gapless seq, in file order
    assert [e.event_type for e in events] == [x["type"] for x in lines]
    assert [e.actor for e in events] == [x["actor"] for x in lines]
    drawn = [e for e in events if isinstance(e.event, model.CardDrawn)]
    cards = [e.event for e in drawn if isinstance(e.event, model.CardDrawn)]
    assert [(c.rank, c.suit, c.destination, c.shoe_position) for c in cards] == [
        (4, model.Suit.HEARTS, model.Box.LEFT, 2), (10, model.Suit.SPADES, model.Box.RIGHT, 3),
        (8, model.Suit.DIAMONDS, model.Box.MIDDLE, 4)]
    assert drawn[2].occurred_at == datetime(2026, 11, 28, 21, 3, 3, 120000, tzinfo=UTC)
    assert drawn[2].round_no == 1 and drawn[2].shoe_id == "T07-S0003"
    assert verify_log(log).ok


def test_the_bad_example_refuses_each_bad_line_and_records_the_rest(tmp_path: Path) -> None:
    raw_lines = (EXAMPLES / "bad-devices.jsonl").read_text().splitlines()
    report, bad, log = run(tmp_path, "\n".join(raw_lines) + "\n")
    assert [(b.line, b.reason) for b in bad] == [
        (2, "malformed JSON (Expecting ',' delimiter at column 125)"),
        (3, 'unknown event type "CardTeleported"'),
        (4, "invalid card: rank 15 is not 2..14"),
        (5, 'invalid card: suit "X" is not one of S, H, D, C'),
        (6, "missing field 'suit' for CardDrawn"),
        (8, "sequence out of order: SHOE-9 seq 6 for table T09 after seq 7"),
    ]
    assert (report.recorded, report.rejected, report.exit_code) == (3, 6, 1)
    assert report.device_seq_gaps == 1  # SHOE-9 jumped from 1 to 7 (its lines 2-6 refused)
    assert [(e.seq, e.event.rank) for e in events_of(log)] == [(1, 9), (2, 12), (3, 5)]  # type: ignore[union-attr]
    quarantined = [json.loads(x) for x in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert [(q["source"], q["line"], q["raw"], q["reason"]) for q in quarantined] == [
        ("test", b.line, raw_lines[b.line - 1], b.reason) for b in bad]


@pytest.mark.parametrize(("line", "reason"), [
    ("not json", "malformed JSON (Expecting value at column 1)"),
    ("[1, 2]", "a line must be a JSON object, not list"),
    (json.dumps({k: v for k, v in card_line(1).items() if k != "type"}), "missing field 'type'"),
    (json.dumps(card_line(1, type="CardDrawnX")), 'unknown event type "CardDrawnX"'),
    (json.dumps(card_line(1, type=7)), "unknown event type 7"),
    (json.dumps({k: v for k, v in card_line(1).items() if k != "at"}),
     "missing field 'at' for CardDrawn"),
    (json.dumps({k: v for k, v in card_line(1).items() if k != "face_up"}),
     "missing field 'face_up' for CardDrawn"),
    (json.dumps(card_line(1, colour="red")), "unknown field 'colour' for CardDrawn"),
    (json.dumps(card_line(1, rank=15)), "invalid card: rank 15 is not 2..14"),
    (json.dumps(card_line(1, rank=1)), "invalid card: rank 1 is not 2..14"),
    (json.dumps(card_line(1, rank="12")), "field 'rank' must be an integer, not \"12\""),
    (json.dumps(card_line(1, rank=12.0)), "field 'rank' must be an integer, not 12.0"),
    (json.dumps(card_line(1, suit="X")), 'invalid card: suit "X" is not one of S, H, D, C'),
    (json.dumps(card_line(1, face_up=1)), "field 'face_up' must be true or false, not 1"),
    (json.dumps(card_line(1, destination="TOP")),
     'destination "TOP" is not one of LEFT, RIGHT, MIDDLE, DISCARD_RACK'),
    (json.dumps(card_line(1, shoe_position=2**31)),
     "field 'shoe_position' is 2147483648, outside the int range"),
    (json.dumps(card_line(1, suit=None)), "field 'suit' may not be null"),
    (json.dumps(card_line(0)), "seq 0 is below 1"),
    (json.dumps(card_line(True)), "field 'seq' must be an integer, not true"),
    (json.dumps(card_line(1, at="yesterday")), 'field \'at\' is not a time: "yesterday"'),
    (json.dumps(card_line(1, at="2026-11-28T22:00:01")),
     'field \'at\' has no time zone: "2026-11-28T22:00:01"'),
    # A zone's shift past datetime's range (year 9999 or 1) aborted the whole ingest with an
    # internal OverflowError; so did a number of over 4,300 digits (Python's cap, a ValueError).
    (json.dumps(card_line(1, at="9999-12-31T23:59:59-01:00")),
     'field \'at\' is "9999-12-31T23:59:59-01:00", outside 2000-01-01 to 2100-01-01 (UTC)'),
    (json.dumps(card_line(1, at="0001-01-01T00:00:00+01:00")),
     'field \'at\' is "0001-01-01T00:00:00+01:00", outside 2000-01-01 to 2100-01-01 (UTC)'),
    # A lone surrogate in a field other than the key ones was "not encodable (... seq 7: 'utf-8'
    # codec can't encode ...)", naming no field and the table's seq, not the line's.
    (json.dumps({**card_line(1), "shoe": "S\ud800"}),
     "field 'shoe' is not Unicode text (a lone surrogate, \\ud800)"),
    (json.dumps({"type": "DealerTappedIn", "table": "T1", "seq": 1,
                 "at": "2026-11-28T22:00:01Z", "actor": "D-1", "dealer_id": "D\ud800"}),
     "field 'dealer_id' is not Unicode text (a lone surrogate, \\ud800)"),
    (json.dumps(card_line(1))[:-1] + ', "junk": ' + "9" * 4301 + "}",
     "a JSON number too long to read (Exceeds the limit (4300 digits) for integer string "
     "conversion: value has 4301 digits)"),
    (json.dumps(card_line(1, table="")), 'table id "" must be 1 to 64 characters'),
    (json.dumps({**card_line(1), "actor": 7}), "field 'actor' must be a string, not 7"),
    (json.dumps(card_line(1, actor="  ")), "field 'actor' is empty"),  # blank as for dealer_id
    (json.dumps({**card_line(1), "table": " "}), 'table id " " is blank'),
    (json.dumps({**card_line(1), "shoe": ""}), "field 'shoe' is empty"),
    (json.dumps({**card_line(1), "shoe": "  "}), "field 'shoe' is empty"),
    (json.dumps({**card_line(1), "id": "  "}), "field 'id' is '  ', blank"),
    (json.dumps({**card_line(1), "id": ""}), "field 'id' is '', blank"),
    (json.dumps({"type": "CardsRacked", "table": "T1", "seq": 1, "at": "2026-11-28T22:00:01Z",
                 "actor": "D-1", "cards": [{"rank": 2, "suit": "Z"}]}),
     'invalid card: suit "Z" is not one of S, H, D, C'),
    (json.dumps({"type": "CardsRacked", "table": "T1", "seq": 1, "at": "2026-11-28T22:00:01Z",
                 "actor": "D-1", "cards": ["QH"]}), 'invalid card in \'cards\': "QH"'),
    # A key given twice was read as its last value ("seq": 18, "seq": 1 recorded seq 1): JSON
    # leaves it undefined. Refused at the top, in a card of a rack, and on json's path (a run
    # of 19 digits, which orjson does not read).
    (json.dumps(card_line(1)).replace('"seq": 1', '"seq": 18, "seq": 1'),
     "key 'seq' given twice in one object"),
    ('{"type": "CardsRacked", "table": "T1", "seq": 1, "at": "2026-11-28T22:00:01Z", '
     '"actor": "D-1", "cards": [{"rank": 2, "suit": "S", "rank": 3}]}',
     "key 'rank' given twice in one object"),
    (json.dumps(card_line(1, rank=12)).replace('"rank": 12', '"rank": 12, "rank": 1' + "0" * 19),
     "key 'rank' given twice in one object"),
    # Whitespace between a key and its colon (JSON allows it) hid the second key from the
    # count of `":` marks, and a value holding `":` made up for one: both recorded seq 1.
    (json.dumps(card_line(1)).replace('"seq": 1', '"seq": 18, "seq" : 1'),
     "key 'seq' given twice in one object"),
    (json.dumps(card_line(1)).replace('"seq": 1', '"seq": 18, "seq"\t\n:1'),
     "key 'seq' given twice in one object"),
    (json.dumps(card_line(1, actor='SHOE-9":x')).replace('"seq": 1', '"seq" : 18, "seq" : 1'),
     "key 'seq' given twice in one object"),
    ('{"type": "CardsRacked", "table": "T1", "seq": 1, "at": "2026-11-28T22:00:01Z", '
     '"actor": "D-1\\":", "cards": [{"rank" : 2, "suit": "S", "rank" : 3}]}',
     "key 'rank' given twice in one object"),
])
def test_a_structurally_bad_line_is_refused_with_its_reason(line: str, reason: str) -> None:
    with pytest.raises(LineRejected) as exc:
        parse_line(line)
    assert exc.value.reason == reason
    assert exc.value.hint  # and always says what to do


@pytest.mark.parametrize("line", [
    json.dumps(card_line(1)).replace('"seq": 1', '"seq" : 1'),  # a space before the colon
    json.dumps(card_line(1, actor='SHOE-9":x')),  # a value holding the marks of a key
    json.dumps({"type": "CardsRacked", "table": "T1", "seq": 1, "at": "2026-11-28T22:00:01Z",
                "actor": "D-1", "cards": [{"rank": 2, "suit": "S"}, {"rank": 3, "suit": "S"}]}),
])
def test_a_line_with_each_key_once_is_read_whatever_its_text(line: str) -> None:
    """The repeated-key check counts `"key":` marks against the keys read; text that breaks
    that count without repeating a key is read again by json and accepted."""
    assert parse_line(line).seq == 1


def wager_line(seq: int, **over: Any) -> dict[str, Any]:
    line = {"type": "WagerPlaced", "table": "T09", "shoe": "T09-S0001", "round": 1, "seq": seq,
            "at": "2026-11-28T22:00:01.250Z", "actor": "TERM-9", "seat": 3, "area": 1,
            "player_id": "P-1", "amount_cents": 2500}
    line.update(over)
    return line


def test_a_negative_round_a_seat_below_1_and_an_empty_player_id_are_refused_naming_file_line_field(
        tmp_path: Path) -> None:
    """Round -1, seat -3 and player_id "" were recorded as events, and then seat 0: a wager no
    `pitlog dispute --seat` (from 1) could ask for. Seats and areas are numbered from 1
    (rules.FIRST_SEAT), a round from 0 up; each such line is refused with the file, line, field
    and what to do, and never recorded."""
    lines = [wager_line(1), wager_line(2, round=-1), wager_line(3, seat=-3),
             wager_line(4, player_id=""), wager_line(5, area=-1), wager_line(6, player_id="  "),
             {"type": "BurnDisclosed", "table": "T09", "shoe": "T09-S0001", "round": 1,
              "seq": 7, "at": "2026-11-28T22:00:02Z", "actor": "TERM-9", "rank": 5, "suit": "S",
              "requested_by_seat": 0},
             {"type": "DealerTappedIn", "table": "T09", "seq": 8, "at": "2026-11-28T22:00:02Z",
              "actor": "TERM-9", "dealer_id": ""},
             wager_line(9, seat=0), wager_line(10, area=0), wager_line(11, seat=1, area=1,
                                                                       round=0)]
    report, bad, log = run(tmp_path, "".join(json.dumps(x) + "\n" for x in lines))
    seat = "send the seat's number as the table's layout shows it"
    area = "send the betting area's number as the table's layout shows it"
    assert [b.message for b in bad] == [
        "test line 2: field 'round' is -1, below 0 (a round number is never negative); send the "
        "round's number within its shoe, or null for a shoe- or table-level event",
        f"test line 3: field 'seat' is -3, below 1 (seats are numbered from 1); {seat}",
        "test line 4: field 'player_id' is empty; send the player's id",
        f"test line 5: field 'area' is -1, below 1 (betting areas are numbered from 1); {area}",
        "test line 6: field 'player_id' is empty; send the player's id",
        f"test line 7: field 'requested_by_seat' is 0, below 1 (seats are numbered from 1); "
        f"{seat}",
        "test line 8: field 'dealer_id' is empty; send the dealer's id",
        f"test line 9: field 'seat' is 0, below 1 (seats are numbered from 1); {seat}",
        f"test line 10: field 'area' is 0, below 1 (betting areas are numbered from 1); {area}",
    ]
    assert (report.recorded, report.rejected) == (2, 9)
    assert [(e.round_no, e.event.seat, e.event.area) for e in events_of(log)] == [  # type: ignore[union-attr]
        (1, 3, 1), (0, 1, 1)]


_CUT = {"type": "CardsCut", "table": "T09", "shoe": "T09-S0001", "seq": 1,
        "at": "2026-11-28T22:00:01Z", "actor": "TERM-9"}
_COUNT_OF_ONE_SHOE = "at most 416: 8 decks of 52"


@pytest.mark.parametrize(("line", "reason"), [
    (card_line(1, shoe_position=0),
     "field 'shoe_position' is 0, below 1 (the first card dealt after the cut is 1)"),
    (card_line(1, shoe_position=-4),
     "field 'shoe_position' is -4, below 1 (the first card dealt after the cut is 1)"),
    ({**_CUT, "position": -1},
     f"field 'position' is -1, below 0 (a cut is made among a shoe's cards, "
     f"{_COUNT_OF_ONE_SHOE})"),
    ({**_CUT, "position": 417},
     f"field 'position' is 417, above 416 (a cut is made among a shoe's cards, "
     f"{_COUNT_OF_ONE_SHOE})"),
    ({**_CUT, "type": "CuttingCardPlaced", "cards_behind": -8},
     f"field 'cards_behind' is -8, below 0 (a count of a shoe's cards, {_COUNT_OF_ONE_SHOE})"),
    ({**_CUT, "type": "CuttingCardPlaced", "cards_behind": 417},
     f"field 'cards_behind' is 417, above 416 (a count of a shoe's cards, "
     f"{_COUNT_OF_ONE_SHOE})"),
    ({**_CUT, "type": "ShoeClosed", "cards_remaining": -1},
     f"field 'cards_remaining' is -1, below 0 (a count of a shoe's cards, "
     f"{_COUNT_OF_ONE_SHOE})"),
    ({**_CUT, "type": "ShoeClosed", "cards_remaining": 10_000},
     f"field 'cards_remaining' is 10000, above 416 (a count of a shoe's cards, "
     f"{_COUNT_OF_ONE_SHOE})"),
])
def test_a_card_position_or_count_no_shoe_can_hold_is_refused(line: dict[str, Any],
                                                               reason: str) -> None:
    """A negative shoe_position, cut position or count of cards was recorded. The bounds are
    the schema's (shoe_position: "1 = first card dealt after the cut") and the largest shoe
    pitlog accepts (8 decks of 52: CardsLoaded refuses more)."""
    with pytest.raises(LineRejected) as exc:
        parse_line(json.dumps(line))
    assert exc.value.reason == reason
    assert exc.value.hint.startswith(("send the position the card-reading shoe counted",
                                      "check the device's value (0..416)"))


@pytest.mark.parametrize(("line", "field", "value"), [
    (card_line(1, shoe_position=1), "shoe_position", 1),
    # An automatic reshuffling shoe (13:69F-6.9) returns cards as it deals: no ceiling.
    (card_line(1, shoe_position=5_000), "shoe_position", 5_000),
    (card_line(1, shoe_position=None), "shoe_position", None),
    # No cut at all, a cutting card with nothing behind it, or a shoe closed empty or full:
    # a dealer's irregularity at worst, recorded for the read side to judge.
    ({**_CUT, "position": 0}, "position", 0),
    ({**_CUT, "position": 416}, "position", 416),
    ({**_CUT, "type": "CuttingCardPlaced", "cards_behind": 0}, "cards_behind", 0),
    ({**_CUT, "type": "ShoeClosed", "cards_remaining": 0}, "cards_remaining", 0),
    ({**_CUT, "type": "ShoeClosed", "cards_remaining": 416}, "cards_remaining", 416),
])
def test_a_card_position_or_count_at_the_edge_of_a_shoe_is_recorded(
        line: dict[str, Any], field: str, value: int | None) -> None:
    assert getattr(parse_line(json.dumps(line)).event, field) == value


def test_a_line_that_breaks_a_game_rule_is_still_recorded(tmp_path: Path) -> None:
    # docs/architecture.md, principle 1: a raise after "Raises closed" and a call bet are
    # structurally fine;
    # the read side flags them (LATE_RAISE, CALL_BET).
    base = {"table": "T01", "at": "2026-11-28T22:00:01Z", "actor": "TERM-1", "round": 4}
    lines = [
        {**base, "seq": 1, "type": "Announced", "phrase": "Raises closed",
         "meaning": "RAISES_CLOSED"},
        {**base, "seq": 2, "type": "RaisePlaced", "seat": 2, "area": 1, "amount_cents": 500},
        {**base, "seq": 3, "type": "WagerPlaced", "seat": 4, "area": 1, "player_id": "P-1",
         "amount_cents": 10_000, "instrument": "CALL_BET"},
    ]
    report, bad, log = run(tmp_path, "".join(json.dumps(x) + "\n" for x in lines))
    assert (report.recorded, bad) == (3, [])
    assert [e.event_type for e in events_of(log)] == ["Announced", "RaisePlaced", "WagerPlaced"]


def test_each_device_numbers_its_own_lines_and_a_repeated_line_is_refused(tmp_path: Path) -> None:
    lines = [card_line(1, actor="SHOE-9"), card_line(1, actor="TERM-9", type="Announced",
                                                     phrase="Eight", meaning="THIRD_CARD",
                                                     value=8, rank=None),
             card_line(2, actor="SHOE-9"), card_line(2, actor="SHOE-9")]
    del lines[1]["rank"], lines[1]["suit"], lines[1]["face_up"], lines[1]["destination"]
    report, bad, log = run(tmp_path, "".join(json.dumps(x) + "\n" for x in lines))
    assert [(b.line, b.reason) for b in bad] == [
        (4, "sequence out of order: SHOE-9 seq 2 for table T09 after seq 2")]
    assert [e.seq for e in events_of(log)] == [1, 2, 3]


def test_an_overlong_a_non_utf8_and_an_empty_line_are_quarantined_exactly(tmp_path: Path) -> None:
    long_line = json.dumps(card_line(1, shoe="S" * (MAX_LINE_BYTES + 10)))
    latin1 = json.dumps(card_line(2, actor="SHOE-\xe9"), ensure_ascii=False).encode("latin-1")
    data = (long_line.encode() + b"\n" + latin1 + b"\n\n" + json.dumps(card_line(3)).encode()
            + b"\n")
    report, bad, log = run(tmp_path, data)
    assert [(b.line, b.reason) for b in bad] == [
        (1, f"line longer than {MAX_LINE_BYTES} bytes (first ones kept)"),
        (2, "the line is not UTF-8 text"), (3, "empty line")]
    assert [e.seq for e in events_of(log)] == [1]  # line 4 recorded
    q = [json.loads(x) for x in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert len(q[0]["raw"]) == MAX_LINE_BYTES + 1
    assert base64.b64decode(q[1]["raw_base64"]) == latin1


def test_a_line_of_only_a_carriage_return_is_quarantined_with_it(tmp_path: Path) -> None:
    """A line's raw text is the line as sent without the LF that ends it, a CR before the LF
    included (docs/ingest.md, "The quarantine file"): until session 42 every trailing CR went,
    so a line of only a CR was quarantined with raw "" (an outside review)."""
    good = json.dumps(card_line(1)).encode() + b"\r\n"  # a CRLF line: parsed, recorded
    data = good + b"\r\n" + b"a\r\r\n" + b"\r"  # the last one ends the file, no LF
    report, bad, log = run(tmp_path, data)
    assert [(b.line, b.reason, b.raw) for b in bad] == [
        (2, "empty line", b"\r"),
        (3, "malformed JSON (Expecting value at column 1)", b"a\r\r"),
        (4, "empty line", b"\r")]
    assert [e.seq for e in events_of(log)] == [1]
    q = [json.loads(x) for x in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert [(e["line"], e["raw"]) for e in q] == [(2, "\r"), (3, "a\r\r"), (4, "\r")]
    assert all("raw_base64" not in e for e in q)  # UTF-8: raw alone is the exact text
    assert (report.lines, report.recorded, report.rejected) == (4, 1, 3)


@pytest.mark.parametrize(("encoding", "reason"), [
    ("utf-16", "the line is not UTF-8 text"), ("utf-32", "the line is not UTF-8 text"),
    # Without a byte order mark the bytes are UTF-8, every other one NUL: no JSON.
    ("utf-16-le", "malformed JSON (Expecting property name enclosed in double quotes at "
                  "column 2)"),
    ("utf-32-le", "malformed JSON (Expecting property name enclosed in double quotes at "
                  "column 2)")])
def test_a_utf16_or_utf32_line_is_refused(tmp_path: Path, encoding: str, reason: str) -> None:
    """docs/ingest.md: one JSON object per line, UTF-8. json.loads guesses UTF-16 and UTF-32
    from the bytes, so such a line (with or without its byte order mark) was recorded."""
    other = json.dumps(card_line(1)).encode(encoding)
    assert b"\n" not in other  # one line still
    bom_utf8 = b"\xef\xbb\xbf" + json.dumps(card_line(2)).encode()
    report, bad, log = run(tmp_path, other + b"\n" + bom_utf8 + b"\n")
    assert [(b.line, b.reason) for b in bad] == [(1, reason)]
    assert [e.seq for e in events_of(log)] == [1]  # the UTF-8 line with a byte order mark


@pytest.mark.parametrize("field", ["table", "actor", "id"])
def test_a_lone_surrogate_in_a_key_field_is_refused_not_an_internal_error(
        tmp_path: Path, field: str) -> None:
    """json reads "\\ud800" as a lone surrogate, which is no UTF-8: the line's table, actor or
    id then could not be hashed to an event id nor looked up in the id index, and ingest
    stopped with an internal error (UnicodeEncodeError) at that line, the lines after it unread."""
    bad_line = json.dumps(card_line(1, **{field: "T\ud800"})).encode()  # ASCII: \ud800 escaped
    report, bad, log = run(tmp_path, bad_line + b"\n" + json.dumps(card_line(2)).encode() + b"\n")
    assert [(b.line, b.reason) for b in bad] == [
        (1, f"field '{field}' is not Unicode text (a lone surrogate, \\ud800)")]
    assert [e.seq for e in events_of(log)] == [1]  # line 2 recorded
    assert report.rejected == 1 and report.recorded == 1


def test_docs_list_every_event_type_with_exactly_its_fields() -> None:
    import re

    from events.recording.device_line import payload_fields

    doc = (EXAMPLES.parent / "docs" / "ingest.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| (.*) \|$", doc, flags=re.M))
    for name, specs in payload_fields().items():
        listed = re.findall(r"`(\w+)(\??)`", rows[name])
        assert listed == [(s.name, "" if s.required else "?") for s in specs], name


def test_the_default_quarantine_file_sits_next_to_the_log() -> None:
    assert default_quarantine("file:///srv/pitlog-data/log") == Path(
        "/srv/pitlog-data/log-quarantine.jsonl")
    assert default_quarantine("kafka://10.0.0.5:9092/pitlog.reddog.events?partitions=8") == \
        Path("pitlog-data/kafka-pitlog.reddog.events-quarantine.jsonl")


def _ingest_worker(folder: str, actor: str, n: int, start: Any, out: Any) -> None:
    lines = "".join(json.dumps(card_line(i, table="T07", actor=actor)) + "\n"
                    for i in range(1, n + 1))
    log = EmbeddedLog(Path(folder))
    start.wait()
    try:
        report = ingest(io.BytesIO(lines.encode()), log, source=actor,
                        quarantine=Path(folder).parent / f"{actor}.q", batch_lines=25)
    except Exception as exc:  # noqa: BLE001 - reported to the test, which then fails
        out.put((actor, repr(exc), -1))
        return
    out.put((actor, report.recorded, report.rejected))


def test_two_concurrent_ingests_of_one_table_both_land_gapless(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    EmbeddedLog(folder, partitions=1)
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_ingest_worker, args=(str(folder), a, 300, start, out))
             for a in ("SHOE-A", "SHOE-B")]
    for p in procs:
        p.start()
    results = sorted(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert results == [("SHOE-A", 300, 0), ("SHOE-B", 300, 0)]
    log = EmbeddedLog(folder)
    events = events_of(log)
    assert [e.seq for e in events] == list(range(1, 601))
    assert verify_log(log).ok


def _same_file_worker(folder: str, name: str, batch: int, n: int, start: Any, out: Any) -> None:
    """One of two ingests of one file (three tables, one device each) into one log."""
    lines = "".join(json.dumps(card_line(i, table=f"T{i % 3}", actor=f"SHOE-{i % 3}")) + "\n"
                    for i in range(1, n + 1))
    log = EmbeddedLog(Path(folder))
    start.wait()
    try:
        report = ingest(io.BytesIO(lines.encode()), log, source=name,
                        quarantine=Path(folder).parent / f"{name}.q", batch_lines=batch)
    except Exception as exc:  # noqa: BLE001 - reported to the test, which then fails
        out.put((name, repr(exc), -1, -1))
        return
    out.put((name, report.recorded, report.already_recorded, report.rejected))


def test_two_ingests_of_one_file_at_once_record_each_line_once(tmp_path: Path) -> None:
    """An operator's feed sent twice at once (a device reconnecting while its first send
    runs): each line recorded once. After a conflict with the other writer, the lines were
    recorded again without looking whether it had just recorded them: about 40% of a 3,000-line
    file was recorded twice (an outside review, session 41). Batches of 50 and 70 lines keep
    the two runs out of step, as the review's were."""
    folder = tmp_path / "log"
    EmbeddedLog(folder, partitions=2)
    n = 3000
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_same_file_worker, args=(str(folder), name, batch, n, start, out))
             for name, batch in (("first", 50), ("second", 70))]
    for p in procs:
        p.start()
    results = sorted(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert [r[3] for r in results] == [0, 0], results  # nothing refused
    assert sum(r[1] for r in results) == n, results  # each line recorded by one of them
    assert all(r[1] + r[2] == n for r in results), results  # the rest found recorded
    events = events_of(EmbeddedLog(folder))
    assert len(events) == n == len({(e.table_id, e.event_id) for e in events})
    for t in range(3):  # each table's seqs gapless, in the order recorded
        assert [e.seq for e in events if e.table_id == f"T{t}"] == list(range(1, n // 3 + 1))
    assert verify_log(EmbeddedLog(folder)).ok


class _AnotherIngestFirst(EmbeddedLog):
    """A real embedded log on which another whole ingest of `text` runs (through a log object
    of its own) just before this object's first append: the other writer records the lines
    after this run looked them up, before it appends them."""

    def __init__(self, folder: Path, text: bytes) -> None:
        super().__init__(folder)
        self.text, self.other = text, None

    def append_expecting(self, records: Any, continues: Any) -> Any:
        if self.other is None:
            self.other = ingest(io.BytesIO(self.text), EmbeddedLog(self.folder), source="other",
                                quarantine=self.folder.parent / "other.q")
        return super().append_expecting(records, continues)


def test_lines_another_ingest_recorded_after_the_look_up_are_not_recorded_again(
        tmp_path: Path) -> None:
    """The same race as above, every time: the other ingest records the whole file between
    this run's look-up of the ids and its append. The append conflicts, the ids are looked up
    again in the log, and every line is found recorded: none recorded twice."""
    folder = tmp_path / "log"
    EmbeddedLog(folder, partitions=2)
    text = "".join(json.dumps(card_line(i, table=f"T{i % 2}", actor=f"SHOE-{i % 2}")) + "\n"
                   for i in range(1, 41)).encode()
    log = _AnotherIngestFirst(folder, text)
    report = ingest(io.BytesIO(text), log, source="this", quarantine=tmp_path / "this.q")
    assert log.other is not None and (log.other.recorded, log.other.already_recorded) == (40, 0)
    assert (report.recorded, report.already_recorded, report.rejected) == (0, 40, 0)
    events = events_of(EmbeddedLog(folder))
    assert len(events) == 40 == len({(e.table_id, e.event_id) for e in events})


_RSS_SCRIPT = """
import io, resource, sys
from pathlib import Path
from events.log.embedded.log import EmbeddedLog
from events.recording.ingest import ingest

n, folder = int(sys.argv[1]), Path(sys.argv[2])

class Lines(io.RawIOBase):
    '''n device lines, generated while read: the input never exists whole, anywhere.'''
    def __init__(self):
        self.i, self.buf = 0, b""
    def readable(self):
        return True
    def readinto(self, b):
        while len(self.buf) < len(b) and self.i < n:
            self.i += 1
            t = f"T{self.i % 8:02d}"
            self.buf += (('{"type": "CardDrawn", "table": "%s", "shoe": "%s-S0001", '
                          '"round": %d, "seq": %d, "at": "2026-11-28T22:00:01Z", '
                          '"actor": "SHOE", "rank": %d, "suit": "H", "face_up": true, '
                          '"destination": "LEFT"}\\n') % (t, t, self.i, self.i, 2 + self.i % 13)
                         ).encode()
        k = min(len(b), len(self.buf))
        b[:k], self.buf = self.buf[:k], self.buf[k:]
        return k

report = ingest(io.BufferedReader(Lines()), EmbeddedLog(folder / "log"), source="gen",
                quarantine=folder / "q.jsonl")
assert report.recorded == n and report.rejected == 0, report
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, report.seconds)
"""


class PartlyCommittingLog(EmbeddedLog):
    """The embedded log, except that its first conditional append commits only table T01's
    events and then reports a conflict on the rest, as Kafka with fencing can (one transaction
    per table: events/log/kafka/fencing.py)."""

    conflicts = 1

    def append_expecting(self, items: Any, expected: Any) -> list[tuple[int, int]]:
        if self.conflicts:
            self.conflicts -= 1
            super().append_expecting([i for i in items if i[0] == b"T01"], None)
            raise ConcurrencyError("T02: another writer appended first", (b"T01",))
        return super().append_expecting(items, expected)


def test_a_retry_after_a_partial_commit_records_only_the_tables_not_recorded(
        tmp_path: Path) -> None:
    log = PartlyCommittingLog(tmp_path / "log", partitions=2)
    lines = [card_line(1, table="T01"), card_line(1, table="T02"), card_line(2, table="T01"),
             card_line(2, table="T02")]
    report = ingest(io.BytesIO("\n".join(json.dumps(x) for x in lines).encode()), log,
                    source="test", quarantine=tmp_path / "q.jsonl")
    assert (report.recorded, report.rejected, log.conflicts) == (4, 0, 0)
    # Each line once: T01's two events were committed by the first try and not recorded again.
    assert [(e.table_id, e.seq) for e in events_of(log)] == [
        ("T01", 1), ("T01", 2), ("T02", 1), ("T02", 2)]


@pytest.mark.slow
def test_a_200k_line_input_streams_in_bounded_memory(tmp_path: Path) -> None:
    def peak_kib(n: int) -> int:
        folder = tmp_path / str(n)
        folder.mkdir()
        out = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, str(n), str(folder)],
                             check=True, capture_output=True, text=True).stdout.split()
        print(f"{n} lines: peak RSS {int(out[0]) // 1024} MiB, {n / float(out[1]):.0f} lines/s")
        return int(out[0])

    small, large = peak_kib(10_000), peak_kib(200_000)
    # Twenty times the lines; the peak may not grow with them (a few MiB of noise allowed).
    assert large < small + 8 * 1024, (small, large)


@pytest.mark.parametrize("batch_lines", [1, 100])
def test_a_line_refused_when_recorded_leaves_its_seq_free_for_the_corrected_line(
        tmp_path: Path, batch_lines: int) -> None:
    """A wager of -$5 (seq 2) passes parsing and the order check and is refused when recorded
    (an amount below its bound); the device sends it again corrected under the same seq 2.
    Refused, the line used no seq: the corrected one is recorded (it was refused as "sequence
    out of order ... after seq 2"), and the next line, seq 3, follows it."""
    def wager(seq: int, cents: int) -> dict[str, Any]:
        return {"type": "WagerPlaced", "table": "T09", "shoe": "T09-S0001", "round": 1,
                "seq": seq, "at": "2026-11-28T22:00:01.250Z", "actor": "TERM-9", "seat": seq,
                "area": seq, "player_id": f"P{seq}", "amount_cents": cents,
                "instrument": "CHIPS"}
    lines = [wager(1, 500), wager(2, -500), wager(2, 500), wager(3, 500)]
    report, bad, log = run(tmp_path, "".join(json.dumps(x) + "\n" for x in lines),
                           batch_lines=batch_lines)
    assert [b.line for b in bad] == [2] and "amount_cents" in bad[0].reason
    assert (report.recorded, report.rejected) == (3, 1)
    assert [(e.seq, e.event.seat, e.event.amount_cents) for e in events_of(log)] == [  # type: ignore[union-attr]
        (1, 1, 500), (2, 2, 500), (3, 3, 500)]

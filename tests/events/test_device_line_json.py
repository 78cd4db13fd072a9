"""parse_line reads a line with orjson where orjson reads it, else with json, and takes each
field's usual value inline (issue 19: ingest twice as fast); either way the line gets json's
value, and a bad line json's refusal and the full per-field check's, word for word. Compared
here with json and every field through `_value`, on valid lines and lines broken many ways."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events.recording import device_line
from events.recording.device_line import LineRejected, parse_line
from events.recording.event_ids import derived_event_id

_GOOD: dict[str, Any] = {
    "type": "CardDrawn", "table": "T07", "shoe": "T07-S0003", "round": 1, "seq": 6,
    "at": "2026-11-28T21:03:03.120Z", "actor": "SHOE-7", "rank": 8, "suit": "D",
    "face_up": True, "destination": "MIDDLE", "shoe_position": 4}

_ENVELOPE = {k: _GOOD[k] for k in ("table", "shoe", "round", "seq", "at", "actor")}
_GOODS = [_GOOD,
          {**_ENVELOPE, "type": "TableOpened", "profile": "nj-casino", "pays_spread_1": 5,
           "min_wager_cents": 500, "multiple_areas_permitted": True},
          {**_ENVELOPE, "type": "ShuffleStarted", "method": "HAND", "device_id": None},
          {**_ENVELOPE, "type": "CardsRacked", "cards": [{"rank": 12, "suit": "H"}]}]

_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True)
    | st.integers(min_value=-(2**70), max_value=2**70) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=3),
    max_leaves=6)
# Text json and orjson may read differently: huge and negative numbers, exponents, escapes
# (lone surrogates), raw control characters, a BOM, NaN, duplicate keys, trailing bytes.
_SPLICES = st.sampled_from([
    "18446744073709551616", "-9223372036854775809", "9223372036854775807", "1e999", "1.0",
    "-0", '"\\ud800"', '"\\udc00\\ud800"', '"a\x01b"', "NaN", "Infinity", '"\\u0000"',
    '"rank": 9, "rank"', " ", "\ufeff", "\x00", "}", ",", '"é"', "true", "null", "[]"])


def _every_field_checked_in_full(event_type: str, specs: tuple[Any, ...]) -> Any:
    """_plan with no usual values: every field goes through _value, the reference."""
    return tuple((s.name, None, 0, -1, None, s) for s in specs)


def _outcome(line: bytes, json_only: bool) -> Any:
    try:
        if json_only:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(device_line, "_plan", _every_field_checked_in_full)
                parsed = device_line._checked(device_line._stdlib_loads(line),
                                              derived_event_id)
        else:
            parsed = parse_line(line, derived_event_id)
    except LineRejected as exc:
        return ("refused", exc.reason, exc.hint)
    return ("parsed", parsed)


@settings(max_examples=400, deadline=None)
@given(good=st.sampled_from(_GOODS), field=st.sampled_from([*_GOOD, "extra", "profile",
                                                             "multiple_areas_permitted",
                                                             "method", "cards"]),
       value=_VALUES | st.sampled_from([1, 14, 15, 2**31, -(2**63), True, "D", "X", "MIDDLE"]),
       splice=_SPLICES, at=st.integers(min_value=0, max_value=400),
       how=st.sampled_from(["value", "splice", "both", "none"]))
def test_orjson_and_json_give_the_same_line_or_the_same_refusal(
        good: dict[str, Any], field: str, value: Any, splice: str, at: int, how: str) -> None:
    line = dict(good)
    if how in ("value", "both"):
        line[field] = value
    text = json.dumps(line, ensure_ascii=False)
    if how in ("splice", "both"):
        at = at % (len(text) + 1)
        text = text[:at] + splice + text[at:]
    raw = text.encode("utf-8", "surrogatepass")
    assert _outcome(raw, json_only=False) == _outcome(raw, json_only=True)


def test_a_number_beyond_int64_is_refused_as_json_reads_it() -> None:
    # orjson reads 2**64 as a float; json keeps the int, and the refusal names the range.
    raw = json.dumps({**_GOOD, "shoe_position": 2**64}).encode()
    assert _outcome(raw, json_only=False) == (
        "refused", f"field 'shoe_position' is {2**64}, outside the int range",
        f"check the device's value ({-(2**31)}..{2**31 - 1})")


def test_a_line_without_an_id_gets_the_derived_one() -> None:
    parsed = parse_line(json.dumps(_GOOD).encode(), derived_event_id)
    assert parsed.event_id == derived_event_id("T07", "SHOE-7", 6)
    assert parse_line(json.dumps(_GOOD).encode()).event_id is None
    given = parse_line(json.dumps({**_GOOD, "id": "e-1"}).encode(), derived_event_id)
    assert given.event_id == "e-1"


@pytest.mark.parametrize("good", _GOODS, ids=lambda g: g["type"])
def test_the_good_lines_parse_both_ways_alike(good: dict[str, Any]) -> None:
    raw = json.dumps(good).encode()
    ours = _outcome(raw, json_only=False)
    assert ours[0] == "parsed"
    assert ours == _outcome(raw, json_only=True)

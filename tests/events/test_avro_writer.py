"""The compiled writers (events/avro_writer.py) write exactly fastavro's bytes (issue 19, item 3).

For every schema in schemas/, evolved versions included: events of every shape (optional fields
None and set, unicode and unencodable strings, ints at and beyond the 32- and 64-bit limits,
times outside the years 1..9999, hashes of the wrong length, enum values that are not symbols)
are written by the compiled writer and by the reference (fastavro's schemaless_writer on the
codec's dict); both give the same bytes, or both refuse with the same error. What is written
decodes back to the same values.
"""

from __future__ import annotations

import io
import typing
from dataclasses import fields
from datetime import UTC, datetime
from enum import Enum
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events.log.embedded.log import EmbeddedLog
from events.reddog import model
from events.simulation.simulator import SimConfig, simulate
from events.wire import avro_writer, codec

REG = codec.registry()
SCHEMAS = sorted(REG.by_fingerprint.values(), key=lambda sv: (sv.event_type, sv.version))
I32, I64 = 2**31, 2**63
EDGE_INTS = [0, 1, -1, 2, 14, 15, 63, 64, -64, -65, 127, 128, 8191, 8192, I32 - 1, -I32, I32,
             -I32 - 1, I64 - 1, -I64, I64, -I64 - 1, 2**70]
EDGE_TEXT = ["", "T01", "é", "日本語のテキスト", "🂡 ace", "a" * 64, "b" * 300, "\x00\x1b",
             "\ud800"]  # the last one cannot be encoded as UTF-8: both must refuse it


def _ints() -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(EDGE_INTS), st.integers(-I32, I32 - 1), st.integers())


def _text() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(EDGE_TEXT), st.text(max_size=80))


def _value(tp: Any) -> st.SearchStrategy[Any]:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if type(None) in typing.get_args(tp):
        return st.one_of(st.none(), _value(args[0]))
    if typing.get_origin(tp) is tuple:
        card = st.builds(model.Card, rank=st.one_of(st.integers(2, 14), _ints()),
                         suit=st.sampled_from(list(model.Suit)))
        return st.lists(card, max_size=12).map(tuple)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return st.one_of(st.sampled_from(list(tp)), st.sampled_from([m.value for m in tp]),
                         st.just("NOT_A_SYMBOL"))
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.one_of(st.integers(2, 14), _ints())
    return _text()


def _event(cls: type) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    return st.fixed_dictionaries({f.name: _value(hints[f.name]) for f in fields(cls)}).map(
        lambda kw: cls(**kw))


def _args(cls: type) -> st.SearchStrategy[tuple[Any, ...]]:
    """avro_writer.PARAMS then the event."""
    times = st.one_of(st.integers(codec.micros(datetime(2000, 1, 1, tzinfo=UTC)),
                                  codec.micros(datetime(2100, 1, 1, tzinfo=UTC))),
                      st.sampled_from(EDGE_INTS + [codec._MIN_US, codec._MAX_US,
                                                   codec._MIN_US - 1, codec._MAX_US + 1]))
    hashes = st.one_of(st.binary(min_size=32, max_size=32), st.just(model.GENESIS_HASH),
                       st.binary(max_size=40))
    return st.tuples(_text(), _text(), st.one_of(st.none(), _text()),
                     st.one_of(st.none(), st.integers(0, 500), _ints()),
                     st.one_of(st.integers(1, 10**6), _ints()), times, times, _text(), hashes,
                     hashes, _event(cls))


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "bytes", fn(*args)
    except Exception as exc:  # noqa: BLE001 - compared: the same type and message
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("sv", SCHEMAS, ids=lambda sv: f"{sv.event_type}.v{sv.version}")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_compiled_writer_matches_fastavro_on_every_schema(sv: codec.SchemaVersion,
                                                          data: st.DataObject) -> None:
    cls = model.EVENT_TYPES[sv.event_type]
    args = data.draw(_args(cls))
    version = sv.version
    fast = _outcome(codec.writer(cls, REG, version), *args)
    reference = _outcome(codec._write_reference, REG, sv.event_type, codec.record_of(*args),
                         version)
    assert fast == reference
    if fast[0] != "bytes":
        return
    message = fast[1]
    # The reference above is fastavro; say so plainly: the header, then schemaless_writer.
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, sv.raw_parsed, codec.record_of(*args))
    assert message == sv.header + buf.getvalue()
    # And it reads back: every field as written (fields this version lacks read as None).
    event_type, rec = codec.decode_raw(message, REG)
    assert event_type == sv.event_type
    expected = codec.record_of(*args)
    assert rec == {k: expected[k] for k in rec}
    assert all(expected[k] is None for k in expected.keys() - rec.keys())


def test_every_schema_in_schemas_has_a_compiled_writer() -> None:
    """None falls back to fastavro for every event (that would be correct but slow)."""
    for sv in SCHEMAS:
        cls = model.EVENT_TYPES[sv.event_type]
        assert hasattr(codec.writer(cls, REG, sv.version), "source"), sv.path.name


def _boom(*args: Any) -> bytes:
    raise AssertionError(f"fell back to fastavro for {args[-1]!r}")


def test_a_simulated_evening_is_written_without_the_fallback(tmp_path: Any) -> None:
    """Ordinary events take the compiled path (a writer whose fallback fails), and the decoded
    events of the log equal what encode_reference writes again."""
    with EmbeddedLog(tmp_path / "log") as log:
        simulate(log, SimConfig(seed=11, tables=2, rounds=40, irregularities=0.05))
        records = [r for batch in log.read() for r in batch]
    assert len(records) > 1000
    writers = {sv.fingerprint: avro_writer.compile_writer(sv.raw_parsed, sv.header,
                                                          codec.WRITER_BOUNDS, (), _boom)
               for sv in REG.latest.values()}
    types = set()
    for r in records:
        env = codec.decode(r.value)
        types.add(env.event_type)
        sv = REG.writer_for(r.value)
        fast = writers[sv.fingerprint](
            env.event_id, env.table_id, env.shoe_id, env.round_no, env.seq,
            codec.micros(env.occurred_at), codec.micros(env.recorded_at), env.actor,
            env.prev_hash, env.hash, env.event)
        assert fast == r.value == codec.encode_reference(env)
    assert len(types) >= 20  # most of the catalogue, CardsRacked's array included
    assert "CardsRacked" in types


def test_encode_of_an_older_version_refuses_a_field_it_would_lose() -> None:
    env = model.Envelope(
        event_id="e", table_id="T01", shoe_id="S", round_no=1, seq=3,
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC), recorded_at=datetime(2026, 1, 1, tzinfo=UTC),
        actor="D", event=model.CardDrawn(rank=5, suit=model.Suit.HEARTS, face_up=True,
                                         destination=model.Box.LEFT, shoe_position=7))
    fast = _outcome(lambda: codec.encode(env, version=1))
    assert fast == _outcome(lambda: codec.encode_reference(env, version=1))
    assert fast[0] == "EncodeError" and "shoe_position" in fast[1]
    assert codec.encode(env) == codec.encode_reference(env)  # v2 has it


def test_record_us_writes_what_record_writes_and_refuses_the_same_times(tmp_path: Any) -> None:
    """The simulator's and ingest's path (integer micros) and the datetime path agree."""
    from events.recording.limits import ValueLimitError
    from events.recording.recorder import Recorder

    event = model.WagerPlaced(seat=2, area=1, player_id="P-é", amount_cents=2500)
    at = datetime(2026, 11, 28, 23, 0, 1, 250_001, tzinfo=UTC)
    logs = []
    for name in ("a", "b"):
        log = EmbeddedLog(tmp_path / name)
        recorder = Recorder(log, new_id=lambda: "id-1")
        stamp = dict(shoe_id="S1", round_no=4, actor="D-1")
        if name == "a":
            recorder.record("T01", event, occurred_at=at, recorded_at=at, **stamp)
            recorder.record("T01", event, occurred_at=at, recorded_at=at, **stamp)
        else:
            us = codec.micros(at)
            recorder.record_us("T01", event, occurred_us=us, recorded_us=us, **stamp)
            recorder.record_us("T01", event, occurred_us=us, recorded_us=us, **stamp)
        recorder.flush()
        logs.append([r.value for batch in log.read() for r in batch])
        log.close()
    assert logs[0] == logs[1] and len(logs[0]) == 2  # the same bytes, the chain included
    for bad in (datetime(1999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
                datetime(2100, 1, 1, tzinfo=UTC)):
        recorder = Recorder(EmbeddedLog(tmp_path / f"c{bad.year}"))
        with pytest.raises(ValueLimitError) as by_datetime:
            recorder.record("T01", event, shoe_id=None, round_no=None, actor="D",
                            occurred_at=bad)
        with pytest.raises(ValueLimitError) as by_micros:
            recorder.record_us("T01", event, shoe_id=None, round_no=None, actor="D",
                               occurred_us=codec.micros(bad))
        assert str(by_datetime.value) == str(by_micros.value)
        assert recorder.heads == {}  # nothing stamped

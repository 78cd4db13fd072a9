"""The batch decoder against the per-message decoder: the same rows, the same refusals.

events/wire/batch_decode.py reads each field for every message of a batch at once and sends
whatever it cannot read without ambiguity to codec.decode_raw. These tests hold it to
decode_raw, message by message: every event type, both CardDrawn versions, values the codec's
validation refuses, and corrupt bytes of every kind, mixed in one batch in any order.
"""

from __future__ import annotations

import dataclasses
import io
import json
import typing
import uuid
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events.errors import DecodeError
from events.reddog import model
from events.wire import codec
from events.wire.batch_decode import BatchDecoder
from projections.store import arrow_schema, event_columns

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SCHEMA = pa.schema([f for f in arrow_schema(event_columns())
                    if f.name not in ("log_partition", "log_offset")])
ascii_text = st.text(st.characters(max_codepoint=127), max_size=12)
text = ascii_text | st.text(max_size=6)  # mostly ASCII (the fast path), some not (the slow)
timestamps = st.integers(0, 4_102_444_800_000_000).map(
    lambda us: EPOCH + timedelta(microseconds=us))
cents = st.integers(0, 2**63 - 1)
CENT_FIELDS = {"amount_cents", "min_wager_cents", "max_wager_cents", "corrects_seq"}


def _strategy_for(name: str, tp: Any, words: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if type(None) in typing.get_args(tp):
        return st.none() | _strategy_for(name, args[0], words)
    if typing.get_origin(tp) is tuple:
        return st.lists(st.builds(model.Card, st.integers(2, 14), st.sampled_from(model.Suit)),
                        max_size=8).map(tuple)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return st.sampled_from(tp)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return (st.integers(2, 14) if name == "rank" else cents if name in CENT_FIELDS
                else st.integers(0, 2**31 - 1))
    return words


def _events(cls: type, words: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    return st.builds(cls, **{f.name: _strategy_for(f.name, hints[f.name], words)
                             for f in dataclasses.fields(cls)})


def _envelopes(event: st.SearchStrategy[Any], words: st.SearchStrategy[str],
               ) -> st.SearchStrategy[model.Envelope]:
    return st.builds(
        model.Envelope, event_id=st.uuids().map(str), table_id=words,
        shoe_id=st.none() | words, round_no=st.none() | st.integers(0, 2**31 - 1),
        seq=st.integers(1, 2**63 - 1), occurred_at=timestamps, recorded_at=timestamps,
        actor=words, event=event, prev_hash=st.binary(min_size=32, max_size=32),
        hash=st.binary(min_size=32, max_size=32))


def _encode(env: model.Envelope) -> bytes:
    """Bytes as the codec writes them; a CardDrawn without shoe_position also as an old v1
    writer does, so both versions occur."""
    if isinstance(env.event, model.CardDrawn) and env.event.shoe_position is None and (
            env.seq % 2):
        return codec.encode(env, version=1)
    return codec.encode(env)


def _widened(sv: codec.SchemaVersion) -> dict[str, Any]:
    """The writer schema with every "int" a "long": the same bytes for any value, so a foreign
    writer can put a varint past 32 bits where an int belongs (fastavro's union check would
    refuse it)."""
    text = json.dumps(codec._strip_logical_types(json.loads(sv.path.read_text())))
    return fastavro.parse_schema(json.loads(text.replace('"int"', '"long"')))


def foreign(env: model.Envelope, **overrides: Any) -> bytes:
    """Bytes a foreign writer could send: well-formed Avro holding values the codec refuses
    (a rank of 15, seq 0, a time past the year 9999, an int past 32 bits)."""
    sv = codec.registry().latest[env.event_type]
    rec = {**codec.to_record(env), **overrides}
    buf = io.BytesIO()
    buf.write(sv.header)
    fastavro.schemaless_writer(buf, _widened(sv), rec)
    return buf.getvalue()


def corrupt(data: bytes, how: str, at: int, junk: bytes) -> bytes:
    at %= max(len(data), 1)
    if how == "flip":
        return data[:at] + bytes([data[at] ^ (junk[0] if junk and junk[0] else 0x80)]) + \
            data[at + 1:] if data else junk
    if how == "truncate":
        return data[:at]
    if how == "extend":
        return data + (junk or b"\x00")
    if how == "insert":
        return data[:at] + (junk or b"\x01") + data[at:]
    if how == "header":
        return junk[:10] + data[10:]
    return junk  # garbage


event_types = sorted(model.EVENT_TYPES.values(), key=lambda c: c.__name__)
clean = st.sampled_from(event_types).flatmap(lambda c: _envelopes(_events(c, ascii_text),
                                                                  ascii_text)).map(_encode)
anything = st.sampled_from(event_types).flatmap(lambda c: _envelopes(_events(c, text), text))
refused = st.one_of(
    anything.filter(lambda e: hasattr(e.event, "rank")).map(lambda e: foreign(e, rank=15)),
    anything.map(lambda e: foreign(e, seq=0)),
    anything.map(lambda e: foreign(e, occurred_at=2**62)))
broken = st.builds(corrupt, clean, st.sampled_from(
    ["flip", "flip", "truncate", "extend", "insert", "header", "garbage"]),
    st.integers(0, 10_000), st.binary(max_size=12))
messages = st.one_of(clean, clean, anything.map(_encode), refused, broken)


def reference(values: list[bytes]) -> tuple[list[int], pa.Table, list[tuple[int, str]]]:
    """decode_raw, one message at a time, as the projector did before the batch decoder."""
    good, rows, bad = [], [], []
    for i, v in enumerate(values):
        try:
            event_type, row = codec.decode_raw(v, codec.registry())
        except DecodeError as exc:
            bad.append((i, str(exc)))
            continue
        rows.append({**row, "event_type": event_type})
        good.append(i)
    return good, pa.Table.from_pylist(rows, schema=SCHEMA), bad


@pytest.fixture(scope="module")
def decoder() -> BatchDecoder:
    return BatchDecoder(codec.registry(), SCHEMA)


def assert_same_as_decode_raw(decoder: BatchDecoder, values: list[bytes]) -> int:
    """The decoder's rows, their places in the batch and its refusals (with the reasons) are
    decode_raw's; returns how many rows the vectorised path read."""
    try:
        good, table, bad = reference(values)
    except (pa.ArrowInvalid, OverflowError) as exc:
        # decode_raw accepted a value its column cannot hold (an int past 32 bits in a corrupt
        # body): the projector failed on it before, and still fails the same way.
        with pytest.raises(type(exc)):
            decoder.decode(values)
        return 0
    result = decoder.decode(values)
    assert result.rows.tolist() == good
    assert result.bad == bad
    assert result.table.schema == table.schema
    assert result.table.to_pylist() == table.to_pylist()
    assert result.table.equals(table)
    return result.fast


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages, max_size=60))
def test_any_mix_of_good_refused_and_corrupt_messages_decodes_as_decode_raw(
        decoder: BatchDecoder, values: list[bytes]) -> None:
    assert_same_as_decode_raw(decoder, values)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(clean, min_size=1, max_size=40))
def test_clean_messages_all_take_the_vectorised_path(decoder: BatchDecoder,
                                                     values: list[bytes]) -> None:
    assert assert_same_as_decode_raw(decoder, values) == len(values)


@pytest.mark.parametrize("event_type", sorted(model.EVENT_TYPES))
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_event_type_decodes_as_decode_raw_on_the_vectorised_path(
        decoder: BatchDecoder, event_type: str, data: st.DataObject) -> None:
    one_type = _envelopes(_events(model.EVENT_TYPES[event_type], ascii_text), ascii_text)
    values = data.draw(st.lists(one_type.map(_encode), min_size=20, max_size=30))
    assert assert_same_as_decode_raw(decoder, values) == len(values)


def test_every_published_schema_has_a_vectorised_plan(decoder: BatchDecoder) -> None:
    missing = sorted(f"{sv.event_type} v{sv.version}"
                     for sv in codec.registry().by_fingerprint.values()
                     if decoder.plans[int.from_bytes(sv.fingerprint, "little")] is None)
    assert missing == []  # such a schema still decodes, one message at a time: slowly


def _card(seq: int, position: int | None, version: int | None = None) -> bytes:
    env = model.Envelope(
        event_id=str(uuid.UUID(int=seq)), table_id="T07", shoe_id="T07-S1", round_no=3,
        seq=seq, occurred_at=EPOCH + timedelta(days=20000, seconds=seq), recorded_at=EPOCH,
        actor="SHOE", event=model.CardDrawn(rank=2 + seq % 13, suit=model.Suit.CLUBS,
                                            face_up=True, destination=model.Box.LEFT,
                                            shoe_position=position),
        prev_hash=bytes(32), hash=bytes([seq % 256]) * 32)
    return codec.encode(env, version=version)


def test_card_drawn_v1_and_v2_in_one_batch_read_as_v2_with_the_default(
        decoder: BatchDecoder) -> None:
    values = [_card(s, None, 1) if s % 3 else _card(s, s) for s in range(1, 61)]
    assert assert_same_as_decode_raw(decoder, values) == 60
    positions = decoder.decode(values).table.column("shoe_position").to_pylist()
    assert positions == [None if s % 3 else s for s in range(1, 61)]


def test_a_corrupt_message_amid_good_ones_is_refused_with_decode_raws_reason(
        decoder: BatchDecoder) -> None:
    values = [_card(s, s) for s in range(1, 41)]
    values[7] = values[7][:-1]  # the hash one byte short
    values[20] = values[20] + b"\x00"  # a trailing byte
    values[30] = b"\xc3\x01" + b"\x01" * 40  # an unknown fingerprint
    result = decoder.decode(values)
    assert [i for i, _ in result.bad] == [7, 20, 30]
    assert "trailing bytes" in result.bad[1][1]
    assert "unknown schema fingerprint 0101010101010101" in result.bad[2][1]
    assert result.rows.tolist() == [i for i in range(40) if i not in (7, 20, 30)]
    assert_same_as_decode_raw(decoder, values)


def test_values_the_codec_refuses_are_refused_in_a_batch_too(decoder: BatchDecoder) -> None:
    env = codec.decode(_card(5, 5))
    values = [_card(s, s) for s in range(1, 30)] + [
        foreign(env, rank=15), foreign(env, rank=1), foreign(env, seq=0),
        foreign(env, recorded_at=-2**62)]
    result = decoder.decode(values)
    assert [i for i, _ in result.bad] == [29, 30, 31, 32]
    assert "card rank 15 is not 2..14" in result.bad[0][1]
    assert_same_as_decode_raw(decoder, values)



def test_an_int_past_32_bits_is_refused_in_a_batch_as_by_the_codec(decoder: BatchDecoder) -> None:
    env = codec.decode(_card(5, 5))
    values = [_card(s, s) for s in range(1, 30)] + [
        foreign(env, round_no=2**38), foreign(env, shoe_position=-(2**38)),
        foreign(env, rank=2**38), foreign(env, round_no=2**31 - 1)]
    result = decoder.decode(values)
    assert [i for i, _ in result.bad] == [29, 30, 31]
    assert f"round_no {2**38} is outside the Avro int range" in result.bad[0][1]
    assert f"shoe_position {-(2**38)} is outside the Avro int range" in result.bad[1][1]
    assert result.rows.tolist() == [*range(29), 32]
    assert assert_same_as_decode_raw(decoder, values) == 30


def test_an_empty_batch_gives_an_empty_table(decoder: BatchDecoder) -> None:
    result = decoder.decode([])
    assert (result.table.num_rows, result.bad, result.table.schema) == (0, [], SCHEMA)

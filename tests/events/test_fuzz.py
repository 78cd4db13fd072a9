"""Fuzzing: random and mutated bytes never crash the decoder, verify or the projector, and
never lose a good event (issue 6). Mutations start from real messages of every event type,
v1 and v2: bit flips, truncation, extension, splices, deletions and overwrites."""

from __future__ import annotations

import dataclasses
import random
import typing
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import Enum
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events.errors import DecodeError
from events.integrity.verify import CHAIN_BROKEN, verify_records
from events.log.base import LogRecord
from events.log.embedded.log import EmbeddedLog
from events.recording import limits
from events.recording.recorder import Recorder
from events.reddog import model
from events.wire import chain, codec
from events.wire.envelope import EnvelopeReader
from projections.projector import project

T0 = datetime(2026, 11, 28, 21, 0, tzinfo=UTC)


def _example(cls: type) -> Any:
    """One instance of an event type with every field set (optional ones too)."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        inner = args[0] if type(None) in typing.get_args(tp) else tp
        if typing.get_origin(inner) is tuple:
            values[f.name] = (model.Card(12, model.Suit.HEARTS), model.Card(3, model.Suit.SPADES))
        elif isinstance(inner, type) and issubclass(inner, Enum):
            values[f.name] = list(inner)[-1]
        elif inner is bool:
            values[f.name] = True
        elif inner is int:
            # decks within limits.MIN_DECKS..MAX_DECKS: the chain is of events pitlog accepts
            values[f.name] = {"rank": 12, "decks": 6}.get(f.name, 2500)
        else:
            values[f.name] = f"{f.name}-value"
    return cls(**values)


def _chain() -> list[bytes]:
    """One table's chained messages: every event type once, then a v1 CardDrawn."""
    prev, out = model.GENESIS_HASH, []
    for seq, cls in enumerate(model.EVENT_TYPES.values(), start=1):
        env = model.Envelope(event_id=f"e{seq}", table_id="T07", shoe_id="T07-S0001",
                             round_no=seq, seq=seq, occurred_at=T0 + timedelta(seconds=seq),
                             recorded_at=T0, actor="D-1", event=_example(cls), prev_hash=prev)
        out.append(chain.seal(codec.encode(env), prev))
        prev = chain.stored_hash(out[-1])
    seq = len(out) + 1
    old = model.Envelope(event_id="old", table_id="T07", shoe_id=None, round_no=None, seq=seq,
                         occurred_at=T0, recorded_at=T0, actor="SHOE-7", prev_hash=prev,
                         event=model.CardDrawn(rank=5, suit=model.Suit.CLUBS, face_up=False,
                                               destination=model.Box.DISCARD_RACK))
    out.append(chain.seal(codec.encode(old, version=1), prev))
    return out


CHAIN = _chain()
REG = codec.registry()


OPS = ("flip", "truncate", "extend", "splice", "delete", "overwrite", "insert")


def mutate(i: int, ops: list[tuple[str, int, int, bytes]]) -> bytes:
    """Apply (op, position, amount, bytes) steps to CHAIN[i]; the result always differs."""
    data = bytearray(CHAIN[i])
    for op, where, amount, chunk in ops:
        pos = where % max(1, len(data))
        if op == "flip" and data:
            data[pos] ^= 1 + amount % 255
        elif op == "truncate":
            del data[pos:]
        elif op == "extend":
            data += chunk
        elif op == "splice":
            other = CHAIN[amount % len(CHAIN)]
            data = data[:pos] + other[where % len(other):]
        elif op == "delete":
            del data[pos:pos + 1 + amount % 8]
        elif op == "overwrite":
            data[pos:pos + len(chunk)] = chunk
        elif op == "insert":
            data[pos:pos] = chunk
    mutant = bytes(data)
    return mutant + b"\x00" if mutant == CHAIN[i] else mutant


steps = st.tuples(st.sampled_from(OPS), st.integers(0, 10_000), st.integers(0, 10_000),
                  st.binary(min_size=1, max_size=40))
mutants = st.builds(lambda i, ops: (i, mutate(i, ops)), st.integers(0, len(CHAIN) - 1),
                    st.lists(steps, min_size=1, max_size=3))


def random_mutant(rnd: random.Random) -> tuple[int, bytes]:
    i = rnd.randrange(len(CHAIN))
    ops = [(rnd.choice(OPS), rnd.randrange(10_000), rnd.randrange(10_000),
            rnd.randbytes(rnd.randint(1, 40))) for _ in range(rnd.randint(1, 3))]
    return i, mutate(i, ops)


def _within_limits(env: model.Envelope) -> bool:
    """The Recorder's checks (events/recording/limits.py): the projector quarantines a decoded
    record outside them (projections/bounds.py), as a mutation may make one."""
    try:
        limits.check_envelope(env.table_id, env.shoe_id, env.actor, env.event_id,
                              env.occurred_at, env.recorded_at, env.round_no)
        limits.check_event(env.event)
    except limits.ValueLimitError:
        return False
    return True


def _decodes(data: bytes) -> model.Envelope | None:
    """decode and decode_raw agree: both succeed, or both raise DecodeError (nothing else)."""
    try:
        env = codec.decode(data)
    except DecodeError:
        env = None
    try:
        codec.decode_raw(data, REG)
        raw_ok = True
    except DecodeError:
        raw_ok = False
    assert raw_ok == (env is not None)
    return env


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80), st.none() | st.text(max_size=80),
       st.none() | st.integers(0, 2**31 - 1), st.integers(1, 2**63 - 1),
       st.text(max_size=200), st.binary(min_size=32, max_size=32),
       st.integers(0, len(CHAIN) - 1))
def test_the_envelope_reader_agrees_with_the_codec(table: str, shoe: str | None,
                                                   round_no: int | None, seq: int, actor: str,
                                                   prev: bytes, i: int) -> None:
    env = dataclasses.replace(codec.decode(CHAIN[i]), table_id=table, shoe_id=shoe,
                              round_no=round_no, seq=seq, actor=actor, prev_hash=prev)
    assert EnvelopeReader(REG).read(codec.encode(env)) == (table, shoe, round_no, seq, prev)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_only_ever_raise_decode_error(data: bytes) -> None:
    assert _decodes(data) is None or data[:2] == codec.MAGIC


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200), st.sampled_from(sorted(REG.by_fingerprint)))
def test_random_bodies_behind_a_real_header_only_ever_raise_decode_error(
        body: bytes, fingerprint: bytes) -> None:
    _decodes(codec.MAGIC + fingerprint + body)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants)
def test_a_mutated_message_never_crashes_and_its_damage_is_never_hidden(
        mutant: tuple[int, bytes]) -> None:
    i, data = mutant
    env = _decodes(data)
    if env is not None:
        # It still decodes (a changed string, say): the decoded event is what the bytes say,
        # and the chain, not the decoder, proves they were changed.
        assert codec.decode(codec.encode(env)) == env
    prev = model.GENESIS_HASH if i == 0 else chain.stored_hash(CHAIN[i - 1])
    assert not chain.verifies(prev, data)
    # verify, over the table with this one message replaced: the damage is located at its
    # offset, and the next message's link still verifies (one damaged record, one finding).
    records = [LogRecord(0, k, b"T07", data if k == i else m) for k, m in enumerate(CHAIN)]
    report = verify_records(records)
    broken = [a.offset for a in report.anomalies if a.code == CHAIN_BROKEN]
    if data in CHAIN:
        # A splice rebuilt another real message whole (a replayed event): it is intact, so its
        # link breaks, and so does the next record's, whose predecessor it no longer is.
        assert broken[0] == i and set(broken) <= {i, i + 1}
    else:
        assert broken == [i]


@pytest.mark.slow
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(mutants, min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_the_projector_projects_every_good_event_and_quarantines_every_bad_one(
        tmp_path_factory: pytest.TempPathFactory, empty_store: Callable[[Path], Path],
        bad: list[tuple[int, bytes]], rnd: random.Random) -> None:
    folder = tmp_path_factory.mktemp("fuzzlog")
    # Each example projects into an empty store copied from one made once (conftest): the
    # point is the projection of the mixed log, not creating the views again.
    empty_store(folder / "pitlog.duckdb")
    _project_mixed(folder, bad, rnd)


def test_a_large_mixed_log_projects_every_good_event(tmp_path: Path) -> None:
    rnd = random.Random(2026)
    bad = [random_mutant(rnd) for _ in range(300)]
    _project_mixed(tmp_path, bad, rnd, rounds=40)


def _project_mixed(folder: Path, bad: list[tuple[int, bytes]], rnd: random.Random,
                   rounds: int = 3) -> None:
    log = EmbeddedLog(folder / "log", partitions=2)
    recorder = Recorder(log)
    for r in range(rounds):  # good events on two tables, recorded for real
        for table in ("T01", "T02"):
            recorder.record(table, _example(model.CardDrawn), shoe_id=f"{table}-S1",
                            round_no=r, actor="SHOE", occurred_at=T0)
    recorder.flush()
    goods = [(r.partition, r.offset) for b in log.read() for r in b]
    # Damaged records appended among further good ones, under a table key (so they land in
    # that table's partition, as a tampered or garbled device write would).
    items = []
    for _, data in bad:
        items.append((rnd.choice([b"T01", b"T02", b"T09"]), data))
        if rnd.random() < 0.5:
            items.append((b"T03", CHAIN[rnd.randrange(len(CHAIN))]))
    positions = log.append(items)
    decodable = set(goods)
    for (_, data), pos in zip(items, positions, strict=True):
        env = _decodes(data)
        if env is not None and _within_limits(env):
            decodable.add(pos)
    report = project(log, folder / "pitlog.duckdb")
    total = sum(log.end_offsets().values())
    assert report.events + report.quarantined == total
    con = duckdb.connect(str(folder / "pitlog.duckdb"), read_only=True)
    try:
        projected = set(con.execute("SELECT log_partition, log_offset FROM events").fetchall())
        quarantined = con.execute(
            "SELECT log_partition, log_offset, reason FROM quarantine").fetchall()
    finally:
        con.close()
    assert projected == decodable  # every good event projected, every decodable one in bounds too
    assert set(goods) <= projected
    assert {(p, o) for p, o, _ in quarantined} == {
        pos for pos in (p for _, p in zip(items, positions, strict=True)) if pos not in decodable}
    assert all(reason for *_, reason in quarantined)

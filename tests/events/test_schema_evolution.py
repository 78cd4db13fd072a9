"""Schema evolution: CardDrawn v2 adds `shoe_position` (optional, default null).

v1 bytes already in a log still decode (to the newest version, the new field at its default),
chain, verify and project side by side with v2 bytes (docs/schema-evolution.md)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from events.errors import EncodeError
from events.integrity.verify import verify_log
from events.log.embedded.log import EmbeddedLog
from events.recording.heads import TableHead
from events.recording.recorder import Recorder
from events.reddog import model
from events.wire import chain, codec
from projections.projector import project

T0 = datetime(2026, 11, 28, 21, 0, tzinfo=UTC)
SCHEMAS = codec.schemas_dir()  # the repository's schemas/ (PITLOG_SCHEMAS is unset here)


def _env(seq: int, position: int | None, prev: bytes = model.GENESIS_HASH) -> model.Envelope:
    return model.Envelope(
        event_id=f"e{seq}", table_id="T07", shoe_id="T07-S0001", round_no=1, seq=seq,
        occurred_at=T0 + timedelta(seconds=seq), recorded_at=T0 + timedelta(seconds=seq),
        actor="SHOE-7", prev_hash=prev, event=model.CardDrawn(
            rank=2 + seq, suit=model.Suit.DIAMONDS, face_up=True, destination=model.Box.LEFT,
            shoe_position=position))


def _version_of(data: bytes) -> int:
    return codec.registry().writer_for(data).version


def test_the_newest_card_drawn_schema_is_v2_and_v1_is_still_published() -> None:
    reg = codec.registry()
    versions = sorted(sv.version for sv in reg.by_fingerprint.values()
                      if sv.event_type == "CardDrawn")
    assert versions == [1, 2] and reg.latest["CardDrawn"].version == 2
    v1 = json.loads((SCHEMAS / "CardDrawn.v1.avsc").read_text())
    v2 = json.loads((SCHEMAS / "CardDrawn.v2.avsc").read_text())
    # v2 is v1 plus one optional field with a default, just before `hash` (which stays last).
    assert [f for f in v2["fields"] if f["name"] != "shoe_position"] == v1["fields"]
    added = v2["fields"][-2]
    assert (added["name"], added["type"], added["default"]) == ("shoe_position", ["null", "int"],
                                                                None)
    assert v2["fields"][-1]["name"] == "hash"


def test_new_events_are_written_with_v2_and_keep_the_new_field() -> None:
    data = codec.encode(_env(1, 17))
    assert _version_of(data) == 2
    assert codec.decode(data).event.shoe_position == 17  # type: ignore[union-attr]


def test_v1_bytes_decode_to_the_newest_version_with_the_default() -> None:
    env = _env(1, None)
    data = codec.encode(env, version=1)
    assert _version_of(data) == 1
    assert data != codec.encode(env)  # another fingerprint and one byte less
    assert codec.decode(data) == env  # shoe_position None: the v2 default
    event_type, row = codec.decode_raw(data, codec.registry())
    assert event_type == "CardDrawn" and row["shoe_position"] is None


def test_writing_v1_refuses_to_drop_a_value_it_has_no_field_for() -> None:
    with pytest.raises(EncodeError, match="CardDrawn v1 has no field shoe_position: write it "
                                          "with v2"):
        codec.encode(_env(1, 5), version=1)
    with pytest.raises(EncodeError, match=r"no schemas/CardDrawn.v9.avsc"):
        codec.encode(_env(1, None), version=9)


def _mixed_log(folder: Path) -> EmbeddedLog:
    """Seqs 1-3 written by an old v1 writer, then seqs 4-6 by the current recorder (v2)."""
    log = EmbeddedLog(folder, partitions=2)
    prev = model.GENESIS_HASH
    items = []
    for seq in (1, 2, 3):
        message = chain.seal(codec.encode(_env(seq, None, prev), version=1), prev)
        prev = chain.stored_hash(message)
        items.append((b"T07", message))
    log.append(items)
    recorder = Recorder(log)
    assert recorder.heads["T07"] == TableHead(3, prev)  # the head is read from v1 bytes
    for seq in (4, 5, 6):
        env = _env(seq, 40 + seq)
        recorder.record("T07", env.event, shoe_id=env.shoe_id, round_no=env.round_no,
                        actor=env.actor, occurred_at=env.occurred_at, event_id=env.event_id)
    recorder.flush()
    return log


def test_v1_and_v2_events_share_one_chain_and_verify(tmp_path: Path) -> None:
    log = _mixed_log(tmp_path / "log")
    values = [r.value for b in log.read() for r in b]
    assert [_version_of(v) for v in values] == [1, 1, 1, 2, 2, 2]
    decoded = [codec.decode(v) for v in values]
    assert [e.seq for e in decoded] == [1, 2, 3, 4, 5, 6]
    assert [e.event.shoe_position for e in decoded] == [None, None, None, 44, 45, 46]  # type: ignore[union-attr]
    report = verify_log(log)
    assert report.ok and report.tables[0].last_seq == 6


def test_v1_and_v2_events_project_side_by_side_into_duckdb(tmp_path: Path) -> None:
    log = _mixed_log(tmp_path / "log")
    report = project(log, tmp_path / "pitlog.duckdb")
    assert (report.events, report.quarantined) == (6, 0)
    con = duckdb.connect(str(tmp_path / "pitlog.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT seq, rank, suit, shoe_position FROM events "
                           "WHERE event_type = 'CardDrawn' ORDER BY seq").fetchall()
    finally:
        con.close()
    assert rows == [(1, 3, "D", None), (2, 4, "D", None), (3, 5, "D", None),
                    (4, 6, "D", 44), (5, 7, "D", 45), (6, 8, "D", 46)]


@pytest.fixture
def schemas_without_v2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The schemas/ folder as it was before CardDrawn v2 was published."""
    old = tmp_path / "schemas-v1"
    shutil.copytree(SCHEMAS, old)
    (old / "CardDrawn.v2.avsc").unlink()
    monkeypatch.setenv("PITLOG_SCHEMAS", str(old))
    codec.registry.cache_clear()
    yield old
    monkeypatch.delenv("PITLOG_SCHEMAS", raising=False)
    codec.registry.cache_clear()


def test_a_database_built_before_v2_gains_the_column_and_keeps_its_rows(
        tmp_path: Path, schemas_without_v2: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    prev = model.GENESIS_HASH
    for seq in (1, 2):
        message = chain.seal(codec.encode(_env(seq, None, prev)), prev)  # v1 is newest here
        prev = chain.stored_hash(message)
        log.append([(b"T07", message)])
    db = tmp_path / "pitlog.duckdb"
    project(log, db)
    con = duckdb.connect(str(db), read_only=True)
    assert "shoe_position" not in [c for (c,) in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'events'"
    ).fetchall()]
    con.close()
    # v2 is published; the old database is projected onward.
    monkeypatch.delenv("PITLOG_SCHEMAS")
    codec.registry.cache_clear()
    recorder = Recorder(log)
    recorder.record("T07", _env(3, 9).event, shoe_id="T07-S0001", round_no=1, actor="SHOE-7",
                    occurred_at=T0)
    recorder.flush()
    assert project(log, db).events == 1
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT seq, shoe_position FROM events ORDER BY seq").fetchall()
    con.close()
    assert rows == [(1, None), (2, None), (3, 9)]

"""The projector's bulk path (projections/frames.py: frames of the embedded log, polars' Avro
reader) against its record path (LogRecord by LogRecord, the reference, what a Kafka log
takes): the same rows in the same order, the same quarantine with the same reasons, the same
checkpoints, whatever the batch size; and a batch of frames is refused as a batch of records
is."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from recorded_evening import record_evening

from events.errors import ProjectionError
from events.log.embedded.log import EmbeddedLog
from events.wire import codec
from projections import frames
from projections.projector import _BatchLoader, _native_decoder, project
from projections.store import arrow_schema, event_columns, open_store


def _hostile(log: EmbeddedLog) -> list[bytes]:
    """Records that are not events, each refused for another reason: not Avro, an unknown
    schema, a body cut short, a byte past the hash, a string that is not UTF-8, a flipped
    union branch."""
    card = next(r.value for b in log.read() for r in b
                if codec.decode(r.value).event_type == "CardDrawn")
    table_id = codec.decode(card).table_id.encode()
    bad_utf8 = card.replace(table_id, b"\xff" + table_id[1:], 1)
    assert bad_utf8 != card
    table_id_at = codec.HEADER_LEN + 1 + card[codec.HEADER_LEN] // 2  # after event_id
    branch = bytearray(card)
    branch[table_id_at + 1 + card[table_id_at] // 2] = 0x09  # shoe_id's union branch
    return [b"hello, not an event", b"\xc3\x01" + b"\x99" * 8 + bytes(40), card[:-40],
            card + b"\x00", bad_utf8, bytes(branch)]


def _store_rows(db: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]],
                                   list[tuple[object, ...]]]:
    with duckdb.connect(str(db), read_only=True) as con:
        events = con.execute("SELECT * EXCLUDE (hash_ok), hash_ok FROM events "
                             "ORDER BY rowid").fetchall()
        quarantine = con.execute("SELECT source, log_partition, log_offset, key, value, reason "
                                 "FROM quarantine ORDER BY log_partition, log_offset").fetchall()
        checkpoints = con.execute("SELECT * FROM checkpoints ORDER BY ALL").fetchall()
    return events, quarantine, checkpoints


@pytest.mark.parametrize("batch_size", [37, 100_000])
def test_frames_and_records_load_the_same_rows_quarantine_and_checkpoints(
        log: EmbeddedLog, table: Callable[..., object], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, batch_size: int) -> None:
    record_evening(table, tables=3, rounds=4)
    hostile = _hostile(log)
    positions = log.append([(b"T01", h) for h in hostile])
    record_evening(table, tables=2, rounds=2, seed=5, first=4)
    assert frames.enabled(log)
    _native_decoder.cache_clear()
    project(log, tmp_path / "frames.duckdb", batch_size=batch_size, store_anomalies=False)
    assert _native_decoder.cache_info().misses == 1  # the bulk path ran
    monkeypatch.setenv(frames.ENV, "0")
    assert not frames.enabled(log)
    project(log, tmp_path / "records.duckdb", batch_size=batch_size, store_anomalies=False)
    events, quarantine, checkpoints = _store_rows(tmp_path / "frames.duckdb")
    assert (events, quarantine, checkpoints) == _store_rows(tmp_path / "records.duckdb")
    assert [(q[1], q[2]) for q in quarantine] == positions
    assert len(events) == sum(log.end_offsets().values()) - len(hostile)
    reasons = [q[5] for q in quarantine]
    assert "expected marker c301" in reasons[0]
    assert "unknown schema fingerprint 9999999999999999" in reasons[1]
    assert all("CardDrawn" in r for r in reasons[2:]), reasons
    assert "trailing bytes" in reasons[3]
    # Grouped by table, each table's rows in log order (what the record path does).
    tables = [row[0] for row in duckdb.connect(str(tmp_path / "frames.duckdb"), read_only=True)
              .execute("SELECT table_id FROM events ORDER BY rowid").fetchall()]
    if batch_size > len(events):
        assert tables == sorted(tables)


def test_a_batch_of_frames_that_repeats_a_partition_is_refused_whole(
        log: EmbeddedLog, table: Callable[..., object], tmp_path: Path) -> None:
    record_evening(table, tables=1, rounds=2)
    ends = log.end_offsets()
    p = max(ends, key=ends.__getitem__)
    part = next(log.read_frames(p, 0, ends[p]))
    with open_store(tmp_path / "x.duckdb") as con:
        loader = _BatchLoader(con, log.uri, arrow_schema(event_columns()), codec.registry(),
                              log.log_id)
        with pytest.raises(ProjectionError, match=f"p{p}@0 comes again"):
            loader.load(frames.Frames.of([part, part]))
        ((n,),) = con.execute("SELECT count(*) FROM events").fetchall()
        assert n == 0


@pytest.mark.parametrize("long_key", [False, True])
@pytest.mark.parametrize("batch_size", [5, 100_000])
def test_keys_of_any_length_group_in_byte_order_and_an_altered_event_fails_its_hash(
        log: EmbeddedLog, table: Callable[..., object], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, batch_size: int, long_key: bool) -> None:
    """Keys are read as integers by numpy (envelope_batch.key_ids); a batch with a key past
    its width (64 bytes) has every key sliced instead. Either way the rows come out in the
    keys' byte order, as the record path sorts them ('T10' before 'T2', though 'T2' is the
    smaller little-endian integer). An event whose stored hash was altered still decodes and
    is loaded with hash_ok false; each hash is checked against its own row's prev_hash, not a
    neighbour's."""
    record_evening(table, tables=2, rounds=2)
    values = [r.value for b in log.read() for r in b][:6]
    altered = bytearray(values[3])
    altered[-1] ^= 0x01
    keys = [b"T2", b"T10", b"T1", b"T" * 80 if long_key else b"T3", b"T10", b"T2"]
    log.append(list(zip(keys, [*values[:3], bytes(altered), *values[4:]], strict=True)))
    project(log, tmp_path / "frames.duckdb", batch_size=batch_size, store_anomalies=False)
    monkeypatch.setenv(frames.ENV, "0")
    project(log, tmp_path / "records.duckdb", batch_size=batch_size, store_anomalies=False)
    rows = _store_rows(tmp_path / "frames.duckdb")
    assert rows == _store_rows(tmp_path / "records.duckdb")
    with duckdb.connect(str(tmp_path / "frames.duckdb"), read_only=True) as con:
        flagged = con.execute("SELECT hash FROM events WHERE NOT hash_ok").fetchall()
        assert flagged == [(bytes(altered[-32:]),)]
        ((good,),) = con.execute("SELECT count(*) FROM events WHERE hash_ok").fetchall()
        assert good == len(rows[0]) - 1
        last = [h for (h,) in con.execute(
            "SELECT hash FROM events ORDER BY rowid DESC LIMIT 6").fetchall()][::-1]
    if batch_size > len(rows[0]):
        # One batch: the copies after the evening's tables ('T01', 'T02'), in their keys'
        # byte order: T1, T10, T10, T2, T2, then T3 or the long key (b'T' sorts after b'2').
        copies = [values[2], values[1], values[4], values[0], values[5], bytes(altered)]
        assert last == [v[-32:] for v in copies]

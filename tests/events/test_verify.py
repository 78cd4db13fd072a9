"""`verify_log`: a real embedded log on disk is tampered with (a flipped byte, a deleted event,
two swapped events, damaged framing) and every finding is asserted by code, kind, offset and seq."""

from __future__ import annotations

import tracemalloc
from array import array
from pathlib import Path

import pytest
from table_builder import record_events

from events.integrity.verify import CHAIN_BROKEN, SEQUENCE_GAP, VerifyReport, verify_log
from events.log.embedded.log import FRAME, EmbeddedLog


def one_table_log(tmp_path: Path, n: int = 10) -> EmbeddedLog:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    record_events(log, {"T07": n})
    return log


def flip(log: EmbeddedLog, offset: int, at: int, partition: int = 0, mask: int = 0x01) -> None:
    """Flip bits of the byte `at` bytes into the record's frame (0..9 frame, then key, value)."""
    path, pos = log.segment_position(partition, offset)
    data = bytearray(path.read_bytes())
    data[pos + at] ^= mask
    path.write_bytes(bytes(data))


def value_start(log: EmbeddedLog, offset: int) -> int:
    """Offset of the value's first byte within the record, counted from the frame's start."""
    path, pos = log.segment_position(0, offset)
    key_len = FRAME.unpack_from(path.read_bytes(), pos)[2]
    return FRAME.size + key_len


def rewrite(folder: Path, order: list[int | None], partition: int = 0) -> None:
    """Rewrite a partition's segment and index with its records in `order` (old offsets):
    leaving one out deletes it, permuting them reorders them. What a tamperer with file
    access can do; the frames themselves (and their CRCs) stay valid."""
    seg = folder / f"p{partition:04d}.seg"
    idx = folder / f"p{partition:04d}.idx"
    data = seg.read_bytes()
    positions = array("Q")
    positions.frombytes(idx.read_bytes())
    frames = []
    for pos in positions:
        length = FRAME.unpack_from(data, pos)[0]
        frames.append(data[pos:pos + FRAME.size + length])
    new_seg, new_idx = bytearray(), array("Q")
    for old in order:
        assert old is not None
        new_idx.append(len(new_seg))
        new_seg += frames[old]
    seg.write_bytes(bytes(new_seg))
    idx.write_bytes(new_idx.tobytes())


def findings(report: VerifyReport) -> list[tuple[str, str, int, int | None, int | None]]:
    return [(a.code, a.kind, a.offset, a.seq, a.expected_seq) for a in report.anomalies]


def test_an_untouched_log_verifies_with_a_summary_per_table(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    recorder = record_events(log, {"T01": 4, "T02": 3})
    report = verify_log(log)
    assert report.ok and report.anomalies == [] and report.records == 7
    rows = {t.table: t.as_row() for t in report.tables}
    # Round-robin: T01 at offsets 0, 2, 4, 6 and T02 at 1, 3, 5.
    assert rows["T01"] | {"head_hash": ""} == {
        "table": "T01", "partition": 0, "events": 4, "first_seq": 1, "last_seq": 4,
        "first_offset": 0, "last_offset": 6, "missing": 0, "unreadable": 0, "anomalies": 0,
        "head_hash": "",
        "status": "ok"}
    assert rows["T01"]["head_hash"] == recorder.heads["T01"].hash.hex()
    assert (rows["T02"]["events"], rows["T02"]["last_seq"], rows["T02"]["last_offset"]) == (3, 3, 5)


def test_a_flipped_byte_in_the_payload_breaks_that_events_own_hash_only(tmp_path: Path) -> None:
    log = one_table_log(tmp_path)
    flip(log, offset=4, at=value_start(log, 4) + 70)  # inside the body, before the hash
    report = verify_log(EmbeddedLog(tmp_path / "log"))
    assert findings(report) == [(CHAIN_BROKEN, "altered", 4, 5, 5)]
    assert report.tables[0].status == "broken" and report.tables[0].missing == 0


def test_a_flipped_byte_in_the_stored_hash_is_reported_once_at_that_event(tmp_path: Path) -> None:
    log = one_table_log(tmp_path)
    path, pos = log.segment_position(0, 5)
    end_of_record = log.segment_position(0, 6)[1]
    flip(log, offset=5, at=end_of_record - pos - 1)  # the hash's last byte
    assert findings(verify_log(EmbeddedLog(tmp_path / "log"))) == [
        (CHAIN_BROKEN, "altered", 5, 6, 6)]


def test_a_flipped_seq_byte_shows_the_wrong_seq_and_a_broken_hash(tmp_path: Path) -> None:
    log = one_table_log(tmp_path)
    # Find the seq varint: seq 3 is zigzag 6 (one byte), the first 0x06 after the shoe id.
    path, pos = log.segment_position(0, 2)
    record = path.read_bytes()[pos:]
    at = record.index(b"T07-S0001") + len(b"T07-S0001") + 2  # then round_no's branch and value
    assert record[at] == 6
    flip(log, offset=2, at=at, mask=0x08)  # 6 -> 14: seq 7
    report = verify_log(EmbeddedLog(tmp_path / "log"))
    assert findings(report) == [
        (CHAIN_BROKEN, "altered", 2, 7, 3),
        (SEQUENCE_GAP, "gap", 2, 7, 3),  # 3..6 missing, as far as the seqs say
        (SEQUENCE_GAP, "out_of_order", 3, 4, 8),
        (SEQUENCE_GAP, "out_of_order", 4, 5, 8),
        (SEQUENCE_GAP, "out_of_order", 5, 6, 8),
        (SEQUENCE_GAP, "duplicate", 6, 7, 8),
    ]
    assert report.tables[0].missing == 1  # seq 3 itself never appears


def test_bytes_that_no_longer_decode_are_located_without_crashing(tmp_path: Path) -> None:
    log = one_table_log(tmp_path)
    flip(log, offset=3, at=value_start(log, 3), mask=0xFF)  # the c3 01 marker
    report = verify_log(EmbeddedLog(tmp_path / "log"))
    assert [(a.code, a.kind, a.offset, a.seq) for a in report.anomalies] == [
        (CHAIN_BROKEN, "unreadable", 3, None)]
    assert "not an Avro single-object message" in report.anomalies[0].explanation
    assert report.tables[0].missing == 0  # assumed to hold seq 4: no gap invented


def test_two_damaged_records_in_a_row_are_both_reported(tmp_path: Path) -> None:
    log = one_table_log(tmp_path)
    flip(log, offset=3, at=value_start(log, 3) + 70)
    flip(log, offset=4, at=value_start(log, 4), mask=0xFF)
    assert [(a.code, a.kind, a.offset) for a in verify_log(EmbeddedLog(tmp_path / "log")).anomalies
            ] == [(CHAIN_BROKEN, "altered", 3), (CHAIN_BROKEN, "unreadable", 4)]


@pytest.mark.parametrize(("field", "at", "mask"), [
    ("length, low byte", 0, 0x04), ("length, low byte, shorter", 0, 0x10),
    ("length, high byte", 3, 0x40), ("key length", 8, 0x01), ("key length", 8, 0x04),
    ("key length, high byte", 9, 0x01),
])
def test_a_flip_in_the_framing_is_located_at_that_record(tmp_path: Path, field: str, at: int,
                                                          mask: int) -> None:
    log = one_table_log(tmp_path)
    flip(log, offset=6, at=at, mask=mask)
    report = verify_log(EmbeddedLog(tmp_path / "log"))
    assert [(a.code, a.offset, a.table) for a in report.anomalies] == [(CHAIN_BROKEN, 6, "T07")]
    assert [t.table for t in report.tables] == ["T07"] and report.tables[0].missing == 0


def test_a_flip_in_a_frame_crc_leaves_the_event_intact_and_invisible_to_verify(
        tmp_path: Path) -> None:
    # The CRC guards against torn writes (recovery checks it at the tail); the event's own bytes
    # are unchanged, so the chain still verifies. Documented in docs/ingest.md ("Verify").
    log = one_table_log(tmp_path)
    flip(log, offset=6, at=4)
    assert verify_log(EmbeddedLog(tmp_path / "log")).ok


def test_a_deleted_event_is_a_gap_and_a_broken_link_at_the_next_event(tmp_path: Path) -> None:
    one_table_log(tmp_path, n=10)
    rewrite(tmp_path / "log", [0, 1, 2, 3, 5, 6, 7, 8, 9])  # seq 5 (offset 4) deleted
    report = verify_log(EmbeddedLog(tmp_path / "log"))
    assert findings(report) == [(CHAIN_BROKEN, "link", 4, 6, 5), (SEQUENCE_GAP, "gap", 4, 6, 5)]
    assert "offset 3 (seq 4)" in report.anomalies[0].explanation
    summary = report.tables[0]
    assert (summary.events, summary.last_seq, summary.missing, summary.status) == (9, 10, 1,
                                                                                    "broken")


def test_a_deleted_first_event_breaks_the_link_to_the_genesis_hash(tmp_path: Path) -> None:
    one_table_log(tmp_path, n=5)
    rewrite(tmp_path / "log", [1, 2, 3, 4])
    report = verify_log(EmbeddedLog(tmp_path / "log"))
    assert findings(report) == [(CHAIN_BROKEN, "link", 0, 2, 1), (SEQUENCE_GAP, "gap", 0, 2, 1)]
    assert "genesis hash" in report.anomalies[0].explanation


def test_two_swapped_events_are_out_of_order_with_both_links_broken(tmp_path: Path) -> None:
    one_table_log(tmp_path, n=10)
    rewrite(tmp_path / "log", [0, 1, 2, 4, 3, 5, 6, 7, 8, 9])  # seqs 4 and 5 swapped
    report = verify_log(EmbeddedLog(tmp_path / "log"))
    assert findings(report) == [
        (CHAIN_BROKEN, "link", 3, 5, 4), (SEQUENCE_GAP, "gap", 3, 5, 4),
        (CHAIN_BROKEN, "link", 4, 4, 6), (SEQUENCE_GAP, "out_of_order", 4, 4, 6),
        # seq 6 links to seq 5, but follows seq 4 in the log now: three links are broken.
        (CHAIN_BROKEN, "link", 5, 6, 6),
    ]
    assert report.tables[0].missing == 0  # every seq is there, only out of place


def test_damage_to_one_table_leaves_the_other_table_in_the_partition_ok(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    record_events(log, {"T01": 5, "T02": 5})  # T01 at even offsets, T02 at odd
    rewrite(tmp_path / "log", [0, 1, 2, 3, 4, 6, 7, 8, 9])  # T02's seq 3 (offset 5) deleted
    report = verify_log(EmbeddedLog(tmp_path / "log"))
    status = {t.table: t.status for t in report.tables}
    assert status == {"T01": "ok", "T02": "broken"}
    # T02's seq 4 was at offset 7 and is now at offset 6.
    assert [(a.table, a.code, a.offset, a.seq) for a in report.anomalies] == [
        ("T02", CHAIN_BROKEN, 6, 4), ("T02", SEQUENCE_GAP, 6, 4)]


def test_an_event_filed_under_another_tables_key_is_misfiled(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    record_events(log, {"T01": 2})
    first = next(iter(log.read()))[0]
    log.append([(b"T02", first.value)])  # T01's seq 1, intact, under the key T02
    report = verify_log(log)
    assert [(a.table, a.code, a.kind, a.offset, a.seq) for a in report.anomalies] == [
        ("T02", CHAIN_BROKEN, "misfiled", 2, 1)]
    assert {t.table: t.status for t in report.tables} == {"T01": "ok", "T02": "broken"}


def test_a_truncated_segment_reports_each_missing_record_and_keeps_going(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=2)
    record_events(log, {"T01": 4, "T02": 4, "T03": 4})
    ends = log.end_offsets()
    part = max(ends, key=lambda p: ends[p])
    path, pos = log.segment_position(part, ends[part] - 2)
    with path.open("r+b") as f:
        f.truncate(pos)  # the last two records of that partition are gone from the segment
    report = verify_log(EmbeddedLog(tmp_path / "log"), max_batch=3)
    lost = [(a.partition, a.offset, a.kind) for a in report.anomalies if a.table == "?"]
    assert lost == [(part, ends[part] - 2, "unreadable"), (part, ends[part] - 1, "unreadable")]
    # Named a truncation (every entry follows the record before it), not a damaged .idx.
    assert (f"{path}: record {ends[part] - 2} at byte {pos} is cut short: the file ends at byte "
            f"{pos}, before the record does") in report.anomalies[0].explanation
    assert report.records == 12 and not report.ok
    # The lost records are of no known table: every table of that partition may have lost its
    # last records, so none is `ok` (its last seq and head hash are no anchor); the other
    # partition's tables are (an outside review, session 41: each said `ok`).
    status = [(t.partition == part, t.unreadable, t.status) for t in report.tables]
    assert all((lost, state) == ((2, "broken") if in_part else (0, "ok"))
               for in_part, lost, state in status), status
    assert any(in_part for in_part, _, _ in status) and len(status) == 3


def test_only_the_first_limit_anomalies_are_kept_but_all_are_counted(tmp_path: Path) -> None:
    one_table_log(tmp_path, n=10)
    rewrite(tmp_path / "log", [9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
    report = verify_log(EmbeddedLog(tmp_path / "log"), limit=3)
    assert len(report.anomalies) == 3 and report.anomalies_total == 20


def test_verify_streams_in_bounded_memory(tmp_path: Path) -> None:
    def peak(n: int, folder: str) -> int:
        log = EmbeddedLog(tmp_path / folder, partitions=1)
        record_events(log, {"T01": n // 2, "T02": n // 2})
        tracemalloc.start()
        report = verify_log(log, max_batch=1000)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert report.ok and report.records == n
        return top

    small, large = peak(4_000, "small"), peak(40_000, "large")
    # Ten times the events, about the same memory: one batch plus a state per table.
    assert large < small * 1.5, (small, large)


@pytest.mark.kafka
def test_verify_locates_a_forged_and_a_replayed_record_on_a_real_kafka_topic(
        tmp_path: Path) -> None:
    import os
    import uuid
    from contextlib import ExitStack

    from events.log.kafka.log import KafkaLog

    with ExitStack() as stack:
        # CI starts one broker for the run (.ci/run); alone, this test starts its own.
        bootstrap = os.environ.get("PITLOG_KAFKA_BOOTSTRAP")
        if not bootstrap:
            from tools import kafka_broker as kb

            broker = kb.start_broker(tmp_path / "kafka", timeout_s=180)
            stack.callback(broker.stop)
            bootstrap = broker.bootstrap
        log = KafkaLog(bootstrap, f"test-verify-{uuid.uuid4().hex[:8]}", partitions=2)
        try:
            record_events(log, {"T07": 10, "T08": 5})
            t07 = [r for b in log.read() for r in b if r.key == b"T07"]
            forged = bytearray(t07[2].value)  # seq 3, one byte changed
            forged[-40] ^= 0x01
            (pos_forged,) = log.append([(b"T07", bytes(forged))])
            (pos_replay,) = log.append([(b"T07", t07[3].value)])  # seq 4, byte for byte
            report = verify_log(log)
        finally:
            log.close()
    partition = t07[0].partition
    assert pos_forged == (partition, t07[-1].offset + 1)
    assert [(a.code, a.kind, a.partition, a.offset, a.seq) for a in report.anomalies] == [
        (CHAIN_BROKEN, "altered", partition, pos_forged[1], 3),
        (SEQUENCE_GAP, "duplicate", partition, pos_forged[1], 3),
        # After a record that fails its own hash the next link is trusted: only the seq shows.
        (SEQUENCE_GAP, "duplicate", partition, pos_replay[1], 4),
    ]
    assert {t.table: t.status for t in report.tables} == {"T07": "broken", "T08": "ok"}

"""Faults on the embedded log's files that `verify` and `project` must survive (issue 14): a
deleted or damaged index, a read-only copy, a forged table name, a segment truncated under its
index (docs/integrity.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from table_builder import record_events
from test_faults import ROOT, pitlog

from events.errors import LogCorruptError, ProjectionError
from events.integrity.verify import verify_log
from events.log.embedded.log import EmbeddedLog
from events.log.embedded.segment import write_journal
from projections.projector import project

# --- verify never trusts the index; a damaged partition does not stop the others -------------


def _two_table_log(folder: Path) -> EmbeddedLog:
    log = EmbeddedLog(folder, partitions=2)
    record_events(log, {"T01": 10, "T04": 10})  # T01 in partition 1, T04 in partition 0
    return log


def test_a_deleted_index_does_not_hide_a_table_from_verify(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    _two_table_log(folder)
    (folder / "p0001.idx").unlink()
    report = verify_log(EmbeddedLog(folder))
    assert not report.ok
    assert {t.table: t.events for t in report.tables} == {"T01": 10, "T04": 10}
    [finding] = report.anomalies
    assert (finding.code, finding.kind, finding.partition) == ("CHAIN_BROKEN", "index", 1)
    assert "p0001.idx is missing" in finding.explanation
    run = pitlog("verify", "--log", str(folder), "--format", "json")
    assert run.returncode == 1 and '"T01"' in run.stdout


def test_a_damaged_index_is_found_and_the_segment_is_read_instead(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    _two_table_log(folder)
    idx = folder / "p0000.idx"
    data = bytearray(idx.read_bytes())
    data[3 * 8] ^= 0x40  # offset 3 now points into the middle of a record
    idx.write_bytes(bytes(data))
    report = verify_log(EmbeddedLog(folder))
    assert [(a.kind, a.partition, a.offset) for a in report.anomalies] == [("index", 0, 3)]
    assert {t.table: (t.events, t.status) for t in report.tables} == {
        "T01": (10, "ok"), "T04": (10, "ok")}


_READ_ONLY = """
import errno, os, sys
folder = os.path.realpath(sys.argv[1])
def read_only(event, args):
    # The whole folder behaves as a read-only file system: any write or create is EROFS.
    if event == "open" and args[0] is not None and isinstance(args[0], (str, bytes)):
        path = os.path.realpath(os.fsdecode(args[0]))
        mode, flags = args[1], args[2]
        writes = (mode is not None and any(c in mode for c in "wax+")) or (
            flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND))
        if path.startswith(folder) and writes:
            raise OSError(errno.EROFS, "Read-only file system", path)
    if event in ("os.rename", "os.remove", "os.mkdir", "os.truncate", "os.utime") and \\
            os.path.realpath(os.fsdecode(args[0])).startswith(folder):
        raise OSError(errno.EROFS, "Read-only file system", args[0])
sys.addaudithook(read_only)
sys.argv = ["pitlog", "verify", "--log", sys.argv[1], "--format", "json"]
from cli.app import main
main()
"""


def test_verify_works_on_a_read_only_copy_and_writes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    _two_table_log(folder)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}
    run = subprocess.run([sys.executable, "-c", _READ_ONLY, str(folder)], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)
    assert {r["table"]: r["events"] for r in rows if r["kind_of_row"] == "table"} == {
        "T01": 10, "T04": 10}
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()} == before


def test_verify_never_prints_a_raw_control_sequence_as_a_table_name(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    log = _two_table_log(folder)
    log.append([(b"\x1b]0;owned\x07T9\xff", b"not an event")])
    run = pitlog("verify", "--log", str(folder), "--format", "json")
    assert run.returncode == 1
    assert "\x1b" not in run.stdout + run.stderr and "\x07" not in run.stdout + run.stderr
    tables = [r["table"] for r in json.loads(run.stdout) if r["kind_of_row"] == "table"]
    assert "\\x1b]0;owned\\x07T9\\xff" in tables


def test_a_segment_truncated_under_its_index_stops_only_its_partition(tmp_path: Path) -> None:
    folder, db = tmp_path / "log", tmp_path / "db.duckdb"
    log = _two_table_log(folder)
    seg = folder / "p0001.seg"
    _, cut = log.segment_position(1, 6)
    with seg.open("r+b") as f:
        f.truncate(cut + 5)  # records 6.. of partition 1 are gone; its index still lists them
    with pytest.raises(ProjectionError, match=r"partition 1 cannot be read past offset 6") as e:
        project(EmbeddedLog(folder), db, batch_size=4)
    assert "Restore that partition's .seg and .idx from a backup" in str(e.value)
    with duckdb.connect(str(db), read_only=True) as con:
        loaded = con.execute("SELECT table_id, count(*) FROM events GROUP BY 1 "
                             "ORDER BY 1").fetchall()
    assert loaded == [("T01", 6), ("T04", 10)]
    run = pitlog("project", "--log", str(folder), "--db", str(db))
    assert run.returncode == 1 and run.stderr.startswith("Error: ")
    assert "partition 1 cannot be read past offset 6" in run.stderr


def test_a_deleted_segment_stops_only_its_partition_for_verify_and_project(
        tmp_path: Path) -> None:
    """A segment file deleted (its .idx still listing records): verify and project both ended
    in `Error: No such file or directory`, the other partition neither verified nor projected.
    Now it is that partition's damage, as a segment cut to 0 bytes is."""
    folder, db = tmp_path / "log", tmp_path / "db.duckdb"
    _two_table_log(folder)
    (folder / "p0001.seg").unlink()
    report = verify_log(EmbeddedLog(folder))
    assert {t.table: t.status for t in report.tables} == {"T04": "ok"}
    assert sorted((a.partition, a.offset, a.kind) for a in report.anomalies) == \
        [(1, k, "unreadable") for k in range(10)]
    assert all("p0001.seg is missing" in a.explanation for a in report.anomalies)
    with pytest.raises(ProjectionError, match=r"partition 1 cannot be read past offset 0 ") as e:
        project(EmbeddedLog(folder), db)
    assert f"{folder / 'p0001.seg'} is missing, though {folder / 'p0001.idx'} lists 10 " \
        "records in it" in str(e.value)
    with duckdb.connect(str(db), read_only=True) as con:
        loaded = dict(con.execute("SELECT table_id, count(*) FROM events GROUP BY 1").fetchall())
    assert loaded == {"T04": 10}
    run = pitlog("verify", "--log", str(folder), "--format", "json")
    assert run.returncode == 1 and "internal error" not in run.stderr
    assert [r["table"] for r in json.loads(run.stdout) if r["kind_of_row"] == "table"] == ["T04"]


def test_a_damaged_frame_header_stops_only_its_partition_with_an_error_naming_it(
        tmp_path: Path) -> None:
    """A record's frame header garbled on disk (its body length now reaching into the next
    record): the projector's bulk decoder stopped on `ValueError: messages overlap in the
    buffer`, `pitlog project` an internal error, with nothing of any partition committed."""
    folder, db = tmp_path / "log", tmp_path / "db.duckdb"
    log = _two_table_log(folder)
    seg, at = log.segment_position(0, 3)
    data = bytearray(seg.read_bytes())
    original = data[at:at + 4]
    data[at:at + 4] = (1 << 20).to_bytes(4, "little")  # body length 1 MiB: past record 4
    seg.write_bytes(bytes(data))
    with pytest.raises(ProjectionError, match=r"partition 0 cannot be read past offset 3 ") as e:
        project(EmbeddedLog(folder), db)
    assert f"{seg}: record 3 at byte {at} has a damaged frame header" in str(e.value)
    with duckdb.connect(str(db), read_only=True) as con:
        loaded = dict(con.execute("SELECT table_id, count(*) FROM events GROUP BY 1").fetchall())
        quarantined = con.execute("SELECT count(*) FROM quarantine").fetchall()
    # The other partition whole; this one up to the damage, and not the damaged record's bytes
    # as read one record at a time past the damage (they were quarantined as a record, the
    # checkpoint moved to the partition's end, and a restored segment's record 3 was never
    # projected: a gap, and false anomalies, for good).
    assert loaded == {"T01": 10, "T04": 3} and quarantined == [(0,)]
    run = pitlog("project", "--log", str(folder), "--db", str(tmp_path / "cli.duckdb"),
                 "--no-alerts")  # the store above published this log's alerts
    assert run.returncode == 1 and run.stderr.startswith("Error: ")
    assert "damaged frame header" in run.stderr and "internal error" not in run.stderr
    data[at:at + 4] = original  # the segment restored from a backup, as the error says
    seg.write_bytes(bytes(data))
    project(EmbeddedLog(folder), db)
    with duckdb.connect(str(db), read_only=True) as con:
        loaded = dict(con.execute("SELECT table_id, count(*) FROM events GROUP BY 1").fetchall())
        gaps = con.execute("SELECT count(*) FROM anomalies WHERE code = 'SEQUENCE_GAP'").fetchall()
    assert loaded == {"T01": 10, "T04": 10} and gaps == [(0,)]


def test_a_damaged_frame_header_at_a_bulk_batchs_end_stops_the_projectors_read_there(
        tmp_path: Path) -> None:
    """The body of a batch's last record reaching into the next record: the bulk read
    (read_frames) and `read` refuse it as they refuse one inside a batch, at a batch that ends
    at it (records 0-3 of 4); read alone (verify's look at each record of a batch it could not
    read) it is its bytes, to say what in it is damaged."""
    log = _two_table_log(tmp_path / "log")
    seg, at = log.segment_position(0, 3)
    data = bytearray(seg.read_bytes())
    data[at:at + 4] = (1 << 20).to_bytes(4, "little")
    seg.write_bytes(bytes(data))
    damaged = EmbeddedLog(tmp_path / "log")
    with pytest.raises(LogCorruptError, match="record 3 at byte"):
        list(damaged.read_frames(0, 0, 10, max_batch=4))  # records 0-3, then 4-7
    with pytest.raises(LogCorruptError, match="record 3 at byte"):
        list(damaged.read({1: 10}, max_batch=4))
    assert len(next(damaged.read_frames(0, 3, 10, max_batch=1))) == 1  # alone: its bytes
    with pytest.raises(ProjectionError, match=r"partition 0 cannot be read past offset 3 "):
        project(damaged, tmp_path / "db.duckdb", batch_size=4)


@pytest.mark.parametrize("entry", [1 << 40, (1 << 63) + 5])
def test_an_index_entry_pointing_far_past_the_segment_is_named_not_an_internal_error(
        tmp_path: Path, entry: int) -> None:
    """A garbled .idx entry (any 64-bit value): the readers seeked there (EINVAL beyond the
    file system's largest file) or computed with it as a signed integer (OverflowError), so
    `verify` and `project` both ended in an internal error."""
    folder, db = tmp_path / "log", tmp_path / "db.duckdb"
    _two_table_log(folder)
    idx = folder / "p0000.idx"
    data = bytearray(idx.read_bytes())
    data[3 * 8:4 * 8] = entry.to_bytes(8, "little")
    idx.write_bytes(bytes(data))
    report = verify_log(EmbeddedLog(folder))
    assert not report.ok and (0, 3) in {(a.partition, a.offset) for a in report.anomalies}
    assert {t.table: t.status for t in report.tables}["T01"] == "ok"
    with pytest.raises(ProjectionError, match=r"partition 0 cannot be read past offset 3") as e:
        project(EmbeddedLog(folder), db)
    assert f"{idx}: the entry of record 3 points at byte {entry}" in str(e.value)
    with duckdb.connect(str(db), read_only=True) as con:
        loaded = dict(con.execute("SELECT table_id, count(*) FROM events GROUP BY 1").fetchall())
    assert loaded == {"T01": 10, "T04": 3}


def test_whole_records_past_the_index_are_reported_and_verified(tmp_path: Path) -> None:
    """A committed record whose index entry was lost (the .idx restored from an older backup):
    verify still checks it and says readers do not see it."""
    folder = tmp_path / "log"
    _two_table_log(folder)
    idx = folder / "p0000.idx"
    idx.write_bytes(idx.read_bytes()[:-16])  # the last two entries of partition 0 lost
    report = verify_log(EmbeddedLog(folder))
    assert [(a.kind, a.partition, a.offset) for a in report.anomalies] == [("index", 0, 8)]
    assert "holds 2 whole records after the last one p0000.idx lists" in \
        report.anomalies[0].explanation
    assert {t.table: (t.events, t.status) for t in report.tables} == {
        "T01": (10, "ok"), "T04": (10, "ok")}


def test_a_torn_last_record_is_never_projected_and_verify_names_it_the_same(
        tmp_path: Path) -> None:
    """`truncate -s -7` on a segment: its last record, still indexed, lost its last 7 bytes.
    The readers sliced the short body and the projector stored it as an event (only its
    CHAIN_BROKEN showed it); verify called it `altered`. An indexed record is whole on disk
    (the writer fsyncs it before its .idx entry), so it is damage: refused, named, never
    projected; the records before it and the other partition are projected."""
    folder, db = tmp_path / "log", tmp_path / "db.duckdb"
    log = _two_table_log(folder)
    seg, at = log.segment_position(0, 9)
    size = seg.stat().st_size - 7
    with seg.open("r+b") as f:
        f.truncate(size)
    why = (f"{seg}: record 9 at byte {at} is cut short: the file ends at byte {size}, before "
           f"the record does; the segment was truncated after the record was written (a record "
           f"is indexed only once it is whole on disk, so no writer is still appending it): "
           f"restore the segment and its .idx from a backup")
    with pytest.raises(ProjectionError, match=r"partition 0 cannot be read past offset 9") as e:
        project(EmbeddedLog(folder), db)
    assert why in str(e.value)
    with duckdb.connect(str(db), read_only=True) as con:
        loaded = dict(con.execute("SELECT table_id, count(*) FROM events GROUP BY 1").fetchall())
        quarantined = con.execute("SELECT count(*) FROM quarantine").fetchone()
    assert loaded == {"T01": 10, "T04": 9} and quarantined == (0,)
    report = verify_log(EmbeddedLog(folder))
    assert [(a.code, a.kind, a.table, a.partition, a.offset, a.explanation)
            for a in report.anomalies] == [
        ("CHAIN_BROKEN", "unreadable", "?", 0, 9, f"the log cannot return this record ({why})")]
    run = pitlog("project", "--log", str(folder), "--db", str(tmp_path / "cli.duckdb"),
                 "--no-alerts")
    assert run.returncode == 1 and why in run.stderr


@pytest.mark.parametrize("writer", [
    ("simulate", "--tables", "2", "--rounds", "3", "--seed", "2", "--first-table", "3"),
    ("ingest", str(ROOT / "examples" / "devices.jsonl")),
])
def test_a_writer_after_a_torn_last_record_refuses_and_the_store_keeps_its_records(
        tmp_path: Path, writer: tuple[str, ...]) -> None:
    """The hazard end to end: simulate, project, `truncate -s -7` a partition's segment, then
    record more. The writer's recovery dropped the cut record (indexed, so committed and
    acknowledged) and appended another at its offset: the log verified clean without it and
    the store's checkpoint stood on a record the log no longer had. Now the writer refuses
    with one Error line and writes nothing; restoring the folder from a backup, as it says,
    lets the writer and the projector go on."""
    folder, backup, db = tmp_path / "log", tmp_path / "backup", tmp_path / "db.duckdb"
    log_args = ("--log", str(folder))
    assert pitlog("simulate", *log_args, "--tables", "2", "--rounds", "3",
                  "--seed", "1").returncode == 0
    shutil.copytree(folder, backup)
    assert pitlog("project", *log_args, "--db", str(db), "--no-alerts").returncode == 0
    log = EmbeddedLog(folder)
    part = max(p for p, n in log.end_offsets().items() if n)
    last = log.end_offsets()[part] - 1
    seg, at = log.segment_position(part, last)
    os.truncate(seg, seg.stat().st_size - 7)  # truncate -s -7
    files = {f.name: f.read_bytes() for f in folder.iterdir()}
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.execute("SELECT * FROM checkpoints ORDER BY ALL").fetchall()
    run = pitlog(writer[0], *log_args, *writer[1:])
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stderr
    assert run.stderr == (
        f"Error: {seg}: record {last} at byte {at}, which p{part:04d}.idx lists (committed and "
        f"acknowledged), is cut short: the file ends at byte {seg.stat().st_size}, before the "
        f"record does (the segment was truncated, or only partly restored, after the record "
        f"was written); nothing was appended, as a writer never drops a committed record to "
        f"append after it: restore the log folder from a backup; `pitlog verify --log "
        f"{folder}` shows the damage\n")
    assert {f.name: f.read_bytes() for f in folder.iterdir()} == files
    assert "is cut short" in pitlog("project", *log_args, "--db", str(db),
                                    "--no-alerts").stderr
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT * FROM checkpoints ORDER BY ALL").fetchall() == stored
    damage = verify_log(EmbeddedLog(folder)).anomalies
    assert [(a.kind, a.partition, a.offset) for a in damage] == [("unreadable", part, last)]
    shutil.rmtree(folder)
    shutil.copytree(backup, folder)
    assert pitlog(writer[0], *log_args, *writer[1:]).returncode == 0
    run = pitlog("project", *log_args, "--db", str(db), "--no-alerts")
    assert run.returncode == 0, run.stderr


def test_a_record_still_being_appended_is_not_there_yet_and_never_an_error(
        tmp_path: Path) -> None:
    """What a reader can see of a writer mid-append (events/log/embedded/log.py, `append`):
    its journal, then the record's bytes in the segment (a part, then all of them), with no
    .idx entry yet. It is not there: nothing is projected of it, nothing is quarantined or
    reported, and the run succeeds."""
    folder, db = tmp_path / "log", tmp_path / "db.duckdb"
    log = _two_table_log(folder)
    seg, at = log.segment_position(0, 9)
    record = seg.read_bytes()[at:]
    write_journal(folder, {0: (seg.stat().st_size, 10)})
    for written in (record[:len(record) // 2], record[len(record) // 2:]):
        with seg.open("ab") as f:
            f.write(written)
        assert project(EmbeddedLog(folder), db).positions == {0: 10, 1: 10}
        with duckdb.connect(str(db), read_only=True) as con:
            assert con.execute("SELECT count(*), (SELECT count(*) FROM quarantine) "
                               "FROM events").fetchone() == (20, 0)
        assert verify_log(EmbeddedLog(folder)).anomalies == []


def test_a_garbled_last_index_entry_is_a_damaged_entry_not_a_truncated_segment(
        tmp_path: Path) -> None:
    """The last .idx entry garbled to a byte past the segment's end: verify said `the segment
    was truncated by hand`, and so did project. The segment holds every record whole; the
    entry does not follow the record before it: the .idx is damaged."""
    folder, db = tmp_path / "log", tmp_path / "db.duckdb"
    _two_table_log(folder)
    idx, seg = folder / "p0000.idx", folder / "p0000.seg"
    data = bytearray(idx.read_bytes())
    data[9 * 8:] = (1 << 40).to_bytes(8, "little")
    idx.write_bytes(bytes(data))
    report = verify_log(EmbeddedLog(folder))
    assert [(a.kind, a.partition, a.offset, a.explanation) for a in report.anomalies] == [
        ("index", 0, 9,
         f"p0000.idx disagrees with the segment at offset 9: its entry points at byte "
         f"{1 << 40}, past the segment's end ({seg.stat().st_size} bytes) where no record was "
         f"cut off: the entry is damaged, not the segment; verify read the segment's 10 "
         f"records instead. Readers go by p0000.idx: restore it from a backup, or delete "
         f"p0000.idx and let the next writer rebuild it from the segment")]
    assert {t.table: (t.events, t.status) for t in report.tables} == {
        "T01": (10, "ok"), "T04": (10, "ok")}
    with pytest.raises(ProjectionError, match=r"partition 0 cannot be read past offset 9") as e:
        project(EmbeddedLog(folder), db)
    assert (f"{idx}: the entry of record 9 points at byte {1 << 40}, not after the record "
            f"before it: the index is damaged; restore it from a backup, or delete it and let "
            f"the next writer rebuild it from the segment") in str(e.value)
    assert "truncated" not in str(e.value)

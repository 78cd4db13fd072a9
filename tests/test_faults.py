"""Faults on the read side's inputs (issue 14): a log replaced or restored under a database, an
event altered in place, an append that fails part way or is killed, a killed `simulate`.

Each test injects a fault into real files, a real DuckDB file and real processes, and asserts
what the docs (docs/integrity.md, "Log identity and checkpoints" and "Appends, retries and
duplicates") promise: nothing lost, nothing counted twice, or a clear Error saying what to do.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from test_verify import T0, record_events

from events import model
from events.embedded_log import EmbeddedLog
from events.embedded_segment import JOURNAL
from events.errors import LogError, ProjectionError
from events.event_ids import EventIdIndex, event_id_of
from events.ingest import IngestReport, ingest
from events.recorder import Recorder
from events.verify import verify_log
from projections.projector import project
from projections.store import CHECKPOINTS_DDL

ROOT = Path(__file__).resolve().parents[1]
PITLOG = str(ROOT / ".venv" / "bin" / "pitlog")


def pitlog(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PITLOG, *args], capture_output=True, text=True, timeout=300)


def counts(db: Path) -> tuple[int, int]:
    with duckdb.connect(str(db), read_only=True) as con:
        ((events, distinct),) = con.execute(
            "SELECT count(*), count(DISTINCT (table_id, seq)) FROM events").fetchall()
    return events, distinct


def chain_broken(db: Path) -> list[tuple[str, list[int], str]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT table_id, seqs, explanation FROM anomalies "
                           "WHERE code = 'CHAIN_BROKEN' ORDER BY ALL").fetchall()


# --- log identity and checkpoints --------------------------------------------------------------


def test_a_log_restored_from_a_backup_and_appended_to_is_refused(tmp_path: Path) -> None:
    """The issue's case: back up the log folder, record more, project, restore the backup at
    the same path, record other events, project again: an Error, and the database unchanged."""
    folder, backup, db = tmp_path / "log", tmp_path / "backup", tmp_path / "db.duckdb"
    log = EmbeddedLog(folder, partitions=2)
    record_events(log, {"T01": 30, "T02": 30})
    shutil.copytree(folder, backup)
    record_events(EmbeddedLog(folder), {"T01": 20, "T02": 20})
    assert project(EmbeddedLog(folder), db).events == 100
    before = counts(db)
    shutil.rmtree(folder)
    shutil.copytree(backup, folder)
    record_events(EmbeddedLog(folder), {"T01": 25, "T02": 25}, "restored")  # other bytes
    assert sum(EmbeddedLog(folder).end_offsets().values()) == 110
    with pytest.raises(ProjectionError, match="rebuild into a new database") as err:
        project(EmbeddedLog(folder), db)
    assert "restored from a backup" in str(err.value)
    assert counts(db) == before
    # The same through the CLI: one Error line, exit 1, no traceback.
    run = pitlog("project", "--log", str(folder), "--db", str(db))
    assert run.returncode == 1
    assert run.stderr.strip().startswith("Error:") and "Traceback" not in run.stderr
    assert "pitlog project --db NEW.duckdb" in run.stderr
    # A new database from the restored log holds exactly the log.
    assert project(EmbeddedLog(folder), tmp_path / "new.duckdb").events == 110


def test_a_log_shorter_than_its_checkpoint_is_refused(tmp_path: Path) -> None:
    folder, backup, db = tmp_path / "log", tmp_path / "backup", tmp_path / "db.duckdb"
    record_events(EmbeddedLog(folder, partitions=1), {"T01": 10})
    shutil.copytree(folder, backup)
    record_events(EmbeddedLog(folder), {"T01": 5})
    project(EmbeddedLog(folder), db)
    shutil.rmtree(folder)
    shutil.copytree(backup, folder)  # restored, nothing appended since
    with pytest.raises(ProjectionError, match="ends at offset 10, but this database projected"):
        project(EmbeddedLog(folder), db)


def test_a_log_made_anew_at_the_same_path_is_refused_by_its_log_id(tmp_path: Path) -> None:
    folder, db = tmp_path / "log", tmp_path / "db.duckdb"
    record_events(EmbeddedLog(folder, partitions=1), {"T01": 10})
    project(EmbeddedLog(folder), db)
    first_id = EmbeddedLog(folder).log_id
    shutil.rmtree(folder)
    # The same events again, byte for byte: only the log id tells the logs apart.
    record_events(EmbeddedLog(folder, partitions=1), {"T01": 12})
    assert EmbeddedLog(folder).log_id != first_id
    with pytest.raises(ProjectionError, match="is not the log this database was projected"):
        project(EmbeddedLog(folder), db)


def test_a_database_from_before_log_identity_still_opens_and_gains_it(tmp_path: Path) -> None:
    """Checkpoints without log id and digest, and events without hash_ok, as files made before
    this change hold them: the projector migrates them and continues exactly once."""
    folder = tmp_path / "log"
    record_events(EmbeddedLog(folder, partitions=2), {"T01": 10, "T04": 10})
    project(EmbeddedLog(folder), tmp_path / "new.duckdb")
    old = tmp_path / "old.duckdb"
    with duckdb.connect(str(old)) as con:
        con.execute(f"ATTACH '{tmp_path / 'new.duckdb'}' AS n (READ_ONLY)")
        con.execute("CREATE TABLE events AS SELECT * EXCLUDE (hash_ok) FROM n.events")
        con.execute("CREATE TABLE quarantine AS SELECT * FROM n.quarantine")
        con.execute(CHECKPOINTS_DDL)  # position only: the identity columns come by ALTER
        con.execute("INSERT INTO checkpoints SELECT source, log_partition, next_offset "
                    "FROM n.checkpoints")
    record_events(EmbeddedLog(folder), {"T01": 5})
    report = project(EmbeddedLog(folder), old)
    assert report.events == 5
    assert counts(old) == (25, 25)
    with duckdb.connect(str(old), read_only=True) as con:
        rows = con.execute("SELECT log_partition, log_id, last_offset, last_digest IS NOT NULL "
                           "FROM checkpoints ORDER BY 1").fetchall()
        hash_ok = con.execute("SELECT hash_ok, count(*) FROM events GROUP BY 1 "
                              "ORDER BY 1 NULLS FIRST").fetchall()
    # The partition appended to has its identity now; the other keeps NULL until it moves.
    p_t01 = next(r.partition for b in EmbeddedLog(folder).read() for r in b if r.key == b"T01")
    log_id, ends = EmbeddedLog(folder).log_id, EmbeddedLog(folder).end_offsets()
    assert [r[1:] for r in rows if r[0] == p_t01] == [(log_id, ends[p_t01] - 1, True)]
    assert [r[1:] for r in rows if r[0] != p_t01] == [(None, None, False)]
    assert hash_ok == [(None, 20), (True, 5)]
    assert chain_broken(old) == []


# --- events altered in place -----------------------------------------------------------------


def _alter_actor(log: EmbeddedLog, offset: int) -> None:
    """Rewrite the actor SHOE-1 as SHOE-3 in one record: the event still decodes, its bytes no
    longer match its own hash (and the frame's CRC no longer matches: readers do not check it)."""
    path, pos = log.segment_position(0, offset)
    data = bytearray(path.read_bytes())
    at = data.index(b"SHOE-1", pos)
    data[at + 5] = ord("3")
    path.write_bytes(bytes(data))


def test_the_projector_flags_an_event_altered_in_place_without_verify(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    record_events(log, {"T07": 10})
    _alter_actor(log, 4)
    db = tmp_path / "db.duckdb"
    assert project(EmbeddedLog(tmp_path / "log"), db).events == 10  # still decodes, projected
    found = chain_broken(db)
    assert [(t, s) for t, s, _ in found] == [("T07", [5])]
    assert "does not match its own hash" in found[0][2]
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT actor FROM events WHERE seq = 5").fetchone() == ("SHOE-3",)


def test_the_hash_check_survives_restarts_exactly_once(tmp_path: Path) -> None:
    """Loaded in batches of 3 over two runs, with the altered event in the second: the same
    rows and anomalies as one run, each event once."""
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    record_events(log, {"T07": 6})
    project(EmbeddedLog(tmp_path / "log"), tmp_path / "a.duckdb", batch_size=3)
    record_events(EmbeddedLog(tmp_path / "log"), {"T07": 6})
    _alter_actor(log, 8)
    project(EmbeddedLog(tmp_path / "log"), tmp_path / "a.duckdb", batch_size=3)
    project(EmbeddedLog(tmp_path / "log"), tmp_path / "b.duckdb")
    assert counts(tmp_path / "a.duckdb") == counts(tmp_path / "b.duckdb") == (12, 12)
    found = chain_broken(tmp_path / "a.duckdb")
    assert [(t, s) for t, s, _ in found] == [("T07", [9])]
    assert found == chain_broken(tmp_path / "b.duckdb")


# --- appends are all or nothing --------------------------------------------------------------

_CHILD = textwrap.dedent("""
    import os, resource, sys
    from pathlib import Path
    from events.embedded_log import EmbeddedLog
    import events.embedded_log as el
    folder, mode = Path(sys.argv[1]), sys.argv[2]
    log = EmbeddedLog(folder)
    items = [(f"T{i % 4:02d}".encode(), bytes([i % 251]) * 3000) for i in range(40)]
    if mode == "fsize":  # a full disk: no file may grow past this size
        limit = max(p.stat().st_size for p in folder.glob("p*.seg")) + 20_000
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    elif mode == "kill":  # killed after the first partition's records and index are written
        write = el._write_records
        calls = []
        def dying(*args):
            write(*args)
            calls.append(1)
            if len(calls) == 2:
                os.kill(os.getpid(), 9)
        el._write_records = dying
    try:
        log.append(items)
    except Exception as exc:
        print(type(exc).__name__, exc)
        sys.exit(3)
""")


def _child(folder: Path, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _CHILD, str(folder), mode], cwd=ROOT,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def _state(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("p*.*"))}


@pytest.mark.parametrize("mode", ["fsize", "kill"])
def test_an_append_that_fails_or_dies_part_way_leaves_no_record_behind(
        tmp_path: Path, mode: str) -> None:
    folder = tmp_path / "log"
    log = EmbeddedLog(folder, partitions=4)
    log.append([(f"T{i % 4:02d}".encode(), b"before") for i in range(8)])
    before, ends = _state(folder), log.end_offsets()
    run = _child(folder, mode)
    if mode == "fsize":  # the writer says it failed and that nothing was appended
        assert run.returncode == 3, run.stderr
        assert "LogError" in run.stdout and "nothing of the batch was appended" in run.stdout
        assert _state(folder) == before and not (folder / JOURNAL).exists()
    else:
        assert run.returncode == -signal.SIGKILL
        assert (folder / JOURNAL).exists()  # some partitions hold records of the batch ...
        assert _state(folder) != before
        assert EmbeddedLog(folder).end_offsets() == ends  # ... that no reader sees
        assert [r.value for b in EmbeddedLog(folder).read() for r in b].count(b"before") == 8
    writer = EmbeddedLog(folder)  # the next writer's recovery indexes none of them
    writer.recover()
    assert _state(folder) == before and writer.end_offsets() == ends
    p = writer.append([(b"T00", b"after")])[0][0]
    assert writer.end_offsets()[p] == ends[p] + 1
    values = [r.value for b in EmbeddedLog(folder).read() for r in b]
    assert values.count(b"after") == 1 and len(values) == 9


def test_a_journal_left_by_a_dead_writer_is_rolled_back_before_a_live_writer_appends(
        tmp_path: Path) -> None:
    """Writer A is alive (recovered long ago) when writer B dies mid-append: A's next append
    removes B's records first, so A's records never follow records that will vanish."""
    folder = tmp_path / "log"
    a = EmbeddedLog(folder, partitions=4)
    a.append([(b"T00", b"a1")])
    assert _child(folder, "kill").returncode == -signal.SIGKILL
    a.append([(b"T00", b"a2")])
    b_values = [r.value for bt in EmbeddedLog(folder).read() for r in bt]
    assert b_values == [b"a1", b"a2"]
    EmbeddedLog(folder).recover()  # a later writer's recovery takes nothing of A's
    assert [r.value for bt in EmbeddedLog(folder).read() for r in bt] == [b"a1", b"a2"]


def test_a_key_too_long_appends_nothing(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=2)
    with pytest.raises(LogError, match="nothing was appended"):
        log.append([(b"T00", b"ok"), (b"K" * 70_000, b"too long")])
    assert log.end_offsets() == {0: 0, 1: 0}


def test_simulate_killed_at_random_points_then_run_again_never_sees_another_writer(
        tmp_path: Path) -> None:
    """Issue 14: after a SIGKILL of `simulate`, the next one failed 1 time in 3 with "another
    writer appended since..." (its heads were read before the crashed append was repaired).
    Killed 5 times at random instants; each rerun must succeed and the log verify clean."""
    folder = tmp_path / "log"
    rng = random.Random(14)
    faults = 0
    for i in range(5):
        proc = subprocess.Popen([PITLOG, "simulate", "--log", str(folder), "--tables", "4",
                                 "--rounds", "300", "--seed", str(i)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(1.0, 3.0))
        if proc.poll() is None:
            proc.kill()
            faults += 1
        proc.wait()
        run = pitlog("simulate", "--log", str(folder), "--tables", "4", "--rounds", "5",
                     "--seed", str(100 + i))
        assert run.returncode == 0, run.stderr
        assert "another writer" not in run.stderr
    assert faults >= 3  # the kills happened mid-run, not after it
    report = verify_log(EmbeddedLog(folder))
    assert report.ok, report.anomalies[:3]


# --- ingest resumes safely: each device line once ---------------------------------------------


def _device_lines(n: int, tables: int = 3) -> str:
    """n CardDrawn lines over `tables` tables, each device numbering its own lines."""
    out = []
    for i in range(n):
        table = f"T{i % tables:02d}"
        out.append(json.dumps({
            "type": "CardDrawn", "table": table, "shoe": f"{table}-S0001", "round": 1,
            "seq": i // tables + 1, "at": "2026-11-28T22:00:01.250Z", "actor": f"SHOE-{table}",
            "rank": 2 + i % 13, "suit": "H", "face_up": True, "destination": "MIDDLE"}))
    return "\n".join(out) + "\n"


def _ingest(folder: Path, text: str, tmp_path: Path, **kw: Any) -> IngestReport:
    with EmbeddedLog(folder, partitions=2) as log:
        return ingest(io.BytesIO(text.encode()), log, source="test",
                      quarantine=tmp_path / "q.jsonl", **kw)


def _ids(folder: Path) -> list[tuple[bytes, str | None]]:
    return [(r.key, event_id_of(r.value)) for b in EmbeddedLog(folder).read() for r in b]


def test_lines_resent_in_a_later_run_are_reported_already_recorded(tmp_path: Path) -> None:
    folder, text = tmp_path / "log", _device_lines(60)
    first = _ingest(folder, text, tmp_path, batch_lines=7)
    assert (first.recorded, first.already_recorded) == (60, 0)
    again = _ingest(folder, text, tmp_path, batch_lines=7)
    assert (again.recorded, again.already_recorded, again.rejected, again.exit_code) == (
        0, 60, 0, 0)
    more = _ingest(folder, _device_lines(90), tmp_path)  # the 60 again, then 30 new
    assert (more.recorded, more.already_recorded) == (30, 60)
    ids = _ids(folder)
    assert len(ids) == len(set(ids)) == 90


def test_a_line_with_its_own_id_is_recorded_once_whatever_its_seq(tmp_path: Path) -> None:
    line = json.loads(_device_lines(1))
    line["id"] = "3f2c9e1e-0000-4000-8000-000000000001"
    _ingest(tmp_path / "log", json.dumps(line) + "\n", tmp_path)
    line["seq"] = 5  # re-sent by a device that renumbered it
    again = _ingest(tmp_path / "log", json.dumps(line) + "\n", tmp_path)
    assert (again.recorded, again.already_recorded) == (0, 1)
    other_table = {**line, "table": "T77", "shoe": "T77-S0001"}  # per table: another event
    assert _ingest(tmp_path / "log", json.dumps(other_table) + "\n", tmp_path).recorded == 1


def test_the_id_index_reads_only_what_was_appended_since(tmp_path: Path) -> None:
    """Opening the index costs the records appended since its last use, not the history."""
    folder = tmp_path / "log"
    _ingest(folder, _device_lines(500), tmp_path)
    log = EmbeddedLog(folder)
    assert EventIdIndex(log).catch_up() == 0  # up to date: nothing read
    record_events(EmbeddedLog(folder), {"T05": 7})  # another writer, which keeps no index
    index = EventIdIndex(log)  # opening catches up those 7 ...
    assert index.recorded("T05", "e7") and index.catch_up() == 0  # ... and only those
    index.close()


def test_the_id_index_of_a_restored_log_is_rebuilt(tmp_path: Path) -> None:
    folder, backup = tmp_path / "log", tmp_path / "backup"
    _ingest(folder, _device_lines(30), tmp_path)
    shutil.copytree(folder, backup)
    _ingest(folder, _device_lines(60), tmp_path)
    shutil.rmtree(folder)
    shutil.copytree(backup, folder)
    record_events(EmbeddedLog(folder), {"T00": 3}, "x")  # the index's last record is gone
    report = _ingest(folder, _device_lines(60), tmp_path)
    assert (report.recorded, report.already_recorded) == (30, 30)


def test_ingest_killed_at_random_points_and_resent_records_each_line_once(
        tmp_path: Path) -> None:
    """The operator's recovery: after a SIGKILL, send the whole file again. Each line ends up
    in the log exactly once: none lost, none twice."""
    folder, source = tmp_path / "log", tmp_path / "lines.jsonl"
    source.write_text(_device_lines(6000, tables=5))
    rng = random.Random(16)
    kills = 0
    for _ in range(3):
        proc = subprocess.Popen([PITLOG, "ingest", str(source), "--log", str(folder),
                                 "--batch", "50"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(1.5, 4.0))
        if proc.poll() is None:
            proc.kill()
            kills += 1
        proc.wait()
    final = pitlog("ingest", str(source), "--log", str(folder), "--format", "json")
    assert final.returncode == 0, final.stderr
    assert kills >= 1
    ids = _ids(folder)
    assert len(ids) == len(set(ids)) == 6000  # lost: 0, duplicated: 0
    assert verify_log(EmbeddedLog(folder)).ok


def test_a_duplicate_event_id_in_the_log_is_an_anomaly(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    recorder = Recorder(log, new_id=lambda: "same-id", now=lambda: T0)
    for i in range(2):  # a writer that does not check ids records one event twice
        recorder.record("T03", model.CardDrawn(rank=9, suit=model.Suit.CLUBS, face_up=True,
                                               destination=model.Box.LEFT),
                        shoe_id="T03-S0001", round_no=1, actor="SHOE-3",
                        occurred_at=T0 + timedelta(seconds=i))
    recorder.flush()
    db = tmp_path / "db.duckdb"
    project(log, db)
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT code, severity, table_id, seqs, rule FROM anomalies").fetchall()
        listed = con.execute("SELECT severity FROM anomaly_codes "
                             "WHERE code = 'DUPLICATE_EVENT'").fetchall()
    assert rows == [("DUPLICATE_EVENT", "high", "T03", [1, 2], "integrity")]
    assert listed == [("high",)]


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

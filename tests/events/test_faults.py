"""Faults on the read side's inputs (issue 14): a log replaced or restored under a database, an
event altered in place, an append that fails part way or is killed, a killed `simulate`.

Each test injects a fault into real files, a real DuckDB file and real processes, and asserts
what the docs (docs/integrity.md, "Log identity and checkpoints" and "Appends, retries and
duplicates") promise: nothing lost, nothing counted twice, or a clear Error saying what to do.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
from repo_paths import REPO
from simulated import records_by_table
from table_builder import record_events

from events.errors import LogError, LogGoneError, ProjectionError
from events.integrity.verify import verify_log
from events.log.embedded.log import EmbeddedLog
from events.log.embedded.segment import JOURNAL
from projections.projector import project
from projections.store import CHECKPOINTS_DDL, open_store

ROOT = REPO
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


@pytest.mark.slow
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


def test_a_log_replaced_under_an_open_reader_is_gone_and_none_of_it_is_projected(
        tmp_path: Path) -> None:
    """One connection and one opened log, as `pitlog serve` keeps them: the checkpoints are
    checked against the log once per connection, so until session 42 a log made anew at the
    path had its records projected at the first one's offsets (docs/integrity.md, "Log identity
    and checkpoints")."""
    folder, db = tmp_path / "log", tmp_path / "db.duckdb"
    record_events(EmbeddedLog(folder, partitions=1), {"T01": 10})
    reader = EmbeddedLog(folder, create=False)
    first_id = reader.log_id
    con = open_store(db)
    try:
        assert project(reader, con).events == 10
        assert reader.check_same_log() is False  # unchanged: one stat, no read
        folder.rename(tmp_path / "away")
        with pytest.raises(LogGoneError) as gone:
            reader.check_same_log()
        assert str(gone.value) == (
            f"the log {reader.uri} (log id {first_id}) is gone: {folder}/meta.json is missing "
            f"(the folder was moved away or removed); put it back at that path (a follower goes "
            f"on by itself once it is back; run any other command again then)")
        record_events(EmbeddedLog(folder, partitions=1), {"T01": 12})
        second_id = EmbeddedLog(folder).log_id
        with pytest.raises(LogGoneError, match=f"its log id is {second_id}, not {first_id}"):
            project(reader, con)
        assert con.execute("SELECT count(*), max(seq) FROM events").fetchall() == [(10, 10)]
        shutil.rmtree(folder)
        (tmp_path / "away").rename(folder)
        assert reader.check_same_log() is True  # back: the caller checks its checkpoints again
        assert reader.check_same_log() is False
        record_events(EmbeddedLog(folder), {"T01": 3})
        assert project(reader, con).events == 3
        assert con.execute("SELECT count(*), max(seq) FROM events").fetchall() == [(13, 13)]
    finally:
        con.close()


class _MovedAfterFirstBatch(EmbeddedLog):
    """A reader whose log folder is moved away once it has handed over its first batch of a
    read that began past offset 0 (a round reading a backlog in batches)."""

    def __init__(self, folder: Path, away: Path) -> None:
        super().__init__(folder, create=False)
        self.folder, self.away, self.moved = folder, away, False

    def _move(self) -> None:
        if not self.moved:
            self.moved = True
            self.folder.rename(self.away)

    def read(self, start: Any = None, *, max_batch: int = 5000) -> Any:
        for batch in super().read(start, max_batch=max_batch):
            yield batch
            if start and any(start.values()):
                self._move()

    def read_frames(self, partition: int, start: int, stop: int, **kw: Any) -> Any:
        for batch in super().read_frames(partition, start, stop, **kw):
            yield batch
            if start:
                self._move()


@pytest.mark.parametrize("batch_size", [500, 5_000])
def test_a_log_moved_away_while_a_round_reads_it_in_batches_is_gone_not_a_crash(
        tmp_path: Path, batch_size: int) -> None:
    """A second read (session 42): the segment's open file survives the move, but each batch
    opens the .idx again by its path, and FileNotFoundError was neither a LogError nor a
    LogCorruptError: the follower stopped (`failed`, a restart needed) instead of waiting for
    the log (`log_gone`). Now LogGoneError, the batches read before the move committed, and the
    rest projected once the log is back."""
    folder, away, db = tmp_path / "log", tmp_path / "away", tmp_path / "db.duckdb"
    record_events(EmbeddedLog(folder, partitions=1), {"T01": 20})
    reader = _MovedAfterFirstBatch(folder, away)
    con = open_store(db)
    try:
        assert project(reader, con, batch_size=batch_size).events == 20
        record_events(EmbeddedLog(folder), {"T01": 2_000})  # a backlog read in batches
        with pytest.raises(LogGoneError, match="is gone: .*meta.json is missing"):
            project(reader, con, batch_size=batch_size)
        ((kept,),) = con.execute("SELECT count(*) FROM events").fetchall()
        assert 20 <= kept < 2_020
        away.rename(folder)
        assert reader.check_same_log() is True
        assert project(reader, con, batch_size=batch_size).events == 2_020 - kept
        assert con.execute("SELECT count(*), count(DISTINCT seq), max(seq) FROM events"
                           ).fetchall() == [(2_020, 2_020, 2_020)]
    finally:
        con.close()


def test_a_log_opened_before_it_had_an_id_takes_the_one_its_writer_gives(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    record_events(EmbeddedLog(folder, partitions=1), {"T01": 4})
    meta = json.loads((folder / "meta.json").read_text())
    del meta["log_id"]  # as a log made before log ids
    (folder / "meta.json").write_text(json.dumps(meta))
    reader = EmbeddedLog(folder, create=False)
    assert reader.log_id is None
    record_events(EmbeddedLog(folder), {"T01": 1})  # its writer gives it an id
    given = json.loads((folder / "meta.json").read_text())["log_id"]
    assert reader.check_same_log() is True
    assert reader.log_id == given


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
    from events.log.embedded.log import EmbeddedLog
    import events.log.embedded.log as el
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


@pytest.mark.parametrize(("journal", "why"), [
    ("garbage", "JSONDecodeError"), ('{"1": "x"}', "ValueError"), ("[]", "AttributeError"),
    ('{"1": [-1, 0]}', "a negative number"), ('{"9": [0, 0]}', "names partition 9")])
def test_a_damaged_journal_is_an_error_naming_it_for_verify_writers_and_readers(
        tmp_path: Path, journal: str, why: str) -> None:
    """An append.pending that write_journal never writes (the folder damaged by hand): each
    command says which file and to restore the log, with an Error line, never an internal
    error, and nothing is appended. Were: verify's internal errors for all three shapes, a
    writer's for a list, and `project` reading on as if no append were pending."""
    folder = tmp_path / "log"
    with EmbeddedLog(folder, partitions=4) as log:
        log.append([(b"T00", b"a1")])
    (folder / JOURNAL).write_text(journal)
    before = (folder / "p0000.seg").read_bytes()
    runs = {"verify": pitlog("verify", "--log", str(folder)),
            "ingest": pitlog("ingest", str(ROOT / "examples" / "devices.jsonl"), "--log",
                             str(folder))}
    if "partition 9" not in why:  # a stray partition: readers read what the index says
        runs["project"] = pitlog("project", "--log", str(folder), "--db",
                                 str(tmp_path / "p.duckdb"))
    for name, run in runs.items():
        assert run.returncode == 1, name
        (line,) = [x for x in run.stderr.splitlines() if x.startswith("Error:")]
        assert str(folder / JOURNAL) in line and why in line, (name, line)
        assert line.endswith("restore the log from a backup"), (name, line)
        assert "internal error" not in run.stderr and "Traceback" not in run.stderr
    assert (folder / "p0000.seg").read_bytes() == before
    assert (folder / JOURNAL).read_text() == journal


def test_a_key_too_long_appends_nothing(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=2)
    with pytest.raises(LogError, match="nothing was appended"):
        log.append([(b"T00", b"ok"), (b"K" * 70_000, b"too long")])
    assert log.end_offsets() == {0: 0, 1: 0}


def test_simulate_killed_at_random_points_then_run_again_never_sees_another_writer(
        tmp_path: Path) -> None:
    """Issue 14: after a SIGKILL of `simulate`, the next one failed 1 time in 3 with "another
    writer appended since..." (its heads were read before the crashed append was repaired).
    Killed 5 times at random instants; each rerun must succeed and the log verify clean. Each
    run writes tables of its own (--first-table): a table the log holds is never appended
    again (events/simulation/rerun.py)."""
    folder = tmp_path / "log"
    rng = random.Random(14)
    faults = 0
    for i in range(5):
        proc = subprocess.Popen([PITLOG, "simulate", "--log", str(folder), "--tables", "4",
                                 # long enough to be mid-run when killed, even at the compiled
                                 # writers' speed on an idle machine
                                 "--rounds", "3000", "--seed", str(i),
                                 "--first-table", str(8 * i + 1)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(1.0, 3.0))
        if proc.poll() is None:
            proc.kill()
            faults += 1
        proc.wait()
        run = pitlog("simulate", "--log", str(folder), "--tables", "4", "--rounds", "5",
                     "--seed", str(100 + i), "--first-table", str(8 * i + 5))
        assert run.returncode == 0, run.stderr
        assert "another writer" not in run.stderr
    assert faults >= 3  # the kills happened mid-run, not after it
    report = verify_log(EmbeddedLog(folder))
    assert report.ok, report.anomalies[:3]


def test_simulate_killed_part_way_then_run_again_records_what_one_run_does(
        tmp_path: Path) -> None:
    """A `simulate` killed (SIGKILL) once its first records are in the log, then run again
    with the same settings: the second run records the rest, and the log holds, table by
    table, byte for byte what one uninterrupted run writes, chain hashes and injected breaks
    included (gaps, broken links and duplicates, which cross the recorder's batches); its truth
    is the whole evening's, and the log verifies as that run's does. Before, the second run
    was refused (simulate's `resume`, events/simulation/simulator.py)."""
    sim = ["simulate", "--tables", "2", "--rounds", "1500", "--seed", "11",
           "--irregularities", "0.01", "--rate", "CHAIN_BROKEN=0.02",
           "--rate", "DUPLICATE_EVENT=0.02", "--rate", "SEQUENCE_GAP=0.02", "--format", "json"]
    fresh = pitlog(*sim, "--log", str(tmp_path / "fresh"), "--truth", str(tmp_path / "f.jsonl"))
    assert fresh.returncode == 0, fresh.stderr
    folder = tmp_path / "log"
    proc = subprocess.Popen([PITLOG, *sim, "--log", str(folder)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    while proc.poll() is None and not (folder / "meta.json").exists():
        time.sleep(0.01)
    reader = EmbeddedLog(folder)
    while proc.poll() is None and not sum(reader.end_offsets().values()):  # records committed
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    again = pitlog(*sim, "--log", str(folder), "--truth", str(tmp_path / "a.jsonl"))
    assert again.returncode == 0, again.stderr
    assert "(a run stopped part way): recording the rest of them" in again.stderr
    total = json.loads(fresh.stdout)[0]["events"]
    assert 0 < json.loads(again.stdout)[0]["events"] < total
    assert records_by_table(EmbeddedLog(folder)) == \
        records_by_table(EmbeddedLog(tmp_path / "fresh"))
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "f.jsonl").read_text()
    assert (tmp_path / "a.jsonl").read_text().count('"SEQUENCE_GAP"') > 0
    report, expected = verify_log(EmbeddedLog(folder)), verify_log(EmbeddedLog(tmp_path / "fresh"))
    found = sorted((a.table, a.seq, a.code, a.kind) for a in report.anomalies)
    assert found == sorted((a.table, a.seq, a.code, a.kind) for a in expected.anomalies)
    assert {code for _, _, code, _ in found} == {"SEQUENCE_GAP", "CHAIN_BROKEN"}

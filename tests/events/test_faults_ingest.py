"""Faults on ingest (issue 14): device lines re-sent after a failure or a kill are recorded
once, across runs; a duplicate event id in the log is an anomaly (docs/integrity.md, "Appends,
retries and duplicates")."""

from __future__ import annotations

import io
import json
import random
import shutil
import subprocess
import time
from contextlib import closing
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from table_builder import T0, record_events
from test_faults import PITLOG, pitlog

from events.integrity.verify import verify_log
from events.log.embedded.log import EmbeddedLog
from events.recording.event_ids import EventIdIndex, event_id_of
from events.recording.ingest import IngestReport, ingest
from events.recording.recorder import Recorder
from events.reddog import model
from events.wire import chain, codec
from projections.projector import project

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


def test_a_line_with_a_recorded_id_and_other_content_is_refused_not_dropped(
        tmp_path: Path) -> None:
    """The same id with other content (a $900 wager at seat 2 under the id of a $5 wager at
    seat 1) was counted already_recorded and never recorded: lost, with exit 0. It is refused
    and quarantined, in the same batch, in a later run, and after the id index was deleted
    (rebuilt from the log); the same line sent again is still recorded once."""
    line = json.loads(_device_lines(1))
    line["id"] = "11111111-1111-4111-8111-111111111111"
    other = {**line, "seq": 2, "rank": 9}  # the same id, another card
    first = _ingest(tmp_path / "log", json.dumps(line) + "\n" + json.dumps(other) + "\n",
                    tmp_path)
    assert (first.recorded, first.rejected, first.already_recorded) == (1, 1, 0)
    for deleted_index in (False, True):
        if deleted_index:
            for f in (tmp_path / "log").glob("event-ids.sqlite*"):
                f.unlink()
        again = _ingest(tmp_path / "log", json.dumps(line) + "\n" + json.dumps(other) + "\n",
                        tmp_path)
        assert (again.recorded, again.rejected, again.already_recorded) == (0, 1, 1)
    refused = [json.loads(x) for x in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert [(x["line"], json.loads(x["raw"])["rank"]) for x in refused] == [(2, 9)] * 3
    assert {x["reason"] for x in refused} == {
        f"event id {line['id']} of table T00 was recorded with other content"}
    ((value,),) = [[r.value for r in b] for b in EmbeddedLog(tmp_path / "log").read()]
    assert codec.decode(value).event.rank == 2  # the first line's card, once


def test_lines_sent_again_over_a_record_damaged_since_are_compared_around_it(
        tmp_path: Path) -> None:
    """A file sent again while one of its recorded events was damaged on disk (a frame
    header's length garbled): reading the run of recorded events back stopped the whole
    ingest on the damage. The damaged one has no content to compare (it counts as sent
    again, as before positions were kept); the others are compared: a changed one is
    still refused."""
    lines = [json.loads(x) for x in _device_lines(6, tables=1).splitlines()]
    text = "".join(json.dumps(x) + "\n" for x in lines)
    _ingest(tmp_path / "log", text, tmp_path)
    log = EmbeddedLog(tmp_path / "log")
    (part,) = [p for p, end in log.end_offsets().items() if end]  # one table: one partition
    seg, at = log.segment_position(part, 1)
    data = bytearray(seg.read_bytes())
    data[at:at + 4] = (1 << 20).to_bytes(4, "little")
    seg.write_bytes(bytes(data))
    again = _ingest(tmp_path / "log", text, tmp_path)
    assert (again.recorded, again.rejected, again.already_recorded) == (0, 0, 6)
    lines[4]["rank"] = 14  # another card under the fifth line's id
    changed = _ingest(tmp_path / "log", "".join(json.dumps(x) + "\n" for x in lines),
                      tmp_path)
    assert (changed.recorded, changed.rejected, changed.already_recorded) == (0, 1, 5)


def test_an_id_index_from_before_positions_is_read_again_and_compares(tmp_path: Path) -> None:
    """An index an older pitlog made (ids without where they are) is read again from the log
    when opened, so the ids it held are compared too."""
    import sqlite3

    line = json.loads(_device_lines(1))
    _ingest(tmp_path / "log", json.dumps(line) + "\n", tmp_path)
    path = tmp_path / "log" / "event-ids.sqlite"
    with closing(sqlite3.connect(path)) as db, db:  # the ids table as an older pitlog made it
        db.execute("CREATE TABLE old_ids AS SELECT table_id, event_id FROM ids")
        db.execute("DROP TABLE ids")
        db.execute("CREATE TABLE ids (table_id BLOB NOT NULL, event_id TEXT NOT NULL, "
                   "PRIMARY KEY (table_id, event_id)) WITHOUT ROWID")
        db.execute("INSERT INTO ids SELECT * FROM old_ids")
        db.execute("DROP TABLE old_ids")
    changed = _ingest(tmp_path / "log", json.dumps({**line, "rank": 9}) + "\n", tmp_path)
    assert (changed.recorded, changed.rejected, changed.already_recorded) == (0, 1, 0)
    (rec,) = [r for b in EmbeddedLog(tmp_path / "log").read() for r in b]
    with closing(EventIdIndex(EmbeddedLog(tmp_path / "log"))) as index:
        (where,) = index.recorded_many([("T00", event_id_of(rec.value) or "")]).values()
    assert where == (rec.partition, rec.offset)


def test_lines_sent_with_a_blank_id_are_refused_not_taken_for_one_line(tmp_path: Path) -> None:
    """Two different lines with the id "  " were recorded as one (the second counted
    `already_recorded`, never in the log); "" was an id too. A blank id names no event: each
    such line is quarantined with the reason, the others recorded."""
    lines = [json.loads(line) for line in _device_lines(4, tables=1).splitlines()]
    lines[1]["id"], lines[2]["id"] = "  ", ""
    report = _ingest(tmp_path / "log", "".join(json.dumps(x) + "\n" for x in lines), tmp_path)
    assert (report.recorded, report.rejected, report.already_recorded) == (2, 2, 0)
    refused = [json.loads(x) for x in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert [(x["line"], x["reason"]) for x in refused] == [
        (2, "field 'id' is '  ', blank"), (3, "field 'id' is '', blank")]
    assert [json.loads(x["raw"])["seq"] for x in refused] == [2, 3]
    assert len(_ids(tmp_path / "log")) == 2


def test_the_recorder_refuses_a_blank_event_id_given_or_minted_and_mints_one_for_none(
        tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from events.recording.limits import ValueLimitError

    at = datetime(2026, 11, 28, 22, tzinfo=UTC)
    stamp = {"shoe_id": None, "round_no": None, "actor": "TERM-1", "occurred_at": at}
    recorder = Recorder(EmbeddedLog(tmp_path / "log", partitions=1))
    with pytest.raises(ValueLimitError) as refused:
        recorder.record("T01", model.DealerTappedIn(dealer_id="D-1"), event_id="  ", **stamp)
    assert refused.value.reason == ("the event id '  ' is blank; a blank id names no event, "
                                    "and two events sharing one were taken for one")
    assert recorder.heads.get("T01") is None  # nothing stamped
    for given in (None, ""):  # a new id, as ever
        assert recorder.record("T01", model.DealerTappedIn(dealer_id="D-1"),
                               event_id=given, **stamp) in (1, 2)
    recorder.flush()
    assert [e for _, e in _ids(tmp_path / "log")] == [e for _, e in _ids(tmp_path / "log")
                                                      if e and e.strip()]
    assert len(_ids(tmp_path / "log")) == 2
    minted = Recorder(EmbeddedLog(tmp_path / "log"), new_id=lambda: " ")
    with pytest.raises(ValueLimitError):
        minted.record("T02", model.DealerTappedIn(dealer_id="D-1"), **stamp)
    assert minted.heads.get("T02") is None


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


def test_the_index_takes_a_writers_own_ids_only_when_the_new_records_are_its_own(
        tmp_path: Path) -> None:
    """catch_up(appended) takes the ids from the writer when the log grew by exactly its
    records; another writer's records in the range, even as many, are read back and indexed."""
    folder = tmp_path / "log"
    log = EmbeddedLog(folder, partitions=2)
    index, other = EventIdIndex(log), EventIdIndex(log)
    record_events(log, {"T01": 3, "T02": 2}, "a")  # writer A appends 5
    a_ids = [("T01", "a1"), ("T02", "a2"), ("T01", "a3"), ("T02", "a4"), ("T01", "a5")]
    assert other.catch_up() == 5  # another process's index reads A's 5 back ...
    record_events(log, {"T01": 3, "T02": 2}, "b")  # ... then writer B appends 5
    assert index.catch_up(a_ids) == 5  # A's 5 ids, but the 5 new records are B's:
    assert all(index.recorded(t, f"b{i}") for i, t in enumerate(
        ["T01", "T02", "T01", "T02", "T01"], 1))  # read back, every one indexed
    record_events(log, {"T01": 2, "T02": 1}, "c")  # a writer's own 3, on their own
    assert index.catch_up([("T01", "c1"), ("T02", "c2"), ("T01", "c3")]) == 3
    assert index.recorded("T01", "c3") and index.catch_up() == 0
    fresh = EventIdIndex(log)  # the marks it left are those of reading the log itself
    assert fresh.catch_up() == 0 and fresh.recorded("T02", "c2")
    for opened in (index, other, fresh):
        opened.close()


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


def test_an_id_index_that_lost_its_last_commits_reads_them_from_the_log(
        tmp_path: Path) -> None:
    """The index commits without an fsync (event_ids.EventIdIndex._open): a power cut may take
    its last commits. Put back as it was before the second run (its WAL files too, as a disk
    would leave them), it is behind the log, and the lines of that run sent again are found
    recorded, none twice."""
    folder, saved = tmp_path / "log", tmp_path / "index-before"
    _ingest(folder, _device_lines(30), tmp_path)
    saved.mkdir()
    index_files = sorted(folder.glob("event-ids.sqlite*"))
    assert index_files  # the index lies beside the log
    for f in index_files:
        shutil.copy2(f, saved / f.name)
    assert _ingest(folder, _device_lines(60), tmp_path).recorded == 30
    for f in folder.glob("event-ids.sqlite*"):
        f.unlink()
    for f in saved.iterdir():
        shutil.copy2(f, folder / f.name)
    report = _ingest(folder, _device_lines(90), tmp_path)
    assert (report.recorded, report.already_recorded) == (30, 60)
    ids = _ids(folder)
    assert len(ids) == len(set(ids)) == 90


def _segment_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*.seg")) if folder.exists() else 0


def test_ingest_killed_at_random_points_and_resent_records_each_line_once(
        tmp_path: Path) -> None:
    """The operator's recovery: after a SIGKILL, send the whole file again. Each line ends up
    in the log exactly once: none lost, none twice. Each kill lands when the log has grown to a
    random share of the whole file's records (not after a sleep: on a quiet machine the whole
    file was recorded before the first kill, and the test killed nothing)."""
    folder, source = tmp_path / "log", tmp_path / "lines.jsonl"
    source.write_text(_device_lines(20_000, tables=5))
    whole = tmp_path / "whole"
    assert pitlog("ingest", str(source), "--log", str(whole)).returncode == 0
    full = _segment_bytes(whole)
    rng = random.Random(16)
    kills = 0
    for share in sorted(rng.uniform(0.05, 0.9) for _ in range(3)):
        proc = subprocess.Popen([PITLOG, "ingest", str(source), "--log", str(folder),
                                 "--batch", "50"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        while proc.poll() is None and _segment_bytes(folder) < share * full:
            time.sleep(0.002)
        if proc.poll() is None:
            proc.kill()
            kills += 1
        proc.wait()
    assert kills >= 1
    assert _segment_bytes(folder) < full  # the kills left lines to send again
    final = pitlog("ingest", str(source), "--log", str(folder), "--format", "json")
    assert final.returncode == 0, final.stderr
    ids = _ids(folder)
    assert len(ids) == len(set(ids)) == 20_000  # lost: 0, duplicated: 0
    assert verify_log(EmbeddedLog(folder)).ok


def test_a_duplicate_event_id_in_the_log_is_an_anomaly(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    recorder = Recorder(log, new_id=lambda: "same-id", now=lambda: T0)
    for i in range(2):  # a writer that does not check ids records one event twice
        box = (model.Box.LEFT, model.Box.RIGHT)[i]  # dealt as (d)5 says: only the id is wrong
        recorder.record("T03", model.CardDrawn(rank=9, suit=model.Suit.CLUBS, face_up=True,
                                               destination=box),
                        shoe_id="T03-S0001", round_no=1, actor="SHOE-3",
                        occurred_at=T0 + timedelta(seconds=i))
    recorder.flush()
    db = tmp_path / "db.duckdb"
    project(log, db)
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT code, severity, table_id, seqs, rule FROM anomalies "
                           "ORDER BY code").fetchall()
        listed = con.execute("SELECT severity FROM anomaly_codes "
                             "WHERE code = 'DUPLICATE_EVENT'").fetchall()
    # The copy is one card (the card views read each event id once): no EXTRA_CARD, no card
    # counted twice. The two other rows are about this bare log, not the copy: its shoe was
    # never loaded (CARD_OUTSIDE_ROUND) and its one card never reached the rack.
    assert rows == [
        ("CARD_OUTSIDE_ROUND", "high", "T03", [1], "13:47-20.31(d)5, (d)15; GA (3), (12)"),
        ("DISCARD_RACK_ORDER", "medium", "T03", [1], "13:47-20.31(d)15; GA (12)"),
        ("DUPLICATE_EVENT", "high", "T03", [1, 2], "integrity"),
    ]
    assert listed == [("high",)]


def test_the_derived_event_id_is_the_rfc_4122_name_based_uuid_of_the_line() -> None:
    import hashlib
    import uuid

    from events.recording.event_ids import _LINE_NAMESPACE, derived_event_id

    cases = [("T01", "SHOE-1", 1), ("Tü7", "TERM-9", 2**40),
             *((f"T{n % 97}", f"D-{n}", n * 7919) for n in range(2000))]
    hashed = set()  # the SHA-1's 17th hex digit, which the variant bits are set in
    for table, actor, seq in cases:
        name = f"{table}\x00{actor}\x00{seq}"
        assert derived_event_id(table, actor, seq) == str(uuid.uuid5(_LINE_NAMESPACE, name))
        hashed.add(hashlib.sha1(_LINE_NAMESPACE.bytes + name.encode()).hexdigest()[16])
    assert len(hashed) == 16  # every value the variant digit is made from was checked


ROUNDS = 60  # each a new log opened by four processes at once (about 0.05 s a round)


def _open_index(folder: str, results: Any) -> None:
    try:
        EventIdIndex(EmbeddedLog(Path(folder)))
        results.put("ok")
    except Exception as exc:  # noqa: BLE001 - reported to the test
        results.put(repr(exc))


def test_ingests_starting_at_once_on_a_new_log_all_open_its_id_index(tmp_path: Path) -> None:
    """Four processes open the id index of a new log at the same instant, ROUNDS times over
    (two `pitlog ingest` runs starting together). SQLite answered "database is locked" at once,
    without its busy timeout, to one of them while another switched the new file to WAL: that
    ingest failed (`cannot use the event id index ... (database is locked)`; CI, and 3 of 120
    opens here on main). EventIdIndex now opens again until OPEN_PATIENCE_S."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    outcomes: list[str] = []
    for attempt in range(ROUNDS):
        folder = tmp_path / f"log{attempt}"
        EmbeddedLog(folder).close()
        results = ctx.Queue()
        procs = [ctx.Process(target=_open_index, args=(str(folder), results)) for _ in range(4)]
        for proc in procs:
            proc.start()
        outcomes += [results.get(timeout=120) for _ in procs]
        for proc in procs:
            proc.join(120)
    assert outcomes == ["ok"] * 4 * ROUNDS


@pytest.mark.parametrize("seed", range(6))
def test_heads_kept_in_the_id_index_continue_every_chain_on_a_log_without_its_own(
        tmp_path: Path, seed: int) -> None:
    """On a log that keeps no heads (here the embedded log's records behind the plain EventLog
    interface, as a Kafka topic without fencing is), ingest takes the heads from its id index.
    Whatever happened since its last run (another writer that keeps no index, a foreign record
    at a table's tail, an index made before it kept heads), every table's chain continues
    gaplessly, and the index's heads, when it has them all, are the log's."""
    import sqlite3

    from plain_log import PlainLog

    from events.recording.event_ids import index_path
    from events.recording.recorder import scan_heads

    folder = tmp_path / "log"
    rng = random.Random(seed)
    device_seq: dict[str, int] = {}
    other_runs = 0

    def lines(n: int) -> str:
        out = []
        for _ in range(n):
            table = f"T{rng.randrange(4):02d}"
            device_seq[table] = device_seq.get(table, 0) + 1
            out.append(json.dumps({"type": "DealerTappedIn", "table": table,
                                   "seq": device_seq[table], "actor": f"TERM-{table}",
                                   "at": "2026-11-28T22:00:01Z", "dealer_id": "D-1"}))
        return "\n".join(out) + "\n"

    heads_used = 0
    for step in range(16):
        log = PlainLog(EmbeddedLog(folder, partitions=2))
        what = rng.choice(["ingest", "ingest", "other", "foreign", "old index"]) if step else \
            "ingest"
        if what == "ingest":
            with closing(EventIdIndex(log)) as index:
                known = index.heads()
            if known is not None:
                heads_used += 1
                assert scan_heads(log) == known
            report = ingest(io.BytesIO(lines(rng.randrange(1, 40)).encode()), log,
                            source="t", quarantine=tmp_path / "q.jsonl")
            assert report.rejected == 0
        elif what == "other":
            other_runs += 1
            record_events(log, {f"T{rng.randrange(5):02d}": rng.randrange(1, 30)},
                          f"o{other_runs}-")
        elif what == "foreign":
            log.append([(f"T{rng.randrange(4):02d}".encode(), b"not a pitlog event")])
        elif index_path(log).exists():  # as an index of a pitlog before heads leaves it
            with closing(sqlite3.connect(index_path(log))) as db:
                db.execute("DROP TABLE IF EXISTS heads")
                db.commit()
    # Every table's pitlog events: seqs 1, 2, 3, ... each linked to the one before by hash.
    chains: dict[bytes, list[tuple[int, bytes, bytes]]] = {}
    for batch in EmbeddedLog(folder).read():
        for r in batch:
            if r.value != b"not a pitlog event":
                env = codec.decode(r.value)
                chains.setdefault(r.key, []).append((env.seq, env.prev_hash,
                                                     chain.stored_hash(r.value)))
    assert len(chains) >= 4
    for key, events in chains.items():
        assert [seq for seq, _, _ in events] == list(range(1, len(events) + 1)), key
        assert all(events[i][1] == events[i - 1][2] for i in range(1, len(events))), key
    assert heads_used >= 3


# --- the quarantine is never read as input ----------------------------------------------------


# An outside review (session 37): `pitlog ingest log-quarantine.jsonl` appended each refused line
# to the very file it was reading, read it back, refused it again, and so on (1.4 GB in 10 s),
# and `--quarantine` naming the input altered the device's own file. Each way of reading the
# quarantine is refused before anything is read or recorded: the file named, a link to it,
# standard input redirected from it, and the input named as --quarantine.
@pytest.mark.parametrize("way", ["file", "link", "stdin", "quarantine option"])
def test_ingesting_the_quarantine_itself_is_refused_before_anything_is_read(
        tmp_path: Path, way: str) -> None:
    log, quarantine = tmp_path / "log", tmp_path / "log-quarantine.jsonl"
    bad = _device_lines(3).replace('"rank": 2,', '"rank": 15,')  # line 1 refused
    (tmp_path / "feed.jsonl").write_text(bad)
    first = pitlog("ingest", str(tmp_path / "feed.jsonl"), "--log", str(log))
    assert first.returncode == 1 and len(quarantine.read_text().splitlines()) == 1
    (tmp_path / "link.jsonl").symlink_to(quarantine)
    recorded = len(_ids(log))
    before = {p.name: p.read_bytes() for p in (quarantine, tmp_path / "feed.jsonl")}
    args, stdin = {"file": ([str(quarantine)], None),
                   "link": ([str(tmp_path / "link.jsonl")], None),
                   "stdin": (["-"], quarantine),
                   "quarantine option": ([str(tmp_path / "feed.jsonl"), "--quarantine",
                                          str(tmp_path / "feed.jsonl")], None)}[way]
    with open(stdin or tmp_path / "feed.jsonl", "rb") as feed:
        done = subprocess.run([PITLOG, "ingest", *args, "--log", str(log), "--batch", "1"],
                              stdin=feed, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith("Error: ") and "is the quarantine file" in line \
        and "nothing was read or recorded" in line and "jq -r .raw" in line, done.stderr
    assert {p.name: p.read_bytes() for p in (quarantine, tmp_path / "feed.jsonl")} == before
    assert len(_ids(log)) == recorded


# A pipe from the quarantine (`cat QUARANTINE | pitlog ingest -`) is no file to compare, and fed
# each refusal back without end too (a second outside review, session 37: 6 MB to 517 MB in
# 15 s). A quarantine's entry is never a device line: the run stops at the first one, the lines
# before it judged as usual (recorded, or quarantined once), nothing of the entry appended.
@pytest.mark.parametrize("before", [0, 3])
def test_a_quarantine_sent_through_a_pipe_stops_at_its_first_entry(
        tmp_path: Path, before: int) -> None:
    log, quarantine = tmp_path / "log", tmp_path / "log-quarantine.jsonl"
    (tmp_path / "feed.jsonl").write_text(_device_lines(3).replace('"rank": 2,', '"rank": 15,'))
    assert pitlog("ingest", str(tmp_path / "feed.jsonl"), "--log", str(log)).returncode == 1
    entries = quarantine.read_text()
    # `before` good lines first: the same devices' next lines, after the three
    (tmp_path / "lines").write_text(
        "".join(_device_lines(before + 3).splitlines(keepends=True)[3:]))
    recorded = len(_ids(log))
    done = subprocess.run(f"cat {tmp_path / 'lines'} {quarantine} | {PITLOG} ingest - "
                          f"--log {log} --batch 1", shell=True, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"Error: <stdin> line {before + 1} is an entry of a quarantine "
                           f"file (source, line, reason, raw), not a device line"), line
    assert quarantine.read_text() == entries  # nothing appended
    assert len(_ids(log)) == recorded + before  # the good lines before it recorded

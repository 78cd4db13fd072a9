"""`follow`: the views keep up with a growing log, readers in other connections see a snapshot a
few seconds old at most, and a stop request ends it cleanly (embedded log: no broker needed;
tests/test_kafka_faults.py follows a real Kafka topic in a subprocess)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb

from events.embedded_log import EmbeddedLog
from events.simulator import SimConfig, simulate
from projections.follow import follow
from projections.projector import ProjectionReport
from projections.snapshot import database_path, open_for_reading, snapshot_path


def _snapshot_events(db: Path) -> int:
    snap = snapshot_path(db)
    if not snap.exists():
        return -1
    con = duckdb.connect(str(snap), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM events").fetchall()[0][0])
    finally:
        con.close()


def _wait_for(db: Path, events: int, within_s: float) -> float:
    started = time.monotonic()
    while _snapshot_events(db) != events:
        assert time.monotonic() - started < within_s, \
            f"snapshot has {_snapshot_events(db)} events, not {events}, after {within_s}s"
        time.sleep(0.05)
    return time.monotonic() - started


def test_readers_see_new_events_within_seconds_and_a_stop_ends_follow_cleanly(
        tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=4)
    db = tmp_path / "live.duckdb"
    stop = threading.Event()
    result: list[ProjectionReport] = []
    done: list[int] = []
    follower = threading.Thread(target=lambda: result.append(follow(
        log, db, progress=done.append, poll_interval=0.1, stop_event=stop,
        snapshot_every=0.5)))
    first = simulate(log, SimConfig(seed=1, tables=2, rounds=15)).events
    follower.start()
    try:
        _wait_for(db, first, within_s=30)
        # The file itself is held by the follower; readers get the snapshot.
        reader = open_for_reading(db)
        try:
            assert database_path(reader) == snapshot_path(db)
            assert reader.execute("SELECT count(*) FROM events").fetchall() == [(first,)]
        finally:
            reader.close()
        second = simulate(log, SimConfig(seed=2, tables=3, rounds=10)).events
        lag = _wait_for(db, first + second, within_s=10)
        assert lag < 5.0
    finally:
        stop.set()
        follower.join(timeout=30)
    assert not follower.is_alive()
    (report,) = result
    assert report.events == first + second and report.quarantined == 0
    assert report.positions == log.end_offsets()
    assert done[-1] == first + second  # progress counts the records covered by checkpoints
    con = duckdb.connect(str(db))  # released: a writer can open it again
    try:
        assert con.execute("SELECT sum(next_offset) FROM checkpoints").fetchall() == \
            [(first + second,)]
    finally:
        con.close()


def test_follow_waits_for_a_reader_to_release_the_database(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=2)
    db = tmp_path / "busy.duckdb"
    events = simulate(log, SimConfig(seed=3, tables=1, rounds=5)).events
    duckdb.connect(str(db)).close()  # an empty file a reader can open
    # Another process holds the file read-only for a moment, as `pitlog shoes` would.
    reader = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(db)!r}, "
         f"read_only=True); print('open', flush=True); time.sleep(1.5)"],
        stdout=subprocess.PIPE)
    assert reader.stdout is not None and reader.stdout.readline() == b"open\n"
    stop = threading.Event()
    result: list[ProjectionReport] = []
    follower = threading.Thread(target=lambda: result.append(
        follow(log, db, poll_interval=0.1, stop_event=stop, snapshot_every=0.5)))
    follower.start()
    try:
        _wait_for(db, events, within_s=30)
        # The follower could only open the file after the reader let go of it.
        assert reader.poll() == 0
    finally:
        stop.set()
        follower.join(timeout=30)
        reader.wait(timeout=30)
    assert result[0].events == events

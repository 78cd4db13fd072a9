"""Attacks on "every alert is published exactly once to its sink" (branch hkalert:
projections/alerts.py publish_pending and _own_tail, events/log/kafka/alerts.py,
events/log/embedded/alerts.py), from outside: real DuckDB, the real broker, the real sinks.
A test that fails here is a finding; one that passes is an attack the code withstood."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest
from alert_support import (
    LostReply,
    SinkAndReader,
    alert_ids,
    published_by_a_store,
    raise_in_db,
    raise_numbered,
    sinks,
)
from cli_support import run
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka_support import read_alerts
from live_support import feed, source_log
from repo_paths import REPO

from events.errors import LogError
from events.log.embedded.alerts import EmbeddedAlertLog
from events.log.embedded.log import EmbeddedLog
from events.log.kafka.alerts import KafkaAlertTopic
from events.log.registry import open_log
from events.simulation.simulator import SimConfig, simulate
from projections.alerts import alerts_after, create_tables, publish_pending
from projections.projector import project


def alert_topic(kafka_uri: str) -> tuple[str, str]:
    """(bootstrap, `<event topic>.alerts`) of a test's kafka:// URI."""
    bootstrap, topic = kafka_uri.removeprefix("kafka://").split("/", 1)
    return bootstrap, f"{topic}.alerts"


def embedded_seqs(folder: Path) -> list[int]:
    return [a["alert_seq"] for a in EmbeddedAlertLog(folder).read()]


# --- two stores of one log, both publishing --------------------------------------------------


def test_two_identical_stores_of_one_embedded_log_do_not_publish_each_alert_twice(
        tmp_path: Path) -> None:
    """Two `pitlog project --follow` of the same embedded log, both without --no-alerts (the
    case _own_tail is said to refuse: "a second store projecting the same log"). The ids are
    deterministic and both stores number alike, so both pass the tail check when they start;
    after that neither reads the tail again, and each appends the same new alerts."""
    with duckdb.connect() as a, duckdb.connect() as b:
        for con in (a, b):
            create_tables(con)
            raise_in_db(con, range(1, 4))
        sink_a, sink_b = EmbeddedAlertLog(tmp_path), EmbeddedAlertLog(tmp_path)
        assert publish_pending(a, sink_a) == 3
        assert publish_pending(b, sink_b) == 0  # b read the tail: 3 is its own alert 3
        for con in (a, b):  # the next batch of the log raises alerts 4 and 5 in both
            raise_in_db(con, range(4, 6))
        publish_pending(a, sink_a)
        try:
            publish_pending(b, sink_b)
        except LogError:
            pass  # a refusal would be fine; a second copy is not
    assert embedded_seqs(tmp_path) == [1, 2, 3, 4, 5]


@pytest.mark.kafka
def test_two_identical_stores_of_one_kafka_log_do_not_publish_each_alert_twice(
        kafka_uri: str) -> None:
    """The same race on Kafka. Fencing does its part (a's append is refused once b opened its
    producer, and a reads the tail again), but the tail read moves the cursor in memory only:
    with nothing new to publish, publish_pending returns without _set_cursor, marks the sink
    checked, and the next call starts from the stale outbox cursor (alerts 4 and 5 twice)."""
    bootstrap, topic = alert_topic(kafka_uri)
    sink_a, sink_b = KafkaAlertTopic(bootstrap, topic), KafkaAlertTopic(bootstrap, topic)
    try:
        with duckdb.connect() as a, duckdb.connect() as b:
            for con in (a, b):
                create_tables(con)
                raise_in_db(con, range(1, 4))
            assert publish_pending(a, sink_a) == 3
            assert publish_pending(b, sink_b) == 0
            for rnd in (range(4, 6), range(6, 9)):
                for con in (a, b):
                    raise_in_db(con, rnd)
                for con, sink in ((a, sink_a), (b, sink_b), (a, sink_a)):
                    try:
                        publish_pending(con, sink)
                    except LogError:
                        pass  # fenced: the tail is read again on the next call
        assert [v["alert_seq"] for _, v in read_alerts(bootstrap, topic)] == list(range(1, 9))
    finally:
        sink_a.close()
        sink_b.close()


# --- a kill between append and cursor, then a restart ----------------------------------------


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def sink_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SinkAndReader]:
    yield from sinks(request, tmp_path / "log")


def test_a_publisher_killed_between_append_and_cursor_does_not_repeat_alerts_after_restart(
        sink_factory, tmp_path: Path) -> None:
    """The case the docs promise ("A publisher killed between publishing and moving its cursor
    reads the sink's last alert_seq when it starts again and continues after it"). Alerts 1-3
    were published and recorded; 4-5 appended, the cursor still 3 (the kill). The restarted
    projector's first publish reads the tail (5) and has nothing to publish; it persists the
    cursor only when the outbox has no row yet (`if not rows and not published`), so the
    outbox still says 3 while the sink is marked checked. The next batch raises alert 6, and 4
    and 5 are published again."""
    make, read = sink_factory
    db = tmp_path / "store.duckdb"
    with duckdb.connect(str(db)) as killed:
        create_tables(killed)
        raise_in_db(killed, range(1, 4))
        sink = make()
        assert publish_pending(killed, sink) == 3  # an earlier batch: the outbox says 3
        raise_in_db(killed, range(4, 6))
        sink.append([{**a, "seqs": list(a["seqs"])} for a in alerts_after(killed, 3)])
        sink.close()  # ... and the process died before _set_cursor
    with duckdb.connect(str(db)) as restarted:  # a new process: a new connection
        sink = make()
        assert publish_pending(restarted, sink) == 0  # project()'s first publisher() call
        raise_in_db(restarted, range(6, 7))  # the next batch raises alert 6
        assert publish_pending(restarted, sink) == 1
    assert read() == [1, 2, 3, 4, 5, 6]


_KILLED_AFTER_APPEND = """
import os, signal, sys
from events.log.embedded.alerts import EmbeddedAlertLog
from events.log.registry import open_log
from projections.projector import project
append = EmbeddedAlertLog.append
def append_then_die(self, alerts, after=None):
    append(self, alerts, after)  # written and fsynced ...
    if alerts:
        os.kill(os.getpid(), signal.SIGKILL)  # ... and killed before the cursor moves
EmbeddedAlertLog.append = append_then_die
project(open_log(sys.argv[1]), sys.argv[2])
"""


# A live store's batches: each eighth of the evening (about 844 records) is one batch, so a
# store that catches up in one batch numbers its alerts otherwise. (The store restored and fed
# before it caught up keeps batches of 300: stopped while behind, it must raise only alerts the
# sink holds, so its batches must end where the live store's did; larger ones end elsewhere
# and raise rows of their own, which it then rightly publishes.)
LIVE_BATCH = 1000


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, bytes]]:
    return source_log(tmp_path_factory.mktemp("source") / "log")


def test_pitlog_project_after_a_sigkill_between_append_and_cursor_repeats_no_alert(
        tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    """End to end with a real SIGKILL: a store that published its alerts; new events; a
    projector killed right after its append to alerts.jsonl (before _set_cursor); more
    events; `pitlog project` again. Its first publish (before any batch) reads the tail and
    has nothing new; the outbox keeps the old cursor; the batches then raise new alerts and
    the killed publisher's alerts go out a second time."""
    cuts = (len(records) // 3, 2 * len(records) // 3)
    log = EmbeddedLog(tmp_path / "log")
    feed(log, records, 0, cuts[0])
    db = tmp_path / "store.duckdb"
    assert project(log, db).alerts > 0  # published, cursor recorded
    feed(log, records, cuts[0], cuts[1])
    log.close()
    uri = f"file://{tmp_path / 'log'}"
    child = subprocess.run([sys.executable, "-c", _KILLED_AFTER_APPEND, uri, str(db)],
                           cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                           capture_output=True, timeout=300)
    assert child.returncode == -signal.SIGKILL
    log = EmbeddedLog(tmp_path / "log")
    feed(log, records, cuts[1], len(records))
    log.close()
    again = run("project", "--log", uri, "--db", str(db))
    assert again.returncode == 0, again.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        stored = [(a["alert_seq"], a["alert_id"]) for a in alerts_after(con, 0, limit=10**9)]
    published = [(a["alert_seq"], a["alert_id"])
                 for a in EmbeddedAlertLog(tmp_path / "log").read()]
    assert stored
    assert published == stored


def test_a_lost_reply_followed_by_a_batch_without_alerts_does_not_repeat_them(
        sink_factory) -> None:
    """The lost reply of test_alert_publish.py, with one batch that raises nothing in between
    (most batches raise nothing): that batch's publish reads the tail, has nothing to publish,
    and leaves the outbox cursor behind; the batch after it publishes 4 and 5 again."""
    make, read = sink_factory
    sink = LostReply(make(), lost=2)
    with duckdb.connect() as con:
        create_tables(con)
        raise_in_db(con, range(1, 4))
        assert publish_pending(con, sink) == 3  # an earlier batch: the outbox says 3
        raise_in_db(con, range(4, 6))
        with pytest.raises(LogError, match="reply was lost"):
            publish_pending(con, sink)  # 4 and 5 landed; the publisher was told otherwise
        assert publish_pending(con, sink) == 0  # a batch without alerts
        raise_in_db(con, range(6, 7))
        assert publish_pending(con, sink) == 1
    assert read() == [1, 2, 3, 4, 5, 6]


# --- foreign records in the sink --------------------------------------------------------------


@pytest.mark.kafka
def test_a_foreign_record_at_the_alert_topics_tail_does_not_crash_the_projector(
        kafka_uri: str, tmp_path: Path) -> None:
    """Someone else's record (not Alert.v1 Avro: a JSON test message, a tombstone) last on
    `<topic>.alerts`. The Publisher catches LogError and duckdb.Error only; decode's EOFError
    escapes `project()` as a traceback and stops the projection."""
    bootstrap, topic = kafka_uri.removeprefix("kafka://").split("/", 1)
    KafkaAlertTopic(bootstrap, f"{topic}.alerts").close()  # created as pitlog creates it
    foreign = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        foreign.send(f"{topic}.alerts", key=b"T1", value=b'{"hello": "world"}',
                     partition=0).get(timeout=30)
    finally:
        foreign.close()
    with open_log(kafka_uri, partitions=1) as log:
        total = simulate(log, SimConfig(seed=3, tables=2, rounds=30, irregularities=0.2)).events
        report = project(log, tmp_path / "v.duckdb")  # must not raise: the sink is not the log
    assert report.events == total


def test_a_foreign_json_line_in_alerts_jsonl_does_not_crash_the_projector(
        tmp_path: Path) -> None:
    """A whole, valid JSON line that is not an alert object (`null`) last in alerts.jsonl:
    last() catches ValueError and KeyError, not the TypeError of null["alert_seq"]."""
    log = EmbeddedLog(tmp_path / "log")
    total = simulate(log, SimConfig(seed=3, tables=2, rounds=30, irregularities=0.2)).events
    (tmp_path / "log" / "alerts.jsonl").write_text("null\n")
    report = project(log, tmp_path / "v.duckdb")  # must not raise: the sink is not the log
    log.close()
    assert report.events == total


# --- a long last line ------------------------------------------------------------------------


def test_an_alert_line_longer_than_the_tail_window_is_not_published_twice(
        tmp_path: Path) -> None:
    """last() reads the file's last 64 KiB; an alert whose JSON line is longer (a long seqs
    list) is not seen there, the tail reads (0, None), and after a lost reply (or a kill
    between append and cursor) the alert is appended again."""
    with duckdb.connect() as con:
        create_tables(con)
        raise_in_db(con, range(1, 2))
        raise_in_db(con, range(2, 3), width=12_000)  # ~80 KiB of seqs
        # Published, cursor not moved (killed between the two): the next process's view.
        EmbeddedAlertLog(tmp_path).append(
            [{**a, "seqs": list(a["seqs"])} for a in alerts_after(con, 0)])
        assert publish_pending(con, EmbeddedAlertLog(tmp_path)) == 0
    assert embedded_seqs(tmp_path) == [1, 2]


def test_a_store_restored_from_a_backup_publishes_the_alerts_raised_after_it_caught_up(
        tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    """A store fed live (small batches, alerts published), backed up early, restored after
    more alerts were published, then caught up (one projection of the rest) and fed again.
    The docstring of _own_tail names this case: the restored store is refused while it is
    older than the sink; once it has caught up it must publish again, each alert once. But
    alert_seq numbers alerts in the order batches raise them, so a catch-up in other batches
    than the live run's numbers them otherwise, the sink's last (seq, id) never matches, and
    every later alert is held back for good (a warning per batch)."""
    cuts = [len(records) * k // 8 for k in range(9)]
    log = EmbeddedLog(tmp_path / "log")
    db, backup = tmp_path / "store.duckdb", tmp_path / "backup.duckdb"
    with duckdb.connect(str(db)) as con:
        for k in range(6):
            feed(log, records, cuts[k], cuts[k + 1])
            project(log, con, batch_size=LIVE_BATCH)
            if k == 1:
                con.execute("CHECKPOINT")
                backup.write_bytes(db.read_bytes())
    db.write_bytes(backup.read_bytes())  # restored
    with duckdb.connect(str(db)) as con:
        project(log, con)  # caught up with the log the sink was published from
        for k in range(6, 8):
            feed(log, records, cuts[k], cuts[k + 1])
            project(log, con, batch_size=LIVE_BATCH)
        stored = [a["alert_id"] for a in alerts_after(con, 0, limit=10**9)]
    log.close()
    published = [a["alert_id"] for a in EmbeddedAlertLog(tmp_path / "log").read()]
    assert len(published) == len(set(published))  # none twice
    assert set(published) == set(stored)  # none held back


@pytest.mark.kafka
def test_the_tail_of_an_alert_topic_whose_head_was_deleted_is_read(kafka_uri: str) -> None:
    """Records before the tail deleted (retention on a topic that existed before pitlog, or
    kafka-delete-records). last() seeks to end-16, end-128, ... 0: each seek below the log
    start offset is reset to the end (auto_offset_reset), so no record is found and the tail
    reads (0, None); a publisher killed between append and cursor then appends again."""
    bootstrap, topic = alert_topic(kafka_uri)
    sink = KafkaAlertTopic(bootstrap, topic)
    try:
        with duckdb.connect() as con:
            create_tables(con)
            raise_in_db(con, range(1, 16))
            assert publish_pending(con, sink) == 15
            raise_in_db(con, range(16, 21))
            sink.append([{**a, "seqs": list(a["seqs"])} for a in alerts_after(con, 15)])
            # ... killed before _set_cursor; the head of the topic is then deleted
            tp = TopicPartition(topic, 0)
            consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
            end = consumer.end_offsets([tp])[tp]
            consumer.close()
            admin = KafkaAdminClient(bootstrap_servers=bootstrap)
            try:
                admin.delete_records({tp: end - 2})  # keeps alert 20 and its commit marker
            finally:
                admin.close()
            assert [v["alert_seq"] for _, v in read_alerts(bootstrap, topic)] == [20]
            restarted = KafkaAlertTopic(bootstrap, topic)
            try:
                assert restarted.last()[0] == 20
            finally:
                restarted.close()
    finally:
        sink.close()


# --- attacks the code withstood ----------------------------------------------------------------


def test_a_torn_last_line_of_alerts_jsonl_is_cut_and_its_alert_published_once(
        tmp_path: Path) -> None:
    """Killed mid-write: alert 4's line cut short (never reported as published). The restart
    cuts it, reads the tail (3) and publishes 4 and 5, whole, once. (Withstood.)"""
    db = tmp_path / "store.duckdb"
    with duckdb.connect(str(db)) as con:
        create_tables(con)
        raise_in_db(con, range(1, 4))
        assert publish_pending(con, EmbeddedAlertLog(tmp_path)) == 3
        raise_in_db(con, range(4, 6))
    with (tmp_path / "alerts.jsonl").open("ab") as f:
        f.write(b'{"alert_id": "A0000000000000000000000004", "alert_seq": 4, "co')
    with duckdb.connect(str(db)) as con:
        assert publish_pending(con, EmbeddedAlertLog(tmp_path)) == 2
    assert embedded_seqs(tmp_path) == [1, 2, 3, 4, 5]
    assert (tmp_path / "alerts.jsonl").read_bytes().count(b"\n") == 5


@pytest.mark.kafka
def test_more_alerts_than_one_transaction_holds_are_published_in_order_once(
        kafka_uri: str) -> None:
    """2,500 pending alerts (a catch-up after the broker was down): three transactions of at
    most 1,000 (alerts_after's limit), read back by a read_committed consumer in order.
    (Withstood.)"""
    bootstrap, topic = alert_topic(kafka_uri)
    sink = KafkaAlertTopic(bootstrap, topic)
    try:
        with duckdb.connect() as con:
            create_tables(con)
            raise_in_db(con, range(1, 2501))
            assert publish_pending(con, sink) == 2500
            assert publish_pending(con, sink) == 0
    finally:
        sink.close()
    assert [v["alert_seq"] for _, v in read_alerts(bootstrap, topic)] == list(range(1, 2501))


# --- stores that did not number the sink: restored, rebuilt ----------------------------------


def test_a_restored_store_behind_the_sink_publishes_nothing_it_holds_across_a_restart(
        sink_factory, tmp_path: Path) -> None:
    """The sink holds alerts 1-8; the store, restored from a backup taken after alert 3,
    raises 4-8 again in other batches (numbered otherwise) and is restarted before it has
    caught up. Not one of 4-8 goes out again; 9, 10 and 11 (new) go out once each, and 11 on
    the ordinary path (nothing held any more)."""
    make, read = sink_factory
    live, backup = tmp_path / "live.duckdb", tmp_path / "backup.duckdb"
    with duckdb.connect(str(live)) as con:
        create_tables(con)
        raise_in_db(con, range(1, 4))
        assert publish_pending(con, make()) == 3
    backup.write_bytes(live.read_bytes())
    with duckdb.connect(str(live)) as con:
        raise_in_db(con, range(4, 9))
        assert publish_pending(con, make()) == 5
    live.write_bytes(backup.read_bytes())  # restored
    with duckdb.connect(str(live)) as con:
        assert publish_pending(con, make()) == 0  # behind: its alerts 1-3 are in the sink
        raise_numbered(con, {5: 4, 4: 5})
        assert publish_pending(con, make()) == 0
    with duckdb.connect(str(live)) as con:  # restarted, still behind
        sink = make()
        assert publish_pending(con, sink) == 0
        raise_numbered(con, {7: 6, 9: 7, 6: 8})
        assert publish_pending(con, sink) == 1  # 9; 6 and 7 are in the sink
        raise_numbered(con, {8: 9, 10: 10})
        assert publish_pending(con, sink) == 1  # caught up: 10
        assert con.execute("SELECT count(*) FROM alerts_held").fetchall() == [(0,)]
        raise_numbered(con, {11: 11})
        assert publish_pending(con, sink) == 1
    assert read("alert_id") == alert_ids(range(1, 12))


def test_a_rebuilt_store_killed_between_publish_and_cursor_repeats_nothing(
        sink_factory, tmp_path: Path) -> None:
    """A rebuilt store publishes the alerts the sink lacks (6, 7) and the reply is lost (the
    process dies before its cursor moves). Restarted, with alert 8 new, it publishes 8 alone:
    the sink's tail is its own alert 7, and the ids it holds for the sink are still held."""
    make, read = sink_factory
    published_by_a_store(make(), range(1, 6))
    db = tmp_path / "rebuilt.duckdb"
    with duckdb.connect(str(db)) as con:
        create_tables(con)
        raise_numbered(con, {6: 1, 1: 2, 2: 3, 7: 4})
        with pytest.raises(LogError, match="reply was lost"):
            publish_pending(con, LostReply(make()))
    assert read("alert_id") == alert_ids(range(1, 8))  # 6 and 7 landed
    with duckdb.connect(str(db)) as con:
        raise_numbered(con, {4: 5, 3: 6, 5: 7, 8: 8})
        assert publish_pending(con, make()) == 1
    assert read("alert_id") == alert_ids(range(1, 9))


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def fed_log(request: pytest.FixtureRequest,
            tmp_path: Path) -> Iterator[tuple[EmbeddedLog, Callable[[], list[str]]]]:
    """(an empty event log, a reader of the alert_ids published beside it, as a foreign
    reader reads them)."""
    if request.param == "embedded":
        log = EmbeddedLog(tmp_path / "log")

        def published() -> list[str]:
            return [a["alert_id"] for a in EmbeddedAlertLog(tmp_path / "log").read()]
    else:
        kafka_uri = request.getfixturevalue("kafka_uri")
        log = open_log(kafka_uri, partitions=3)
        bootstrap, topic = alert_topic(kafka_uri)

        def published() -> list[str]:
            return [a["alert_id"] for _, a in read_alerts(bootstrap, topic)]
    yield log, published
    log.close()


def _stored_ids(db: Path) -> list[str]:
    with duckdb.connect(str(db), read_only=True) as con:
        return [a["alert_id"] for a in alerts_after(con, 0, limit=10**9)]


def test_a_store_rebuilt_from_the_log_publishes_each_alert_the_sink_lacks_once(
        fed_log, tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    """A live store publishes (small batches); the log grows; a new store file is projected
    from the same log (one batch) and then fed live. The sink keeps what it had, then gets
    every alert of the new store it lacked, once, in the new store's alert_seq order."""
    log, published = fed_log
    cuts = [len(records) * k // 8 for k in range(9)]
    for k in range(5):
        feed(log, records, cuts[k], cuts[k + 1])
        project(log, tmp_path / "live.duckdb", batch_size=LIVE_BATCH)
    before = published()
    assert before == _stored_ids(tmp_path / "live.duckdb")
    rebuilt = tmp_path / "rebuilt.duckdb"
    feed(log, records, cuts[5], cuts[6])
    project(log, rebuilt)
    for k in range(6, 8):
        feed(log, records, cuts[k], cuts[k + 1])
        project(log, rebuilt, batch_size=LIVE_BATCH)
    stored, after = _stored_ids(rebuilt), published()
    assert len(after) > len(before)  # the rebuilt store published
    assert after[:len(before)] == before
    assert after[len(before):] == [i for i in stored if i not in set(before)]


class _Killed(Exception):
    pass


def test_a_restored_store_fed_before_it_caught_up_publishes_each_alert_once(
        fed_log, tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    """A store backed up early, restored after more alerts were published, the log fed again
    before the store caught up, the store stopped (an exception after its third batch) while
    still behind, then run again. Behind, it publishes nothing the sink holds (what it may
    publish is new: a partition read ahead reaches the events fed after the restore, as on a
    shorter evening); caught up, each alert the sink lacks goes out once, in the store's order;
    fed again, it publishes as before."""
    log, published = fed_log
    cuts = [len(records) * k // 8 for k in range(9)]
    db, backup = tmp_path / "store.duckdb", tmp_path / "backup.duckdb"
    for k in range(5):  # one batch a feed: the batches that matter come after the restore
        feed(log, records, cuts[k], cuts[k + 1])
        project(log, db)
        if k == 1:
            backup.write_bytes(db.read_bytes())
    before = published()
    db.write_bytes(backup.read_bytes())  # restored
    feed(log, records, cuts[5], cuts[6])
    batches = 0

    def killed_after_three(done: int) -> None:
        nonlocal batches
        batches += 1
        if batches == 3:
            raise _Killed

    with pytest.raises(_Killed):
        project(log, db, batch_size=300, progress=killed_after_three)
    behind = published()  # behind: no alert the sink holds goes out again, none twice,
    assert behind[:len(before)] == before and not set(behind[len(before):]) & set(before)
    assert len(set(behind)) == len(behind)
    assert set(behind[len(before):]) <= set(_stored_ids(db))  # and none the store lacks
    project(log, db, batch_size=300)
    for k in range(6, 8):
        feed(log, records, cuts[k], cuts[k + 1])
        project(log, db)
    stored, after = _stored_ids(db), published()
    assert len(after) > len(before)
    assert after[:len(before)] == before
    assert after[len(before):] == [i for i in stored if i not in set(before)]


def test_a_torn_line_another_publisher_left_does_not_stop_a_running_publisher(
        tmp_path: Path) -> None:
    """Two stores publishing one embedded log at once (docs/live-detection.md: they stay
    exact): store A has published alerts 1-3 and runs on with its sink; store B's publisher is
    killed mid-write, its line of alert 4 cut short. A's next publish must cut the torn line
    (no publisher is writing while A holds the file's lock) and append 4 and 5 whole. Was:
    A's sink had cut a torn tail once, when it opened, so A's last() read B's torn line and
    raised LogError ("the last line is not an alert") at every publish until A restarted."""
    with duckdb.connect() as a:
        create_tables(a)
        raise_in_db(a, range(1, 4))
        sink_a = EmbeddedAlertLog(tmp_path)
        assert publish_pending(a, sink_a) == 3
        with (tmp_path / "alerts.jsonl").open("ab") as f:  # B killed mid-write
            f.write(b'{"alert_id": "A0000000000000000000000004", "alert_seq": 4, "co')
        raise_in_db(a, range(4, 6))
        assert publish_pending(a, sink_a) == 2
    assert embedded_seqs(tmp_path) == [1, 2, 3, 4, 5]
    assert (tmp_path / "alerts.jsonl").read_bytes().count(b"\n") == 5


class _AnotherPublisherFirst:
    """A real sink whose first append lets another publisher append first (`first`), as when
    two stores publish one log at once and the other's append lands between this publisher's
    read of the sink and its own append."""

    def __init__(self, sink: EmbeddedAlertLog, first: Callable[[], None]) -> None:
        self.sink, self.name, self.first = sink, sink.name, first

    def append(self, alerts, after=None) -> None:  # noqa: ANN001 (AlertSink.append)
        if self.first is not None:
            first, self.first = self.first, None
            first()
        self.sink.append(alerts, after)

    def last(self) -> tuple[int, str | None]:
        return self.sink.last()

    def ids(self) -> set[str]:
        return self.sink.ids()


def test_a_rebuilt_store_whose_append_another_store_beat_publishes_what_the_sink_lacks(
        tmp_path: Path) -> None:
    """Store A publishes alerts 1-3 (its alert_seqs 1-3). Store B, rebuilt, numbers them
    otherwise: alert 4 (which A has not raised) first, then 1, 2, alert 6 as its alert_seq 4,
    and 3. B reads the sink (tail A's 3, not B's 3: it holds ids 1-3, cursor 0); before B's
    append lands, A appends its alert_seq 4, alert 6, so B's append is refused. B's next
    publish reads the tail (4, alert 6): B's own alert_seq 4 is alert 6 too, but B has not
    appended anything, so that says nothing of B's alerts below 4. Was: B moved its cursor to
    4 and never published alert 4 (its alert_seq 1)."""
    with duckdb.connect() as a, duckdb.connect() as b:
        for con in (a, b):
            create_tables(con)
        raise_in_db(a, range(1, 4))
        assert publish_pending(a, EmbeddedAlertLog(tmp_path)) == 3
        raise_numbered(b, {4: 1, 1: 2, 2: 3, 6: 4, 3: 5})

        def a_publishes_alert_6() -> None:
            raise_numbered(a, {6: 4})
            assert publish_pending(a, EmbeddedAlertLog(tmp_path)) == 1

        sink_b = _AnotherPublisherFirst(EmbeddedAlertLog(tmp_path), a_publishes_alert_6)
        with pytest.raises(LogError, match="another publisher appended since"):
            publish_pending(b, sink_b)
        publish_pending(b, sink_b)
    assert sorted(a["alert_id"] for a in EmbeddedAlertLog(tmp_path).read()) == sorted(
        alert_ids([1, 2, 3, 6, 4]))

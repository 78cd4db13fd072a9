"""Helpers for the tests that need a real Kafka broker (tools/kafka_broker.py), and content
digests of a DuckDB file to compare projections.

No mocks (STYLE, idiom 9): every Kafka test talks to a real single-node KRaft broker, either the
one CI started (PITLOG_KAFKA_BOOTSTRAP) or one this pytest session starts for itself.
"""

from __future__ import annotations

import io
import json
import os
import re
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb
import fastavro
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from repo_paths import REPO

from projections import id_index, replay

# tools.kafka_broker, like test_kafka_broker.py: the whole session shares one registry of the
# JVMs it launched.
from tools import kafka_broker as kb

BOOTSTRAP_ENV = "PITLOG_KAFKA_BOOTSTRAP"
# Columns that differ between two correct projections of the same events: where a record sits
# in the log (partitioners differ between backends) and when a record was quarantined.
POSITION_COLUMNS = ("log_partition", "log_offset")
WALL_CLOCK_COLUMNS = ("quarantined_at", "raised_at")  # when a row was written, not what


@contextmanager
def session_bootstrap(state_dir: Path) -> Iterator[str]:
    """The broker CI started (PITLOG_KAFKA_BOOTSTRAP), else a fresh one in `state_dir` that is
    stopped on exit."""
    reused = os.environ.get(BOOTSTRAP_ENV)
    if reused:
        yield reused
        return
    broker = kb.start_broker(state_dir, timeout_s=120)
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


@contextmanager
def dedicated_broker(state_dir: Path) -> Iterator[kb.Broker]:
    """A broker of the test's own, for tests that stop or restart it."""
    broker = kb.start_broker(state_dir, timeout_s=120)
    try:
        yield broker
    finally:
        broker.stop()


def topic_for(test_name: str) -> str:
    """A fresh topic per test: its name plus a random suffix (STYLE, idiom 10). Kafka allows
    [a-zA-Z0-9._-] up to 249 characters."""
    base = re.sub(r"[^a-zA-Z0-9._-]+", "-", test_name).strip("-")[:180]
    return f"pitlog.test.{base}.{uuid.uuid4().hex[:8]}"


def read_alerts(bootstrap: str, topic: str) -> list[tuple[bytes, dict]]:
    """(key, alert) of every committed record of an alert topic, read as a consumer the project
    did not write reads it: bare kafka-python, read_committed (as for any transactional topic),
    and fastavro with the schema file."""
    schema = fastavro.parse_schema(json.loads(
        (REPO / "schemas" / "alerts" / "Alert.v1.avsc").read_text()))
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             isolation_level="read_committed")
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        out: list[tuple[bytes, dict]] = []
        deadline = time.monotonic() + 120
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                out.extend((r.key, fastavro.schemaless_reader(io.BytesIO(r.value), schema))
                           for r in records if r.offset < end)
        assert consumer.position(tp) >= end, f"{topic} not read to its end, offset {end}"
        return out
    finally:
        consumer.close()


def produce_raw(bootstrap: str, topic: str,
                items: Sequence[tuple[bytes | None, bytes]]) -> list[tuple[int, int]]:
    """Write with bare kafka-python, as a foreign or broken producer would; (partition, offset)
    of each."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        futures = [producer.send(topic, key=k, value=v) for k, v in items]
        producer.flush(timeout=60)
        return [(m.partition, m.offset) for m in (f.get(timeout=0) for f in futures)]
    finally:
        producer.close()


def relations(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every table and view the projector's DDL made in the main schema, sorted."""
    return [name for (name,) in con.execute(
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = 'main' ORDER BY table_name").fetchall()]


def relation_digest(con: duckdb.DuckDBPyConnection, relation: str,
                    columns: Sequence[str]) -> tuple[int, str]:
    """(row count, MD5 over the sorted MD5s of each row's `columns`) of a table, view or
    subquery: the same contents give the same digest, whatever the row order."""
    cols = ", ".join(f'"{c}"' for c in columns)
    ((count, digest),) = con.execute(
        f"SELECT count(*), coalesce(md5(string_agg(h, '' ORDER BY h)), '') FROM "
        f"(SELECT md5(CAST(row({cols}) AS VARCHAR)) AS h FROM {relation})").fetchall()
    return int(count), str(digest)


# alert_seq is the alerts' raise order, which follows where batches fell (a kill, a restart, a
# partitioning); the alert ids, codes and proofs are what must match.
COMPARED_APART = (*WALL_CLOCK_COLUMNS, "alert_seq")
# A store's own key (projections/id_index.py: random per store, so that no store reads another
# store's index of ids): two stores of the same log differ there by design.
STORE_KEY = (id_index.KEY,)
# The kept replays (projections/replay_kept.py): which shoes a follower has kept depends on when
# it caught up, so two stores of one log hold different ones; live_support.assert_kept_replays_hold
# checks instead that every kept replay is what its queries give.
KEPT_REPLAYS = replay.KEPT


# The running sums' one DOUBLE (projections/running_sums.py): a floating sum depends on the
# order of its terms, so a store kept batch by batch (or killed and restarted) and one built
# whole agree to about 1e-16 of it, not bit for bit; sums_agree compares it.
SUMMED_IN_ANY_ORDER = ("sum_sq_deviation",)


def sums_agree(a: Path, b: Path) -> int:
    """How many groups of two stores' running sums differ in sum_sq_deviation by more than
    1e-9 of its size (the other columns are in content_digests), or are in one store only."""
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
        con.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
        keys = " AND ".join(f"x.{k} IS NOT DISTINCT FROM y.{k}"
                            for k in ("table_id", "gaming_day", "shift", "theo_den"))
        ((off,),) = con.execute(
            f"SELECT count(*) FROM a.shift_money AS x FULL JOIN b.shift_money AS y ON {keys} "
            f"WHERE x.table_id IS NULL OR y.table_id IS NULL OR abs(x.sum_sq_deviation - "
            f"y.sum_sq_deviation) > 1e-9 * greatest(abs(y.sum_sq_deviation), 1)").fetchall()
        return int(off)
    finally:
        con.close()


def content_digests(db: Path, *, exclude: Sequence[str] = COMPARED_APART,
                    skip: Sequence[str] = ()) -> dict[str, tuple[int, str]]:
    """(row count, MD5 over the sorted MD5s of each row) of every table and view, without the
    `exclude`d columns and SUMMED_IN_ANY_ORDER: equal digests mean equal contents, whatever the
    row order."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")  # timestamps render the same in every session
        out: dict[str, tuple[int, str]] = {}
        for name in relations(con):
            if name in skip or name in STORE_KEY or name in KEPT_REPLAYS:
                continue
            columns = [c for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
                [name]).fetchall() if c not in exclude and c not in SUMMED_IN_ANY_ORDER]
            count, digest = relation_digest(con, f'"{name}"', columns)
            out[name] = (count, digest)
        return out
    finally:
        con.close()

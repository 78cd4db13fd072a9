"""How long after a Kafka broker restart an alert (or an event) reaches its topic (session 42).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_alert_restart.py [--dir STATE] [--repeats 3]
        [--modes alert-during,alert-after,events-after,fenced-during]

PYTHONPATH picks the tree measured (a worktree of an older commit measures that commit). It
starts a broker of its own in --dir (default: a temporary folder; never the shared one) and,
per repeat and mode, stops it, waits, starts it again on the same ports and data, and prints
the milliseconds from the moment the restarted broker is ready (tools/kafka_broker.py's
readiness probe answered) to:

- alert-during: an alert raised while the broker is down (down 5 s), published as the
  projector does (publish_pending, again 0.5 s after a failure), committed on the alert topic
  (`acked`: publish_pending returned; `seen`: a read_committed consumer opened once the broker
  was ready read it);
- alert-after: an alert raised once the broker is back after 35 s down (long enough for
  kafka-python's reconnect backoff to reach its maximum);
- events-after: an event appended by the plain (idempotent) producer after 35 s down;
- fenced-during: an event appended with fencing=true (transactional producers) while the
  broker is down (down 5 s), acknowledged once it is back.

A measurement, not a test (no timings in tests): tests/kafka/test_kafka_restart.py asserts the
behaviour.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import duckdb  # noqa: E402
import fastavro  # noqa: E402
from alert_support import raise_in_db  # noqa: E402 - tests/ is not a package
from kafka import KafkaConsumer, TopicPartition  # noqa: E402

from events.errors import LogError  # noqa: E402
from events.log.kafka.alerts import KafkaAlertTopic  # noqa: E402
from events.log.registry import open_log  # noqa: E402
from events.recording.recorder import Recorder  # noqa: E402
from events.reddog import model  # noqa: E402
from projections.alerts import create_tables, publish_pending  # noqa: E402
from tools import kafka_broker as kb  # noqa: E402

START = datetime(2026, 12, 6, 21, 0, tzinfo=UTC)


def _watch(bootstrap: str, topic: str, want: int, seen: list[float]) -> None:
    """Appends the moment the alert topic's committed records number `want`."""
    schema = fastavro.parse_schema(json.loads(
        (ROOT / "schemas" / "alerts" / "Alert.v1.avsc").read_text()))
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             isolation_level="read_committed")
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        got = 0
        deadline = time.monotonic() + 300
        while got < want and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=50).values():
                for r in records:
                    fastavro.schemaless_reader(io.BytesIO(r.value), schema)
                    got += 1
        seen.append(time.monotonic())
    finally:
        consumer.close()


def _publish(con: duckdb.DuckDBPyConnection, sink: KafkaAlertTopic, acked: list[float],
             tries: list[int]) -> None:
    while True:  # as projections.alerts.Publisher at each commit: a failure waits for the next
        tries[0] += 1
        try:
            publish_pending(con, sink)
            acked.append(time.monotonic())
            return
        except LogError:
            time.sleep(0.5)


def alert(state: Path, down_s: float, during: bool) -> dict[str, Any]:
    bootstrap = kb.start_broker(state).bootstrap
    topic = f"pitlog.bench.restart.{time.time_ns()}.alerts"
    with duckdb.connect() as con:
        create_tables(con)
        raise_in_db(con, range(1, 2))
        sink = KafkaAlertTopic(bootstrap, topic)
        publish_pending(con, sink)
        acked: list[float] = []
        tries = [0]
        kb.stop_broker(state)
        publisher = None
        if during:
            raise_in_db(con, range(2, 3))
            publisher = threading.Thread(target=_publish, args=(con, sink, acked, tries))
            publisher.start()
        time.sleep(down_s)
        kb.resume_broker(state)
        ready = time.monotonic()
        seen: list[float] = []
        watcher = threading.Thread(target=_watch, args=(bootstrap, topic, 2, seen))
        watcher.start()
        if not during:
            raise_in_db(con, range(2, 3))
            _publish(con, sink, acked, tries)
        if publisher is not None:
            publisher.join()
        watcher.join()
        sink.close()
    return {"acked_ms": round((acked[0] - ready) * 1000),
            "seen_ms": round((seen[0] - ready) * 1000), "publish_calls": tries[0]}


def events(state: Path, down_s: float, during: bool, fenced: bool) -> dict[str, Any]:
    bootstrap = kb.start_broker(state).bootstrap
    uri = f"kafka://{bootstrap}/pitlog.bench.restart.{time.time_ns()}?partitions=1" + \
        ("&fencing=true" if fenced else "")
    acked: list[float] = []
    tries = [0]
    with open_log(uri) as log:
        recorder = Recorder(log, heads={}, batch_size=10**9)  # flushed by hand

        def record(n: int) -> None:
            recorder.record("T01", model.DealerTappedIn(dealer_id=f"D{n}"), shoe_id=None,
                            round_no=None, actor="pit", occurred_at=START + timedelta(seconds=n))

        def flush() -> None:
            while True:
                tries[0] += 1
                try:
                    recorder.flush()
                    acked.append(time.monotonic())
                    return
                except LogError:
                    time.sleep(0.5)

        record(1)
        recorder.flush()
        kb.stop_broker(state)
        writer = None
        if during:
            record(2)
            writer = threading.Thread(target=flush)
            writer.start()
        time.sleep(down_s)
        kb.resume_broker(state)
        ready = time.monotonic()
        if not during:
            record(2)
            flush()
        if writer is not None:
            writer.join()
    return {"acked_ms": round((acked[0] - ready) * 1000), "flush_calls": tries[0]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", default="alert-during,alert-after,events-after,fenced-during")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state = (args.dir or Path(tmp)).absolute()
        kb.start_broker(state)
        try:
            for mode in args.modes.split(","):
                for i in range(args.repeats):
                    if mode == "alert-during":
                        out = alert(state, 5, during=True)
                    elif mode == "alert-after":
                        out = alert(state, 35, during=False)
                    elif mode == "events-after":
                        out = events(state, 35, during=False, fenced=False)
                    else:
                        out = events(state, 5, during=True, fenced=True)
                    print(json.dumps({"mode": mode, "repeat": i + 1, **out}), flush=True)
        finally:
            if args.dir is None:
                kb.stop_broker(state)


if __name__ == "__main__":
    main()

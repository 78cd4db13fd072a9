"""Publishing alerts to Kafka: pitlog's transactional publish (events/log/kafka/alerts.py, one
transaction per batch, exactly once across kills) against the bare kafka-python idempotent
producer with the same settings (send + flush: what the publish cost before transactions),
interleaved in one run on one broker, wall time per batch of alerts.

    PITLOG_KAFKA_BOOTSTRAP=127.0.0.1:9092 .venv/bin/python benchmarks/bench_alert_publish.py \\
        --batches 100 --alerts 5

With `--old-tree DIR` (a checkout of an older pitlog, e.g. `git worktree add /tmp/old main`) it
also times `publish_pending` itself per batch, the older tree's projections/alerts.py (and its
embedded alert log) beside this tree's, interleaved, on the embedded sink and on the Kafka topic
(the steady path: the sink's tail is the store's own); and once the path of a store that did not
number its sink (a rebuilt store: the sink's ids read, nothing published again), on a sink of
`--held` alerts.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
from kafka import KafkaProducer

from events.log.alerts import Alert, AlertSink
from events.log.embedded.alerts import EmbeddedAlertLog
from events.log.kafka.alerts import KafkaAlertTopic, encode
from events.log.kafka.settings import producer_settings
from projections import alerts as this_tree

AT = datetime(2026, 12, 1, 21, 14, tzinfo=UTC)


def alert(seq: int) -> Alert:
    return {"alert_seq": seq, "alert_id": f"A{seq:024x}", "code": "MISSING_BURN",
            "severity": "high", "table_id": f"T{seq % 200:03d}", "shoe_id": "S1",
            "round_no": seq, "seqs": [seq, seq + 1], "explanation": "a burn is missing",
            "rule": "13:69F-34.16(d)", "occurred_at": AT, "raised_at": AT}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default=os.environ.get("PITLOG_KAFKA_BOOTSTRAP"))
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--alerts", type=int, default=5, help="alerts per batch")
    parser.add_argument("--old-tree", help="an older pitlog checkout to time beside")
    parser.add_argument("--held", type=int, default=20_000, help="sink size, rebuilt store")
    args = parser.parse_args()
    if args.old_tree:
        publish_pending(args)
    run = uuid.uuid4().hex[:8]
    sink = KafkaAlertTopic(args.bootstrap, f"bench.alerts.tx.{run}")
    plain_topic = KafkaAlertTopic(args.bootstrap, f"bench.alerts.plain.{run}").topic
    plain = KafkaProducer(bootstrap_servers=args.bootstrap, **producer_settings(60.0))

    def bare(alerts: list[Alert]) -> None:
        futures = [plain.send(plain_topic, key=a["table_id"].encode(), value=encode(a),
                              partition=0) for a in alerts]
        plain.flush()
        for f in futures:
            f.get(timeout=0)

    ways = {"transactional (pitlog)": sink.append, "idempotent, no transaction (bare)": bare}
    times: dict[str, list[float]] = {w: [] for w in ways}
    seq = 0
    for _ in range(args.batches + 1):  # the first round warms up both (connections, topics)
        for way, publish in ways.items():
            batch = [alert(seq + k) for k in range(args.alerts)]
            seq += args.alerts
            started = time.perf_counter()
            publish(batch)
            times[way].append(time.perf_counter() - started)
    sink.close()
    plain.close()
    base = statistics.median(times["idempotent, no transaction (bare)"][1:])
    print(f"{args.batches} batches of {args.alerts} alerts, interleaved; wall ms per batch")
    for way, t in times.items():
        t = sorted(t[1:])
        p50, p95 = statistics.median(t), t[int(len(t) * 0.95) - 1]
        print(f"  {way:36s} p50 {p50 * 1000:6.1f}  p95 {p95 * 1000:6.1f}  "
              f"p50 ratio {p50 / base:.2f}x")


def _raise(con: duckdb.DuckDBPyConnection, seqs: range) -> None:
    con.executemany("INSERT INTO alerts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [list(alert(s).values()) for s in seqs])


def _load(path: Path) -> Any:
    """A module of the older tree, by its file (its own imports resolve in this tree)."""
    spec = importlib.util.spec_from_file_location(f"old_{path.stem}_{len(str(path))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def publish_pending(args: argparse.Namespace) -> None:
    old = _load(Path(args.old_tree, "projections", "alerts.py"))
    old_embedded = _load(Path(args.old_tree, "events", "log", "embedded", "alerts.py"))
    run = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory() as tmp:
        sinks: dict[str, dict[str, AlertSink]] = {
            "embedded": {"old": old_embedded.EmbeddedAlertLog(Path(tmp, "old")),
                         "new": EmbeddedAlertLog(Path(tmp, "new"))},
            "kafka": {w: KafkaAlertTopic(args.bootstrap, f"bench.alerts.pp.{w}.{run}")
                      for w in ("old", "new")}}
        for folder in ("old", "new"):
            Path(tmp, folder).mkdir()
        for kind, pair in sinks.items():
            cons = {w: duckdb.connect() for w in pair}
            mods = {"old": old, "new": this_tree}
            times: dict[str, list[float]] = {w: [] for w in pair}
            for con in cons.values():
                this_tree.create_tables(con)
            seq = 0
            for _ in range(args.batches + 1):
                for w, con in cons.items():
                    _raise(con, range(seq + 1, seq + 1 + args.alerts))
                    started = time.perf_counter()
                    assert mods[w].publish_pending(con, pair[w]) == args.alerts
                    times[w].append(time.perf_counter() - started)
                seq += args.alerts
            base = statistics.median(times["old"][1:])
            print(f"publish_pending, {kind} sink, {args.batches} batches of {args.alerts} "
                  f"alerts, interleaved; wall ms per batch")
            for w, t in times.items():
                t = sorted(t[1:])
                p50, p95 = statistics.median(t), t[int(len(t) * 0.95) - 1]
                print(f"  {w + (' (--old-tree)' if w == 'old' else ' (this tree)'):24s} "
                      f"p50 {p50 * 1000:6.2f}  p95 {p95 * 1000:6.2f}  "
                      f"p50 ratio {p50 / base:.2f}x")
            # A rebuilt store meets a sink of --held alerts it numbered otherwise: it reads
            # the sink's ids and publishes nothing again.
            sink = pair["new"]
            with duckdb.connect() as first, duckdb.connect() as rebuilt:
                this_tree.create_tables(first)
                this_tree.create_tables(rebuilt)
                _raise(first, range(10**6, 10**6 + args.held))
                assert this_tree.publish_pending(first, sink) == args.held
                _raise(rebuilt, range(10**6 + 1, 10**6 + args.held + 1))  # numbered otherwise
                rebuilt.execute("UPDATE alerts SET alert_seq = alert_seq + 1")
                started = time.perf_counter()
                assert this_tree.publish_pending(rebuilt, sink) == 1
                took = time.perf_counter() - started
            print(f"  a rebuilt store's first publish, the sink holding {args.held + seq:,} "
                  f"alerts: {took * 1000:.0f} ms (once)")
            for s in pair.values():
                s.close()
            for con in cons.values():
                con.close()


if __name__ == "__main__":
    main()

"""Publishing alerts to Kafka: pitlog's transactional publish (events/log/kafka/alerts.py, one
transaction per batch, exactly once across kills) against the bare kafka-python idempotent
producer with the same settings (send + flush: what the publish cost before transactions),
interleaved in one run on one broker, wall time per batch of alerts.

    PITLOG_KAFKA_BOOTSTRAP=127.0.0.1:9092 .venv/bin/python benchmarks/bench_alert_publish.py \\
        --batches 100 --alerts 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from datetime import UTC, datetime

from kafka import KafkaProducer

from events.log.alerts import Alert
from events.log.kafka.alerts import KafkaAlertTopic, encode
from events.log.kafka.settings import producer_settings

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
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()

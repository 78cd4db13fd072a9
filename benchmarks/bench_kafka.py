"""Kafka throughput through pitlog against bare kafka-python, measured in one run.

    python benchmarks/bench_kafka.py [--messages 200000] [--repeats 3] [--bootstrap HOST:PORT]

The messages are real simulator events (the same bytes and keys for both sides). Per repeat:

- produce: `KafkaLog.append` in batches of 2000 (the recorder's batch) into a fresh topic,
  against a bare `KafkaProducer` with the same settings
  (events.log.kafka.settings.producer_settings)
  sending the same batches into another fresh topic, each batch flushed and every future
  checked, as `append` does: the same durability point.
- consume: `KafkaLog.read` against a bare `KafkaConsumer` with the same settings
  (consumer_settings) doing assign + seek + poll up to the end offset, over the same topic.

This machine is shared, so the two sides take turns at a fine grain (every tenth of the
messages when producing, every partition when consuming, who goes first alternating) and see
the same load. Reported: messages/s per side (median of the repeats) and the median of the
per-repeat ratios pitlog/bare. Starts its own broker with tools/kafka_broker.py unless
--bootstrap is given. Prints a markdown table and writes JSON to benchmarks/out/bench_kafka.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient

from events.log.embedded.log import EmbeddedLog
from events.log.kafka.log import KafkaLog
from events.log.kafka.settings import TOPIC_CONFIG, consumer_settings, producer_settings
from events.simulation.simulator import SimConfig, simulate

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "out" / "bench_kafka.json"
BATCH = 2000  # events.recording.recorder.Recorder's default batch
Items = list[tuple[bytes, bytes]]


def simulated_messages(n: int, folder: Path) -> Items:
    """At least `n` simulator events as (key, value), in log order, cut to exactly `n`."""
    tables = 8
    rounds = n // (tables * 12) + 1  # about 17 events a round: enough, with room to spare
    with EmbeddedLog(folder / "log", partitions=4) as log:
        simulate(log, SimConfig(seed=42, tables=tables, rounds=rounds))
        items = [(r.key, r.value) for batch in log.read() for r in batch]
    if len(items) < n:
        raise SystemExit(f"simulated only {len(items)} events, fewer than {n}")
    return items[:n]


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1,
                                     "configs": TOPIC_CONFIG}})
        admin.wait_for_topics([topic], timeout_ms=30_000)
    finally:
        admin.close()


SEGMENTS = 10  # produce: the two sides alternate every len/SEGMENTS messages


def produce(bootstrap: str, items: Items, partitions: int, tag: str) -> dict[str, float]:
    """Seconds each side spends appending `items`, in batches of BATCH, each to its own fresh
    topic. The sides take turns every 1/SEGMENTS of the messages (who goes first alternates),
    so both see the same machine load: this box is shared and noisy."""
    log = KafkaLog(bootstrap, f"bench.{tag}.pitlog", partitions=partitions)
    bare_topic = f"bench.{tag}.bare"
    create_topic(bootstrap, bare_topic, partitions)
    producer = KafkaProducer(bootstrap_servers=bootstrap, **producer_settings())

    def pitlog(segment: Items) -> None:
        for i in range(0, len(segment), BATCH):
            log.append(segment[i:i + BATCH])

    def bare(segment: Items) -> None:
        for i in range(0, len(segment), BATCH):
            futures = [producer.send(bare_topic, key=k, value=v)
                       for k, v in segment[i:i + BATCH]]
            producer.flush()
            for f in futures:
                f.get(timeout=0)  # as append does: every acknowledgement checked

    try:
        pitlog(items[:BATCH])  # warm-up: connections, metadata, producer id (not timed)
        bare(items[:BATCH])
        return _take_turns({"pitlog": pitlog, "bare": bare},
                           [items[k * len(items) // SEGMENTS:(k + 1) * len(items) // SEGMENTS]
                            for k in range(SEGMENTS)])
    finally:
        log.close()
        producer.close()


def consume(bootstrap: str, topic: str, partitions: int) -> tuple[dict[str, float], int]:
    """Seconds each side spends reading the whole topic, taking turns partition by partition
    (`KafkaLog.read` with assign=[p]; a bare consumer assigned [p], seek, poll to the end)."""
    logs = [KafkaLog(bootstrap, topic, assign=[p]) for p in range(partitions)]
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, **consumer_settings())
    counts = {"pitlog": 0, "bare": 0}

    def pitlog(p: int) -> None:
        counts["pitlog"] += sum(len(batch) for batch in logs[p].read())

    def bare(p: int) -> None:
        tp = TopicPartition(topic, p)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        end = consumer.end_offsets([tp])[tp]
        position = 0
        while position < end:
            for records in consumer.poll(timeout_ms=500, max_records=5000).values():
                for r in records:
                    if r.offset < end:
                        counts["bare"] += 1
                position = records[-1].offset + 1

    try:
        seconds = _take_turns({"pitlog": pitlog, "bare": bare}, list(range(partitions)))
    finally:
        for log in logs:
            log.close()
        consumer.close()
    if counts["pitlog"] != counts["bare"]:
        raise SystemExit(f"pitlog read {counts['pitlog']} messages, bare {counts['bare']}")
    return seconds, counts["pitlog"]


def _take_turns(sides: dict[str, Callable[[Any], None]], work: Sequence[Any]) -> dict[str, float]:
    seconds = dict.fromkeys(sides, 0.0)
    order = list(sides)
    for k, unit in enumerate(work):
        for name in (order if k % 2 == 0 else order[::-1]):
            started = time.perf_counter()
            sides[name](unit)
            seconds[name] += time.perf_counter() - started
    return seconds


def run(bootstrap: str, items: Items, repeats: int, partitions: int) -> dict[str, object]:
    n = len(items)
    rates: dict[str, list[float]] = {k: [] for k in ("produce_pitlog", "produce_bare",
                                                     "consume_pitlog", "consume_bare")}
    for r in range(repeats):
        tag = f"{uuid.uuid4().hex[:6]}.{r}"
        for side, seconds in produce(bootstrap, items, partitions, tag).items():
            rates[f"produce_{side}"].append(n / seconds)
        # Both read the bare side's topic: the same bytes, n messages plus the warm-up batch.
        read_seconds, read = consume(bootstrap, f"bench.{tag}.bare", partitions)
        for side, seconds in read_seconds.items():
            rates[f"consume_{side}"].append(read / seconds)
        print(f"  repeat {r + 1}: " + ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in rates.items()),
              file=sys.stderr)
    ratio = {kind: statistics.median(p / b for p, b in zip(rates[f"{kind}_pitlog"],
                                                           rates[f"{kind}_bare"], strict=True))
             for kind in ("produce", "consume")}
    return {"messages": n, "repeats": repeats, "partitions": partitions, "batch": BATCH,
            "mean_value_bytes": round(sum(len(v) for _, v in items) / n, 1),
            "rates_msgs_per_s": {k: [round(x) for x in v] for k, v in rates.items()},
            "median_msgs_per_s": {k: round(statistics.median(v)) for k, v in rates.items()},
            "ratio_pitlog_over_bare": {k: round(v, 3) for k, v in ratio.items()},
            "cpus": os.cpu_count(), "loadavg_at_end": os.getloadavg()}


def markdown(result: dict[str, object]) -> str:
    med = result["median_msgs_per_s"]
    ratio = result["ratio_pitlog_over_bare"]
    assert isinstance(med, dict) and isinstance(ratio, dict)
    lines = [f"Kafka throughput, {result['messages']:,} simulator events "
             f"(~{result['mean_value_bytes']} B), {result['partitions']} partitions, "
             f"median of {result['repeats']} repeats",
             "", "| path | pitlog msg/s | bare kafka-python msg/s | pitlog / bare |",
             "|---|---:|---:|---:|"]
    for kind in ("produce", "consume"):
        lines.append(f"| {kind} | {med[f'{kind}_pitlog']:,} | {med[f'{kind}_bare']:,} | "
                     f"{ratio[kind]:.2f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--bootstrap", help="use this broker instead of starting one")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-kafka-")))
        print(f"simulating {args.messages:,} events ...", file=sys.stderr)
        items = simulated_messages(args.messages, tmp)
        bootstrap = args.bootstrap
        if bootstrap is None:
            sys.path.insert(0, str(REPO / "tools"))
            import kafka_broker

            broker = kafka_broker.start_broker(tmp / "broker", heap="1g")
            stack.callback(broker.stop)
            bootstrap = broker.bootstrap
        result = run(bootstrap, items, args.repeats, args.partitions)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    print(f"\nJSON: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

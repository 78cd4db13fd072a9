"""Integrity benchmarks: verify throughput, and what the writer-concurrency check costs appends.

    python benchmarks/bench_integrity.py --events 1000000 --dir /tmp/bench-integrity

Measured here, never in a timed test (docs/architecture.md, principle 5). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from events.integrity.verify import verify_log
from events.log.embedded.log import EmbeddedLog
from events.recording.recorder import Recorder
from events.reddog import model
from events.wire import chain

T0 = datetime(2026, 11, 28, 21, 0, tzinfo=UTC)


def build(folder: Path, events: int, tables: int) -> float:
    """Record `events` CardDrawn events round-robin over `tables`; return events/s."""
    log = EmbeddedLog(folder, partitions=4)
    recorder = Recorder(log, batch_size=5000)
    started = time.perf_counter()
    for i in range(events):
        table = f"T{i % tables:03d}"
        recorder.record(table, model.CardDrawn(rank=2 + i % 13, suit=model.Suit.HEARTS,
                                               face_up=True, destination=model.Box.LEFT),
                        shoe_id=f"{table}-S0001", round_no=i // 75, actor="SHOE",
                        occurred_at=T0 + timedelta(milliseconds=i), recorded_at=T0)
    recorder.flush()
    return events / (time.perf_counter() - started)


def append_cost(source: Path, folder: Path) -> tuple[float, float]:
    """Seconds to append every record of `source` in batches of 2000 into two fresh logs,
    alternating: plain `append`, and `append_expecting` with the recorder's expectation (each
    key's current tail hash), built outside the timed region as the recorder builds it while
    recording."""
    plain_log = EmbeddedLog(folder / "plain", partitions=4)
    checked_log = EmbeddedLog(folder / "checked", partitions=4)
    tails: dict[bytes, bytes] = {}
    plain = checked = 0.0
    for batch in EmbeddedLog(source).read(max_batch=2000):
        items = [(r.key, r.value) for r in batch]
        expected: dict[bytes, bytes | None] = {}
        for key, _ in items:
            if key not in expected:
                t = tails.get(key)
                expected[key] = None if t is None else chain.stored_hash(t)
        started = time.perf_counter()
        plain_log.append(items)
        plain += time.perf_counter() - started
        started = time.perf_counter()
        checked_log.append_expecting(items, expected)
        checked += time.perf_counter() - started
        for key, value in items:
            tails[key] = value
    return plain, checked


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--tables", type=int, default=40)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bench-integrity"))
    parser.add_argument("--reuse", action="store_true", help="keep DIR/log from a previous run")
    args = parser.parse_args()
    source = args.dir / "log"
    record_rate = None
    if not (args.reuse and (source / "meta.json").exists()):
        shutil.rmtree(args.dir, ignore_errors=True)
        args.dir.mkdir(parents=True)
        record_rate = build(source, args.events, args.tables)
    for name in ("plain", "checked"):
        shutil.rmtree(args.dir / name, ignore_errors=True)
    report = verify_log(EmbeddedLog(source))
    assert report.ok and report.records == args.events
    plain, checked = append_cost(source, args.dir)
    print(json.dumps({
        "events": args.events, "tables": args.tables,
        "record_events_per_s": record_rate and round(record_rate),
        "verify_events_per_s": round(report.records / report.seconds),
        "verify_seconds": round(report.seconds, 2),
        "append_plain_s": round(plain, 2), "append_checked_s": round(checked, 2),
        "check_overhead_us_per_event": round((checked - plain) / args.events * 1e6, 3),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }))


if __name__ == "__main__":
    main()

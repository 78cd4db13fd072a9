"""Live detection at a casino's rate, over a history of H events (issue 16, benchmark).

    python benchmarks/bench_live.py --source /tmp/pitlog-live/src --history 1000000 \
        --seconds 60 --rate 300 [--workdir /tmp/pitlog-live]

`--source` is a simulated evening (`pitlog simulate --tables 200 --rounds 620
--irregularities 0.01 --seed 7 --log SRC`: 200 tables with injected irregularities) longer than
the history plus the feed. Each of its partitions is cut at the same fraction: the first
`--history` records are appended to a fresh log and projected (the rebuild path); then the
rest is appended at `--rate` records per second (one append every 0.1 s, from a thread), every
table's stream continuing where its history stopped, while the projector follows (project() in
a loop on one connection, as `project --follow` and `pitlog serve` do). Measured per batch:
the detection's cost (Detector.plan + evaluate + apply: the batch's stretch evaluated and
written) and its window (events evaluated); per alert raised during the feed: from the append
of its latest proving event to its row in `alerts` (raised_at, the batch transaction's time).
Prints one JSON object; benchmarks/results.md has the numbers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import duckdb  # noqa: E402

import projections.incremental as incremental  # noqa: E402
from events.log.embedded.log import EmbeddedLog  # noqa: E402
from projections.projector import project  # noqa: E402


def split(source: Path, target: Path, history: int, feed: int) -> list[tuple[bytes, bytes]]:
    """Append each partition's first share of `history` records to `target`; return the next
    `feed` records, interleaved across partitions in proportion."""
    src = EmbeddedLog(source, create=False)
    ends = src.end_offsets()
    total = sum(ends.values())
    out = EmbeddedLog(target)
    rest: dict[int, list[tuple[bytes, bytes]]] = {}
    for p, end in ends.items():
        cut = round(end * history / total)
        want = round(end * feed / total)
        start = {q: (0 if q == p else e) for q, e in ends.items()}
        chunk: list[tuple[bytes, bytes]] = []
        rest[p] = []
        for batch in src.read(start, max_batch=50_000):
            if not batch or batch[0].partition != p:
                continue  # another partition's records written since `ends` was taken
            for rec in batch:
                if rec.offset < cut:
                    chunk.append((rec.key, rec.value))
                elif rec.offset < cut + want:
                    rest[p].append((rec.key, rec.value))
            if chunk:
                out.append(chunk)
                chunk = []
            if batch and batch[-1].offset >= cut + want:
                break
    out.close()
    src.close()
    merged: list[tuple[bytes, bytes]] = []
    queues = [q for q in rest.values() if q]
    i = 0
    while queues:  # round-robin: every partition's tables advance together
        q = queues[i % len(queues)]
        merged.append(q.pop(0))
        queues = [q for q in queues if q]
        i += 1
    return merged


def percentiles(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    xs = sorted(xs)
    q = statistics.quantiles(xs, n=100, method="inclusive") if len(xs) > 1 else [xs[0]] * 99
    return {"n": len(xs), "p50": round(q[49], 3), "p95": round(q[94], 3),
            "p99": round(q[98], 3), "max": round(xs[-1], 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", type=Path, required=True)
    ap.add_argument("--history", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--rate", type=float, default=300.0)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/pitlog-live"))
    args = ap.parse_args()
    work = args.workdir / f"h{args.history}"
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    n_feed = int(args.seconds * args.rate)
    feed = split(args.source, work / "log", args.history, n_feed)
    db = work / "v.duckdb"
    con = duckdb.connect(str(db))
    con.execute("SET memory_limit = '512MB'")  # the read-write default (store.py)
    log = EmbeddedLog(work / "log")
    t0 = time.perf_counter()
    project(log, con, publish_alerts=False)
    rebuild_s = time.perf_counter() - t0
    ((events,),) = con.execute("SELECT count(*) FROM events").fetchall()
    ((alerts_before,),) = con.execute("SELECT coalesce(max(alert_seq), 0) FROM alerts").fetchall()

    costs: list[float] = []
    windows: list[int] = []
    current: dict[str, float] = {}
    for name in ("plan", "evaluate", "apply"):
        f = getattr(incremental.Detector, name)

        def timed(*a, _f=f, _n=name, **k):  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            r = _f(*a, **k)
            current[_n] = time.perf_counter() - t
            if _n == "evaluate":
                windows.append(r)
            if _n == "apply" and a[2]:  # a batch with events: one detection
                costs.append(current.get("plan", 0) + current.get("evaluate", 0) + current[_n])
            return r
        setattr(incremental.Detector, name, timed)

    appended: dict[tuple[int, int], float] = {}
    done = threading.Event()

    def feeder() -> None:
        writer = EmbeddedLog(work / "log")
        step = max(1, int(args.rate / 10))
        start = time.time()
        for i in range(0, len(feed), step):
            due = start + i / args.rate
            time.sleep(max(0.0, due - time.time()))
            positions = writer.append(feed[i:i + step])
            now = time.time()
            for pos in positions:
                appended[pos] = now
        writer.close()
        done.set()

    thread = threading.Thread(target=feeder)
    thread.start()
    batches = 0
    while not done.is_set() or sum(log.end_offsets().values()) > \
            con.execute("SELECT sum(next_offset) FROM checkpoints").fetchone()[0]:
        batches += project(log, con, publish_alerts=False).batches
        time.sleep(0.05)
    thread.join()
    rows = con.execute("""
        SELECT a.raised_at, e.log_partition, e.log_offset
        FROM alerts AS a JOIN events AS e ON e.table_id = a.table_id AND e.seq = list_max(a.seqs)
        WHERE a.alert_seq > $b""", {"b": alerts_before}).fetchall()
    latency = [(raised.timestamp() - appended[(p, o)]) for raised, p, o in rows
               if (p, o) in appended]
    print(json.dumps({
        "history_events": int(events), "feed_events": len(appended),
        "rate": args.rate, "rebuild_seconds": round(rebuild_s, 1), "batches": batches,
        "detection_seconds_per_batch": percentiles(costs),
        "window_events_per_batch": percentiles([float(w) for w in windows]),
        "append_to_alert_seconds": percentiles(latency),
        "alerts_in_feed": len(rows), "measured_at": datetime.now(UTC).isoformat()}))


if __name__ == "__main__":
    main()

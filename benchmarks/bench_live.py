"""Live detection at a casino's rate, over a history of H events (issue 16, benchmark).

    python benchmarks/bench_live.py --source /tmp/pitlog-live/src --history 1000000 \
        --seconds 60 --rate 300 [--workdir /tmp/pitlog-live] [--reuse] [--serve]

`--source` is a simulated evening (`pitlog simulate --tables 200 --rounds 620
--irregularities 0.01 --seed 7 --log SRC`: 200 tables with injected irregularities) longer than
the history plus the feed. Each of its partitions is cut at the same fraction: the first
`--history` records are appended to a fresh log and projected (the rebuild path); then the
rest is appended at `--rate` records per second (one append every 0.1 s, from a thread), every
table's stream continuing where its history stopped, while the projector follows (project() in
a loop on one connection, as `project --follow` and `pitlog serve` do). Measured per batch:
the detection's cost (Detector.plan + evaluate + apply: the batch's stretch evaluated and
written), its phases, and its windows (events evaluated by the rounds, money, tables and
streams families; by the shoes family, which also reads the cards before K_r); per alert
raised during the feed: from the append of its latest proving event to its row in `alerts`
(raised_at, the batch transaction's time), and (in process) from the earliest time at which
the event that decided it can have been appended (`decided_to_alert_row_seconds`, decided_at:
an upper bound of the latency from the deciding event; a rule that waits for a later event,
such as a round's missing settlement judged once the table records something after it, is
timed from that event, not from its proof).

`--drop P`: the injected irregularities, for a source simulated without them (the 10M store
of seed 12): a share P of the feed's records is left out (a seeded draw), as events lost between
a device and the log; the table's next event then raises SEQUENCE_GAP, and its round whatever
the missing event breaks. Where the feed stopped in the source is kept beside the log
(source_at.json), so `--reuse` continues from there, not from the log's end. `--scans` (in
process): every statement is profiled, and the rows its table scans read per run are reported
per statement (DuckDB's query.total_rows_scanned, from its log): what a batch reads of the
history shows there, load-independent. The detection's process CPU seconds per batch are
reported beside its wall seconds, and the load average before and after the feed.

`--serve`: instead of the in-process loop, `pitlog serve --poll-interval 0.1` follows the log
in a child process, and an SSE client on `GET /alerts` records when each alert arrives: the
latency is then from the append to the alert on the wire (the detection cost per batch is not
measured in this mode). `--reuse`: keep WORKDIR/h<history> as a previous run left it (its
database already projected) and feed the source's records after the log's end, so the
history's rebuild (minutes at 1M) is paid once.
Prints one JSON object; benchmarks/results.md has the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import duckdb  # noqa: E402

import projections.incremental as incremental  # noqa: E402
from events.log.base import EventLog  # noqa: E402
from events.log.embedded.log import EmbeddedLog  # noqa: E402
from events.log.registry import open_log  # noqa: E402
from projections import id_index  # noqa: E402
from projections.projector import project  # noqa: E402
from projections.reconcile import ROUND_MONEY_AT, RUNNING_SUMS_AT  # noqa: E402


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
    _remember_fed(target, {p: round(end * history / total) + len(rest[p])
                           for p, end in ends.items()})
    return _interleave(rest)


def _remember_fed(target: Path, at: dict[int, int]) -> None:
    """Where the feed stopped in each of the source's partitions (beside the log): with
    `--drop` the log holds fewer records than were taken from the source, so its end offsets
    are not where the next run's feed starts."""
    (target.parent / "source_at.json").write_text(json.dumps({str(p): o for p, o in at.items()}))


def continuation(source: Path, target: Path, feed: int) -> list[tuple[bytes, bytes]]:
    """The source's next `feed` records after where the last feed stopped (`_remember_fed`;
    else `target`'s end offsets: the target was cut from the source), interleaved across
    partitions in proportion."""
    src = EmbeddedLog(source, create=False)
    ends = src.end_offsets()
    remembered = target.parent / "source_at.json"
    have = ({int(p): o for p, o in json.loads(remembered.read_text()).items()}
            if remembered.exists() else EmbeddedLog(target, create=False).end_offsets())
    total = sum(ends[p] - have.get(p, 0) for p in ends)
    rest: dict[int, list[tuple[bytes, bytes]]] = {}
    for p, end in ends.items():
        want = round((end - have.get(p, 0)) * feed / total)
        rest[p] = []
        start = {q: (have.get(p, 0) if q == p else e) for q, e in ends.items()}
        for batch in src.read(start, max_batch=50_000):
            rest[p].extend((r.key, r.value) for r in batch if r.partition == p)
            if len(rest[p]) >= want:
                break
        rest[p] = rest[p][:want]
    src.close()
    _remember_fed(target, {p: have.get(p, 0) + len(rest[p]) for p in ends})
    return _interleave(rest)


def _interleave(rest: dict[int, list[tuple[bytes, bytes]]]) -> list[tuple[bytes, bytes]]:
    merged: list[tuple[bytes, bytes]] = []
    queues = [list(reversed(q)) for q in rest.values() if q]
    i = 0
    while queues:  # round-robin: every partition's tables advance together
        q = queues[i % len(queues)]
        merged.append(q.pop())
        queues = [q for q in queues if q]
        i += 1
    return merged


def to_kafka(work: Path, bootstrap: str) -> str:
    """Copy WORKDIR's embedded log into a fresh Kafka topic, partition by partition (the same
    key-to-partition function, so every record keeps its partition and offset), and point the
    database's checkpoints at it: the projected history then continues on Kafka. Returns the
    topic's URI (remembered in kafka.json for --reuse)."""
    from events.log.kafka.log import KafkaLog

    remembered = work / "kafka.json"
    if remembered.exists():
        return json.loads(remembered.read_text())["uri"]
    src = EmbeddedLog(work / "log", create=False)
    ends = src.end_offsets()
    topic = f"pitlog-bench-{work.name}-{int(time.time())}"
    log = KafkaLog(bootstrap, topic, partitions=len(ends))
    keys: dict[str, int] = {}
    for p in sorted(ends):
        start = {q: (0 if q == p else e) for q, e in ends.items()}
        for batch in src.read(start, max_batch=20_000):
            if batch and batch[0].partition == p:
                for r in batch:  # the embedded log's partition of each table, kept
                    keys[r.key.hex()] = log._partition_of_key[r.key] = p
                got = log.append([(r.key, r.value) for r in batch])
                assert got[0] == (p, batch[0].offset), (got[0], p, batch[0].offset)
    src.close()
    with duckdb.connect(str(work / "v.duckdb")) as con:
        # The same records at the same positions: the stored rows, the round money and the
        # index of ids are current at the topic's positions too (else the store is evaluated
        # whole: 323 s at 9.5M events, where this copy had only moved the checkpoints; the
        # round money is built whole, minutes; and the index is built anew, tens of seconds).
        # The stored round money's marker too (else its whole build runs before the feed).
        held = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        for table in ("checkpoints", incremental.STORED_AT, ROUND_MONEY_AT, RUNNING_SUMS_AT):
            if table in held:
                con.execute(f"UPDATE {table} SET source = ?", [log.uri])
        index = id_index.index_path(con)
    if index is not None and index.exists():
        with closing(sqlite3.connect(index)) as db, db:
            db.execute("UPDATE upto SET source = ?", [log.uri])
    log.close()
    remembered.write_text(json.dumps({"uri": log.uri, "keys": keys}))
    return log.uri


def key_partitions(work: Path) -> dict[bytes, int]:
    """The tables' partitions on the Kafka copy (to_kafka), {} for an embedded log."""
    remembered = work / "kafka.json"
    if not remembered.exists():
        return {}
    return {bytes.fromhex(k): p for k, p in json.loads(remembered.read_text())["keys"].items()}


def percentiles(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    xs = sorted(xs)
    q = statistics.quantiles(xs, n=100, method="inclusive") if len(xs) > 1 else [xs[0]] * 99
    return {"n": len(xs), "p50": round(q[49], 3), "p95": round(q[94], 3),
            "p99": round(q[98], 3), "max": round(xs[-1], 3)}


def feeder(target: str, feed: list[tuple[bytes, bytes]], rate: float,
           appended: dict[tuple[int, int], float], done: threading.Event,
           partitions: dict[bytes, int] | None = None) -> None:
    """Append `feed` to the log at `rate` records per second, one append every 0.1 s (on a
    Kafka copy, each table to its partition there: `partitions`)."""
    writer = open_log(target)
    if partitions:
        writer._partition_of_key.update(partitions)  # type: ignore[attr-defined]
    step = max(1, int(rate / 10))
    start = time.time()
    for i in range(0, len(feed), step):
        time.sleep(max(0.0, start + i / rate - time.time()))
        positions = writer.append(feed[i:i + step])
        now = time.time()
        for pos in positions:
            appended[pos] = now
    writer.close()
    done.set()


def in_process(log: EventLog, con: duckdb.DuckDBPyConnection,
               done: threading.Event, marks: list[Mark], scans: bool = False
               ) -> tuple[int, list[float], list[int], dict[str, list[float]]]:
    """project() in a loop on one connection until the feed is in; (batches, detection cost
    per batch, window per batch, seconds per batch of each phase (`cpu`: the detection's process
    CPU seconds): plan, copy (the window into
    the scratch catalog), copies (DUPLICATE_EVENT's look-up of earlier copies over the history),
    families (the family queries, planning included), apply). After each call that committed,
    what the store holds is added to `marks` (committed_mark), the first before the feed."""
    costs: list[float] = []
    cpu: list[float] = []  # process CPU seconds (every thread's, the feeder's 0.1 s appends too)
    windows: list[int] = []
    phases: dict[str, list[float]] = {"plan": [], "copy": [], "copies": [], "families": [],
                                      "apply": [],
                                      "cards_window": [], "tables": [], "round_level": []}
    current: dict[str, float] = {}
    marks.append(committed_mark(con))
    for name in ("plan", "evaluate", "apply"):
        f = getattr(incremental.Detector, name)

        def timed(*a, _f=f, _n=name, **k):  # type: ignore[no-untyped-def]
            t, c = time.perf_counter(), time.process_time()
            r = _f(*a, **k)
            current[_n] = time.perf_counter() - t
            current[f"{_n}_cpu"] = time.process_time() - c
            if _n == "plan":
                current.update(a[0].stretches)
            if _n == "evaluate":
                windows.append(r)
                current.update(a[0].phases)
            if _n == "apply" and a[2]:  # a batch with events: one detection
                costs.append(current.get("plan", 0) + current.get("evaluate", 0) + current[_n])
                cpu.append(sum(current.get(f"{n}_cpu", 0) for n in ("plan", "evaluate", "apply")))
                for k, v in phases.items():
                    v.append(current.get(k, 0.0))
            return r
        setattr(incremental.Detector, name, timed)
    if scans:  # every statement's rows scanned, into DuckDB's log (scanned_by_statement)
        con.execute("CALL enable_logging('Metrics')")
        con.execute("SET enable_profiling = 'no_output'")
        ready = incremental.Detector._ready

        def profiled_ready(self):  # type: ignore[no-untyped-def]
            first = self.scratch is None
            s = ready(self)
            if first:
                for cur in (s, *self.cursors):
                    cur.execute("SET enable_profiling = 'no_output'")
            return s
        incremental.Detector._ready = profiled_ready  # type: ignore[method-assign]
    batches = 0
    while not done.is_set() or sum(log.end_offsets().values()) > \
            con.execute("SELECT sum(next_offset) FROM checkpoints").fetchone()[0]:
        n = project(log, con, publish_alerts=False).batches
        batches += n
        if n:
            marks.append(committed_mark(con))
        time.sleep(0.05)
    phases["cpu"] = cpu
    return batches, costs, windows, phases


Mark = tuple[int, dict[int, int]]  # (the greatest alert_seq, each partition's next offset)


def committed_mark(con: duckdb.DuckDBPyConnection) -> Mark:
    """What the store holds after a project() call: its greatest alert_seq and each partition's
    next offset (the checkpoints)."""
    ((seq,),) = con.execute("SELECT coalesce(max(alert_seq), 0) FROM alerts").fetchall()
    return seq, dict(con.execute("SELECT log_partition, next_offset FROM checkpoints").fetchall())


def decided_at(con: duckdb.DuckDBPyConnection, marks: list[Mark],
               rows: list[tuple[int, str, int, int]],
               appended: dict[tuple[int, int], float]) -> dict[int, float]:
    """Per alert_seq, the earliest time at which the event that decided the alert can have
    been appended (so the latency from it is at most the raise less this). The stored rows
    equal a full evaluation after every commit (the property
    tests/projections/test_incremental.py attacks), so an alert first raised by the project()
    call that committed offsets (before, after] was not decided by the events before it: the
    event that decided it is one of its table's events in that range, at or after the alert's
    latest proving event (every rule is judged within one table, whose events share a
    partition). The earliest such event's append bounds it: a rule that waits for a later
    event (a round's missing settlement is judged once the table records something after it)
    is timed from that event, not from its proof. Rows: (alert_seq, table_id, partition and
    offset of the latest proving event)."""
    out: dict[int, float] = {}
    for seq, table, p, o in rows:
        i = next((i for i, (top, _) in enumerate(marks) if top >= seq), None)
        if i is None or i == 0:
            continue  # raised before the first mark: the call that caught up on the history
        lo, hi = max(marks[i - 1][1].get(p, 0), o), marks[i][1].get(p, 0)
        first = con.execute(
            "SELECT min(log_offset) FROM events WHERE table_id = $t AND log_partition = $p "
            "AND log_offset >= $lo AND log_offset < $hi",
            {"t": table, "p": p, "lo": lo, "hi": hi}).fetchone()
        if first and first[0] is not None and (p, first[0]) in appended:
            out[seq] = appended[(p, first[0])]
    return out


def scanned_by_statement(con: duckdb.DuckDBPyConnection, batches: int) -> list[dict]:
    """From DuckDB's log (in_process with `scans`): per statement (its text with numbers and
    quoted values blanked), how often it ran and the rows its table scans read per run (DuckDB's
    query.total_rows_scanned), the heaviest first. What follows the history shows here."""
    rows = con.execute(r"""
        SELECT context_id,
               max(regexp_extract(message, 'total_rows_scanned, ''value'': (\d+)', 1))
                   FILTER (message LIKE '%query.total_rows_scanned%') AS scanned,
               max(regexp_extract(message, 'query.sql, ''value'': (.*), ''start_time''', 1, 's'))
                   FILTER (message LIKE '%query.sql%') AS sql
        FROM duckdb_logs WHERE type = 'Metrics'
          AND (message LIKE '%query.total_rows_scanned%' OR message LIKE '%query.sql%')
        GROUP BY context_id""").fetchall()
    by: dict[str, list[int]] = {}
    for _, scanned, sql in rows:
        if not scanned or not sql:
            continue
        if sql.startswith("'"):  # the log quotes a text with quotes in it, escaping them
            sql = sql[1:-1].replace("\\'", "'")
        key = re.sub(r"'[^']*'|\b\d+\b", "?", " ".join(sql.split()))[:160]
        by.setdefault(key, []).append(int(scanned))
    out = [{"statement": k, "runs": len(v), "rows_scanned_p50": statistics.median(v),
            "rows_scanned_max": max(v), "runs_per_batch": round(len(v) / max(batches, 1), 2)}
           for k, v in by.items()]
    return sorted(out, key=lambda r: -r["rows_scanned_p50"])[:25]


def start_server(work: Path, uri: str) -> tuple[subprocess.Popen, str]:
    """`pitlog serve` on the log at `uri` and the work folder's database, once /health says
    ready."""
    db = work / "v.duckdb"
    (work / "v.duckdb.serve.json").unlink(missing_ok=True)
    child = subprocess.Popen(
        [sys.executable, "-c", "from cli.app import main; main()", "serve",
         "--log", uri, "--db", str(db), "--port", "0",
         "--poll-interval", "0.1", "--log-level", "warning"],
        cwd=HERE.parent, env={**os.environ, "PYTHONPATH": str(HERE.parent)})
    deadline = time.time() + 600
    while time.time() < deadline:
        try:
            url = json.loads((work / "v.duckdb.serve.json").read_text())["url"]
            with urllib.request.urlopen(f"{url}/health", timeout=5) as r:
                if json.load(r)["ready"]:
                    return child, url
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.5)
    child.kill()
    raise SystemExit("pitlog serve did not get ready")


def sse_client(url: str, after: int, arrived: dict[int, float], stop: threading.Event) -> None:
    """GET /alerts from `after`: when each alert (by alert_seq) arrived."""
    req = urllib.request.Request(f"{url}/alerts", headers={"Last-Event-ID": str(after)})
    with urllib.request.urlopen(req, timeout=30) as resp:
        for raw in resp:
            now = time.time()
            line = raw.decode().strip()
            if line.startswith("id:"):
                arrived[int(line[3:])] = now
            if stop.is_set():
                return


def kafka_client(uri: str, arrived: dict[int, float], stop: threading.Event) -> None:
    """A bare kafka-python consumer on `<topic>.alerts`: when each alert arrived."""
    import io

    import fastavro
    from kafka import KafkaConsumer, TopicPartition

    from events.log.alerts import ALERT_SCHEMA

    schema = fastavro.parse_schema(json.loads(ALERT_SCHEMA.read_text()))
    bootstrap, topic = uri.removeprefix("kafka://").split("/", 1)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False, fetch_max_wait_ms=10,
                             isolation_level="read_committed")
    tp = TopicPartition(f"{topic}.alerts", 0)
    while not stop.is_set():
        if tp.topic in consumer.topics():
            break
        time.sleep(0.5)
    consumer.assign([tp])
    consumer.seek_to_end(tp)
    while not stop.is_set():
        for records in consumer.poll(timeout_ms=100).values():
            now = time.time()
            for r in records:
                arrived[int(fastavro.schemaless_reader(io.BytesIO(r.value),
                                                       schema)["alert_seq"])] = now
    consumer.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", type=Path, required=True)
    ap.add_argument("--history", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--rate", type=float, default=300.0)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/pitlog-live"))
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--scans", action="store_true",
                    help="in process: profile every statement and report the rows each one's "
                         "table scans read per run (a diagnostic run: profiling costs time)")
    ap.add_argument("--drop", type=float, default=0.0,
                    help="the injected irregularities: this share of the feed's records is "
                         "left out (seeded), as events lost between device and log, so the "
                         "table's next event raises SEQUENCE_GAP, and the round's rules what "
                         "the missing event breaks; for a source simulated without "
                         "irregularities")
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--kafka", metavar="BOOTSTRAP",
                    help="with --serve: the history and the feed on a Kafka topic (copied from "
                         "the embedded log once); alerts also read from <topic>.alerts")
    args = ap.parse_args()
    work = args.workdir / f"h{args.history}"
    db = work / "v.duckdb"
    n_feed = int(args.seconds * args.rate)
    rebuild_s = None
    if args.reuse and db.exists():
        feed = continuation(args.source, work / "log", n_feed)
    else:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        feed = split(args.source, work / "log", args.history, n_feed)
    if args.drop:
        rng = random.Random(f"bench_live:{args.history}:{len(feed)}")
        taken = len(feed)
        feed = [r for r in feed if rng.random() >= args.drop]
        result_dropped = taken - len(feed)
    else:
        result_dropped = 0
    uri = f"file://{work / 'log'}"
    if args.kafka:
        uri = to_kafka(work, args.kafka)
    con = duckdb.connect(str(db))
    con.execute("SET memory_limit = '512MB'")  # the read-write default (store.py)
    log = open_log(uri)
    t0 = time.perf_counter()
    project(log, con, publish_alerts=False)  # the history (the rebuild path), or catching up
    rebuild_s = round(time.perf_counter() - t0, 1)
    ((events,),) = con.execute("SELECT count(*) FROM events").fetchall()
    ((alerts_before,),) = con.execute("SELECT coalesce(max(alert_seq), 0) FROM alerts").fetchall()

    load_before = os.getloadavg()
    appended: dict[tuple[int, int], float] = {}
    done = threading.Event()
    arrived: dict[int, float] = {}
    result: dict[str, object] = {}
    if args.serve:
        con.close()
        child, url = start_server(work, uri)
        stop = threading.Event()
        try:
            client = threading.Thread(target=sse_client, args=(url, alerts_before, arrived, stop),
                                      daemon=True)
            client.start()
            on_kafka: dict[int, float] = {}
            if args.kafka:
                threading.Thread(target=kafka_client, args=(uri, on_kafka, stop),
                                 daemon=True).start()
            time.sleep(3.0)  # the clients connected
            thread = threading.Thread(target=feeder, args=(uri, feed, args.rate, appended, done,
                                                           key_partitions(work)))
            thread.start()
            thread.join()
            end = sum(log.end_offsets().values())
            query = urllib.parse.quote("SELECT sum(next_offset) AS n FROM checkpoints")
            while True:  # until the server has committed the whole feed
                with urllib.request.urlopen(f"{url}/api/sql?q={query}", timeout=60) as r:
                    if int(json.load(r)["rows"][0]["n"]) >= end:  # a sum: an exact decimal
                        break
                time.sleep(0.5)
            time.sleep(2.0)  # the last alerts on the wire
        finally:  # the server stops whatever happened here
            stop.set()
            child.send_signal(signal.SIGTERM)
            child.wait(timeout=300)
        con = duckdb.connect(str(db))
    else:
        thread = threading.Thread(target=feeder, args=(uri, feed, args.rate, appended, done))
        thread.start()
        marks: list[Mark] = []
        batches, costs, windows, phases = in_process(log, con, done, marks, args.scans)
        thread.join()
        result = {"batches": batches, "detection_seconds_per_batch": percentiles(costs),
                  "detection_cpu_seconds_per_batch": percentiles(phases.pop("cpu")),
                  "window_events_per_batch": percentiles([float(w) for w in windows]),
                  "cards_window_events_per_batch": percentiles(phases.pop("cards_window")),
                  "tables_touched_per_batch": percentiles(phases.pop("tables")),
                  "tables_at_round_level_per_batch": percentiles(phases.pop("round_level")),
                  "phase_seconds_per_batch": {k: percentiles(v) for k, v in phases.items()}}
        if args.scans:
            result["rows_scanned_by_statement"] = scanned_by_statement(con, batches)
    rows = con.execute("""
        SELECT a.alert_seq, a.raised_at, e.log_partition, e.log_offset, a.table_id
        FROM alerts AS a JOIN events AS e ON e.table_id = a.table_id AND e.seq = list_max(a.seqs)
        WHERE a.alert_seq > $b""", {"b": alerts_before}).fetchall()
    latency = [(raised.timestamp() - appended[(p, o)]) for _, raised, p, o, _ in rows
               if (p, o) in appended]
    if not args.serve:
        decided = decided_at(con, marks, [(s, t, p, o) for s, _, p, o, t in rows], appended)
        result["decided_to_alert_row_seconds"] = percentiles(
            [raised.timestamp() - decided[s] for s, raised, *_ in rows if s in decided])
    if args.serve:
        result["append_to_sse_seconds"] = percentiles(
            [arrived[seq] - appended[(p, o)] for seq, _, p, o, _ in rows
             if (p, o) in appended and seq in arrived])
        result["alerts_on_sse"] = sum(1 for seq, *_ in rows if seq in arrived)
        if args.kafka:
            result["append_to_kafka_alert_seconds"] = percentiles(
                [on_kafka[seq] - appended[(p, o)] for seq, _, p, o, _ in rows
                 if (p, o) in appended and seq in on_kafka])
            result["alerts_on_kafka"] = sum(1 for seq, *_ in rows if seq in on_kafka)
    print(json.dumps({
        "history_events": int(events), "feed_events": len(appended), "rate": args.rate,
        "dropped": result_dropped,
        "mode": "serve" if args.serve else "in-process", "catch_up_seconds": rebuild_s,
        **result, "append_to_alert_row_seconds": percentiles(latency),
        "alerts_in_feed": len(rows), "load_average_before": load_before,
        "load_average": os.getloadavg(),
        "measured_at": datetime.now(UTC).isoformat()}))


if __name__ == "__main__":
    main()

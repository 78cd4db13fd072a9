"""One measurement in its own process: `python benchmarks/measure.py NAME '{json args}'`.

run.py starts one child per measurement, so the peak memory it reports (VmHWM, the high-water
mark of the resident set, from /proc/self/status) belongs to that measurement alone. The child
prints one JSON object on its last stdout line: wall and CPU seconds of the timed part, events,
`rss_base_mb` (after imports and setup) and `rss_peak_mb`, plus whatever the measurement adds.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import random
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]

import duckdb  # noqa: E402
import floor  # noqa: E402  (benchmarks/floor.py)

from events.log.base import EventLog, LogRecord  # noqa: E402
from events.log.embedded.log import EmbeddedLog  # noqa: E402
from events.simulation.simulator import SimConfig, simulate  # noqa: E402
from projections import store  # noqa: E402
from projections.projector import DEFAULT_BATCH_SIZE, project  # noqa: E402

APPEND_BATCH = 2000  # events.recording.recorder.Recorder's batch
Args = dict[str, Any]


def rss_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


class Timer:
    def __enter__(self) -> Timer:
        self.base = rss_mb("VmRSS")
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu

    def result(self, events: int, **extra: Any) -> dict[str, Any]:
        return {"seconds": self.wall, "cpu_seconds": self.cpu, "events": events,
                "rss_base_mb": round(self.base, 1), "rss_peak_mb": round(rss_mb("VmHWM"), 1),
                **extra}


def reset_peak_rss() -> None:
    """Reset VmHWM to the current resident set (Linux: writing 5 to clear_refs)."""
    Path("/proc/self/clear_refs").write_text("5")


def fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    for p in (path, Path(f"{path}.wal")):
        if p.is_file():
            p.unlink()
    return path


def m_simulate(a: Args) -> dict[str, Any]:
    """The seeded simulator recording through the Recorder into a fresh embedded log."""
    out = fresh(Path(a["log"]))
    config = SimConfig(seed=a.get("seed", 42), tables=a["tables"], rounds=a["rounds"])
    with Timer() as t, EmbeddedLog(out, partitions=a.get("partitions", 4)) as log:
        report = simulate(log, config)
    return t.result(report.events, rounds=report.rounds, shoes=report.shoes)


class Tenths:
    """Wall and CPU seconds spent on each tenth of a run's events. At 10M a tenth is 1M events:
    the whole run against its first tenth is the 10M/1M scaling ratio measured within one run,
    which the load of this shared machine cannot skew the way it skews two runs made minutes
    apart, and a cost that grows with the log shows as later tenths costing more."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.marks: list[tuple[float, float]] = [(0.0, 0.0)]

    def at(self, done: int, wall: float, cpu: float) -> None:
        """`done` events so far took `wall` and `cpu` seconds (both counted from the start)."""
        while len(self.marks) <= 10 and done >= self.total * len(self.marks) / 10:
            self.marks.append((wall, cpu))

    def result(self) -> list[list[float]]:
        return [[round(b[0] - a[0], 3), round(b[1] - a[1], 3)]
                for a, b in itertools.pairwise(self.marks)]


def _count(source: EmbeddedLog) -> int:
    return sum(source.end_offsets().values())


def _timed_appends(log: Any, source: EmbeddedLog) -> dict[str, Any]:
    """Append the dataset to `log` in recorder-sized batches; only the append calls are timed
    (reading the dataset is not)."""
    tenths = Tenths(_count(source))
    n, spent, cpu = 0, 0.0, 0.0
    with Timer() as t:
        for items in _recorder_batches(source):
            w, c = time.perf_counter(), time.process_time()
            log.append(items)
            spent += time.perf_counter() - w
            cpu += time.process_time() - c
            n += len(items)
            tenths.at(n, spent, cpu)
    return {**t.result(n), "seconds": spent, "cpu_seconds": cpu, "tenths": tenths.result()}


def m_append(a: Args) -> dict[str, Any]:
    """Appends of recorder-sized batches into a fresh embedded log."""
    source = EmbeddedLog(Path(a["source"]), create=False)
    with EmbeddedLog(fresh(Path(a["log"])), partitions=source.n_partitions) as log:
        result = _timed_appends(log, source)
    shutil.rmtree(a["log"], ignore_errors=True)
    return result


def _recorder_batches(source: EmbeddedLog) -> Any:
    """The dataset's records in APPEND_BATCH-sized lists of (key, value), partition by
    partition (as the recorder appends one table's events at a time)."""
    for batch in source.read(max_batch=APPEND_BATCH):
        yield [(r.key, r.value) for r in batch]


def m_kafka_produce(a: Args) -> dict[str, Any]:
    from events.log.kafka.log import KafkaLog

    source = EmbeddedLog(Path(a["source"]), create=False)
    with KafkaLog(a["bootstrap"], a["topic"], partitions=source.n_partitions) as log:
        return _timed_appends(log, source)


def m_kafka_consume(a: Args) -> dict[str, Any]:
    from events.log.kafka.log import KafkaLog

    expected = _count(EmbeddedLog(Path(a["source"]), create=False))
    tenths = Tenths(expected)
    n = 0
    with KafkaLog(a["bootstrap"], a["topic"]) as log, Timer() as t:
        wall, cpu = time.perf_counter(), time.process_time()
        for batch in log.read(max_batch=5000):
            n += len(batch)
            tenths.at(n, time.perf_counter() - wall, time.process_time() - cpu)
    if n != expected:  # seen once: a read that returned nothing; not a rate to report
        raise SystemExit(f"read {n} events of the {expected} produced")
    return t.result(n, tenths=tenths.result())


class FirstTenth(EventLog):
    """The first tenth of each partition of `log`, under the log's own uri: projecting it and
    then `log` itself is one projection that pauses at the first tenth."""

    def __init__(self, log: EventLog) -> None:
        self.log, self.uri = log, log.uri
        self.cut = {p: end // 10 for p, end in log.end_offsets().items()}

    def append(self, items: Sequence[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        raise NotImplementedError("a benchmark's view of a log is read-only")

    def end_offsets(self) -> dict[int, int]:
        return dict(self.cut)

    def read(self, start: Mapping[int, int] | None = None, *,
             max_batch: int = 5000) -> Iterator[list[LogRecord]]:
        ends = self.log.end_offsets()
        for p, cut in self.cut.items():
            at = (start or {}).get(p, 0)
            while at < cut:
                # Only partition p (the others start at their end), and never a record past
                # its cut: a batch that crossed it would read up to a batch of records only
                # to drop them (with batches of 245,760 the first tenth read twice its records).
                reader = self.log.read({q: at if q == p else end for q, end in ends.items()},
                                       max_batch=min(max_batch, cut - at))
                try:
                    batch = next(iter(reader), [])
                finally:
                    reader.close()  # type: ignore[attr-defined]
                if not batch:
                    break
                yield batch
                at = batch[-1].offset + 1


def _load_and_store(log: EventLog, db: Path, memory_limit: str | None, batch_size: int,
                    progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Open the store, project `log`, then store the anomaly rows; each phase timed (wall and
    CPU) with its own peak RSS (the kernel's high-water mark is reset between them)."""
    from projections.anomalies import refresh_stored_anomalies

    opened, cpu = time.perf_counter(), time.process_time()
    # open_store applies the projector's default memory_limit unless one is given.
    with store.open_store(db, memory_limit=memory_limit) as con:
        report = project(log, con, batch_size=batch_size, store_anomalies=False,
                         progress=progress)
        out: dict[str, Any] = {
            "events": report.events + report.quarantined, "quarantined": report.quarantined,
            "load_seconds": time.perf_counter() - opened,
            "load_cpu_seconds": time.process_time() - cpu, "load_peak_mb": rss_mb("VmHWM")}
        reset_peak_rss()
        started, started_cpu = time.perf_counter(), time.process_time()
        refresh_stored_anomalies(con)
        out |= {"anomalies_seconds": time.perf_counter() - started,
                "anomalies_cpu_seconds": time.process_time() - started_cpu,
                "anomalies_peak_mb": rss_mb("VmHWM")}
        # Where DuckDB's memory is at the end.
        out["duckdb_memory_mb"] = {tag: round(b / 2**20, 1) for tag, b in con.execute(
            "SELECT tag, memory_usage_bytes FROM duckdb_memory() "
            "WHERE memory_usage_bytes > 0").fetchall()}
        out["memory_limit"] = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    return out


def m_project(a: Args) -> dict[str, Any]:
    """`pitlog project`: open (tables and views created), project everything, store the anomaly
    rows, close. The load and the anomaly rows are timed apart, each with its own peak RSS,
    to show which one memory follows.

    With `first_tenth`, the run pauses once its first tenth is loaded: a forked child loads the
    first tenth of each partition and stores the anomaly rows of that store, then this process
    loads the rest into the same file (from the child's checkpoints) and stores them again. So
    each phase is measured at 1M and at 10M within one run of a 10M log. The child's anomaly
    rows are not part of the run's seconds; its peak RSS is its own, so memory the anomaly
    phase leaves allocated does not count as the load's."""
    db = fresh(Path(a["db"]))
    source = EmbeddedLog(Path(a["source"]), create=False)
    if a.get("variant") == "per_message":
        floor.use_per_message_decode()
    batch_size = a.get("batch_size", DEFAULT_BATCH_SIZE)
    limit = a.get("memory_limit")
    base_rss = rss_mb("VmRSS")
    tenths = Tenths(_count(source))
    first: dict[str, Any] = {}
    if a.get("first_tenth"):
        ctx = multiprocessing.get_context("fork")  # no DuckDB connection is open here yet
        receive, send = ctx.Pipe(duplex=False)
        child = ctx.Process(target=lambda: send.send(
            _load_and_store(FirstTenth(source), db, limit, batch_size)))
        child.start()
        send.close()  # the child's end: a child that dies then ends recv() with EOFError
        try:
            first = receive.recv()
        except EOFError:
            raise SystemExit(f"the first tenth's child exited with {child.exitcode}") from None
        child.join()
        tenths.at(first["events"], first["load_seconds"], first["load_cpu_seconds"])
    base_wall, base_cpu = first.get("load_seconds", 0.0), first.get("load_cpu_seconds", 0.0)
    opened, cpu = time.perf_counter(), time.process_time()
    whole = _load_and_store(source, db, limit, batch_size, progress=lambda done: tenths.at(
        done, base_wall + time.perf_counter() - opened, base_cpu + time.process_time() - cpu))
    load = base_wall + whole["load_seconds"]
    load_cpu = base_cpu + whole["load_cpu_seconds"]
    result = {**whole, "seconds": load + whole["anomalies_seconds"],
              "cpu_seconds": load_cpu + whole["anomalies_cpu_seconds"],
              "events": first.get("events", 0) + whole["events"],
              "quarantined": first.get("quarantined", 0) + whole["quarantined"],
              "batch_size": batch_size, "load_seconds": load, "load_cpu_seconds": load_cpu,
              "load_peak_mb": round(max(first.get("load_peak_mb", 0.0),
                                        whole["load_peak_mb"]), 1),
              "anomalies_peak_mb": round(whole["anomalies_peak_mb"], 1),
              "rss_base_mb": round(base_rss, 1), "rss_peak_mb": round(max(
                  first.get("anomalies_peak_mb", 0.0), first.get("load_peak_mb", 0.0),
                  whole["load_peak_mb"], whole["anomalies_peak_mb"]), 1),
              "tenths": tenths.result()}
    if first:
        result |= {"first_tenth_events": first["events"],
                   "first_tenth_load_peak_mb": round(first["load_peak_mb"], 1),
                   "first_tenth_anomalies_seconds": first["anomalies_seconds"],
                   "first_tenth_anomalies_cpu_seconds": first["anomalies_cpu_seconds"],
                   "first_tenth_anomalies_peak_mb": round(first["anomalies_peak_mb"], 1)}
    return result


def m_floor(a: Args) -> dict[str, Any]:
    db = fresh(Path(a["db"]))
    source = EmbeddedLog(Path(a["source"]), create=False)
    batch_size = a.get("batch_size", DEFAULT_BATCH_SIZE)
    with Timer() as t:
        n = floor.floor_projection(source, db, batch_size)
    fresh(db)
    return t.result(n, batch_size=batch_size)


def m_decode_ideas(a: Args) -> dict[str, Any]:
    import decode_ideas

    source = EmbeddedLog(Path(a["source"]), create=False)
    with Timer() as t:
        results = decode_ideas.compare(source, a["messages"], a.get("batch_size", 5000))
    return t.result(a["messages"], ideas=results)


def _latencies(con: duckdb.DuckDBPyConnection, calls: list[Callable[[], object]],
               budget_s: float = 120.0) -> dict[str, Any]:
    """Each call timed on its own; stops early (and says so) once `budget_s` is spent, so a
    query that does not scale cannot stall the suite."""
    times: list[float] = []
    with Timer() as t:
        for call in calls:
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
            if sum(times) > budget_s:
                break
    return {**t.result(0), "latencies": times, "asked": len(calls)}


def m_views(a: Args) -> dict[str, Any]:
    """Open the store read-write once, so its views are the current SQL files' (the query
    measurements open it read-only, and a store projected by an earlier build keeps its views)."""
    with Timer() as t:
        store.open_store(a["db"]).close()
    return t.result(0)


def m_replay(a: Args) -> dict[str, Any]:
    from projections.replay import replay_shoe

    with duckdb.connect(a["db"], read_only=True) as con:
        shoes = con.execute("SELECT DISTINCT table_id, shoe_id FROM events WHERE shoe_id "
                            "IS NOT NULL ORDER BY ALL").fetchall()
        picks = random.Random(a.get("seed", 1)).sample(shoes, min(a["lookups"], len(shoes)))
        found = []
        res = _latencies(con, [lambda t=t, s=s: found.append(len(replay_shoe(con, s, t).events))
                               for t, s in picks])
    return {**res, "events_per_replay": sorted(found)[len(found) // 2]}


def m_dispute(a: Args) -> dict[str, Any]:
    from projections.dispute import dispute
    from projections.moment import OutsideRound

    with duckdb.connect(a["db"], read_only=True) as con:
        spans = con.execute("SELECT table_id, min(occurred_at), max(occurred_at) FROM events "
                            "GROUP BY ALL ORDER BY ALL").fetchall()
        rng = random.Random(a.get("seed", 2))
        picks = []
        for _ in range(a["lookups"]):
            table, lo, hi = rng.choice(spans)
            picks.append((table, lo + timedelta(seconds=rng.uniform(0, (hi - lo).total_seconds()))))
        cards = []

        def one(t: str, at: Any) -> None:
            try:  # a random moment may fall between rounds: the answer then names the rounds
                cards.append(len(dispute(con, t, at=at).cards))
            except OutsideRound:
                pass

        res = _latencies(con, [lambda t=t, at=at: one(t, at) for t, at in picks])
    return {**res, "cards_per_dispute": sorted(cards)[len(cards) // 2]}


def m_reconcile_day(a: Args) -> dict[str, Any]:
    from projections.reconcile import reconcile

    with duckdb.connect(a["db"], read_only=True) as con:
        # The busiest gaming day (06:00 to 06:00 UTC, the default calendar).
        ((day,),) = con.execute(
            "SELECT CAST(occurred_at - INTERVAL 6 HOUR AS DATE) AS d FROM events "
            "GROUP BY d ORDER BY count(*) DESC, d LIMIT 1").fetchall()
        rows: list[int] = []
        res = _latencies(con, [lambda: rows.append(len(reconcile(con, ("table",), day=day)))
                               for _ in range(a["lookups"])])
    return {**res, "day": str(day), "groups": rows[0] if rows else 0}


def m_dispute_parts(a: Args) -> dict[str, Any]:
    """The dispute lookup's queries one by one (as dispute.dispute runs them), to show which of
    them grow with the store; the round and its settlements both by their queries and from the
    writer's kept rows when the round's shoe has them."""
    from projections import dispute as d
    from projections import dispute_sql as sql
    from projections import replay
    from projections.anomalies import anomalies_touching
    from projections.moment import OutsideRound, locate
    from projections.queries import rows

    with duckdb.connect(a["db"], read_only=True) as con:
        spans = con.execute("SELECT table_id, min(occurred_at), max(occurred_at) FROM events "
                            "GROUP BY ALL ORDER BY ALL").fetchall()
        rng = random.Random(a.get("seed", 2))
        parts: dict[str, list[float]] = {}
        t = Timer().__enter__()

        def timed(name: str, call: Callable[[], Any]) -> Any:
            started = time.perf_counter()
            out = call()
            parts.setdefault(name, []).append(time.perf_counter() - started)
            return out

        for _ in range(a["lookups"]):
            table, lo, hi = rng.choice(spans)
            at = lo + timedelta(seconds=rng.uniform(0, (hi - lo).total_seconds()))
            try:
                span = timed("round_at", lambda tb=table, at=at: locate(con, tb, at))
            except OutsideRound:
                continue
            shoe, rnd = span.shoe_id, span.round_no
            ctx, kept = timed("context and kept check", lambda tb=table, s=span: d._context(
                con, tb, s.shoe_id, s.first_seq, s.last_seq))
            if kept:  # the queries' own parameters, for timing them beside the kept rows
                ctx = replay.query_params(con, replay.shoe_span(con, shoe, table))
            one = {**ctx, "round": rnd}
            (head,) = timed("round (query)", lambda one=one: rows(con, d._ONE_ROUND, one))
            if kept:
                timed("round (kept)", lambda tb=table, s=shoe, r=rnd: replay.kept_round(
                    con, tb, s, r))
            inr = {"table": table, "shoe": shoe, "round": rnd, "round_first": head["first_seq"],
                   "round_last": head["last_seq"]}
            timed("cards", lambda inr=inr, ctx=ctx, h=head: rows(con, sql.CARDS, {
                **inr, "first": ctx["first"], "last": ctx["last"],
                "third_pos": h["third_card_pos"], "kind": h["kind"]}))
            timed("announcements", lambda inr=inr: rows(con, sql.ANNOUNCEMENTS, inr))
            timed("wagers", lambda inr=inr: rows(con, sql.WAGERS, {**inr, "seat": None}))
            timed("settlements (query, ledger_of)", lambda one=one: rows(
                con, d._ONE_ROUNDS_SETTLEMENTS, {**one, "seat": None}))
            if kept:
                timed("settlements (kept)", lambda tb=table, s=shoe, r=rnd: replay.kept_settlements(
                    con, tb, s, r, None))
            timed("anomalies (stored rows)", lambda h=head, tb=table, s=shoe, r=rnd:
                  anomalies_touching(con, tb, s, r, h["first_seq"], h["last_seq"]))
            if sum(sum(v) for v in parts.values()) > a.get("budget_s", 120.0):
                break
        t.__exit__()
    return {**t.result(0), "parts": parts}


MEASUREMENTS: dict[str, Callable[[Args], dict[str, Any]]] = {
    "simulate": m_simulate, "append": m_append, "kafka_produce": m_kafka_produce,
    "kafka_consume": m_kafka_consume, "project": m_project, "floor": m_floor,
    "decode_ideas": m_decode_ideas, "views": m_views, "replay": m_replay, "dispute": m_dispute,
    "dispute_parts": m_dispute_parts,
    "reconcile_day": m_reconcile_day,
}

if __name__ == "__main__":
    name, args = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(MEASUREMENTS[name](args)))

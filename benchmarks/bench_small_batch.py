"""Session 36 (benchmarks/results.md, "Session 36"): what one small live batch costs project()
in all, wall and process CPU, and which statements the CPU goes to: the floor under any
batch's event-to-alert latency (issue 16) and most of what the test suite pays per batch.

    python benchmarks/bench_small_batch.py [--tables 4] [--rounds 150] [--history 3000]
        [--events 50] [--batches 8] [--threads N]

A simulated evening (`pitlog simulate`'s simulator, seed 12) is written to an embedded log in a
temporary folder; its first `--history` records are projected into a new store, then
`--batches` batches of `--events` records each (the first one untimed: it warms the caches).
Per batch: project()'s wall and process CPU seconds (all threads). Then, over the timed batches,
each DuckDB statement's thread CPU, summed by the code line that ran it (the detector's family
statements run in threads of their own: `incremental.py ... _run_family` and the like).
`--threads`: DuckDB's worker threads for the store (default: DuckDB's, the cores).
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
import traceback
from itertools import zip_longest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import duckdb  # noqa: E402

from events.log.embedded.log import EmbeddedLog  # noqa: E402
from events.simulation.simulator import SimConfig, simulate  # noqa: E402
from projections.projector import project  # noqa: E402

_STATS: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
_ON = [False]


def _timed(method):  # type: ignore[no-untyped-def]
    def run(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not _ON[0]:
            return method(self, *args, **kwargs)
        start = time.thread_time()
        try:
            return method(self, *args, **kwargs)
        finally:
            caller = traceback.extract_stack(limit=2)[0]
            entry = _STATS[f"{Path(caller.filename).name}:{caller.lineno} {caller.name}"]
            entry[0] += 1
            entry[1] += time.thread_time() - start
    return run


def interleaved_evening(folder: Path, tables: int, rounds: int) -> list[tuple[bytes, bytes]]:
    """A simulated evening (seed 12, irregularities 0.05) written to `folder`/source, its
    records with the partitions interleaved, as a live feed's tables are (each keeps its
    order)."""
    source = EmbeddedLog(folder / "source")
    simulate(source, SimConfig(seed=12, tables=tables, rounds=rounds, irregularities=0.05))
    by_part: dict[int, list[tuple[bytes, bytes]]] = collections.defaultdict(list)
    for batch in source.read():
        for r in batch:
            by_part[r.partition].append((r.key, r.value))
    source.close()
    return [rec for group in zip_longest(*by_part.values()) for rec in group if rec]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--history", type=int, default=3000)
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    DuckDB = duckdb.DuckDBPyConnection
    for name in ("execute", "sql"):
        setattr(DuckDB, name, _timed(getattr(DuckDB, name)))
    folder = Path(tempfile.mkdtemp(prefix="bench-small-batch-"))
    records = interleaved_evening(folder, args.tables, args.rounds)
    log = EmbeddedLog(folder / "log")
    config = {"threads": args.threads} if args.threads else {}
    con = duckdb.connect(str(folder / "v.duckdb"), config=config)
    log.append(records[:args.history])
    project(log, con)
    pos, batches = args.history, []
    for i in range(args.batches):
        log.append(records[pos:pos + args.events])
        pos += args.events
        _ON[0] = i > 0
        wall, cpu = time.perf_counter(), time.process_time()
        project(log, con)
        if i > 0:
            batches.append({"wall_s": round(time.perf_counter() - wall, 3),
                            "cpu_s": round(time.process_time() - cpu, 3)})
    _ON[0] = False
    timed = len(batches)
    statements = sorted(((k, n / timed, cpu / timed) for k, (n, cpu) in _STATS.items()),
                        key=lambda r: -r[2])
    print(json.dumps({
        "records": len(records), "history": args.history, "events_per_batch": args.events,
        "threads": args.threads or None, "batches": batches,
        "statements_cpu_ms_per_batch": [{"where": k, "per_batch": round(n, 1),
                                         "cpu_ms": round(c * 1000, 1)}
                                        for k, n, c in statements[:20]],
        "statements_cpu_s_per_batch": round(sum(c for _, _, c in statements), 3)}, indent=1))
    con.close()


if __name__ == "__main__":
    main()

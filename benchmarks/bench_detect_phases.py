"""Where one live batch's detection time goes, by phase and by family (issue 16, benchmark).

    python benchmarks/bench_detect_phases.py --source SRC --store W/h1000000 \
        [--events 300] [--batches 3] [--materialize rack,rounds,...] [--prepared]

`--store` is a folder bench_live.py left (`log/` and `v.duckdb`, projected from SRC's first
records); it is copied, so it stays as it was and every run starts from the same store. Then
`--batches` times: the source's next `--events` records are appended and project() runs one
batch. Measured per batch: Detector.plan, the window copy (detect_rounds.copy_windows), each
family's statement and apply, in wall and process CPU seconds (all threads; on a shared machine
the wall time is mostly waiting for a CPU, the CPU time is the work), and per family DuckDB's
own profile: binding and planning (planner), optimizer, physical planning, the whole query and
its CPU. The families run one after another here (the detector runs them at once), so each is
timed alone.

`--materialize V1,V2`: an experiment, not what the detector does: in each window catalog those
of the views that the catalog's families read become tables, filled once per batch before the
families run (a view is inlined, bound and planned at every reference). `--prepared`: after
the batches, each family statement is PREPAREd and EXECUTEd twice, to show whether DuckDB
reuses the plan (its profile then reports no planner time).
Prints one JSON object; benchmarks/results.md has the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import duckdb  # noqa: E402
from bench_live import continuation  # noqa: E402

import projections.incremental as incremental  # noqa: E402
from events.log.registry import open_log  # noqa: E402
from projections.projector import project  # noqa: E402


def profiled(cur: duckdb.DuckDBPyConnection, sql: str, out: Path) -> dict[str, float]:
    """Run `sql` on `cur` with DuckDB's detailed profile: its seconds by stage."""
    cur.execute("SET enable_profiling = 'json'")
    cur.execute("SET profiling_mode = 'detailed'")
    cur.execute(f"SET profiling_output = '{out}'")
    started = time.perf_counter()
    cur.execute(sql)
    wall = time.perf_counter() - started
    cur.execute("PRAGMA disable_profiling")
    p = json.loads(out.read_text())
    return {"wall": wall, "planner": p["planner"]["total_time"],
            "optimizer": p["optimizer"]["total_time"],
            "physical_planner": p["physical_planner"]["total_time"],
            "query": p["query"]["total_time"], "query_cpu": p["query"]["cpu_time"]}


def materialized(views: tuple[str, ...]) -> dict[str, list[str]]:
    """The --materialize experiment: window_views makes those of `views` that a catalog's
    families read tables (the view renamed pitlog_src_<name>); returns catalog -> names, in
    the order fill() fills them."""
    shared: dict[str, list[str]] = {}
    original_views = incremental.window_views

    def window_views(cur, wanted):  # type: ignore[no-untyped-def]
        original_views(cur, wanted)
        texts = dict(cur.execute(
            "SELECT view_name, sql FROM duckdb_views() WHERE database_name = current_database() "
            "UNION ALL SELECT function_name, macro_definition FROM duckdb_functions() "
            "WHERE database_name = current_database() AND macro_definition IS NOT NULL"
        ).fetchall())
        seen: set[str] = set()
        todo = [f for f in incremental.anomaly_families(cur) if wanted(f)]
        while todo:  # what the catalog's families read, through views and macros
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(w for w in re.findall(r"\w+", texts.get(name) or "") if w in texts)
        order = [n for (n,) in cur.execute(
            "SELECT view_name FROM duckdb_views() WHERE database_name = current_database() "
            "ORDER BY view_oid").fetchall()]
        ((catalog,),) = cur.execute("SELECT current_database()").fetchall()
        names = [n for n in order if n in views and n in seen]
        for name in names:
            cur.execute(f"ALTER VIEW {name} RENAME TO pitlog_src_{name}")
            cur.execute(f"CREATE TABLE {name} AS SELECT * FROM pitlog_src_{name} LIMIT 0")
        shared[catalog] = names
    incremental.window_views = window_views
    return shared


def fill(scratch: duckdb.DuckDBPyConnection, shared: dict[str, list[str]],
         fills: dict[str, list[float]]) -> None:
    """The batch's rows of the --materialize tables, one after another, timed."""
    cur = scratch.cursor()
    for catalog, names in shared.items():
        cur.execute(f"USE {catalog}")
        for name in names:
            started = time.perf_counter()
            cur.execute(f"DELETE FROM {name}")
            cur.execute(f"INSERT INTO {name} SELECT * FROM pitlog_src_{name}")
            fills.setdefault(f"{catalog}.{name}", []).append(time.perf_counter() - started)
    cur.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", type=Path, required=True)
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--events", type=int, default=300)
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--materialize", default="")
    ap.add_argument("--prepared", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pitlog-phases-"))
    shutil.copytree(args.store, work / "s")
    uri = f"file://{work / 's' / 'log'}"
    con = duckdb.connect(str(work / "s" / "v.duckdb"))
    con.execute("UPDATE checkpoints SET source = ?", [uri])  # the copy is the same log
    con.execute("UPDATE anomalies_stored_at SET source = ?", [uri])
    con.execute("SET memory_limit = '512MB'")  # the read-write default (store.py)
    log = open_log(uri)
    project(log, con, publish_alerts=False)  # the detector's set-up comes with the 1st batch
    feed = continuation(args.source, work / "s" / "log", args.events * args.batches)
    fills: dict[str, list[float]] = {}
    shared = materialized(tuple(args.materialize.split(","))) if args.materialize else {}
    batch: dict[str, object] = {}
    batches: list[dict[str, object]] = []
    prof = work / "profile.json"

    def families(self):  # type: ignore[no-untyped-def]
        # The detector's own statements, one at a time, each profiled.
        fill(self.scratch, shared, fills)
        for i, family in enumerate(self.families):
            self.cursors[i].execute(f"DELETE FROM {incremental.SCRATCH}.found_{i}")
            c0 = time.process_time()
            stats = profiled(self.cursors[i], self.inserts[i], prof)
            batch[family] = {**stats, "process_cpu": time.process_time() - c0}
        s = self.scratch
        s.execute("DELETE FROM found")
        s.execute("INSERT INTO found " + " UNION ALL ".join(
            f"SELECT * FROM found_{i}" for i in range(len(self.families))))
    incremental.Detector._evaluate_families = families
    for name in ("plan", "evaluate", "apply"):
        f = getattr(incremental.Detector, name)

        def timed(*a, _f=f, _n=name, **k):  # type: ignore[no-untyped-def]
            t, c = time.perf_counter(), time.process_time()
            r = _f(*a, **k)
            batch[_n] = {"wall": time.perf_counter() - t, "process_cpu": time.process_time() - c}
            if _n == "evaluate":
                batch["window"] = r
                batch["phases"] = dict(a[0].phases)
            return r
        setattr(incremental.Detector, name, timed)
    writer = open_log(uri)
    for b in range(args.batches):
        writer.append(feed[b * args.events:(b + 1) * args.events])
        batch = {}
        project(log, con, publish_alerts=False)
        batches.append(batch)
    result: dict[str, object] = {"batches": _rounded(batches), "fills": _rounded(fills)}
    if args.prepared:
        detector = incremental.detector_for(con)[0]
        result["prepared"] = {}
        for i, family in enumerate(detector.families):
            cur = detector.cursors[i]
            cur.execute(f"PREPARE pitlog_q{i} AS {detector.inserts[i]}")
            result["prepared"][family] = _rounded({  # type: ignore[index]
                "direct": profiled(cur, detector.inserts[i], prof),
                "execute_1": profiled(cur, f"EXECUTE pitlog_q{i}", prof),
                "execute_2": profiled(cur, f"EXECUTE pitlog_q{i}", prof)})
    con.close()
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({**result, "load_average": os.getloadavg(),
                      "duckdb": duckdb.__version__, "materialize": args.materialize}))


def _rounded(x):  # type: ignore[no-untyped-def]
    if isinstance(x, float):
        return round(x, 3)
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


if __name__ == "__main__":
    main()

"""The projector's load phase against a native pipeline beside it, on one log, in one run
(issue 19, item 1).

Three ways to load the same log into a fresh `events` table, each in its own process
(alternating order over the repeats), CPU and wall time of the load alone (the store opened
and its tables created before the clock starts):
  old     pitlog's projector through the record path (LogRecord per record, batch_decode.py):
          `project(..., store_anomalies=False)` with PITLOG_NATIVE_DECODE=0.
  new     the same call on the bulk path (projections/frames.py: frames, polars, checks).
  native  a native pipeline: the embedded log's raw segment read (read_frames: one read per
          batch, frame fields by numpy), one Avro container block per writer schema read by
          polars.read_avro (no checks, no schema resolution beyond renaming), the columns cast
          to the events table's types, one Arrow INSERT and one commit per batch. No
          checkpoints, quarantine, hash check or grouping by table: what any loader pays.

  before  with --before-root ROOT: `new` run by an earlier checkout of pitlog at ROOT (its own
          benchmarks/bench_load.py and code), old code beside new in the same run.

Usage: benchmarks/bench_load.py --log LOG --work DIR [--repeats 3] [--out results.json]
       [--variants before,new,native --before-root /tmp/pitlog-19e4757]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from events.log.embedded.log import EmbeddedLog  # noqa: E402
from events.wire import codec  # noqa: E402
from events.wire.avro_writer import long_bytes  # noqa: E402
from events.wire.batch_plan import plan  # noqa: E402
from events.wire.native_decode import _convert, container_header  # noqa: E402
from projections import store  # noqa: E402
from projections.memory import LOAD_MEMORY_LIMIT, memory_limit_at_most  # noqa: E402
from projections.projector import DEFAULT_BATCH_SIZE, project  # noqa: E402


def _container(sv: codec.SchemaVersion) -> tuple[bytes, bytes]:
    """The writer schema, named types inlined (polars does not resolve references), as an
    object container file's header; and its sync marker."""
    names: dict[str, Any] = {}
    fresh = iter(range(1, 1 << 30))

    def inline(node: Any) -> Any:
        if isinstance(node, str):
            return {**inline(names[node]), "name": f"R{next(fresh)}"} if node in names else node
        if isinstance(node, list):
            return [inline(b) for b in node]
        if node.get("type") in ("fixed", "enum", "record"):
            names[node["name"]] = node
        if node.get("type") == "record":
            return {"type": "record", "name": node["name"], "fields": [
                {"name": f["name"], "type": inline(f["type"])} for f in node["fields"]]}
        if node.get("type") == "array":
            return {**node, "items": inline(node["items"])}
        if node.get("type") == "enum":
            return "long"  # polars panics on an enum inside an array's records; read the index
        if node.get("type") == "fixed":
            return node
        return inline(node["type"])  # {"type": "long"}: polars reads only the plain name

    schema = inline(codec._strip_logical_types(json.loads(sv.path.read_text())))
    sync = os.urandom(16)
    return container_header(schema, sync), sync


def native_load(log: EmbeddedLog, con: duckdb.DuckDBPyConnection, batch_size: int) -> int:
    import polars as pl

    reg = codec.registry()
    schema = store.arrow_schema(store.event_columns())
    types = {f.name: f.type for f in schema}
    heads = {int.from_bytes(fp, "little"): (sv, *_container(sv), {
        op.column: op for op in plan(sv, sv).ops if op.kind in ("enum", "array")})
             for fp, sv in reg.by_fingerprint.items()}
    n = 0
    for p, end in log.end_offsets().items():
        for fb in log.read_frames(p, 0, end, max_batch=batch_size):
            b = np.frombuffer(fb.buf, np.uint8)
            fps = np.ascontiguousarray(b[(fb.value_at + 2)[:, None] + np.arange(8)]).view(
                "<u8").ravel()
            uniq, group = np.unique(fps, return_inverse=True)
            mv = memoryview(fb.buf)
            tables = []
            for g, fp in enumerate(uniq.tolist()):
                rows = np.nonzero(group == g)[0]
                sv, head, sync, enums = heads[fp]
                body = b"".join([mv[a:z] for a, z in zip(
                    (fb.value_at[rows] + codec.HEADER_LEN).tolist(), fb.end[rows].tolist(),
                    strict=True)])
                t = pl.read_avro(io.BytesIO(b"".join(
                    (head, long_bytes(len(rows)), long_bytes(len(body)), body, sync)))).to_arrow()
                cols = {name: (_convert(enums[name], col.combine_chunks())[0]
                               if name in enums else col).cast(types[name])
                        for name, col in zip(t.column_names, t.columns, strict=True)
                        if name in types}
                cols["event_type"] = pa.repeat(pa.scalar(sv.event_type), len(rows))
                cols["log_partition"] = pa.repeat(pa.scalar(p, pa.int32()), len(rows))
                cols["log_offset"] = pa.array(fb.offset + rows)
                tables.append(pa.table(cols))
            batch = pa.concat_tables(tables, promote_options="default")
            con.register("native_batch", batch)
            con.begin()
            con.execute("INSERT INTO events BY NAME SELECT * FROM native_batch")
            con.commit()
            con.unregister("native_batch")
            n += batch.num_rows
    return n


def one(variant: str, log_dir: Path, db: Path, batch_size: int) -> dict[str, Any]:
    """One load in this process: store opened and prepared first, then only the load timed."""
    if variant == "old":
        os.environ["PITLOG_NATIVE_DECODE"] = "0"
    log = EmbeddedLog(log_dir, create=False)
    db.unlink(missing_ok=True)
    with store.open_store(db) as con:
        store.prepare(con)
        wall, cpu = time.perf_counter(), time.process_time()
        if variant == "native":
            with memory_limit_at_most(con, LOAD_MEMORY_LIMIT):
                events = native_load(log, con, batch_size)
        else:
            report = project(log, con, batch_size=batch_size, store_anomalies=False,
                             publish_alerts=False)
            events = report.events + report.quarantined
        out = {"variant": variant, "events": events,
               "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
        (stored,), = con.execute("SELECT count(*) FROM events").fetchall()
        out["rows"] = stored
    db.unlink(missing_ok=True)
    Path(str(db) + ".wal").unlink(missing_ok=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    ap.add_argument("--variants", default="old,new,native")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--before-root", type=Path,
                    help="an earlier checkout of pitlog, for the `before` variant")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    if a.one:
        print(json.dumps(one(a.one, a.log, a.work / f"{a.one}.duckdb", a.batch_size)))
        return
    variants = a.variants.split(",")
    if "before" in variants and a.before_root is None:
        ap.error("the before variant needs --before-root")
    for v in variants:
        (a.work / v).mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    load = [os.getloadavg()[0]]
    for r in range(a.repeats):
        for v in variants if r % 2 == 0 else variants[::-1]:
            root = a.before_root if v == "before" else ROOT
            out = subprocess.run([sys.executable, str(root / "benchmarks" / "bench_load.py"),
                                  "--one", "new" if v == "before" else v, "--log", str(a.log),
                                  "--work", str(a.work / v), "--batch-size", str(a.batch_size)],
                                 check=True, capture_output=True, text=True, cwd=root,
                                 env={**os.environ, "PYTHONPATH": str(root)}).stdout
            runs[v].append(json.loads(out.splitlines()[-1]))
            load.append(os.getloadavg()[0])
            print(v, runs[v][-1], f"load {load[-1]:.2f}", file=sys.stderr)
    med = {v: {k: statistics.median(x[k] for x in rs) for k in ("wall_s", "cpu_s")}
           for v, rs in runs.items()}
    events = runs[variants[0]][0]["events"]
    size = sum(f.stat().st_size for f in a.log.iterdir())
    result = {"events": events, "log_bytes": size, "batch_size": a.batch_size,
              "repeats": a.repeats, "load_average": load, "median": med, "runs": runs}
    if "native" in med:
        result["ratio_to_native"] = {v: {k: med[v][k] / med["native"][k] for k in med[v]}
                                     for v in med}
    if "before" in med and "new" in med:
        result["new_over_before"] = {k: med["new"][k] / med["before"][k] for k in med["new"]}
    text = json.dumps(result, indent=1)
    if a.out:
        a.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

"""What the game-order reach of K (projections/incremental.py, _stretch_start;
docs/live-detection.md, "A card stamped back in an earlier shoe") costs an ordinary batch:
the detector's plan, old (projections/incremental.py at `--old-rev`, by default integ16: the
base of session 16, before the change) beside new, in one run on a copy of a projected store,
and the one-time state upgrade of a store made before it (incremental.upgrade_state).

    python benchmarks/bench_stretch_plan.py STORE.duckdb [--old-rev integ16] [--per-table 2]

The batch is each table's last `--per-table` events moved after its last seq, offset and time
(each table's stream in order, its current shoe touched, no card stamped back: what a live
feed's batch is). The copy is made in a temporary folder; the store is only read. Prints the
median of `--runs` plans of each (alternating, after one warm-up each), in milliseconds, and
the upgrade's seconds.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from projections import incremental  # noqa: E402


def _old_module(rev: str, folder: Path):
    """projections/incremental.py as of `rev`, importable beside the current one."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:projections/incremental.py"],
                          check=True, capture_output=True, text=True).stdout
    path = folder / "incremental_old.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("incremental_old", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--old-rev", default="integ16")
    parser.add_argument("--per-table", type=int, default=2)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = folder / "v.duckdb"
        shutil.copyfile(args.store, db)
        old = _old_module(args.old_rev, folder)
        with duckdb.connect(str(db)) as con:
            started = time.perf_counter()
            incremental.upgrade_state(con)  # a store made before: built again
            upgraded = time.perf_counter() - started
            ((events,),) = con.execute("SELECT count(*) FROM events").fetchall()
            batch = con.sql(f"""
                SELECT * REPLACE (seq + 10000000 AS seq, log_offset + 1000000000 AS log_offset,
                                  occurred_at + INTERVAL 1 HOUR AS occurred_at)
                FROM events
                QUALIFY row_number() OVER (PARTITION BY table_id ORDER BY seq DESC)
                        <= {args.per_table}
                ORDER BY log_partition, log_offset""").to_arrow_table()
            times: dict[str, list[float]] = {"old": [], "new": []}
            detectors = {"old": old.Detector(con), "new": incremental.Detector(con)}
            for detector in detectors.values():
                # The plan reads the store's state and the batch alone: a plain cursor, not the
                # window catalogs (Detector._ready), which it never queries.
                detector.scratch = con.cursor()
            for run in range(args.runs + 1):
                for name in ("old", "new"):
                    detector = detectors[name]
                    started = time.perf_counter()
                    scopes = detector.plan(batch)
                    took = time.perf_counter() - started
                    if run:  # the first of each: a warm-up
                        times[name].append(took * 1000)
                    assert all(sc.k is not None for sc in scopes), "not an in-order batch"
                    if name == "new":
                        assert detector.stretches["reached_back"] == 0
            print(f"store {args.store} ({events} events), batch of {batch.num_rows} events "
                  f"over {len(scopes)} tables")
            print(f"state upgrade (once per store): {upgraded:.2f} s")
            for name in ("old", "new"):
                print(f"plan {name} ({args.old_rev if name == 'old' else 'this tree'}): "
                      f"median {statistics.median(times[name]):.1f} ms of {args.runs}")
            ratio = statistics.median(times["new"]) / statistics.median(times["old"])
            print(f"ratio new/old: {ratio:.2f}")


if __name__ == "__main__":
    main()

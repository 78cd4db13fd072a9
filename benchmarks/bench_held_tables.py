"""What `pitlog simulate` costs before it appends to a log that has events: the rerun check
(events/simulation/rerun.py `held_tables`), old beside new, on a copy of a simulated log
(e.g. /work/stores/s1m/log: `--tables 200 --rounds 289 --seed 12`, 988,454 events).

- old (the base commit's rerun.py, loaded from git): each table's head read, then its steps
  generated up to the head's time, and to its end where the head's event id is one of the
  simulation's (a table recognised by its newest event id only);
- new: the same heads; each table's steps recorded to nowhere (the bytes `simulate` writes)
  up to the head's seq, the head's chain hash compared, then generated to its end where it
  is this simulation's.

Both read the heads once (`last_records`, the recorder's read: the embedded log reads every
record once per process); that read is timed on its own. Each check is timed for the same
settings as the log (a plain rerun: every table held whole) and for one round more (every
table's head not this simulation's: old appends the evening again, new refuses), alternating
old and new `--repeats` times; CPU seconds (process time) and wall.

    python benchmarks/bench_held_tables.py --log /path/to/copy [--seed 12 --tables 200
        --rounds 289] [--base integ16] [--repeats 2]

Prints one line per run and the new/old ratios; benchmarks/results.md has the numbers.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from events.log.registry import open_log
from events.recording.recorder import last_records
from events.simulation import rerun
from events.simulation.simulator import SimConfig

REPO = Path(__file__).resolve().parent.parent


def _old(base: str) -> types.ModuleType:
    text = subprocess.run(["git", "-C", str(REPO), "show", f"{base}:events/simulation/rerun.py"],
                          check=True, capture_output=True, text=True).stdout
    module = sys.modules["old_rerun"] = types.ModuleType("old_rerun")  # dataclasses look it up
    exec(compile(text, "old_rerun.py", "exec"), module.__dict__)  # noqa: S102 - our own file
    return module


def _timed(run: Callable[[], object]) -> tuple[float, float, object]:
    cpu, wall = time.process_time(), time.perf_counter()
    out = run()
    return time.process_time() - cpu, time.perf_counter() - wall, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True, help="a copy: the heads' read may recover it")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=289)
    ap.add_argument("--base", default="integ16")
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    old = _old(a.base)
    with open_log(a.log, create=False) as log:
        cpu, wall, out = _timed(lambda: last_records(log))
        heads = cast(dict[bytes, bytes], out)
        print(f"heads: {len(heads)} tables, {cpu:.2f} CPU s, {wall:.2f} s wall (once per "
              f"process)", flush=True)
        results: dict[tuple[str, str], list[float]] = {}
        for case, rounds in (("same settings", a.rounds), ("one round more", a.rounds + 1)):
            config = SimConfig(seed=a.seed, tables=a.tables, rounds=rounds)
            for _ in range(a.repeats):
                for name, check in (("old", lambda c=config: old.held_tables(log, c)),
                                    ("new", lambda c=config: rerun.held_tables(heads, c))):
                    cpu, wall, out = _timed(check)
                    held = cast(list[Any], out)  # old and new Held both have held and total
                    whole = sum(1 for h in held if 0 < h.held == h.total)
                    print(f"{case}: {name} {cpu:.2f} CPU s, {wall:.2f} s wall; tables with "
                          f"records {len(held)}, held whole {whole}", flush=True)
                    results.setdefault((case, name), []).append(cpu)
        for case in ("same settings", "one round more"):
            o, n = (statistics.median(results[case, x]) for x in ("old", "new"))
            print(f"{case}: median CPU old {o:.2f} s, new {n:.2f} s, new/old {n / o:.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

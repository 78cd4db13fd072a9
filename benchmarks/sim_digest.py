"""Digest of what `simulate` writes for a seed: SHA-256 of each partition's segment and index
(meta.json holds the log's random id, so it is left out). Run with PYTHONPATH at an old tree and
at this one to show a change to the simulator or the recorder wrote the same bytes:

    PYTHONPATH=/tmp/old-tree python benchmarks/sim_digest.py --seeds 1,7,42 > old.json
    python benchmarks/sim_digest.py --seeds 1,7,42 > new.json && diff old.json new.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate


def digest(seed: int, tables: int, rounds: int, rate: float) -> tuple[str, dict[str, str]]:
    """One evening's entry: its name (with the count of events) and its files' SHA-256s.
    tests/events/test_simulator_digest.py checks one against results_issue19_sim_digest.json."""
    folder = Path(tempfile.mkdtemp(prefix="pitlog-simdigest-"))
    try:
        with EmbeddedLog(folder / "log", partitions=4) as log:
            events = simulate(log, SimConfig(seed=seed, tables=tables, rounds=rounds,
                                             irregularities=rate)).events
        files = sorted((folder / "log").glob("p*.*"))
        return (f"seed {seed}, irregularities {rate}, {events} events",
                {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files})
    finally:
        shutil.rmtree(folder)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", default="1,7,42")
    ap.add_argument("--tables", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--irregularities", type=float, default=0.05)
    a = ap.parse_args()
    out = dict(digest(int(seed), a.tables, a.rounds, rate)
               for seed in a.seeds.split(",") for rate in (0.0, a.irregularities))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

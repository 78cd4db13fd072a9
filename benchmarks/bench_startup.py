"""A query command's start, old against new in one run (issue 19, item 4).

    python benchmarks/bench_startup.py --db /tmp/pitlog-bench/1000000/pitlog.duckdb --old main

Each round runs, one after the other (the order rotating between rounds), each in a fresh
interpreter: `python -c "import duckdb"` (the yardstick), the replay query alone (a child that
imports what it needs, then times opening the store and `replay.replay_shoe`; only the timed
part counts), and `pitlog --help` and `pitlog replay SHOE --db DB` as `python -m cli.app`
from this checkout ("new") and from a `git archive` of `--old` ("old"). Wall and CPU seconds
(user + system of the child); the table gives medians over the rounds and the ratios

    help / import duckdb        replay / (import duckdb + query)

which issue 19 wants at most 1.5. Three more yardsticks show where a command's start goes
beyond DuckDB: `import typer`, and what typer imports on top of it to draw a help
(`typer.rich_utils`: rich's markdown and traceback) and to convert a command's arguments
(`typer._adapters`: pydantic). Prints one JSON object as its last line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_QUERY = """
import sys, time
from pathlib import Path
from projections.replay import replay_shoe
from projections.snapshot import open_for_reading
wall, cpu = time.perf_counter(), time.process_time()
with open_for_reading(Path(sys.argv[1])) as con:
    replay_shoe(con, sys.argv[2])
print(time.perf_counter() - wall, time.process_time() - cpu)
"""


def _timed(cmd: list[str], tree: Path | None = None) -> tuple[float, float, str]:
    env = dict(os.environ, COLUMNS="120")
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=tree or REPO, capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{cmd} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True, type=Path)
    p.add_argument("--shoe", help="default: the store's shoe with the most rounds")
    p.add_argument("--old", default="main")
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args()
    shoe = a.shoe
    if shoe is None:
        _, _, out = _timed([sys.executable, "-c",
                            "import duckdb, sys; print(duckdb.connect(sys.argv[1], read_only=True)"
                            ".execute('SELECT shoe_id FROM shoes ORDER BY rounds DESC LIMIT 1')"
                            ".fetchall()[0][0])", str(a.db)])
        shoe = out.strip()
    old_commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", a.old], check=True,
                                capture_output=True, text=True).stdout.strip()
    py = sys.executable
    samples: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="pitlog-old-") as old_dir:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", old_commit], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", old_dir], input=archive, check=True)
        old = Path(old_dir)
        runs: list[tuple[str, list[str], Path | None]] = [
            ("import duckdb", [py, "-c", "import duckdb"], None),
            ("import typer", [py, "-c", "import typer"], None),
            ("import typer.rich_utils", [py, "-c", "import typer.rich_utils"], None),
            ("import typer._adapters", [py, "-c", "import typer._adapters"], None),
            ("help, new", [py, "-m", "cli.app", "--help"], REPO),
            ("help, old", [py, "-m", "cli.app", "--help"], old),
            ("replay, new", [py, "-m", "cli.app", "replay", shoe, "--db", str(a.db)], REPO),
            ("replay, old", [py, "-m", "cli.app", "replay", shoe, "--db", str(a.db)], old),
        ]
        for r in range(a.rounds):
            for name, cmd, tree in runs[r % len(runs):] + runs[:r % len(runs)]:
                wall, cpu, _ = _timed(cmd, tree)
                samples.setdefault(name, []).append((wall, cpu))
            _, _, out = _timed([py, "-c", _QUERY, str(a.db), shoe], REPO)
            q_wall, q_cpu = map(float, out.split())
            samples.setdefault("query (open + replay_shoe, in process)", []).append(
                (q_wall, q_cpu))
            print(r, {k: [round(x, 3) for x in v[-1]] for k, v in samples.items()},
                  file=sys.stderr)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in samples.items()}
    base = med["import duckdb"]
    query = med["query (open + replay_shoe, in process)"]
    ratios = {}
    for which in ("new", "old"):
        for i, unit in ((0, "wall"), (1, "cpu")):
            ratios[f"help {which} / import duckdb ({unit})"] = med[f"help, {which}"][i] / base[i]
            ratios[f"replay {which} / (import duckdb + query) ({unit})"] = (
                med[f"replay, {which}"][i] / (base[i] + query[i]))
    print(json.dumps({"db": str(a.db), "shoe": shoe, "old": f"{a.old} {old_commit}",
                      "rounds": a.rounds, "median_wall_cpu_s": med, "ratios": ratios,
                      "samples": samples}))


if __name__ == "__main__":
    main()

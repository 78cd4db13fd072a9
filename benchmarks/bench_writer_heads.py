"""What a writer pays before it records: the table heads (issue 16: "`pitlog ingest` of those 22
lines takes 0.9 s into an empty log and 3.5 s into the 956k-event log: it reads the log's
heads before recording. A device feed that reconnects pays that every time.").

Each run is one `pitlog ingest` process of examples/devices.jsonl (21 lines), its table renamed
per run so every run records 21 new events, into (a) a log that was empty and (b) a copy of a
large simulated log, old code beside new in alternation:

- old: the base commit's tree (`--old-tree`, e.g. a checkout of main before tails.cache): each
  writer process reads every record of the log once for the heads;
- new: this tree: the heads from tails.cache, checked against the log, plus the records
  appended since it was saved.

Before the measured runs each log gets one ingest by new and one by old (the id index
`event-ids.sqlite` built, as after a feed's first run; tails.cache written by new). CPU
seconds are the child's (user + system), wall its whole run, imports included.

    python benchmarks/bench_writer_heads.py --log /work/stores/s1m/log --old-tree /work/main \
        [--workdir /tmp/heads] [--repeats 3] [--kafka BOOTSTRAP --records 1000000]

`--kafka`: the same on Kafka topics without fencing (ingest's heads from its id index, new;
a read of the whole topic, old), the large one holding the log's first `--records` records.

Prints one JSON object; benchmarks/results.md has the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINES = (REPO / "examples" / "devices.jsonl").read_text().splitlines()


def _ingest(tree: Path, log: str, lines_file: Path, cwd: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    # `-c` puts the working folder first on sys.path: the tree goes before it. The working
    # folder is each version's own (a Kafka log's id index is pitlog-data/ under it).
    code = f"import sys; sys.path.insert(0, {str(tree)!r}); from cli.app import main; main()"
    subprocess.run([sys.executable, "-c", code, "ingest", str(lines_file), "--log", log],
                   check=True, capture_output=True, cwd=cwd,
                   env={**os.environ, "PYTHONPATH": str(tree)})
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime), wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True, type=Path, help="a large log (copied, not changed)")
    ap.add_argument("--old-tree", required=True, type=Path)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/pitlog-heads"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--kafka", metavar="BOOTSTRAP",
                    help="copy the log's first --records records to a topic without fencing "
                         "and ingest there (and into an empty topic)")
    ap.add_argument("--records", type=int, default=1_000_000)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    trees = {"old": args.old_tree.resolve(), "new": REPO}
    for version in trees:
        (args.workdir / version).mkdir()
    if args.kafka:
        logs = _kafka_copies(args.log, args.kafka, args.records)
        large_records = args.records
    else:
        logs = {"empty": str(args.workdir / "empty"), "large": str(args.workdir / "large")}
        shutil.copytree(args.log, logs["large"], ignore=shutil.ignore_patterns("tails.cache*"))
        large_records = sum(p.stat().st_size // 8 for p in Path(logs["large"]).glob("p*.idx"))
    runs: list[dict[str, object]] = []
    n = 0

    def one(size: str, version: str, role: str) -> None:
        nonlocal n
        n += 1
        lines = args.workdir / f"lines{n}.jsonl"
        lines.write_text("\n".join(line.replace('"T07"', f'"X{n:03d}"')
                                   .replace("T07-S", f"X{n:03d}-S") for line in LINES) + "\n")
        cpu, wall = _ingest(trees[version], logs[size], lines, args.workdir / version)
        runs.append({"log": size, "version": version, "role": role, "cpu_s": round(cpu, 3),
                     "wall_s": round(wall, 3), "load_average": os.getloadavg()[0]})
        print(json.dumps(runs[-1]), file=sys.stderr)

    for size in logs:
        one(size, "new", "warm-up")
        one(size, "old", "warm-up")
    for _ in range(args.repeats):
        for size in logs:
            for version in ("old", "new"):
                one(size, version, "measured")

    def median(size: str, version: str, what: str) -> float:
        return statistics.median(float(r[what]) for r in runs  # type: ignore[arg-type]
                                 if (r["log"], r["version"], r["role"]) ==
                                 (size, version, "measured"))

    summary = {f"{size}_{version}_{what}": median(size, version, what)
               for size in logs for version in trees for what in ("cpu_s", "wall_s")}
    for what in ("cpu_s", "wall_s"):
        for version in trees:
            summary[f"large_over_empty_{version}_{what}"] = round(
                summary[f"large_{version}_{what}"] / summary[f"empty_{version}_{what}"], 2)
        summary[f"large_new_over_old_{what}"] = round(
            summary[f"large_new_{what}"] / summary[f"large_old_{what}"], 3)
    print(json.dumps({"logs": logs, "large_log_records": large_records, "summary": summary,
                      "runs": runs}, indent=1))


def _kafka_copies(source: Path, bootstrap: str, records: int) -> dict[str, str]:
    """An empty topic and one holding the source log's first `records` records (4 partitions,
    keyed by table as the writers key them)."""
    from events.log.embedded.log import EmbeddedLog
    from events.log.kafka.log import KafkaLog

    stamp = int(time.time())
    empty = KafkaLog(bootstrap, f"pitlog-heads-empty-{stamp}", partitions=4)
    empty.close()
    large = KafkaLog(bootstrap, f"pitlog-heads-large-{stamp}", partitions=4)
    src = EmbeddedLog(source, create=False)
    left = records
    for batch in src.read(max_batch=20_000):
        if left <= 0:
            break
        large.append([(r.key, r.value) for r in batch[:left]])
        left -= len(batch)
    large.close()
    return {"empty": empty.uri, "large": large.uri}


if __name__ == "__main__":
    main()

"""The native decoder's canonical-form check (events/wire/native_decode._canonical), what it
costs: NativeDecoder.decode over every frame batch of a log, with the check and with it
replaced by "all rows pass", taking turns in one process (CPU seconds, best and median).

Usage: benchmarks/bench_canonical_check.py --log LOG [--repeats 5] [--batch 245760]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import events.wire.native_decode as nd  # noqa: E402
from events.log.embedded.log import EmbeddedLog  # noqa: E402
from events.wire import codec  # noqa: E402
from projections.store import arrow_schema, event_columns  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch", type=int, default=245_760)
    args = ap.parse_args()
    log = EmbeddedLog(args.log)
    batches = [fb for p, end in sorted(log.end_offsets().items())
               for fb in log.read_frames(p, 0, end, max_batch=args.batch)]
    n = sum(len(fb) for fb in batches)
    schema = nd.pa.schema([f for f in arrow_schema(event_columns())
                           if f.name not in ("log_partition", "log_offset")])
    decoder = nd.NativeDecoder(codec.registry(), schema)
    check = nd._canonical
    times: dict[str, list[float]] = {"with": [], "without": []}
    for r in range(args.repeats):
        for way in (("with", "without") if r % 2 == 0 else ("without", "with")):
            nd._canonical = check if way == "with" else (
                lambda plan, table, bodies, lengths: np.ones(len(lengths), bool))
            t = time.process_time()
            native = sum(decoder.decode(fb.buf, fb.value_at, fb.end).fast for fb in batches)
            times[way].append(time.process_time() - t)
            assert native == n, (way, native, n)  # every message read by polars both ways
    nd._canonical = check
    w, wo = statistics.median(times["with"]), statistics.median(times["without"])
    print(f"{n} messages, {len(batches)} batches, {args.repeats} repeats (CPU s)")
    for way, ts in times.items():
        print(f"  {way:8} best {min(ts):.3f}  median {statistics.median(ts):.3f}  "
              f"({1e6 * statistics.median(ts) / n:.2f} us per message)  all {ts}")
    print(f"  with / without (median): {w / wo:.3f}")


if __name__ == "__main__":
    main()

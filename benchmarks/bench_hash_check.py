"""What the projector's own-hash check (projector._hash_ok, issue 14) costs against decoding.

    pitlog simulate --log /tmp/bench-log --tables 10 --rounds 1200 --seed 3   # 205,512 events
    .venv/bin/python benchmarks/bench_hash_check.py /tmp/bench-log

Reads the log in the projector's batches, decodes each as the projector does and times the
hash check separately (no DuckDB insert: see benchmarks/README.md, "Hash check at load").
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import duckdb

from events.log.embedded.log import EmbeddedLog
from events.wire import codec
from projections import store
from projections.log_checks import hash_ok as _hash_ok
from projections.projector import DEFAULT_BATCH_SIZE, _BatchLoader, _by_key


def main(folder: Path) -> None:
    log = EmbeddedLog(folder, create=False)
    loader = _BatchLoader(duckdb.connect(), "bench", store.arrow_schema(store.event_columns()),
                          codec.registry())
    decode = check = 0.0
    n = 0
    for batch in log.read(max_batch=DEFAULT_BATCH_SIZE):
        batch = _by_key(batch)
        t = time.perf_counter()
        result = loader.decoder.decode([rec.value for rec in batch])
        decode += time.perf_counter() - t
        t = time.perf_counter()
        ok = _hash_ok(batch, result.rows, result.table)
        check += time.perf_counter() - t
        n += len(ok)
        assert all(ok), "the log holds an altered event"
    print(f"{n} events: decode {decode:.2f} s, hash check {check:.2f} s "
          f"({check / n * 1e6:.2f} us/event, {check / decode:.0%} of decoding)")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""A rebuild from zero with each batch's detection and stored round money timed, one JSON line
per call (issue 19 item 2: which part of a batch grows with the history).

    PYTHONPATH=. python benchmarks/bench_rebuild_batches.py LOG NEW_STORE.duckdb OUT.jsonl

A detection line: the batch's events (`batch`), the window evaluated (`window`: the batch and
the touched tables' current shoes before it), wall and process CPU seconds (DuckDB's threads
included), and the detector's own phases (`copy`: the window copied into the scratch catalog,
`copies`: the look-up of earlier copies of the batch's event ids, `families`: the rule
families' queries). A round money line: `round_money` wall and `cpu` seconds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from events.log.embedded.log import EmbeddedLog  # noqa: E402
from projections import incremental, round_money  # noqa: E402
from projections.projector import project  # noqa: E402

out = open(sys.argv[3], "w")  # noqa: SIM115 - open for the whole run
inner = incremental.Detector.evaluate


def evaluate(self: Any, batch: Any, scopes: Any) -> int:
    w, c = time.perf_counter(), time.process_time()
    n = inner(self, batch, scopes)
    out.write(json.dumps({"batch": batch.num_rows, "window": n, "wall": time.perf_counter() - w,
                          "cpu": time.process_time() - c, **self.phases}) + "\n")
    out.flush()
    return n


incremental.Detector.evaluate = evaluate  # type: ignore[method-assign]
rinner = round_money.Keeper.evaluate


def revaluate(self: Any, *a: Any, **k: Any) -> Any:
    w, c = time.perf_counter(), time.process_time()
    try:
        return rinner(self, *a, **k)
    finally:
        out.write(json.dumps({"round_money": time.perf_counter() - w,
                              "cpu": time.process_time() - c}) + "\n")
        out.flush()


round_money.Keeper.evaluate = revaluate  # type: ignore[method-assign]
project(EmbeddedLog(Path(sys.argv[1])), Path(sys.argv[2]), publish_alerts=False)

"""A rebuild from zero (`projector.project` into a new file, as `pitlog project` does) with its
phases timed, to see which of them grow faster than the log (issue 19 item 2).

    PYTHONPATH=. python benchmarks/bench_rebuild_phases.py LOG NEW_STORE.duckdb

Wraps the projector's phases (decode, the detector's plan / evaluate / apply, the index of
event ids' appends and searches, the stored round money's evaluate / apply, and each batch's
load as a whole) and sums each one's wall and process CPU seconds (DuckDB's threads included)
and calls. Prints one JSON line: the run's wall, user and system seconds, peak RSS, and
`phases` as {name: [wall s, CPU s, calls]}. Nested phases are inside "load (whole batch)";
"whole: ..." inside "whole evaluation".
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from events.log.embedded.log import EmbeddedLog  # noqa: E402
from projections import id_index, incremental, projector, round_money  # noqa: E402
from projections.projector import project  # noqa: E402

_ACC: dict[str, list[float]] = {}


def _wrap(owner: Any, name: str, label: str) -> None:
    inner: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            acc = _ACC.setdefault(label, [0.0, 0.0, 0])
            acc[0] += time.perf_counter() - wall
            acc[1] += time.process_time() - cpu
            acc[2] += 1
    setattr(owner, name, timed)


def main() -> None:
    _wrap(id_index, "_copy", "index append (_copy)")
    _wrap(id_index.Index, "matches", "index matches")
    _wrap(incremental.Detector, "plan", "detector.plan")
    _wrap(incremental.Detector, "evaluate", "detector.evaluate")
    _wrap(incremental.Detector, "apply", "detector.apply (incl. index append)")
    _wrap(round_money.Keeper, "evaluate", "round_money.evaluate")
    _wrap(round_money.Keeper, "apply", "round_money.apply")
    _wrap(projector._BatchLoader, "decode", "decode")
    _wrap(projector._BatchLoader, "load", "load (whole batch)")
    # The load-first path's whole evaluation (session 31 on): the stored rows a table group at
    # a time, the detection state and alerts inside it, the round money, the index of ids.
    _wrap(incremental, "refresh_stored_anomalies", "whole evaluation (refresh_stored_anomalies)")
    _wrap(incremental, "rebuild_state", "whole: detection state (rebuild_state)")
    _wrap(round_money, "build_whole", "whole: round money (build_whole)")
    _wrap(id_index.Index, "open", "index open (build or catch up)")
    log, db = sys.argv[1], sys.argv[2]
    before = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter()
    project(EmbeddedLog(Path(log)), Path(db), publish_alerts=False)
    after = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({
        "wall": time.perf_counter() - wall, "user": after.ru_utime - before.ru_utime,
        "sys": after.ru_stime - before.ru_stime, "maxrss_mb": after.ru_maxrss / 1024,
        "phases": {k: [round(v[0], 2), round(v[1], 2), int(v[2])] for k, v in _ACC.items()}}))


if __name__ == "__main__":
    main()

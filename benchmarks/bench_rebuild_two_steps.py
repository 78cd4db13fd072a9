"""A rebuild from zero in two steps, timed apart (session 31, before `project` did it itself):
load every batch without detection (store_anomalies=False), then one `project` that finds
the rows owed a whole evaluation (anomaly rows, round money). Or, with mode `current`, one
`project` that detects batch by batch (on a checkout before 6431b17). CPU and wall per step.

    PYTHONPATH=CHECKOUT python benchmarks/bench_rebuild_two_steps.py LOG NEW.duckdb deferred|current
"""
import json, resource, sys, time
from pathlib import Path
from events.log.embedded.log import EmbeddedLog
from projections.projector import project

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

log_path, db, mode = sys.argv[1], sys.argv[2], sys.argv[3]
out = {"log": log_path, "mode": mode}
with EmbeddedLog(Path(log_path)) as log:
    if mode == "deferred":
        c, w = cpu(), time.perf_counter()
        rep = project(log, db, store_anomalies=False, publish_alerts=False)
        out["load_cpu_s"], out["load_wall_s"] = cpu() - c, time.perf_counter() - w
        out["events"] = rep.events
        c, w = cpu(), time.perf_counter()
        project(log, db, publish_alerts=False)
        out["whole_cpu_s"], out["whole_wall_s"] = cpu() - c, time.perf_counter() - w
    else:
        c, w = cpu(), time.perf_counter()
        rep = project(log, db, publish_alerts=False)
        out["load_cpu_s"], out["load_wall_s"] = cpu() - c, time.perf_counter() - w
        out["events"] = rep.events
out["cpu_s"] = out["load_cpu_s"] + out.get("whole_cpu_s", 0)
out["wall_s"] = out["load_wall_s"] + out.get("whole_wall_s", 0)
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))

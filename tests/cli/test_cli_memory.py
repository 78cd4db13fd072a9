"""`pitlog project` under a memory limit too small for its work: wherever DuckDB runs out (the
tables' set-up, the detector's set-up, a batch, the anomaly rows, the alert outbox), the user
gets one `Error:` line that says what to do, never "internal error", and nothing is lost."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
from cli_support import run

from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate


def test_each_small_memory_limit_gives_an_error_line_and_a_later_run_projects_it_all(
        tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    log = EmbeddedLog(log_dir)
    simulate(log, SimConfig(seed=3, tables=3, rounds=60, irregularities=0.02))
    projected = tmp_path / "projected.duckdb"
    first = run("project", "--log", str(log_dir), "--db", str(projected))
    assert first.returncode == 0, first.stderr
    simulate(log, SimConfig(seed=4, tables=2, rounds=15, irregularities=0.05))
    total = sum(log.end_offsets().values())
    # Where DuckDB runs out depends on the limit (and on the machine): below 8MB each of
    # these stops somewhere in the run, and at the time of writing 2MB and 3MB stopped in the
    # detector's set-up, which escaped as "internal error (OutOfMemoryException ...)".
    for limit in ("1MB", "2MB", "3MB", "4MB", "5MB", "6MB"):
        db = tmp_path / f"at-{limit}.duckdb"
        shutil.copy(projected, db)
        proc = run("project", "--log", str(log_dir), "--db", str(db), "--memory-limit", limit)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]
        assert proc.returncode == 1, (limit, proc.stdout[-500:], proc.stderr)
        assert len(errors) == 1, (limit, proc.stderr)
        assert "internal error" not in proc.stderr, (limit, proc.stderr)
        assert "Possible solutions" not in proc.stderr, (limit, proc.stderr)  # DuckDB's advice
        assert "--memory-limit" in errors[0], (limit, errors[0])
        again = run("project", "--log", str(log_dir), "--db", str(db), "--format", "json")
        assert again.returncode == 0, (limit, again.stderr)
        with duckdb.connect(str(db), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM events").fetchall() == [(total,)], limit
            assert con.execute("SELECT sum(next_offset) FROM checkpoints").fetchall() == [
                (total,)], limit

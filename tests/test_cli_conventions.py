"""Conventions of a good command line: --limit with "N of M shown", --version, shell completion,
help grouped by who uses it, `| head` exits 0, `sql -` reads the query from stdin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from simulated import simulated_db
from typer.testing import CliRunner

from cli.app import PANELS, app
from events.embedded_log import EmbeddedLog
from events.simulator import SimConfig, simulate

PITLOG = str(Path(sys.executable).parent / "pitlog")
runner = CliRunner()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated_db(tmp_path_factory.mktemp("conv"), seed=23, tables=2, rounds=60,
                        irregularities=0.03)


def _count(db: Path, sql: str) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return int(con.execute(sql).fetchall()[0][0])


@pytest.mark.parametrize(("command", "total_sql"), [
    (["anomalies", "--no-statistics"], "SELECT count(*) FROM anomalies"),
    (["ledger"], "SELECT count(*) FROM ledger"),
    (["shoes"], "SELECT count(*) FROM shoes"),
    (["sql", "SELECT * FROM rounds"], "SELECT count(*) FROM rounds"),
    (["reconcile", "--by", "shoe"], "SELECT count(DISTINCT shoe_id) FROM rounds"),
])
def test_limit_shows_n_rows_and_says_n_of_m(db: Path, command: list[str], total_sql: str
                                            ) -> None:
    total = _count(db, total_sql)
    assert total > 3
    proc = subprocess.run([PITLOG, *command, "--db", str(db), "--limit", "3", "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) == 3  # stdout stays exactly the rows
    assert f"3 of {total:,} " in proc.stderr and "shown" in proc.stderr
    every = subprocess.run([PITLOG, *command, "--db", str(db), "--limit", "0", "-f", "jsonl"],
                           capture_output=True, text=True, timeout=300)
    assert len(every.stdout.splitlines()) == total and "shown" not in every.stderr


def test_verify_limit_says_n_of_m(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log")
    simulate(log, SimConfig(seed=2, tables=1, rounds=3))
    ok = subprocess.run([PITLOG, "verify", "--log", str(tmp_path / "log"), "--limit", "1"],
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "shown" not in ok.stderr  # nothing left out, nothing said


def test_version_names_pitlog_and_duckdb() -> None:
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith(f"pitlog {version('pitlog')} (DuckDB {version('duckdb')}")


def test_shell_completion_is_on() -> None:
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "120"})
    assert "--install-completion" in result.output and "--show-completion" in result.output


def test_help_groups_every_command_by_who_uses_it() -> None:
    from typer.main import get_command

    result = runner.invoke(app, ["--help"], env={"COLUMNS": "120"})
    out = result.output
    for panel in ("Surveillance", "Audit", "Operations", "Integrity"):
        assert f"─ {panel} ─" in out
    assert "─ Commands ─" not in out  # no command left ungrouped
    listed = {n for names in PANELS.values() for n in names}
    assert set(get_command(app).commands) <= listed  # type: ignore[attr-defined]


@pytest.mark.parametrize("fmt", ["table", "csv", "jsonl"])
def test_replay_into_head_exits_0(db: Path, fmt: str) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        shoe = con.execute("SELECT shoe_id FROM shoes ORDER BY rounds DESC LIMIT 1"
                           ).fetchall()[0][0]
    proc = subprocess.run(f"'{PITLOG}' replay {shoe} --db '{db}' --format {fmt} | head -n 1; "
                          f"exit ${{PIPESTATUS[0]}}", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert len(proc.stdout.splitlines()) == 1


def test_sql_reads_the_query_from_stdin(db: Path) -> None:
    proc = subprocess.run([PITLOG, "sql", "-", "--db", str(db), "--format", "json"],
                          input="SELECT count(*) AS n FROM rounds\n", capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [{"n": _count(db, "SELECT count(*) FROM rounds")}]
    empty = subprocess.run([PITLOG, "sql", "-", "--db", str(db)], input="  \n",
                           capture_output=True, text=True, timeout=300)
    assert empty.returncode == 1 and empty.stderr.startswith("Error: ")

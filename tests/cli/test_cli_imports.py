"""A query command imports only what it needs (issue 19, item 4): `pitlog --help` and
`pitlog replay` never import pyarrow, numpy, matplotlib, the simulator or starlette.

Structural, not timed: each command runs in a fresh interpreter that reports `sys.modules`
when it is done. A command that does need one of them (simulate) shows the check can fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from simulated import simulated_db
from typer.testing import CliRunner

from cli import app as app_module

HEAVY = ("pyarrow", "numpy", "matplotlib", "starlette", "uvicorn", "events.simulation.simulator",
         "projections.projector", "projections.report_charts", "pandas", "polars",
         # a lookup reads the views, never the log's events: no Avro, no event model
         "fastavro", "events.reddog.model", "events.wire.codec")

_RUN = """
import json, sys
from cli.app import main
try:
    main(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
else:
    code = 0
with open(sys.argv[1], "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""


def _modules(tmp_path: Path, *args: str) -> tuple[set[str], str]:
    report = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, "-c", _RUN, str(report), *args],
                          capture_output=True, text=True, timeout=300)
    found = json.loads(report.read_text())
    assert found["code"] in (0, None), proc.stderr
    return set(found["modules"]), proc.stdout


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY or m in HEAVY)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated_db(tmp_path_factory.mktemp("imports"), seed=5, tables=1, rounds=12)


def test_help_imports_no_heavy_library_and_not_duckdb(tmp_path: Path) -> None:
    modules, out = _modules(tmp_path, "--help")
    assert "replay" in out and "simulate" in out  # the help did list the commands
    assert _heavy(modules) == []
    assert "duckdb" not in modules  # the help queries nothing


def test_replay_imports_duckdb_but_no_heavy_library(tmp_path: Path, db: Path) -> None:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        (shoe,) = con.execute("SELECT shoe_id FROM shoes ORDER BY shoe_id LIMIT 1").fetchone()
    # The table a person reads. (--format json/csv/parquet and --out are exports: DuckDB
    # COPYs an Arrow table of the rows, so they import pyarrow when they write.)
    modules, out = _modules(tmp_path, "replay", shoe, "--db", str(db))
    assert "CardDrawn" in out and "hands in discard-rack order" in out  # it replayed the shoe
    assert "duckdb" in modules
    assert _heavy(modules) == []
    # Only the module of the command that runs: not the others' (COMMANDS in cli/app.py)
    assert "cli.commands_audit" not in modules and "cli.serve" not in modules


def test_the_check_sees_a_command_that_needs_the_simulator(tmp_path: Path) -> None:
    modules, _ = _modules(tmp_path, "simulate", "--tables", "1", "--rounds", "1",
                          "--log", str(tmp_path / "log"))
    assert "events.simulation.simulator" in modules


def test_every_command_of_the_table_loads_and_the_help_lists_exactly_them() -> None:
    group = app_module.typer.main.get_command(app_module.app)
    ctx = group.make_context("pitlog", ["--help"], resilient_parsing=True)
    assert group.list_commands(ctx) == list(app_module.COMMANDS)
    for name in app_module.COMMANDS:
        command = group.get_command(ctx, name)
        assert command is not None and command.name == name
    listed = {n for names in app_module.PANELS.values() for n in names}
    assert listed == set(app_module.COMMANDS)


def test_a_command_whose_module_is_missing_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(app_module.COMMANDS, "ghost", ("cli.no_such_module", "ghost", "Audit"))
    result = CliRunner().invoke(app_module.app, ["--help"])
    assert isinstance(result.exception, ModuleNotFoundError)  # never silently left out
    result = CliRunner().invoke(app_module.app, ["ghost"])
    assert isinstance(result.exception, ModuleNotFoundError)

"""A command imports only what it needs (issue 19, item 4), and the lazy command table of
cli/app.py is whole (issue 15).

`pitlog --help` lists every command from cli/app.py's COMMANDS without importing a command
module: no DuckDB and none of its heavy neighbours (pyarrow, numpy, fastavro, the simulator).
`pitlog replay --help` and `pitlog replay SHOE` import the replay module and DuckDB, and none of
the others. Structural, not timed: each command runs in a fresh interpreter that reports
`sys.modules` when it is done. A command that does need one of them (simulate) shows that the
check can fail.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO
from simulated import simulated_db
from typer.main import get_command
from typer.testing import CliRunner

from cli import app as app_module
from cli.app import COMMANDS, PACKAGE, PANELS, Entry, app, summary_of

HEAVY = ("pyarrow", "numpy", "matplotlib", "starlette", "uvicorn", "events.simulation",
         "projections.projector", "projections.report_charts", "pandas", "polars",
         # a lookup reads the views, never the log's events: no Avro, no event model
         "fastavro", "events.reddog.model", "events.wire.codec")
# What typer imports and pitlog's help and lookups never use (cli/lean.py)
UNUSED = ("pydantic", "pydantic_core", "markdown_it", "rich.markdown", "rich.traceback",
          "pygments")

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


def _modules(tmp_path: Path, *args: str, env: dict[str, str] | None = None
             ) -> tuple[set[str], str]:
    report = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, "-c", _RUN, str(report), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})
    found = json.loads(report.read_text())
    assert found["code"] in (0, None), proc.stderr
    return set(found["modules"]), proc.stdout


def _heavy(modules: set[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(m for m in modules
                  if any(m == h or m.startswith(h + ".") for h in heavy))


def _command_modules(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.startswith(PACKAGE + "."))


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated_db(tmp_path_factory.mktemp("imports"), seed=5, tables=1, rounds=12)


def test_help_imports_no_command_module_no_duckdb_and_no_heavy_library(tmp_path: Path) -> None:
    modules, out = _modules(tmp_path, "--help")
    flat = " ".join(out.split())
    for name, entry in COMMANDS.items():  # every command listed, with its summary
        assert f"{name} {entry.summary[:40]}" in flat, name
    assert _command_modules(modules) == []
    assert "duckdb" not in modules  # the help queries nothing
    assert _heavy(modules) == []
    assert _heavy(modules, UNUSED) == []


def test_replay_help_imports_the_replay_module_alone_and_no_heavy_library(
        tmp_path: Path) -> None:
    modules, out = _modules(tmp_path, "replay", "--help")
    assert "Example: pitlog replay" in " ".join(out.split())
    assert _command_modules(modules) == [f"{PACKAGE}.replay"]
    assert _heavy(modules) == []


def test_completing_a_command_name_imports_no_command_module(tmp_path: Path) -> None:
    modules, out = _modules(tmp_path, env={"_PITLOG_COMPLETE": "complete_bash",
                                           "COMP_WORDS": "pitlog re", "COMP_CWORD": "1"})
    assert out.split() == ["replay", "reconcile", "report"]
    assert _command_modules(modules) == []


def test_completing_an_option_loads_that_command_alone(tmp_path: Path) -> None:
    modules, out = _modules(tmp_path, env={"_PITLOG_COMPLETE": "complete_bash",
                                           "COMP_WORDS": "pitlog replay --s", "COMP_CWORD": "2"})
    assert out.split() == ["--shoe", "--server"]
    assert _command_modules(modules) == [f"{PACKAGE}.replay"]


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
    assert _heavy(modules, UNUSED) == []
    assert _command_modules(modules) == [f"{PACKAGE}.replay"]  # not the other commands'


def test_the_check_sees_a_command_that_needs_the_simulator(tmp_path: Path) -> None:
    modules, _ = _modules(tmp_path, "simulate", "--tables", "1", "--rounds", "1",
                          "--log", str(tmp_path / "log"))
    assert "events.simulation.simulator" in _heavy(modules)
    assert _command_modules(modules) == [f"{PACKAGE}.simulate"]


def test_every_command_loads_with_the_summary_and_panel_the_help_lists() -> None:
    group = get_command(app)
    ctx = group.make_context("pitlog", ["--help"], resilient_parsing=True)
    assert group.list_commands(ctx) == list(COMMANDS)
    for name, entry in COMMANDS.items():
        command = group.get_command(ctx, name)  # type: ignore[attr-defined]
        assert command is not None and command.name == name
        assert command.params, name  # the real command, with its options, not the listing
        assert summary_of(command) == entry.summary, name
        assert command.rich_help_panel == entry.panel
    assert {n for names in PANELS.values() for n in names} == set(COMMANDS)


def test_every_command_module_is_in_the_table() -> None:
    """A module in cli/commands/ that no command names would be dead code or a command left
    out of the help."""
    folder = REPO / "cli" / "commands"
    modules = {p.stem for p in folder.glob("*.py") if p.name != "__init__.py"}
    assert modules == {e.module for e in COMMANDS.values()}


def test_the_command_modules_import_no_pitlog_module_inside_a_function() -> None:
    """What `pitlog SOMETHING` imports is what its module's top says (issue 15)."""
    inside = []
    for path in sorted((REPO / "cli").rglob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module or "."] if isinstance(node, ast.ImportFrom) else [])
                inside += [f"{path.name}:{node.lineno} {n}" for n in names  # type: ignore[attr-defined]
                           if n.split(".")[0] in ("cli", "events", "projections", ".")]
    assert inside == []


def test_a_command_whose_module_is_missing_fails_every_call_loudly(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(COMMANDS, "ghost", Entry("no_such_module", "ghost", "Audit", "Boo."))
    for args in (["--help"], ["ghost"], ["theo"]):  # never left out of the list
        with pytest.raises(ModuleNotFoundError, match=r"cli\.commands\.no_such_module"):
            CliRunner().invoke(app, args)


def test_a_command_whose_function_is_missing_fails_when_asked_for(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(COMMANDS, "ghost", Entry("theo", "no_such_function", "Audit", "Boo."))
    result = CliRunner().invoke(app, ["ghost", "--help"])
    assert isinstance(result.exception, AttributeError)
    assert "no_such_function" in str(result.exception)


def test_a_missing_module_is_one_error_line_for_the_user(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(COMMANDS, "ghost", Entry("no_such_module", "ghost", "Audit", "Boo."))
    with pytest.raises(SystemExit) as exit_:
        app_module.main(["--help"])
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: internal error (ModuleNotFoundError: the module "
                          "cli.commands.no_such_module of the command 'ghost' is missing")
    assert len(err.splitlines()) == 1

"""The DuckDB file opens in the newest 1.x DuckDB clients on PyPI, views included.

DuckDB 2.0 writes storage version 69 by default, which duckdb and duckdb-cli 1.5.6 refuse; the
store writes new files as store.STORAGE_VERSION. Here the older clients are installed from PyPI
into a folder of their own (PITLOG_OLD_DUCKDB names one already installed, as .ci/run does) and
run in a subprocess, so nothing of this process's DuckDB 2.0 is involved.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections.projector import project

OLD = "1.5.6"  # the newest duckdb-cli on PyPI, and the newest 1.x Python client


@pytest.fixture(scope="module")
def old_duckdb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ready = os.environ.get("PITLOG_OLD_DUCKDB")
    if ready:
        return Path(ready)
    target = tmp_path_factory.mktemp(f"duckdb-{OLD}")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "--target", str(target), f"duckdb=={OLD}", f"duckdb-cli=={OLD}", "pytz"],
        capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.skip(f"cannot install duckdb {OLD} from PyPI (offline?): "
                    f"{proc.stderr.strip().splitlines()[-1:]}")
    return target


def _old(target: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # -I would drop PYTHONPATH; -s keeps the user's site-packages out instead.
    env = {**os.environ, "PYTHONPATH": str(target)}
    return subprocess.run([sys.executable, "-s", *args], capture_output=True, text=True,
                          env=env, timeout=300, cwd=target)


@pytest.fixture(scope="module")
def projected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Created here from nothing (not simulated_db's copy of a template store): the file under
    # test is one a new projection writes.
    folder = tmp_path_factory.mktemp("compat")
    with EmbeddedLog(folder / "log") as log:
        simulate(log, SimConfig(seed=5, tables=2, rounds=40, irregularities=0.02))
        project(log, folder / "pitlog.duckdb")
    return folder / "pitlog.duckdb"


def _views_and_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    names = [n for (n,) in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall()]
    return {n: con.execute(f'SELECT count(*) FROM "{n}"').fetchall()[0][0] for n in names}


def test_the_python_client_1_5_6_reads_every_view_with_the_same_rows(
        old_duckdb: Path, projected: Path) -> None:
    script = (
        "import duckdb, json, sys\n"
        "con = duckdb.connect(sys.argv[1], read_only=True)\n"
        # A count past 2 s on a loaded machine would print DuckDB's progress bar on stdout.
        "con.execute('SET enable_progress_bar = false')\n"
        "names = [n for (n,) in con.execute(\"SELECT view_name FROM duckdb_views() "
        "WHERE NOT internal ORDER BY 1\").fetchall()]\n"
        "print(json.dumps({'version': duckdb.__version__, 'counts': {n: con.execute("
        "f'SELECT count(*) FROM \"{n}\"').fetchall()[0][0] for n in names}}))\n")
    proc = _old(old_duckdb, "-c", script, str(projected))
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["version"] == OLD
    with duckdb.connect(str(projected), read_only=True) as con:
        expected = _views_and_counts(con)
    assert {"ledger", "rounds", "anomalies", "shoes"} <= set(expected)
    assert seen["counts"] == expected
    assert expected["ledger"] > 0


def test_the_duckdb_cli_1_5_6_opens_the_file_read_only(old_duckdb: Path, projected: Path
                                                       ) -> None:
    proc = _old(old_duckdb, "-m", "duckdb_cli", "-readonly", "-json", str(projected), "-c",
                "SELECT version() AS v, (SELECT count(*) FROM ledger) AS n")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    assert row["v"] == f"v{OLD}"
    with duckdb.connect(str(projected), read_only=True) as con:
        assert row["n"] == con.execute("SELECT count(*) FROM ledger").fetchall()[0][0]


def test_a_database_made_before_keeps_its_version_and_keeps_projecting(tmp_path: Path) -> None:
    # A file written by an earlier pitlog (DuckDB 2.0's default storage) is not rewritten.
    db = tmp_path / "old.duckdb"
    duckdb.connect(str(db)).close()
    log = EmbeddedLog(tmp_path / "log")
    simulate(log, SimConfig(seed=3, tables=1, rounds=5))
    project(log, db)
    with duckdb.connect(str(db), read_only=True) as con:
        ((tags,),) = con.execute(
            "SELECT tags FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchall()
        assert con.execute("SELECT count(*) FROM rounds").fetchall()[0][0] == 5
    assert tags["storage_version"].startswith("v2")


def test_a_new_database_is_written_in_the_compatible_storage_version(projected: Path) -> None:
    from projections.store import STORAGE_VERSION

    with duckdb.connect(str(projected), read_only=True) as con:
        ((tags,),) = con.execute(
            "SELECT tags FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchall()
    assert tags["storage_version"].rstrip("+") == STORAGE_VERSION

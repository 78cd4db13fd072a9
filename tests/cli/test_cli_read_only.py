"""Read-only commands write no file (read-only means no file, network or environment access):
a query over its memory limit fails with one `Error:` line naming the option that raises the
limit, instead of spilling to `<database>.tmp`; and they work in a folder no one can write,
where `pitlog project` stops with one `Error:` line."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli_support import run_recording_writes
from simulated import simulated_db

from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections.memory import MORE_READER_MEMORY

# Two million distinct 106-character strings grouped: about 300 MB of hash table. Under a
# 60MB limit the old reader spilled it to <db>.tmp (strace: mkdir, four temp files, rmdir)
# and answered; a reader that cannot spill runs out.
BIG = ("SELECT count(*) AS n FROM (SELECT s, count(*) FROM (SELECT repeat('x', 100) || i AS s "
       "FROM range(2000000) t(i)) GROUP BY s)")
SQL_OUT_OF_MEMORY_END = ("raise the limit with --memory-limit or PITLOG_SQL_MEMORY_LIMIT (now "
                         "60MB); it never spills to disk")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated_db(tmp_path_factory.mktemp("sim"), seed=5, tables=2, rounds=40,
                        irregularities=0.03)


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()}


@contextmanager
def unwritable_folder(folder: Path) -> Iterator[None]:
    """`folder` made one this user cannot write. chmod does not stop root, so as root the
    folder is also made immutable (chattr +i, which binds root too)."""
    folder.chmod(0o555)
    immutable = os.geteuid() == 0 and subprocess.run(
        ["chattr", "+i", str(folder)], capture_output=True).returncode == 0
    try:
        try:
            (folder / "probe").touch()
        except OSError:
            pass
        else:
            pytest.skip("cannot make a folder this user cannot write (root without chattr)")
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


@pytest.fixture
def unwritable(db: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the database in a folder this user cannot write."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    shutil.copy(db, folder / db.name)
    with unwritable_folder(folder):
        yield folder / db.name


@pytest.fixture
def store(db: Path, tmp_path: Path) -> Path:
    """A copy of the database alone in a folder of its own."""
    folder = tmp_path / "store"
    folder.mkdir()
    shutil.copy(db, folder / db.name)
    return folder / db.name


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1 and proc.stdout == "", (proc.stdout, proc.stderr)
    (line,) = proc.stderr.splitlines()
    return line


def test_a_query_over_its_memory_limit_writes_no_file_and_names_the_option(store: Path
                                                                           ) -> None:
    before = _listing(store.parent)
    proc, written = run_recording_writes("sql", "--db", str(store), "--memory-limit", "60MB",
                                         "-f", "json", BIG)
    line = _one_error_line(proc)
    assert line.startswith("Error: the query ran out of memory (Out of Memory Error: "), line
    assert line.endswith(SQL_OUT_OF_MEMORY_END), line
    assert written == []
    assert _listing(store.parent) == before  # no <db>.tmp left behind, nothing else touched
    # The option named raises the limit: the same query then answers.
    proc, written = run_recording_writes("sql", "--db", str(store), "--memory-limit", "2GB",
                                         "-f", "jsonl", BIG)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == '{"n":2000000}\n'
    assert written == [] and _listing(store.parent) == before


def test_a_reconcile_over_pitlog_memory_limit_is_one_error_line_naming_it(store: Path
                                                                          ) -> None:
    before = _listing(store.parent)
    proc, written = run_recording_writes("reconcile", "--db", str(store), "-f", "jsonl",
                                         env={"PITLOG_MEMORY_LIMIT": "1MB"})
    line = _one_error_line(proc)
    assert line.startswith("Error: reconciliation query failed (Out of Memory Error: "), line
    assert line.endswith(f"; {MORE_READER_MEMORY}"), line
    assert written == [] and _listing(store.parent) == before


def test_read_only_commands_work_in_a_folder_no_one_can_write(db: Path,
                                                              unwritable: Path) -> None:
    for command in (["reconcile"], ["anomalies"], ["sql", "SELECT count(*) AS n FROM rounds"]):
        here, _ = run_recording_writes(*command, "--db", str(db), "-f", "jsonl")
        there, written = run_recording_writes(*command, "--db", str(unwritable), "-f", "jsonl")
        assert there.returncode == 0, (command, there.stderr)
        assert there.stdout == here.stdout and len(there.stdout.splitlines()) >= 1, command
        assert written == []
    # Over the limit it runs out of memory as anywhere, not into the folder it cannot write.
    proc, _ = run_recording_writes("sql", "--db", str(unwritable), "--memory-limit", "60MB",
                                   BIG)
    line = _one_error_line(proc)
    assert line.endswith(SQL_OUT_OF_MEMORY_END), line


def test_project_into_a_folder_it_cannot_write_is_one_error_line(tmp_path: Path) -> None:
    """It printed `alerts not published yet: TransactionContext Error: cannot rollback - no
    transaction is active` first: the alert outbox's commit failed (DuckDB cannot create
    <db>.wal), and the rollback after it hid why."""
    log_dir, folder = tmp_path / "log", tmp_path / "store"
    folder.mkdir()
    store = folder / "pitlog.duckdb"
    log = EmbeddedLog(log_dir)
    simulate(log, SimConfig(seed=3, tables=2, rounds=30, irregularities=0.05))
    # Projected without publishing: the next run with alerts sets the outbox cursor first.
    first = run_recording_writes("project", "--log", str(log_dir), "--db", str(store),
                                 "--no-alerts")[0]
    assert first.returncode == 0, first.stderr
    simulate(log, SimConfig(seed=4, tables=2, rounds=10, irregularities=0.05))
    with unwritable_folder(folder):
        proc, _ = run_recording_writes("project", "--log", str(log_dir), "--db", str(store))
    line = _one_error_line(proc)
    assert line == (
        f'Error: cannot write the database (TransactionContext Error: Failed to commit: Cannot '
        f'open file "{store}.wal": {os.strerror(1 if os.geteuid() == 0 else 13)}); check the '
        f"disk and that the database's folder can be written (DuckDB keeps <db>.wal beside "
        f"the file), then run again to continue from the checkpoint"), line
    # Nothing lost: the same run in a folder it can write projects every record.
    again, _ = run_recording_writes("project", "--log", str(log_dir), "--db", str(store),
                                    "-f", "jsonl")
    assert again.returncode == 0, again.stderr
    assert '"events":' in again.stdout and '"events":0,' not in again.stdout


# `pitlog report` writes its --out file and nothing else: matplotlib, which draws its charts,
# made ~/.config/matplotlib and a font list in ~/.cache/matplotlib, or, where HOME could not be
# written, /tmp/matplotlib-* and two lines of its own on stderr (an outside review, session 37).
# It now works in a private temporary folder of its own, removed once matplotlib is imported.
@pytest.mark.parametrize("home_writable", [True, False])
def test_report_writes_its_out_file_and_nothing_in_home_or_cache(
        db: Path, tmp_path: Path, home_writable: bool) -> None:
    home, temp, out = tmp_path / "home", tmp_path / "tmp", tmp_path / "day.html"
    home.mkdir()
    temp.mkdir()
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
           "XDG_CONFIG_HOME": str(home / ".config"), "TMPDIR": str(temp), "MPLCONFIGDIR": ""}
    with (contextlib.nullcontext() if home_writable else unwritable_folder(home)):
        proc, written = run_recording_writes("report", "--db", str(db), "--out", str(out),
                                             env=env)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert list(home.iterdir()) == [] and list(temp.iterdir()) == []
    # outside the temporary folder (where tempfile also probes with a file of its own), the
    # report alone; matplotlib's font list went to the private folder, removed (rmtree names
    # what it removes relative to the folder) before the report was drawn
    whole = [w for w in written if Path(w).is_absolute()]
    assert sorted({w for w in whole if not Path(w).is_relative_to(temp)}) == [str(out)]
    assert any(Path(w).parent.name.startswith("pitlog-report-mpl-") for w in whole), written
    assert all("/" not in w for w in written if not Path(w).is_absolute()), written
    assert "matplotlib" not in proc.stderr.lower() and "Traceback" not in proc.stderr

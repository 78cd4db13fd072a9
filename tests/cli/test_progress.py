"""Long commands show progress with its total and an ETA on a terminal's stderr, phase by phase
(`project`'s anomaly rows included), and nothing when stderr is not a terminal. The commands
run in a pseudo-terminal: no mocks of the terminal or of the work."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

PITLOG = str(Path(sys.executable).parent / "pitlog")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _on_a_terminal(*args: str, cwd: Path) -> tuple[int, str]:
    """Run with stderr on a pseudo-terminal; returns the exit code and what stderr showed."""
    master, slave = os.openpty()
    proc = subprocess.Popen([PITLOG, *args], stdout=subprocess.DEVNULL, stderr=slave, cwd=cwd,
                            env={**os.environ, "COLUMNS": "160"})
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return proc.wait(timeout=600), ANSI.sub("", shown.decode(errors="replace"))


def test_simulate_and_project_show_totals_and_eta_for_every_phase(tmp_path: Path) -> None:
    code, shown = _on_a_terminal("simulate", "--tables", "3", "--rounds", "40", "--log", "log",
                                 cwd=tmp_path)
    assert code == 0, shown
    assert re.search(r"simulating rounds [━╺╸ ]*120/120 +[\d:]+ eta", shown), shown[-500:]
    code, shown = _on_a_terminal("project", "--log", "log", "--db", "db.duckdb", cwd=tmp_path)
    assert code == 0, shown
    frames = re.findall(r"projecting events [━╺╸ ]*(\d+)/(\d+) +[\d:]+ eta", shown)
    assert frames and frames[-1][0] == frames[-1][1] != "0", shown[-500:]  # every event
    # Detection runs inside each batch (projections/incremental.py), so the events' bar covers
    # it; a separate "storing anomaly rows" bar appears only when a store is evaluated whole.
    assert "storing anomaly rows" not in shown, shown[-500:]
    code, shown = _on_a_terminal("anomalies", "--db", "db.duckdb", cwd=tmp_path)
    assert code == 0 and re.search(r"finding anomalies .*2/2", shown), shown[-500:]
    # verify's bar counted records with no total ("120/?", no ETA): the log's end is its total
    code, shown = _on_a_terminal("verify", "--log", "log", cwd=tmp_path)
    checked = re.findall(r"verifying [━╺╸ ]*(\d+)/(\d+) +[\d:]+ eta [\d:]+", shown)
    assert code == 0 and checked and checked[-1][0] == checked[-1][1] == frames[-1][1], \
        shown[-500:]


def test_no_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    proc = subprocess.run([PITLOG, "simulate", "--tables", "1", "--rounds", "5", "--log", "log"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stderr == ""


def test_ingest_shows_the_bytes_read_of_the_files_size_with_an_eta(tmp_path: Path) -> None:
    lines = [f'{{"type": "DealerTappedIn", "table": "T07", "shoe": null, "round": null, '
             f'"seq": {i}, "at": "2026-11-28T21:00:05.250Z", "actor": "TERM-7", '
             f'"dealer_id": "D-{i}"}}\n' for i in range(1, 5001)]
    feed = tmp_path / "devices.jsonl"
    feed.write_text("not json\n" + "".join(lines))
    code, shown = _on_a_terminal("ingest", "devices.jsonl", "--log", "log", cwd=tmp_path)
    assert code == 1, shown  # the one bad line
    frames = re.findall(r"ingesting \(bytes read\) [━╺╸ ]*(\d+)/(\d+) +[\d:]+ eta", shown)
    size = str(feed.stat().st_size)
    assert frames and frames[-1] == (size, size), shown[-500:]  # the whole file, of its size
    # The bad line's error is printed above the bar, on a line of its own, not after a frame.
    assert "Error: devices.jsonl line 1: malformed JSON" in shown, shown[-500:]
    assert re.search(r"eta [\d:-]+Error", shown) is None, shown[-500:]

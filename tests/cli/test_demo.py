"""`pitlog demo` never deletes anything it did not write: a folder holding other data is refused
with one `Error:` line and left byte for byte as it was."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from repo_paths import REPO

from events.log.registry import open_log

PITLOG = str(Path(sys.executable).parent / "pitlog")
DEVICES = REPO / "examples" / "devices.jsonl"


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PITLOG, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _events(folder: Path) -> int:
    with open_log(str(folder / "log")) as log:
        return sum(log.end_offsets().values())


def _refused(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    assert all(w in lines[0] for w in words), lines[0]


def test_demo_refuses_a_folder_with_ingested_events_and_keeps_them(tmp_path: Path) -> None:
    ingested = _run(tmp_path, "ingest", str(DEVICES))
    assert ingested.returncode == 0, ingested.stderr
    data = tmp_path / "pitlog-data"
    before, events = _tree(data), _events(data)
    assert events > 0
    _refused(_run(tmp_path, "demo"), "pitlog-data", "--data-dir")
    _refused(_run(tmp_path, "demo", "--replace"), "pitlog-data")
    assert _tree(data) == before and _events(data) == events


def test_demo_replaces_only_an_unchanged_earlier_demo(tmp_path: Path) -> None:
    first = _run(tmp_path, "demo")
    assert first.returncode == 0, first.stderr
    data = tmp_path / "pitlog-data"
    made = _tree(data)
    _refused(_run(tmp_path, "demo"), "earlier demo", "--replace")  # never silently
    assert _tree(data) == made
    again = _run(tmp_path, "demo", "--replace", "--seed", "9")
    assert again.returncode == 0, again.stderr
    assert _tree(data) != made  # a new evening, seed 9
    demo_events = _events(data)
    # Events ingested after the demo make the folder no longer the demo's alone.
    assert _run(tmp_path, "ingest", str(DEVICES)).returncode == 0
    grown, events = _tree(data), _events(data)
    assert events > demo_events
    _refused(_run(tmp_path, "demo", "--replace"), "did not write")
    assert _tree(data) == grown and _events(data) == events

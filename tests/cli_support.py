"""`pitlog` run as a user runs it: a process of its own with a bare environment, for the tests
that are about the process (exit codes, `Error:` lines on stderr, what reaches stdout)."""

from __future__ import annotations

import subprocess
import sys

from repo_paths import REPO

PITLOG = [sys.executable, "-m", "cli.app"]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PITLOG, *args], capture_output=True, text=True, cwd=REPO,
                          input=stdin, timeout=120, env={"PATH": "/usr/bin:/bin",
                                                         "PYTHONPATH": str(REPO)})

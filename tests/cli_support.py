"""`pitlog` run as a user runs it: a process of its own with a bare environment, for the tests
that are about the process (exit codes, `Error:` lines on stderr, what reaches stdout)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

from repo_paths import REPO

PITLOG = [sys.executable, "-m", "cli.app"]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PITLOG, *args], capture_output=True, text=True, cwd=REPO,
                          input=stdin, timeout=120, env={"PATH": "/usr/bin:/bin",
                                                         "PYTHONPATH": str(REPO)})


# Any Python-level open for writing, anywhere, or a file removed or renamed, is recorded (the
# stdout export used a temporary file in $TMPDIR, created and deleted around each COPY). DuckDB's
# own files (a spill to <db>.tmp) are C++ opens the hook does not see: check the folder too.
_NO_FILE_WRITTEN = """
import os, sys
written = []
def record(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)):
        mode, flags = args[1], args[2] or 0
        if (mode is not None and any(c in mode for c in "wax+")) or (
                flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND)):
            written.append(os.fsdecode(args[0]))
    if event in ("os.remove", "os.rename", "os.mkdir", "os.truncate"):
        written.append(os.fsdecode(args[0]))
sys.addaudithook(record)
sys.argv = ["pitlog", *sys.argv[1:]]
from cli.app import main
try:
    main()
finally:
    print("WRITTEN", written, file=sys.stderr)
"""


def run_recording_writes(*args: str, env: dict[str, str] | None = None
                         ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`pitlog ARGS` in a process of its own that records every file it opens for writing,
    creates, removes or renames from Python: (the process, with that record taken off its
    stderr, and the paths recorded)."""
    proc = subprocess.run(
        [sys.executable, "-c", _NO_FILE_WRITTEN, *args], capture_output=True, text=True,
        timeout=300, cwd=REPO, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
                                    "PYTHONPATH": str(REPO), **(env or {})})
    *lines, last = proc.stderr.rstrip("\n").split("\n")
    assert last.startswith("WRITTEN "), proc.stderr
    proc.stderr = "".join(line + "\n" for line in lines)
    return proc, ast.literal_eval(last.removeprefix("WRITTEN "))

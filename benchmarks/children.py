"""What the old-beside-new benchmarks share: each variant runs in a fresh Python process (its
own imports, memory and peak RSS), which prints one JSON line with what it measured."""

from __future__ import annotations

import json
import subprocess
import sys

# Prepended to a child's code: its CPU seconds so far and its peak RSS in MB (VmHWM).
CHILD_TOOLS = """
import resource
from pathlib import Path
def usage():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime
def peak_rss_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0
"""


def run_child(code: str, args: list[str], what: str) -> dict[str, object]:
    """`code` (after CHILD_TOOLS) run with `args`; its last JSON line (DuckDB may draw a
    progress bar on stdout before it). A failure stops the benchmark, naming `what`."""
    out = subprocess.run([sys.executable, "-c", CHILD_TOOLS + code, *args],
                         capture_output=True, text=True, cwd="/")
    if out.returncode:
        raise SystemExit(f"{what} failed:\n{out.stderr[-2000:]}")
    return json.loads(next(line for line in reversed(out.stdout.splitlines())
                           if line.startswith("{")))

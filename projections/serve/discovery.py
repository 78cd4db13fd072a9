"""`<db>.serve.json`: how the CLI finds the server that holds a database.

`pitlog serve` writes it (URL and pid) once it listens, and removes it on exit. A file whose
pid is no longer running (a SIGKILL left it behind) is stale and ignored. Standard library only:
the CLI imports this on every query command.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def discovery_path(db_path: str | Path) -> Path:
    p = Path(db_path)
    return p.with_name(f"{p.name}.serve.json")


def write(db_path: str | Path, url: str) -> Path:
    path = discovery_path(db_path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"url": url, "pid": os.getpid(),
                               "db": str(Path(db_path).resolve())}) + "\n")
    os.replace(tmp, path)  # a reader sees the old file or the new one, never half
    return path


def remove(db_path: str | Path) -> None:
    """Remove the file if it is this process's (a newer server may have replaced it)."""
    found = read(db_path)
    if found is not None and found.get("pid") == os.getpid():
        discovery_path(db_path).unlink(missing_ok=True)


def read(db_path: str | Path) -> dict[str, Any] | None:
    """The live server's {"url", "pid", "db"}, or None when there is none or it is stale."""
    try:
        found = json.loads(discovery_path(db_path).read_text())
        pid, url = int(found["pid"]), str(found["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _alive(pid):
        return None
    return {**found, "pid": pid, "url": url}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True

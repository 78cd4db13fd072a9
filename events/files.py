"""Files written whole: a temporary file beside the target, renamed over it when complete."""

from __future__ import annotations

from pathlib import Path


def remove_quietly(path: Path) -> None:
    """Remove a failed write's temporary file. An error removing it is not the one to tell:
    the write's own error is (a full disk, a read-only folder)."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass

"""What makes a folder an embedded event log (events/log/embedded/log.py), without importing
the log: `pitlog --help` and the file options' checks ask it (cli/options.py)."""

from __future__ import annotations

from pathlib import Path

META = "meta.json"  # the file that makes a folder an embedded log (log.py's docstring)


def is_log_folder(folder: Path) -> bool:
    """Whether `folder` holds an embedded log (its meta.json)."""
    return (folder / META).is_file()

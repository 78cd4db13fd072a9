"""What makes a folder an embedded event log (events/log/embedded/log.py), without importing
the log: `pitlog --help` and the file options' checks ask it (cli/options.py)."""

from __future__ import annotations

import json
from pathlib import Path

META = "meta.json"  # the file that makes a folder an embedded log (log.py's docstring)


def has_meta(folder: Path) -> bool:
    """Whether `folder` has a meta.json (the log opens it and says what is wrong with it)."""
    return (folder / META).is_file()


def is_log_folder(folder: Path) -> bool:
    """Whether `folder` holds an embedded log: a meta.json that is a log's (its format and
    partitions), not any file of that name (a reports folder may have one)."""
    try:
        meta = json.loads((folder / META).read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and "format" in meta and "partitions" in meta

"""What a store's files are, read from their names and first bytes without opening them with
DuckDB (so `pitlog --help`, which must not import DuckDB, can ask: cli/options.py)."""

from __future__ import annotations

from pathlib import Path

MAGIC = b"DUCK"  # at byte 8 of every DuckDB database file
# The files beside a store: DuckDB's write-ahead log, and DUPLICATE_EVENT's index of ids
# (projections/id_index.py).
WAL_SUFFIX = ".wal"
IDS_SUFFIX = ".detect-ids.sqlite"
IDS_JOURNALS = ("", "-wal", "-shm", "-journal")  # SQLite's files beside the index, while open


def is_duckdb_file(path: Path) -> bool:
    """Whether `path` is a regular file that starts as a DuckDB database does (a FIFO or a
    device is never opened: reading one would wait for a writer)."""
    if not path.is_file():
        return False
    try:
        with path.open("rb") as f:
            return f.read(12)[8:12] == MAGIC
    except OSError:
        return False


def store_owning(path: Path) -> Path | None:
    """The DuckDB database `path` is, or whose write-ahead log or index of ids it is; None
    when it is neither (a file to write may then be written)."""
    if is_duckdb_file(path):
        return path
    for suffix in (WAL_SUFFIX, *(IDS_SUFFIX + s for s in IDS_JOURNALS)):
        if path.name.endswith(suffix):
            store = path.with_name(path.name.removesuffix(suffix))
            if is_duckdb_file(store):
                return store
    return None

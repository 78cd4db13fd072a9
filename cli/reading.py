"""The read-only connection every query command opens when no `pitlog serve` answers for it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cli.options import db_path
from projections.snapshot import damage_named, file_read, open_for_reading


@contextmanager
def reading(db: Path | None) -> Iterator[Any]:
    """A DuckDB connection (typed Any: only projections/ imports duckdb, STYLE idiom 4) to
    the database of --db, read-only (or its snapshot while a projector writes), without DuckDB's
    own progress bar: the commands draw theirs on stderr (cli/progress.py)."""
    path = db_path(db)
    con = open_for_reading(path)
    try:
        with damage_named(file_read(con, path)):  # the snapshot, while a writer holds it
            con.execute("SET enable_progress_bar = false")
            yield con
    finally:
        con.close()

"""A new store for tests whose point is what is projected into it, not the creation of the file:
copied from one created once per test process (per pytest-xdist worker). Creating a store binds
every view (projections/views.py), several seconds on a loaded 2-core machine; a copy's views
are current, so projections/views.py ensure_views leaves them as they are. Tests of creating,
migrating or upgrading a store (test_views.py, test_store_views.py, test_storage_compat.py, the
older-database tests) still make their files from nothing."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from projections.store import open_store

_template: list[Path] = []  # the one template of this process, once made


def _template_file() -> Path:
    if not _template:
        folder = Path(tempfile.mkdtemp(prefix="pitlog-store-template-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        file = folder / "empty.duckdb"
        open_store(file).close()
        _template.append(file)
    return _template[0]


def new_store(path: Path) -> Path:
    """`path` (which must not exist yet) made a new, empty store: tables and current views, no
    events, no checkpoint; returns `path`."""
    if path.exists():
        raise FileExistsError(f"{path} exists: new_store makes new stores only")
    shutil.copyfile(_template_file(), path)
    return path


def store_at(path: Path) -> Path:
    """`path` as the store to project into: a new one if none is there yet, else as it is (a
    second projection of the same log continues the first)."""
    return path if path.exists() else new_store(path)


def copy_store(projected: Path, path: Path) -> Path:
    """`path` (which must not exist yet) a copy of the closed store `projected`, for tests whose
    point comes after the projection (a server, a reader, a discovery file): the projection is
    paid once per module instead of once per test. Returns `path`."""
    if path.exists():
        raise FileExistsError(f"{path} exists: copy_store makes new stores only")
    # A store left with a write-ahead log was not closed: its copy would lack the last commits.
    assert not projected.with_name(projected.name + ".wal").exists(), projected
    shutil.copyfile(projected, path)
    return path

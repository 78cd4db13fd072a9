"""Live readers while a projector writes (docs/architecture.md, principle 6).

A process holding a DuckDB file read-write locks every other process out, readers included.
So the projector can publish a read-only copy, `<name>.snapshot.duckdb` beside the database:
CHECKPOINT (the WAL is folded into the file, so the file alone is the whole database), copy the
file to a temporary name, fsync, and rename it over the old snapshot. The rename is atomic, so a
reader sees the old snapshot or the new one, never half of one; a reader that has the old one
open keeps reading it (the inode lives until it closes). Readers call `open_for_reading`, which
uses the real file when it is free and the snapshot when a writer holds it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from events.errors import NotFoundError, ProjectionError, first_line
from events.files import remove_quietly
from projections.memory import reader_config
from projections.store_files import MAGIC

# The files this process has open with a DuckDB connection (store.open_store notes them).
# DuckDB locks its file with POSIX record locks, which belong to the process and are all
# released when the process closes *any* descriptor of that file: opening the file here to read
# its header or to copy it, then closing it, unlocked a follower's database (an outside review,
# session 38: a second writer then committed beside it, and the follower died on its next
# checkpoint). Such a file is not opened here; its copy is made by a child process.
_OPEN_HERE: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, Path] = \
    weakref.WeakKeyDictionary()


def opened_here(path: str | Path, con: duckdb.DuckDBPyConnection) -> None:
    """Note that `con`, of this process, has `path` open (see _OPEN_HERE)."""
    _OPEN_HERE[con] = Path(path).resolve()


def _open_here(path: Path) -> bool:
    return path.resolve() in set(_OPEN_HERE.values())


def check_database_file(path: Path, *, may_be_missing: bool = False) -> None:
    """ProjectionError unless `path` is a DuckDB file (or, with `may_be_missing`, absent): a
    folder, a text file or random bytes given as --db is named as such, never reported as
    "locked by a writer". A file this process has open is DuckDB's, and is not read (_OPEN_HERE)."""
    if path.is_file() and _open_here(path):
        return
    if path.is_dir():
        raise ProjectionError(f"--db {path} is a folder, not a DuckDB file: give the file "
                              f"`pitlog project` writes, e.g. pitlog-data/pitlog.duckdb")
    if not path.exists():
        if may_be_missing:
            return
        raise NotFoundError(f"no database at {path}: run `pitlog project` first")
    try:
        with path.open("rb") as f:
            head = f.read(12)
    except OSError as exc:
        raise ProjectionError(f"cannot read --db {path}: {exc.strerror}") from exc
    if not head:
        raise ProjectionError(f"--db {path} is an empty file (a creation that failed, e.g. on "
                              f"a full disk, may leave one): delete it and run "
                              f"`pitlog project` again")
    if head[8:12] != MAGIC:
        raise ProjectionError(f"--db {path} is not a DuckDB database (it holds something "
                              f"else): give the file `pitlog project` writes, or a new path "
                              f"for `pitlog project` to create")


SNAPSHOT_SUFFIX = ".snapshot.duckdb"


def snapshot_path(db_path: str | Path) -> Path:
    """`pitlog.duckdb` -> `pitlog.snapshot.duckdb`, in the same folder (so rename is atomic)."""
    p = Path(db_path)
    return p.with_name(f"{p.stem}{SNAPSHOT_SUFFIX}")


def database_path(con: duckdb.DuckDBPyConnection) -> Path:
    """The file behind a connection's current database; ProjectionError for in-memory ones."""
    # fetchall, not fetchone: in DuckDB 2.0 an unread result keeps the connection busy.
    rows = con.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    row = rows[0] if rows else None
    if row is None or not row[0]:
        raise ProjectionError("an in-memory database has no file to snapshot; use a --db file")
    return Path(row[0])


def file_read(con: duckdb.DuckDBPyConnection, db_path: str | Path) -> Path:
    """The file `con` reads, named as the caller named the database: `db_path`, or its
    snapshot when a writer held the database (open_for_reading, guarded_connection). What an
    error about the file read must name (damage_named): the database may be whole."""
    snap = snapshot_path(db_path)
    return snap if database_path(con).name == snap.name else Path(db_path)


def publish_snapshot(con: duckdb.DuckDBPyConnection, db_path: str | Path | None = None) -> Path:
    """Publish a read-only copy of the database `con` has open read-write; returns its path.

    Call it between transactions (the projector does, after a commit).
    """
    src = Path(db_path) if db_path is not None else database_path(con)
    dest = snapshot_path(src)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    # CHECKPOINT writes the WAL into the file: afterwards the file is self-contained and stays
    # unchanged until our next write, which cannot happen while we copy (we are the writer).
    con.execute("CHECKPOINT")
    try:
        # By a child process: this one holds the file's lock (_OPEN_HERE)
        copied = subprocess.run([sys.executable, "-I", "-S", "-c", _COPY, str(src), str(tmp)],
                                capture_output=True, text=True, check=False)
        if copied.returncode:
            lines = copied.stderr.strip().splitlines()
            raise OSError(lines[-1] if lines else f"the copy exited {copied.returncode}")
        os.replace(tmp, dest)
    except OSError as exc:
        remove_quietly(tmp)
        raise ProjectionError(f"cannot publish the snapshot {dest}: {exc}") from exc
    return dest


# The copy publish_snapshot's child makes: the bytes, then fsync (the snapshot is whole before
# it replaces the last one).
_COPY = """
import os, shutil, sys
with open(sys.argv[1], "rb") as fin, open(sys.argv[2], "wb") as fout:
    shutil.copyfileobj(fin, fout, 16 * 1024 * 1024)
    fout.flush()
    os.fsync(fout.fileno())
"""


def locked(exc: duckdb.Error) -> bool:
    """Whether DuckDB refused to open a file because another holds it: another process's write
    lock (an IOException naming the lock), or this process's own connection of other settings
    (a ConnectionException). Any other IOException is the file itself (cut short, damaged)."""
    return isinstance(exc, duckdb.ConnectionException) or (
        isinstance(exc, duckdb.IOException) and "lock" in str(exc).lower())


def damaged(path: str | Path, exc: duckdb.Error) -> ProjectionError:
    """The one error for a database file DuckDB cannot read (not `locked`): named as damaged,
    never as held by a writer (docs/integrity.md; an outside review, session 38, found a file
    cut short sent to "run the projector with snapshots on, or stop it first")."""
    return ProjectionError(f"cannot open {path}: {first_line(exc)}; no writer holds it: if it "
                           f"is damaged or cut short, rebuild it with `pitlog project` into a "
                           f"new file")


# DuckDB's words for a block whose checksum does not match, at the start of its message (a
# message that only quotes them, "Could not convert string 'Corrupt database file'", is a
# query's or a device's text: an outside review, session 40); through Arrow's reader, an
# OSError with DuckDB's kind of error before them.
_DAMAGE = re.compile(r"(Data Corruption Error: )?(Corrupt database file: computed checksum "
                     r"\d+ does not match stored checksum \d+.*)")


def damage_met(path: str | Path, exc: BaseException) -> ProjectionError | None:
    """The one error for a damaged block a query met after the file opened (its checksum is
    checked when a query reads it), found in `exc` or what it was raised from; else None. It
    was "internal error (Corrupt database file ...)", naming no file (an outside review,
    session 39)."""
    seen: BaseException | None = exc
    for _ in range(8):  # a chain of causes is short; never follow a loop
        if seen is None:
            break
        if isinstance(seen, duckdb.Error | OSError) and (
                found := _DAMAGE.fullmatch(first_line(seen))):
            if Path(path).name.endswith(SNAPSHOT_SUFFIX):
                # the read-only copy a writer publishes: rebuilding it is that writer's job
                # (a review, session 41: the advice was to rebuild the whole database)
                return ProjectionError(
                    f"{path} is damaged ({found.group(2)}): it is the read-only copy the "
                    f"database's writer (`pitlog project --follow`) publishes, and its next "
                    f"publish replaces it; or stop the writer and read the database itself")
            return ProjectionError(f"{path} is damaged ({found.group(2)}): rebuild it with "
                                   f"`pitlog project` into a new file (the log holds every "
                                   f"event)")
        seen = seen.__cause__ or seen.__context__
    return None


@contextmanager
def damage_named(path: str | Path) -> Iterator[None]:
    """Queries run inside raise damage_met's error, naming `path` (the file they read:
    file_read), for a damaged block they meet; any other error as it was."""
    try:
        yield
    except Exception as exc:
        if (found := damage_met(path, exc)) is None:
            raise
        raise found from exc


def open_for_reading(db_path: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the database, or to its snapshot while a writer holds it.

    Raises NotFoundError when neither file exists, and ProjectionError when the database is
    locked and no snapshot has been published (run the projector with a snapshot).
    """
    path = Path(db_path)
    snap = snapshot_path(path)
    if not path.exists() and not snap.exists():
        raise NotFoundError(f"no database at {path}: run `pitlog project` first")
    check_database_file(path, may_be_missing=True)
    config = reader_config()  # no spilling: a reader writes no file
    try:
        return duckdb.connect(str(path), read_only=True, config=config)
    except duckdb.Error as exc:
        # Locked: another process holds the write lock, or this very process has the file open
        # read-write (DuckDB allows one configuration per file). Else the file is damaged.
        if not locked(exc):
            raise damaged(path, exc) from exc
        if not snap.exists():
            raise ProjectionError(
                f"{path} is locked by a writer ({first_line(exc)}) and no snapshot "
                f"{snap.name} exists; run the projector with snapshots on, or stop it "
                f"first") from exc
    try:
        return duckdb.connect(str(snap), read_only=True, config=config)
    except duckdb.Error as exc:
        raise ProjectionError(f"cannot open the snapshot {snap}: {exc}") from exc

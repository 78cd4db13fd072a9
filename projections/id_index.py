"""DUPLICATE_EVENT's index of the history's event ids (incremental.Detector.earlier_copies): a
SQLite B-tree beside the store, keyed by a 63-bit hash of (table, event id), so a live batch's
look-up reads a few rows per id of the batch, not one per event of the history (principle 7),
with memory bounded by SQLite's page cache (2 MB), not the history.

Why not in DuckDB: a scan of a hash column read every event's row per batch (9.5M rows at
9.5M events), and DuckDB 2.0's own index (ART), which reads as little as this, holds the nodes
it has read in memory: 345 MB after ten batches' look-ups at 9.5M ids, out of memory under a
256 MB limit (benchmarks/results.md, session 14).

It is a cache of the store's `events`, never a second truth: every event of `events` has its
row here (the look-up may find more, never less), and the look-up keeps a match only once it
has read the event from `events` at that position with the same table and id. How that holds
whatever crashes when:
- A batch's rows go in before its DuckDB commit (Index.append, from Detector.apply inside the
  batch's transaction), idempotently (INSERT OR IGNORE of the whole row). A crash or failure
  between the two commits leaves rows for positions `events` does not hold: the look-up reads
  nothing there, and the batch, projected again, writes the same rows again.
- `upto` holds the store's checkpoints (source, partition, next offset, log id) as of that
  batch, in the same SQLite transaction as its rows, and `meta` the store's key (a random id
  kept in the store's KEY table) and the value of DuckDB's hash() on a fixed input (DuckDB does
  not promise hash() stable across versions). At open (Index.open): an index of another store
  (a copied database without its index, a new store at the same path), of another DuckDB's
  hash(), of another log (source or log id), or missing or unreadable, is built anew from
  `events`; one behind the checkpoints (an older pitlog continued the store; a power loss took
  its last commits) is caught up from `events` by log position; one ahead (a failed DuckDB
  commit) is used as it is.
- Only the projector, which holds the store's lock, opens it (read-only commands never do);
  an in-memory store keeps it in memory.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pyarrow as pa

from events.errors import ProjectionError
from projections.snapshot import database_path
from projections.store_files import IDS_SUFFIX

KEY = "detect_ids_key"  # in the store: the key its index must carry
SUFFIX = IDS_SUFFIX  # beside the store's file (projections/snapshot.py)
# The tables an earlier pitlog kept the ids in, inside the store (sessions 12-13): dropped.
OLD_TABLES = ("detect_ids", "detect_ids_at")
# SQLite's INTEGER is signed 64-bit: the hash loses its lowest bit. A collision only makes the
# look-up read one event more from `events`, where its table and id do not match.
HASH = "(hash(table_id, event_id) >> 1)::BIGINT"
IDS_OF = (f"SELECT {HASH} AS h, log_partition, log_offset FROM {{src}} "
          "WHERE event_id IS NOT NULL")
_HASH_PROBE = "SELECT hash('pitlog', 'detect_ids')::VARCHAR"
_CHECKPOINTS = "SELECT source, log_partition, next_offset, log_id FROM checkpoints"
_DDL = (
    "CREATE TABLE IF NOT EXISTS ids (h INTEGER NOT NULL, log_partition INTEGER NOT NULL, "
    "log_offset INTEGER NOT NULL, PRIMARY KEY (h, log_partition, log_offset)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS upto (source TEXT NOT NULL, log_partition INTEGER NOT NULL, "
    "next_offset INTEGER NOT NULL, log_id TEXT, PRIMARY KEY (source, log_partition))",
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
)
LOOKUP_CHUNK = 500  # hashes per `IN` list: one B-tree search each
IN_HASH_ORDER = "ORDER BY h, log_partition, log_offset"  # the B-tree's key order
_COPY_ROWS = 100_000  # rows per batch copied from `events` into a new index


def index_path(con: duckdb.DuckDBPyConnection) -> Path | None:
    """Where the store's index lives: beside its file; None for an in-memory store."""
    try:
        path = database_path(con)
    except ProjectionError:
        return None
    return path.with_name(path.name + SUFFIX)


def store_key(con: duckdb.DuckDBPyConnection) -> str:
    """The store's key, made at the first use. An earlier pitlog's id tables are dropped (it
    makes them again if it runs on the store, and its batches leave this index behind)."""
    for name in OLD_TABLES:
        con.execute(f"DROP TABLE IF EXISTS {name}")
    con.execute(f"CREATE TABLE IF NOT EXISTS {KEY} (key VARCHAR NOT NULL)")
    rows = con.execute(f"SELECT key FROM {KEY}").fetchall()
    if len(rows) != 1:
        con.execute(f"DELETE FROM {KEY}")
        con.execute(f"INSERT INTO {KEY} SELECT uuid()::VARCHAR")
        rows = con.execute(f"SELECT key FROM {KEY}").fetchall()
    return str(rows[0][0])


def _connect(path: Path | None) -> sqlite3.Connection:
    # check_same_thread off: `pitlog serve` projects on a thread of its own, one at a time.
    db = sqlite3.connect(str(path) if path is not None else ":memory:",
                         isolation_level=None, check_same_thread=False, timeout=30)
    # WAL with NORMAL sync: a commit survives a crash of the process; one that a power loss
    # takes leaves `upto` behind the store's checkpoints, so the next open catches up.
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    for ddl in _DDL:
        db.execute(ddl)
    return db


class Index:
    """The open index of one store (Index.open)."""

    def __init__(self, db: sqlite3.Connection, built: str, path: Path | None = None) -> None:
        self.db = db
        self.built = built  # what open did: "used", "caught up" or "built" (for the tests)
        self.path = path

    @classmethod
    def open(cls, con: duckdb.DuckDBPyConnection) -> Index:
        """The store's index, current with its committed `events` (built or caught up)."""
        key = store_key(con)
        ((probe,),) = con.execute(_HASH_PROBE).fetchall()
        path = index_path(con)
        db: sqlite3.Connection | None = None
        behind = None
        try:
            db = _connect(path)
            behind = _behind(db, con, key, probe)
        except sqlite3.DatabaseError as exc:
            if db is not None:
                db.close()
                db = None
            # The file cannot be opened or written (permissions, a folder in its place, a
            # failing disk): building anew would delete an index that may be whole, then
            # fail the same way. Said as what it is, and nothing deleted. Anything else (not a
            # SQLite file, a damaged one, another program's tables): built anew.
            if (getattr(exc, "sqlite_errorname", "") or "").startswith(_CANNOT_USE):
                raise _failed(path, exc) from exc
        if db is None or behind is None:
            if db is not None:
                db.close()
            try:
                return cls(_build(con, path, key, probe), "built", path)
            except sqlite3.Error as exc:
                raise _failed(path, exc) from exc
        index = cls(db, "caught up" if behind else "used", path)
        if behind:
            # A query per partition: a conjunction of constants, which DuckDB prunes row
            # groups by; each in hash order (`append` says why).
            index._write(con, [f"SELECT * FROM ({IDS_OF.format(src='events')}) "
                               f"WHERE log_partition = {p} AND log_offset >= {o} "
                               f"{IN_HASH_ORDER}" for p, o in sorted(behind.items())])
        return index

    def close(self) -> None:
        self.db.close()

    def matches(self, hashes: list[int]) -> list[tuple[int, int, int]]:
        """(hash, partition, offset) of every indexed event whose hash is one of `hashes`.
        Searched in hash order (`append` says why)."""
        out: list[tuple[int, int, int]] = []
        ordered = sorted(hashes)
        try:
            for i in range(0, len(ordered), LOOKUP_CHUNK):
                part = ordered[i:i + LOOKUP_CHUNK]
                out += self.db.execute(
                    "SELECT h, log_partition, log_offset FROM ids "
                    f"WHERE h IN ({', '.join('?' * len(part))})", part).fetchall()
        except sqlite3.Error as exc:
            raise _failed(self.path, exc) from exc
        return out

    def append(self, con: duckdb.DuckDBPyConnection, src: str | None) -> None:
        """Inside the batch's DuckDB transaction, after its checkpoints, before its commit: the
        rows of `src`'s events (None: none) and the checkpoints they bring the index to. In
        hash order, as `matches` searches: consecutive rows land on the same or the next leaf
        page, so a batch reads and writes each page it touches once, where rows in log order
        touched a random page each (at 10M events the index is 200 MB beside a 2 MB page cache;
        benchmarks/results.md, session 24)."""
        self._write(con, [f"{IDS_OF.format(src=src)} {IN_HASH_ORDER}"]
                    if src is not None else [])

    def _write(self, con: duckdb.DuckDBPyConnection, sources: list[str]) -> None:
        db = self.db
        try:
            # Inside the try: BEGIN itself fails on a file it cannot write (its -shm read-only).
            db.execute("BEGIN IMMEDIATE")
            for sql in sources:
                _copy(con, db, sql)
            db.execute("DELETE FROM upto")
            db.executemany("INSERT INTO upto VALUES (?, ?, ?, ?)",
                           con.execute(_CHECKPOINTS).fetchall())
            db.execute("COMMIT")
        except BaseException as exc:
            if db.in_transaction:  # SQLite ends some failed transactions itself (a full disk)
                db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise _failed(self.path, exc) from exc
            raise


# SQLite's primary result codes (and their extended ones, which start with them) that say the
# file cannot be opened or written, not that it is damaged.
_CANNOT_USE = ("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_READONLY", "SQLITE_IOERR",
               "SQLITE_FULL", "SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_AUTH")


# The result codes of a damaged file. Open reads only the index's first pages (meta, upto),
# so a page damaged further in is met by a look-up or a write, inside a batch.
_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def _failed(path: Path | None, exc: sqlite3.Error) -> ProjectionError:
    where = path or "(in memory)"
    if path is not None and (getattr(exc, "sqlite_errorname", "") or "").startswith(_DAMAGED):
        # Not deleted here: the open connection holds it, and a disk that damaged it may
        # damage the next one; the user sees it and decides. Running again alone would meet it.
        return ProjectionError(
            f"the index of event ids {where} is damaged ({exc}); nothing of this batch was "
            f"projected. Delete {where} and run again: the index is a cache of the database, "
            f"built anew from it at the next start")
    return ProjectionError(
        f"cannot use the index of event ids {where}: {exc}; check the disk (free space, "
        "permissions) and run again (the index is a cache of the database: deleted, it is "
        "built anew)")


def _copy(con: duckdb.DuckDBPyConnection, db: sqlite3.Connection, sql: str) -> None:
    reader = con.sql(sql).to_arrow_reader(_COPY_ROWS)
    try:
        for batch in reader:
            table = pa.Table.from_batches([batch])
            db.executemany("INSERT OR IGNORE INTO ids VALUES (?, ?, ?)",
                           zip(*(table.column(i).to_pylist() for i in range(3)), strict=True))
    finally:
        # An unread result keeps the DuckDB connection busy: the batch's rollback would fail.
        reader.close()


def _behind(db: sqlite3.Connection, con: duckdb.DuckDBPyConnection, key: str,
            probe: str) -> dict[int, int] | None:
    """{partition: offset the index holds events up to} where it is behind the store's
    checkpoints ({} when current); None when it must be built anew."""
    meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
    if meta.get("store") != key or meta.get("hash") != probe:
        return None
    held = {(s, p): (n, lid) for s, p, n, lid in db.execute(
        "SELECT source, log_partition, next_offset, log_id FROM upto").fetchall()}
    sources = {s for s, _ in held}
    behind: dict[int, int] = {}
    for source, partition, next_offset, log_id in con.execute(_CHECKPOINTS).fetchall():
        if source not in sources:
            return None  # another log at this store, or none indexed yet
        n, lid = held.get((source, partition), (0, log_id))  # a partition new since: from 0
        if lid != log_id:
            return None
        if n < next_offset:
            behind[partition] = n
    return behind


def _build(con: duckdb.DuckDBPyConnection, path: Path | None, key: str,
           probe: str) -> sqlite3.Connection:
    if path is not None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                path.with_name(path.name + suffix).unlink(missing_ok=True)
            except OSError as exc:
                raise ProjectionError(
                    f"cannot replace the damaged index of event ids {path}: {exc.strerror or exc}"
                    f"; check the folder's permissions, or delete the file and run again (the "
                    f"index is a cache of the database, built anew)") from exc
    db = _connect(path)
    index = Index(db, "built", path)
    # In hash order: each row lands after the last, so the B-tree is written page by page.
    index._write(con, [f"{IDS_OF.format(src='events')} {IN_HASH_ORDER}"])
    db.execute("BEGIN IMMEDIATE")
    db.execute("DELETE FROM meta")
    db.executemany("INSERT INTO meta VALUES (?, ?)", [("store", key), ("hash", probe)])
    db.execute("COMMIT")
    return db

"""Catalogs of views made once per definition and kept in a cache folder, attached read-only.

Creating a DuckDB view binds it: DuckDB resolves every view and macro it reads to learn its
columns. The detector's three window catalogs and the round money keeper's cost about 0.5 s of
binding at every `pitlog project` start, a third of a small `project` call
(benchmarks/results.md, session 34; `pitlog serve` binds them once per run, in memory: below).
A DuckDB file keeps its views as their text and columns; attaching one binds nothing (about 5
ms), and a view is bound when a query reads it, as it is when made in memory. So each window
catalog's views are made once into a file whose name is the digest of what they are made from,
and attached read-only afterwards:

- what they are made from: DuckDB's version, every view file and the generated macros
  (views.views_fingerprint), the catalog's name, its `events` view's text and columns, and
  which views the caller makes (`what`). Another pitlog, DuckDB or schema gives another
  file; nothing is read stale.
- the folder: `PITLOG_CACHE_DIR`, else `$XDG_CACHE_HOME/pitlog/views` (an absolute
  XDG_CACHE_HOME: a relative one is ignored, as the XDG spec says), else
  `~/.cache/pitlog/views`. The files hold view definitions only, never a row of a store.
- trusted as the installed package is: a folder or file that is not the user's own, or that
  another user may write (group or others' write bit), is not used, as ssh refuses such keys:
  whoever could write a view there could change which anomalies are stored. Nor is one below a
  folder another user may write (not the user's or root's, or group or others' write bit
  without the sticky bit /tmp has): they could swap the cache folder for their own. The
  folder is resolved (symlinks followed) first, and the resolved path is the one checked and
  attached: a symlink on the way cannot be re-pointed between the checks and the ATTACH.
- a file is made under a name of its own and renamed into place once complete, so a reader
  never attaches half a file, and two processes making the same one both end with a whole one.
  A file that cannot be attached or lacks its digest (damaged, cut short) is made again.
- when the folder cannot be written or a file cannot be attached (a read-only home, a full
  disk, no home at all, a connection sealed against file access as `pitlog serve`'s writer
  is: sql_console.seal_writer), the catalog is made in memory as before: slower, never wrong.
  A file left half-made by a killed process (`*.part`) is removed by a later make after an
  hour.
- old files are removed: each definition (a pitlog or DuckDB upgrade, a changed view file)
  gets new files of about 0.5-0.8 MB each, six per definition, and the old ones are never
  attached again. A file's modification time is its last use (set again when it is attached
  and more than a day old), and a make removes the files not used for 30 days
  (`_UNUSED_SECONDS`). A file removed while another process has it attached stays readable
  there (POSIX keeps an open file); one removed just before another process attaches it is
  made again.

The catalog's `events` is a view of the caller's window (`events_sql`, naming tables of
catalogs the caller attached), so the window's rows stay in memory and the views bound at query
time read them.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import duckdb

from events.errors import ProjectionError
from projections.views import views_fingerprint

_MARK = "pitlog_view_cache"  # the file's one table: its digest, written last


# Bumped when what a file holds changes in a way the digest's inputs do not show.
FORMAT = 1
_STALE_PART_SECONDS = 3600
_UNUSED_SECONDS = 30 * 86400
_TOUCH_SECONDS = 86400  # a file's last use is kept to the day: one write a day, not per start


def cache_dir() -> Path:
    """Where the view catalogs are kept (module docstring); RuntimeError when there is no home
    to keep them in."""
    if os.environ.get("PITLOG_CACHE_DIR"):
        return Path(os.environ["PITLOG_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "pitlog" / "views"


def attach_views(cur: duckdb.DuckDBPyConnection, alias: str, events_sql: str,
                 make: Callable[[duckdb.DuckDBPyConnection], None], what: str) -> bool:
    """Attach as `alias` a catalog holding the view `events` (AS `events_sql`) and the views
    `make` creates on a cursor whose default catalog it is; `cur` is left using `alias`.
    Returns True when the catalog came from the cache folder (made there now or earlier),
    False when it was made in memory."""
    quoted = _quoted(alias)
    _leave(cur, alias)
    cur.execute(f"DETACH DATABASE IF EXISTS {quoted}")
    columns = cur.execute(f"DESCRIBE {events_sql}").fetchall()
    digest = hashlib.sha256("\0".join(
        (f"format {FORMAT}", views_fingerprint(), alias, events_sql, what,
         repr([(c[0], c[1]) for c in columns]))).encode()).hexdigest()
    try:
        if _sealed(cur):
            raise OSError("file access is off on this connection")
        # resolved: the folders checked (_attached) are the ones attached, whoever may
        # re-point a symlink on the way afterwards
        path = cache_dir().resolve() / f"views-{digest[:32]}.duckdb"
        if not _attached(cur, quoted, path, digest):
            _make_file(cur, quoted, path, digest, events_sql, make)
            if not _attached(cur, quoted, path, digest):
                raise OSError(f"{path}: made, but not attachable as the user's own")
        cur.execute(f"USE {quoted}")
        return True
    # Any failure of the cache (a make that failed is made again below, and raises there if
    # it fails in memory too: a missing view file is an error either way)
    except (OSError, RuntimeError, KeyError, duckdb.Error, ProjectionError):
        _leave(cur, alias)
        cur.execute(f"DETACH DATABASE IF EXISTS {quoted}")
    cur.execute(f"ATTACH ':memory:' AS {quoted}")
    cur.execute(f"USE {quoted}")
    cur.execute(f"CREATE VIEW events AS {events_sql}")
    make(cur)
    return False


def _leave(cur: duckdb.DuckDBPyConnection, alias: str) -> None:
    """Off `alias` if `cur` uses it (a catalog in use cannot be detached): onto another."""
    ((current,),) = cur.execute("SELECT current_database()").fetchall()
    if current == alias:
        ((other,),) = cur.execute(
            "SELECT database_name FROM duckdb_databases() WHERE NOT internal "
            "AND database_name <> $a ORDER BY database_name = 'memory' DESC LIMIT 1",
            {"a": alias}).fetchall()
        cur.execute(f"USE {_quoted(other)}")


def _sealed(cur: duckdb.DuckDBPyConnection) -> bool:
    ((on,),) = cur.execute("SELECT current_setting('enable_external_access')").fetchall()
    return not on


def _own(path: Path) -> bool:
    """The user's own, and writable by no one else (module docstring)."""
    st = path.stat()
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _safe_above(folder: Path) -> bool:
    """A folder above the cache folder: the user's or root's, and writable by no one else
    unless sticky (as /tmp is: there no one can rename another user's entry). Another user who
    could write one could swap the cache folder for theirs between the checks and the ATTACH,
    as ssh's StrictModes checks every folder above a key for that reason."""
    st = folder.stat()
    return st.st_uid in (os.geteuid(), 0) and (not st.st_mode & 0o022
                                               or bool(st.st_mode & stat.S_ISVTX))


def _attached(cur: duckdb.DuckDBPyConnection, quoted: str, path: Path, digest: str) -> bool:
    """Whether `path` is attached as `quoted`, read-only, holding `digest` (else detached).
    OSError when the folder or the file is not the user's own (_own), or a folder above them
    may be written by another user (_safe_above)."""
    folder = path.parent  # resolved (attach_views)
    for above in folder.parents:  # one not there yet is made by _make_file, the user's own
        if above.is_dir() and not _safe_above(above):
            raise OSError(f"{above}: above the cache folder, writable by another user")
    if folder.is_dir() and not _own(folder):
        raise OSError(f"{path.parent}: not the user's own, or writable by others")
    if not path.is_file():
        return False
    if not _own(path):
        raise OSError(f"{path}: not the user's own, or writable by others")
    try:
        cur.execute(f"ATTACH {_literal(path)} AS {quoted} (READ_ONLY)")
        if cur.execute(f"SELECT digest FROM {quoted}.main.{_MARK}").fetchall() == [(digest,)]:
            _mark_used(path)
            return True
    except duckdb.Error:
        pass
    cur.execute(f"DETACH DATABASE IF EXISTS {quoted}")
    return False


def _mark_used(path: Path) -> None:
    """The file's modification time set to now when more than a day old: its last use, which
    decides when it is removed (_remove_old)."""
    try:
        if time.time() - path.stat().st_mtime > _TOUCH_SECONDS:
            os.utime(path)
    except OSError:
        pass  # a folder that cannot be written: kept, the file used as it is


def _remove_old(folder: Path) -> None:
    """Half-made files of a killed process older than an hour, and files not used for 30
    days (module docstring)."""
    now = time.time()
    for pattern, age in (("views-*.part*", _STALE_PART_SECONDS),
                         ("views-*.duckdb", _UNUSED_SECONDS)):
        for old in folder.glob(pattern):
            try:
                if now - old.stat().st_mtime > age:
                    old.unlink()
            except OSError:
                pass  # another process's, removed meanwhile


def _make_file(cur: duckdb.DuckDBPyConnection, quoted: str, path: Path, digest: str,
               events_sql: str, make: Callable[[duckdb.DuckDBPyConnection], None]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _remove_old(path.parent)
    ((before,),) = cur.execute("SELECT current_database()").fetchall()
    part = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.part")
    try:
        cur.execute(f"ATTACH {_literal(part)} AS {quoted}")
        try:
            cur.execute(f"USE {quoted}")
            cur.execute(f"CREATE VIEW events AS {events_sql}")
            make(cur)
            cur.execute(f"CREATE TABLE {_MARK} AS SELECT $d AS digest", {"d": digest})
        finally:
            cur.execute(f"USE {_quoted(before)}")  # a catalog in use cannot be detached
            cur.execute(f"DETACH DATABASE IF EXISTS {quoted}")
        part.chmod(0o600)  # the user's alone whatever the umask (_own: 002 made it 664)
        os.replace(part, path)
    finally:
        for leftover in (part, part.with_name(part.name + ".wal")):
            leftover.unlink(missing_ok=True)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"

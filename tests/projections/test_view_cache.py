"""The window catalogs' views made once and attached from the cache folder
(projections/view_cache.py): a start binds none when their file is there, a damaged or foreign
file is made again, a folder that cannot be written leaves them made in memory, and the files
hold no row of a store. Every case ends with the stored rows equal to a full evaluation."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from live_support import differences

from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections import anomalies, incremental, round_money, view_cache
from projections.projector import project

CONFIG = SimConfig(seed=4, tables=2, rounds=24, seats=3, decks=1, irregularities=0.2)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, bytes]]:
    log = EmbeddedLog(tmp_path_factory.mktemp("source") / "log")
    simulate(log, CONFIG)
    out = [(r.key, r.value) for batch in log.read() for r in batch]
    log.close()
    return out


def _counting(monkeypatch: pytest.MonkeyPatch, cache: Path) -> dict[str, int]:
    """With `cache` as the cache folder, counts the calls that bind views in a scratch
    catalog: the detector's windows, the round money keeper's window and whole build, and the
    whole evaluation's."""
    monkeypatch.setenv("PITLOG_CACHE_DIR", str(cache))
    calls = {"detector": 0, "money": 0, "whole": 0}

    def wrap(owner: Any, name: str, key: str) -> None:
        real: Callable[..., None] = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> None:
            calls[key] += 1
            real(*args, **kwargs)
        monkeypatch.setattr(owner, name, counted)

    wrap(incremental, "window_views", "detector")
    wrap(round_money, "_create_views", "money")
    wrap(anomalies, "create_views", "whole")
    return calls


def _project_in_two(tmp_path: Path, records: list[tuple[bytes, bytes]],
                    between: Callable[[], None] = lambda: None) -> duckdb.DuckDBPyConnection:
    """Half the evening projected, `between()`, then the rest in batches by another start."""
    log = EmbeddedLog(tmp_path / "log")
    half = len(records) // 2
    log.append(records[:half])
    db = str(tmp_path / "s.duckdb")
    project(log, db, publish_alerts=False)
    project(log, db, publish_alerts=False)  # nothing new: no detector start
    log.append(records[half:half + 40])
    project(log, db, publish_alerts=False)  # a start with a batch: the window catalogs made
    between()
    log.append(records[half + 40:])
    project(log, db, batch_size=60, publish_alerts=False)
    log.close()
    return duckdb.connect(db)


def _files(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_ino for p in folder.glob("views-*.duckdb")}


def test_a_start_attaches_the_views_made_once_and_binds_none(
        tmp_path: Path, records: list[tuple[bytes, bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    calls = _counting(monkeypatch, cache)
    made: dict[str, int] = {}

    def between() -> None:
        # Each catalog made once, by the first `project` (its batches detected one by one):
        # the three windows, the round money build's and its window's.
        assert calls == {"detector": 3, "money": 2, "whole": 0}
        made.update(_files(cache))
        calls.update(detector=0, money=0, whole=0)

    with _project_in_two(tmp_path, records, between) as con:
        assert calls == {"detector": 0, "money": 0, "whole": 0}  # the next start bound none
        assert _files(cache) == made  # the same files, not made again
        assert len(made) == 5
        assert differences(con) == (0, 0)
        ((rows,),) = con.execute("SELECT count(*) FROM anomalies_stored").fetchall()
        assert rows > 0


def test_a_damaged_or_foreign_cache_file_is_made_again(
        tmp_path: Path, records: list[tuple[bytes, bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    calls = _counting(monkeypatch, cache)

    def spoil() -> None:
        names = sorted(cache.glob("views-*.duckdb"))
        assert len(names) == 5
        other = names[1].read_bytes()
        names[0].write_bytes(b"not a database" * 100)  # damaged
        for name in names[1:]:  # another catalog's file under its name
            name.write_bytes(names[2].read_bytes() if name == names[1] else other)
        calls.update(detector=0, money=0, whole=0)

    with _project_in_two(tmp_path, records, spoil) as con:
        # The last start's four window catalogs, each made again; the build's is not needed.
        assert calls == {"detector": 3, "money": 1, "whole": 0}
        assert differences(con) == (0, 0)
    whole = 0
    for path in cache.glob("views-*.duckdb"):
        try:
            with duckdb.connect(str(path), read_only=True) as f:
                ((digest,),) = f.execute(f"SELECT digest FROM {view_cache._MARK}").fetchall()
        except duckdb.Error:
            continue  # the build's file, still damaged
        whole += path.name == f"views-{digest[:32]}.duckdb"
    assert whole == 4
    assert not list(cache.glob("*.part*"))  # no half-made file left behind


def test_a_folder_that_cannot_be_written_leaves_the_views_made_in_memory(
        tmp_path: Path, records: list[tuple[bytes, bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("a file where the cache folder would go\n")
    calls = _counting(monkeypatch, blocker / "views")

    def between() -> None:
        # Two starts with batches so far, each making the four windows in memory.
        assert calls == {"detector": 6, "money": 3, "whole": 0}
        calls.update(detector=0, money=0, whole=0)

    with _project_in_two(tmp_path, records, between) as con:
        # Made in memory again by the next start: the windows (the build ran once, before).
        assert calls == {"detector": 3, "money": 1, "whole": 0}
        assert differences(con) == (0, 0)
    assert blocker.read_text() == "a file where the cache folder would go\n"


def test_the_cache_holds_views_only_and_another_definition_gets_another_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("PITLOG_CACHE_DIR", str(cache))
    con = duckdb.connect()
    con.execute("ATTACH ':memory:' AS w")
    con.execute("CREATE TABLE w.main.events AS SELECT 'T1' AS table_id, 7 AS seq")

    def make(cur: duckdb.DuckDBPyConnection) -> None:
        cur.execute("CREATE VIEW doubled AS SELECT table_id, seq * 2 AS seq FROM events")

    cur = con.cursor()
    assert view_cache.attach_views(cur, "w_views", "SELECT * FROM w.main.events", make, "a")
    assert cur.execute("SELECT * FROM doubled").fetchall() == [("T1", 14)]
    (first,) = _files(cache)
    # The same definition: the same file, attached; another `what` or other columns: another.
    assert view_cache.attach_views(cur, "w_views", "SELECT * FROM w.main.events", make, "a")
    assert view_cache.attach_views(cur, "w_views", "SELECT * FROM w.main.events", make, "b")
    con.execute("CREATE OR REPLACE TABLE w.main.events AS SELECT 'T1' AS table_id, 7 AS seq, "
                "1 AS extra")
    assert view_cache.attach_views(cur, "w_views", "SELECT * FROM w.main.events", make, "a")
    assert len(_files(cache)) == 3 and first in _files(cache)
    cur.execute("USE memory")
    con.execute("DETACH w_views")
    for path in cache.glob("views-*.duckdb"):
        with duckdb.connect(str(path), read_only=True) as f:
            tables = f.execute("SELECT table_name, estimated_size FROM duckdb_tables()").fetchall()
            assert tables == [(view_cache._MARK, 1)]  # no row of the window, only the digest


def _attach(cur: duckdb.DuckDBPyConnection, what: str = "a") -> bool:
    def make(c: duckdb.DuckDBPyConnection) -> None:
        c.execute("CREATE VIEW doubled AS SELECT table_id, seq * 2 AS seq FROM events")

    ok = view_cache.attach_views(cur, "w_views", "SELECT * FROM w.main.events", make, what)
    assert cur.execute("SELECT * FROM doubled").fetchall() == [("T1", 14)]  # either way
    return ok


@pytest.fixture
def window() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("ATTACH ':memory:' AS w")
    con.execute("CREATE TABLE w.main.events AS SELECT 'T1' AS table_id, 7 AS seq")
    return con.cursor()


def test_a_folder_or_file_another_user_may_write_is_not_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        window: duckdb.DuckDBPyConnection) -> None:
    """Whoever could write a view there could change which anomalies are stored: a cache
    folder or file writable by group or others is not trusted, as ssh refuses such keys."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PITLOG_CACHE_DIR", str(cache))
    assert _attach(window)
    (made,) = cache.glob("views-*.duckdb")
    assert cache.stat().st_mode & 0o777 == 0o700  # made private
    made.chmod(0o666)
    assert not _attach(window)  # made in memory, the file left as it was
    assert made.stat().st_mode & 0o777 == 0o666
    made.chmod(0o644)
    assert _attach(window)
    cache.chmod(0o777)
    assert not _attach(window)


def test_no_home_a_relative_xdg_folder_and_a_sealed_connection_fall_back_to_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        window: duckdb.DuckDBPyConnection) -> None:
    monkeypatch.delenv("PITLOG_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # ignored (XDG: absolute only)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert view_cache.cache_dir() == tmp_path / "home" / ".cache" / "pitlog" / "views"

    def no_home() -> Path:  # a uid with no passwd entry and no HOME (a container's)
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert not _attach(window)  # was a RuntimeError out of the projector
    monkeypatch.setenv("PITLOG_CACHE_DIR", str(tmp_path / "cache"))
    window.execute("SET enable_external_access = false")  # pitlog serve's writer (seal_writer)
    assert not _attach(window)
    assert not (tmp_path / "cache").exists()  # not even the folder made


def test_a_half_made_file_of_a_killed_process_is_removed_after_an_hour(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        window: duckdb.DuckDBPyConnection) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("PITLOG_CACHE_DIR", str(cache))
    cache.mkdir(mode=0o700)
    old, young = cache / "views-x.duckdb.1.a.part", cache / "views-y.duckdb.2.b.part.wal"
    for part, age in ((old, 7200), (young, 60)):
        part.write_bytes(b"\0" * 100)
        os.utime(part, (time.time() - age, time.time() - age))
    assert _attach(window)
    assert not old.exists() and young.exists()  # a younger one may still be being made


def test_files_not_used_for_30_days_are_removed_by_the_next_make(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        window: duckdb.DuckDBPyConnection) -> None:
    """Each definition (an upgrade, a changed view file) gets files of its own and the old
    ones are never attached again: a file's modification time is its last use, and a make
    removes those unused for 30 days (an operator's cache folder would otherwise grow by
    about 4 MB a definition for good)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PITLOG_CACHE_DIR", str(cache))
    assert _attach(window, "a")
    (name,) = _files(cache)
    in_use = cache / name
    day = 86400
    unused, recent = cache / "views-0unused.duckdb", cache / "views-0recent.duckdb"
    for path, age in ((unused, 31 * day), (recent, 29 * day), (in_use, 40 * day)):
        if path != in_use:
            path.write_bytes(in_use.read_bytes())
            path.chmod(0o600)
        os.utime(path, (time.time() - age, time.time() - age))
    assert _attach(window, "a")  # attached: its last use is now, no file removed yet
    assert time.time() - in_use.stat().st_mtime < day
    assert unused.exists() and recent.exists()
    assert _attach(window, "b")  # another definition: a make, which removes the unused one
    assert not unused.exists() and recent.exists() and in_use.exists()
    assert len(_files(cache)) == 3  # in_use, recent and b's
    young = time.time() - 3600
    os.utime(in_use, (young, young))
    assert _attach(window, "a")
    assert in_use.stat().st_mtime == pytest.approx(young)  # touched at most once a day


def test_a_cache_below_a_folder_another_user_may_write_is_not_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        window: duckdb.DuckDBPyConnection) -> None:
    """A folder above the cache folder that others may write (not sticky) lets them swap the
    cache folder for one of their own between the checks and the ATTACH; a sticky one (as
    /tmp is) does not. The cache folders are made where they are missing, below it."""
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv("PITLOG_CACHE_DIR", str(shared / "pitlog" / "views"))
    shared.chmod(0o777)
    assert not _attach(window)  # made in memory
    assert not (shared / "pitlog").exists()  # and nothing made below it
    shared.chmod(0o1777)  # sticky: no one renames another user's entry
    assert _attach(window)
    assert len(list((shared / "pitlog" / "views").glob("views-*.duckdb"))) == 1
    assert _attach(window)  # attached again from the file
    shared.chmod(0o775)
    assert not _attach(window)
    shared.chmod(0o755)
    assert _attach(window)


def test_a_cache_folder_reached_through_a_symlink_is_attached_where_it_resolves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        window: duckdb.DuckDBPyConnection) -> None:
    """The folders checked are the ones attached: the symlink resolved first, so whoever may
    re-point it (here another user's link in a sticky folder) cannot swap the folder between
    the checks and the ATTACH (an outside review: the link was attached as given)."""
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    link = sticky / "link"
    link.symlink_to(real)
    if os.geteuid() == 0:
        os.lchown(link, 4242, 4242)  # another user's link
    monkeypatch.setenv("PITLOG_CACHE_DIR", str(link))
    checked_and_attached: list[Path] = []
    attached = view_cache._attached

    def spy(cur: duckdb.DuckDBPyConnection, quoted: str, path: Path, digest: str) -> bool:
        checked_and_attached.append(path)
        return attached(cur, quoted, path, digest)

    monkeypatch.setattr(view_cache, "_attached", spy)
    assert _attach(window)
    (made,) = real.glob("views-*.duckdb")
    assert checked_and_attached and set(checked_and_attached) == {made}

"""A read-write open re-creates the views only when the file does not already hold exactly
these (projections/views.py ensure_views): a reopened store skips the second of work, and an
upgraded pitlog, a view or macro dropped or replaced by hand, or a tampered list all bring the
views back as create_views makes them."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from events.errors import ProjectionError
from projections import views
from projections.store import open_store, prepare

# How DuckDB holds each view and macro of a store, as text (the comments left out).
_DEFINITIONS = """
SELECT 'view', view_name, sql FROM duckdb_views()
WHERE NOT internal AND NOT temporary AND schema_name = 'main'
UNION ALL
SELECT function_type, function_name, macro_definition FROM duckdb_functions()
WHERE NOT internal AND schema_name = 'main' AND function_type IN ('macro', 'table_macro')
ORDER BY ALL"""


@pytest.fixture
def created(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts create_views runs (the real one still runs)."""
    calls: list[int] = []
    real = views.create_views

    def counting(con: duckdb.DuckDBPyConnection) -> None:
        calls.append(1)
        real(con)

    monkeypatch.setattr(views, "create_views", counting)
    return calls


def _definitions(path: Path) -> list[tuple[str, str, str]]:
    """Every definition as the file holds it (read back from the file: DuckDB writes a view's
    CTEs without their MATERIALIZED hints in storage v1.4.0, so a view just created reads
    otherwise in the process that created it)."""
    with duckdb.connect(str(path), read_only=True) as con:
        return [tuple(r) for r in con.execute(_DEFINITIONS).fetchall()]


def _reopen(path: Path) -> list[tuple[str, str, str]]:
    """open_store and close it, then every definition as the open left it."""
    open_store(path).close()
    return _definitions(path)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new store, created once: each test copies it instead of creating its views again."""
    path = tmp_path_factory.mktemp("template") / "s.duckdb"
    open_store(path).close()
    return path


@pytest.fixture
def store(template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "s.duckdb"
    shutil.copyfile(template, path)
    return path


def test_a_reopened_store_keeps_its_views_and_a_new_one_gets_them(
        tmp_path: Path, created: list[int]) -> None:
    first = _reopen(tmp_path / "s.duckdb")
    assert created == [1]
    assert {name for kind, name, _ in first if kind == "view"} >= set(views.VIEW_NAMES)
    again = _reopen(tmp_path / "s.duckdb")
    assert created == [1]  # the file already held these views
    assert again == first
    con = open_store(tmp_path / "s.duckdb")
    try:  # the views still read the tables
        assert con.execute("SELECT count(*) FROM anomalies").fetchall() == [(0,)]
        assert con.execute("SELECT count(*) FROM rounds").fetchall() == [(0,)]
    finally:
        con.close()
    assert created == [1]


@pytest.mark.parametrize("edit", [
    "DROP VIEW hands",
    "CREATE OR REPLACE VIEW rounds AS SELECT 1 AS round_no",
    "ALTER VIEW shoes RENAME TO shoes_before",
    "COMMENT ON VIEW rack IS 'mine now'",
    "CREATE OR REPLACE MACRO rank_label(rank) AS 'ten'",
    "DROP TABLE pitlog_views",
    "DELETE FROM pitlog_views",
    "CREATE OR REPLACE TABLE pitlog_views AS SELECT 1 AS n",
    "DELETE FROM pitlog_views WHERE name = 'rounds'; DROP VIEW anomalies",
])
def test_a_view_or_macro_changed_by_hand_is_created_again(
        store: Path, created: list[int], edit: str) -> None:
    path = store
    fresh = _reopen(path)
    assert created == []  # the copy is current
    with duckdb.connect(str(path)) as con:
        con.execute(edit)
        assert [tuple(r) for r in con.execute(_DEFINITIONS).fetchall()] != fresh or \
            edit.startswith(("COMMENT", "DROP TABLE", "DELETE", "CREATE OR REPLACE TABLE"))
    restored = _reopen(path)
    assert created == [1]
    # Every definition is back as create_views wrote it (a renamed view stays, renamed).
    assert [d for d in restored if d[1] != "shoes_before"] == fresh
    assert _reopen(path) == restored and created == [1]  # and it is current again


def test_an_upgraded_pitlogs_views_replace_the_files_old_ones(
        store: Path, tmp_path: Path, created: list[int], monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = store
    sql = tmp_path / "sql"
    shutil.copytree(views.SQL_DIR, sql)
    hands = sql / "hands.sql"
    hands.write_text(hands.read_text() + "\nCREATE OR REPLACE VIEW hands_seen AS "
                     "SELECT count(*) AS n FROM hands;\n")
    monkeypatch.setattr(views, "SQL_DIR", sql)
    upgraded = _reopen(path)
    assert created == [1]
    assert ("view", "hands_seen") in {(k, n) for k, n, _ in upgraded}
    assert _reopen(path) == upgraded and created == [1]


def test_other_schemas_columns_create_the_views_again(store: Path) -> None:
    with duckdb.connect(str(store)) as con:
        assert views.ensure_views(con, "columns A") is True
        assert views.ensure_views(con, "columns A") is False
        assert views.ensure_views(con, "columns B") is True  # a new schema field
        assert views.ensure_views(con, "columns B") is False


@pytest.mark.parametrize("slip", ["missing", "unlisted"])
def test_a_missing_or_unlisted_sql_file_fails_even_when_the_store_is_current(
        store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slip: str) -> None:
    path = store
    sql = tmp_path / "sql"
    shutil.copytree(views.SQL_DIR, sql)
    if slip == "missing":
        (sql / "hands.sql").unlink()
    else:
        (sql / "extra.sql").write_text("SELECT 1;\n")
    monkeypatch.setattr(views, "SQL_DIR", sql)
    with pytest.raises(ProjectionError, match="missing hands.sql; reinstall pitlog"
                       if slip == "missing" else "extra.sql not in projections/views.py"):
        open_store(path).close()


def test_views_are_created_inside_a_callers_open_transaction(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "s.duckdb")) as con:
        con.execute("BEGIN TRANSACTION")
        prepare(con)  # as project() prepares a connection it is handed
        con.execute("COMMIT")
        assert con.execute("SELECT count(*) FROM rounds").fetchall() == [(0,)]
        assert views.ensure_views(con, "x") is True  # other columns: created again

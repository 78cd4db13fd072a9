"""The SQL's red dog facts come from their one definition in events/reddog/rules.py: the
generated macros answer as the Python rules do, and no .sql file spells them out again."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import duckdb
import pytest
from repo_paths import REPO

from events.errors import ProjectionError
from events.reddog import rules
from events.reddog.model import Card, Suit
from projections import reconcile, views
from projections.reddog_macros import macros_sql
from projections.store import open_store

SQL_FILES = sorted(views.SQL_DIR.glob("*.sql"))


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    c.execute(macros_sql())
    return c


def test_rank_label_is_the_rules_rank_name_for_every_rank(con: duckdb.DuckDBPyConnection) -> None:
    got = dict(con.execute("SELECT r, rank_label(r) FROM range(2, 15) t(r)").fetchall())
    assert got == rules.RANK_NAMES
    assert rules.RANK_NAMES[11] + rules.RANK_NAMES[14] == "JA"  # 13:47-20.31(a)2ii


def test_card_label_in_a_store_matches_a_cards_str(tmp_path: Path) -> None:
    with open_store(tmp_path / "p.duckdb") as c:  # tables, generated macros and the views
        for rank in range(rules.RANK_MIN, rules.RANK_MAX + 1):
            for suit in Suit:
                (label,) = c.execute("SELECT card_label(?, ?)", [rank, suit.value]).fetchone()
                assert label == str(Card(rank, suit))


def test_standard_odds_are_the_standard_paytables(con: duckdb.DuckDBPyConnection) -> None:
    pt = rules.STANDARD_PAYTABLE
    for spread in range(rules.SPREAD_MIN, rules.SPREAD_MAX + 1):
        (odds,) = con.execute("SELECT standard_odds('spread', ?)", [spread]).fetchone()
        assert odds == rules.spread_odds(pt, spread)
    (trips,) = con.execute("SELECT standard_odds('pair', NULL)").fetchone()
    assert trips == rules.trips_odds(pt) == 11  # 13:47-20.31(d)9
    for line, odds in pt.lines():
        assert con.execute("SELECT standard_line(?)", [line]).fetchone() == (odds,)


def test_reconcile_assumes_the_standard_paytable_from_python() -> None:
    text = reconcile.query_sql("edge_keys")
    assert "{standard_paytable}" not in text
    odds = ", ".join(str(o) for _, o in rules.STANDARD_PAYTABLE.lines())
    assert f"SELECT DISTINCT table_id, {odds} FROM decks" in text


@pytest.mark.parametrize("path", SQL_FILES, ids=lambda p: p.name)
def test_no_sql_file_spells_the_rank_labels_or_the_standard_odds(path: Path) -> None:
    text = path.read_text()
    assert not re.search(r"THEN '[JQKA]'", text), "use rank_label (projections/reddog_macros.py)"
    assert not re.search(r"WHEN \S*spread = 1 THEN 5", text), "use standard_odds"
    assert not re.search(r"coalesce\(r\.pays_\w+, \d+\)", text), "use standard_line"
    assert "5, 4, 2, 1, 11" not in text, "the standard table comes from events/reddog/rules.py"


def test_the_sql_folder_holds_the_files_views_loads(tmp_path: Path) -> None:
    assert SQL_FILES, "projections/sql/ holds no .sql file"
    assert [p.name for p in SQL_FILES] == sorted(views.SQL_FILES)
    assert views.VIEW_FILES[0] == "macros.sql" and views.VIEW_FILES[-1] == "anomalies.sql"
    assert len(set(views.SQL_FILES)) == len(views.SQL_FILES)


def test_the_wheel_ships_every_sql_file() -> None:
    # pyproject's package-data globs, relative to projections/, must match each of SQL_FILES:
    # a file they miss is absent from an installed pitlog (create_views then fails loudly).
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    globs = meta["tool"]["setuptools"]["package-data"]["projections"]
    package = Path(views.__file__).parent
    shipped = {p.relative_to(package) for g in globs for p in package.glob(g)}
    assert {Path("sql") / n for n in views.SQL_FILES} <= shipped


def _copy_sql(tmp_path: Path) -> Path:
    folder = tmp_path / "sql"
    folder.mkdir()
    for p in SQL_FILES:
        (folder / p.name).write_text(p.read_text())
    return folder


def test_a_missing_sql_file_fails_loudly_naming_it(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy_sql(tmp_path)
    (folder / "anomalies_money.sql").unlink()
    monkeypatch.setattr(views, "SQL_DIR", folder)
    with pytest.raises(ProjectionError, match=r"sql: missing anomalies_money\.sql; reinstall"):
        open_store(tmp_path / "p.duckdb")
    assert not (tmp_path / "p.duckdb").exists() or not _has_views(tmp_path / "p.duckdb")


def test_an_sql_file_not_in_the_load_order_fails_loudly_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy_sql(tmp_path)
    (folder / "anomalies_new_family.sql").write_text("CREATE OR REPLACE VIEW x AS SELECT 1;")
    monkeypatch.setattr(views, "SQL_DIR", folder)
    with pytest.raises(ProjectionError,
                       match=r"anomalies_new_family\.sql not in projections/views\.py SQL_FILES"):
        open_store(tmp_path / "p.duckdb")


def test_the_files_are_created_in_the_load_order(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # A family created before the file it reads fails: the order in VIEW_FILES is the one used.
    folder = _copy_sql(tmp_path)
    monkeypatch.setattr(views, "SQL_DIR", folder)
    order = list(views.VIEW_FILES)
    order.remove("ledger.sql")
    order.append("ledger.sql")  # the money family reads the ledger, now created after it
    monkeypatch.setattr(views, "VIEW_FILES", tuple(order))
    with pytest.raises(ProjectionError, match=r"anomalies_money\.sql: cannot create the views"):
        open_store(tmp_path / "p.duckdb")


def _has_views(db: Path) -> bool:
    with duckdb.connect(str(db)) as c:
        (n,) = c.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone()
        return n > 0

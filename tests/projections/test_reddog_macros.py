"""The SQL's red dog facts come from their one definition in events/reddog/rules.py: the
generated macros answer as the Python rules do, and no .sql file spells them out again."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from events.errors import ProjectionError
from events.reddog import rules
from events.reddog.model import Card, Suit
from projections import reconcile, views
from projections.reddog_macros import macros_sql
from projections.store import open_store

SQL_FILES = sorted((Path(views.__file__).parent).glob("*.sql"))


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


def test_a_missing_sql_file_fails_loudly_naming_it(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "anomalies.sql"
    monkeypatch.setattr(views, "MORE_SQL", (*views.MORE_SQL[:-1], missing))
    with pytest.raises(ProjectionError, match=re.escape(str(missing))):
        open_store(tmp_path / "p.duckdb")

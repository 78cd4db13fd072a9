"""The anomaly catalogue has one definition, events/reddog/catalogue.py, and everything that
names a code agrees with it: the SQL that decides the codes (projections/sql/anomalies*.sql),
the generated `anomaly_codes` view, the statistics, and the severities of list_anomalies, the
console and the CLI. Adding a code to the SQL without its catalogue entry (or the other way
round) fails here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from repo_paths import REPO

from events.reddog.catalogue import (
    BY_CODE,
    CATALOGUE,
    INJECTABLE,
    SEVERITIES,
    STATISTICAL,
    Severity,
)
from projections import anomalies, console_data, views
from projections.reddog_macros import macros_sql

PROJECTIONS = Path(views.__file__).parent
SQL = views.SQL_DIR
# The anomaly families and their union (projections/sql/anomalies*.sql), and the views they read.
ANOMALY_FILES = tuple(n for n in views.VIEW_FILES if n.startswith("anomalies"))
READ_FILES = tuple(n for n in views.VIEW_FILES if n not in ANOMALY_FILES)
_LITERAL = re.compile(r"'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)'")
_SELECTED = re.compile(r"\bSELECT\s+'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)'\s*,")  # a found row's code


def _enum_symbols() -> set[str]:
    """Every enum symbol of the event schemas: words the SQL compares fields with."""
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "enum":
                found.update(node["symbols"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for path in (REPO / "schemas").rglob("*.avsc"):
        walk(json.loads(path.read_text()))
    return found


# The upper-case words the anomaly families may use that are not anomaly codes: the schemas'
# enum symbols and the settlement statuses and other words of the views they read.
VOCABULARY = _enum_symbols().union(*(set(_LITERAL.findall((SQL / n).read_text()))
                                     for n in READ_FILES))


def codes_in_sql(text: str) -> set[str]:
    """The anomaly codes a piece of the anomaly families' SQL names: each literal a family
    selects first (`SELECT 'CALL_BET', ...`, even where an event's enum has the same word), and
    every other upper-case literal that is no word of the events or the views (a code chosen by
    CASE)."""
    return set(_SELECTED.findall(text)) | (set(_LITERAL.findall(text)) - VOCABULARY)


def test_the_sql_decides_exactly_the_catalogues_rule_and_integrity_codes() -> None:
    assert ANOMALY_FILES[-1] == "anomalies.sql" and len(ANOMALY_FILES) == 11
    in_sql = codes_in_sql("\n".join((SQL / n).read_text() for n in ANOMALY_FILES))
    decided_in_sql = {c.code for c in CATALOGUE if not c.statistical}
    assert sorted(in_sql - decided_in_sql) == [], "add these to events/reddog/catalogue.py"
    assert sorted(decided_in_sql - in_sql) == [], "no SQL selects these catalogue codes"


def test_the_check_sees_a_code_added_to_the_sql_alone() -> None:
    """The checker itself: a new code in a SELECT is seen, an event's enum symbol is not."""
    text = ("SELECT 'SEAT_SWAPPED', table_id FROM events WHERE dest = 'MIDDLE' "
            "AND status = 'WRONG_AMOUNT'")
    assert codes_in_sql(text) == {"SEAT_SWAPPED"}
    assert codes_in_sql("CASE WHEN x THEN 'SEAT_SWAPPED' END") == {"SEAT_SWAPPED"}
    # a code spelled like an event's word is seen where a family selects it
    assert "CALL_BET" in VOCABULARY
    assert codes_in_sql("SELECT 'CALL_BET', e.table_id") == {"CALL_BET"}


def test_the_statistics_compute_exactly_the_statistical_codes() -> None:
    text = (PROJECTIONS / "statistics.py").read_text()
    assert STATISTICAL == ("HOLD_VARIANCE", "OUTCOME_FREQUENCY")
    for code in STATISTICAL:
        assert f'BY_CODE["{code}"]' in text
        assert BY_CODE[code].severity is Severity.LOW and not BY_CODE[code].injectable


def test_the_catalogue_is_well_formed() -> None:
    codes = [c.code for c in CATALOGUE]
    assert len(codes) == len(set(codes)) == len(BY_CODE)
    assert all(re.fullmatch(r"[A-Z]+(_[A-Z]+)*", c) for c in codes)
    assert all(c.rule and c.flagged and isinstance(c.severity, Severity) for c in CATALOGUE)
    assert set(INJECTABLE) == set(codes) - set(STATISTICAL)
    assert SEVERITIES == ("low", "medium", "high")
    assert [s.rank for s in Severity] == [1, 2, 3]


def test_the_generated_view_is_the_catalogue() -> None:
    con = duckdb.connect()
    con.execute(macros_sql())
    got = con.execute("SELECT code, severity, severity_rank, rule, flagged FROM anomaly_codes "
                      "ORDER BY code").fetchall()
    assert got == sorted((c.code, c.severity.value, c.severity.rank, c.rule, c.flagged)
                         for c in CATALOGUE)
    assert dict(con.execute("SELECT code, rule FROM anomaly_codes WHERE code = "
                            "'WRONG_PAYOUT'").fetchall()) == {
        "WRONG_PAYOUT": "13:47-20.31(e); GA (11)(b)"}  # a quote in `flagged` survives too
    (flagged,) = con.execute("SELECT flagged FROM anomaly_codes WHERE code = 'EXTRA_CARD'"
                             ).fetchone()
    assert flagged == "more copies of a card than the shoe's decks hold (a card introduced)"


def test_no_sql_file_writes_the_catalogue_or_the_severity_ranks() -> None:
    paths = sorted(SQL.glob("*.sql"))
    assert len(paths) == len(views.SQL_FILES)
    for path in paths:
        text = path.read_text()
        assert "AS catalogue(code" not in text, path
        assert not re.search(r"WHEN 'high' THEN \d", text), path


def test_every_reader_takes_the_severities_from_the_catalogue() -> None:
    wrong = subprocess.run([sys.executable, "-m", "cli.app", "anomalies", "--severity", "urgent"],
                           cwd=REPO, capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 1
    assert "'urgent' is not one of " + ", ".join(f"'{s}'" for s in SEVERITIES) in wrong.stderr
    assert console_data.SEVERITIES == ("high", "medium", "low")
    assert anomalies.SEVERITIES is SEVERITIES
    with pytest.raises(anomalies.AnomalyQueryError, match="use low, medium, high"):
        con = duckdb.connect()
        con.execute(macros_sql())  # the catalogue alone: the filter is refused before any query
        anomalies.list_anomalies(con, anomalies.AnomalyFilter(severity="urgent"))

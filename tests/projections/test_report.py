"""The HTML report: self-contained, the exact figures in it, and (with Chromium) it renders."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from datetime import date
from decimal import Decimal
from fractions import Fraction
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import duckdb
import pytest
from audit_scenarios import MONEY, ORIGINAL, THEO, Floor, evening
from repo_paths import REPO

from events.reddog.model import SettledAs
from events.reddog.theory import outcome_probabilities
from projections.localtime import clock
from projections.reconcile import Calendar
from projections.report import build_report, chi_square, outcome_rows
from projections.statistics import chi_square_sf, pearson

CHROMIUM = Path("/usr/bin/chromium")
NEW_YORK = Calendar.parse("America/New_York")


class Cells(HTMLParser):
    """section id -> group -> column -> data-value, from the report's tables and cards."""

    def __init__(self) -> None:
        super().__init__()
        self.section = ""
        self.group = ""
        self.cells: dict[str, dict[str, dict[str, str]]] = {}
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.add(tag)
        if tag == "section":
            self.section = a.get("id") or ""
        elif tag == "tr" and "data-group" in a:
            self.group = a["data-group"] or ""
        elif "data-col" in a and "data-value" in a:
            group = self.group if tag == "td" else "summary"
            (self.cells.setdefault(self.section, {}).setdefault(group, {})
             [a["data-col"] or ""]) = a["data-value"] or ""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return evening(tmp_path_factory.mktemp("evening"))


@pytest.fixture(scope="module")
def report_html(db: Path) -> str:
    with duckdb.connect(str(db), read_only=True) as con:
        return build_report(con, NEW_YORK).html


def _cells(html: str) -> Cells:
    parser = Cells()
    parser.feed(html)
    return parser


def test_report_is_self_contained_no_scripts_no_fetches(report_html: str) -> None:
    parser = _cells(report_html)
    assert "script" not in parser.tags and "link" not in parser.tags and "img" not in parser.tags
    # matplotlib's SVG refers to its own definitions (clip paths, tick marks) by #id: those
    # stay in the page; nothing outside it is referred to.
    assert not re.search(r"(src|href)\s*=\s*\"(?!#)|@import|url\((?!#)", report_html)
    assert re.search(r"href=\"#", report_html)  # the pattern does see references
    assert report_html.count("<svg") == 3  # hold by table, by dealer, outcomes
    assert "gaming day 2026-11-28" in report_html


def test_report_holds_by_table_are_the_exact_figures(report_html: str) -> None:
    tables = _cells(report_html).cells["hold-by-table"]
    for table, (n, handle, paid, collected, returned, net, hold) in MONEY.items():
        row = tables[table]
        assert [row[c] for c in ("rounds", "handle_cents", "paid_cents", "collected_cents",
                                 "returned_cents", "net_win_cents", "hold_pct")] == \
            [str(n), str(handle), str(paid), str(collected), str(returned), str(net), str(hold)]
        assert Decimal(row["theo_win_cents"]) == Decimal(round(THEO[table] * 100)) / 100
        theo_pct = THEO[table] * 100 / handle
        assert Decimal(row["theo_hold_pct"]) == Decimal(round(theo_pct * 10_000)) / 10_000


def test_report_holds_by_dealer_and_the_summary(report_html: str) -> None:
    cells = _cells(report_html).cells
    dealers = cells["hold-by-dealer"]
    assert {d: int(r["net_win_cents"]) for d, r in dealers.items()} == \
        {"D1": -32500, "D4": 2000, "D2": -3000, "D3": -5000}
    # The summary cards are in the header, before any section.
    assert cells[""]["summary"]["handle_cents"] == "31500"
    assert cells[""]["summary"]["net_win_cents"] == str(-30500 - 3000 - 5000)
    assert cells[""]["summary"]["balanced"] == "True"


def test_report_outcome_frequencies_against_the_exact_probabilities(report_html: str) -> None:
    outcomes = _cells(report_html).cells["outcomes"]
    observed = {o: int(r["observed"]) for o, r in outcomes.items() if int(r["observed"])}
    # The voided round of T03 never had its two cards: it has no outcome.
    assert observed == {"consecutive": 1, "trips": 1, "pair_no_trips": 1, "spread_2": 1,
                        "spread_4": 2, "spread_5": 1, "spread_7": 1, "spread_11": 1}
    six, one = outcome_probabilities(6), outcome_probabilities(1)
    for outcome, row in outcomes.items():
        expected = 6 * six[outcome] + 3 * one[outcome]  # six 6-deck rounds, three 1-deck
        assert row["expected"] == f"{expected.numerator}/{expected.denominator}"


def test_report_conservation_and_ledger_sections(report_html: str) -> None:
    cells = _cells(report_html).cells
    assert {t: (r["difference_cents"], r["balanced"]) for t, r in
            cells["conservation"].items()} == {t: ("0", "true") for t in MONEY}
    assert cells["conservation"]["T01"]["money_out_cents"] == "41000"
    assert cells["ledger"] == {"OK": {"wagers": "16", "amount_cents": "31500"}}


def test_report_of_a_clean_evening_has_no_anomalies(report_html: str) -> None:
    assert "No anomalies on this gaming day." in report_html


def test_report_says_so_when_there_is_no_anomalies_view(tmp_path: Path) -> None:
    db = evening(tmp_path)
    with duckdb.connect(str(db)) as con:  # a database from before the anomaly views
        con.execute("DROP VIEW anomalies")
    with duckdb.connect(str(db), read_only=True) as con:
        report = build_report(con, NEW_YORK)
    assert report.anomalies_note is not None and "no anomalies view" in report.anomalies_note
    assert "no anomalies view" in report.html


def test_report_charts_the_anomalies_of_the_day(tmp_path: Path) -> None:
    floor = Floor(tmp_path)
    t = floor.table("T08")
    t.open_table("nj-casino")
    t.tap_in("D8")
    t.new_shoe("T08-S1")
    t.play("3C 9H 5D", {1: 1000}, override={(1, ORIGINAL): [(SettledAs.WON, 500, 1)]})
    t.play("3D 9S KD", {1: 1000})
    with duckdb.connect(str(floor.build()), read_only=True) as con:
        report = build_report(con, NEW_YORK)
        ((at,),) = con.execute("SELECT occurred_at FROM anomalies "
                               "WHERE code = 'WRONG_PAYOUT'").fetchall()
    assert report.anomalies_note is None
    assert "WRONG_PAYOUT" in _cells(report.html).cells["anomalies"]
    assert report.html.count("<svg") == 4
    # Its time on the casino's clock with the zone named, as everywhere (projections/localtime.py
    # clock): in the list and in the dot's tooltip. 28 November in New York: EST.
    shown = clock(at, ZoneInfo("America/New_York"))
    assert re.fullmatch(r"\d\d:\d\d:\d\d EST", shown)
    assert f'<tr data-group="anomaly"><td>{shown}</td>' in report.html
    assert f"WRONG_PAYOUT at {shown}: " in report.html


def test_report_reads_an_anomalies_view_placed_by_round(tmp_path: Path) -> None:
    db = evening(tmp_path)
    with duckdb.connect(str(db)) as con:  # the least an anomalies view may have
        con.execute("CREATE OR REPLACE VIEW anomalies AS SELECT 'WRONG_PAYOUT' AS code, "
                    "table_id, shoe_id, round_no FROM rounds "
                    "WHERE table_id = 'T01' AND round_no <= 2")
    with duckdb.connect(str(db), read_only=True) as con:
        report = build_report(con, NEW_YORK)
    cells = _cells(report.html).cells["anomalies"]
    assert cells["WRONG_PAYOUT"] == {"count": "2"}
    # Each anomaly is listed with its table and round (NULL where the view has no column).
    listed = re.findall(r'<tr data-group="anomaly">.*?data-col="table_id" data-value="(\w+)"'
                        r'.*?data-col="round_no" data-value="(\d+)"', report.html)
    assert sorted(listed) == [("T01", "1"), ("T01", "2")]
    times = re.findall(r'<tr data-group="anomaly"><td>([^<]*)</td>', report.html)
    assert len(times) == 2 and all(re.fullmatch(r"\d\d:\d\d:\d\d EST", t) for t in times)


def test_a_day_without_rounds_is_a_clear_error(db: Path) -> None:
    from events.errors import NotFoundError

    with duckdb.connect(str(db), read_only=True) as con, \
            pytest.raises(NotFoundError, match="no rounds on gaming day 2026-11-27"):
        build_report(con, NEW_YORK, day=date(2026, 11, 27))


def test_chi_square_pools_small_cells_and_its_p_value_is_right() -> None:
    rows: list[dict[str, Any]] = outcome_rows(
        [{"decks": 6, "outcome": "consecutive", "rounds": 143},
         {"decks": 6, "outcome": "spread_1", "rounds": 131},
         {"decks": 6, "outcome": "trips", "rounds": 3}])
    total = sum(r["expected"] for r in rows)
    assert total == Fraction(277) and len(rows) == 14
    test = chi_square(rows)
    # The anomaly's own statistic and tail (their values are tested in test_detection.py).
    stat, df = pearson([r["observed"] for r in rows], [float(r["expected"]) for r in rows])
    assert test == (stat, df, chi_square_sf(stat, df))
    assert 1 <= df < len(rows) - 1  # the cells expected below 5 were pooled


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium "
                    "(apt-get update && apt-get install -y chromium)")
def test_report_renders_in_headless_chromium(tmp_path: Path, report_html: str) -> None:
    page = tmp_path / "report.html"
    page.write_text(report_html, encoding="utf-8")
    png = tmp_path / "report.png"
    proc = subprocess.run([str(REPO / "scripts" / "render_report.sh"), str(page), str(png),
                           "1280,2400"], capture_output=True, text=True, timeout=180,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert _png_size(png) == (1280, 2400)
    # A blank page compresses to a few kilobytes; charts and tables make it far larger.
    assert png.stat().st_size > 40_000
    if shutil.which("file"):
        assert "PNG image" in subprocess.run(["file", str(png)], capture_output=True,
                                             text=True, check=False).stdout

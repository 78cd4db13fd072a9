"""The report prints on Letter and A4 in headless Chromium with no table wider than the page,
lists each anomaly with its table and round, and marks only what needs attention."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import duckdb
import pytest
from simulated import simulated_db

from projections.reconcile import Calendar
from projections.report import ANOMALY_LIST_MAX, build_report

CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium "
                                  "(apt-get update && apt-get install -y chromium)")
# The printable width in CSS pixels (96 per inch) of each paper with the report's 12 mm side
# margins (@page in report_template.html), and its PDF MediaBox in points.
PAPERS = {"letter": (8.5 * 96 - 2 * 12 / 25.4 * 96, (612.0, 792.0)),
          "A4": ((210 - 2 * 12) / 25.4 * 96, (595.28, 841.89))}
MEASURE = """<script>
window.addEventListener('load', () => {
  const rows = [...document.querySelectorAll('table')].map(t => [
    t.closest('section') ? t.closest('section').id : 'header',
    t.getBoundingClientRect().width.toFixed(1), t.rows[0].cells.length,
    [...t.rows[0].cells].map(c => c.textContent).join('|')].join(';'));
  const pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = rows.join('\\n');
  document.body.appendChild(pre);
});
</script>"""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated_db(tmp_path_factory.mktemp("print"), seed=2026, tables=4, rounds=100,
                        irregularities=0.01, profiles=("nj-casino", "nj-casino-night",
                                                       "gaming-authority", "nj-casino"))


@pytest.fixture(scope="module")
def html(db: Path) -> str:
    with duckdb.connect(str(db), read_only=True) as con:
        return build_report(con, Calendar()).html


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
                           "--no-pdf-header-footer", *args], capture_output=True, text=True,
                          timeout=180, check=False)


def test_each_anomaly_is_listed_with_its_table_and_round(db: Path, html: str) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        expected = con.execute("SELECT count(*) FROM anomalies").fetchall()[0][0]
    rows = re.findall(r'<tr data-group="anomaly">(.*?)</tr>', html)
    assert len(rows) == min(expected, ANOMALY_LIST_MAX) > 0
    for row in rows:
        assert re.search(r'data-col="table_id" data-value="T0\d"', row), row
        assert re.search(r'data-col="round_no"', row), row
    # The chart's dots name their table and round too.
    # (the time is on the casino's clock, its zone named: "21:14:07 EST")
    assert re.search(r"<title>[A-Z_]+ at \d\d:\d\d:\d\d [^:<]+: T0\d, shoe T0\d-S\d+, "
                     r"round \d+", html)


def test_only_what_needs_attention_is_marked(html: str) -> None:
    assert 'class="flagged"' not in html  # no more red table names
    for row in re.findall(r'<tr data-group="T0\d">(.*?)</tr>', html):
        assert row.startswith("<td>")  # the name cell is never marked
        z_marked = 'data-col="z_score"' in row and re.search(
            r'data-col="z_score"[^>]*class="attn"', row)
        assert bool(z_marked) == ("HOLD_VARIANCE" in row)
    # A balanced conservation row is plain; one that does not balance is marked.
    marks = re.findall(r'data-col="balanced" data-value="(true|false)"( class="attn")?', html)
    assert len(marks) == 4
    assert all((value == "false") == bool(cls) for value, cls in marks)


@pytest.fixture(scope="module", params=sorted(PAPERS))
def printed(request: pytest.FixtureRequest, html: str,
            tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, Path]:
    """The report printed to PDF by headless Chromium on each paper: (paper, its HTML, PDF)."""
    paper = request.param
    sized = html.replace("</style>", f"@page {{ size: {paper}; }}</style>")
    folder = tmp_path_factory.mktemp(f"printed-{paper}")
    page = folder / f"report-{paper}.html"
    page.write_text(sized, encoding="utf-8")
    pdf = folder / f"report-{paper}.pdf"
    proc = _chromium(f"--print-to-pdf={pdf}", page.as_uri())
    assert pdf.exists() and pdf.stat().st_size > 20_000, proc.stderr
    return paper, sized, pdf


@needs_chromium
def test_every_printed_page_says_page_i_of_n(printed: tuple[str, str, Path]) -> None:
    # The page numbers are @page margin boxes (report_template.html: @bottom-right, "page "
    # counter(page) " of " counter(pages)); Chromium prints them as text, so the PDF's own text
    # layer, read back with pypdf, must carry "page i of n" on page i and on no other.
    from pypdf import PdfReader

    _paper, _sized, pdf = printed
    pages = PdfReader(str(pdf)).pages
    n = len(pages)
    assert n >= 2
    for i, page in enumerate(pages, start=1):
        text = page.extract_text()
        assert re.findall(r"page (\d+) of (\d+)", text) == [(str(i), str(n))], (i, text[-300:])
        assert "pitlog red dog audit report" in text  # the @bottom-left box on every page too


@needs_chromium
def test_prints_on_the_paper_with_no_table_wider_than_the_page(
        tmp_path: Path, printed: tuple[str, str, Path]) -> None:
    paper, sized, pdf = printed
    width, media_box = PAPERS[paper]
    data = pdf.read_bytes()
    pages = len(re.findall(rb"/Type\s*/Page[^s]", data))
    assert 2 <= pages <= 12  # the page numbers' counter(pages) has pages to count
    boxes = {tuple(float(x) for x in b.split()[2:])
             for b in re.findall(rb"/MediaBox\s*\[([^\]]*)\]", data)}
    assert len(boxes) == 1  # every page on the paper asked for (Chromium rounds a point)
    ((w, h),) = boxes
    assert abs(w - media_box[0]) < 1.5 and abs(h - media_box[1]) < 1.5
    assert 'counter(page) " of " counter(pages)' in sized
    # The print rules, applied on a screen exactly the printable width: every table fits.
    measured = tmp_path / f"measure-{paper}.html"
    measured.write_text(
        sized.replace("@media print {", "@media all {")
        .replace("</style>", f"body {{ width: {width:.0f}px; margin: 0; }}</style>")
        .replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom = _chromium("--virtual-time-budget=5000", "--dump-dom", measured.as_uri()).stdout
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, dom[-500:]
    tables = [line.split(";") for line in found.group(1).strip().splitlines()]
    assert len(tables) >= 6
    for section, table_width, _columns, _header in tables:
        assert float(table_width) <= round(width) + 0.5, (section, table_width, width)
    holds = [t for t in tables if t[0] == "hold-by-table"]
    assert holds and holds[0][2] == "14" and holds[0][3].endswith("|Flags")


@needs_chromium
def test_the_measure_sees_a_table_wider_than_the_page(tmp_path: Path, html: str) -> None:
    # The control: on a page too narrow for it, the hold table is measured wider than the page.
    narrow = tmp_path / "narrow.html"
    narrow.write_text(html.replace("@media print {", "@media all {")
                      .replace("</style>", "body { width: 200px; margin: 0; }</style>")
                      .replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom = _chromium("--virtual-time-budget=5000", "--dump-dom", narrow.as_uri()).stdout
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found
    widths = [float(line.split(";")[1]) for line in found.group(1).strip().splitlines()
              if line.startswith("hold-by-table")]
    assert widths and widths[0] > 200


def test_the_same_day_gives_the_same_page(db: Path, html: str) -> None:
    # matplotlib's SVG ids are salted and its date left out (report_charts.STYLE).
    with duckdb.connect(str(db), read_only=True) as con:
        again = build_report(con, Calendar()).html
    assert again == html and html.count("<svg") == 4

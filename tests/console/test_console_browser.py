"""The console in a real browser (chromium driven by Playwright) against a real server over a
simulated store with irregularities: every value the page shows is checked against DuckDB
(the ledger view and the events), not against the code that rendered it."""

from __future__ import annotations

import io
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from console_support import CHROMIUM, NEW_YORK, Served, build_store, needs_chromium, running
from repo_paths import REPO

pytestmark = needs_chromium
sync_api = pytest.importorskip("playwright.sync_api")


def _wall(at: datetime) -> str:
    """The wall-clock text the page must show: written here independently of the console."""
    return at.astimezone(NEW_YORK).strftime("%H:%M:%S %Z")


def _dollars(cents: int) -> str:
    return f"${cents // 100:,}.{cents % 100:02d}"


def _label(rank: int, suit: str) -> str:
    return {11: "J", 12: "Q", 13: "K", 14: "A"}.get(rank, str(rank)) + suit


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = build_store(tmp_path_factory.mktemp("console"))
    with running(db) as s:
        yield s


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM))
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = context.new_page()
    yield pg
    context.close()


def q(served: Served, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    cur = served.con.cursor()
    try:
        res = cur.execute(sql, params or [])
        cols = [d[0] for d in res.description]
        return [dict(zip(cols, r, strict=True)) for r in res.fetchall()]
    finally:
        cur.close()


def test_an_alert_opens_its_dispute_showing_the_ledger_and_the_events(
        served: Served, page: Any) -> None:
    (a,) = q(served, "SELECT * FROM alerts WHERE code = 'WRONG_PAYOUT' ORDER BY alert_seq "
                     "LIMIT 1")
    page.goto(f"{served.url}/alerts-page?code=WRONG_PAYOUT")
    row = page.locator(f'#feed tr[data-seq="{a["alert_seq"]}"]')
    assert row.locator("td").nth(1).inner_text() == _wall(a["occurred_at"])
    row.locator("a.open").click()
    page.wait_for_url(re.compile(rf"/dispute\?alert={a['alert_seq']}$"))
    where = (a["table_id"], a["shoe_id"], a["round_no"])
    assert (page.inner_text('[data-field="table"]'), page.inner_text('[data-field="shoe"]'),
            int(page.inner_text('[data-field="round"]'))) == where

    # Cards in dealing order, each with the time it left the shoe, as the events have them.
    drawn = q(served, "SELECT rank, suit, occurred_at, destination FROM events WHERE table_id=? "
                      "AND shoe_id=? AND round_no=? AND event_type='CardDrawn' ORDER BY seq",
              list(where))
    dealing = page.locator("#dealing figure")
    assert dealing.evaluate_all("els => els.map(e => e.dataset.card)") == [
        _label(d["rank"], d["suit"]) for d in drawn]
    assert [t.strip() for t in dealing.locator("time").all_inner_texts()] == [
        _wall(d["occurred_at"]) for d in drawn]
    assert [b.upper() for b in dealing.locator("figcaption b").all_inner_texts()] == [
        str(d["destination"]).upper() for d in drawn]
    # The discard rack in the order the dealer racked them.
    (racked,) = q(served, "SELECT [card_label(c.rank, c.suit) FOR c IN cards] AS cards, "
                          "occurred_at FROM events WHERE table_id=? AND shoe_id=? AND round_no=? "
                          "AND event_type='CardsRacked'", list(where))
    rack = page.locator("#rack figure")
    assert rack.evaluate_all("els => els.map(e => e.dataset.card)") == racked["cards"]
    assert set(rack.locator("time").all_inner_texts()) == {_wall(racked["occurred_at"])}

    # The settlement required next to the one made: the ledger's rows, differences marked.
    ledger = q(served, "SELECT seat, wager_kind, amount_cents, expected_paid_cents, "
                       "actual_paid_cents, status FROM ledger WHERE table_id=? AND shoe_id=? "
                       "AND round_no=? ORDER BY seat, area, wager_kind", list(where))
    rows = page.locator("#settlements tbody tr")
    assert rows.count() == len(ledger) > 0
    for i, want in enumerate(ledger):
        r = rows.nth(i)
        cells = r.locator("td").all_inner_texts()
        assert (int(cells[0]), cells[2].upper(), cells[3], cells[6]) == (
            want["seat"], want["wager_kind"], _dollars(want["amount_cents"]), want["status"])
        assert ("diff" in (r.get_attribute("class") or "")) == (want["status"] != "OK")
        if want["status"] == "WRONG_AMOUNT":
            assert f"pay {_dollars(want['expected_paid_cents'])}" in cells[4]
            assert f"paid {_dollars(want['actual_paid_cents'])}" in cells[5]
    assert any(w["status"] == "WRONG_AMOUNT" for w in ledger)

    # The anomaly, and its proving events highlighted where they appear.
    assert page.locator('li.anomaly[data-code="WRONG_PAYOUT"] .seqs').inner_text() == " ".join(
        map(str, a["seqs"]))
    for seq in a["seqs"]:
        marked = page.locator(f'tr[data-seq="{seq}"], #settlements tr.proof')
        assert marked.count() >= 1
    for r in page.locator("#wagers tbody tr").all():
        seq = int(r.get_attribute("data-seq") or 0)
        assert ("proof" in (r.get_attribute("class") or "")) == (seq in a["seqs"])


def test_the_feed_is_pushed_live_without_a_reload(served: Served, page: Any) -> None:
    page.goto(f"{served.url}/alerts-page?table=T01")
    page.wait_for_selector("#live.on")
    page.evaluate("window.__same_page = true")
    (top,) = q(served, "SELECT max(alert_seq) AS n FROM alerts")
    new_seq = int(top["n"]) + 1
    at = datetime(2026, 11, 29, 0, 30, 5, tzinfo=NEW_YORK)
    served.con.execute(  # as the projector raises one, in its own transaction
        "INSERT INTO alerts VALUES (?, 'Atest', 'LATE_RAISE', 'medium', 'T01', 'T01-S0002', 3, "
        "[11, 12], 'Seat 2 raised after raises closed', '13:47-20.31(d)12', ?, ?)",
        [new_seq, at, at])
    q(served, f"INSERT INTO alerts SELECT {new_seq + 1}, 'Atest2', 'LATE_RAISE', 'medium', "
              "'T02', NULL, NULL, [], 'other table', 'x', now(), now()")
    served.state.notify()  # type: ignore[attr-defined]
    row = page.locator(f'#feed tr[data-seq="{new_seq}"]')
    row.wait_for()
    assert page.evaluate("window.__same_page") is True  # no reload happened
    assert row.locator("td").nth(1).inner_text() == "00:30:05 EST"
    assert page.locator(f'#feed tr[data-seq="{new_seq + 1}"]').count() == 0  # filtered out
    assert page.locator("#feed tr").first.get_attribute("data-seq") == str(new_seq)
    assert row.locator("a.open").get_attribute("href") == f"/dispute?alert={new_seq}"


def test_filters_show_exactly_the_matching_alerts(served: Served, page: Any) -> None:
    page.goto(f"{served.url}/alerts-page")
    page.select_option('select[name="severity"]', "high")
    page.select_option('select[name="table"]', "T03")
    page.click(".filters button")
    page.wait_for_url(re.compile(r"severity=high"))
    want = q(served, "SELECT alert_seq FROM alerts WHERE severity='high' AND table_id='T03' "
                     "ORDER BY alert_seq DESC")
    shown = page.locator("#feed tr").evaluate_all("els => els.map(e => +e.dataset.seq)")
    assert shown == [w["alert_seq"] for w in want] and shown


def test_each_table_has_a_tile_with_the_api_facts(served: Served, page: Any) -> None:
    page.goto(f"{served.url}/tables")
    want = q(served, "SELECT table_id, arg_max(shoe_id, started_at) AS shoe, "
                     "arg_max(round_no, started_at) AS round, "
                     "(SELECT count(*) FROM alerts AS a WHERE a.table_id = r.table_id) AS alerts "
                     "FROM rounds AS r GROUP BY table_id ORDER BY table_id")
    tiles = page.locator("article.tile")
    assert tiles.count() == len(want) == 3
    for i, w in enumerate(want):
        t = tiles.nth(i)
        assert (t.get_attribute("data-table"), t.locator(".shoe").inner_text(),
                int(t.locator(".round").inner_text()),
                int(t.locator(".badge b").inner_text())) == (
            w["table_id"], w["shoe"], w["round"], w["alerts"])


def test_the_wall_counts_a_new_alert_without_a_reload(served: Served, page: Any) -> None:
    page.goto(f"{served.url}/tables")
    page.wait_for_selector("#live.on")
    page.evaluate("window.__same_page = true")
    badge = page.locator('article[data-table="T03"] .badge b')
    before = int(badge.inner_text())
    (top,) = q(served, "SELECT max(alert_seq) AS n FROM alerts")
    q(served, f"INSERT INTO alerts SELECT {int(top['n']) + 1}, 'Awall', 'CALL_BET', 'high', "
              "'T03', NULL, NULL, [], 'a call bet', '13:47-20.31(d)4', now(), now()")
    served.state.notify()  # type: ignore[attr-defined]
    page.wait_for_function(
        f"document.querySelector('article[data-table=\"T03\"] .badge b').textContent"
        f" === '{before + 1}'")
    assert page.evaluate("window.__same_page") is True


def test_a_page_drawn_before_the_follower_stopped_says_it_is_not_current(
        served: Served, page: Any) -> None:
    """The wall of tables stays open all night: when the server stops following the log, the
    page shows why at its top without a reload (stale.js asks /health), and drops it again."""
    page.goto(f"{served.url}/tables")
    page.wait_for_selector("#live.on")
    assert page.locator("div.stale").count() == 0
    page.evaluate("window.__same_page = true")
    status = served.state.status  # type: ignore[attr-defined]
    status.failed, status.error = True, "the follower stopped: the log <b>went</b> away"
    try:
        banner = page.wait_for_selector("div.stale", timeout=60_000)
        text = banner.inner_text()
        assert text.startswith("Not current: the server stopped following the log (the "
                               "follower stopped: the log <b>went</b> away); answers are ")
        assert text.endswith("restart `pitlog serve`")
        assert page.evaluate("window.__same_page") is True
        assert page.locator("div.stale b").count() == 0  # text, never markup
    finally:
        status.failed, status.error = False, None
    page.wait_for_selector("div.stale", state="detached", timeout=60_000)


def test_a_replay_steps_card_by_card_with_buttons_and_keys(served: Served, page: Any) -> None:
    (shoe,) = q(served, "SELECT table_id, shoe_id FROM shoes ORDER BY table_id, opened_at "
                        "LIMIT 1")
    events = q(served, "SELECT seq, event_type, round_no, card_label(rank, suit) AS card, "
                       "lower(destination) AS box, "
                       "[card_label(c.rank, c.suit) FOR c IN cards] AS racked FROM events "
                       "WHERE table_id=? AND shoe_id=? ORDER BY seq",
               [shoe["table_id"], shoe["shoe_id"]])
    page.goto(f"{served.url}/replay/{shoe['shoe_id']}?table={shoe['table_id']}")
    assert page.inner_text("#now-seq") == f"#{events[0]['seq']}"

    def shown(box: str) -> list[str]:
        return page.locator(f"#{box} figure").evaluate_all("els => els.map(e => e.dataset.card)")

    first_draw = next(i for i, e in enumerate(events) if e["event_type"] == "CardDrawn")
    for _ in range(first_draw):
        page.click("#next")
    assert page.inner_text("#now-seq") == f"#{events[first_draw]['seq']}"
    left = events[first_draw]
    assert shown(f"box-{left['box']}") == [left["card"]]
    # The right card by keyboard: the hand builds card by card.
    page.keyboard.press("ArrowRight")
    right = events[first_draw + 1]
    assert right["event_type"] == "CardDrawn"
    assert shown(f"box-{right['box']}") == [right["card"]] and shown(f"box-{left['box']}") == [
        left["card"]]
    rack_at = next(i for i, e in enumerate(events) if e["event_type"] == "CardsRacked")
    for _ in range(rack_at - first_draw - 1):
        page.keyboard.press("ArrowRight")
    burns = [e["card"] for e in events[:rack_at] if e["event_type"] == "CardBurned"]
    assert shown("rack") == burns + events[rack_at]["racked"]
    assert shown("box-left") == shown("box-right") == []  # the hand went to the rack
    page.keyboard.press("ArrowLeft")
    assert shown("rack") == burns and shown(f"box-{left['box']}") == [left["card"]]
    page.click("#first")
    assert page.inner_text("#pos") == f"event 1 of {len(events)}"
    page.keyboard.press("End")
    assert page.inner_text("#now-seq") == f"#{events[-1]['seq']}"


def test_the_incident_report_prints_on_one_page_on_letter_and_a4(
        served: Served, page: Any) -> None:
    from pypdf import PdfReader

    (a,) = q(served, "SELECT alert_seq, table_id, shoe_id, round_no FROM alerts WHERE round_no "
                     "IS NOT NULL ORDER BY cardinality(seqs) DESC, alert_seq LIMIT 1")
    # And the busiest round of the store: the most wagers, raises and settlements.
    (busy,) = q(served, "SELECT table_id, shoe_id, round_no FROM events WHERE round_no IS NOT "
                        "NULL AND event_type IN ('WagerPlaced', 'RaisePlaced', 'WagerSettled', "
                        "'WagerChanged', 'VoidOrPlayChosen') GROUP BY ALL "
                        "ORDER BY count(*) DESC, 1, 2, 3 LIMIT 1")
    # And the round with the most findings: the one most likely to be printed.
    (flagged,) = q(served, "SELECT table_id, shoe_id, round_no FROM anomalies WHERE round_no "
                           "IS NOT NULL GROUP BY ALL ORDER BY count(*) DESC, 1, 2, 3 LIMIT 1")
    page.goto(f"{served.url}/dispute?alert={a['alert_seq']}")
    page.click("#incident")
    page.wait_for_url(re.compile(r"/incident\?"))
    urls = [page.url] + [f"{served.url}/incident?table={r['table_id']}&shoe={r['shoe_id']}"
                         f"&round={r['round_no']}" for r in (busy, flagged)]
    for url in urls:
        page.goto(url)
        assert page.inner_text("h1") == "Incident report"
        for paper in ("Letter", "A4"):
            pdf = PdfReader(io.BytesIO(page.pdf(format=paper)))
            assert len(pdf.pages) == 1, (url, paper)
            text = pdf.pages[0].extract_text()
            assert "Page 1 of 1" in text and "Shift manager" in text and "Signature" in text


def test_a_moment_between_rounds_offers_the_rounds_around_it(served: Served, page: Any) -> None:
    r1, r2 = q(served, "SELECT shoe_id, round_no, started_at, ended_at FROM rounds "
                       "WHERE table_id='T02' ORDER BY started_at LIMIT 2 OFFSET 5")
    assert r2["started_at"] - r1["ended_at"] > timedelta(seconds=2)
    gap = r1["ended_at"] + (r2["started_at"] - r1["ended_at"]) / 2
    local = gap.astimezone(NEW_YORK).replace(tzinfo=None, microsecond=0)
    page.goto(f"{served.url}/dispute")
    page.select_option('select[name="table"]', "T02")
    page.fill('input[name="at"]', local.isoformat())
    page.click(".picker button")
    page.wait_for_selector("#outside")
    assert page.get_attribute("#outside", "data-where") == "between rounds"
    assert page.locator("#dealing").count() == 0  # no hand shown in its place
    links = page.locator("a.neighbour")
    assert links.evaluate_all("els => els.map(e => e.dataset.round)") == [
        f"{r1['shoe_id']}:{r1['round_no']}", f"{r2['shoe_id']}:{r2['round_no']}"]
    assert _wall(r1["ended_at"]) in links.nth(0).inner_text()
    links.nth(1).click()
    page.wait_for_selector("#dealing")
    assert int(page.inner_text('[data-field="round"]')) == r2["round_no"]


def test_pages_load_no_asset_from_elsewhere(served: Served, page: Any) -> None:
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    (a,) = q(served, "SELECT alert_seq FROM alerts ORDER BY alert_seq LIMIT 1")
    for path in ("/tables", "/alerts-page", f"/dispute?alert={a['alert_seq']}", "/replay"):
        page.goto(served.url + path)
    assert asked and all(u.startswith(served.url) for u in asked), asked


def test_the_cli_writes_the_same_incident_page(served: Served, tmp_path: Path) -> None:
    import shutil
    import subprocess
    import sys

    (a,) = q(served, "SELECT table_id, shoe_id, round_no FROM alerts WHERE round_no IS NOT NULL "
                     "ORDER BY alert_seq LIMIT 1")
    # The server holds the file read-write (other processes are locked out): the CLI reads a
    # checkpointed copy, as `pitlog dispute` reads the projector's snapshot.
    served.con.execute("CHECKPOINT")
    db = tmp_path / "copy.duckdb"
    shutil.copy(served.state.db_path, db)  # type: ignore[attr-defined]
    out = tmp_path / "incident.html"
    proc = subprocess.run(
        [sys.executable, "-m", "cli.app", "dispute", "--db", str(db), "--table", a["table_id"],
         "--round", f"{a['shoe_id']}:{a['round_no']}", "--tz", "America/New_York",
         "--out", str(out)], capture_output=True, text=True, timeout=120,
        cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    url = (f"{served.url}/incident?table={a['table_id']}&shoe={a['shoe_id']}"
           f"&round={a['round_no']}")
    with urllib.request.urlopen(url) as response:
        served_html = response.read().decode()
    written = out.read_text()

    def body(html: str) -> str:  # all but the moment it was prepared
        return re.sub(r"prepared [^<]*<", "prepared <", html)
    assert body(written) == body(served_html)
    assert "prepared <" in body(written) and 'data-card=' in written


def test_each_page_has_a_json_twin_with_iso_times(served: Served) -> None:
    import json

    def get(path: str) -> Any:
        with urllib.request.urlopen(served.url + path) as response:
            assert response.headers["content-type"].startswith("application/json")
            return json.loads(response.read())

    (a,) = q(served, "SELECT alert_seq, table_id, shoe_id, round_no, occurred_at FROM alerts "
                     "WHERE round_no IS NOT NULL ORDER BY alert_seq LIMIT 1")
    d = get(f"/dispute?alert={a['alert_seq']}&format=json")
    assert (d["round"]["table_id"], d["round"]["shoe_id"], d["round"]["round_no"]) == (
        a["table_id"], a["shoe_id"], a["round_no"])
    assert d["alert"]["alert_seq"] == a["alert_seq"]
    assert datetime.fromisoformat(d["alert"]["occurred_at"]) == a["occurred_at"]
    assert d["alert"]["occurred_at"].endswith("-05:00")  # the casino's offset, not a bare time
    feed = get("/alerts-page?severity=high&format=json")
    (n,) = q(served, "SELECT count(*) AS n FROM alerts WHERE severity = 'high'")
    assert len(feed) == n["n"] and {x["severity"] for x in feed} == {"high"}
    assert len(get("/tables?format=json")) == 3
    shoes = get("/replay?format=json")
    r = get(f"/replay/{shoes[0]['shoe_id']}?table={shoes[0]['table_id']}&format=json")
    (count,) = q(served, "SELECT count(*) AS n FROM events WHERE shoe_id = ? AND table_id = ?",
                 [shoes[0]["shoe_id"], shoes[0]["table_id"]])
    assert len(r["steps"]) == count["n"]
    try:
        get("/dispute?table=T01&at=2026-11-28T12:00:00&format=json")
        raise AssertionError("a moment before the table opened is not a round")
    except urllib.error.HTTPError as exc:
        assert exc.code == 404
        body = json.loads(exc.read())
        assert body["outside"] == "before the table opened" and body["before"] is None
        assert body["after"]["round_no"] == 1
        # on the casino's clock, as the page beside it (were: +00:00 and "... UTC")
        assert body["at"].endswith("-05:00") and body["after"]["started_at"].endswith("-05:00")
        assert "EST" in body["message"] and "UTC" not in body["message"]

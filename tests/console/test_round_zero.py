"""Round 0 is a round every way of asking a dispute accepts (rules.MIN_ROUND_NO).

`pitlog ingest` records a line with "round": 0 and the read side judges it (a card dealt for
round 0 is a card outside any round, CARD_OUTSIDE_ROUND), and the rounds view lists round 0. The
CLI's `--round SHOE:0` answered it, but the HTTP API and the console refused round=0 ("at least
1"): the same CLI command failed once a server ran (it asks the API), and the console's link to
the round next to round 1 led to a 400. Now all of them take round 0 and refuse round -1 alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from console_support import CHROMIUM, needs_chromium
from repo_paths import REPO
from serve_support import Server, ingested_store, run_cli, serving

# After examples/devices.jsonl's round 1 (racked at 21:03:15): a card dealt for round 0.
ROUND_0_CARD = {"type": "CardDrawn", "table": "T07", "shoe": "T07-S0003", "round": 0,
                "seq": 14, "at": "2026-11-28T21:04:00.000Z", "actor": "SHOE-7", "rank": 9,
                "suit": "H", "face_up": True, "destination": "LEFT"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return ingested_store(tmp_path_factory.mktemp("round0"),
                          (REPO / "examples" / "devices.jsonl").read_text()
                          + json.dumps(ROUND_0_CARD) + "\n")


@pytest.fixture(scope="module")
def server(store: tuple[Path, Path, Path]) -> Iterator[Server]:
    yield from serving(store)


def _round_0(rows: list[dict[str, object]]) -> tuple[object, list[object]]:
    (head,) = [r for r in rows if r["section"] == "round"]
    return head["round_no"], [r["card"] for r in rows if r["section"] == "card"]


def test_the_cli_disputes_round_0_alone_and_through_the_server(
        store: tuple[Path, Path, Path], server: Server) -> None:
    tmp, _, db = store
    for where in (tmp / "alone.duckdb", db):  # db: the server holds it, the CLI asks its API
        args = ("dispute", "--db", str(where), "--table", "T07")
        got = run_cli(*args, "--round", "T07-S0003:0", "-f", "json")
        assert got.returncode == 0, got.stderr
        assert _round_0(json.loads(got.stdout)) == (0, ["9H"])
        refused = run_cli(*args, "--round", "T07-S0003:-1")
        assert refused.returncode == 1
        assert refused.stderr == "Error: --round 'T07-S0003:-1': round must be at least 0\n"


def test_the_api_and_the_console_take_round_0_and_refuse_round_minus_1(server: Server) -> None:
    got = server.get("/api/dispute?table=T07&shoe=T07-S0003&round=0")
    assert got.status == 200, got.body
    body = got.json()
    assert body["round"]["round_no"] == 0
    assert [c["card"] for c in body["cards"]] == ["9H"]
    assert "CARD_OUTSIDE_ROUND" in {a["code"] for a in body["anomalies"]}
    page = server.get("/dispute?table=T07&shoe=T07-S0003&round=0")
    assert page.status == 200, page.body
    assert '<b data-field="round">0</b>' in page.body.decode()
    for path in ("/api/dispute?table=T07&shoe=T07-S0003&round=-1",
                 "/dispute?table=T07&shoe=T07-S0003&round=-1"):
        refused = server.get(path)
        assert refused.status == 400 and b"round must be at least 0" in refused.body, path


def test_the_console_s_link_to_round_0_opens_it(server: Server) -> None:
    """A moment between round 1 and the round-0 card: the page offers the rounds before and
    after; the link to round 0 answered 400 ("round must be at least 1")."""
    page = server.get("/dispute?table=T07&at=2026-11-28T21:03:30Z").body.decode()
    (link,) = re.findall(r'<a class="neighbour" data-round="T07-S0003:0" href="([^"]+)"', page)
    opened = server.get(link.replace("&amp;", "&"))
    assert opened.status == 200 and '<b data-field="round">0</b>' in opened.body.decode()


def test_the_console_s_seat_field_has_the_seat_bound_and_no_ceiling(server: Server) -> None:
    """It had max="9", though ingest records any seat from 1 (rules.FIRST_SEAT) and no rule
    pitlog implements sets a highest seat: a seat-10 wager could not be asked for there."""
    page = server.get("/dispute").body.decode()
    (field,) = re.findall(r'<input type="number"[^>]*name="seat"[^>]*>', page)
    assert 'min="1"' in field and "max=" not in field, field


@needs_chromium
def test_in_a_browser_the_seat_field_submits_seat_12_and_refuses_seat_0(server: Server) -> None:
    """With max="9" the browser itself refused to submit seat 12 (a seat ingest records)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM))
        try:
            page = browser.new_page()
            page.goto(f"{server.url}/dispute")
            seat = page.locator('input[name="seat"]')
            for value, valid in (("12", True), ("0", False)):
                seat.fill(value)
                assert seat.evaluate("e => e.checkValidity()") is valid, value
            page.fill('input[name="at"]', "2026-11-28 21:02:40")
            seat.fill("12")
            page.click('button[type="submit"]')
            page.wait_for_url(re.compile(r"/dispute\?.*seat=12"))
        finally:
            browser.close()

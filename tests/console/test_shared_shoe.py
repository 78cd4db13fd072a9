"""A shoe id used at two tables, and one with a "/" in it: `pitlog replay` answers both, on the
file and through a running `pitlog serve`, and the console's replay page opens them.

Were: `pitlog replay SHARED` said "name the table" but had no --table to name it with (the
README calls --table "the same option everywhere"; GET /api/replay took table= already), and a
shoe id with a "/" (ingest records any id of up to 128 characters) was "no such resource"
through the server: the routes' {shoe} stopped at the decoded "/".
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from serve_support import Server, ingested_store, run_cli, serving


def _line(table: str, shoe: str | None, seq: int, at: str, type_: str, **fields: object) -> str:
    return json.dumps({"type": type_, "table": table, "shoe": shoe, "round": None, "seq": seq,
                       "at": f"2026-11-28T21:00:{at}Z", "actor": f"TERM-{table}", **fields})


def _feed() -> str:
    lines = []
    for table, decks in (("T07", 6), ("T08", 8)):  # one shoe id at two tables
        lines += [_line(table, None, 1, "00.000", "TableOpened", profile="nj-casino"),
                  _line(table, "SHARED", 2, "01.000", "CardsLoaded", decks=decks)]
    lines.append(_line("T09", "T09/S1", 1, "02.000", "CardsLoaded", decks=4))
    lines.append(_line("T10", "A?B#1/../C", 1, "03.000", "CardsLoaded", decks=2))
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return ingested_store(tmp_path_factory.mktemp("shared"), _feed())


@pytest.fixture(scope="module")
def server(store: tuple[Path, Path, Path]) -> Iterator[Server]:
    yield from serving(store)


def _loaded(stdout: str) -> list[str]:
    return [r["description"] for r in json.loads(stdout)
            if r["section"] == "event" and r["event_type"] == "CardsLoaded"]


def test_replay_names_the_table_of_a_shared_shoe_and_takes_a_slash_in_its_id(
        store: tuple[Path, Path, Path], server: Server) -> None:
    tmp, _, db = store
    for where in (tmp / "alone.duckdb", db):  # db: the server holds it, the CLI asks its API
        both = run_cli("replay", "SHARED", "--db", str(where))
        assert both.returncode == 1
        assert both.stderr.startswith("Error: shoe 'SHARED' was used at tables T07, T08; name "
                                      "the table (`pitlog replay SHARED --table T07`)")
        for table, decks in (("T07", 6), ("T08", 8)):
            one = run_cli("replay", "SHARED", "--table", table, "-f", "json", "--db", str(where))
            assert one.returncode == 0, one.stderr
            assert _loaded(one.stdout) == [f"{decks} decks loaded into shoe SHARED"]
        slash = run_cli("replay", "T09/S1", "-f", "json", "--db", str(where))
        assert slash.returncode == 0, slash.stderr
        assert _loaded(slash.stdout) == ["4 decks loaded into shoe T09/S1"]
    page = server.get(f"/replay/{quote('T09/S1', safe='')}?table=T09")
    assert page.status == 200 and "4 decks loaded into shoe T09/S1" in page.body.decode()


def test_the_consoles_own_replay_links_open_every_shoe(server: Server) -> None:
    """The console's links to a shoe's replay pasted the id into the path: with "/" routed
    since the route takes a path, but "?" and "#" still cut the id short and "/../" was
    collapsed by the browser. Each link from the shoes page opens its own shoe."""
    listing = server.get("/replay").body.decode()
    links = dict((unquote(shoe), html.unescape(link)) for link, shoe in re.findall(
        r'href="(/replay/([^"?]+)\?table=[^"]*)"', listing))
    assert set(links) >= {"SHARED", "T09/S1", "A?B#1/../C"}
    for shoe, decks in (("T09/S1", 4), ("A?B#1/../C", 2)):
        page = server.get(links[shoe])
        assert page.status == 200
        assert f"{decks} decks loaded into shoe {html.escape(shoe)}" in page.body.decode()

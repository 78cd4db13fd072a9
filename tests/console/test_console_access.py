"""The console is read-only and under the same token rule as the API: with a token, no page,
fragment, script or stylesheet is served without it."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from console_support import Served, running
from starlette.routing import Mount, Route
from surveillance_pit import opened

from projections.serve import console

PATHS = ["/", "/tables", "/tables/tiles", "/alerts-page", "/alerts-page/rows?after=0",
         "/dispute", "/dispute?table=T01&shoe=S1&round=1", "/incident?table=T01&shoe=S1&round=1",
         "/replay", "/replay/S1", "/static/console.css", "/static/replay.js"]


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    pit = opened(tmp_path_factory.mktemp("access"))
    pit.play(1, "3S QH 7C", {1: 1000})
    pit.close_shoe()
    with running(pit.project(), token="s3cret-token") as s:
        yield s


def _get(url: str, token: str | None = None, method: str = "GET") -> int:
    req = urllib.request.Request(url, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.mark.parametrize("path", PATHS)
def test_every_console_path_needs_the_token(guarded: Served, path: str) -> None:
    assert _get(guarded.url + path) == 401
    assert _get(guarded.url + path, "wrong-token") == 401
    assert _get(guarded.url + path, "s3cret-token") == 200


def test_the_console_only_reads() -> None:
    for route in console.routes():
        if isinstance(route, Route):
            assert route.methods is not None and route.methods <= {"GET", "HEAD"}, route.path
        else:
            assert isinstance(route, Mount) and route.path == "/static"


def test_a_write_is_refused(guarded: Served) -> None:
    for path in ("/dispute", "/tables", "/static/console.css"):
        assert _get(guarded.url + path, "s3cret-token", method="POST") == 405


def test_the_assets_live_in_the_package() -> None:
    from projections.serve.templates.base import STATIC

    assert {p.name for p in STATIC.iterdir()} >= {"console.css", "cards.css", "incident.css",
                                                  "alerts.js", "tables.js", "replay.js"}

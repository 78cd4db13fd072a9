"""The surveillance console: server-rendered pages on `pitlog serve`, each with a JSON twin.

    /              -> /tables
    /tables        one tile per table (JSON twin: /api/tables)
    /alerts-page   the live alert feed, pushed over /alerts (SSE); ?table= &code= &severity=
    /dispute       ?table= &at= [&seat=] | ?table= &shoe= &round= | ?alert=N
    /incident      the printable incident report, same parameters as /dispute
    /replay        the shoes; /replay/{shoe}?table= [&seq=] steps through one
    /static/...    the CSS, scripts and icon (no CDN: surveillance networks are closed)

Every page takes ?format=json for the data it shows (times ISO 8601 with the casino's offset).
The pages only read: they run on a fresh cursor of the server's connection (state.py), and the
app's token rule covers them like the API (app.py).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import duckdb
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from events.errors import NotFoundError
from events.reddog.rules import FIRST_SEAT, MIN_ROUND_NO
from projections.console_data import (
    SEVERITIES,
    AlertFilter,
    alert,
    alert_choices,
    last_alert_seq,
    recent_alerts,
    replay_steps,
)
from projections.dispute import dispute as rebuild
from projections.moment import OutsideRound
from projections.queries import known_tables, list_shoes, rows
from projections.serve import api
from projections.serve.discovery import STALE_HEADER
from projections.serve.params import BadRequest, params
from projections.serve.state import ServeState
from projections.serve.templates.alerts import alerts_page, rows_html
from projections.serve.templates.base import STATIC, with_stale_banner
from projections.serve.templates.dispute import dispute_page
from projections.serve.templates.incident import incident_page
from projections.serve.templates.replay import replay_page, shoes_page
from projections.serve.templates.tables import tables_page, tiles_html

Row = dict[str, Any]


def routes() -> list[BaseRoute]:
    return [
        Route("/", lambda request: RedirectResponse("/tables", status_code=307)),
        Route("/tables", tables), Route("/tables/tiles", tiles),
        Route("/alerts-page", alerts), Route("/alerts-page/rows", alert_rows),
        Route("/dispute", dispute), Route("/incident", incident),
        Route("/replay", shoes), Route("/replay/{shoe:path}", replay),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]


def _state(request: Request) -> ServeState:
    return request.app.state.pitlog  # type: ignore[no-any-return]


def _html(request: Request, html: str, status_code: int = 200) -> HTMLResponse:
    """A page, with the stale banner and header when the follower stopped (api.stale_headers):
    a page read from a server that no longer follows the log says so at its top."""
    stale = api.stale_headers(_state(request))
    if stale:
        html = with_stale_banner(html, stale[STALE_HEADER])
    return HTMLResponse(html, status_code=status_code, headers=stale or None)


def _wants_json(p: dict[str, str]) -> bool:
    fmt = p.pop("format", "html")
    if fmt not in ("html", "json"):
        raise BadRequest(f"format={fmt!r}: use html or json")
    return fmt == "json"


def _now() -> datetime:
    return datetime.now(UTC)


# --- tables ---------------------------------------------------------------------------------

def _table_rows(con: duckdb.DuckDBPyConnection) -> list[Row]:
    return rows(con, api._TABLES)  # the /api/tables query: one definition


def tables(request: Request) -> Response:
    p = params(request, "format", blank_is_absent=True)
    with api.reading(request) as con:  # the tiles and the last alert of one snapshot
        found = _table_rows(con)
        if _wants_json(p):
            return api.reply(request, found)
        last = last_alert_seq(con)
    return _html(request, tables_page(found, _state(request).tz, last_alert=last, now=_now()))


def tiles(request: Request) -> Response:
    """The tiles alone, for tables.js to refresh the wall when an alert arrives."""
    params(request, blank_is_absent=True)
    with api.reading(request) as con:
        found = _table_rows(con)
    return _html(request, tiles_html(found, _state(request).tz))


# --- alerts ---------------------------------------------------------------------------------

def _alert_filter(p: dict[str, str]) -> AlertFilter:
    sev = p.get("severity")
    if sev is not None and sev not in SEVERITIES:
        raise BadRequest(f"severity={sev!r}: use {', '.join(SEVERITIES)}")
    return AlertFilter(table=p.get("table"), code=p.get("code"), severity=sev)


def alerts(request: Request) -> Response:
    p = params(request, "table", "code", "severity", "limit", "format", blank_is_absent=True)
    json_wanted = _wants_json(p)
    f = _alert_filter(p)
    limit = api.as_int(p, "limit", 1) or 200
    with api.reading(request) as con:
        found = recent_alerts(con, f, limit)
        table_ids, codes = alert_choices(con)
    if json_wanted:
        return api.reply(request, found)
    return _html(request, alerts_page(found, _state(request).tz, f, table_ids, codes, now=_now()))


def alert_rows(request: Request) -> Response:
    """The rows of the alerts after ?after=N that pass the filters, newest first: alerts.js
    asks for them when /alerts pushes a new alert, so rows are rendered in one place."""
    p = params(request, "after", "table", "code", "severity", blank_is_absent=True)
    after = api.as_int(p, "after", 0) or 0
    with api.reading(request) as con:
        found = [a for a in recent_alerts(con, _alert_filter(p), 1000)
                 if int(a["alert_seq"]) > after]
    return _html(request, rows_html(found, _state(request).tz))


# --- dispute and incident -------------------------------------------------------------------

def _rebuild(request: Request, p: dict[str, str]) -> dict[str, Any]:
    """The dispute the parameters name: {'dispute', 'outside', 'alert', 'table', 'at',
    'seat', 'tables'}; at most one of 'dispute' and 'outside' is set."""

    state = _state(request)
    seat = api.as_int(p, "seat", FIRST_SEAT)
    at = api.as_time(p, "at", state.tz)
    round_no = api.as_int(p, "round", MIN_ROUND_NO)  # round 0 is a round the views list
    if at is not None and ("shoe" in p or round_no is not None or "alert" in p):
        # one or the other, as /api/dispute: the round asked for beside at= was dropped (a
        # second outside review, session 37)
        raise BadRequest("give at=TIME, or shoe=SHOE and round=N, or alert=N: one of them")
    out: dict[str, Any] = {"dispute": None, "outside": None, "alert": None, "seat": seat,
                           "table": p.get("table"), "at": at}
    with api.reading(request) as con:
        out["tables"] = list(known_tables(con))
        if "alert" in p:
            a = alert(con, api.as_int(p, "alert", 1) or 0)
            if a is None:
                raise NotFoundError(f"no alert {p['alert']}; /alerts-page lists them")
            out["alert"], out["table"] = a, a["table_id"]
            if a["round_no"] is not None and a["shoe_id"] is not None:
                p = {**p, "shoe": a["shoe_id"]}
                round_no = int(a["round_no"])
            else:  # a table- or shoe-level alert: the moment it happened
                at = out["at"] = a["occurred_at"]
        if out["table"] is None:
            return out  # the empty form
        if at is None and (round_no is None or "shoe" not in p):
            raise BadRequest("give at=TIME, or shoe=SHOE and round=N, or alert=N")
        try:
            out["dispute"] = rebuild(con, out["table"], at=at, seat=seat,
                                     shoe=None if at else p.get("shoe"),
                                     round_no=None if at else round_no)
        except OutsideRound as exc:
            out["outside"] = exc
    return out


def _dispute_json(request: Request, found: dict[str, Any]) -> Response:
    if found["outside"] is not None:
        return api.reply(request, found["outside"].as_dict(_state(request).tz), 404)
    d = found["dispute"]
    if d is None:
        raise BadRequest("give table= and at=TIME, or shoe= and round=, or alert=N")
    return api.reply(request, {"round": d.round, "cards": d.cards,
                               "announcements": d.announcements, "wagers": d.wagers,
                               "settlements": d.settlements, "anomalies": d.anomalies,
                               "alert": found["alert"]})


_DISPUTE_PARAMS = ("table", "at", "seat", "shoe", "round", "alert", "format")


def _dispute_html(request: Request, found: dict[str, Any]) -> Response:
    twin = str(request.url.include_query_params(format="json"))
    html = dispute_page(found["dispute"], _state(request).tz, tables=found["tables"],
                        table=found["table"], at=found["at"], seat=found["seat"],
                        outside=found["outside"], alert=found["alert"],
                        json_href=twin.replace("&", "&amp;"), now=_now())
    return _html(request, html, status_code=404 if found["outside"] else 200)


def dispute(request: Request) -> Response:
    p = params(request, *_DISPUTE_PARAMS, blank_is_absent=True)
    json_wanted = _wants_json(p)
    found = _rebuild(request, p)
    return _dispute_json(request, found) if json_wanted else _dispute_html(request, found)


def incident(request: Request) -> Response:
    """The report of the round; outside a round, the dispute page's answer (no report)."""
    p = params(request, *_DISPUTE_PARAMS, blank_is_absent=True)
    json_wanted = _wants_json(p)
    found = _rebuild(request, p)
    if json_wanted:
        return _dispute_json(request, found)
    if found["dispute"] is None:
        return _dispute_html(request, found)
    return _html(request, incident_page(found["dispute"], _state(request).tz, at=found["at"],
                                      seat=found["seat"], alert=found["alert"], now=_now()))


# --- replay ---------------------------------------------------------------------------------

def shoes(request: Request) -> Response:
    p = params(request, "table", "format", blank_is_absent=True)
    json_wanted = _wants_json(p)
    with api.reading(request) as con:
        found = list_shoes(con, table=p.get("table"))
    if json_wanted:
        return api.reply(request, found)
    return _html(request, shoes_page(found, _state(request).tz, now=_now()))


def replay(request: Request) -> Response:
    p = params(request, "table", "seq", "format", blank_is_absent=True)
    json_wanted = _wants_json(p)
    with api.reading(request) as con:
        r = replay_steps(con, request.path_params["shoe"], p.get("table"))
    if json_wanted:
        return api.reply(request, {"shoe": r.shoe, "steps": r.steps, "hands": r.hands})
    return _html(request, replay_page(r, _state(request).tz, start_seq=api.as_int(p, "seq", 0),
                                    now=_now()))

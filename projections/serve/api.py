"""The read-only JSON API: one GET per query the CLI has, each calling the same library function
as the CLI command, on a fresh cursor of the writer's connection (state.py).

Handlers are plain functions: Starlette runs them in its thread pool, so a slow query never
blocks the event loop (nor the alert streams). Times are ISO 8601 with the casino's offset;
money stays in integer cents; decimals are strings (exact); fractions are "n/d".
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from datetime import datetime
from decimal import Decimal
from typing import Any

import duckdb
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from events.errors import PitlogError
from events.reddog.rules import FIRST_SEAT, MIN_ROUND_NO
from projections.alerts import alerts_after
from projections.anomalies import AnomalyFilter, EmptyWindow, list_anomalies
from projections.dispute import dispute as rebuild
from projections.export import Rows
from projections.localtime import check_gaming_day, parse_local, parse_zone, sql_zone
from projections.moment import OutsideRound
from projections.queries import list_shoes, rows
from projections.reconcile import DEFAULT_SIGMA, Calendar, ledger_rows, parse_day
from projections.reconcile import conservation as conservation_report
from projections.reconcile import reconcile as reconcile_report
from projections.replay import replay_shoe
from projections.serve import sse
from projections.serve.discovery import (
    DECIMALS_HEADER,
    FLOATS_HEADER,
    STALE_HEADER,
    TYPES_HEADER,
    WALL_CLOCKS_HEADER,
)
from projections.serve.encoding import to_json
from projections.serve.params import BadRequest, params
from projections.serve.sql import QueryAbandoned, bounded_query
from projections.serve.state import ServeState

log_ = logging.getLogger("pitlog.serve")


def routes() -> list[BaseRoute]:
    return [
        Route("/api/shoes", shoes), Route("/api/replay/{shoe:path}", replay),
        Route("/api/anomalies", anomalies), Route("/api/dispute", dispute),
        Route("/api/reconcile", reconcile), Route("/api/ledger", ledger),
        Route("/api/conservation", conservation), Route("/api/sql", sql),
        Route("/api/tables", tables), Route("/api/alerts", alerts),
        Route("/alerts", sse.alerts),
        Route("/health", health), Route("/metrics", metrics),
    ]


# --- encoding -------------------------------------------------------------------------------

def paths_holding(body: Any, kind: Callable[[Any], bool], at: tuple[str, ...] = (),
                  found: set[tuple[str, ...]] | None = None) -> set[tuple[str, ...]]:
    """The paths (the object keys from the top, a list's items at its own path) whose values
    are of `kind` somewhere in `body`. By path, not by key: a string under a key of the same
    name elsewhere is not named with them (the headers named bare keys, and a VARCHAR 'inf',
    or '1.50', beside a struct field of that name holding an infinite float, or a DECIMAL, was
    read back as the float or the Decimal: a second read, session 42)."""
    found = set() if found is None else found
    if isinstance(body, dict):
        for k, v in body.items():
            paths_holding(v, kind, (*at, k), found)
    elif isinstance(body, list | tuple):
        for v in body:
            paths_holding(v, kind, at, found)
    elif kind(body):
        found.add(at)
    return found


def _is_decimal(value: Any) -> bool:
    return isinstance(value, Decimal)


def _is_non_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _is_wall_clock(value: Any) -> bool:
    return isinstance(value, datetime) and value.tzinfo is None


def reply(request: Request, body: Any, status: int = 200) -> Response:
    """JSON, with the paths a client reads back as other than strings named in headers:
    X-Pitlog-Decimals (exact Decimals), X-Pitlog-Wall-Clocks (a TIMESTAMP without a zone,
    `AT TIME ZONE` in `pitlog sql`: a wall-clock time, never moved to a zone) and
    X-Pitlog-Floats (NaN and infinity, which JSON cannot carry, sent as "nan", "inf" and
    "-inf"), so the CLI prints the rows a server gives as it prints the file's."""
    state: ServeState = request.app.state.pitlog
    # Each a JSON list of paths, a path a list of keys from the answer's top: ASCII (a header
    # is Latin-1: a column named in Cyrillic, or with a comma or a newline in its name, is
    # written escaped and read back whole).
    headers = {name: json.dumps(sorted(list(p) for p in paths)) for name, paths in (
        (DECIMALS_HEADER, paths_holding(body, _is_decimal)),
        (WALL_CLOCKS_HEADER, paths_holding(body, _is_wall_clock)),
        (FLOATS_HEADER, paths_holding(body, _is_non_finite))) if paths}
    if isinstance(body, Rows) and (types := body.duckdb_types()):
        headers[TYPES_HEADER] = json.dumps(types)  # ASCII: escaped as the keys above
    return Response(to_json(state, body), status_code=status, media_type="application/json",
                    headers={**headers, **stale_headers(state)} or None)


def stale_headers(state: ServeState) -> dict[str, str]:
    """STALE_HEADER, when the follower has stopped or its log is gone from its address (not
    following until it is back): with every answer, an error's too (a table added to the log
    since is "no table" to a stale server)."""
    if not state.status.failed and not state.status.gone:
        return {}
    health = state.health()
    since = (f"as of its last commit at {health['last_commit']}" if health["last_commit"]
             else "the store's as it was when the server started")
    if state.status.failed:
        why = (f"the server stopped following the log ({health['error']}); answers are "
               f"{since}, {health['lag_total']:,} records behind: restart `pitlog serve`")
    else:  # the log is not at its address: what it holds now is unknown, so no lag is given
        why = (f"the server is not following the log ({health['error']}); answers are "
               f"{since}")
    # latin-1 only in a header: an error text with other characters is escaped
    return {STALE_HEADER: why.encode("ascii", "backslashreplace").decode("ascii")}


# --- parameters -----------------------------------------------------------------------------

def many(request: Request, name: str) -> list[str]:
    """The values of a parameter that takes several (params' `several`), given again or
    comma-separated; an empty one (`?code=,`)
    is refused, as params refuses `?code=`, not read as none (which widened the query: a
    second outside review, session 37)."""
    values = [v for raw in request.query_params.getlist(name) for v in raw.split(",")]
    if "" in values:
        raise BadRequest(f"{name} holds an empty value; name each one, comma-separated or "
                         f"given again, e.g. {name}=A,B")
    return values


def as_int(p: dict[str, str], name: str, low: int | None = None) -> int | None:
    if name not in p:
        return None
    try:
        n = int(p[name])
    except ValueError:
        raise BadRequest(f"{name}={p[name]!r} is not an integer") from None
    if low is not None and n < low:
        raise BadRequest(f"{name} must be at least {low}")
    return n


def as_seconds(p: dict[str, str], name: str) -> float | None:
    if name not in p:
        return None
    try:
        seconds = float(p[name])
    except ValueError:
        raise BadRequest(f"{name}={p[name]!r} is not a number of seconds") from None
    if not 0 < seconds <= 86_400:  # NaN fails this too
        raise BadRequest(f"{name} must be more than 0 seconds and at most 86400")
    return seconds


def as_bool(p: dict[str, str], name: str, default: bool) -> bool:
    text = p.get(name)
    if text is None:
        return default
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise BadRequest(f"{name}={text!r}: use true or false")


def as_time(p: dict[str, str], name: str, tz: Any) -> datetime | None:
    """ISO 8601; a time without an offset is on the casino's wall clock (as the CLI reads it:
    projections.localtime.parse_local)."""
    if name not in p:
        return None
    try:
        return parse_local(p[name], tz, name)
    except PitlogError as exc:
        raise BadRequest(str(exc)) from None


@contextmanager
def reading(request: Request) -> Iterator[duckdb.DuckDBPyConnection]:
    """The request's cursor, in one snapshot of the store (ServeState.snapshot)."""
    state: ServeState = request.app.state.pitlog
    with state.snapshot() as cur:
        yield cur


def zone(request: Request, p: dict[str, str]) -> Any:
    """The request's `tz`, else the server's zone (`serve --tz`, else PITLOG_TZ, else UTC):
    the clock of a time given without an offset and of an error's times."""
    state: ServeState = request.app.state.pitlog
    return parse_zone(p["tz"]) if "tz" in p else state.tz


def calendar(request: Request, p: dict[str, str]) -> Any:
    """The gaming days and shifts asked for: on the request's `tz`, else on the server's zone,
    as `pitlog serve --tz` says (they were on UTC whatever the server's zone: an outside
    review, session 41); the CLI sends the zone it would read the file on."""
    state: ServeState = request.app.state.pitlog
    return Calendar.parse(p.get("tz") or sql_zone(state.tz), p.get("gaming_day_start", "06:00"),
                          p.get("shifts", "06:00,14:00,22:00"))


# --- endpoints ------------------------------------------------------------------------------

def shoes(request: Request) -> Response:
    p = params(request, "table")
    with reading(request) as con:
        return reply(request, list_shoes(con, table=p.get("table")))


def replay(request: Request) -> Response:
    p = params(request, "table")
    with reading(request) as con:
        r = replay_shoe(con, request.path_params["shoe"], table=p.get("table"))
    return reply(request, {"shoe": r.shoe, "events": r.events, "hands": r.hands})


def anomalies(request: Request) -> Response:
    p = params(request, "code", "table", "shoe", "since", "until", "severity", "statistics",
               "tz", "gaming_day_start", "shifts", "day", several=("code",))
    groups = calendar(request, p)  # HOLD_VARIANCE's gaming days and shifts, as /api/reconcile's
    clock = zone(request, p)  # of since= and until= without an offset, as /api/dispute's at=
    since, until, day = as_time(p, "since", clock), as_time(p, "until", clock), None
    if "day" in p:  # as `pitlog anomalies --day`: the rows of that gaming day
        day = check_gaming_day(parse_day(p["day"]))  # type: ignore[arg-type]
    try:
        f = AnomalyFilter(codes=tuple(many(request, "code")), table=p.get("table"),
                          shoe=p.get("shoe"), since=since, until=until,
                          severity=p.get("severity"), statistics=as_bool(p, "statistics", True),
                          day=day)
    except EmptyWindow as exc:  # on the clock since= and until= are read on
        raise BadRequest(exc.describe(clock)) from None
    with reading(request) as con:
        return reply(request, list_anomalies(con, f, calendar=groups))


def dispute(request: Request) -> Response:
    p = params(request, "table", "at", "shoe", "round", "seat", "tz")
    if "table" not in p:
        raise BadRequest("give table=, and either at=TIME or shoe= and round=")
    clock = zone(request, p)  # of `at` and of the error message
    at = as_time(p, "at", clock)
    round_no = as_int(p, "round", MIN_ROUND_NO)  # round 0 is a round the views list
    # One or the other, whole: at= with shoe= or round= beside it was answered for the moment,
    # the round asked for dropped (an outside review, session 37)
    named = "shoe" in p or round_no is not None
    if (at is None) != named or (named and (round_no is None or "shoe" not in p)):
        raise BadRequest("give either at=TIME or shoe=SHOE and round=N")
    with reading(request) as con:
        try:
            d = rebuild(con, p["table"], at=at, shoe=p.get("shoe"), round_no=round_no,
                        seat=as_int(p, "seat", FIRST_SEAT))
        except OutsideRound as exc:
            return reply(request, {"error": exc.describe(clock)}, 404)
    # every field of the dispute (the CLI makes its Dispute from them)
    return reply(request, {f.name: getattr(d, f.name) for f in fields(d)})


def reconcile(request: Request) -> Response:
    p = params(request, "by", "tz", "gaming_day_start", "shifts", "day", "table", "sigma",
               several=("by",))
    try:
        sigma = float(p.get("sigma", DEFAULT_SIGMA))
    except ValueError:
        raise BadRequest(f"sigma={p['sigma']!r} is not a number") from None
    if not sigma >= 0:
        raise BadRequest("sigma must be a number at least 0")
    with reading(request) as con:
        return reply(request, reconcile_report(con, many(request, "by") or ["table"],
                                               calendar(request, p),
                                               day=parse_day(p.get("day")),
                                               table=p.get("table"), sigma=sigma))


def conservation(request: Request) -> Response:
    p = params(request, "by", "tz", "gaming_day_start", "shifts", "day", "table",
               several=("by",))
    with reading(request) as con:
        return reply(request, conservation_report(
            con, many(request, "by") or ["table", "day"], calendar(request, p),
            day=parse_day(p.get("day")), table=p.get("table")))


def ledger(request: Request) -> Response:
    p = params(request, "table", "shoe", "status", "exceptions", "day", "tz",
               "gaming_day_start")
    with reading(request) as con:
        return reply(request, ledger_rows(con, table=p.get("table"), shoe=p.get("shoe"),
                                          status=p.get("status"),
                                          exceptions_only=as_bool(p, "exceptions", False),
                                          day=parse_day(p.get("day")),
                                          calendar=calendar(request, p)))


async def sql(request: Request) -> Response:
    """The query runs on a worker thread while this waits for the client's disconnect: a
    client that goes away (a `pitlog sql` stopped with Ctrl-C, a dropped connection) stops
    its query (sql.bounded_query), which else ran on to the server's time limit."""
    state: ServeState = request.app.state.pitlog
    p = params(request, "q", "timeout")
    if "q" not in p:
        raise BadRequest("give the query as q=SELECT ...")
    abandoned = threading.Event()

    async def client_gone() -> None:
        # A GET's one message is its (empty) body; the next is the disconnect, whenever the
        # client goes (or the server has answered: this is cancelled first).
        while (await request.receive())["type"] != "http.disconnect":
            pass
        abandoned.set()

    started = time.monotonic()
    watching = asyncio.ensure_future(client_gone())
    try:
        columns, rows, truncated = await run_in_threadpool(
            bounded_query, state, p["q"], as_seconds(p, "timeout"), abandoned)
    except QueryAbandoned:
        log_.warning("an /api/sql query was stopped after %.1f s: its client went away",
                     time.monotonic() - started)
        raise
    finally:
        watching.cancel()
    # Off the event loop too, as the endpoint ran before: an answer of up to 64 MiB of rows
    # takes a while to write as JSON, and the loop serves every other request and stream.
    return await run_in_threadpool(reply, request, {
        "columns": columns, "rows": rows, "truncated": truncated,
        "max_rows": state.sql_max_rows})


# One pass over the events (a few columns), not the rounds view, which rebuilds every round of
# the store: the consoles poll this. The current shoe is that of the table's latest event with
# one; the round, that of its latest in-round event if it is in that shoe; the dealer, the last
# one tapped in unless tapped out since. "Latest" by seq alone: two events at one seq (two
# writers, docs/integrity.md) show either; a (seq, log_offset) key cost 1.7x the CPU here.
_TABLES = """
WITH t AS (
    SELECT table_id, max(occurred_at) AS last_event_at, count(*) AS events,
           arg_max(shoe_id, seq) FILTER (WHERE shoe_id IS NOT NULL) AS shoe_id,
           arg_max({'shoe': shoe_id, 'round': round_no}, seq)
               FILTER (WHERE round_no IS NOT NULL) AS last_round,
           -- (in a struct: arg_max skips a NULL value, and a tap-out's must count)
           arg_max({'dealer': CASE WHEN event_type = 'DealerTappedIn' THEN dealer_id END}, seq)
               FILTER (WHERE event_type IN ('DealerTappedIn', 'DealerTappedOut')) AS dealer
    FROM events GROUP BY table_id
), profile AS (  -- the paytable in force: the latest TableOpened of the table
    SELECT table_id, arg_max(profile, seq) AS profile FROM paytables GROUP BY table_id
), open_alerts AS (
    SELECT table_id, count(*) AS open_alerts FROM alerts GROUP BY table_id
)
SELECT t.table_id, p.profile, t.shoe_id,
       CASE WHEN t.last_round.shoe = t.shoe_id THEN t.last_round.round END AS round_no,
       t.dealer.dealer AS dealer, t.last_event_at, t.events,
       coalesce(a.open_alerts, 0) AS open_alerts
FROM t LEFT JOIN profile AS p USING (table_id) LEFT JOIN open_alerts AS a USING (table_id)
ORDER BY t.table_id
"""


def tables(request: Request) -> Response:
    """One row per table: its paytable profile, current shoe and round, dealer, last event
    time, and the alerts raised there (alerts have no acknowledgement yet: all count as open)."""

    params(request)
    with reading(request) as con:
        return reply(request, rows(con, _TABLES))


def alerts(request: Request) -> Response:
    """The alerts after `after` (an alert_seq), in raise order, at most `limit`: the JSON twin
    of the /alerts stream, for a client that polls."""

    p = params(request, "after", "limit")
    limit = as_int(p, "limit", 1) or 1000
    if limit > 10_000:
        raise BadRequest("limit must be at most 10000")
    with reading(request) as con:
        return reply(request, alerts_after(con, as_int(p, "after", 0) or 0, limit))


def health(request: Request) -> Response:
    params(request)  # it takes none: an unknown one is a 400, as everywhere (session 39)
    state: ServeState = request.app.state.pitlog
    body = state.health()
    return reply(request, body, 200 if body["ready"] else 503)


def metrics(request: Request) -> Response:
    params(request)
    state: ServeState = request.app.state.pitlog
    return Response(state.metrics.render(), media_type="text/plain; version=0.0.4")


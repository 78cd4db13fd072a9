"""GET /alerts: the alerts table as Server-Sent Events (contract item 1).

Each alert is one event: `id:` its alert_seq, `event: alert`, `data:` the row as JSON. A client
that reconnects sends `Last-Event-ID` (or `?after=N`) and gets every alert after it, none twice.
The ids are this store's numbering: a store restored from a backup or rebuilt numbers its
alerts anew, so an id from before is no place to resume from there (docs/operating.md says so;
a client then starts from 0 and drops the alert_ids it has).
The stream waits on the follower's commit notification (state.notify) rather than polling the
database; a comment line every KEEPALIVE_S keeps proxies from closing an idle stream.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from events.errors import PitlogError
from projections.alerts import alerts_after
from projections.serve.encoding import to_json
from projections.serve.params import params
from projections.serve.state import ServeState

KEEPALIVE_S = 15.0
PAGE = 1000


def _after(request: Request) -> int:
    """Where to resume: the Last-Event-ID header, else ?after=N, else 0; an error names
    whichever was given. Unknown or repeated parameters are refused (params.params)."""
    p = params(request, "after", "once")
    header = request.headers.get("last-event-id")
    name, raw = ("Last-Event-ID", header) if header else ("after", p.get("after", "0"))
    try:
        n = int(raw)
    except ValueError:
        raise PitlogError(f"{name} {raw!r} is not an alert_seq (an integer)") from None
    if n < 0:
        raise PitlogError(f"{name} must be 0 or more")
    return n


def _page(state: ServeState, after: int) -> list[dict[str, Any]]:
    cur = state.cursor()
    try:
        return alerts_after(cur, after, PAGE)
    finally:
        cur.close()


async def alerts(request: Request) -> Response:
    state: ServeState = request.app.state.pitlog
    after = _after(request)
    # read what is there, then end; another value was taken for "no" and streamed on
    # (an outside review, session 39)
    once_given = request.query_params.get("once", "0")
    if once_given not in ("1", "true", "0", "false"):
        raise PitlogError(f"once {once_given!r}: use 1 or true (read what is there, then end), "
                          f"or 0 or false")
    once = once_given in ("1", "true")

    async def stream() -> AsyncIterator[str]:
        nonlocal after
        wake = state.subscribe()
        try:
            yield "retry: 1000\n\n"
            while True:
                wake.clear()  # before reading: a commit during the read wakes the next wait
                rows = await anyio.to_thread.run_sync(_page, state, after)
                for row in rows:
                    after = int(row["alert_seq"])
                    yield f"id: {after}\nevent: alert\ndata: {to_json(state, row)}\n\n"
                if len(rows) == PAGE:
                    continue
                if once or state.closing:
                    return
                try:
                    await asyncio.wait_for(wake.wait(), KEEPALIVE_S)
                except TimeoutError:
                    yield ": keepalive\n\n"
                if state.closing:  # the server is stopping (runner: handle_exit)
                    return
        finally:
            state.unsubscribe(wake)

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


__all__ = ["alerts", "json"]

"""The Starlette application of `pitlog serve`: the JSON API, /alerts, /health, /metrics and
the console's pages, all read-only.

Every error is a JSON object `{"error": "..."}` with a 4xx code (5xx only for a fault of the
server itself), never a traceback. With a token, every request must carry it (BearerAuth:
a bearer header, or the cookie a first ?token= request sets for browsers; compared in constant
time); /health stays open so that a container's healthcheck needs no secret.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from events.errors import NotFoundError, PitlogError
from projections.serve import api, console
from projections.serve.state import ServeState
from projections.snapshot import damage_met

log_ = logging.getLogger("pitlog.serve")

OPEN_PATHS = ("/health",)  # no token needed: a container healthcheck has none


COOKIE = "pitlog_token"


class BearerAuth:
    """401 unless the request carries the token (pure ASGI: also guards the SSE stream).

    The token is read from `Authorization: Bearer <token>`, else from the `pitlog_token`
    cookie, else from `?token=` (a browser can set no header on a page load or an EventSource:
    open any page once with ?token=..., and the answer sets the cookie, HttpOnly and
    SameSite=Strict, so the console's pages and streams work from then on). Every comparison is
    in constant time."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    def _given(self, scope: Scope) -> tuple[bytes, bool]:
        """(the credential offered, whether it came in the query string)."""
        cookie = b""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, credential = value.partition(b" ")
                if scheme.lower() == b"bearer":
                    return credential.strip(), False
            elif name == b"cookie":
                for part in value.split(b";"):
                    key, _, val = part.strip().partition(b"=")
                    if key == COOKIE.encode():
                        cookie = val
        if cookie:
            return cookie, False
        for key, val in parse_qsl(scope.get("query_string", b"").decode("latin-1")):
            if key == "token":
                return val.encode("latin-1"), True
        return b"", False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given, from_query = self._given(scope)
        if not hmac.compare_digest(given, self.token):
            response = JSONResponse(
                {"error": "missing or wrong token: send Authorization: Bearer <PITLOG_TOKEN>"},
                status_code=401, headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        if not from_query:
            await self.app(scope, receive, send)
            return

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                cookie = (f"{COOKIE}={given.decode('latin-1')}; Path=/; HttpOnly; "
                          "SameSite=Strict").encode("latin-1")
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"set-cookie", cookie)]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    detail = exc.detail if exc.status_code != 404 else f"no such resource: {request.url.path}"
    return error(exc.status_code, str(detail))


async def _pitlog_error(request: Request, exc: Exception) -> Response:
    # NotFoundError: an unknown shoe, table or round; any other PitlogError: bad parameters.
    if (damage := _damage(request, exc)) is not None:
        return damage
    answer = error(404 if isinstance(exc, NotFoundError) else 400, str(exc))
    answer.headers.update(api.stale_headers(request.app.state.pitlog))
    return answer


async def _server_error(request: Request, exc: Exception) -> Response:
    if (damage := _damage(request, exc)) is not None:
        return damage
    log_.exception("%s %s failed", request.method, request.url.path)
    return error(500, f"internal error ({type(exc).__name__}); see the server's log")


def _damage(request: Request, exc: Exception) -> Response | None:
    """A damaged block of the served file met by the request's query: a 500 naming the file
    and what to do, as the CLI says it on the file (snapshot.damage_met), not "internal
    error" or a 400 of the request's (an outside review, session 40)."""
    state: ServeState = request.app.state.pitlog
    found = damage_met(state.db_path or "the served database", exc)
    if found is None:
        return None
    log_.error("%s %s: %s", request.method, request.url.path, found)
    return error(500, str(found))


def create_app(state: ServeState, token: str | None = None) -> Starlette:
    """The app over `state`; with `token`, every request but /health needs it."""
    middleware = [Middleware(BearerAuth, token=token)] if token else []
    handlers: dict[Any, Any] = {HTTPException: _http_error, PitlogError: _pitlog_error,
                                Exception: _server_error}
    app = Starlette(routes=[*api.routes(), *console.routes()], middleware=middleware,
                    exception_handlers=handlers)
    app.state.pitlog = state
    return app

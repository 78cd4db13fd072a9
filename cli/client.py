"""The CLI's client for a running `pitlog serve`: standard library only (urllib), so query
commands start as fast as before.

A query command asks `find(db, server)` first. It returns a Client when `--server URL` or
PITLOG_SERVER names one, or when `<db>.serve.json` names a live server for that database
(projections/serve/discovery.py); otherwise None, and the command opens the file itself.
Answers are decoded back to the values the library returns (times as datetimes in this
machine's zone, as DuckDB gives them), so every output format prints the same rows either way.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any

import typer

from events.errors import PitlogError
from projections.export import Rows
from projections.serve.discovery import (
    DECIMALS_HEADER,
    FLOATS_HEADER,
    NON_FINITE,
    STALE_HEADER,
    TYPES_HEADER,
    WALL_CLOCKS_HEADER,
    read,
)

ServerOpt = Annotated[str | None, typer.Option(
    "--server", envvar="PITLOG_SERVER", show_default=False,
    help="URL of a running `pitlog serve` to ask (default: the one serving --db, if any; "
         "else the file is opened directly).")]

# How long the client waits for an answer; a query asked to run longer (`pitlog sql
# --timeout`) is waited for that long and READ_MARGIN_S more, for the server's own answer.
TIMEOUT_S = 120.0
READ_MARGIN_S = 30.0
# An ISO 8601 time with an offset, as the server writes them: nothing else looks like this.
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?[+-]\d\d:\d\d")
_WALL_CLOCK = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?")


class Unreachable(PitlogError):
    """No answer from the server at all (refused, timed out): not an answer to the query."""


class Client:
    def __init__(self, url: str, token: str | None = None, explicit: bool = True) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.explicit = explicit  # named by the user: unreachable is an error, not a fallback

    def get(self, path: str, wait_s: float | None = None, **params: Any) -> Any:
        """GET url/path?params as decoded JSON; PitlogError with the server's message.
        `wait_s`: how long an answer may take (default TIMEOUT_S)."""
        # Imported here: urllib.request pulls in http.client and email, which every other
        # command (and a command with no server to ask) should not pay for at start-up.
        import urllib.error
        import urllib.parse
        import urllib.request

        query = urllib.parse.urlencode(
            [(k, v) for k, vs in params.items() if vs is not None
             for v in (vs if isinstance(vs, list | tuple) else [vs])], doseq=False)
        request = urllib.request.Request(f"{self.url}{path}{'?' + query if query else ''}")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=wait_s or TIMEOUT_S) as response:
                decimals, clocks, floats = (Named.of(response.headers.get(name)) for name in
                                            (DECIMALS_HEADER, WALL_CLOCKS_HEADER, FLOATS_HEADER))
                _warn(self.url, response.headers)
                body = revive(json.load(response), decimals, clocks=clocks, floats=floats)
                return _typed(body, response.headers.get(TYPES_HEADER))
        except urllib.error.HTTPError as exc:
            _warn(self.url, exc.headers)
            try:
                message = json.load(exc)["error"]
            except (ValueError, KeyError, TypeError):
                message = f"HTTP {exc.code} {exc.reason}"
            raise PitlogError(f"{message} (server {self.url})") from None
        except (urllib.error.URLError, OSError) as exc:
            raise Unreachable(f"cannot reach the server {self.url}: "
                              f"{getattr(exc, 'reason', exc)}") from None


def _typed(body: Any, header: str | None) -> Any:
    """A served answer that is a query's rows, with the DuckDB type of each column the server
    named (TYPES_HEADER): its DATE strings back to dates, and the rows carrying their types,
    so that an export of them has the file's types (a date, not a string; a DECIMAL's width;
    an INTEGER, not a BIGINT). Anything else unchanged."""
    if not header or not isinstance(body, list):
        return body
    try:
        types = [(str(c), str(t)) for c, t in json.loads(header)]
    except (ValueError, TypeError):
        return body
    dates = [c for c, t in types if t == "DATE"]
    for row in body:
        for c in dates:
            if isinstance(row, dict) and isinstance(row.get(c), str):
                try:
                    row[c] = date.fromisoformat(row[c])
                except ValueError:
                    pass
    return Rows.of_types(body, types)


@dataclass(frozen=True)
class Named:
    """Where a server's header says a string is to be read back as another value: paths, each
    the keys from the answer's top (a list's items at the list's own path), as a server since
    session 43 names them; or bare keys, anywhere, as one before it did (a JSON list of keys,
    or the keys joined by commas)."""

    paths: frozenset[tuple[str, ...]] = frozenset()
    keys: frozenset[str] = frozenset()

    @classmethod
    def of(cls, header: str | None) -> Named:
        if not header:
            return cls()
        try:
            named = json.loads(header)
        except ValueError:
            return cls(keys=frozenset(filter(None, header.split(","))))
        if not isinstance(named, list):
            return cls()
        return cls(paths=frozenset(tuple(p) for p in named if isinstance(p, list)
                                   and all(isinstance(k, str) for k in p)),
                   keys=frozenset(k for k in named if isinstance(k, str)))

    def holds(self, at: tuple[str, ...]) -> bool:
        return at in self.paths or bool(at) and at[-1] in self.keys


def _warn(url: str, headers: Any) -> None:
    stale = headers.get(STALE_HEADER) if headers is not None else None
    if stale:  # on stderr: stdout stays the rows
        typer.echo(f"Warning: {stale} (server {url})", err=True)


def server_url(given: str) -> str:
    """--server or PITLOG_SERVER as the URL to ask: `host:port` is taken as http://host:port
    (urllib read it as a URL of scheme `host`: "unknown url type"; an outside review, session
    39). Anything but an http or https URL with a host, and no query, fragment or space (the
    API's path is added after it: a `?` or `#` swallowed it, an internal error; session 40),
    is an Error naming what to give."""
    from urllib.parse import urlsplit

    text = given.strip()
    url = text if "://" in text else f"http://{text}"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- a port that is not a number raises here, not in urlopen
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname \
            or parts.netloc.endswith(":") or "?" in url or "#" in url \
            or any(c.isspace() or not c.isprintable() for c in url):
        raise PitlogError(f"--server (or PITLOG_SERVER) {given!r} is not the URL of a "
                          f"server: give one such as http://127.0.0.1:8750 (the address "
                          f"`pitlog serve` prints)")
    return url


def find(db: Path, server: str | None) -> Client | None:
    token = os.environ.get("PITLOG_TOKEN") or None
    if server is not None:  # `--server ""` too: it names no server (an empty PITLOG_SERVER
        return Client(server_url(server), token)  # is no setting, as for every option)

    found = read(db)
    return Client(found["url"], token, explicit=False) if found else None


def ask(db: Path, server: str | None, path: str, **params: Any) -> Any:
    """The server's answer to GET path?params, or None when no server serves `db` (the caller
    then opens the file). A discovered server that does not answer counts as none; one named
    with --server or PITLOG_SERVER must answer."""
    return ask_waiting(db, server, path, None, **params)


def ask_waiting(db: Path, server: str | None, path: str, wait_s: float | None,
                **params: Any) -> Any:
    """`ask`, waiting `wait_s` for the answer (Client.get)."""
    client = find(db, server)
    if client is None:
        return None
    try:
        return client.get(path, wait_s, **{k: plain_param(v) for k, v in params.items()})
    except Unreachable:
        if client.explicit:
            raise
        return None


def revive(value: Any, decimals: Named = Named(), *, clocks: Named = Named(),
           floats: Named = Named(), at: tuple[str, ...] = ()) -> Any:
    """JSON back to the library's values: times with an offset become datetimes in this
    machine's zone (as DuckDB returns them); strings at a path (`at`: the keys from the top)
    the server named in X-Pitlog-Decimals become exact Decimals, in X-Pitlog-Wall-Clocks
    datetimes without a zone (a wall clock, shown as written), and `nan`, `inf` or `-inf` in
    X-Pitlog-Floats the float."""
    if isinstance(value, str):
        if decimals.holds(at):
            try:
                return Decimal(value)
            except InvalidOperation:  # an older server's bare key: another field of that name
                return value
        if _TIME.fullmatch(value):
            return datetime.fromisoformat(value).astimezone()
        if clocks.holds(at) and _WALL_CLOCK.fullmatch(value):
            return datetime.fromisoformat(value)
        if floats.holds(at) and value in NON_FINITE:
            return float(value)
        return value
    if isinstance(value, list):
        return [revive(v, decimals, clocks=clocks, floats=floats, at=at) for v in value]
    if isinstance(value, dict):
        return {k: revive(v, decimals, clocks=clocks, floats=floats, at=(*at, k))
                for k, v in value.items()}
    return value


def plain_param(value: Any) -> Any:
    """A datetime or date as ISO 8601 for a query string; anything else unchanged."""
    return value.isoformat() if hasattr(value, "isoformat") else value

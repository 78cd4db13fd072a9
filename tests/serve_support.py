"""Helpers of the `pitlog serve` tests: a real server in a subprocess on a free loopback port
(`--port 0`; the URL is read from `<db>.serve.json`), plain HTTP with the standard library, and
a Server-Sent Events reader. The deadlines below only stop a hung test; no test asserts how long
anything took."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from projections.serve import discovery

REPO = Path(__file__).resolve().parent.parent
PITLOG = [sys.executable, "-m", "cli.app"]
HANG_S = 120.0  # a test that waits longer than this is stuck, not slow


def wait_until(check: Callable[[], Any], what: str, proc: subprocess.Popen[bytes] | None = None,
               err: Path | None = None) -> Any:
    deadline = time.monotonic() + HANG_S
    while True:
        got = check()
        if got:
            return got
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the server exited ({proc.returncode}) while waiting for "
                                 f"{what}: {err.read_text() if err else ''}")
        if time.monotonic() > deadline:
            raise AssertionError(f"stuck waiting for {what}")
        time.sleep(0.05)


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def request(url: str, path: str, headers: dict[str, str] | None = None,
            method: str = "GET") -> Response:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=HANG_S)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    finally:
        conn.close()


def query(path: str, **params: Any) -> str:
    items = [(k, x) for k, v in params.items() if v is not None
             for x in (v if isinstance(v, list) else [v])]
    return path + ("?" + urllib.parse.urlencode(items) if items else "")


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    db: Path
    err: Path
    token: str | None = None

    def get(self, path: str, headers: dict[str, str] | None = None) -> Response:
        h = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return request(self.url, path, {**h, **(headers or {})})

    def json(self, path: str) -> Any:
        r = self.get(path)
        assert r.status == 200, (path, r.status, r.body[:500])
        assert r.headers["content-type"].startswith("application/json")
        return r.json()

    def health(self) -> dict[str, Any]:
        return request(self.url, "/health").json()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=HANG_S)


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PITLOG, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=HANG_S, env={**os.environ, **(env or {})})


def start_server(log: Path | str, db: Path, tmp: Path, *args: str,
                 env: dict[str, str] | None = None, token: str | None = None,
                 wait_ready: bool = True) -> Server:
    err = tmp / f"serve-{len(list(tmp.glob('serve-*.err')))}.err"
    full_env = {**os.environ, **(env or {})}
    full_env.pop("PITLOG_SERVER", None)
    if token is not None:
        full_env["PITLOG_TOKEN"] = token
    with err.open("wb") as stderr:
        proc = subprocess.Popen(
            [*PITLOG, "serve", "--log", str(log), "--db", str(db), "--port", "0",
             "--poll-interval", "0.1", *args],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr, stdin=subprocess.DEVNULL,
            env=full_env)
    found = wait_until(lambda: (d := discovery.read(db)) and d["pid"] == proc.pid and d,
                       "the discovery file", proc, err)
    server = Server(proc, found["url"], db, err, token)
    if wait_ready:
        wait_until(lambda: server.health()["ready"], "a ready /health", proc, err)
    return server


def sse_events(server: Server, path: str = "/alerts", *, count: int,
               headers: dict[str, str] | None = None,
               on_open: Callable[[], None] | None = None) -> list[dict[str, Any]]:
    """Read `count` events from an open stream (calling `on_open` once it is open)."""
    parts = urllib.parse.urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=HANG_S)
    h = {"Authorization": f"Bearer {server.token}"} if server.token else {}
    conn.request("GET", path, headers={**h, **(headers or {})})
    r = conn.getresponse()
    assert r.status == 200, r.read()
    assert r.getheader("content-type", "").startswith("text/event-stream")
    events: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    try:
        if on_open is not None:
            on_open()
        while len(events) < count:
            line = r.fp.readline()
            if not line:
                break  # the server ended the stream
            text = line.decode().rstrip("\n")
            if not text:
                if "data" in current:
                    events.append(current)
                current = {}
            elif not text.startswith(":"):
                field, _, value = text.partition(": ")
                current[field] = json.loads(value) if field == "data" else value
    finally:
        conn.close()
    return events


def ingested_store(tmp: Path, lines: str) -> tuple[Path, Path, Path]:
    """(tmp, log, db): device lines ingested into tmp/log and projected into tmp/p.duckdb,
    with a copy tmp/alone.duckdb that no server holds (the CLI reads that file itself)."""
    import shutil

    (tmp / "in.jsonl").write_text(lines)
    log, db = tmp / "log", tmp / "p.duckdb"
    ingested = run_cli("ingest", str(tmp / "in.jsonl"), "--log", str(log))
    assert ingested.returncode == 0, ingested.stderr
    projected = run_cli("project", "--log", str(log), "--db", str(db))
    assert projected.returncode == 0, projected.stderr
    shutil.copy(db, tmp / "alone.duckdb")
    return tmp, log, db


def serving(store: tuple[Path, Path, Path]) -> Iterator[Server]:
    """A server on ingested_store's db for a module's tests, stopped after them."""
    tmp, log, db = store
    s = start_server(log, db, tmp)
    try:
        yield s
    finally:
        assert s.stop() == 0, s.err.read_text()

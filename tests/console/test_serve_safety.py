"""`pitlog serve` is safe to leave running: no token, no bind beyond loopback; with a token,
nothing but /health answers without it; bad requests get one JSON error with a 4xx code and no
traceback; /api/sql keeps `pitlog sql`'s guard and is bounded in rows and time; a stale
discovery file is ignored."""

from __future__ import annotations

import html
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from serve_support import (
    Server,
    query,
    request,
    run_cli,
    sse_events,
    start_server,
    wait_until,
)
from store_template import copy_store

from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections.serve import discovery

TOKEN = "s3cret-token-for-tests"


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("safety")
    log = tmp / "log"
    events = EmbeddedLog(log, partitions=2)
    simulate(events, SimConfig(seed=4, tables=2, rounds=10, irregularities=0.05))
    events.close()
    return tmp, log


@pytest.fixture(scope="module")
def projected(small: tuple[Path, Path]) -> Path:
    """`small` projected once by `pitlog project`: the tests whose point is not the projection
    (a server's answers, a discovery file, a follower's refusal) start from copies of it."""
    tmp, log = small
    db = tmp / "projected.duckdb"
    done = run_cli("project", "--log", str(log), "--db", str(db))
    assert done.returncode == 0, done.stderr
    return db


def _bounded(small: tuple[Path, Path], projected: Path, name: str, timeout: str) -> Any:
    """A server of at most 5 rows an answer and `timeout` seconds a query, on a copy of the
    projected store."""
    tmp, log = small
    s = start_server(log, copy_store(projected, tmp / f"{name}.duckdb"), tmp, "--sql-max-rows",
                     "5", "--sql-timeout", timeout)
    try:
        yield s
    finally:
        assert s.stop() == 0, s.err.read_text()


@pytest.fixture(scope="module")
def server(small: tuple[Path, Path], projected: Path) -> Any:
    yield from _bounded(small, projected, "bounded", "0.5")


def test_a_non_loopback_bind_without_a_token_is_refused_before_anything_starts(
        small: tuple[Path, Path], tmp_path: Path) -> None:
    _, log = small
    db = tmp_path / "never.duckdb"
    for host in ("0.0.0.0", "::", "192.0.2.10", "casino.example"):
        r = run_cli("serve", "--host", host, "--port", "0", "--log", str(log), "--db", str(db),
                    env={"PITLOG_TOKEN": ""})
        assert r.returncode == 1, host
        assert r.stderr.startswith(f"Error: refusing to listen on {host} without a token")
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not db.exists() and not discovery.discovery_path(db).exists()


# `--host localhost` passes check_bind as loopback, so it must be bound as loopback: taken as
# 127.0.0.1, never resolved (a hosts file mapping localhost to a LAN address served the network
# with no token; an outside review, session 37). The address handed to the socket is recorded.
def test_localhost_is_bound_as_127_0_0_1_never_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    from projections.serve import runner

    asked: list[object] = []

    class Recording(socket.socket):
        def bind(self, address: Any) -> None:
            asked.append(address)
            super().bind(address)

    monkeypatch.setattr(runner.socket, "socket", Recording)
    runner.check_bind("localhost", None)  # loopback: no token needed
    sock = runner.bind("localhost", 0)
    try:
        assert asked == [("127.0.0.1", 0)] and sock.getsockname()[0] == "127.0.0.1"
    finally:
        sock.close()


def test_with_a_token_every_request_but_health_needs_it(small: tuple[Path, Path],
                                                         projected: Path) -> None:
    tmp, log = small
    db = copy_store(projected, tmp / "token.duckdb")
    s = start_server(log, db, tmp, "--host", "0.0.0.0", token=TOKEN)
    try:
        for path in ("/api/shoes", "/api/sql?q=SELECT%201", "/metrics", "/alerts?once=1",
                     "/api/nothing-here"):
            for headers in ({}, {"Authorization": "Bearer wrong"},
                            {"Authorization": f"Basic {TOKEN}"},
                            {"Authorization": f"Bearer {TOKEN}x"}):
                r = request(s.url, path, headers)
                assert r.status == 401, (path, headers)
                assert "token" in r.json()["error"]
                assert r.headers["www-authenticate"] == "Bearer"
        assert request(s.url, "/health").status == 200  # a healthcheck has no secret
        # A browser: ?token= once sets an HttpOnly cookie, which then suffices (EventSource
        # and page loads can send no header).
        first = request(s.url, f"/api/shoes?table=T01&token={TOKEN}")
        assert first.status == 200 and first.json()
        assert all(r["table_id"] == "T01" for r in first.json())
        cookie = first.headers["set-cookie"]
        assert cookie.startswith(f"pitlog_token={TOKEN};") and "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        assert request(s.url, "/api/tables", {"Cookie": f"pitlog_token={TOKEN}"}).status == 200
        events = request(s.url, "/alerts?once=1", {"Cookie": f"a=b; pitlog_token={TOKEN}"})
        assert events.status == 200 and events.headers["content-type"].startswith(
            "text/event-stream")
        for bad in ({"Cookie": "pitlog_token=wrong"}, {"Cookie": f"other={TOKEN}"}):
            assert request(s.url, "/api/tables", bad).status == 401
        assert request(s.url, "/api/tables?token=wrong").status == 401
        assert "set-cookie" not in request(s.url, "/api/tables?token=wrong").headers
        assert s.get("/api/shoes").status == 200
        assert s.json("/api/shoes")
        # The CLI sends PITLOG_TOKEN; without it, one clear error line.
        ok = run_cli("shoes", "-f", "json", "--db", str(db), env={"PITLOG_TOKEN": TOKEN})
        assert ok.returncode == 0 and json.loads(ok.stdout)
        refused = run_cli("shoes", "--db", str(db), env={"PITLOG_TOKEN": ""})
        assert refused.returncode == 1
        assert refused.stderr.startswith("Error: missing or wrong token")
    finally:
        assert s.stop() == 0, s.err.read_text()


def _assert_json_error(r: Any, status: int, says: str) -> None:
    assert r.status == status, (r.status, r.body)
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error"} and says in body["error"], body
    assert b"Traceback" not in r.body and b'File "' not in r.body


def test_bad_requests_get_one_json_error_with_a_4xx_code(server: Server) -> None:
    cases = [
        ("/no/such/page", 404, "no such resource"),
        ("/api/shoes?tabel=T01", 400, "unknown parameter tabel"),
        ("/api/replay/NO-SUCH-SHOE", 404, "no shoe 'NO-SUCH-SHOE'"),
        ("/api/anomalies?since=yesterday", 400, "is not a time"),
        ("/api/anomalies?since=2026-11-29T03:00:00%2B00:00&until=2026-11-28T21:00:00-05:00",
         400, "until 2026-11-29 02:00:00 UTC is not after since 2026-11-29 03:00:00 UTC"),
        ("/api/anomalies?code=NOT_A_CODE", 400, "no anomaly code NOT_A_CODE"),
        ("/api/anomalies?severity=huge", 400, "no severity"),
        ("/api/anomalies?statistics=maybe", 400, "use true or false"),
        ("/api/dispute", 400, "give table="),
        ("/api/dispute?table=T01", 400, "either at=TIME"),
        ("/api/dispute?table=T01&shoe=T01-S0001&round=zero", 400, "not an integer"),
        ("/api/dispute?table=T01&shoe=T01-S0001&round=-1", 400, "at least 0"),
        ("/api/dispute?table=T01&at=2001-01-01T00:00:00", 404, "outside any round"),
        ("/api/dispute?table=T99&at=2001-01-01T00:00:00", 404, "T99"),
        ("/api/reconcile?by=planet", 400, "planet"),
        ("/api/reconcile?sigma=lots", 400, "not a number"),
        ("/api/reconcile?tz=Mars/Olympus", 400, "Mars/Olympus"),
        ("/api/conservation?day=someday", 400, "is not a date"),
        ("/api/ledger?status=BOGUS", 400, "unknown ledger status"),
        ("/api/sql", 400, "give the query"),
        ("/api/sql?q=DROP%20TABLE%20events", 400, "read-only queries only"),
        ("/api/sql?q=SELECT%201%3B%20DELETE%20FROM%20events", 400, "one statement"),
        ("/api/sql?q=SELEC%20nonsense", 400, "read-only queries only"),
        ("/api/sql?q=SELECT%20*%20FROM%20no_such_table", 400, "the query failed"),
        ("/alerts?after=minus", 400, "not an alert_seq"),
        ("/alerts?once=yes", 400, "once 'yes': use 1 or true"),
        ("/alerts?once=2", 400, "once '2'"),
        ("/health?x=1", 400, "unknown parameter x; this endpoint takes none"),
        ("/metrics?x=1", 400, "unknown parameter x; this endpoint takes none"),
        ("/api/alerts?limit=0", 400, "at least 1"),
        ("/api/alerts?limit=20000", 400, "at most 10000"),
        ("/api/alerts?after=x", 400, "not an integer"),
        # A parameter given twice, or empty, is refused, not read as the last value or as
        # none (which widened the query to every table); /alerts checks its parameters too
        # and names the one it could not read (an outside review, session 37).
        ("/api/shoes?table=T01&table=T02", 400, "table given 2 times; it takes one value"),
        ("/api/shoes?table=", 400, "table is empty: give it a value"),
        ("/api/anomalies?code=,", 400, "code holds an empty value"),
        ("/api/anomalies?code=LATE_RAISE,", 400, "code holds an empty value"),
        ("/api/reconcile?by=,", 400, "by holds an empty value"),
        ("/dispute?table=T01&at=2026-11-28T23:00:00Z&shoe=T01-S0001&round=3&format=json", 400,
         "give at=TIME, or shoe=SHOE and round=N, or alert=N: one of them"),
        ("/api/anomalies?code=LATE_RAISE&severity=high&severity=low", 400, "severity given 2"),
        ("/alerts?once=1&bogus=1", 400, "unknown parameter bogus"),
        ("/alerts?once=1&after=abc", 400, "after 'abc' is not an alert_seq"),
        ("/alerts?once=1&after=1&after=2", 400, "after given 2 times"),
        # `code` takes several values at /api/anomalies only; the console's filter, one
        ("/alerts-page?code=LATE_RAISE&code=WRONG_PAYOUT&format=json", 400,
         "code given 2 times"),
        # a dispute names a moment or a round, not both: neither half is dropped
        ("/api/dispute?table=T01&at=2026-11-28T23:00:00Z&round=3", 400, "give either at="),
        ("/api/dispute?table=T01&at=2026-11-28T23:00:00Z&shoe=T01-S0001", 400,
         "give either at="),
        ("/api/dispute?table=T01&shoe=T01-S0001", 400, "give either at="),
        ("/api/dispute?table=T01&round=3", 400, "give either at="),
    ]
    for path, status, says in cases:
        _assert_json_error(server.get(path), status, says)
    # ... but a parameter that takes several values may be given again, and the console's
    # forms, which send every field, may leave one empty.
    codes = sorted({a["code"] for a in server.get("/api/anomalies").json()})[:2]
    assert len(codes) == 2, codes  # the small evening's irregularities raise several codes
    each = [server.get(f"/api/anomalies?code={c}").json() for c in codes]
    several = server.get(f"/api/anomalies?code={codes[0]}&code={codes[1]}")
    assert several.status == 200 and len(several.json()) == len(each[0]) + len(each[1]) \
        and {a["code"] for a in several.json()} == set(codes)
    assert server.get("/alerts-page?table=&code=&severity=").status == 200
    _assert_json_error(server.get("/alerts", {"Last-Event-ID": "-3"}), 400, "0 or more")
    _assert_json_error(request(server.url, "/api/shoes", method="POST"), 405,
                       "Method Not Allowed")
    _assert_json_error(request(server.url, "/api/sql?q=DELETE%20FROM%20events",
                               method="DELETE"), 405, "Method Not Allowed")
    # Nothing was written: every event is still there.
    n = server.json(query("/api/sql", q="SELECT count(*) AS n FROM events"))["rows"][0]["n"]
    assert n == sum(EmbeddedLog(server.db.parent / "log").end_offsets().values())


def test_an_empty_window_is_said_on_the_clock_its_times_were_asked_on(
        small: tuple[Path, Path], projected: Path, tmp_path: Path) -> None:
    """The API reads since= and until= on the server's zone, and says an empty window's times
    on it, as they were typed (it said them in UTC); `pitlog anomalies --server` refuses one
    before asking, on its own --tz clock, in the words of the file's answer."""
    _, log = small
    alone = copy_store(projected, tmp_path / "alone.duckdb")
    s = start_server(log, copy_store(projected, tmp_path / "served.duckdb"), tmp_path,
                     env={"PITLOG_TZ": "America/New_York"})
    window = ["--since", "2026-11-28T22:00", "--until", "2026-11-28T21:00", "--tz", "-05:00"]
    try:
        _assert_json_error(
            s.get("/api/anomalies?since=2026-11-28T22:00&until=2026-11-28T21:00"), 400,
            "until 2026-11-28 21:00:00 EST is not after since 2026-11-28 22:00:00 EST: no "
            "moment is in that window")
        served = run_cli("anomalies", "--server", s.url, *window)
    finally:
        assert s.stop() == 0, s.err.read_text()
    on_file = run_cli("anomalies", "--db", str(alone), *window)
    assert served.returncode == on_file.returncode == 1
    assert served.stderr == on_file.stderr == (
        "Error: until 2026-11-28 21:00:00 UTC-05:00 is not after since 2026-11-28 22:00:00 "
        "UTC-05:00: no moment is in that window (since is inclusive, until exclusive); give "
        "the earlier time as since\n")


def test_sql_rows_are_capped_and_a_long_query_is_interrupted(server: Server) -> None:
    got = server.json(query("/api/sql", q="SELECT range AS i FROM range(100) ORDER BY i"))
    assert got["rows"] == [{"i": i} for i in range(5)]
    assert got["truncated"] is True and got["max_rows"] == 5
    exact = server.json(query("/api/sql", q="SELECT range AS i FROM range(5)"))
    assert exact["truncated"] is False and len(exact["rows"]) == 5
    endless = ("SELECT count(*) AS n FROM range(100000000) AS a, range(100000000) AS b "
               "WHERE a.range + b.range = -1")
    _assert_json_error(server.get(query("/api/sql", q=endless)), 400, "was stopped")
    # ... and one stopped while its rows stream (DuckDB's interruption then comes through
    # Arrow as an OSError: it was a 500, session 39)
    streaming = ("SELECT range AS i FROM range(5) UNION ALL "
                 "SELECT range FROM range(10000000000000) WHERE hash(range) < 10")
    _assert_json_error(server.get(query("/api/sql", q=streaming)), 400, "was stopped")
    # The server keeps serving after the interruption, and the follower keeps its connection.
    assert server.health()["ready"] is True
    assert server.json(query("/api/sql", q="SELECT 1 AS one"))["rows"] == [{"one": 1}]


@pytest.fixture(scope="module")
def roomy_server(small: tuple[Path, Path], projected: Path) -> Any:
    """As `server`, with time enough for 100 MB of rows on a busy machine (its 0.5 s stopped
    them there: the test then asserted how long a query took)."""
    yield from _bounded(small, projected, "roomy", "600")


_ENDLESS = ("SELECT count(*) AS n FROM range(100000000) AS a, range(100000000) AS b "
            "WHERE a.range + b.range = -1")


def test_a_query_whose_client_went_away_is_stopped(roomy_server: Server) -> None:
    """A client that gives up (a `pitlog sql` stopped with Ctrl-C, a dropped connection)
    stops its query: the server went on running it to its time limit (here 600 s), spending
    the writer's cores on an answer no one would read (a closing note's finding, session 43).
    The server logs the stop and goes on answering."""
    import http.client
    import urllib.parse

    parts = urllib.parse.urlsplit(roomy_server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("GET", query("/api/sql", q=_ENDLESS))
    conn.close()  # gone before any answer
    wait_until(lambda: "its client went away" in roomy_server.err.read_text(),
               "the server's log line of the stopped query", roomy_server.proc, roomy_server.err)
    (line,) = [x for x in roomy_server.err.read_text().splitlines() if "its client went away" in x]
    assert "an /api/sql query was stopped after" in line
    assert roomy_server.json(query("/api/sql", q="SELECT 1 AS one"))["rows"] == [{"one": 1}]
    assert roomy_server.health()["ready"] is True


def test_pitlog_sql_through_a_server_keeps_its_own_time_limit_and_says_what_it_cannot_keep(
        server: Server, roomy_server: Server) -> None:
    """`pitlog sql --timeout` was not sent to a server: a query asked to stop after 1 s ran to
    the server's limit (600 s here), and --memory-limit was dropped without a word (noticed in
    session 42). A server stops the query at the client's limit or its own, whichever is less,
    and says which one to raise, as `pitlog sql` on the file does."""
    asked = run_cli("sql", "--server", roomy_server.url, "--timeout", "1", _ENDLESS)
    assert (asked.returncode, asked.stdout) == (1, "")
    assert asked.stderr == (
        "Error: the query ran past its time limit of 1 s and was stopped; narrow it (WHERE, "
        f"LIMIT), or raise the limit with --timeout or PITLOG_SQL_TIMEOUT (server "
        f"{roomy_server.url})\n")
    by_env = run_cli("sql", "--server", roomy_server.url, _ENDLESS,
                     env={"PITLOG_SQL_TIMEOUT": "1.5"})
    assert by_env.returncode == 1 and "time limit of 1.5 s" in by_env.stderr
    more = run_cli("sql", "--server", server.url, "--timeout", "100", _ENDLESS)
    assert (more.returncode, more.stdout) == (1, "")
    assert more.stderr == (
        "Error: the query ran past its time limit of 0.5 s and was stopped; narrow it (WHERE, "
        f"LIMIT), or restart `pitlog serve` with a larger --sql-timeout (server "
        f"{server.url})\n")
    for bad, why in (("0", "more than 0 seconds"), ("nan", "more than 0 seconds"),
                     ("soon", "not a number of seconds"), ("86401", "at most 86400")):
        _assert_json_error(server.get(query("/api/sql", q="SELECT 1", timeout=bad)), 400, why)
    assert server.json(query("/api/sql", q="SELECT 1 AS one", timeout="5"))["rows"] == [
        {"one": 1}]
    # A memory limit cannot be kept: the server's queries share its database's.
    memory = run_cli("sql", "--server", server.url, "--memory-limit", "2GB", "SELECT 1 AS one",
                     "-f", "json")
    assert memory.returncode == 0 and json.loads(memory.stdout) == [{"one": 1}]
    assert memory.stderr == (
        "Warning: --memory-limit was not applied: the server's queries run within its own "
        "memory limit (pitlog serve --memory-limit); stop the server to query the file within "
        "yours\n")
    assert roomy_server.health()["ready"] is True and server.health()["ready"] is True


def test_a_time_limit_as_long_as_the_servers_says_to_raise_the_servers(server: Server) -> None:
    """A client's limit equal to the server's --sql-timeout (0.5 s here): both stopped the
    query, and the Error: said to raise --timeout or PITLOG_SQL_TIMEOUT, which the server caps
    at its own, so the same query stopped again (a review of session 43). Only a larger
    --sql-timeout helps, and the line says so."""
    for args, env in ((("--timeout", "0.5"), None), ((), {"PITLOG_SQL_TIMEOUT": "0.5"})):
        done = run_cli("sql", "--server", server.url, *args, _ENDLESS, env=env)
        assert (done.returncode, done.stdout) == (1, ""), args
        assert done.stderr == (
            "Error: the query ran past its time limit of 0.5 s and was stopped; narrow it "
            "(WHERE, LIMIT), or restart `pitlog serve` with a larger --sql-timeout (server "
            f"{server.url})\n"), args


def test_a_query_asked_to_run_past_the_clients_wait_is_waited_for(
        roomy_server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client gave up after TIMEOUT_S (120 s) whatever --timeout asked, as "cannot reach
    the server" (an outside review, session 43). Here the client's wait is 1 s, in process,
    and the query is asked to stop after 3 s: the server's answer is waited for."""
    from typer.testing import CliRunner

    from cli import client
    from cli.app import app
    from cli.commands import sql
    from events.errors import PitlogError

    monkeypatch.setattr(client, "TIMEOUT_S", 1.0)
    # (the command's copies: raising=False, so the code before it, which had none, is tried)
    monkeypatch.setattr(sql, "TIMEOUT_S", 1.0, raising=False)
    monkeypatch.setattr(sql, "READ_MARGIN_S", 5.0, raising=False)
    done = CliRunner().invoke(app, ["sql", "--server", roomy_server.url, "--timeout", "3",
                                    _ENDLESS])
    # (in process, the error is raised to the caller: cli.app.main prints it as `Error: ...`)
    assert (done.exit_code, done.output) == (1, "")
    assert isinstance(done.exception, PitlogError)
    assert str(done.exception) == (
        "the query ran past its time limit of 3 s and was stopped; narrow it (WHERE, LIMIT), "
        f"or raise the limit with --timeout or PITLOG_SQL_TIMEOUT (server {roomy_server.url})")


def test_sql_answers_are_capped_by_their_bytes_too(roomy_server: Server) -> None:
    """Five rows of 20 MB each are 100 MB: the answer holds the rows that fit in 64 MiB (three)
    and says it was cut (an outside review, session 38: a row cap alone let one request build
    a 1 GB answer in the writer's memory)."""
    server = roomy_server
    got = server.json(query("/api/sql", q="SELECT repeat('x', 20000000) AS s FROM range(5)"))
    assert got["truncated"] is True and len(got["rows"]) == 3
    assert {len(r["s"]) for r in got["rows"]} == {20_000_000}
    # rows of uneven size: each counted as it is, not as the batch's mean (three rows of 30 MB
    # passed for 54 MB: 90 MB held, past the cap)
    uneven = server.json(query("/api/sql", q="SELECT repeat('x', CASE WHEN range < 3 THEN "
                                             "30000000 ELSE 1 END) AS s FROM range(5)"))
    assert uneven["truncated"] is True
    assert [len(r["s"]) for r in uneven["rows"]] == [30_000_000, 30_000_000]
    assert server.health()["ready"] is True
    # the CLI through the server: every row asked for, or an Error and nothing written (an
    # outside review, session 39: an export of 5 of 9 rows, exit 0, a warning on stderr)
    nine = "SELECT length(repeat('x', 20000000)) AS n FROM range(9)"
    out = server.db.parent / "cut.parquet"
    for args in (("-f", "json"), ("-f", "csv"), ("-f", "parquet", "-o", str(out)),
                 ("--limit", "0"), ("--limit", "7")):
        cli = run_cli("sql", "--server", server.url, *args, nine)
        assert cli.returncode == 1 and cli.stdout == "" and not out.exists(), (args, cli.stdout)
        assert cli.stderr.startswith("Error: the server's answer was cut at 5 rows (it returns "
                                     "at most 5 rows"), cli.stderr
        assert "nothing was written" in cli.stderr
    # a row past 64 MiB alone: an Error, not "No rows"
    cli = run_cli("sql", "--server", server.url, "SELECT repeat('x', 70000000) AS big")
    assert cli.returncode == 1 and "was cut at 0 rows" in cli.stderr, cli.stderr
    # rows shown within what came: shown, and the count not claimed
    cli = run_cli("sql", "--server", server.url, "-f", "json", "--limit", "3", nine)
    assert cli.returncode == 0 and json.loads(cli.stdout) == [{"n": 20_000_000}] * 3
    assert cli.stderr == ("3 of more than 5 rows shown (the server counts no further): "
                          "--limit N for more\n")
    from projections.serve.sql import MAX_BYTES
    assert MAX_BYTES == 64 * 1024 * 1024  # as docs/operating.md states


def test_sql_columns_named_alike_keep_their_own_values_through_the_server(
        server: Server) -> None:
    """Rows are dicts: `SELECT 1 AS a, 2 AS a` answered a = 2 alone. Now as `pitlog sql`."""
    got = server.json(query("/api/sql", q="SELECT 1 AS a, 2 AS a, 3 AS a_1, 4 AS A"))
    assert got["rows"] == [{"a": 1, "a_2": 2, "a_1": 3, "A_3": 4}]
    assert got["columns"] == ["a", "a_2", "a_1", "A_3"]
    # A value no JSON can carry is a 400 naming its column, as `pitlog sql` says it (was a 500).
    _assert_json_error(server.get(query("/api/sql", q="SELECT 'infinity'::TIMESTAMP AS t")),
                       400, "column 't' holds a value that cannot be written out")


def test_a_query_out_of_memory_through_the_server_names_what_the_user_can_change(
        small: tuple[Path, Path], projected: Path) -> None:
    """DuckDB's own advice (SET threads, SET memory_limit) is what the read-only guard refuses:
    the answer says, as `pitlog sql` on the file does (tests/cli/test_cli_read_only.py), to
    narrow the query or raise the limit, here the server's (an outside review, session 42)."""
    tmp, log = small
    s = start_server(log, copy_store(projected, tmp / "small_memory.duckdb"), tmp,
                     "--memory-limit", "64MB")
    try:
        big = "SELECT list(i) AS l FROM range(30000000) t(i)"  # a list aggregate never spills
        r = s.get(query("/api/sql", q=big))
        assert r.status == 400, r.body
        error = r.json()["error"]
        assert re.fullmatch(
            r"the query ran out of memory \(Out of Memory Error: [^\n]*used\)\); narrow it, or "
            r"raise the limit of the server: restart `pitlog serve` with a larger "
            r"--memory-limit or PITLOG_MEMORY_LIMIT \(now 64MB\)", error), error
        assert "SET " not in error
        cli = run_cli("sql", "--server", s.url, big)
        assert (cli.returncode, cli.stdout) == (1, "")
        (line,) = cli.stderr.splitlines()
        assert re.fullmatch(r"Error: the query ran out of memory \(Out of Memory Error: [^\n]*"
                            r"used\)\); narrow it, or raise the limit of the server: restart "
                            r"`pitlog serve` with a larger --memory-limit or PITLOG_MEMORY_LIMIT "
                            r"\(now 64MB\) \(server " + re.escape(s.url) + r"\)", line), line
        assert s.health()["ready"] is True  # the follower keeps projecting
    finally:
        assert s.stop() == 0, s.err.read_text()


def test_sql_through_the_server_reads_no_file_url_or_setting(server: Server) -> None:
    """The serving process holds the writer connection, so /api/sql runs on its instance:
    external access is off there too (sql_console.seal_writer), and cannot be turned back on."""
    for q in ("SELECT * FROM read_csv('/etc/passwd')",
              "SELECT content FROM read_blob('/etc/hostname')",
              "SELECT * FROM glob('/root/**')",
              "SELECT content FROM read_text('/proc/self/environ')",
              "SELECT * FROM 'http://127.0.0.1:9/x.parquet'"):
        _assert_json_error(server.get(query("/api/sql", q=q)), 400, "disabled by configuration")
    setting = server.json(query(
        "/api/sql", q="SELECT current_setting('enable_external_access') AS on_"))
    assert setting["rows"] == [{"on_": False}]
    _assert_json_error(server.get(query("/api/sql", q="SET enable_external_access = true")),
                       400, "read-only")
    assert server.health()["ready"] is True  # the follower still projects on that instance


def test_a_write_the_guard_missed_is_still_refused_by_the_read_only_transaction(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second lock alone: with the guard switched off, DuckDB refuses the write itself."""
    from events.errors import PitlogError
    from projections.serve import sql
    from projections.serve.state import ServeState

    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    try:
        con.execute("CREATE TABLE kept (n INTEGER)")
        monkeypatch.setattr(sql, "check_read_only", lambda q: None)
        state = ServeState(con)
        for write in ("INSERT INTO kept VALUES (1)", "DROP TABLE kept",
                      "CREATE TABLE added (n INTEGER)"):
            with pytest.raises(PitlogError, match="read-only mode"):
                sql.bounded_query(state, write)
        assert con.execute("SELECT count(*) FROM kept").fetchall() == [(0,)]
        assert con.execute("SELECT count(*) FROM duckdb_tables() "
                           "WHERE table_name = 'added'").fetchall() == [(0,)]
        assert sql.bounded_query(state, "SELECT count(*) AS n FROM kept") == \
            (["n"], [{"n": 0}], False)
    finally:
        con.close()


def test_alerts_stream_needs_no_poll_to_end_with_once(server: Server) -> None:
    got = sse_events(server, "/alerts?once=1", count=10_000)
    seqs = [int(e["id"]) for e in got]
    assert seqs == sorted(seqs) and seqs == list(range(1, len(seqs) + 1))


def test_a_stale_discovery_file_is_ignored(projected: Path, tmp_path: Path) -> None:
    db = copy_store(projected, tmp_path / "stale.duckdb")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    discovery.discovery_path(db).write_text(json.dumps(
        {"url": "http://127.0.0.1:9", "pid": dead.pid, "db": str(db)}))
    assert discovery.read(db) is None
    r = run_cli("shoes", "-f", "json", "--db", str(db))
    assert r.returncode == 0, r.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        n = con.execute("SELECT count(*) FROM shoes").fetchall()[0][0]
    finally:
        con.close()
    assert len(json.loads(r.stdout)) == n > 0
    # A server named explicitly must answer.
    named = run_cli("shoes", "--db", str(db), "--server", "http://127.0.0.1:9")
    assert named.returncode == 1 and named.stderr.startswith("Error: cannot reach the server")


@pytest.mark.parametrize("url", ["http://192.0.2.7:8750", "http://pitlog.example:8750",
                                 "https://127.0.0.1:8750", "http://127.0.0.1:port"])
def test_a_discovery_file_naming_another_machine_is_ignored(tmp_path: Path, url: str) -> None:
    """The server writes the address its socket is bound to, so one of this machine's. A file
    planted beside the database with a live pid and any other URL was followed: every query
    command sent PITLOG_TOKEN there and printed its answers as this database's."""
    db = tmp_path / "pitlog.duckdb"
    discovery.discovery_path(db).write_text(json.dumps(
        {"url": url, "pid": os.getpid(), "db": str(db.resolve())}))
    assert discovery.read(db) is None
    discovery.discovery_path(db).write_text(json.dumps(
        {"url": "http://127.0.0.1:8750", "pid": os.getpid(), "db": str(db.resolve())}))
    assert discovery.read(db)["url"] == "http://127.0.0.1:8750"  # loopback: this machine


def test_a_discovery_file_copied_with_its_database_is_ignored(tmp_path: Path) -> None:
    """A copy of a live data folder carries the server's file naming the original database:
    the copy's queries went to the server of the original."""
    original, copy = tmp_path / "live" / "pitlog.duckdb", tmp_path / "copy" / "pitlog.duckdb"
    copy.parent.mkdir()
    discovery.discovery_path(copy).write_text(json.dumps(
        {"url": "http://127.0.0.1:8750", "pid": os.getpid(), "db": str(original.resolve())}))
    assert discovery.read(copy) is None


def test_a_taken_port_is_one_error_line(server: Server, tmp_path: Path) -> None:
    port = server.url.rsplit(":", 1)[1]
    r = run_cli("serve", "--port", port, "--log", str(tmp_path / "log"),
                "--db", str(tmp_path / "x.duckdb"))
    assert r.returncode == 1 and r.stderr.startswith(f"Error: cannot listen on 127.0.0.1:{port}")
    assert "Traceback" not in r.stderr


def test_a_follower_that_stops_turns_health_red_and_reads_go_on(
        small: tuple[Path, Path], projected: Path, tmp_path: Path) -> None:
    """The database was built from another log: the follower refuses to mix them and stops;
    /health says so with a 503, and the API still answers from what is committed, saying with
    every answer that it is stale (X-Pitlog-Stale), which the CLI prints as a warning on stderr
    (it printed the rows alone, as if current)."""
    _, log = small
    db = copy_store(projected, tmp_path / "other.duckdb")
    other = tmp_path / "another-log"
    events = EmbeddedLog(other, partitions=2)
    simulate(events, SimConfig(seed=9, tables=1, rounds=3))
    events.close()
    s = start_server(other, db, tmp_path, wait_ready=False)
    try:
        health = wait_until(lambda: (h := s.health())["error"] and h, "the follower's error",
                            s.proc, s.err)
        r = request(s.url, "/health")
        assert r.status == 503 and health["ready"] is False
        assert health["status"] == "failed"
        assert "the follower stopped" in health["error"] and str(log) in health["error"]
        assert s.json("/api/shoes")  # what was committed is still served
        stale = request(s.url, "/api/shoes").headers["x-pitlog-stale"]
        assert stale.startswith("the server stopped following the log (the follower stopped")
        # it stopped before its first commit: the store as it was when the server started
        assert "answers are the store's as it was when the server started" in stale
        assert stale.endswith("records behind: restart `pitlog serve`")
        cli = run_cli("shoes", "--server", s.url, "--format", "json")
        assert cli.returncode == 0 and json.loads(cli.stdout)
        assert cli.stderr.startswith("Warning: the server stopped following the log")
        assert cli.stderr.rstrip().endswith(f"(server {s.url})")
        # an error answer warns too: to a stale server a table added since is "no table"
        missing = run_cli("anomalies", "--table", "T404", "--server", s.url)
        assert missing.returncode == 1
        warning, error = missing.stderr.splitlines()
        assert warning.startswith("Warning: the server stopped following the log")
        assert error.startswith("Error: no table 'T404' in the store")
        # The console's pages say it at their top, the printable incident report too.
        shoe = s.json("/api/shoes")[0]
        for path in ("/tables", "/alerts-page", "/replay",
                     query("/incident", table=shoe["table_id"], shoe=shoe["shoe_id"], round=1)):
            page = request(s.url, path)
            assert page.status == 200 and page.headers["x-pitlog-stale"] == stale, path
            body = page.body.decode()
            banner = body[body.index('<div class="stale" role="alert"'):]
            assert banner[banner.index(">") + 1:banner.index("</div>")] == \
                f"Not current: {html.escape(stale, quote=True)}", path
            assert body.index("<body") < body.index('class="stale"') < body.index("<h1"), path
    finally:
        assert s.stop() == 0, s.err.read_text()


def test_a_following_server_sends_no_stale_warning(server: Server) -> None:
    """X-Pitlog-Stale is the stopped follower's alone: a server following its log answers
    without it, and the CLI asking it prints no warning."""
    r = request(server.url, "/api/shoes")
    assert r.status == 200 and "x-pitlog-stale" not in r.headers
    page = request(server.url, "/tables")
    assert page.status == 200 and "x-pitlog-stale" not in page.headers
    assert b'class="stale"' not in page.body and b"Not current" not in page.body
    cli = run_cli("shoes", "--server", server.url, "--format", "json")
    assert cli.returncode == 0 and json.loads(cli.stdout) and cli.stderr == ""


def test_the_sql_endpoint_answers_nan_and_infinity_as_text_it_names(server: Server) -> None:
    """JSON has no NaN: `SELECT 'NaN'::DOUBLE` through the server was an internal error (500),
    and the CLI asks a running server by itself. Then null, which the CLI printed as an empty
    cell; now DuckDB's text of it, however deep, its paths named in X-Pitlog-Floats so the CLI
    reads the float back (tests/console/test_sql_values.py); the string 'nan' is no float."""
    r = request(server.url, query("/api/sql", q="SELECT 'NaN'::DOUBLE AS n, "
                                                "[1.5, 'inf'::DOUBLE] AS l, 2.5::DOUBLE AS x, "
                                                "'nan' AS s"))
    assert r.status == 200
    body = json.loads(r.body)
    assert body["columns"] == ["n", "l", "x", "s"]
    assert body["rows"] == [{"n": "nan", "l": [1.5, "inf"], "x": 2.5, "s": "nan"}]
    assert json.loads(r.headers["x-pitlog-floats"]) == [["rows", "l"], ["rows", "n"]]

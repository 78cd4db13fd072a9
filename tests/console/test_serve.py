"""`pitlog serve` against a real uvicorn server in a subprocess (tests/serve_support.py): every
endpoint answers what the library answers on the file, the CLI's query commands print the same
rows through a live server as from the file, /alerts streams and resumes with Last-Event-ID, and
/health and /metrics follow the log as it grows."""

from __future__ import annotations

import json
import re
import signal
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from serve_support import Server, query, run_cli, sse_events, start_server, wait_until

from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections.serve import discovery
from projections.serve.encoding import encoder
from projections.snapshot import snapshot_path

# Three tables; the third is appended while the server runs. LATE_RAISE is frequent, so every
# table raises alerts.
CONFIG = SimConfig(seed=5, tables=3, rounds=30, seats=4, irregularities=0.03,
                   per_code={"LATE_RAISE": 0.3})

# Every query command, in the formats whose output differs most (json: exact values; table:
# what people read, dollars and decimals included).
# Exports whose column types come from the query: a served answer's must be the file's.
REFUSED_BEFORE_ASKING = ("ledger-empty-status", "reconcile-empty-by", "sql-empty")
EXPORTS: dict[str, list[str]] = {
    "reconcile": ["reconcile", "--by", "table", "--by", "day", "-f", "parquet"],
    "conservation": ["conservation", "--by", "table", "--by", "day", "-f", "parquet"],
    "ledger": ["ledger", "-f", "parquet"],
}

COMMANDS: dict[str, list[str]] = {
    "shoes": ["shoes", "-f", "json"],
    "shoes-table": ["shoes", "--table", "T02"],
    "replay": ["replay", "T01-S0001", "-f", "json"],
    "anomalies": ["anomalies", "-f", "json"],
    # --code comma-separated, as the server's `code` takes it: the file read "A,B" as one
    # unknown code where a running server listed both (an outside review, session 37)
    "anomalies-codes": ["anomalies", "--code", "LATE_RAISE,wrong_settlement", "-f", "json"],
    "anomalies-codes-repeated": ["anomalies", "--code", "LATE_RAISE", "--code", "WRONG_SETTLEMENT",
                                 "-f", "json"],
    "anomalies-filtered": ["anomalies", "--severity", "medium", "--table", "T01",
                           "--since", "2026-01-01T00:00:00", "-f", "csv"],
    "dispute": ["dispute", "--table", "T01", "--round", "T01-S0001:2", "-f", "json"],
    "dispute-table": ["dispute", "--table", "T01", "--round", "T01-S0001:2"],
    "dispute-outside": ["dispute", "--table", "T01", "--at", "2001-01-01T00:00:00"],
    "reconcile": ["reconcile", "--by", "table", "--by", "day", "-f", "json"],
    "reconcile-table": ["reconcile"],
    "ledger": ["ledger", "--exceptions", "-f", "json"],
    "conservation": ["conservation", "-f", "json"],
    "ledger-day": ["ledger", "--day", "2026-11-28", "--tz", "America/New_York",
                   "--gaming-day-start", "18:10", "-f", "json"],
    "conservation-no-day": ["conservation", "--day", "2001-01-01"],
    "anomalies-no-day": ["anomalies", "--day", "2001-01-01", "--tz", "America/New_York"],
    "anomalies-day": ["anomalies", "--day", "2026-11-28", "--tz", "America/New_York", "-f",
                      "json"],
    "sql": ["sql", "SELECT table_id, count(*) AS n, max(occurred_at) AS last FROM events "
                   "GROUP BY table_id ORDER BY table_id", "-f", "json"],
    "unknown-shoe": ["replay", "NO-SUCH-SHOE"],
    # An empty value the command refuses itself, before a server is asked: the same words
    # either way (through a server they said "status is empty: give it a value"; a second
    # outside review, session 37).
    "ledger-empty-status": ["ledger", "--status", ""],
    "reconcile-empty-by": ["reconcile", "--by", ""],
    "sql-empty": ["sql", ""],
    # A wall-clock time (no zone) is shown as written either way (the server named it in
    # X-Pitlog-Wall-Clocks; it printed "2026-11-28T18:01:29.500000"); a text that looks like
    # one stays text.
    "sql-wall-clock": ["sql", "SELECT TIMESTAMP '2026-11-28 18:01:29.5' AS wall, "
                              "[TIMESTAMP '2026-11-28 18:01:29'] AS walls, "
                              "'2026-11-28T18:01:29.500000' AS text", "--tz", "America/New_York"],
    # ... in a list too, and under a name a header cannot hold raw (Cyrillic, a comma); a
    # decimal column named as the answer's own `columns` field (the server's answer was an
    # internal error, or these differed from the file's).
    "sql-wall-clock-json": ["sql", "SELECT TIMESTAMP '2026-11-28 18:01:29.5' AS wall, "
                                   "[TIMESTAMP '2026-11-28 18:01:29'] AS walls, "
                                   "TIMESTAMP '2026-11-28 18:01:29' AS \"время, a\", "
                                   "1.5::DECIMAL(4, 2) AS \"columns\"", "-f", "json"],
    # A TIME (the server's answer was an internal error), an INTERVAL (it came back as
    # [0, 3, 0]) and a MAP (its pairs could not be written out) as the file's JSON has them;
    # two columns of one name, one of them a TIME.
    "sql-time-interval-map-json": ["sql", "SELECT TIME '12:34:56.5' AS t, INTERVAL 3 DAY AS i, "
                                          "MAP {'a': 1, 'b': 2} AS m, 7 AS t", "-f", "json"],
    # DuckDB's message of two lines on one either way (the server's said \x0a between them),
    # and a file read refused in the same words (the server said "failed"; session 39).
    "sql-unknown-table": ["sql", "SELECT * FROM event"],
    # a HUGEINT (sum() of integer cents) an integer either way (through a server it was an
    # exact decimal, printed 5925000.0), a DECIMAL of scale 0 DuckDB's 3.0 either way
    "sql-hugeint-json": ["sql", "SELECT sum(amount_cents) AS s, 3::DECIMAL(10, 0) AS d "
                                "FROM ledger", "-f", "json"],
    "sql-file-read": ["sql", "SELECT * FROM read_csv('/etc/hostname')"],
}


@dataclass
class Evening:
    tmp: Path
    log: Path
    db: Path
    server: Server
    direct: dict[str, tuple[int, str, str]]
    expected: dict[str, Any]


def _expected(db: Path) -> dict[str, Any]:
    """What the library answers on the file, encoded as the API encodes it (zone UTC)."""
    from projections.anomalies import AnomalyFilter, list_anomalies
    from projections.dispute import dispute
    from projections.queries import list_shoes
    from projections.reconcile import conservation, ledger_rows, reconcile
    from projections.replay import replay_shoe

    con = duckdb.connect(str(db), read_only=True)
    try:
        r = replay_shoe(con, "T01-S0001")
        d = dispute(con, "T01", shoe="T01-S0001", round_no=2)
        found = {
            "shoes": list_shoes(con, table="T02"),
            "replay": {"shoe": r.shoe, "events": r.events, "hands": r.hands},
            "anomalies": list_anomalies(con, AnomalyFilter(severity="medium")),
            "dispute": {"round": d.round, "cards": d.cards, "announcements": d.announcements,
                        "wagers": d.wagers, "settlements": d.settlements,
                        "anomalies": d.anomalies, "also_in_play": d.also_in_play},
            "reconcile": reconcile(con, ["table", "shift"]),
            "ledger": ledger_rows(con, exceptions_only=True),
            "conservation": conservation(con),
            "alerts": con.execute("SELECT count(*) FROM alerts").fetchall()[0][0],
            "profiles": dict(con.execute(
                "SELECT table_id, arg_max(profile, seq) FROM paytables GROUP BY ALL").fetchall()),
            # The table's last dealer event: a tap-in names the dealer, a tap-out leaves none.
            "dealers": dict(con.execute(
                "SELECT table_id, CASE WHEN event_type = 'DealerTappedIn' THEN dealer_id END "
                "FROM events WHERE event_type IN ('DealerTappedIn', 'DealerTappedOut') "
                "QUALIFY row_number() OVER (PARTITION BY table_id ORDER BY seq DESC) = 1"
            ).fetchall()),
            "last_round": {t: [shoe, n] for t, shoe, n in con.execute(
                "SELECT table_id, shoe_id, round_no FROM events WHERE round_no IS NOT NULL "
                "QUALIFY row_number() OVER (PARTITION BY table_id ORDER BY seq DESC) = 1"
            ).fetchall()},
        }
    finally:
        con.close()
    return json.loads(json.dumps(found, default=encoder(UTC)))


@pytest.fixture(scope="module")
def evening(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("serve")
    log, db = tmp / "log", tmp / "pit.duckdb"
    events = EmbeddedLog(log, partitions=4)
    simulate(events, CONFIG, only=[0, 1])
    events.close()
    done = run_cli("project", "--log", str(log), "--db", str(db))
    assert done.returncode == 0, done.stderr
    direct = {}
    for name, args in COMMANDS.items():
        r = run_cli(*args, "--db", str(db))
        direct[name] = (r.returncode, r.stdout, r.stderr)
    for name, args in EXPORTS.items():
        r = run_cli(*args, "--out", str(tmp / f"direct-{name}.parquet"), "--db", str(db))
        assert r.returncode == 0, r.stderr
    expected = _expected(db)
    server = start_server(log, db, tmp)
    try:
        yield Evening(tmp, log, db, server, direct, expected)
    finally:
        assert server.stop() == 0, server.err.read_text()


@pytest.mark.slow
def test_cli_query_commands_print_the_same_rows_through_a_live_server(evening: Evening) -> None:
    # The server holds the file and publishes no copy: a command that printed rows can only
    # have asked the server.
    assert not snapshot_path(evening.db).exists()
    for name, args in COMMANDS.items():
        r = run_cli(*args, "--db", str(evening.db))
        code, out, err = evening.direct[name]
        assert r.returncode == code, name
        if "json" in args and code == 0:
            # The same values; DuckDB may print a decimal with another number of digits when
            # its type comes back from the server's JSON instead of from the query.
            assert json.loads(r.stdout) == json.loads(out), name
        else:
            assert r.stdout == out, name
        if code == 0:
            assert out.strip(), name  # something was printed: the comparison means something
        elif name in REFUSED_BEFORE_ASKING:  # the very same line: no server was asked
            assert r.stderr == err and err.startswith("Error: "), name
        else:  # the same one-line error, saying which server answered
            assert r.stderr.startswith(err.strip()) and evening.server.url in r.stderr, name
    codes = json.loads(evening.direct["anomalies-codes"][1])
    assert {a["code"] for a in codes} == {"LATE_RAISE", "WRONG_SETTLEMENT"}
    assert evening.direct["anomalies-codes"][1] == evening.direct["anomalies-codes-repeated"][1]
    assert evening.direct["unknown-shoe"][0] == 1
    assert [evening.direct[name][0] for name in REFUSED_BEFORE_ASKING] == [1, 1, 1]
    assert evening.direct["dispute-outside"][0] == 1
    # (the loop's comparison holds 3 == 3.0: the types are checked here, either way)
    served = run_cli(*COMMANDS["sql-hugeint-json"], "--db", str(evening.db))
    for answer in (evening.direct["sql-hugeint-json"][1], served.stdout):
        (row,) = json.loads(answer)
        assert (type(row["s"]), type(row["d"]), row["d"]) == (int, float, 3.0), answer
        assert row["s"] > 0
    assert evening.direct["sql-unknown-table"][2].startswith(
        "Error: the query failed: Catalog Error: Table with name event does not exist! Did you "
        "mean \"")
    assert evening.direct["sql-file-read"][2].startswith(
        "Error: the query was refused: Permission Error: ")
    assert evening.direct["conservation-no-day"][0] == 1
    assert evening.direct["anomalies-no-day"][0] == 1
    assert json.loads(evening.direct["anomalies-day"][1])  # the day's anomalies
    assert json.loads(evening.direct["ledger-day"][1])  # the day's rows, not an empty list
    assert json.loads(evening.direct["sql-time-interval-map-json"][1]) == [
        {"t": "12:34:56.5", "i": "3 days", "m": {"a": 1, "b": 2}, "t_1": 7}]
    assert "│ 2026-11-28 18:01:29 │ 2026-11-28T18:01:29 │ 2026-11-28T18:01:29.500000 │" in \
        evening.direct["sql-wall-clock"][1]


def test_a_dispute_error_through_a_server_in_another_zone_is_worded_on_the_commands_clock(
        evening: Evening) -> None:
    """A server started with PITLOG_TZ=America/New_York, a CLI with no zone of its own (UTC):
    the file's answer said "... UTC", the served one "... EST", since the CLI sent no tz= and
    the server fell back to its own. The CLI now always sends its zone."""
    db = evening.tmp / "new-york.duckdb"  # the same log's store (evening.db is held)
    assert run_cli("project", "--log", str(evening.log), "--db", str(db)).returncode == 0
    server = start_server(evening.log, db, evening.tmp, env={"PITLOG_TZ": "America/New_York"})
    try:
        served = run_cli(*COMMANDS["dispute-outside"], "--db", str(db))
    finally:
        assert server.stop() == 0, server.err.read_text()
    code, _, err = evening.direct["dispute-outside"]
    assert served.returncode == code == 1 and server.url in served.stderr
    assert served.stderr.startswith(err.strip()) and " UTC" in err


@pytest.mark.parametrize("name", EXPORTS)
def test_an_export_through_a_live_server_has_the_files_column_types(evening: Evening,
                                                                    name: str) -> None:
    """Through the server the rows came back as JSON and their Parquet types were guessed from
    the values: gaming_day a string, not a date; DECIMAL(38,2) as DECIMAL(5,2); the ledger's
    INTEGER columns as BIGINT. The server now names each column's type (X-Pitlog-Types)."""
    import pyarrow.parquet as pq

    served = evening.tmp / f"served-{name}.parquet"
    r = run_cli(*EXPORTS[name], "--out", str(served), "--db", str(evening.db))
    assert r.returncode == 0, r.stderr
    direct = pq.read_table(evening.tmp / f"direct-{name}.parquet")
    got = pq.read_table(served)
    assert got.schema == direct.schema
    assert got.num_rows == direct.num_rows > 0 and got.equals(direct)


def test_a_types_header_that_is_not_a_type_name_is_never_run(tmp_path: Path) -> None:
    """X-Pitlog-Types comes from whoever answers at --server: its types are written into SQL
    when the rows are exported (export._arrow_types), so a header carrying statements would
    have run them (a COPY writing a file, here). Only a plain type name is kept; the column
    is typed by its values."""
    import pyarrow as pa

    from cli.client import _typed
    from projections.export import arrow_table

    target = tmp_path / "owned.csv"
    header = json.dumps([["a", f"INTEGER) AS a; COPY (SELECT 'owned' AS x) TO '{target}'; "
                               "SELECT CAST(NULL AS INTEGER"], ["d", "DATE"], ["n", "SMALLINT"]])
    rows = _typed([{"a": 1, "d": "2026-11-28", "n": 2}], header)
    table = arrow_table(rows, ["a", "d", "n"])
    assert not target.exists()
    assert table.schema.types == [pa.int64(), pa.date32(), pa.int16()]


@pytest.mark.parametrize("command", ["reconcile", "conservation", "ledger", "anomalies"])
def test_an_empty_day_is_refused_whether_a_server_runs_or_not(evening: Evening,
                                                               command: str) -> None:
    """The server reads an empty day= as no day (every row); the command refuses it first,
    with the error the file gives, instead of sending it."""
    r = run_cli(command, "--day", "", "--db", str(evening.db))
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == "Error: gaming day '' is not a date: write YYYY-MM-DD\n"


@pytest.mark.parametrize(("command", "option"), [
    ("reconcile", "--table"), ("conservation", "--table"), ("ledger", "--table"),
    ("ledger", "--shoe"), ("anomalies", "--table"), ("anomalies", "--shoe"),
    ("shoes", "--table")])
def test_an_empty_table_or_shoe_is_refused_whether_a_server_runs_or_not(
        evening: Evening, command: str, option: str) -> None:
    """An empty table= or shoe= reaches the server as none given (every table's rows); on
    the file it named no table. The option refuses it, so both answer the same."""
    r = run_cli(command, option, " ", "--db", str(evening.db))
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == (f"Error: Invalid value for '{option}': is empty: give a value or "
                        "leave the option out\n")


def test_project_refuses_a_database_a_server_holds(evening: Evening) -> None:
    r = run_cli("project", "--log", str(evening.log), "--db", str(evening.db))
    assert r.returncode == 1
    assert r.stderr.startswith(f"Error: {evening.db} is held by `pitlog serve` at "
                               f"{evening.server.url}")


def test_server_url_given_explicitly_or_by_environment(evening: Evening, tmp_path: Path) -> None:
    elsewhere = tmp_path / "no-database-here.duckdb"  # no file, no discovery: only the URL
    code, out, _ = evening.direct["shoes"]
    by_option = run_cli("shoes", "-f", "json", "--db", str(elsewhere),
                        "--server", evening.server.url)
    by_env = run_cli("shoes", "-f", "json", "--db", str(elsewhere),
                     env={"PITLOG_SERVER": evening.server.url})
    assert (by_option.returncode, by_option.stdout) == (code, out)
    assert (by_env.returncode, by_env.stdout) == (code, out)


def test_a_server_given_as_host_and_port_is_asked_over_http(evening: Evening,
                                                           tmp_path: Path) -> None:
    """`--server 127.0.0.1:8750`, as an operator types the address, is http://127.0.0.1:8750
    (urllib read `127.0.0.1` as the URL's scheme: "unknown url type"); what is no server's
    URL is an Error naming what to give, whatever the command."""
    elsewhere = tmp_path / "no-database-here.duckdb"
    code, out, _ = evening.direct["shoes"]
    bare = evening.server.url.removeprefix("http://")
    assert bare != evening.server.url and "://" not in bare
    r = run_cli("shoes", "-f", "json", "--db", str(elsewhere), "--server", bare)
    assert (r.returncode, r.stdout, r.stderr) == (code, out, "")
    # a query or fragment swallowed the API's path (an internal error parsing the console's
    # page), and `--server ""` was taken as none given
    for given in ("ftp://127.0.0.1:8750", "http://", "127.0.0.1:port", " ", "",
                  f"{evening.server.url}#x", f"{evening.server.url}?x=1", f"{bare}/a b",
                  f"http:/{bare}"):
        r = run_cli("shoes", "--db", str(elsewhere), "--server", given)
        assert (r.returncode, r.stdout) == (1, ""), given
        assert r.stderr == (f"Error: --server (or PITLOG_SERVER) {given!r} is not the URL of "
                            "a server: give one such as http://127.0.0.1:8750 (the address "
                            "`pitlog serve` prints)\n"), given


def test_every_api_endpoint_answers_what_the_library_answers(evening: Evening) -> None:
    s, want = evening.server, evening.expected
    assert s.json(query("/api/shoes", table="T02")) == want["shoes"]
    assert s.json("/api/replay/T01-S0001") == want["replay"]
    assert s.json(query("/api/anomalies", severity="medium")) == want["anomalies"]
    assert s.json(query("/api/dispute", table="T01", shoe="T01-S0001", round=2)) == \
        want["dispute"]
    assert s.json(query("/api/reconcile", by=["table", "shift"])) == want["reconcile"]
    assert s.json(query("/api/ledger", exceptions="true")) == want["ledger"]
    assert s.json("/api/conservation") == want["conservation"]
    got = s.json(query("/api/sql", q="SELECT 7 AS n, 'x' AS s UNION ALL SELECT 8, 'y' "
                                     "ORDER BY n"))
    assert got == {"columns": ["n", "s"], "rows": [{"n": 7, "s": "x"}, {"n": 8, "s": "y"}],
                   "truncated": False, "max_rows": 10_000}
    stored = s.json(query("/api/sql", q="SELECT alert_seq, alert_id FROM alerts "
                                        "ORDER BY alert_seq"))["rows"]
    polled = s.json(query("/api/alerts", after=2, limit=3))
    assert [(a["alert_seq"], a["alert_id"]) for a in polled] == \
        [(a["alert_seq"], a["alert_id"]) for a in stored[2:5]]
    tables = s.json("/api/tables")
    assert [t["table_id"] for t in tables] == ["T01", "T02"]
    for t in tables:
        assert t["profile"] == want["profiles"][t["table_id"]]
        assert t["dealer"] == want["dealers"][t["table_id"]]
        assert [t["shoe_id"], t["round_no"]] == want["last_round"][t["table_id"]]
        datetime.fromisoformat(t["last_event_at"])
    assert sum(t["open_alerts"] for t in tables) == want["alerts"] > 0


def test_times_carry_the_offset_of_the_casino_zone(evening: Evening) -> None:
    for shoe in evening.server.json("/api/shoes"):
        opened = datetime.fromisoformat(shoe["opened_at"])
        assert opened.utcoffset() is not None and opened.utcoffset().total_seconds() == 0


def _alerts(s: Server) -> list[dict[str, Any]]:
    return s.json(query("/api/sql", q="SELECT alert_seq, alert_id, code, table_id FROM alerts "
                                      "ORDER BY alert_seq"))["rows"]


def test_alerts_stream_resumes_after_last_event_id_and_pushes_new_alerts(
        evening: Evening) -> None:
    s = evening.server
    stored = _alerts(s)
    n = len(stored)
    assert n == evening.expected["alerts"] >= 3
    assert [a["alert_seq"] for a in stored] == list(range(1, n + 1))
    # From the start: every alert once, in order, its id the alert_seq.
    everything = sse_events(s, "/alerts?once=1", count=n + 1)
    assert [int(e["id"]) for e in everything] == list(range(1, n + 1))
    assert all(e["event"] == "alert" and e["data"]["alert_seq"] == int(e["id"])
               for e in everything)
    assert [e["data"]["alert_id"] for e in everything] == [a["alert_id"] for a in stored]
    first = everything[0]["data"]
    assert set(first) >= {"code", "severity", "table_id", "shoe_id", "round_no", "seqs",
                          "explanation", "rule", "occurred_at", "raised_at"}
    # A reconnect with Last-Event-ID gets only what came after it.
    k = n // 2
    resumed = sse_events(s, "/alerts?once=1", count=n, headers={"Last-Event-ID": str(k)})
    assert [int(e["id"]) for e in resumed] == list(range(k + 1, n + 1))
    assert [int(e["id"]) for e in sse_events(s, f"/alerts?once=1&after={n - 1}", count=n)] \
        == [n]

    # Live: a stream open at the last alert receives the alerts of events appended now.
    def append_third_table() -> None:
        events = EmbeddedLog(evening.log)
        simulate(events, CONFIG, only=[2])
        events.close()

    live = sse_events(s, "/alerts", count=1, headers={"Last-Event-ID": str(n)},
                      on_open=append_third_table)
    assert [int(e["id"]) for e in live] == [n + 1]
    assert live[0]["data"]["table_id"] == "T03"


def _metric(text: str, name: str) -> float:
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    assert m, name
    return float(m.group(1))


def test_health_and_metrics_follow_the_log(evening: Evening) -> None:
    s = evening.server
    events = EmbeddedLog(evening.log)
    ends = events.end_offsets()
    events.close()
    total = sum(ends.values())
    wait_until(lambda: s.json(query("/api/sql", q="SELECT count(*) AS n FROM events"))
               ["rows"][0]["n"] == total, "the third table's events")
    health = wait_until(lambda: (h := s.health())["lag_total"] == 0 and h, "lag 0")
    assert health["ready"] is True and health["status"] == "ready" and health["error"] is None
    assert health["lag"] == {str(p): 0 for p in sorted(ends)}
    assert datetime.fromisoformat(health["last_commit"]).tzinfo is not None
    t3 = s.json(query("/api/sql", q="SELECT count(*) AS n FROM events WHERE table_id = 'T03'"))
    appended = t3["rows"][0]["n"]
    r = s.get("/metrics")
    assert r.status == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.body.decode()
    # This process committed exactly the third table's records (the rest was projected before).
    assert _metric(text, "pitlog_events_projected_total") == appended > 0
    assert _metric(text, "pitlog_batches_total") >= 1
    for p in ends:
        assert _metric(text, f'pitlog_lag_records{{partition="{p}"}}') == 0
    raised = len(_alerts(s)) - evening.expected["alerts"]
    assert raised >= 1
    assert _metric(text, "pitlog_alerts_raised_total") == raised
    assert _metric(text, "pitlog_event_to_alert_seconds_count") == raised
    assert _metric(text, 'pitlog_event_to_alert_seconds_bucket{le="+Inf"}') == raised
    assert "# TYPE pitlog_event_to_alert_seconds histogram" in text
    # One log line per committed batch, with its records and lag.
    assert re.search(r"committed \d+ records; lag \d+", evening.server.err.read_text())


def _copy_events(db: Path) -> int:
    try:
        con = duckdb.connect(str(snapshot_path(db)), read_only=True)
    except duckdb.Error:
        return -1  # not published yet
    try:
        return int(con.execute("SELECT count(*) FROM events").fetchall()[0][0])
    finally:
        con.close()


def test_stop_removes_the_discovery_file_and_releases_the_database(tmp_path: Path) -> None:
    log, db = tmp_path / "log", tmp_path / "small.duckdb"
    events = EmbeddedLog(log, partitions=2)
    simulate(events, SimConfig(seed=2, tables=1, rounds=5))
    first = sum(events.end_offsets().values())
    server = start_server(log, db, tmp_path, "--log-format", "json", "--snapshot-every", "0.2")
    assert discovery.read(db)["url"] == server.url
    # Asked for, a read-only copy for stock DuckDB clients is published and catches up.
    wait_until(lambda: _copy_events(db) == first, "the copy of the first events")
    more = simulate(events, SimConfig(seed=3, tables=2, rounds=3), only=[1]).events
    events.close()
    wait_until(lambda: _copy_events(db) == first + more, "the copy of the new events")
    assert server.stop() == 0
    assert not discovery.discovery_path(db).exists()
    lines = [json.loads(line) for line in server.err.read_text().splitlines()]
    assert any(x["message"].startswith("committed") and "lag" in x for x in lines)
    con = duckdb.connect(str(db))  # released: a writer can open it again
    try:
        assert con.execute("SELECT sum(next_offset) FROM checkpoints").fetchall() == \
            [(sum(EmbeddedLog(log).end_offsets().values()),)]
    finally:
        con.close()


@pytest.mark.kafka
def test_serving_a_kafka_topic_follows_it_and_streams_its_alerts(kafka_uri: str,
                                                                 tmp_path: Path) -> None:
    from events.log.registry import open_log

    uri = f"{kafka_uri}?partitions=3"
    with open_log(uri) as log:
        simulate(log, CONFIG, only=[0])
    db = tmp_path / "kafka.duckdb"
    server = start_server(uri, db, tmp_path)
    try:
        before = server.json("/api/alerts")
        assert before and [a["alert_seq"] for a in before] == list(range(1, len(before) + 1))

        def append() -> None:
            with open_log(uri) as log:
                simulate(log, CONFIG, only=[1])

        live = sse_events(server, "/alerts", count=1,
                          headers={"Last-Event-ID": str(len(before))}, on_open=append)
        assert [int(e["id"]) for e in live] == [len(before) + 1]
        assert live[0]["data"]["table_id"] == "T02"
        with open_log(uri) as log:
            ends = log.end_offsets()

        def committed() -> int:  # sum() is a HUGEINT: exact, so JSON carries it as a string
            got = server.json(query("/api/sql", q="SELECT sum(next_offset) AS n "
                                                  "FROM checkpoints"))
            return int(got["rows"][0]["n"])

        wait_until(lambda: committed() == sum(ends.values()), "the whole topic")
        health = server.health()
        assert health["ready"] and health["lag"] == {str(p): 0 for p in sorted(ends)}
        tables = server.json("/api/tables")
        assert [t["table_id"] for t in tables] == ["T01", "T02"]
    finally:
        assert server.stop() == 0, server.err.read_text()


def test_a_stop_ends_an_open_alert_stream_cleanly(tmp_path: Path) -> None:
    # Told to stop, the server ends its alert streams before uvicorn's graceful shutdown:
    # the client sees the stream end, the process exits 0, and no cancelled stream's
    # traceback reaches the log.
    log, db = tmp_path / "log", tmp_path / "small.duckdb"
    events = EmbeddedLog(log, partitions=2)
    simulate(events, SimConfig(seed=4, tables=1, rounds=30, irregularities=0.2))
    events.close()
    server = start_server(log, db, tmp_path)
    raised = len(server.json(query("/api/sql", q="SELECT alert_seq FROM alerts"))["rows"])
    assert raised > 0
    got = sse_events(server, count=10**6,
                     on_open=lambda: server.proc.send_signal(signal.SIGTERM))
    assert len(got) == raised  # every alert, then the end of the stream (not a hang)
    assert server.proc.wait(timeout=120) == 0
    err = server.err.read_text()
    assert "Traceback" not in err and "CancelledError" not in err, err

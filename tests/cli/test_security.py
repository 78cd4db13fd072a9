"""Confidentiality and input limits (docs/integrity.md, "Confidentiality and input limits"):
typed SQL reads nothing but the database, device strings never reach a terminal raw, values the
read side cannot handle are refused, and CLI misuse is one `Error:` line before anything is
written. Real DuckDB, real subprocesses, no mocks."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from audit_scenarios import evening
from repo_paths import REPO

from events.text import visible
from projections.snapshot import snapshot_path
from projections.sql_console import (
    QueryLimitError,
    QueryLimits,
    guarded_connection,
    run_guarded,
)
from projections.store import open_store

# 10^15 pairs against a build side of 1M rows (8 MB): it runs for ever in little memory. A
# billion-row build side outgrew the 1GB limit within seconds once readers stopped spilling.
HUGE_CROSS_JOIN = "SELECT count(*) FROM range(1000000000) a, range(1000000) b"


def _pitlog(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli.app", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    assert "internal error" not in lines[0] and "Traceback" not in proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return evening(tmp_path_factory.mktemp("evening"))


# --- typed SQL -----------------------------------------------------------------------------

READS = [
    "SELECT content FROM read_blob('/etc/shadow')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM glob('/root/**')",
    "SELECT content FROM read_text('/proc/self/environ')",
    "SELECT * FROM 'http://127.0.0.1:9/x.csv'",
    "SELECT * FROM read_parquet('https://example.invalid/x.parquet')",
]


@pytest.mark.parametrize("query", READS)
def test_sql_reads_no_file_or_url(db: Path, query: str, tmp_path: Path) -> None:
    home = tmp_path / "home"  # where DuckDB would install an extension it downloads
    home.mkdir()
    proc = _pitlog("sql", "--db", str(db), query,
                   env={"HOME": str(home), "PITLOG_KAFKA_SASL_PLAIN_PASSWORD": "s3cret"})
    line = _one_error_line(proc)
    assert line.startswith("Error: the query was refused: ")
    assert "disabled by configuration" in line
    assert "s3cret" not in proc.stdout + proc.stderr and "root:" not in proc.stdout
    assert not any(home.rglob("*")), "DuckDB tried to download or install an extension"


@pytest.mark.parametrize("statement", [
    "SET enable_external_access = true", "RESET enable_external_access",
    "SET lock_configuration = false", "SET memory_limit = '100GB'",
    "SET autoinstall_known_extensions = true", "PRAGMA enable_external_access=true"])
def test_the_guard_cannot_be_undone(db: Path, statement: str) -> None:
    with guarded_connection(db) as con:
        with pytest.raises(duckdb.Error, match="configuration has been locked"):
            con.execute(statement)
        (row,) = con.execute(
            "SELECT current_setting('enable_external_access'), "
            "current_setting('lock_configuration'), "
            "current_setting('autoinstall_known_extensions'), "
            "current_setting('autoload_known_extensions')").fetchall()
        assert row == (False, True, False, False)
        with pytest.raises(duckdb.PermissionException):
            con.execute("SELECT * FROM read_csv('/etc/passwd')")
    # And through the command, which refuses it before DuckDB sees it.
    assert _one_error_line(_pitlog("sql", "--db", str(db), statement)).startswith(
        "Error: pitlog sql runs ")


def test_a_runaway_query_is_stopped_at_the_time_limit(db: Path) -> None:
    proc = _pitlog("sql", "--db", str(db), "--timeout", "1", HUGE_CROSS_JOIN)
    line = _one_error_line(proc)
    assert "ran past its time limit of 1 s and was stopped" in line
    # The environment variable sets the same limit.
    proc = _pitlog("sql", "--db", str(db), HUGE_CROSS_JOIN, env={"PITLOG_SQL_TIMEOUT": "0.5"})
    assert "time limit of 0.5 s" in _one_error_line(proc)


def test_the_memory_limit_is_the_guarded_instances(db: Path) -> None:
    limits = QueryLimits.from_env(memory_limit="64MB")
    with guarded_connection(db, limits) as con:
        cols, rows = run_guarded(con, "SELECT current_setting('memory_limit') AS m", None,
                                 limits)
        assert rows == [{"m": "61.0 MiB"}]  # DuckDB's spelling of 64MB
        with pytest.raises(Exception, match="(?i)out of memory"):
            run_guarded(con, "SELECT list(range) FROM range(100000000)", None, limits)


def test_a_large_result_holds_only_the_rows_shown_within_the_memory_limit(db: Path) -> None:
    """The table format holds the rows it shows and counts the rest: 3,000,000 rows (about
    24 MB as Arrow) pass a 10 MB limit when one is shown; shown all, they are refused with
    one Error line naming the limit (an outside review, session 38: every row was loaded into
    Python before --limit, and `range(100000000) -n 1` was killed by the OS)."""
    query = "SELECT range AS n FROM range(3000000)"
    proc = _pitlog("sql", "--db", str(db), "--memory-limit", "10MB", "-n", "1", query)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == ("1 of 3,000,000 rows shown: --limit N for more, --limit 0 "
                                   "for all")
    assert [line.strip("│ ") for line in proc.stdout.splitlines()[3:4]] == ["0"]
    line = _one_error_line(_pitlog("sql", "--db", str(db), "--memory-limit", "10MB", "-n",
                                   "0", query))
    assert "the rows to show hold more than the memory limit of 10MB" in line
    # counted as the Python values they become, not as Arrow: 300,000 integers are 2.4 MB of
    # Arrow and about 60 MB of Python (an outside review, session 39: 5,000,000 passed a
    # 100MB limit and took 2.85 GB), shown or written to parquet
    fewer = "SELECT range AS n FROM range(300000)"
    for args in (("-n", "0"), ("-f", "parquet", "-o", str(db.parent / "all.parquet"))):
        line = _one_error_line(_pitlog("sql", "--db", str(db), "--memory-limit", "10MB", *args,
                                       fewer))
        assert "the rows to show hold more than the memory limit of 10MB" in line, args
    assert not (db.parent / "all.parquet").exists()
    proc = _pitlog("sql", "--db", str(db), "--memory-limit", "100MB", "-f", "parquet", "-o",
                   str(db.parent / "all.parquet"), fewer)
    assert proc.returncode == 0, proc.stderr
    assert duckdb.sql(f"SELECT count(*), sum(n) FROM '{db.parent / 'all.parquet'}'").fetchall() \
        == [(300_000, 299_999 * 300_000 // 2)]
    (db.parent / "all.parquet").unlink()
    # json streams a batch at a time: every row, within the same limit
    proc = _pitlog("sql", "--db", str(db), "--memory-limit", "10MB", "-f", "jsonl", query)
    assert proc.returncode == 0 and proc.stdout.count("\n") == 3_000_000


@pytest.mark.parametrize("command", [("simulate", "--tables", "1", "--rounds", "2", "--log"),
                                     ("demo", "--data-dir")])
def test_a_bad_casino_zone_setting_is_refused_before_anything_is_written(
        tmp_path: Path, command: tuple[str, ...], db: Path) -> None:
    """PITLOG_TZ naming no zone: these commands have no --tz and read it only to print their
    summary; they recorded the evening first, then failed (an outside review, session 38)."""
    target = tmp_path / "out"
    line = _one_error_line(_pitlog(*command, str(target), env={"PITLOG_TZ": "bogus"}))
    assert line.startswith("Error: PITLOG_TZ: unknown time zone 'bogus'")
    assert not target.exists() and list(tmp_path.iterdir()) == []
    # help and the version read no zone: they answer
    for asked in (("--help",), ("--version",), (command[0], "--help")):
        proc = _pitlog(*asked, env={"PITLOG_TZ": "bogus"})
        assert proc.returncode == 0 and proc.stdout.strip(), (asked, proc.stderr)
    # nor do a bare `pitlog` (its help) and `theo` (no time in it): they answered Error:
    bare = _pitlog(env={"PITLOG_TZ": "bogus"})
    assert bare.returncode == 0 and "Usage: pitlog" in bare.stdout, bare.stderr
    theo = _pitlog("theo", "--decks", "6", env={"PITLOG_TZ": "bogus", "COLUMNS": "120"})
    assert theo.returncode == 0, theo.stderr
    assert _pitlog("theo", "--decks", "6", env={"COLUMNS": "120"}).stdout == theo.stdout
    assert "exact" in theo.stdout
    # --tz given overrides it, so the setting is not read
    proc = _pitlog("sql", "--db", str(db), "--tz", "UTC", "-f", "json", "SELECT 42 AS x",
                   env={"PITLOG_TZ": "bogus"})
    assert (proc.returncode, json.loads(proc.stdout)) == (0, [{"x": 42}]), proc.stderr


@pytest.mark.parametrize("given", [["--tz", ""], ["--tz", "  "], ["--tz="]])
def test_an_empty_zone_is_refused_not_read_as_none_given(db: Path, given: list[str]) -> None:
    """`--tz ""` was taken as no zone given: PITLOG_TZ's, or UTC, shown as if asked for."""
    proc = _pitlog("sql", "--db", str(db), *given, "-f", "json", "SELECT 1 AS x",
                   env={"PITLOG_TZ": "America/New_York"})
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == ("Error: --tz is empty: give the casino's zone (an IANA name such as "
                           "America/New_York, UTC, or an offset such as -05:00), or leave the "
                           "option out\n")
    helped = _pitlog("sql", *given, "--help")  # help reads no zone: it answers
    assert helped.returncode == 0 and "Usage: " in helped.stdout, helped.stderr


def test_a_time_inside_a_list_or_struct_is_shown_on_the_casinos_clock(db: Path) -> None:
    """The table format showed a top-level time on the casino's clock and one inside a list
    or struct on the machine's (an outside review, session 39)."""
    proc = _pitlog("sql", "--db", str(db), "--tz", "America/New_York",
                   "SELECT TIMESTAMPTZ '2026-11-29 02:14:07+00' AS t, "
                   "[TIMESTAMPTZ '2026-11-29 02:14:07+00'] AS l, "
                   "{'at': TIMESTAMPTZ '2026-11-29 02:14:07+00'} AS s",
                   env={"COLUMNS": "200", "TZ": "UTC"})
    assert proc.returncode == 0, proc.stderr
    assert "2026-11-28 21:14:07 EST" in proc.stdout
    assert proc.stdout.count("2026-11-28T21:14:07-05:00") == 2, proc.stdout
    assert "02:14:07" not in proc.stdout


@pytest.mark.parametrize("bad", [{"PITLOG_SQL_TIMEOUT": "soon"}, {"PITLOG_SQL_TIMEOUT": "0"},
                                 {"PITLOG_SQL_MEMORY_LIMIT": "lots"}])
def test_bad_limits_are_an_error_line(db: Path, bad: dict[str, str]) -> None:
    line = _one_error_line(_pitlog("sql", "--db", str(db), "SELECT 1", env=bad))
    assert "PITLOG_SQL_" in line


def test_ctrl_c_stops_a_runaway_query(db: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.app", "sql", "--db", str(db), "--timeout", "3600",
         HUGE_CROSS_JOIN], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        # Wait until DuckDB's threads are busy with the join (CPU time well past start-up).
        stat = Path(f"/proc/{proc.pid}/stat")
        while proc.poll() is None:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[11]) + int(fields[12]) > 6 * os.sysconf("SC_CLK_TCK"):
                break
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=600)  # a hang guard on a loaded machine, not a timing
    finally:
        proc.kill()
    assert proc.returncode == 130 and err.strip() == "Error: interrupted"


def test_run_guarded_refuses_an_unguarded_connection_and_cursor(db: Path, tmp_path: Path,
                                                                ) -> None:
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(db.read_bytes())
    writer = open_store(copy)
    try:
        for con in (writer, writer.cursor()):
            with pytest.raises(Exception, match="not guarded"):
                run_guarded(con, "SELECT content FROM read_text('/etc/hostname')")
        # The writer's instance was left alone: its settings can still change.
        writer.execute("SET memory_limit = '300MB'")
    finally:
        writer.close()


def test_in_process_writer_gets_a_separate_guarded_snapshot(db: Path, tmp_path: Path) -> None:
    """An HTTP server holding the writer connection: guarded_connection opens the published
    snapshot, its own instance; cursors of it are guarded too."""
    from projections.snapshot import publish_snapshot

    copy = tmp_path / "live.duckdb"
    copy.write_bytes(db.read_bytes())
    writer = open_store(copy)
    try:
        publish_snapshot(writer, copy)
        with guarded_connection(copy) as con:
            cursor = con.cursor()
            _, rows = run_guarded(cursor, "SELECT count(*) AS n FROM ledger")
            assert rows == [{"n": 16}]
            with pytest.raises(Exception, match="query was refused"):
                run_guarded(cursor, "SELECT * FROM read_csv('/etc/passwd')")
            with pytest.raises(QueryLimitError, match="time limit"):
                run_guarded(cursor, HUGE_CROSS_JOIN, limits=QueryLimits(0.5))
            assert run_guarded(cursor, "SELECT 42 AS x")[1] == [{"x": 42}]  # usable after
        writer.execute("SET memory_limit = '300MB'")  # the writer is not locked
        writer.execute("INSERT INTO checkpoints (source, log_partition, next_offset) "
                       "VALUES ('x', 0, 1)")
    finally:
        writer.close()


# --- device strings on the terminal ---------------------------------------------------------

EVIL = "\x1b]0;pwned\x07\x1b[31mSpread\u202e of five\r\x9b2J"


@pytest.fixture(scope="module")
def evil_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/devices.jsonl with an ESC sequence (title, colour), a bidi override, CR and a C1
    CSI in one announcement's phrase, through the real `pitlog ingest` and `pitlog project`."""
    import json

    root = tmp_path_factory.mktemp("evil")
    lines = (REPO / "examples" / "devices.jsonl").read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if '"Announced"' in line)
    record = json.loads(lines[first])
    record["phrase"] = EVIL
    lines[first] = json.dumps(record)  # ensure_ascii: the line itself is plain ASCII
    feed = root / "feed.jsonl"
    feed.write_text("\n".join(lines) + "\n")
    log, db = root / "log", root / "pitlog.duckdb"
    proc = _pitlog("ingest", str(feed), "--log", str(log))
    assert proc.returncode == 0, proc.stderr
    proc = _pitlog("project", "--log", str(log), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    return db


def test_replay_shows_control_characters_as_escapes(evil_db: Path) -> None:
    # A wide terminal, so that no cell wraps inside the escaped text the assertion looks for.
    table = _pitlog("replay", "T07-S0003", "--db", str(evil_db), env={"COLUMNS": "240"})
    assert table.returncode == 0, table.stderr
    assert not any(c in table.stdout for c in "\x1b\x07\r\x9b\u202e")
    assert r"\x1b]0;pwned\x07\x1b[31mSpread" in table.stdout  # rich may wrap the rest
    csv_out = _pitlog("replay", "T07-S0003", "--db", str(evil_db), "--format", "csv")
    assert visible(EVIL) == r"\x1b]0;pwned\x07\x1b[31mSpread\u202e of five\x0d\x9b2J"
    assert csv_out.returncode == 0 and visible(EVIL) in csv_out.stdout
    assert not any(c in csv_out.stdout for c in "\x1b\x07\r\x9b\u202e")
    js = _pitlog("replay", "T07-S0003", "--db", str(evil_db), "--format", "json")
    assert js.returncode == 0
    assert not any(c in js.stdout for c in "\x1b\x07\r\x9b\u202e")
    assert "\\u001b]0;pwned" in js.stdout.replace("\\u001B", "\\u001b")
    import json

    descriptions = [r.get("description") or "" for r in json.loads(js.stdout)]
    assert f'"{EVIL}" (spread 5)' in descriptions  # json keeps the value exactly, as escapes


def test_every_printer_escapes_device_strings(evil_db: Path, tmp_path: Path) -> None:
    query = "SELECT phrase FROM events WHERE phrase LIKE '%pwned%'"
    for fmt in ("table", "csv"):
        proc = _pitlog("sql", "--db", str(evil_db), "--format", fmt, query)
        assert proc.returncode == 0 and r"\x1b]0;pwned\x07" in proc.stdout
        assert not any(c in proc.stdout for c in "\x1b\x07\x9b\u202e")
    # An error line quoting a device string is one line, escaped.
    proc = _pitlog("replay", "T07\x1b[2J", "--db", str(evil_db))
    line = _one_error_line(proc)
    assert "\x1b" not in proc.stderr and r"T07\x1b[2J" in line
    report = tmp_path / "day.html"
    proc = _pitlog("report", "--db", str(evil_db), "--out", str(report))
    assert proc.returncode == 0, proc.stderr
    assert not any(c in report.read_text() for c in "\x1b\x07\x9b")


# --- values the read side can handle ------------------------------------------------------

def _wager(seq: int, amount: object, **over: object) -> dict[str, object]:
    line: dict[str, object] = {
        "type": "WagerPlaced", "table": "T09", "shoe": "T09-S0001", "round": 1, "seq": seq,
        "at": "2026-11-28T22:00:01Z", "actor": "TERM-9", "seat": 1, "area": 1,
        "player_id": "P-1", "amount_cents": amount}
    line.update(over)
    return line


def _shoe_loaded(decks: int, seq: int = 2) -> dict[str, object]:
    return {"type": "CardsLoaded", "table": "T09", "shoe": f"T09-S{seq:04d}", "seq": seq,
            "at": "2026-11-28T22:00:01Z", "actor": "SHOE-9", "decks": decks}


def _ingest_lines(tmp_path: Path, lines: list[str]) -> tuple[object, list[object], object]:
    import io

    from events.log.embedded.log import EmbeddedLog
    from events.recording.ingest import ingest

    log = EmbeddedLog(tmp_path / "log", partitions=2)
    bad: list[object] = []
    report = ingest(io.BytesIO(("\n".join(lines) + "\n").encode()), log, source="feed",
                    quarantine=tmp_path / "q.jsonl", on_reject=bad.append)
    return report, bad, log


BAD_VALUES = [
    (_wager(2, 2**62), "amount_cents' is 4611686018427387904 cents, outside 0..1000000000000"),
    (_wager(2, -500), "amount_cents' is -500 cents, outside 0..1000000000000"),
    ({"type": "RaisePlaced", "table": "T09", "shoe": "T09-S0001", "round": 1,
      "seq": 2, "at": "2026-11-28T22:00:01Z", "actor": "TERM-9", "seat": 1,
      "area": 1, "amount_cents": -1}, "amount_cents' is -1 cents"),
    (_wager(2, 500, at="0001-01-01T00:00:00Z"), "field 'at' is 0001-01-01T00:00:00+00:00, "
                                                "outside 2000-01-01 to 2100-01-01"),
    (_wager(2, 500, at="9999-12-31T23:59:59+14:00"), "outside 2000-01-01 to 2100-01-01"),
    (_wager(2, 500, player_id="P" * 2000), "field 'player_id' has 2000 characters, more "
                                           "than 1024"),
    (_wager(2, 500, actor="A" * 200), "field 'actor' has 200 characters, more than 128"),
    ({"type": "WagerSettled", "table": "T09", "shoe": "T09-S0001", "round": 1, "seq": 2,
      "at": "2026-11-28T22:00:01Z", "actor": "TERM-9", "seat": 1, "area": 1,
      "wager_kind": "ORIGINAL", "outcome": "WON", "amount_cents": -500, "odds": 1},
     "amount_cents' is -500 cents"),
    ({"type": "WagerSettled", "table": "T09", "shoe": "T09-S0001", "round": 1, "seq": 2,
      "at": "2026-11-28T22:00:01Z", "actor": "TERM-9", "seat": 1, "area": 1,
      "wager_kind": "ORIGINAL", "outcome": "WON", "amount_cents": 500, "odds": 2**31 - 1},
     "field 'odds' is 2147483647, outside 0..10000"),
    # limits.MAX_DECKS + 1, below MIN_DECKS, and the largest Avro int (a million decks already
    # overflowed the exact probabilities of anomalies, reconcile and report)
    (_shoe_loaded(9), "field 'decks' is 9, outside 1..8: send the number of full decks"),
    (_shoe_loaded(0), "field 'decks' is 0, outside 1..8"),
    (_shoe_loaded(2**31 - 1), "field 'decks' is 2147483647, outside 1..8"),
]


@pytest.mark.parametrize(("line", "reason"), BAD_VALUES)
def test_values_out_of_range_are_quarantined_and_the_rest_recorded(
        tmp_path: Path, line: dict[str, object], reason: str) -> None:
    import json

    from events.wire import codec

    lines = [json.dumps(_wager(1, 500)), json.dumps(line), json.dumps(_wager(3, 700))]
    report, bad, log = _ingest_lines(tmp_path, lines)
    assert (report.lines, report.recorded, report.rejected) == (3, 2, 1)  # type: ignore[attr-defined]
    assert [b.line for b in bad] == [2] and reason in bad[0].reason  # type: ignore[attr-defined]
    amounts = [codec.decode(r.value).event.amount_cents for b in log.read() for r in b]  # type: ignore[attr-defined]
    assert sorted(amounts) == [500, 700]
    (entry,) = [json.loads(x) for x in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert entry["line"] == 2 and reason in entry["reason"] and json.loads(entry["raw"]) == line


def test_a_shoe_of_one_and_of_max_decks_is_recorded(tmp_path: Path) -> None:
    """The bounds themselves are accepted (limits.MIN_DECKS, MAX_DECKS), on ingest."""
    import json

    from events.recording.limits import MAX_DECKS, MIN_DECKS
    from events.wire import codec

    lines = [json.dumps(_shoe_loaded(MIN_DECKS, 1)), json.dumps(_shoe_loaded(MAX_DECKS, 2))]
    report, bad, log = _ingest_lines(tmp_path, lines)
    assert (report.recorded, report.rejected, bad) == (2, 0, [])  # type: ignore[attr-defined]
    decks = [codec.decode(r.value).event.decks for b in log.read() for r in b]  # type: ignore[attr-defined]
    assert sorted(decks) == [1, 8]


@pytest.mark.parametrize("depth", [17, 5000, 30_000])
def test_deeply_nested_json_is_quarantined_and_the_rest_recorded(tmp_path: Path,
                                                                  depth: int) -> None:
    import json

    nested = '{"type": "Announced", "phrase": ' + "[" * depth + "]" * depth + "}"
    assert len(nested) < 64 * 1024
    lines = []
    for i in range(2000):  # more than one batch
        lines += [json.dumps(_wager(2 * i + 1, 500)), nested, json.dumps(_wager(2 * i + 2, 700))]
    report, bad, _ = _ingest_lines(tmp_path, lines)
    assert (report.lines, report.recorded, report.rejected) == (6000, 4000, 2000)  # type: ignore[attr-defined]
    assert {b.line for b in bad} == set(range(2, 6001, 3))  # type: ignore[attr-defined]
    assert "JSON nested deeper than 16 levels" in bad[0].reason  # type: ignore[attr-defined]


def test_brackets_inside_strings_are_not_nesting(tmp_path: Path) -> None:
    import json

    line = {"type": "Announced", "table": "T09", "shoe": "T09-S0001", "round": 1, "seq": 1,
            "at": "2026-11-28T22:00:01Z", "actor": "TERM-9", "phrase": "[[[[{{{{" * 40 + '\\"',
            "meaning": "SPREAD", "value": 5}
    report, bad, _ = _ingest_lines(tmp_path, [json.dumps(line)])
    assert report.recorded == 1 and bad == []  # type: ignore[attr-defined]


def test_the_recorder_refuses_them_for_every_writer(tmp_path: Path) -> None:
    """The Python API (and so the simulator) goes through the same check, before stamping."""
    from datetime import UTC, datetime

    from events.log.embedded.log import EmbeddedLog
    from events.recording.limits import ValueLimitError
    from events.recording.recorder import Recorder
    from events.reddog import model

    log = EmbeddedLog(tmp_path / "log", partitions=1)
    rec = Recorder(log)
    at = datetime(2026, 11, 28, 22, tzinfo=UTC)
    stamp = {"shoe_id": "T1-S1", "round_no": 1, "actor": "D1", "occurred_at": at}
    for event, kw in [
        (model.WagerPlaced(seat=1, area=1, player_id="P1", amount_cents=2**62), {}),
        (model.WagerPlaced(seat=1, area=1, player_id="P1", amount_cents=-1), {}),
        (model.WagerChanged(seat=1, area=1, amount_cents=-5), {}),
        (model.TableOpened(profile="nj-casino", max_wager_cents=-1), {}),
        (model.CardsLoaded(decks=9), {}),
        (model.CardsLoaded(decks=0), {}),
        (model.WagerPlaced(seat=1, area=1, player_id="P1", amount_cents=1),
         {"occurred_at": datetime(1, 1, 1, tzinfo=UTC)}),
        (model.WagerPlaced(seat=1, area=1, player_id="P1", amount_cents=1),
         {"recorded_at": datetime(2200, 1, 1, tzinfo=UTC)}),
    ]:
        with pytest.raises(ValueLimitError):
            rec.record("T1", event, **{**stamp, **kw})
    assert rec.heads.get("T1") is None or rec.heads["T1"].seq == 0
    assert rec.record("T1", model.WagerPlaced(seat=1, area=1, player_id="P1",
                                              amount_cents=10**12), **stamp) == 1
    rec.flush()
    assert sum(len(b) for b in log.read()) == 1


def test_the_read_side_handles_the_extremes_that_are_accepted(tmp_path: Path) -> None:
    """Every amount at MAX_AMOUNT_CENTS, odds at MAX_ODDS, the shoe at MAX_DECKS, times at both
    ends of the range: recorded, projected, and every money command still answers (no INT64
    overflow)."""
    import json

    from events.recording.limits import MAX_AMOUNT_CENTS, MAX_DECKS, MAX_ODDS

    out = []
    for i, text in enumerate((REPO / "examples" / "devices.jsonl").read_text().splitlines()):
        line = json.loads(text)
        line.update({k: MAX_AMOUNT_CENTS for k in line if k.endswith("_cents")})
        if "decks" in line:
            line["decks"] = MAX_DECKS
        if line.get("odds") is not None:
            line["odds"] = MAX_ODDS
        line["at"] = "2000-01-01T00:00:00Z" if i < 10 else "2099-12-31T23:59:59.999999Z"
        out.append(json.dumps(line))
    feed = tmp_path / "feed.jsonl"
    feed.write_text("\n".join(out) + "\n")
    log, db = tmp_path / "log", tmp_path / "db.duckdb"
    assert _pitlog("ingest", str(feed), "--log", str(log)).returncode == 0
    assert _pitlog("project", "--log", str(log), "--db", str(db)).returncode == 0
    for command in (["anomalies"], ["reconcile", "--tz", "Pacific/Kiritimati"],
                    ["conservation", "--tz", "-12:00"], ["ledger"]):
        proc = _pitlog(*command, "--db", str(db), "--format", "json")
        assert proc.returncode in (0, 1) and "internal error" not in proc.stderr, proc.stderr
        json.loads(proc.stdout)
    rows = json.loads(_pitlog("sql", "--db", str(db), "--format", "json",
                              "SELECT sum(amount_cents) AS s FROM events").stdout)
    assert int(rows[0]["s"]) == MAX_AMOUNT_CENTS * sum('"amount_cents"' in x for x in out)
    report = _pitlog("report", "--db", str(db), "--out", str(tmp_path / "r.html"))
    assert report.returncode == 0, report.stderr


# --- CLI misuse: one Error: line, nothing written ------------------------------------------

def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"<dir>"
            for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def small_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("small")
    proc = _pitlog("simulate", "--tables", "4", "--rounds", "300", "--log", str(root / "log"))
    assert proc.returncode == 0, proc.stderr
    return root / "log"


def _dbs(root: Path, good: Path) -> dict[str, Path]:
    damaged = bytearray(good.read_bytes())  # a real header, a block that fails its checksum
    damaged[4096:4096 + 8192] = bytes(range(256)) * 32
    (root / "damaged.duckdb").write_bytes(bytes(damaged))
    (root / "adir").mkdir()
    (root / "text.duckdb").write_text("SELECT 1;\n")
    (root / "random.duckdb").write_bytes(bytes(range(256)) * 40)
    (root / "empty.duckdb").write_bytes(b"")
    # cut short (a copy stopped part way): its header reads, its blocks do not (an outside
    # review, session 38: named "cannot be opened ... stop it first", as if locked)
    (root / "cut.duckdb").write_bytes(good.read_bytes()[:20_000])
    return {"a folder": root / "adir", "a text file": root / "text.duckdb",
            "random bytes": root / "random.duckdb", "an empty file": root / "empty.duckdb",
            "a damaged database": root / "damaged.duckdb", "a cut database": root / "cut.duckdb"}


MISUSES = [
    (["simulate", "--rounds", "2", "--log", "{root}/afile"], "is a file, not an event log"),
    (["ingest", "{feed}", "--log", "{root}/afile"], "is a file, not an event log"),
    (["simulate", "--rounds", "2", "--log", "kafka://host:notaport/t"],
     "'host:notaport' is not HOST:PORT"),
    (["project", "--log", "kafka://127.0.0.1:/t", "--db", "{root}/x.duckdb"], "is not HOST:PORT"),
    (["simulate", "--rounds", "2", "--log", "{root}/new", "--truth", "{root}/nodir/t.jsonl"],
     "the folder {root}/nodir does not exist"),
    (["shoes", "--db", "{db}", "--format", "csv", "--out", "{root}/nodir/s.csv"],
     "the folder {root}/nodir does not exist"),
    (["report", "--db", "{db}", "--out", "{root}/nodir/r.html"],
     "the folder {root}/nodir does not exist"),
    (["simulate", "--rounds", "2", "--log", "{root}/new", "--rate", "NOPE=0.5"],
     "unknown irregularity code 'NOPE'"),
    (["simulate", "--rounds", "2", "--log", "{root}/new", "--rate", "LATE_RAISE=2"],
     "rate 2.0 for LATE_RAISE is not a chance"),
    (["simulate", "--rounds", "2", "--log", "{root}/new", "--rate", "LATE_RAISE=-0.1"],
     "is not a chance"),
    (["project", "--log", "{root}/lgo", "--db", "{root}/new.duckdb"], "no event log at"),
    (["verify", "--log", "{root}/lgo"], "no event log at"),
    # a scheme without '//': a folder of that name was made, then the id index failed
    (["ingest", "{feed}", "--log", "file:{root}/rel/log"],
     "the log address 'file:{root}/rel/log' has a scheme but no '//'"),
    (["verify", "--log", "file:{root}/rel/log"], "has a scheme but no '//'"),
    (["simulate", "--rounds", "2", "--log", "kafka:127.0.0.1:9/t"], "has a scheme but no '//'"),
]


@pytest.mark.parametrize("fmt", [[], ["-f", "json"], ["-f", "csv"], ["-f", "parquet", "-o"]])
def test_a_limit_past_any_count_of_rows_is_all_of_them(
        tmp_path: Path, db: Path, fmt: list[str]) -> None:
    """A --limit past 2**63 was an internal error (OverflowError; an outside review, session
    39): it is read as at most 10**15 rows, every row of any answer."""
    args = [*fmt, str(tmp_path / "l.parquet")] if "parquet" in fmt else fmt
    proc = _pitlog("sql", "--db", str(db), "SELECT 41 + range AS x FROM range(2)", "-n",
                   "99999999999999999999", *args)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    if "parquet" in fmt:
        assert duckdb.sql(f"SELECT list(x) FROM '{tmp_path / 'l.parquet'}'").fetchall() == [
            ([41, 42],)]
    elif fmt:
        assert proc.stdout.split() in (['[', '{"x":41},', '{"x":42}', ']'], ["x", "41", "42"])
    else:
        assert "41" in proc.stdout and "42" in proc.stdout


@pytest.mark.parametrize(("args", "message"), MISUSES)
def test_misuse_is_one_error_line_and_nothing_is_written(
        tmp_path: Path, db: Path, args: list[str], message: str) -> None:
    (tmp_path / "afile").write_text("not a log\n")
    feed = tmp_path / "feed.jsonl"
    feed.write_text((REPO / "examples" / "devices.jsonl").read_text())
    before = _tree(tmp_path)
    db_before = db.read_bytes()
    filled = [a.format(root=tmp_path, feed=feed, db=db) for a in args]
    line = _one_error_line(_pitlog(*filled))
    assert message.format(root=tmp_path) in line
    assert _tree(tmp_path) == before  # no log, no database, no file half-created
    assert db.read_bytes() == db_before


@pytest.mark.parametrize("args", [
    ["simulate", "--tables", "1", "--rounds", "2", "--log", ""],
    ["project", "--log", "{log}", "--db", ""],
    ["shoes", "--db", ""],
    ["dispute", "--db", "", "--table", "T01", "--at", "2026-11-28T21:00:00"],
    ["verify", "--log", ""],
])
def test_an_empty_log_or_db_is_refused_not_taken_for_the_default(
        tmp_path: Path, small_log: Path, args: list[str]) -> None:
    """`--log ""` (a script's unset variable) recorded into ./pitlog-data/log, the default,
    and `--db ""` was the current folder: an internal error (an outside review, session 38)."""
    line = _one_error_line(_pitlog(*[a.format(log=small_log) for a in args], cwd=tmp_path))
    assert ("is empty: give a value or leave the option out" in line
            or "--db names the current folder (or is empty): give a value or leave the option "
               "out" in line), line
    assert list(tmp_path.iterdir()) == []


# Commands whose query reads every row of _store_to_damage's table t.
READ_EVERY_BLOCK = (["shoes"], ["sql", "SELECT sum(i), count(DISTINCT s) FROM t"],
                    ["sql", "-f", "jsonl", "SELECT i, s FROM t"])


def _store_to_damage(path: Path) -> None:
    """A file whose middle is a block of t's data, which READ_EVERY_BLOCK's queries read."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t AS SELECT range AS i, md5(range::VARCHAR) AS s "
                "FROM range(2000000)")
    # what `pitlog shoes` reads, made from every row of t
    con.execute("CREATE VIEW shoes AS SELECT 'T01' AS table_id, 'T01-S0001' AS shoe_id, "
                "6 AS decks, NULL::TIMESTAMPTZ AS opened_at, NULL::TIMESTAMPTZ AS closed_at, "
                "count(*) AS rounds, sum(i) AS cards_dealt, count(DISTINCT s) AS burns, "
                "NULL::TIMESTAMPTZ AS cutting_card_reached_at, [] AS dealers FROM t")
    con.close()


def _damage_a_block(path: Path) -> None:
    with path.open("r+b") as f:  # a block of t's data, in the middle of the file
        f.seek(path.stat().st_size // 2)
        f.write(b"\xff" * 4096)


def test_a_damaged_block_met_by_a_query_names_the_file(tmp_path: Path) -> None:
    """DuckDB checks a block's checksum when a query reads it, after the file opened: that
    was "internal error (Corrupt database file ...)" from a query command, and "the query
    failed" from `pitlog sql`, naming no file and nothing to do (an outside review, session
    39)."""
    path = tmp_path / "damaged.duckdb"
    _store_to_damage(path)
    _damage_a_block(path)
    said = ("): rebuild it with `pitlog project` into a new file (the log holds every "
            "event)")
    for args in READ_EVERY_BLOCK:
        line = _one_error_line(_pitlog(*args, "--db", str(path)))
        assert line.startswith(f"Error: {path} is damaged (Corrupt database file: computed "
                               "checksum "), args
        assert line.endswith(said) and "))" not in line, args
    # the same file served: a 500 naming it (it was "internal error", and a 400 of the
    # request's for pitlog sql), and the CLI through the server says so
    from console_support import running
    from serve_support import request

    with running(path) as served:
        for api in ("/api/shoes", "/api/sql?q=SELECT%20count(DISTINCT%20s)%20FROM%20t"):
            r = request(served.url, api)
            assert r.status == 500, (api, r.body)
            assert r.json()["error"].startswith(f"{path} is damaged (Corrupt database file: "
                                                f"computed checksum "), api
            assert r.json()["error"].endswith(said), api
        line = _one_error_line(_pitlog("shoes", "--server", served.url, "--db",
                                       str(tmp_path / "elsewhere.duckdb")))
        assert line.startswith(f"Error: {path} is damaged (Corrupt database file: "), line
        assert line.endswith(f"{said} (server {served.url})"), line


def test_a_damaged_block_of_the_snapshot_read_names_the_snapshot(tmp_path: Path) -> None:
    """While a writer holds the database, a command reads its published snapshot: a damaged
    block met there was said of the database, which is whole."""
    path = tmp_path / "held.duckdb"
    _store_to_damage(path)
    snapshot = snapshot_path(path)
    shutil.copyfile(path, snapshot)
    _damage_a_block(snapshot)
    with duckdb.connect(str(path)):  # the writer: another process's reads go to the snapshot
        for args in READ_EVERY_BLOCK:
            line = _one_error_line(_pitlog(*args, "--db", str(path)))
            assert line.startswith(f"Error: {snapshot} is damaged (Corrupt database file: "
                                   f"computed checksum "), args
            # what helps: the writer's next publish, not a rebuild of the whole database
            assert line.endswith("it is the read-only copy the database's writer (`pitlog "
                                 "project --follow`) publishes, and its next publish replaces "
                                 "it; or stop the writer and read the database itself"), line


def test_a_message_that_only_quotes_the_words_of_damage_is_not_damage(db: Path) -> None:
    """A query's own text, or a device's, quoting DuckDB's words for a damaged block was
    called a damaged file (an outside review, session 40): only DuckDB's own message is."""
    words = "Corrupt database file: computed checksum 1 does not match stored checksum 2"
    line = _one_error_line(_pitlog("sql", "--db", str(db), f"SELECT '{words}'::INT"))
    assert line.startswith("Error: the query failed: Conversion Error: Could not convert "
                           f"string '{words}' to INT32"), line
    line = _one_error_line(_pitlog("shoes", "--db", str(db), "--table", words))
    assert line.startswith(f"Error: no table '{words}' in the store"), line


@pytest.mark.parametrize("command", ["project", "shoes", "sql", "anomalies", "report"])
def test_a_db_that_is_not_a_database_is_named_as_such(tmp_path: Path, small_log: Path,
                                                      db: Path, command: str) -> None:
    for what, path in _dbs(tmp_path, db).items():
        before = _tree(tmp_path)
        args = {"project": ["project", "--log", str(small_log)], "shoes": ["shoes"],
                "sql": ["sql", "SELECT 1"], "anomalies": ["anomalies"],
                "report": ["report", "--out", str(tmp_path / "r.html")]}[command]
        line = _one_error_line(_pitlog(*args, "--db", str(path)))
        expected = {"a folder": "is a folder, not a DuckDB file",
                    "an empty file": "is an empty file",
                    "a damaged database": "Corrupt database file",
                    "a cut database": "no writer holds it: if it is damaged or cut short"}.get(
                        what, "is not a DuckDB database")
        assert expected in line and "locked by a writer" not in line, (what, line)
        assert _tree(tmp_path) == before, what


def _fsize_limit(kib: int):  # noqa: ANN202 - a preexec_fn
    def limit() -> None:
        import resource

        # EFBIG instead of SIGXFSZ: the write fails as on a full disk, the process lives on.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (kib * 1024, kib * 1024))
    return limit


def _project_limited(log: Path, db: Path, kib: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.app", "project", "--log", str(log), "--db", str(db)],
        capture_output=True, text=True, cwd=REPO, timeout=300, check=False,
        preexec_fn=_fsize_limit(kib), env={**os.environ, "PYTHONPATH": str(REPO)})


def _counts(db: Path) -> tuple[object, ...]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM quarantine), "
            "(SELECT sum(next_offset) FROM checkpoints), "
            "(SELECT count(*) FROM anomalies)").fetchall()[0]


def test_no_space_while_creating_the_database_leaves_no_file(tmp_path: Path,
                                                             small_log: Path) -> None:
    db = tmp_path / "db.duckdb"
    line = _one_error_line(_project_limited(small_log, db, 64))
    assert "File too large" in line or "No space left" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no 0-byte db.duckdb, no .wal
    proc = _pitlog("project", "--log", str(small_log), "--db", str(db))  # the next run works
    assert proc.returncode == 0, proc.stderr


def test_no_space_mid_projection_is_a_clear_error_and_a_rerun_completes(
        tmp_path: Path, small_log: Path) -> None:
    db, reference = tmp_path / "db.duckdb", tmp_path / "reference.duckdb"
    proc = _project_limited(small_log, db, 2048)
    line = _one_error_line(proc)
    assert "no transaction is active" not in line
    assert "File too large" in line and ("checkpoint is unchanged" in line
                                         or "check the disk" in line)
    assert db.exists()  # a valid database, with what was committed before the failure
    assert _pitlog("project", "--log", str(small_log), "--db", str(db)).returncode == 0
    assert _pitlog("project", "--log", str(small_log), "--db", str(reference)).returncode == 0
    assert _counts(db) == _counts(reference)


def _topics(bootstrap: str) -> set[str]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="pitlog-test")
    try:
        return set(admin.list_topics())
    finally:
        admin.close()


@pytest.mark.kafka
def test_a_missing_kafka_topic_is_created_only_when_told(kafka_broker: str, kafka_uri: str,
                                                         tmp_path: Path) -> None:
    topic = kafka_uri.rsplit("/", 1)[1]
    db = tmp_path / "db.duckdb"
    line = _one_error_line(_pitlog("project", "--log", kafka_uri, "--db", str(db)))
    assert f"no topic {topic} on {kafka_broker}" in line and not db.exists()
    line = _one_error_line(_pitlog("simulate", "--rounds", "2", "--log", kafka_uri))
    assert "--create-topic" in line
    assert topic not in _topics(kafka_broker)
    proc = _pitlog("simulate", "--rounds", "2", "--tables", "1", "--log", kafka_uri,
                   "--create-topic")
    assert proc.returncode == 0, proc.stderr
    assert topic in _topics(kafka_broker)
    assert _pitlog("project", "--log", kafka_uri, "--db", str(db)).returncode == 0


# --- fuzz: mutated device lines never crash ingest, and what is recorded is within limits ----

def _json_values():  # noqa: ANN202 - a hypothesis strategy
    from hypothesis import strategies as st

    scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
               | st.sampled_from([2**62, -1, -500, 10**12, 10**12 + 1, 0, 2**31, 2**63])
               | st.text(max_size=40) | st.text(alphabet="\x1b\x07\r\x9b\u202e[]{}\"\\a",
                                                  max_size=20)
               | st.sampled_from(["0001-01-01T00:00:00Z", "9999-12-31T23:59:59+14:00",
                                  "1999-12-31T23:59:59Z", "2100-01-01T00:00:00Z",
                                  "2026-11-28T21:00:00Z"]))
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


FUZZ_COUNTS = {"lines": 0, "mutated": 0, "recorded": 0, "rejected": 0}


def test_fuzzed_device_lines_are_recorded_within_limits_or_quarantined(tmp_path: Path) -> None:
    import io
    import json

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from events.log.embedded.log import EmbeddedLog
    from events.recording.ingest import ingest
    from events.recording.limits import check_envelope, check_event
    from events.wire import codec

    base = [json.loads(x) for x in (REPO / "examples" / "devices.jsonl").read_text().splitlines()]
    runs = iter(range(10**6))

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.tuples(st.integers(0, len(base) - 1), st.integers(0, 20), _json_values(),
                              st.integers(0, 3000)), min_size=1, max_size=12))
    def check(mutations: list[tuple[int, int, object, int]]) -> None:
        lines = [dict(x) for x in base]
        for index, field, value, depth in mutations:
            line = lines[index]
            keys = sorted(line)
            line[keys[field % len(keys)]] = value
            if depth > 2900:  # now and then a line nested far beyond any parser's comfort
                line["phrase"] = json.loads("[" * 900 + "]" * 900)
        texts = []
        for line in lines:
            try:
                texts.append(json.dumps(line))
            except (ValueError, RecursionError):
                texts.append('{"type": "Announced"' + "[" * 5000)
        folder = tmp_path / f"run{next(runs)}"
        log = EmbeddedLog(folder / "log", partitions=2)
        report = ingest(io.BytesIO(("\n".join(texts) + "\n").encode()), log, source="fuzz",
                        quarantine=folder / "q.jsonl")
        assert report.lines == len(texts) and report.recorded + report.rejected == len(texts)
        quarantined = ((folder / "q.jsonl").read_text().splitlines()
                       if (folder / "q.jsonl").exists() else [])
        assert len(quarantined) == report.rejected
        recorded = [codec.decode(r.value) for b in log.read() for r in b]
        assert len(recorded) == report.recorded
        for env in recorded:
            check_event(env.event)
            check_envelope(env.table_id, env.shoe_id, env.actor, env.event_id,
                           env.occurred_at, env.recorded_at, env.round_no)
        FUZZ_COUNTS["lines"] += len(texts)
        FUZZ_COUNTS["mutated"] += len(mutations)
        FUZZ_COUNTS["recorded"] += report.recorded
        FUZZ_COUNTS["rejected"] += report.rejected

    check()
    print(f"fuzz: {FUZZ_COUNTS}")
    assert FUZZ_COUNTS["rejected"] > 0 and FUZZ_COUNTS["recorded"] > 0


def test_an_id_with_a_control_character_is_quarantined_and_verify_stays_clean(
        tmp_path: Path) -> None:
    """An id names a table, shoe or device in keys and reports: `T07\\x00` would be a second
    table that prints like T07, so it is refused (events/recording/limits.py), never recorded."""
    lines = (REPO / "examples" / "devices.jsonl").read_text().splitlines()[:3]
    bad = []
    for field, value in (("table", "T07\u0000"), ("actor", "TERM\u001b[31m7")):
        record = json.loads(lines[1])
        record[field] = value
        record["seq"] = 10 + len(bad)
        bad.append(json.dumps(record))
    feed = tmp_path / "feed.jsonl"
    feed.write_text("\n".join([lines[0], *bad, lines[2]]) + "\n")
    log = tmp_path / "log"
    proc = _pitlog("ingest", str(feed), "--log", str(log), "--format", "json")
    assert proc.returncode == 1  # some lines were refused
    report = json.loads(proc.stdout)
    row = report[0] if isinstance(report, list) else report
    assert row["recorded"] == 2 and row["rejected"] == 2, row
    quarantine = tmp_path / "log-quarantine.jsonl"
    quarantined = [json.loads(x) for x in quarantine.read_text().splitlines()]
    assert [q["line"] for q in quarantined] == [2, 3]
    assert all("control character" in q["reason"] for q in quarantined), quarantined
    verified = _pitlog("verify", "--log", str(log))
    assert verified.returncode == 0, verified.stdout + verified.stderr

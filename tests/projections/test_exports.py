"""Exports are written by DuckDB from the rows the table shows, with their own types: read back
with DuckDB, timestamps are TIMESTAMPTZ, money BIGINT cents, ratios DECIMAL, lists lists; an
empty result keeps its columns; JSON numbers are numbers; JSON lines stream one row a line."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from audit_scenarios import MONEY, evening
from cli_support import run_recording_writes
from simulated import simulated_db
from typer.testing import CliRunner

from cli.app import app
from projections.anomalies import list_anomalies
from projections.reconcile import Calendar, reconcile

runner = CliRunner()
NY = ["--tz", "America/New_York"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return evening(tmp_path_factory.mktemp("evening"))


@pytest.fixture(scope="module")
def sim_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated evening with irregularities: anomalies to export."""
    return simulated_db(tmp_path_factory.mktemp("sim"), seed=11, tables=2, rounds=60,
                        irregularities=0.03)


def _ok(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _types(path: Path) -> dict[str, str]:
    with duckdb.connect() as con:
        return dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE "
                                f"SELECT * FROM '{path}')").fetchall())


def test_reconcile_parquet_keeps_cents_as_bigint_and_hold_as_a_decimal(db: Path, tmp_path: Path
                                                                      ) -> None:
    out = tmp_path / "hold.parquet"
    _ok("reconcile", "--db", str(db), *NY, "--format", "parquet", "--out", str(out))
    types = _types(out)
    assert types["handle_cents"] == "BIGINT" and types["net_win_cents"] == "BIGINT"
    assert types["hold_pct"].startswith("DECIMAL") and types["theo_win_cents"].startswith("DECIMAL")
    assert types["z_score"] == "DOUBLE"
    with duckdb.connect() as con:
        got = con.execute(f"SELECT table_id, handle_cents, hold_pct FROM '{out}' "
                          f"ORDER BY hold_pct").fetchall()
    with duckdb.connect(str(db), read_only=True) as con:
        rows = reconcile(con, ["table"], Calendar.parse("America/New_York"))
    # ORDER BY sorts numerically: as text "-3.6" < "12.5" < "8.9" would come out otherwise.
    expected = sorted(((r["table_id"], r["handle_cents"], r["hold_pct"]) for r in rows
                       if r["hold_pct"] is not None), key=lambda t: t[2])
    assert [g for g in got if g[2] is not None] == expected
    assert {t: h for t, h, _ in got} == {t: m[1] for t, m in MONEY.items()}


def test_anomalies_parquet_has_timestamptz_and_a_list_of_seqs(sim_db: Path, tmp_path: Path
                                                              ) -> None:
    db = sim_db
    out = tmp_path / "anomalies.parquet"
    _ok("anomalies", "--db", str(db), "--format", "parquet", "--out", str(out))
    types = _types(out)
    assert types["occurred_at"] == "TIMESTAMP WITH TIME ZONE"
    assert types["seqs"] == "BIGINT[]" and types["round_no"] == "INTEGER"
    with duckdb.connect(str(db), read_only=True) as con:
        expected = list_anomalies(con)
    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'UTC'")
        got = con.execute(f"SELECT code, seqs, occurred_at FROM '{out}'").fetchall()
    assert len(got) == len(expected) > 0
    assert [(c, s, a) for c, s, a in got] == \
        [(r["code"], r["seqs"], r["occurred_at"]) for r in expected]


@pytest.mark.parametrize("args", [
    # a known table with nothing to show (an unknown one is an error: queries.require_known;
    # so is a day with no round: reconcile.require_rounds_on)
    ["anomalies", "--table", "T01", "--since", "2030-01-01"],
    ["ledger", "--table", "T01", "--status", "DOUBLE_SETTLED"],
    ["sql", "SELECT * FROM ledger WHERE false"],
])
def test_an_empty_result_keeps_its_columns_and_types(db: Path, tmp_path: Path,
                                                     args: list[str]) -> None:
    out = tmp_path / "empty.parquet"
    _ok(*args, "--db", str(db), "--format", "parquet", "--out", str(out))
    with duckdb.connect() as con:
        assert con.execute(f"SELECT count(*) FROM '{out}'").fetchall() == [(0,)]
    types = _types(out)
    assert len(types) > 5
    if args[0] == "anomalies":
        assert types["occurred_at"] == "TIMESTAMP WITH TIME ZONE"
    else:
        assert types["table_id"] == "VARCHAR"
        money = "amount_cents"
        assert types[money] in ("BIGINT", "INTEGER")
    csv_out = _ok(*args, "--db", str(db), "--format", "csv")
    assert csv_out.splitlines() == [",".join(types)]  # the header alone


def test_json_numbers_are_numbers(db: Path) -> None:
    rows = json.loads(_ok("reconcile", "--db", str(db), *NY, "--format", "json"),
                      parse_float=Decimal)
    t1 = next(r for r in rows if r["table_id"] == "T01")
    assert isinstance(t1["hold_pct"], Decimal) and t1["hold_pct"] == MONEY["T01"][6]
    assert isinstance(t1["handle_cents"], int) and isinstance(t1["z_score"], Decimal | None)


def test_jsonl_is_one_object_a_line_with_the_same_rows_as_json(sim_db: Path) -> None:
    db = sim_db
    as_json = json.loads(_ok("anomalies", "--db", str(db), "--format", "json"))
    lines = _ok("anomalies", "--db", str(db), "--format", "jsonl").splitlines()
    assert len(lines) == len(as_json) > 0
    assert [json.loads(line) for line in lines] == as_json
    assert isinstance(as_json[0]["seqs"], list) and as_json[0]["occurred_at"].endswith("Z")


@pytest.mark.parametrize("command", [["theo"], ["simulate"], ["ingest", "-"], ["project"],
                                     ["demo"]])
def test_parquet_is_not_offered_where_it_cannot_be_written(command: list[str],
                                                           tmp_path: Path) -> None:
    log = tmp_path / "log"
    extra = ["--log", str(log)] if command[0] in ("simulate", "ingest") else []
    result = runner.invoke(app, [*command, *extra, "--format", "parquet"])
    assert result.exit_code != 0
    assert "parquet" in result.output and "is not one of" in result.output
    help_text = runner.invoke(app, [*command, "--help"]).output
    assert "parquet" not in help_text
    assert not log.exists()  # refused before anything was written


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_a_query_to_stdout_writes_no_file_not_even_a_temporary_one(sim_db: Path,
                                                                   fmt: str) -> None:
    run, written = run_recording_writes("anomalies", "--db", str(sim_db), "--format", fmt)
    assert run.returncode == 0, run.stderr
    assert written == []
    # The same rows as the in-process command prints.
    assert run.stdout == _ok("anomalies", "--db", str(sim_db), "--format", fmt)
    assert len(run.stdout.splitlines()) > 3


# Values Arrow or Python cannot hold were "internal error (ArrowInvalid / OverflowError ...)":
# now one Error line naming the column and the cast that shows it, and the cast works.
@pytest.mark.parametrize(("select", "column", "formats"), [
    ("170141183460469231731687303715884105727::HUGEINT AS h", "h", ["json", "jsonl", "csv"]),
    ("'infinity'::TIMESTAMP AS \"when it was\"", "when it was", ["table", "json", "csv"]),
    ("'-infinity'::DATE AS d", "d", ["table", "json", "jsonl"]),
])
def test_a_value_no_export_can_hold_is_an_error_naming_its_column_and_the_cast(
        sim_db: Path, select: str, column: str, formats: list[str]) -> None:
    import subprocess
    import sys

    cast = f'"{column}"' if " " in column else column
    root = Path(__file__).resolve().parents[2]
    for fmt in formats:  # as a user runs it: cli.app.main turns errors into their one line
        run = subprocess.run([sys.executable, "-m", "cli.app", "sql", "--db", str(sim_db),
                              "-f", fmt, f"SELECT 1 AS a, {select}"], capture_output=True,
                             text=True, timeout=300, cwd=root)
        assert run.returncode == 1 and run.stdout == "", (run.stdout, run.stderr)
        (line,) = run.stderr.splitlines()
        assert line.startswith(f"Error: column {column!r} holds a value that cannot be written "
                               f"out ("), line
        assert line.endswith(f"cast it to text in the query, e.g. CAST({cast} AS VARCHAR)")
        assert "internal error" not in line
    shown = _ok("sql", "--db", str(sim_db), "-f", "json",
                f"SELECT CAST({cast} AS VARCHAR) AS v FROM (SELECT 1 AS a, {select})")
    assert json.loads(shown)[0]["v"] in ("170141183460469231731687303715884105727",
                                         "infinity", "-infinity")
    # (A UNION was one of these until session 43: it is now written as its value's text,
    # tests/console/test_sql_values.py.)


# Stdout exports stream a batch at a time (export.stream): 3M rows, 212 MB of JSON lines,
# held 2.1 GB when the whole output waited for COPY to succeed (benchmarks/results.md).
STREAMED_ROWS = 3_000_000


def test_a_large_export_to_stdout_keeps_memory_bounded(sim_db: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.app", "sql", "--db", str(sim_db), "-f", "jsonl",
         "--memory-limit", "256MB",
         f"SELECT i, repeat('x', 50) AS s FROM range({STREAMED_ROWS}) t(i)"], cwd=root,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    lines = last = 0
    while chunk := proc.stdout.read(1 << 20):
        lines += chunk.count(b"\n")
        last = chunk
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, proc.stderr.read()
    assert lines == STREAMED_ROWS
    assert last.endswith(b'{"i":%d,"s":"%s"}\n' % (STREAMED_ROWS - 1, b"x" * 50))
    # ru_maxrss is in KiB: the rows' text alone is 212 MB, and held it peaked at 2.1 GB
    # (1.96 GiB). Streamed: about 320 MB on a quiet machine, but 1.08 GiB in one loaded CI run
    # (not understood: a slow reader or a busy machine here does not raise it), so the bound
    # is 1.5 GiB, which rows held would fail. --memory-limit 256MB caps DuckDB's share, should
    # that be what grew; on a quiet machine it changes nothing (313 MB without, 339 MB with).
    assert usage.ru_maxrss < 1536 * 1024, usage.ru_maxrss


def test_an_unexportable_value_in_a_later_batch_still_writes_nothing(sim_db: Path) -> None:
    import subprocess
    import sys

    from projections.export import STREAM_BATCH_ROWS

    bad = STREAM_BATCH_ROWS * 2 + 7  # well past the first batch written
    root = Path(__file__).resolve().parents[2]
    for fmt in ("json", "jsonl", "csv"):
        run = subprocess.run(
            [sys.executable, "-m", "cli.app", "sql", "--db", str(sim_db), "-f", fmt,
             f"SELECT i, CASE WHEN i = {bad} THEN 'infinity'::TIMESTAMP ELSE TIMESTAMP "
             f"'2026-12-03 08:00' END AS seen_at FROM range({bad + 10}) t(i)"],
            capture_output=True, text=True, timeout=300, cwd=root)
        assert run.returncode == 1 and run.stdout == "", (fmt, run.stdout[:200], run.stderr)
        (line,) = run.stderr.splitlines()
        assert line.startswith("Error: column 'seen_at' holds a value that cannot be written "
                               "out ("), line


def test_a_streamed_export_has_every_row_in_order_and_its_limit(sim_db: Path) -> None:
    from projections.export import STREAM_BATCH_ROWS

    n = STREAM_BATCH_ROWS * 2 + 5  # three batches, the last of five rows
    query = (f"SELECT i, i::DECIMAL(12, 2) / 4 AS q, TIMESTAMPTZ '2026-12-03 00:00:00+00' + "
             f"to_seconds(i) AS at, NULL AS none_cents FROM range({n}) t(i)")
    rows = json.loads(_ok("sql", "--db", str(sim_db), "-f", "json", query))
    assert [r["i"] for r in rows] == list(range(n))
    at = datetime(2026, 12, 3, tzinfo=UTC) + timedelta(seconds=n - 1)
    assert rows[-1] == {"i": n - 1, "q": (n - 1) / 4, "none_cents": None,
                        "at": at.strftime("%Y-%m-%dT%H:%M:%S.000000Z")}
    lines = _ok("sql", "--db", str(sim_db), "-f", "csv", query).splitlines()
    assert lines[0] == "i,q,at,none_cents" and len(lines) == n + 1
    result = runner.invoke(app, ["sql", "--db", str(sim_db), "-f", "jsonl", "--limit",
                                 str(STREAM_BATCH_ROWS + 1), query])
    assert result.exit_code == 0
    assert len(result.stdout.splitlines()) == STREAM_BATCH_ROWS + 1
    assert json.loads(result.stdout.splitlines()[-1])["i"] == STREAM_BATCH_ROWS
    assert (f"{STREAM_BATCH_ROWS + 1:,} of {n:,} rows shown: --limit N for more, --limit 0 "
            f"for all") in result.stderr


def _changing_query(first: int, second: int) -> object:
    """batches() for export.stream over a real DuckDB table that holds `first` rows in the
    first pass and `second` in the second (a table written to between the passes)."""
    from projections.export import STREAM_BATCH_ROWS

    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT i FROM range({first}) r(i)")
    calls = []

    def batches() -> object:
        if calls:
            con.execute(f"DELETE FROM t; INSERT INTO t SELECT i FROM range({second}) r(i)")
        calls.append(1)
        return con.sql("SELECT i FROM t ORDER BY i").to_arrow_reader(
            batch_size=STREAM_BATCH_ROWS)

    return batches


@pytest.mark.parametrize(("first", "second", "limit"), [
    (3, 10, 0),  # more rows written than checked: the last seven were dropped silently
    (10, 3, 5),  # '5 of 10 rows shown', then three rows written and nothing said
    (10, 3, 0),
    (10, 12, 5),  # the limit's rows written, but 'of 10' was not this run's count
])
def test_a_query_whose_rows_change_between_the_passes_is_an_error(
        first: int, second: int, limit: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from events.errors import ProjectionError
    from projections import export
    from projections.export import stream

    monkeypatch.setattr(export, "STREAM_KEEP_BYTES", 0)  # a result too big to keep: run twice

    out = io.StringIO()
    told: list[tuple[int, int]] = []
    with pytest.raises(ProjectionError) as caught:
        stream(_changing_query(first, second), "jsonl", out, limit=limit,  # type: ignore[arg-type]
               shown=lambda n, m: told.append((n, m)))
    assert str(caught.value).startswith(f"the query gave {first:,} rows when checked and "), \
        caught.value
    assert "write it with --out FILE, which runs it once" in str(caught.value)
    assert told == ([(limit, first)] if limit and first > limit else [])


def test_a_query_whose_rows_stay_is_written_whole_with_its_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from projections import export
    from projections.export import stream

    monkeypatch.setattr(export, "STREAM_KEEP_BYTES", 0)
    for limit, want in ((0, 10), (4, 4), (10, 10), (11, 10)):
        out = io.StringIO()
        stream(_changing_query(10, 10), "jsonl", out, limit=limit)  # type: ignore[arg-type]
        assert [json.loads(line)["i"] for line in out.getvalue().splitlines()] == \
            list(range(want))


@pytest.mark.parametrize(("first", "second", "limit"), [(3, 10, 0), (10, 3, 5), (10, 12, 0)])
def test_a_result_small_enough_to_keep_is_written_from_its_one_run(
        first: int, second: int, limit: int) -> None:
    """A result the first pass keeps is never queried again: the rows written are the first
    run's, whatever a second run would have given, and the 'N of M' line is theirs."""
    import io

    from projections.export import stream

    out = io.StringIO()
    told: list[tuple[int, int]] = []
    query = _changing_query(first, second)
    stream(query, "jsonl", out, limit=limit,  # type: ignore[arg-type]
           shown=lambda n, m: told.append((n, m)))
    assert [json.loads(line)["i"] for line in out.getvalue().splitlines()] == \
        list(range(min(first, limit or first)))
    assert told == ([(limit, first)] if limit and first > limit else [])


# `pitlog sql --out FILE` in json, jsonl or csv streams too (export.stream_to_file): the rows
# were held whole, then COPY wrote them (session 17).
FILE_QUERIES = [
    "SELECT * FROM anomalies ORDER BY ALL",
    "SELECT * FROM ledger ORDER BY ALL",
    "SELECT * FROM rounds ORDER BY ALL",
    "SELECT * FROM events ORDER BY log_partition, log_offset",
    "SELECT i, i::DECIMAL(12, 2) / 4 AS q, NULL AS none_cents, [i, NULL] AS l, "
    "{'a': i} AS st, 'é\u202e\x07' || i AS s, INTERVAL 1 DAY * i AS iv FROM range(7) t(i)",
    "SELECT 1 AS a WHERE false",
]


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_a_query_streamed_to_a_file_writes_the_bytes_the_held_rows_did(
        sim_db: Path, tmp_path: Path, fmt: str) -> None:
    from projections.export import write
    from projections.sql_console import run_query

    for n, query in enumerate(FILE_QUERIES):
        held = tmp_path / f"held{n}.{fmt}"
        columns, rows = run_query(sim_db, query)
        write(rows, columns, fmt, held)  # the path --out took before
        streamed = tmp_path / f"streamed{n}.{fmt}"
        _ok("sql", "--db", str(sim_db), "-f", fmt, "--out", str(streamed), query)
        assert streamed.read_bytes() == held.read_bytes(), query
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".pitlog-")) == []


def test_a_file_export_with_a_bad_value_in_a_later_batch_leaves_the_file_as_it_was(
        sim_db: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    from projections.export import STREAM_BATCH_ROWS

    bad = STREAM_BATCH_ROWS * 2 + 7  # two batches written to the temporary file before it
    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "rows.jsonl"
    out.write_text("an earlier export\n")
    run = subprocess.run(
        [sys.executable, "-m", "cli.app", "sql", "--db", str(sim_db), "-f", "jsonl", "--out",
         str(out), f"SELECT i, CASE WHEN i = {bad} THEN 'infinity'::TIMESTAMP ELSE TIMESTAMP "
                   f"'2026-12-03 08:00' END AS seen_at FROM range({bad + 10}) t(i)"],
        capture_output=True, text=True, timeout=300, cwd=root)
    assert run.returncode == 1 and run.stdout == "", run.stderr
    (line,) = run.stderr.splitlines()
    assert line.startswith("Error: column 'seen_at' holds a value that cannot be written out (")
    assert out.read_text() == "an earlier export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl"]


def test_a_large_export_to_a_file_has_every_row_and_tells_its_limit(
        sim_db: Path, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "big.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.app", "sql", "--db", str(sim_db), "-f", "jsonl", "--out",
         str(out), f"SELECT i, repeat('x', 50) AS s FROM range({STREAMED_ROWS}) t(i)"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, _ = os.wait4(proc.pid, 0)
    assert proc.stderr is not None
    assert os.waitstatus_to_exitcode(status) == 0, proc.stderr.read()
    with out.open("rb") as f:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    assert lines == STREAMED_ROWS
    # No bound on its memory here: 334 MB measured on a quiet machine (benchmarks/results.md),
    # but a loaded CI run peaked at 1.05 GiB (not understood yet; see the stdout test's bound).
    limited = tmp_path / "limited.csv"
    result = runner.invoke(app, ["sql", "--db", str(sim_db), "-f", "csv", "--out",
                                 str(limited), "--limit", "5",
                                 "SELECT i FROM range(250001) t(i)"])
    assert result.exit_code == 0, result.output
    assert limited.read_text().splitlines() == ["i", "0", "1", "2", "3", "4"]
    assert "5 of 250,001 rows shown" in result.stderr


def test_a_file_export_into_a_pipe_writes_in_place_and_a_long_name_works(
        sim_db: Path, tmp_path: Path) -> None:
    """The outside review's cases: --out naming a FIFO (or a device, or a shell's /dev/fd/N)
    had the pipe replaced by a regular file, its reader getting nothing; a name of 245
    characters failed, the temporary name's suffix pushing it past 255 bytes."""
    import os
    import threading

    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    _ok("sql", "--db", str(sim_db), "-f", "csv", "--out", str(fifo),
        "SELECT i FROM range(3) t(i)")
    reader.join(timeout=60)
    assert got == [b"i\n0\n1\n2\n"]
    assert fifo.is_fifo()
    long = tmp_path / ("a" * 245 + ".csv")
    _ok("sql", "--db", str(sim_db), "-f", "csv", "--out", str(long), "SELECT 7 AS n")
    assert long.read_text() == "n\n7\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([fifo.name, long.name])


def test_sigterm_during_a_file_export_leaves_the_file_as_it_was_and_no_temporary_file(
        sim_db: Path, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "rows.jsonl"
    out.write_text("an earlier export\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.app", "sql", "--db", str(sim_db), "-f", "jsonl", "--out",
         str(out), "SELECT i, repeat('x', 50) AS s FROM range(1000000000) t(i)"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120  # until the temporary file has rows in it
    while not any(p.name.startswith(".pitlog-") and p.stat().st_size > 0
                  for p in tmp_path.iterdir()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert stderr.strip().splitlines()[-1] == "Error: terminated"
    assert out.read_text() == "an earlier export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl"]


# A query naming two columns alike (`SELECT 1 AS a, 2 AS a`, or `SELECT *` over a join): the
# table showed 2 in both (its rows are dicts) and every export wrote a_1 as 1 (COPY selected
# the first `a` twice). Now the later one is a_1 (a_2 past a name taken) with its own values,
# in the table, on stdout (kept or run twice) and in files.
@pytest.mark.parametrize("keep", [True, False])
def test_columns_named_alike_keep_their_own_values_in_every_format(
        sim_db: Path, tmp_path: Path, keep: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from projections import export

    if not keep:
        monkeypatch.setattr(export, "STREAM_KEEP_BYTES", 0)  # the second run is written
    query = "SELECT 1 AS a, 2 AS a, 3 AS a_1, 4 AS A, 5 AS b"
    names = ["a", "a_2", "a_1", "A_3", "b"]
    want = [dict(zip(names, range(1, 6), strict=True))]
    table = _ok("sql", "--db", str(sim_db), query)
    assert [line.split() for line in table.splitlines() if "1" in line and "5" in line] == [
        ["│", "1", "│", "2", "│", "3", "│", "4", "│", "5", "│"]]
    assert [line.split() for line in table.splitlines() if "a_2" in line] == [
        ["┃", "a", "┃", "a_2", "┃", "a_1", "┃", "A_3", "┃", "b", "┃"]]
    assert json.loads(_ok("sql", "--db", str(sim_db), "-f", "json", query)) == want
    assert [json.loads(x) for x in _ok("sql", "--db", str(sim_db), "-f", "jsonl",
                                       query).splitlines()] == want
    assert _ok("sql", "--db", str(sim_db), "-f", "csv", query).splitlines() == [
        "a,a_2,a_1,A_3,b", "1,2,3,4,5"]
    for fmt in ("json", "jsonl", "csv", "parquet"):
        out = tmp_path / f"dup.{fmt}"
        _ok("sql", "--db", str(sim_db), "-f", fmt, "--out", str(out), query)
        with duckdb.connect() as con:
            got = con.sql(f"SELECT * FROM '{out}'")
            assert (got.columns, got.fetchall()) == (names, [(1, 2, 3, 4, 5)]), fmt


def test_unique_names_rename_only_repeats_and_skip_names_taken() -> None:
    from projections.export import unique_names

    assert unique_names([]) == []
    assert unique_names(["x", "y"]) == ["x", "y"]
    assert unique_names(["x", "x", "x"]) == ["x", "x_1", "x_2"]
    assert unique_names(["x", "x_1", "x", "x_1"]) == ["x", "x_1", "x_2", "x_1_1"]
    # DuckDB compares identifiers without the case of ASCII letters: `A` is `a` to COPY,
    # `É` is not `é`, nor the Kelvin sign `k`.
    assert unique_names(["a", "A", "A_1", "B", "b"]) == ["a", "A_2", "A_1", "B", "b_1"]
    assert unique_names(["É", "é", "\u212a", "k", "K"]) == ["É", "é", "\u212a", "k", "K_1"]


# In one process (a server, a script calling export_query), an export stopped part way left
# its Arrow reader open until garbage collection, its query running: the next connection to
# the database waited for it for ever. Found by session 17's outside review.
_AFTER_A_STOPPED_EXPORT = """
import io, sys
from pathlib import Path
from events.errors import ProjectionError
from projections.sql_console import export_query, run_query
db, out = sys.argv[1], Path(sys.argv[2])
for target in (io.StringIO(), out):
    for fmt in ("jsonl", "csv"):
        try:  # the bad value is in the last of many batches: the reader stops part way
            export_query(db, "SELECT CASE WHEN i = 250000 THEN "
                             "170141183460469231731687303715884105727::HUGEINT END "
                             "AS t FROM range(250001) r(i)", fmt, target)
        except ProjectionError as exc:
            print(str(exc).split(" (")[0])
        print(run_query(db, "SELECT 41 + 1 AS x")[1])
"""


def test_a_stopped_export_leaves_the_next_query_in_the_process_free(
        sim_db: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    # The timeout only ends a hang (the bug); it judges no speed.
    run = subprocess.run([sys.executable, "-c", _AFTER_A_STOPPED_EXPORT, str(sim_db),
                          str(tmp_path / "t.jsonl")], cwd=root, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "column 't' holds a value that cannot be written out", "[{'x': 42}]"] * 4
    assert list(tmp_path.iterdir()) == []


# A query that fails part way (DuckDB's error comes through the Arrow stream as an OSError)
# was told as the disk's: "cannot write FILE: Conversion Error ...; free some space". Now it is
# the query's, one line, on stdout and into a file, which is left as it was.
def test_a_query_failing_part_way_is_the_querys_error_not_the_disks(
        sim_db: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    query = ("SELECT CAST(CASE WHEN i > 250000 THEN 'x' ELSE '1' END AS INT) AS n "
             "FROM range(300000) t(i)")
    out = tmp_path / "n.jsonl"
    out.write_text("an earlier export\n")
    for where in ([], ["--out", str(out)]):
        run = subprocess.run([sys.executable, "-m", "cli.app", "sql", "--db", str(sim_db), "-f",
                              "jsonl", *where, query],
                             capture_output=True, text=True, timeout=300, cwd=root)
        assert run.returncode == 1 and run.stdout == "", run.stderr
        (line,) = run.stderr.splitlines()
        assert line.startswith("Error: the query failed: Conversion Error: Could not convert "
                               "string 'x' to INT32 LINE 1: SELECT CAST("), line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.jsonl"]
    assert out.read_text() == "an earlier export\n"


# CSV shows a name's control characters as escapes, but selected the raw name: a column named
# with a tab was "not found". Now its escaped name heads the column, on stdout and in files.
def test_a_csv_column_named_with_a_control_character_is_written(
        sim_db: Path, tmp_path: Path) -> None:
    query = 'SELECT 1 AS "a\tb", 2 AS "a\tb"'
    assert _ok("sql", "--db", str(sim_db), "-f", "csv", query).splitlines() == [
        "a\\x09b,a\\x09b_1", "1,2"]
    out = tmp_path / "t.csv"
    _ok("sql", "--db", str(sim_db), "-f", "csv", "--out", str(out), query)
    assert out.read_text().splitlines() == ["a\\x09b,a\\x09b_1", "1,2"]


def test_a_time_without_a_zone_is_shown_as_written_and_json_has_no_nan(db: Path) -> None:
    """`pitlog sql` of a TIMESTAMP without a zone (a wall clock, as `AT TIME ZONE` makes one)
    shows it as it is on every format: never moved to --tz again, never given a Z (it was
    shown five hours early on New York's clock, and "...Z" in JSON and CSV). JSON has no NaN
    or infinity: such a value is null there (DuckDB wrote them bare: no JSON reader took it)."""
    query = ("SELECT TIMESTAMP '2026-11-28 18:01:29.5' AS wall, "
             "TIMESTAMPTZ '2026-11-28 23:01:29+00' AS instant, 'NaN'::DOUBLE AS nan, "
             "'-inf'::DOUBLE AS low, 1.5::DOUBLE AS x")
    where = ["--db", str(db), "--tz", "America/New_York"]
    table = _ok("sql", query, *where)
    assert "2026-11-28 18:01:29 " in table and "2026-11-28 18:01:29 EST" in table
    assert "13:01:29" not in table
    assert json.loads(_ok("sql", query, *where, "--format", "json")) == [
        {"wall": "2026-11-28T18:01:29.500000", "instant": "2026-11-28T23:01:29.000000Z",
         "nan": None, "low": None, "x": 1.5}]
    assert json.loads(_ok("sql", query, *where, "--format", "jsonl")) == {
        "wall": "2026-11-28T18:01:29.500000", "instant": "2026-11-28T23:01:29.000000Z",
        "nan": None, "low": None, "x": 1.5}
    header, row = _ok("sql", query, *where, "--format", "csv").splitlines()
    assert header == "wall,instant,nan,low,x"
    assert row == "2026-11-28T18:01:29.500000,2026-11-28T23:01:29.000000Z,nan,-inf,1.5"


def _strict_json(text: str) -> object:
    """json.loads as a strict JSON reader: Python's accepts NaN and Infinity, JSON has neither."""
    def refuse(constant: str) -> object:
        raise AssertionError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_values_inside_lists_structs_and_maps_are_json_and_keep_their_wall_clock(
        db: Path) -> None:
    """The rule above inside nested values: a NaN in a list, a struct or a map was written bare
    (no JSON reader took the output) and a wall-clock time inside a struct got a Z."""
    query = ("SELECT [1.5, 'NaN'::DOUBLE, 'inf'::DOUBLE] AS floats, "
             "{'ratio': 'NaN'::DOUBLE, 'wall': TIMESTAMP '2026-11-28 18:01:29.5'} AS facts, "
             "[[1.0, '-inf'::DOUBLE], NULL] AS nested, MAP {'k': 'NaN'::DOUBLE} AS by_key, "
             "[TIMESTAMPTZ '2026-11-28 23:01:29+00'] AS instants, "
             "[1.0, 'NaN'::DOUBLE]::DOUBLE[2] AS pair")
    expected = {"floats": [1.5, None, None],
                "facts": {"ratio": None, "wall": "2026-11-28T18:01:29.500000"},
                "nested": [[1.0, None], None], "by_key": {"k": None},
                "instants": ["2026-11-28T23:01:29.000000Z"], "pair": [1.0, None]}
    where = ["--db", str(db)]
    assert _strict_json(_ok("sql", query, *where, "--format", "json")) == [expected]
    assert _strict_json(_ok("sql", query, *where, "--format", "jsonl")) == expected
    header, row = _ok("sql", query, *where, "--format", "csv").splitlines()
    assert header == "floats,facts,nested,by_key,instants,pair"
    assert row.startswith('"[1.5, nan, inf]","{\'ratio\': nan, \'wall\': '
                          '\'2026-11-28T18:01:29.500000\'}"')


def test_a_null_row_of_a_fixed_size_array_and_a_maps_float_keys_are_kept(db: Path) -> None:
    """A fixed-size array column with a NULL row lost that row and shifted the rest (CSV), or
    failed (JSON); a map keyed by an infinite float failed (a key is never null)."""
    query = ("SELECT i, CASE WHEN i = 1 THEN NULL ELSE "
             "[i * 10.0, 'NaN'::DOUBLE]::DOUBLE[2] END AS pair, "
             "CASE WHEN i = 2 THEN NULL ELSE "
             "[TIMESTAMP '2026-01-01 00:00:00' + INTERVAL (i) HOUR]::TIMESTAMP[1] END AS wall, "
             "MAP {'-inf'::DOUBLE: i, 2.0: 'NaN'::DOUBLE} AS by_float "
             "FROM range(4) AS t(i) ORDER BY i")
    where = ["--db", str(db)]
    rows = _strict_json(_ok("sql", query, *where, "--format", "json"))
    assert [(r["i"], r["pair"], r["wall"]) for r in rows] == [  # type: ignore[union-attr]
        (0, [0.0, None], ["2026-01-01T00:00:00.000000"]), (1, None, ["2026-01-01T01:00:00.000000"]),
        (2, [20.0, None], None), (3, [30.0, None], ["2026-01-01T03:00:00.000000"])]
    assert [r["by_float"] for r in rows] == [  # type: ignore[union-attr]
        {"-inf": i, "2.0": None} for i in range(4)]
    lines = _ok("sql", query, *where, "--format", "csv").splitlines()
    assert len(lines) == 5 and lines[2].startswith("1,,") and lines[3].startswith(
        '2,"[20.0, nan]",,')


def test_a_map_column_is_written_in_every_format(db: Path, tmp_path: Path) -> None:
    """A MAP column in each format, read from the file: its keys and values whole, a zoneless
    time inside it as written (through `pitlog serve` a MAP still cannot be written: the
    closing note of session 28)."""
    query = ("SELECT map(['a', 'b'], [1, 2]) AS counts, NULL::MAP(VARCHAR, INTEGER) AS none_, "
             "map([1], [TIMESTAMP '2026-11-28 21:00:00']) AS walls")
    where = ["--db", str(db)]
    assert _strict_json(_ok("sql", query, *where, "--format", "json")) == [
        {"counts": {"a": 1, "b": 2}, "none_": None, "walls": {"1": "2026-11-28T21:00:00.000000"}}]
    assert _ok("sql", query, *where, "--format", "csv").splitlines() == [
        "counts,none_,walls", '"{a=1, b=2}",,{1=\'2026-11-28T21:00:00.000000\'}']
    out = tmp_path / "maps.parquet"
    _ok("sql", query, *where, "--format", "parquet", "--out", str(out))
    with duckdb.connect() as con:
        assert con.execute(f"SELECT counts, none_ FROM '{out}'").fetchall() == [
            ({"a": 1, "b": 2}, None)]

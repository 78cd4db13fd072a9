"""`pitlog sql` prints each DuckDB value the same way in every format, from the file and
through a running server (/api/sql): DuckDB's text for what Arrow misstates (an INTERVAL, a
UHUGEINT, a BIT, a TIME inside a struct), NaN and infinity as `nan`, `inf`, `-inf` (null in
JSON, which has neither), a MAP as a dict. An outside review found each printed otherwise
(`0 0 27000000000`, -1, bytes, `datetime.time(1, 2, 3)`, empty cells or None)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from repo_paths import REPO
from serve_support import Server, ingested_store, run_cli, serving


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return ingested_store(tmp_path_factory.mktemp("sqlvalues"),
                          (REPO / "examples" / "devices.jsonl").read_text())


@pytest.fixture(scope="module")
def server(store: tuple[Path, Path, Path]) -> Iterator[Server]:
    yield from serving(store)


def _printed(store: tuple[Path, Path, Path], sql: str, fmt: str) -> dict[str, str]:
    """stdout of `pitlog sql` from the file and through the server, by path; each exit 0."""
    tmp, _, db = store
    out = {}
    for path, where in (("file", tmp / "alone.duckdb"), ("server", db)):
        # as wide as any row here, whatever $COLUMNS a test before left in this process
        done = run_cli("sql", sql, "--db", str(where), "-f", fmt, env={"COLUMNS": "300"})
        assert done.returncode == 0, (path, fmt, done.stderr)
        assert done.stderr == "", (path, fmt)  # answered by the server when it runs: no warning
        out[path] = done.stdout
    return out


def _cells(table: str) -> list[str]:
    """The cells of a one-row table as `pitlog sql` draws it."""
    (row,) = [line for line in table.splitlines() if line.startswith("│")]
    return [cell.strip() for cell in row.strip("│").split("│")]


def _every_format(store: tuple[Path, Path, Path], server: Server, sql: str, cells: list[str],
                  csv: str, as_json: list[dict[str, Any]]) -> None:
    """The table's cells, the CSV and the JSON, the same from the file and the server."""
    assert server.proc.poll() is None
    for path, out in _printed(store, sql, "table").items():
        assert _cells(out) == cells, path
    for path, out in _printed(store, sql, "csv").items():
        assert out == csv, path
    for path, out in _printed(store, sql, "json").items():
        assert json.loads(out) == as_json, path


def test_an_interval_is_duckdbs_text_in_every_format_and_path(
        store: tuple[Path, Path, Path], server: Server) -> None:
    # Was `0 0 27236787000` in the file's table, `[0, 0, 27236787000]` in a served list.
    _every_format(
        store, server, "SELECT INTERVAL 27236787 MICROSECONDS AS i, "
                       "[INTERVAL 27236787 MICROSECONDS] AS l, {'a': INTERVAL 3 DAY} AS s",
        ["00:00:27.236787", "00:00:27.236787", "{'a': '3 days'}"],
        "i,l,s\n00:00:27.236787,['00:00:27.236787'],{'a': 3 days}\n",
        [{"i": "00:00:27.236787", "l": ["00:00:27.236787"], "s": {"a": "3 days"}}])


def test_nan_and_infinity_print_as_values_and_are_null_in_json(
        store: tuple[Path, Path, Path], server: Server) -> None:
    # Through a server they were empty cells (or None inside a list) in the table and CSV.
    _every_format(
        store, server, "SELECT 'nan'::DOUBLE AS n, 'inf'::DOUBLE AS p, '-inf'::FLOAT AS m, "
                       "['nan'::DOUBLE, 1.5] AS l, {'x': '-inf'::DOUBLE} AS s, NULL::DOUBLE AS z, "
                       "'nan' AS t",
        ["nan", "inf", "-inf", "nan 1.5", "{'x': -inf}", "", "nan"],
        "n,p,m,l,s,z,t\nnan,inf,-inf,\"[nan, 1.5]\",{'x': -inf},,nan\n",
        [{"n": None, "p": None, "m": None, "l": [None, 1.5], "s": {"x": None}, "z": None,
          "t": "nan"}])


def test_a_null_inside_a_list_or_struct_is_null_in_the_table(
        store: tuple[Path, Path, Path], server: Server) -> None:
    # Was Python's `None` in the table (`1 None`, `{'a': None}`), where the CSV says NULL.
    _every_format(
        store, server, "SELECT [1, NULL] AS l, {'a': NULL, 'b': [NULL, 'x']} AS s, "
                       "[[2, NULL]] AS ll, NULL::INTEGER AS n",
        ["1 NULL", "{'a': NULL, 'b': [NULL, 'x']}", "[2, NULL]", ""],
        "l,s,ll,n\n\"[1, NULL]\",\"{'a': NULL, 'b': [NULL, x]}\",\"[[2, NULL]]\",\n",
        [{"l": [1, None], "s": {"a": None, "b": [None, "x"]}, "ll": [[2, None]], "n": None}])


def test_a_string_nan_beside_a_float_of_the_same_name_stays_a_string(
        store: tuple[Path, Path, Path], server: Server) -> None:
    # A second read (session 42): X-Pitlog-Floats named keys, so a VARCHAR 'inf' under a key a
    # struct's infinite float also had was read back as the float (null in JSON, 'inf' lost).
    _every_format(
        store, server, "SELECT {'note': 'inf'::DOUBLE} AS s, 'inf' AS note, "
                       "'nan'::DOUBLE AS x, {'x': 'nan'} AS t",
        ["{'note': inf}", "inf", "nan", "{'x': 'nan'}"],
        "s,note,x,t\n{'note': inf},inf,nan,{'x': nan}\n",
        [{"s": {"note": None}, "note": "inf", "x": None, "t": {"x": "nan"}}])


def test_a_string_beside_a_decimal_or_wall_clock_of_the_same_name_stays_a_string(
        store: tuple[Path, Path, Path], server: Server) -> None:
    # A second read (session 42), mended in session 43: X-Pitlog-Decimals and
    # X-Pitlog-Wall-Clocks named bare keys, so a VARCHAR under a key a struct's DECIMAL or
    # TIMESTAMP also had was read back as a Decimal or a datetime: the text '1.50' was the
    # number 1.5 in JSON through a server.
    _every_format(
        store, server, "SELECT {'amt': 1.50::DECIMAL(6,2)} AS s, '1.50' AS amt, "
                       "TIMESTAMP '2026-11-28 18:01:29' AS at, {'at': '2026-11-28T18:01:29'} AS t",
        ["{'amt': '1.50'}", "1.50", "2026-11-28 18:01:29", "{'at': '2026-11-28T18:01:29'}"],
        "s,amt,at,t\n{'amt': 1.50},1.50,2026-11-28T18:01:29.000000,{'at': '2026-11-28T18:01:29'}\n",
        [{"s": {"amt": 1.5}, "amt": "1.50", "at": "2026-11-28T18:01:29.000000",
          "t": {"at": "2026-11-28T18:01:29"}}])


def test_a_union_is_its_values_text_in_every_format_and_path(
        store: tuple[Path, Path, Path], server: Server, tmp_path: Path) -> None:
    # From the file, CSV, JSON and Parquet refused a UNION (`sparse_union`: "cannot be written
    # out") where the table and a server's answers showed its value (noticed in session 42).
    _every_format(
        store, server, "SELECT union_value(k := 5) AS u, [union_value(k := 'x')] AS ul, "
                       "union_value(s := {'a': 1.50::DECIMAL(4,2)}) AS us",
        ["5", "x", "{'a': 1.50}"],
        "u,ul,us\n5,[x],{'a': 1.50}\n",
        [{"u": "5", "ul": ["x"], "us": "{'a': 1.50}"}])
    tmp, _, _ = store
    out = tmp_path / "u.parquet"
    done = run_cli("sql", "SELECT union_value(k := 5) AS u", "--db",
                   str(tmp / "alone.duckdb"), "-f", "parquet", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert duckdb.sql(f"SELECT u, typeof(u) FROM '{out}'").fetchall() == [("5", "VARCHAR")]


def test_the_widest_integers_print_exactly(store: tuple[Path, Path, Path],
                                           server: Server) -> None:
    # The largest UHUGEINT printed -1 (Arrow's 128-bit decimal wraps): now DuckDB's text.
    _every_format(
        store, server, "SELECT 340282366920938463463374607431768211455::UHUGEINT AS u, "
                       "[340282366920938463463374607431768211455::UHUGEINT] AS ul, "
                       "-123::HUGEINT AS h",
        ["340282366920938463463374607431768211455",
         "340282366920938463463374607431768211455", "-123"],
        "u,ul,h\n340282366920938463463374607431768211455,"
        "[340282366920938463463374607431768211455],-123\n",
        [{"u": "340282366920938463463374607431768211455",
          "ul": ["340282366920938463463374607431768211455"], "h": -123}])
    # A HUGEINT's extremes, 39 digits, in the table either way.
    extremes = ("SELECT 170141183460469231731687303715884105727::HUGEINT AS hi, "
                "(-170141183460469231731687303715884105728)::HUGEINT AS lo")
    for path, out in _printed(store, extremes, "table").items():
        assert _cells(out) == ["170141183460469231731687303715884105727",
                               "-170141183460469231731687303715884105728"], path


def test_a_hugeint_past_38_digits_in_a_list_is_the_same_error_through_a_server(
        store: tuple[Path, Path, Path], server: Server) -> None:
    """No export can write it (DuckDB reads no decimal past 38 digits): through a server that
    was an internal error; now the file's one line, which says how to get it as text."""
    tmp, _, db = store
    sql = "SELECT [170141183460469231731687303715884105727::HUGEINT] AS hl"
    for where in (tmp / "alone.duckdb", db):
        done = run_cli("sql", sql, "--db", str(where), "-f", "csv")
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.startswith("Error: column 'hl' holds a value that cannot be "
                                      "written out ("), where
        assert "cast it to text in the query, e.g. CAST(hl AS VARCHAR)" in done.stderr
        assert len(done.stderr.splitlines()) == 1


def test_a_bit_string_is_duckdbs_text(store: tuple[Path, Path, Path], server: Server) -> None:
    # Was the bytes DuckDB stores (hex 04f5 from the file, other bytes through a server).
    _every_format(
        store, server, "SELECT '0101'::BIT AS b, ['1'::BIT] AS bl, {'b': '110'::BIT} AS s",
        ["0101", "1", "{'b': '110'}"],
        "b,bl,s\n0101,[1],{'b': 110}\n",
        [{"b": "0101", "bl": ["1"], "s": {"b": "110"}}])


def test_a_nanosecond_timestamp_is_duckdbs_text(
        store: tuple[Path, Path, Path], server: Server) -> None:
    # Was an Error quoting pyarrow's advice to install pandas, in every format from the file
    # (Python's datetime holds no nanoseconds).
    at = "2020-01-01 00:00:00.123456789"
    _every_format(
        store, server, f"SELECT '{at}'::TIMESTAMP_NS AS t, ['{at}'::TIMESTAMP_NS] AS l",
        [at, at],
        f"t,l\n{at},['{at}']\n",
        [{"t": at, "l": [at]}])


def test_a_time_inside_a_struct_or_list_is_duckdbs_text(
        store: tuple[Path, Path, Path], server: Server) -> None:
    # Was `{'t': datetime.time(1, 2, 3)}` in the file's table.
    _every_format(
        store, server, "SELECT {'t': TIME '01:02:03'} AS s, [TIME '01:02:03.5'] AS l, "
                       "TIME '04:05:06' AS t",
        ["{'t': '01:02:03'}", "01:02:03.5", "04:05:06"],
        "s,l,t\n{'t': '01:02:03'},['01:02:03.5'],04:05:06\n",
        [{"s": {"t": "01:02:03"}, "l": ["01:02:03.5"], "t": "04:05:06"}])


def test_a_map_is_a_dict_in_the_table_either_way(store: tuple[Path, Path, Path],
                                                  server: Server) -> None:
    # The file's table showed Arrow's pairs, ['k', [1, 2]]; a server's, {'k': [1, 2]}.
    sql = "SELECT MAP {'k': [1, 2]} AS m"
    for path, out in _printed(store, sql, "table").items():
        assert _cells(out) == ["{'k': [1, 2]}"], path
    for path, out in _printed(store, sql, "json").items():
        assert json.loads(out) == [{"m": {"k": [1, 2]}}], path


def test_parquet_keeps_an_interval_and_a_time_and_writes_a_uhugeint_exactly(
        store: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """Parquet holds an INTERVAL and a TIME exactly: only what Arrow misstates is text."""
    tmp, _, _ = store
    out = tmp_path / "v.parquet"
    done = run_cli("sql", "SELECT INTERVAL 3 DAY AS i, TIME '01:02:03' AS t, "
                          "340282366920938463463374607431768211455::UHUGEINT AS u",
                   "--db", str(tmp / "alone.duckdb"), "-f", "parquet", "--out", str(out))
    assert done.returncode == 0, done.stderr
    with duckdb.connect() as con:
        rel = con.sql(f"SELECT i, t, u FROM '{out}'")
        assert [str(t) for t in rel.types] == ["INTERVAL", "TIME", "VARCHAR"]
        assert rel.fetchall()[0][2] == "340282366920938463463374607431768211455"
    # A nanosecond timestamp passes through Python on its way to Parquet: its text, whole
    # (was an Error advising pandas)
    done = run_cli("sql", "SELECT '2020-01-01 00:00:00.123456789'::TIMESTAMP_NS AS n",
                   "--db", str(tmp / "alone.duckdb"), "-f", "parquet", "--out", str(out))
    assert done.returncode == 0, done.stderr
    with duckdb.connect() as con:
        assert con.sql(f"SELECT n FROM '{out}'").fetchall() == [
            ("2020-01-01 00:00:00.123456789",)]



def test_a_map_through_a_server_is_its_json_as_docs_say(
        store: tuple[Path, Path, Path], server: Server) -> None:
    # docs/operating.md: the one value a server does not give back as the file does. A MAP
    # goes through DuckDB's to_json (Arrow's pairs would be a list), so its keys come back as
    # text and a DECIMAL value as a JSON number; the JSON format is the same either way.
    sql = "SELECT MAP {1: 1.50::DECIMAL(6,2), 2: 2.25::DECIMAL(6,2)} AS m"
    table = _printed(store, sql, "table")
    assert _cells(table["file"]) == ["{1: '1.50', 2: '2.25'}"]
    assert _cells(table["server"]) == ["{'1': 1.5, '2': 2.25}"]
    for path, out in _printed(store, sql, "json").items():
        assert json.loads(out) == [{"m": {"1": 1.5, "2": 2.25}}], path

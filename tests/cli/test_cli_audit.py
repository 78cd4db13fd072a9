"""The audit commands: reconcile, ledger, conservation, sql and report, with their exports."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from audit_scenarios import MONEY, ORIGINAL, Floor, evening
from repo_paths import REPO
from typer.testing import CliRunner

from cli.app import app
from events.reddog.model import SettledAs

runner = CliRunner()
NY = ["--tz", "America/New_York"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return evening(tmp_path_factory.mktemp("evening"))


def _pitlog(*args: str) -> subprocess.CompletedProcess[str]:
    """The real entry point in a subprocess: exit codes and `Error:` lines as a user sees them."""
    return subprocess.run([sys.executable, "-m", "cli.app", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=120, check=False)


def _json(args: list[str]) -> list[dict[str, object]]:
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output, parse_float=Decimal)  # JSON numbers, read exactly


def test_reconcile_json_has_exact_cents_and_exact_theo(db: Path) -> None:
    rows = {r["table_id"]: r for r in _json(["reconcile", "--db", str(db), *NY])}
    n, handle, paid, collected, returned, net, hold = MONEY["T01"]
    t1 = rows["T01"]
    assert (t1["rounds"], t1["handle_cents"], t1["paid_cents"], t1["collected_cents"],
            t1["returned_cents"], t1["net_win_cents"], t1["hold_pct"]) == \
        (n, handle, paid, collected, returned, net, Decimal(str(hold)))
    assert "/" in str(t1["theo_win_exact"]) and isinstance(t1["theo_win_cents"], Decimal)


def test_reconcile_by_table_and_day_as_csv(db: Path) -> None:
    result = runner.invoke(app, ["reconcile", "--db", str(db), "--by", "table", "--by", "day",
                                 *NY, "--format", "csv"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("table_id,gaming_day,rounds,wagers,handle_cents,")
    assert lines[1].startswith("T01,2026-11-28,4,8,10500,")
    assert len(lines) == 4


def test_reconcile_exports_parquet(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "hold.parquet"
    result = runner.invoke(app, ["reconcile", "--db", str(db), "--by", "dealer",
                                 "--format", "parquet", "--out", str(out)])
    assert result.exit_code == 0, result.output
    table = pq.read_table(out).to_pylist()
    assert {r["dealer"]: r["handle_cents"] for r in table} == \
        {"D1": 5000, "D4": 5500, "D2": 3000, "D3": 18000}


def test_reconcile_table_format_for_people(db: Path) -> None:
    result = runner.invoke(app, ["reconcile", "--db", str(db), "--by", "shift", *NY],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "14:00-22:00" in result.output and "$315.00" in result.output


def test_ledger_lists_every_wager_and_filters_exceptions(db: Path) -> None:
    rows = _json(["ledger", "--db", str(db)])
    assert len(rows) == 16 and {r["status"] for r in rows} == {"OK"}
    assert rows[0]["table_id"] == "T01" and rows[0]["expected_paid_cents"] == 30000
    assert _json(["ledger", "--db", str(db), "--exceptions"]) == []
    raises = _json(["ledger", "--db", str(db), "--table", "T02", "--status", "ok"])
    assert [(r["round_no"], r["wager_kind"], r["actual_paid_cents"]) for r in raises][:2] == \
        [(1, "ORIGINAL", 2000), (1, "RAISE", 2000)]


def test_ledger_day_is_the_gaming_day_its_round_started_in(db: Path) -> None:
    """Play runs 23:00-23:03 UTC: with gaming days starting at 23:01, T01's rounds (23:00)
    belong to the 27th and the others to the 28th, as reconcile counts them."""
    rows = _json(["ledger", "--db", str(db)])
    day = ["--db", str(db), "--gaming-day-start", "23:01"]
    on_27 = _json(["ledger", *day, "--day", "2026-11-27"])
    on_28 = _json(["ledger", *day, "--day", "2026-11-28"])
    assert on_27 == [r for r in rows if r["table_id"] == "T01"] and on_27
    assert on_28 == [r for r in rows if r["table_id"] != "T01"] and on_28
    hold = _json(["reconcile", *day, "--day", "2026-11-27", "--by", "table"])
    assert [h["wagers"] for h in hold] == [len(on_27)]  # each a wager or a raise, as the ledger
    proc = _pitlog("ledger", *day, "--day", "2026-11-26")
    assert proc.returncode == 1 and proc.stderr == (
        "Error: no rounds on gaming day 2026-11-26 (gaming days start at 23:01 in UTC); rounds "
        "were played on 2 gaming days from 2026-11-27 to 2026-11-28\n")


def test_ledger_csv_export_has_every_column(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "ledger.csv"
    result = runner.invoke(app, ["ledger", "--db", str(db), "--format", "csv", "--out", str(out)])
    assert result.exit_code == 0, result.output
    header = out.read_text().splitlines()[0].split(",")
    assert {"expected_outcome", "actual_outcome", "paytable_valid", "settlement_seqs",
            "status"} <= set(header)


def test_unknown_ledger_status_is_an_error_line(db: Path) -> None:
    proc = _pitlog("ledger", "--db", str(db), "--status", "LOST")
    assert proc.returncode == 1 and proc.stderr.startswith("Error: unknown ledger status")


def test_reconcile_refuses_a_shift_start_given_twice_with_one_error_line(db: Path) -> None:
    proc = _pitlog("reconcile", "--db", str(db), "--by", "shift", "--shifts", "06:00,06:00")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == ("Error: --shifts '06:00,06:00' gives the start 06:00 twice: each "
                           "shift runs from its start to the next one, so give each start "
                           "once, e.g. 06:00,14:00,22:00\n")


def test_conservation_exit_code_follows_the_balance(db: Path, tmp_path: Path) -> None:
    rows = _json(["conservation", "--db", str(db), *NY])
    assert [(r["table_id"], r["difference_cents"], r["balanced"]) for r in rows] == \
        [("T01", 0, True), ("T02", 0, True), ("T03", 0, True)]
    floor = Floor(tmp_path)
    t = floor.table("T05")
    t.open_table("nj-casino")
    t.new_shoe("T05-S1")
    t.play("3C 9H 5D", {1: 1000}, override={(1, ORIGINAL): [(SettledAs.WON, 1000, 1)] * 2})
    result = runner.invoke(app, ["conservation", "--db", str(floor.build()), "--format",
                                 "json"])
    assert result.exit_code == 1
    assert json.loads(result.output)[0]["difference_cents"] == -1000


def test_sql_runs_a_read_only_query(db: Path) -> None:
    rows = _json(["sql", "--db", str(db),
                  "SELECT status, count(*) AS n FROM ledger GROUP BY status"])
    assert rows == [{"status": "OK", "n": 16}]
    rows = _json(["sql", "--db", str(db), "DESCRIBE ledger"])
    assert "expected_outcome" in {r["column_name"] for r in rows}


@pytest.mark.parametrize("query", [
    "DELETE FROM events",
    "DROP VIEW ledger",
    "SELECT 1; DROP TABLE events",
    "COPY (SELECT 1) TO 'leak.csv'",
    "ATTACH 'other.duckdb' AS other",
    "EXPLAIN ANALYZE DELETE FROM events",
    "WITH x AS (SELECT 1) INSERT INTO checkpoints SELECT 'a', 0, 0 FROM x",
    "/* looks like */ UPDATE events SET amount_cents = 0",
    "INSTALL httpfs",
])
def test_sql_refuses_anything_that_could_write(db: Path, query: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "cli.app", "sql", "--db", str(db), query],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: pitlog sql runs ") and "Traceback" not in proc.stderr
    assert not (tmp_path / "leak.csv").exists()
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM events").fetchall()[0][0] > 0
        assert con.execute("SELECT count(*) FROM ledger").fetchall()[0][0] == 16


def test_sql_explain_shows_the_plan_a_line_a_line(db: Path) -> None:
    """EXPLAIN's plan is one text of many lines: it showed as one line joined by `\\x0a`."""
    proc = _pitlog("sql", "--db", str(db), "EXPLAIN SELECT table_id, count(*) FROM events "
                   "GROUP BY 1")
    assert proc.returncode == 0, proc.stderr
    assert "\\x0a" not in proc.stdout
    # The plan's lines, each in the second column of the table (between its outer bars).
    plan = [line[line.index("│", 1) + 1:-1].strip() for line in proc.stdout.splitlines()
            if line.startswith("│")]
    assert plan[0].startswith("╭─ Projection")
    assert "│ Aggregates: count_star()" in [p[:26] for p in plan]
    assert plan[-2].startswith("╰─") and plan[-1] == ""


def test_sql_error_in_a_query_is_an_error_line(db: Path) -> None:
    proc = _pitlog("sql", "--db", str(db), "SELECT nope FROM ledger")
    assert proc.returncode == 1 and proc.stderr.startswith("Error: the query failed")


def test_report_writes_a_self_contained_html_file(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "day.html"
    result = runner.invoke(app, ["report", "--db", str(db), "--out", str(out), *NY,
                                 "--day", "2026-11-28"])
    assert result.exit_code == 0, result.output
    assert "gaming day 2026-11-28, 10 rounds, 3 tables" in result.output
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html


@pytest.mark.parametrize(("args", "message"), [
    (["report", "--out", "day.txt"], "Error: --out day.txt: the report is HTML"),
    (["report", "--out", "day.html", "--day", "2026-11-27"],
     "Error: no rounds on gaming day 2026-11-27 (gaming days start at 06:00 in UTC); rounds "
     "were played on 2026-11-28\n"),
    # A day with no round is an error naming the days played, never an empty answer, nor a
    # balance of nothing that conservation passed with exit 0.
    (["anomalies", "--day", "2026-11-29", "--table", "T01"],
     "Error: no rounds at table T01 on gaming day 2026-11-29 (gaming days start at 06:00 in "
     "UTC); rounds at table T01 were played on 2026-11-28\n"),
    (["reconcile", "--day", "2026-11-29"],
     "Error: no rounds on gaming day 2026-11-29 (gaming days start at 06:00 in UTC); rounds "
     "were played on 2026-11-28\n"),
    # Play from 23:00 to 23:03 UTC: a day starting at 23:01 puts T01's rounds on the 27th.
    (["conservation", "--day", "2026-11-26", "--gaming-day-start", "23:01"],
     "Error: no rounds on gaming day 2026-11-26 (gaming days start at 23:01 in UTC); rounds "
     "were played on 2 gaming days from 2026-11-27 to 2026-11-28\n"),
    (["conservation", "--day", "2026-11-27", "--table", "T02", *NY, "--gaming-day-start", "04:00"],
     "Error: no rounds at table T02 on gaming day 2026-11-27 (gaming days start at 04:00 in "
     "America/New_York); rounds at table T02 were played on 2026-11-28\n"),
    # The shoe asked for too: T01-S1 was played on the 27th, other shoes on the 28th.
    (["ledger", "--shoe", "T01-S1", "--day", "2026-11-28", "--gaming-day-start", "23:01"],
     "Error: no rounds of shoe T01-S1 on gaming day 2026-11-28 (gaming days start at 23:01 in "
     "UTC); rounds of shoe T01-S1 were played on 2026-11-27\n"),
    # A shoe of another table: no round on any day, and projecting again would not help.
    (["ledger", "--table", "T02", "--shoe", "T01-S1", "--day", "2026-11-28"],
     "Error: no rounds at table T02 of shoe T01-S1 on gaming day 2026-11-28: there are none at "
     "table T02 of shoe T01-S1 on any day; `pitlog shoes` lists each table's shoes and rounds\n"),
    (["anomalies", "--table", "T01", "--shoe", "T01-S1", "--day", "2026-11-28",
      "--gaming-day-start", "23:01"],
     "Error: no rounds at table T01 of shoe T01-S1 on gaming day 2026-11-28 (gaming days start "
     "at 23:01 in UTC); rounds at table T01 of shoe T01-S1 were played on 2026-11-27\n"),
    (["report", "--out", "day.html", "--day", "28/11/2026"], "Error: gaming day '28/11/2026'"),
    (["reconcile", "--tz", "Mars/Olympus"], "Error: unknown time zone 'Mars/Olympus'"),
    (["reconcile", "--by", "pit"], "Error: cannot group by 'pit'"),
    (["conservation", "--gaming-day-start", "6am"], "Error: gaming-day start '6am'"),
])
def test_audit_mistakes_are_one_error_line(db: Path, tmp_path: Path, args: list[str],
                                           message: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "cli.app", *args, "--db", str(db)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          check=False)
    assert proc.returncode == 1, proc.stdout
    assert proc.stderr.startswith(message) and len(proc.stderr.strip().splitlines()) == 1


def test_audit_commands_on_a_missing_database_are_an_error_line(tmp_path: Path) -> None:
    proc = _pitlog("reconcile", "--db", str(tmp_path / "nothing.duckdb"))
    assert proc.returncode == 1 and proc.stderr.startswith("Error: no database at")


def test_every_query_in_docs_auditing_runs_in_a_stock_client(db: Path) -> None:
    text = (REPO / "docs" / "auditing.md").read_text()
    queries = re.findall(r"```sql\n(.*?)```", text, flags=re.DOTALL)
    assert len(queries) >= 6
    with duckdb.connect(str(db), read_only=True) as con:  # no pitlog code in between
        results = [con.execute(q).fetchall() for q in queries]
    hold = next(r for q, r in zip(queries, results, strict=True) if "hold_pct" in q)
    assert [(t, day, handle, net) for t, day, handle, net, _ in hold] == [
        ("T01", date(2026, 11, 28), 10500, -30500), ("T02", date(2026, 11, 28), 3000, -3000),
        ("T03", date(2026, 11, 28), 18000, -5000)]
    conserved = next(r for q, r in zip(queries, results, strict=True)
                     if "difference_cents" in q)
    assert [(t, diff) for t, *_, diff in conserved] == [("T01", 0), ("T02", 0), ("T03", 0)]


@pytest.mark.parametrize("args", [["shoes", "--table", "T01"], ["replay", "T01-S1"],
                                  ["sql", "SELECT min(opened_at) AS opened_at FROM shoes "
                                          "WHERE shoe_id = 'T01-S1'"]])
def test_every_command_that_shows_times_takes_tz(db: Path, args: list[str]) -> None:
    """README: the same thing has the same option everywhere, --tz among them; shoes, replay
    and sql show times but had no --tz (only PITLOG_TZ), so `--tz` was `No such option`."""
    wide = {"PITLOG_TZ": None, "COLUMNS": "250"}  # a time in one cell, not folded at 80
    local = runner.invoke(app, [*args, "--db", str(db), *NY], env=wide)
    assert local.exit_code == 0, local.output
    assert "2026-11-28 18:00:03 EST" in local.output  # T01-S1 loaded at 23:00:03 UTC
    utc = runner.invoke(app, [*args, "--db", str(db)], env=wide)
    assert "2026-11-28 23:00:03 UTC" in utc.output and "EST" not in utc.output


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this machine")
def test_a_full_disk_under_the_output_is_one_error_line(db: Path) -> None:
    """Output to a full disk (/dev/full answers every write with ENOSPC) was `Error: internal
    error (OSError...)` / `(IOException...); report the traceback`: a fault of the machine,
    named as pitlog's own."""
    with open("/dev/full", "w") as full:
        to_stdout = subprocess.run([sys.executable, "-m", "cli.app", "ledger", "--db", str(db),
                                    "--format", "json"], stdout=full, stderr=subprocess.PIPE,
                                   text=True, cwd=REPO, timeout=120, check=False)
    assert (to_stdout.returncode, to_stdout.stderr) == (
        1, "Error: No space left on device; free some space or write elsewhere\n")
    to_file = _pitlog("ledger", "--db", str(db), "--format", "csv", "--out", "/dev/full")
    assert (to_file.returncode, to_file.stderr) == (
        1, 'Error: cannot write /dev/full: Could not write file "/dev/full": No space left on '
           'device; free some space or write elsewhere\n')

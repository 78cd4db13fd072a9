"""`pitlog anomalies` and `pitlog dispute`: filters, every output format, one-line errors."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from repo_paths import REPO
from typer.testing import CliRunner

from cli.app import app
from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections.anomalies import COLUMNS, AnomalyFilter, list_anomalies
from projections.projector import project

runner = CliRunner()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tables, an NJ casino and a gaming-authority one, with irregularities injected."""
    folder = tmp_path_factory.mktemp("surveillance")
    config = SimConfig(seed=8, tables=2, rounds=400, seats=4, irregularities=0.01,
                       profiles=("nj-casino", "gaming-authority"),
                       per_code={"CALL_BET": 0.05, "LATE_RAISE": 0.05})
    with EmbeddedLog(folder / "log") as log:
        simulate(log, config)
        project(log, folder / "pitlog.duckdb")
    return folder / "pitlog.duckdb"


def _all(db: Path, **filters: Any) -> list[dict[str, Any]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return list_anomalies(con, AnomalyFilter(**filters))


def _json(*args: str) -> list[dict[str, Any]]:
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


def test_json_is_an_array_of_every_anomaly_with_the_row_schema(db: Path) -> None:
    rows = _json("anomalies", "--db", str(db))
    assert len(rows) == len(_all(db)) > 20
    assert all(list(r) == list(COLUMNS) for r in rows)
    assert {r["code"] for r in rows} >= {"CALL_BET", "LATE_RAISE"}
    assert all(isinstance(r["seqs"], list) and r["seqs"] for r in rows if r["round_no"])


def test_csv_has_a_header_and_one_line_per_anomaly(db: Path) -> None:
    result = runner.invoke(app, ["anomalies", "--db", str(db), "--code", "LATE_RAISE",
                                 "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.output)))
    assert list(rows[0]) == list(COLUMNS)
    assert len(rows) == len(_all(db, codes=("LATE_RAISE",))) and len(rows) >= 3
    assert {r["code"] for r in rows} == {"LATE_RAISE"}
    assert json.loads(rows[0]["seqs"]) and rows[0]["rule"] == "13:47-20.31(d)12-13; GA (11)"


def test_table_format_shows_the_anomalies(db: Path) -> None:
    result = runner.invoke(app, ["anomalies", "--db", str(db), "--code", "CALL_BET"],
                           env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "anomalies" in result.output and "CALL_BET" in result.output
    assert "call bet" in result.output


def test_filters_by_code_table_shoe_and_severity(db: Path) -> None:
    both = _json("anomalies", "--db", str(db), "--code", "CALL_BET", "--code", "LATE_RAISE")
    assert {r["code"] for r in both} == {"CALL_BET", "LATE_RAISE"}
    # call bets are flagged at every table (13:69F-6.5(b); GA (2))
    assert {r["table_id"] for r in both if r["code"] == "CALL_BET"} == {"T01", "T02"}
    t01 = _json("anomalies", "--db", str(db), "--table", "T01")
    assert t01 and {r["table_id"] for r in t01} == {"T01"}
    shoe = str(t01[0]["shoe_id"])
    in_shoe = _json("anomalies", "--db", str(db), "--shoe", shoe)
    assert in_shoe and {r["shoe_id"] for r in in_shoe} == {shoe}
    high = _json("anomalies", "--db", str(db), "--severity", "high")
    assert high and {r["severity"] for r in high} == {"high"}
    medium_up = _json("anomalies", "--db", str(db), "--severity", "medium")
    assert {r["severity"] for r in medium_up} == {"medium", "high"}


def test_filters_by_time_with_since_inclusive_and_until_exclusive(db: Path) -> None:
    rows = _all(db, statistics=False)
    at = rows[len(rows) // 2]["occurred_at"]
    iso = at.isoformat()
    since = _json("anomalies", "--db", str(db), "--since", iso, "--no-statistics")
    until = _json("anomalies", "--db", str(db), "--until", iso, "--no-statistics")
    assert len(since) + len(until) == len(rows)
    assert min(datetime.fromisoformat(r["occurred_at"]) for r in since) == at
    assert all(datetime.fromisoformat(r["occurred_at"]) < at for r in until)


def test_a_time_without_a_zone_is_read_in_the_given_time_zone(db: Path) -> None:
    utc = _json("anomalies", "--db", str(db), "--since", "2026-11-29T01:00:00+00:00",
                "--no-statistics")
    eastern = _json("anomalies", "--db", str(db), "--since", "2026-11-28T20:00",
                    "--tz", "America/New_York", "--no-statistics")
    assert utc == eastern and utc


def test_out_writes_the_rows_to_a_file(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "anomalies.json"
    result = runner.invoke(app, ["anomalies", "--db", str(db), "--format", "json",
                                 "--out", str(out)])
    assert result.exit_code == 0 and result.output == ""
    assert len(json.loads(out.read_text())) == len(_all(db))


def test_dispute_by_round_gives_every_section_in_json(db: Path) -> None:
    late = _all(db, codes=("LATE_RAISE",))[0]
    rows = _json("dispute", "--db", str(db), "--table", str(late["table_id"]),
                 "--round", f"{late['shoe_id']}:{late['round_no']}")
    sections = [r["section"] for r in rows]
    assert sections[0] == "round" and sections.count("round") == 1
    assert {"card", "announcement", "wager", "settlement", "anomaly"} <= set(sections)
    assert any(r["section"] == "anomaly" and r["code"] == "LATE_RAISE" for r in rows)
    cards = [r for r in rows if r["section"] == "card"]
    assert [c["rack_position"] for c in cards] == list(range(1, len(cards) + 1))


def test_dispute_at_a_time_and_seat_in_the_table_format(db: Path) -> None:
    late = _all(db, codes=("LATE_RAISE",))[0]
    seat = str(late["explanation"]).split()[1]
    result = runner.invoke(app, ["dispute", "--db", str(db), "--table", str(late["table_id"]),
                                 "--at", late["occurred_at"].isoformat(),
                                 "--seat", seat], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    for title in ("cards in discard-rack order", "announcements", "wagers, raises and choices",
                  "settlement required and made", "anomalies"):
        assert title in result.output
    assert "LATE_RAISE" in result.output and "raise placed" in result.output


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli.app", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=120)


@pytest.mark.parametrize(("args", "message"), [
    (["anomalies", "--code", "NO_SUCH_CODE"], "Error: no anomaly code NO_SUCH_CODE"),
    (["anomalies", "--since", "yesterday"], "Error: --since 'yesterday' is not a time"),
    (["anomalies", "--since", "2026-11-28T21:00", "--tz", "Mars/Olympus"],
     "Error: unknown time zone 'Mars/Olympus'"),
    (["dispute", "--table", "T01"], "Error: give either --at TIME or --round SHOE:ROUND"),
    (["dispute", "--table", "T01", "--round", "T01-S0001"], "Error: --round 'T01-S0001'"),
    (["dispute", "--table", "T09", "--round", "T09-S0001:1"],
     "Error: no shoe 'T09-S0001' in the store; `pitlog shoes` lists the shoes"),
    # Times whose UTC leaves Python's calendar were an internal error (OverflowError).
    (["dispute", "--table", "T01", "--at", "0001-01-01T00:00:00+01:00"],
     "Error: --at '0001-01-01T00:00:00+01:00' is out of range: in UTC it falls outside"),
    (["anomalies", "--until", "9999-12-31T23:59:59", "--tz", "-05:00"],
     "Error: --until '9999-12-31T23:59:59' is out of range"),
    (["anomalies", "--day", "9999-12-31"], "Error: gaming day 9999-12-31 is out of range"),
    # A window holding no moment answered "no rows", read as a quiet table. Its times on the
    # casino's clock, as typed (they were said in UTC).
    (["anomalies", "--since", "2026-11-28T22:00", "--until", "2026-11-28T21:00", "--tz",
      "-05:00"], "Error: until 2026-11-28 21:00:00 UTC-05:00 is not after since "
                 "2026-11-28 22:00:00 UTC-05:00: no moment is in that window"),
    (["anomalies", "--since", "2026-11-28T21:00Z", "--until", "2026-11-28T21:00:00+00:00"],
     "Error: until 2026-11-28 21:00:00 UTC is not after since 2026-11-28 21:00:00 UTC"),
])
def test_bad_input_is_one_error_line(db: Path, args: list[str], message: str) -> None:
    proc = _run(*args, "--db", str(db))
    assert proc.returncode == 1
    assert proc.stderr.startswith(message) and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("zone", "env", "shown"), [
    (["--tz", "America/New_York"], {}, "EST"),
    ([], {"PITLOG_TZ": "America/New_York"}, "EST"),
    ([], {"PITLOG_TZ": "+05:30"}, "UTC+05:30"),
])
def test_an_empty_window_is_said_on_the_casino_clock(db: Path, zone: list[str],
                                                     env: dict[str, str], shown: str) -> None:
    """The times as the officer typed them, on the clock the other output uses (--tz, else
    PITLOG_TZ): said in UTC, 22:00 read as 03:00 the next day. A fraction asked stays shown."""
    proc = subprocess.run(
        [sys.executable, "-m", "cli.app", "anomalies", "--since", "2026-11-28T22:00",
         "--until", "2026-11-28T21:59:59.250", *zone, "--db", str(db)],
        capture_output=True, text=True, cwd=REPO, timeout=120,
        env={**os.environ, **env})
    assert proc.returncode == 1
    assert proc.stderr == (
        f"Error: until 2026-11-28 21:59:59.250 {shown} is not after since 2026-11-28 22:00:00 "
        f"{shown}: no moment is in that window (since is inclusive, until exclusive); give the "
        f"earlier time as since\n")


def test_a_missing_database_is_an_error_line(tmp_path: Path) -> None:
    proc = _run("anomalies", "--db", str(tmp_path / "nowhere.duckdb"))
    assert proc.returncode == 1 and proc.stderr.startswith("Error: no database at ")

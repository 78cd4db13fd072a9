"""`pitlog dispute` for people: local times to the second with the zone named, exit 1 with one
`Error:` line outside a round, nothing cut at 80 columns, JSON in ISO 8601 with offsets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from repo_paths import REPO
from surveillance_pit import EVENING
from test_dispute import short_payout
from test_dispute_outside import build_evening


def _run(*args: str, columns: int = 80, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PITLOG_TZ"}
    return subprocess.run([sys.executable, "-m", "cli.app", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=120,
                          env={**environ, "COLUMNS": str(columns), **env})


@pytest.fixture(scope="module")
def evening(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    return build_evening(tmp_path_factory.mktemp("cli-outside"))


@pytest.fixture(scope="module")
def short_pay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return short_payout(tmp_path_factory.mktemp("short")).project()


@pytest.mark.parametrize(("landmark", "shift", "said"), [
    ("dealer_change", timedelta(0), "between rounds 1 and 2 of shoe S1"),
    ("s2_loaded", timedelta(0), "between shoes S1 and S2"),
    ("closed", timedelta(hours=7, minutes=30), "after the table closed"),
    ("r1_first", -timedelta(hours=2), "before the table opened"),
])
def test_a_moment_outside_any_round_is_an_error_naming_the_neighbours(
        evening: tuple[Path, dict[str, int]], landmark: str, shift: timedelta,
        said: str) -> None:
    db, m = evening
    # The moment as a New York wall-clock time without a zone: read with --tz.
    at = EVENING + timedelta(seconds=m[landmark]) + shift - timedelta(hours=5)
    proc = _run("dispute", "--db", str(db), "--table", "T01", "--tz", "America/New_York",
                "--at", at.replace(tzinfo=None).isoformat())
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {at:%Y-%m-%d %H:%M:%S} EST")
    assert said in lines[0]
    assert "round before: shoe S" in lines[0] or "no round before" in lines[0]
    assert "round after: shoe S" in lines[0] or "no round after" in lines[0]


def test_an_unknown_table_suggests_the_known_ids(evening: tuple[Path, dict[str, int]]) -> None:
    db, m = evening
    proc = _run("dispute", "--db", str(db), "--table", "t01",
                "--at", (EVENING + timedelta(seconds=m["r2_first"])).isoformat())
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: no table 't01' in the store (table ids are "
                                  "case-sensitive: did you mean T01?); known tables: T01")


def test_a_seat_that_did_not_play_is_an_error(evening: tuple[Path, dict[str, int]]) -> None:
    db, m = evening
    proc = _run("dispute", "--db", str(db), "--table", "T01", "--seat", "9",
                "--at", (EVENING + timedelta(seconds=m["r2_first"])).isoformat())
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: seat 9 did not play at table T01 at 2026-11-28 23:")
    assert "seats that played: 1, 3" in proc.stderr


def test_at_80_columns_amounts_statuses_and_local_times_are_whole(short_pay: Path) -> None:
    proc = _run("dispute", "--db", str(short_pay), "--table", "T01", "--round", "S1:1",
                "--tz", "America/New_York")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert max(len(line) for line in out.splitlines()) <= 80
    for whole in ("$10.00", "$50.00", "$40.00", "WRONG_AMOUNT", "WRONG_PAYOUT"):
        assert whole in out, whole
    assert "…" not in out
    # Each card's draw time on the casino's clock, to the second: 23:00:06 UTC is 18:00:06 EST.
    assert "18:00:06 EST" in out and "2026-11-28 18:00:05 EST" in out
    assert "+00:00" not in out and ".000" not in out


def test_pitlog_tz_sets_the_zone_once(short_pay: Path) -> None:
    proc = _run("dispute", "--db", str(short_pay), "--table", "T01", "--round", "S1:1",
                PITLOG_TZ="Europe/London", columns=120)
    assert proc.returncode == 0 and "23:00:06 GMT" in proc.stdout
    proc = _run("anomalies", "--db", str(short_pay), PITLOG_TZ="America/New_York",
                columns=200)
    assert proc.returncode == 0 and "2026-11-28 18:00:" in proc.stdout and " EST" in proc.stdout


def test_json_keeps_iso_8601_with_the_offset(short_pay: Path) -> None:
    proc = _run("dispute", "--db", str(short_pay), "--table", "T01", "--round", "S1:1",
                "--tz", "America/New_York", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    card = next(r for r in rows if r["section"] == "card" and r["card"] == "7H")
    drawn = datetime.fromisoformat(card["drawn_at"])  # ISO 8601 with its offset (UTC, Z)
    assert drawn.utcoffset() is not None
    assert drawn == EVENING + timedelta(seconds=card["drawn_seq"])


def test_out_with_another_extension_lists_exactly_the_accepted_ones(short_pay: Path,
                                                                    tmp_path: Path) -> None:
    """`--out x.pdf` said "--out writes csv, json, jsonl or parquet", leaving out the .html
    (and .htm) that give the incident report. Nothing is written; each accepted name works."""
    pdf = tmp_path / "x.pdf"
    proc = _run("dispute", "--db", str(short_pay), "--table", "T01", "--round", "S1:1",
                "--out", str(pdf))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == ("Error: --out x.pdf: dispute writes the incident report to a .html "
                           "or .htm file, or the rows with --format csv|json|jsonl|parquet: "
                           "name the file x.html, or add --format\n")
    assert not pdf.exists()
    for name, extra, starts in (("a.html", (), "<!"), ("b.HTM", (), "<!"),
                                ("c.pdf", ("--format", "csv"), "section,")):
        proc = _run("dispute", "--db", str(short_pay), "--table", "T01", "--round", "S1:1",
                    "--out", str(tmp_path / name), *extra)
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / name).read_text().lower().startswith(starts.lower()), name
    # A .html with --format csv wrote the report and ignored the format: refused, nothing written
    html = tmp_path / "d.html"
    proc = _run("dispute", "--db", str(short_pay), "--table", "T01", "--round", "S1:1",
                "--out", str(html), "--format", "csv")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == ("Error: --out d.html writes the incident report (HTML), which "
                           "--format csv does not change: drop --format, or name the file "
                           "d.csv\n")
    assert not html.exists()


def test_a_round_dealt_with_no_shoe_is_titled_so_and_an_empty_table_is_refused(
        tmp_path: Path) -> None:
    """The tables' titles read "dispute: T01 None round 1" for a round dealt with no shoe; and
    `--table ""` was "no table ''" on the file but another error through a server (which
    reads an empty table= as none given): now refused first, as every other --table is."""
    from surveillance_pit import Pit

    pit = Pit(tmp_path)
    pit.open_table()
    pit.tap_in("D1")
    one = pit.play(1, "4S QD 9H", {1: 1000})
    db = pit.project()
    at = (EVENING + timedelta(seconds=one["left"])).isoformat()
    shown = _run("dispute", "--db", str(db), "--table", "T01", "--at", at)
    assert shown.returncode == 0, shown.stderr
    assert "dispute: T01 (no shoe) round 1" in shown.stdout and "None" not in shown.stdout
    empty = _run("dispute", "--db", str(db), "--table", "", "--at", at)
    assert (empty.returncode, empty.stdout) == (1, "")  # pitlog: usage errors exit 1 too
    assert "Invalid value for '--table': is empty" in empty.stderr

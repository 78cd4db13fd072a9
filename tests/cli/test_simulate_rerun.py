"""`pitlog simulate` into a log that has events at its tables (events/simulation/rerun.py).

A simulation with the same seed and other settings shares its first event ids at each table:
`--tables 2 --rounds 5 --seed 7`, then `--tables 3 --rounds 6 --seed 7` into the same log,
appended 305 events, and `project` found 210 anomalies no dealer made (158 DUPLICATE_EVENT,
40 WRONG_SETTLEMENT). Another seed's evening at the same tables invented others (no
duplicates: a second evening at a table). Now a table the log has any record at is never
appended again: held whole by this simulation it is left out, anything else refuses the run
with one Error line and nothing written. Each variant through the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

PITLOG = [sys.executable, "-m", "cli.app"]
FIVE = ("--tables", "1", "--rounds", "5")  # T01 at --seed 7: 77 events


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PITLOG, *args], capture_output=True, text=True, cwd=REPO,
                          timeout=120)


def _sim(log: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run("simulate", "--log", str(log), "--format", "json", *args)


def _events(proc: subprocess.CompletedProcess[str]) -> int:
    assert proc.returncode == 0, proc.stderr
    return int(json.loads(proc.stdout)[0]["events"])


def _files(folder: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir())}


def _project(log: Path, db: Path) -> tuple[int, list[dict[str, object]]]:
    """The events projected and the anomaly rows found."""
    proj = _run("project", "--log", str(log), "--db", str(db), "--no-alerts", "--format", "json")
    assert proj.returncode == 0, proj.stderr
    found = _run("anomalies", "--db", str(db), "--format", "json")
    assert found.returncode == 0, found.stderr
    return int(json.loads(proj.stdout)[0]["events"]), json.loads(found.stdout)


def _refused(log: Path, seed: int, held: str, free: int) -> str:
    return (f"Error: the log file://{log} already has events at this simulation's tables "
            f"(--seed {seed}): at {held}, records that are not this simulation's (another "
            f"--seed, other settings, or events recorded otherwise); appending would record "
            f"those tables again, anomalies no dealer made: nothing appended; simulate into a "
            f"new --log, or at other tables (--first-table {free})\n")


@pytest.fixture(scope="module")
def t01(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log holding T01 of `--tables 1 --rounds 5 --seed 7`; each test copies it."""
    log = tmp_path_factory.mktemp("t01") / "log"
    assert _events(_sim(log, *FIVE)) == 77
    return log


def _copy(t01: Path, tmp_path: Path) -> Path:
    log = tmp_path / "log"
    shutil.copytree(t01, log)
    return log


def test_the_same_seed_with_more_tables_and_rounds_is_refused_and_nothing_invented(
        tmp_path: Path) -> None:
    """The reported case: 305 events appended, 210 anomaly rows. Now refused, naming both
    tables the log holds and how many events each; the log is byte for byte as it was, and
    its projection finds no anomaly."""
    log = tmp_path / "log"
    assert _events(_sim(log, "--tables", "2", "--rounds", "5", "--seed", "7")) == 161
    before = _files(log)
    run = _sim(log, "--tables", "3", "--rounds", "6", "--seed", "7")
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == _refused(log, 7, "T01 (77 events), T02 (84 events)", 3)
    assert _files(log) == before
    assert _project(log, tmp_path / "v.duckdb") == (161, [])


@pytest.mark.parametrize("other", [
    ("--rounds", "6"),  # more rounds: the first 5 rounds' ids, then another ending
    ("--rounds", "4"),  # fewer rounds
    ("--tables", "2", "--rounds", "6"),
    ("--decks", "4"),
    ("--seats", "3"),
    ("--raise-from", "1"),
    ("--sit-out", "0.5"),
    ("--profile", "gaming-authority"),  # every event id the same, the content not
    ("--irregularities", "0.05"),
    ("--rate", "LATE_RAISE=0.5"),
    ("--seed", "8"),  # another evening at the same table
], ids=lambda o: "".join(o))
def test_other_settings_or_another_seed_at_a_held_table_are_refused(
        t01: Path, tmp_path: Path, other: tuple[str, ...]) -> None:
    log = _copy(t01, tmp_path)
    before = _files(log)
    run = _sim(log, *FIVE, *other)
    assert (run.returncode, run.stdout) == (1, "")
    seed = int(other[1]) if other[0] == "--seed" else 7
    assert run.stderr == _refused(log, seed, "T01 (77 events)", 2)
    assert _files(log) == before  # nothing written


def test_fewer_tables_with_the_same_settings_append_nothing(tmp_path: Path) -> None:
    log = tmp_path / "log"
    assert _events(_sim(log, "--tables", "2", "--rounds", "5")) == 161
    before = _files(log)
    run = _sim(log, *FIVE)
    assert _events(run) == 0
    assert run.stderr == (f"the log file://{log} already holds this simulation: 77 events; "
                          f"nothing appended (another evening: another --log, or other tables "
                          f"with --first-table 3)\n")
    assert _files(log) == before


def test_more_tables_with_the_same_settings_append_only_the_new_tables(
        t01: Path, tmp_path: Path) -> None:
    """T01 held whole is left out; T02 and T03 are appended, exactly the events they have in
    one run of the three tables; the projection finds no DUPLICATE_EVENT, no anomaly."""
    log = _copy(t01, tmp_path)
    run = _sim(log, "--tables", "3", "--rounds", "5")
    assert run.stderr == (f"the log file://{log} already holds this simulation's T01 (77 "
                          f"events): not appended again\n")
    fresh = _sim(tmp_path / "fresh", "--tables", "3", "--rounds", "5")
    assert _events(run) == _events(fresh) - 77 == 182
    assert _project(log, tmp_path / "v.duckdb") == (259, [])


def test_a_table_held_whole_beside_one_held_by_another_evening_is_refused(
        t01: Path, tmp_path: Path) -> None:
    """T01 is this simulation's, T02 another seed's: the Error names T02 only."""
    log = _copy(t01, tmp_path)
    t02 = _events(_sim(log, *FIVE, "--seed", "8", "--first-table", "2"))
    before = _files(log)
    run = _sim(log, "--tables", "2", "--rounds", "5")
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == _refused(log, 7, f"T02 ({t02} events)", 3)
    assert _files(log) == before


def test_another_evening_at_other_tables_is_appended_whole_and_invents_nothing(
        t01: Path, tmp_path: Path) -> None:
    """What the Error offers: --first-table puts another seed's evening beside the one the log
    holds; both projected, no anomaly (the tables' events are those of one run each)."""
    log = _copy(t01, tmp_path)
    run = _sim(log, "--tables", "2", "--rounds", "5", "--seed", "8", "--first-table", "2")
    assert (run.returncode, run.stderr) == (0, "")
    fresh = _sim(tmp_path / "fresh", "--tables", "3", "--rounds", "5", "--seed", "8")
    fresh_t01 = _sim(tmp_path / "fresh1", *FIVE, "--seed", "8")
    assert _events(run) == _events(fresh) - _events(fresh_t01)
    assert _project(log, tmp_path / "v.duckdb") == (77 + _events(run), [])


def test_a_rerun_of_an_evening_with_tampered_records_appends_nothing(tmp_path: Path) -> None:
    """Gaps, broken links and duplicates (record_tampered) are recorded by the check as by the
    run, so the heads are recognised: nothing appended, and the store finds exactly what one
    run's store finds. One round more is refused."""
    args = ("--tables", "2", "--rounds", "30", "--rate", "SEQUENCE_GAP=0.1", "--rate",
            "CHAIN_BROKEN=0.1", "--rate", "DUPLICATE_EVENT=0.1")
    log, fresh = tmp_path / "log", tmp_path / "fresh"
    first = _sim(log, *args, "--truth", str(tmp_path / "first.jsonl"))
    again = _sim(log, *args, "--truth", str(tmp_path / "again.jsonl"))
    assert _events(again) == 0 and "already holds this simulation" in again.stderr
    truth = (tmp_path / "first.jsonl").read_text()
    assert (tmp_path / "again.jsonl").read_text() == truth
    assert {json.loads(x)["code"] for x in truth.splitlines()} == {
        "SEQUENCE_GAP", "CHAIN_BROKEN", "DUPLICATE_EVENT"}
    one = _sim(fresh, *args)
    assert _project(log, tmp_path / "v.duckdb") == _project(fresh, tmp_path / "f.duckdb")
    assert _events(first) == _events(one)
    more = _sim(log, *args[:3], "31", *args[4:])
    assert (more.returncode, more.stdout) == (1, "")
    assert more.stderr.startswith(f"Error: the log file://{log} already has events at this "
                                  f"simulation's tables (--seed 7): at T01 (")


def test_a_log_with_ingested_device_lines_at_its_tables_is_refused(tmp_path: Path) -> None:
    """Events recorded otherwise (a pit's device lines, at T07) are not appended to."""
    log = tmp_path / "log"
    ingest = _run("ingest", str(REPO / "examples" / "devices.jsonl"), "--log", str(log))
    assert ingest.returncode == 0, ingest.stderr
    before = _files(log)
    run = _sim(log, "--tables", "7", "--rounds", "1")
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == _refused(log, 7, "T07 (21 events)", 8)
    assert _files(log) == before
    assert _events(_sim(log, "--tables", "7", "--rounds", "1", "--first-table", "8")) > 0


def test_a_record_that_is_not_a_pitlog_event_at_a_table_is_refused(tmp_path: Path) -> None:
    from events.log.embedded.log import EmbeddedLog

    log = tmp_path / "log"
    with EmbeddedLog(log) as raw:
        raw.append([(b"T02", b"not an event")])
    run = _sim(log, "--tables", "2", "--rounds", "2")
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == _refused(log, 7, "T02 (a record that is not a pitlog event)", 3)


def test_the_error_names_six_tables_and_counts_the_rest(tmp_path: Path) -> None:
    log = tmp_path / "log"
    assert _events(_sim(log, "--tables", "8", "--rounds", "1")) > 0
    run = _sim(log, "--tables", "8", "--rounds", "2")
    assert run.returncode == 1
    held = run.stderr.split("at T01 (", 1)[1].split(", records that", 1)[0]
    assert [t.split(" (")[0] for t in f"T01 ({held}".split("), ")] == [
        "T01", "T02", "T03", "T04", "T05", "T06"]
    assert held.endswith(" events) and 2 more") and "--first-table 9)" in run.stderr


LAST_FIRST_TABLE = 9_500  # --first-table's highest value (--help)


def test_a_refusal_suggests_no_first_table_the_option_refuses(tmp_path: Path) -> None:
    """The log's last simulation table is at --first-table's highest value: the refusal said
    '--first-table 9501', which the option then refused in turn. Past the highest value only
    a new --log is suggested (below it, the first free table still is: the tests above)."""
    log = tmp_path / "log"
    one = ("--tables", "1", "--rounds", "1")
    assert _sim(log, *one, "--first-table", str(LAST_FIRST_TABLE)).returncode == 0
    again = _sim(log, *one, "--first-table", str(LAST_FIRST_TABLE), "--seed", "8")
    assert again.returncode == 1 and again.stdout == ""
    (line,) = again.stderr.splitlines()
    assert line.startswith(f"Error: the log file://{log} already has events at this "
                           f"simulation's tables (--seed 8): at T{LAST_FIRST_TABLE} ("), line
    assert line.endswith("nothing appended; simulate into a new --log"), line
    same = _sim(log, *one, "--first-table", str(LAST_FIRST_TABLE))
    assert _events(same) == 0
    assert same.stderr.splitlines()[-1].endswith("nothing appended (another evening: another "
                                                 "--log)"), same.stderr

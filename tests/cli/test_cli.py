"""The command line: help everywhere, one-line errors, machine-readable output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO
from simulated import records_by_table
from typer.main import get_command
from typer.testing import CliRunner

from cli.app import app
from events.log.embedded.log import EmbeddedLog

runner = CliRunner()
PITLOG = [sys.executable, "-m", "cli.app"]


def _commands() -> list[str]:
    group = get_command(app)
    # The commands load when asked for (cli/app.py, COMMANDS): list them, as the help does.
    return sorted(group.list_commands(group.make_context("pitlog", [], resilient_parsing=True)))  # type: ignore[attr-defined]


def test_core_commands_exist() -> None:
    assert {"demo", "simulate", "project", "shoes", "replay", "theo"} <= set(_commands())


@pytest.mark.parametrize("command", _commands())
def test_every_command_has_help_with_an_example(command: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example: pitlog " + command in " ".join(result.output.split())


def test_theo_json_gives_the_exact_single_deck_house_edge() -> None:
    result = runner.invoke(app, ["theo", "--decks", "1", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert rows[0]["exact"] == "1523/16575" and rows[0]["percent"] == "9.1885%"


def test_theo_csv_with_raising_from_seven() -> None:
    result = runner.invoke(app, ["theo", "--decks", "6", "--raise-from", "7", "--format", "csv"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "decks,raise_from,measure,exact,percent"
    assert lines[1] == "6,7,house edge per original wager,17533/626665,2.7978%"


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PITLOG, *args], capture_output=True, text=True, cwd=cwd or REPO,
                          timeout=120)


@pytest.mark.parametrize("command", ["theo", "simulate"])
def test_theo_and_simulate_take_the_decks_the_recorder_accepts(command: str,
                                                                tmp_path: Path) -> None:
    """One definition of the shoe's bounds (events/reddog/rules.py MIN_DECKS..MAX_DECKS, which
    the recorder checks): both commands refuse one deck past each end with one error line
    naming the bound, before anything is written; theo answers at both ends."""
    from events.reddog.rules import MAX_DECKS, MIN_DECKS

    log = ["--log", str(tmp_path / "log")] if command == "simulate" else []
    for decks, bound in ((MIN_DECKS - 1, f"greater than or equal to {MIN_DECKS}"),
                         (MAX_DECKS + 1, f"less than or equal to {MAX_DECKS}")):
        proc = _run(command, "--decks", str(decks), *log)
        assert proc.returncode == 1
        assert proc.stderr == f"Error: Invalid value for '--decks': Input should be {bound}\n"
    assert not (tmp_path / "log").exists()
    if command == "theo":
        for decks in (MIN_DECKS, MAX_DECKS):
            assert runner.invoke(app, ["theo", "--decks", str(decks)]).exit_code == 0


def test_bad_argument_is_one_error_line_and_exit_code_1() -> None:
    proc = _run("theo", "--decks", "nine")
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: ") and len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr + proc.stdout


def test_unknown_profile_is_an_error_before_anything_is_written(tmp_path: Path) -> None:
    proc = _run("simulate", "--profile", "atlantis", "--log", str(tmp_path / "log"))
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: ") and "atlantis" in proc.stderr
    assert not (tmp_path / "log").exists()


def test_replay_of_a_missing_database_is_an_error_line(tmp_path: Path) -> None:
    proc = _run("replay", "T01-S0001", "--db", str(tmp_path / "nothing.duckdb"))
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: ") and "Traceback" not in proc.stderr


def test_simulate_then_project_then_shoes_and_replay(tmp_path: Path) -> None:
    log, db = str(tmp_path / "log"), str(tmp_path / "v.duckdb")
    sim = _run("simulate", "--tables", "2", "--rounds", "30", "--log", log, "--format", "json")
    assert sim.returncode == 0, sim.stderr
    summary = json.loads(sim.stdout)[0]
    assert summary["tables"] == 2 and summary["rounds"] == 60
    proj = _run("project", "--log", log, "--db", db, "--format", "json")
    assert proj.returncode == 0, proj.stderr
    assert json.loads(proj.stdout)[0]["events"] == summary["events"]
    shoes = json.loads(_run("shoes", "--db", db, "--format", "json").stdout)
    assert {s["table_id"] for s in shoes} == {"T01", "T02"}
    replay = _run("replay", shoes[0]["shoe_id"], "--db", db, "--format", "json")
    assert replay.returncode == 0, replay.stderr
    rows = json.loads(replay.stdout)
    assert rows[0]["section"] == "event" and rows[0]["event_type"] == "ShuffleStarted"
    hands = [r for r in rows if r["section"] == "hand"]
    assert hands[0]["source"] == "burn" and hands[1]["source"] == "round"
    assert hands[1]["racked"] == hands[1]["dealt"]


def test_simulate_run_again_into_the_same_log_appends_nothing_and_says_so(
        tmp_path: Path) -> None:
    """The same simulation twice into one log appended the evening again: 55 DUPLICATE_EVENT
    rows for `--tables 1 --rounds 3`, anomalies nobody caused. A rerun succeeds, appends
    nothing and says so; a larger run with the same seed adds only the tables not there."""
    log, db = tmp_path / "log", str(tmp_path / "v.duckdb")
    args = ("simulate", "--log", str(log), "--tables", "1", "--rounds", "3", "--format", "json")
    first = _run(*args)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)[0]["events"] == 55
    again = _run(*args)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)[0]["events"] == 0
    assert again.stderr == (f"the log file://{log} already holds this simulation: 55 events; "
                            f"nothing appended (another evening: another --log, or other "
                            f"tables with --first-table 2)\n")
    more = _run(*args[:4], "2", *args[5:])
    assert more.returncode == 0, more.stderr
    assert more.stderr == (f"the log file://{log} already holds this simulation's T01 (55 "
                           f"events): not appended again\n")
    assert json.loads(more.stdout)[0]["tables"] == 1
    proj = _run("project", "--log", str(log), "--db", db, "--no-alerts", "--format", "json")
    assert proj.returncode == 0, proj.stderr
    assert json.loads(proj.stdout)[0]["events"] == 55 + json.loads(more.stdout)[0]["events"]
    found = _run("anomalies", "--db", db, "--format", "json")
    assert json.loads(found.stdout) == []  # no DUPLICATE_EVENT, nothing else invented


def _cut_to_first_records(log: Path, keep: int) -> None:
    """What a killed run leaves: each partition of an embedded log cut to its first `keep`
    records (as the journal's rollback leaves it)."""
    for part in log.glob("p*.idx"):
        seg = part.with_suffix(".seg")
        if part.stat().st_size:
            at = int.from_bytes(part.read_bytes()[keep * 8:(keep + 1) * 8], "little")
            part.write_bytes(part.read_bytes()[:keep * 8])
            seg.write_bytes(seg.read_bytes()[:at])


def test_simulate_into_a_log_holding_part_of_its_evening_records_the_rest(
        tmp_path: Path) -> None:
    """What a killed run leaves: the first records of the evening. It used to be refused, so a
    10M-event run killed at 9M started over. Run again, the same command records the rest:
    table by table, byte for byte what one uninterrupted run writes (the chain hashes too),
    the summary counting the events appended now, stderr saying what it continued; its truth
    is the whole evening's."""
    log, fresh = tmp_path / "log", tmp_path / "fresh"
    args = ("simulate", "--tables", "1", "--rounds", "3", "--irregularities", "0.05",
            "--format", "json")
    whole = _run(*args, "--log", str(fresh), "--truth", str(tmp_path / "fresh.jsonl"))
    assert whole.returncode == 0, whole.stderr
    assert _run(*args, "--log", str(log)).returncode == 0
    _cut_to_first_records(log, 20)
    again = _run(*args, "--log", str(log), "--truth", str(tmp_path / "again.jsonl"))
    assert again.returncode == 0, again.stderr
    total = json.loads(whole.stdout)[0]["events"]
    assert again.stderr == (f"the log file://{log} holds the first events of this "
                            f"simulation's T01 (its first 20 events) (a run stopped part "
                            f"way): recording the rest of them\n")
    assert json.loads(again.stdout)[0]["events"] == total - 20
    assert records_by_table(EmbeddedLog(log)) == records_by_table(EmbeddedLog(fresh))
    assert (tmp_path / "again.jsonl").read_text() == (tmp_path / "fresh.jsonl").read_text()
    assert _run(*args, "--log", str(log)).stderr.startswith(  # and then it is held whole
        f"the log file://{log} already holds this simulation: {total} events")


def test_simulate_with_part_of_its_evening_and_another_at_its_tables_is_refused(
        tmp_path: Path) -> None:
    """A table of the evening cut part way and another holding another seed's events: the run
    is refused whole, nothing written, the line naming both and what to do."""
    log = tmp_path / "log"
    args = ("simulate", "--log", str(log), "--rounds", "3", "--format", "json")
    assert _run(*args, "--tables", "1").returncode == 0
    _cut_to_first_records(log, 20)
    other = _run(*args, "--tables", "1", "--seed", "8", "--first-table", "2")
    assert other.returncode == 0, other.stderr
    n = json.loads(other.stdout)[0]["events"]
    files = {p.name: p.read_bytes() for p in log.iterdir() if p.suffix in (".idx", ".seg")}
    again = _run(*args, "--tables", "2")
    assert (again.returncode, again.stdout) == (1, "")
    assert again.stderr == (f"Error: the log file://{log} already has events at this "
                            f"simulation's tables (--seed 7): at T02 ({n} events), records that "
                            f"are not this simulation's (another --seed, other settings, or "
                            f"events recorded otherwise); at T01, this simulation's first "
                            f"events (a run stopped part way), which a run with nothing else "
                            f"in the way continues; appending would record those tables "
                            f"again, anomalies no dealer made: nothing appended; simulate into "
                            f"a new --log, or at other tables (--first-table 3)\n")
    assert {p.name: p.read_bytes() for p in log.iterdir()
            if p.suffix in (".idx", ".seg")} == files


def test_simulate_truth_lists_the_whole_evening_also_the_tables_the_log_held(
        tmp_path: Path) -> None:
    """A rerun's --truth listed only the tables appended in that run (none on a plain rerun),
    while the log holds every table's irregularities: detection scored against it would count
    the held tables' anomalies as invented. The truth is of the evening: byte for byte what a
    run into an empty log writes; the summary says how many labels it lists, and how many of
    them this run injected."""
    sim = ("simulate", "--rounds", "20", "--irregularities", "0.05", "--format", "json")
    fresh = _run(*sim, "--tables", "2", "--log", str(tmp_path / "fresh"),
                 "--truth", str(tmp_path / "fresh.jsonl"))
    assert fresh.returncode == 0, fresh.stderr
    evening = (tmp_path / "fresh.jsonl").read_text()
    tables = {json.loads(x)["table_id"] for x in evening.splitlines()}
    assert tables == {"T01", "T02"}
    log = str(tmp_path / "log")
    rows = {}
    for name, n in (("first", "1"), ("again", "1"), ("more", "2"), ("all", "2")):
        proc = _run(*sim, "--tables", n, "--log", log, "--truth", str(tmp_path / f"{name}.jsonl"))
        assert proc.returncode == 0, proc.stderr
        rows[name] = json.loads(proc.stdout)[0]
    t01 = "".join(x + "\n" for x in evening.splitlines() if json.loads(x)["table_id"] == "T01")
    assert (tmp_path / "first.jsonl").read_text() == t01
    assert (tmp_path / "again.jsonl").read_text() == t01  # nothing appended, the same truth
    assert (tmp_path / "more.jsonl").read_text() == evening  # T02 appended, T01 held
    assert (tmp_path / "all.jsonl").read_text() == evening
    n01 = t01.count("\n")
    assert [(r["irregularities_injected"], r["truth_labels"]) for r in rows.values()] == [
        (n01, n01), (0, n01), (evening.count("\n") - n01, evening.count("\n")),
        (0, evening.count("\n"))]


def readme_commands() -> list[str]:
    """The README's first two commands: the first code block's lines."""
    text = (REPO / "README.md").read_text()
    block = text.split("```", 2)[1]
    lines = [ln.strip() for ln in block.splitlines()[1:] if ln.strip() and not ln.startswith("#")]
    return lines[:2]


def test_readme_opens_with_the_demo_and_the_test_command() -> None:
    demo, tests = readme_commands()
    assert demo.endswith("pitlog demo")
    assert tests == ".venv/bin/python -m pytest"
    ci = (REPO / ".ci" / "run").read_text()
    assert "\n.venv/bin/python -m pytest || status=$?\n" in ci  # CI runs the README's tests


@pytest.fixture(scope="module")
def readme_demo(tmp_path_factory: pytest.TempPathFactory,
                ) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The README's demo command, run once for the tests below, in an empty folder."""
    demo, _ = readme_commands()
    # The setup part (venv + pip install) is what .ci/run does; the demo part runs verbatim,
    # with this interpreter's installed `pitlog`, in an empty folder.
    invocation = demo.rsplit("&&", 1)[1].split()
    assert invocation[0].endswith("pitlog") and invocation[1:] == ["demo"]
    pitlog = Path(sys.executable).parent / "pitlog"
    folder = tmp_path_factory.mktemp("readme-demo")
    proc = subprocess.run([str(pitlog), *invocation[1:]], cwd=folder, capture_output=True,
                          text=True, timeout=300)
    return proc, folder


def test_readme_demo_command_runs_on_the_embedded_default(
        readme_demo: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    proc, folder = readme_demo
    assert proc.returncode == 0, proc.stderr
    assert "Simulated 400 rounds at 4 tables" in proc.stdout
    assert (folder / "pitlog-data" / "pitlog.duckdb").exists()
    assert "Traceback" not in proc.stderr


def test_readme_auditor_queries_run_on_the_demo_database(
        readme_demo: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    import duckdb

    text = (REPO / "README.md").read_text()
    block = text.split("```sql", 1)[1].split("```", 1)[0]
    queries = [q.strip() for q in block.split(";") if q.strip()]
    assert len(queries) == 3
    proc, folder = readme_demo
    assert proc.returncode == 0, proc.stderr
    with duckdb.connect(str(folder / "pitlog-data" / "pitlog.duckdb"), read_only=True) as con:
        results = [con.sql(q).fetchall() for q in queries]
    # The demo injects settlement irregularities, so the ledger shows exceptions; its
    # paytables are all standard, so none is invalid.
    assert len(results[0]) > 0 and results[1] == []

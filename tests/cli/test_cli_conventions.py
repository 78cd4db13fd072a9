"""Conventions of a good command line: --limit with "N of M shown", --version, shell completion,
help grouped by who uses it, `| head` exits 0, `sql -` reads the query from stdin."""

from __future__ import annotations

import inspect
import json
import logging
import subprocess
import sys
from dataclasses import fields
from importlib import import_module
from pathlib import Path
from typing import Any

import duckdb
import pytest
from simulated import simulated_db
from typer.testing import CliRunner

from cli.app import COMMANDS, PANELS, app
from cli.listing import tell_shown
from cli.options import Grouping
from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate

PITLOG = str(Path(sys.executable).parent / "pitlog")
runner = CliRunner()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated_db(tmp_path_factory.mktemp("conv"), seed=23, tables=2, rounds=60,
                        irregularities=0.03)


def _count(db: Path, sql: str) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return int(con.execute(sql).fetchall()[0][0])


@pytest.mark.parametrize(("command", "total_sql"), [
    (["anomalies", "--no-statistics"], "SELECT count(*) FROM anomalies"),
    (["ledger"], "SELECT count(*) FROM ledger"),
    (["shoes"], "SELECT count(*) FROM shoes"),
    (["sql", "SELECT * FROM rounds"], "SELECT count(*) FROM rounds"),
    (["reconcile", "--by", "shoe"], "SELECT count(DISTINCT shoe_id) FROM rounds"),
])
def test_limit_shows_n_rows_and_says_n_of_m(db: Path, command: list[str], total_sql: str
                                            ) -> None:
    total = _count(db, total_sql)
    assert total > 3
    proc = subprocess.run([PITLOG, *command, "--db", str(db), "--limit", "3", "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) == 3  # stdout stays exactly the rows
    assert f"3 of {total:,} " in proc.stderr and "shown" in proc.stderr
    every = subprocess.run([PITLOG, *command, "--db", str(db), "--limit", "0", "-f", "jsonl"],
                           capture_output=True, text=True, timeout=300)
    assert len(every.stdout.splitlines()) == total and "shown" not in every.stderr


def test_verify_limit_says_n_of_m(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log")
    simulate(log, SimConfig(seed=2, tables=1, rounds=3))
    ok = subprocess.run([PITLOG, "verify", "--log", str(tmp_path / "log"), "--limit", "1"],
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "shown" not in ok.stderr  # nothing left out, nothing said


def test_version_names_pitlog_and_duckdb() -> None:
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith(f"pitlog {version('pitlog')} (DuckDB {version('duckdb')}")


def test_shell_completion_is_on() -> None:
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "120"})
    assert "--install-completion" in result.output and "--show-completion" in result.output


def test_help_groups_every_command_by_who_uses_it() -> None:
    from typer.main import get_command

    result = runner.invoke(app, ["--help"], env={"COLUMNS": "120"})
    out = result.output
    for panel in ("Surveillance", "Audit", "Operations", "Integrity"):
        assert f"─ {panel} ─" in out
    assert "─ Commands ─" not in out  # no command left ungrouped
    listed = {n for names in PANELS.values() for n in names}
    group = get_command(app)
    names = group.list_commands(group.make_context("pitlog", [], resilient_parsing=True))  # type: ignore[attr-defined]
    assert names and set(names) <= listed


@pytest.mark.parametrize("fmt", ["table", "csv", "jsonl"])
def test_replay_into_head_exits_0(db: Path, fmt: str) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        shoe = con.execute("SELECT shoe_id FROM shoes ORDER BY rounds DESC LIMIT 1"
                           ).fetchall()[0][0]
    proc = subprocess.run(f"'{PITLOG}' replay {shoe} --db '{db}' --format {fmt} | head -n 1; "
                          f"exit ${{PIPESTATUS[0]}}", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert len(proc.stdout.splitlines()) == 1


def test_a_closed_pipe_keeps_the_verdict_of_verify(db: Path) -> None:
    """`| head` closing the pipe ends a listing with exit 0 (above), but where the exit code is
    the finding it stays: verify of a log with integrity anomalies (the simulated evening's
    injected gaps and broken chains) exits 1 whether its reader reads everything or closes the
    pipe at once (`| true`: it exited 0 before cli/verdict.py). conservation says its verdict
    the same way (cli/commands/reconcile.py); this evening balances, so it is not piped here."""
    log = db.parent / "log"
    whole = subprocess.run([PITLOG, "verify", "--log", str(log), "--format", "json"],
                           capture_output=True, text=True, timeout=300)
    assert whole.returncode == 1
    assert any(r["kind_of_row"] == "anomaly" for r in json.loads(whole.stdout))
    for reader in ("true", "head -n 1"):
        proc = subprocess.run(f"'{PITLOG}' verify --log '{log}' | {reader} > /dev/null; "
                              f"exit ${{PIPESTATUS[0]}}", shell=True, executable="/bin/bash",
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 1, (reader, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_sql_reads_the_query_from_stdin(db: Path) -> None:
    proc = subprocess.run([PITLOG, "sql", "-", "--db", str(db), "--format", "json"],
                          input="SELECT count(*) AS n FROM rounds\n", capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [{"n": _count(db, "SELECT count(*) FROM rounds")}]
    empty = subprocess.run([PITLOG, "sql", "-", "--db", str(db)], input="  \n",
                           capture_output=True, text=True, timeout=300)
    assert empty.returncode == 1 and empty.stderr.startswith("Error: ")


# --- the same option names for the same things everywhere -----------------------------------

def _commands() -> dict[str, object]:
    from typer.main import get_command

    group = get_command(app)  # the commands load when asked for (cli/app.py, COMMANDS)
    ctx = group.make_context("pitlog", [], resilient_parsing=True)
    return {n: group.get_command(ctx, n) for n in group.list_commands(ctx)}  # type: ignore[attr-defined]


def _options(command: object) -> list[object]:
    return [p for p in command.params if p.param_type_name == "option"]  # type: ignore[attr-defined]


def _spellings(option: object) -> tuple[str, ...]:
    return (*option.opts, *option.secondary_opts)  # type: ignore[attr-defined]


# Each thing a command can be told, by the parameter's name in the code, and its one spelling.
# A `*_opt` parameter is the same thing under a name free of a clash (replay's SHOE and --shoe).
ONE_NAME = {
    "log": ("--log",), "db": ("--db",), "table": ("--table",), "shoe": ("--shoe",),
    "format": ("--format", "-f"), "out": ("--out", "-o"), "tz": ("--tz",),
    "limit": ("--limit", "-n"), "day": ("--day",), "gaming_day_start": ("--gaming-day-start",),
    "since": ("--since",), "until": ("--until",), "server": ("--server",),
    "seed": ("--seed",), "decks": ("--decks",), "raise_from": ("--raise-from",),
    "create_topic": ("--create-topic",), "memory_limit": ("--memory-limit",),
    "log_level": ("--log-level",), "log_format": ("--log-format",), "shifts": ("--shifts",),
    "by": ("--by",),
}
# Where the same setting comes from the environment, the option is spelled the same too.
BY_ENV = {"PITLOG_LOG": ("--log",), "PITLOG_DB": ("--db",), "PITLOG_TZ": ("--tz",),
          "PITLOG_SERVER": ("--server",)}
# Spellings other tools use for those same things: none of them may creep in.
SYNONYMS = {"--database", "--db-path", "--log-uri", "--topic", "--output", "--timezone",
            "--zone", "--max", "--max-rows", "--count", "--head", "--shoe-id", "--table-id",
            "--fmt", "--date", "--gaming-day", "--from", "--to", "--start", "--end",
            "--data-dir"}


def test_options_meaning_the_same_thing_share_one_name() -> None:
    commands = _commands()
    assert len(commands) >= 16
    seen: dict[str, set[str]] = {}  # spelling -> the things it names
    checked = 0
    for name, command in commands.items():
        for option in _options(command):
            thing = option.name.removesuffix("_opt")  # type: ignore[attr-defined]
            spellings = _spellings(option)
            if thing in ONE_NAME:
                assert spellings == ONE_NAME[thing], (name, thing, spellings)
                checked += 1
            envvar = option.envvar  # type: ignore[attr-defined]
            if envvar in BY_ENV:
                assert spellings == BY_ENV[envvar], (name, envvar, spellings)
            help_text = (option.help or "").lower()  # type: ignore[attr-defined]
            if "time zone" in help_text:
                assert spellings == ("--tz",), (name, spellings)
            if help_text.startswith(("only this table", "only this shoe")):
                assert spellings == ("--" + help_text.split()[2].strip(",."),), (name, spellings)
            for spelling in spellings:
                seen.setdefault(spelling, set()).add(thing)
            if name != "demo":  # demo's folder: see test_demo_says_why_it_takes_a_folder
                assert not SYNONYMS & set(spellings), (name, spellings)
    assert checked > 60  # the walk saw the options, not an empty list
    shared = {s: things for s, things in seen.items() if len(things) > 1}
    assert not shared, shared  # and no spelling means two things
    # The listing and query commands all take the same core options.
    for name in ("anomalies", "ledger", "shoes", "sql", "reconcile", "conservation"):
        names = {s for o in _options(commands[name]) for s in _spellings(o)}
        assert {"--db", "--format", "--out", "--limit", "--server"} <= names, name
    for name in ("simulate", "ingest", "project", "verify", "serve"):
        assert "--log" in {s for o in _options(commands[name]) for s in _spellings(o)}, name


def test_the_grouped_audits_take_the_grouping_options_of_cli_options() -> None:
    """reconcile and conservation: the six grouping options come first, from Grouping alone
    (cli/options.py), so their spellings, help and defaults cannot drift apart."""
    commands = _commands()
    grouping = [f.name for f in fields(Grouping)]
    shown = {name: [(o.name, _spellings(o), o.help, o.default)  # type: ignore[attr-defined]
                    for o in _options(commands[name])[:len(grouping)]]
             for name in ("reconcile", "conservation")}
    assert [o[0] for o in shown["reconcile"]] == grouping
    assert shown["reconcile"] == shown["conservation"]
    assert shown["reconcile"][2][1:] == (("--gaming-day-start",),
                                         "When the gaming day begins, local HH:MM.", "06:00")


def test_demo_says_why_it_takes_a_folder() -> None:
    # The one command with no --log/--db: it writes both into one folder it claims whole
    # (cli/commands/demo.py: it never deletes what it did not write), and its help says where
    # they go.
    (data_dir,) = [o for o in _options(_commands()["demo"])
                   if "--data-dir" in _spellings(o)]
    text = " ".join(data_dir.help.split())  # type: ignore[attr-defined]
    assert "--log DIR/log --db DIR/pitlog.duckdb" in text
    from events.log.base import DEFAULT_DATA_DIR

    # Its default folder is the other commands' default, so `pitlog demo` then `pitlog shoes`
    # needs no options at all.
    assert Path(data_dir.default) == DEFAULT_DATA_DIR  # type: ignore[attr-defined]


def test_every_command_help_has_an_example() -> None:
    commands = _commands()
    for name in commands:
        result = runner.invoke(app, [name, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (name, result.output)
        assert "Example:" in result.output, name
        assert f"pitlog {name}" in result.output.split("Example:", 1)[1], name
    assert "Example:" in runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output


def test_every_command_help_flows_each_paragraph_to_the_terminals_width() -> None:
    """typer keeps the line breaks of a docstring's later paragraphs in rich markup, so a
    docstring wrapped at 100 columns broke mid-sentence at 80 ("(--gaming-day-start on" alone on
    a line). Each paragraph is one line on a wide terminal (but a "(or: ...)" example, kept on
    a line of its own), and on an 80-column one every word is there, in order."""
    for name in _commands():
        doc = inspect.getdoc(_callback(name)) or ""
        wide = runner.invoke(app, [name, "--help"], env={"COLUMNS": "400"}).output
        lines = [" ".join(line.split()) for line in wide.splitlines()]
        for paragraph in doc.split("\n\n"):
            for part in " ".join(paragraph.split()).replace(" (or: ", "\n(or: ").split("\n"):
                assert part in lines, (name, part)
        narrow = runner.invoke(app, [name, "--help"], env={"COLUMNS": "80"}).output
        described = narrow.split("Usage:", 1)[1].split("\n", 1)[1].split("╭", 1)[0]
        assert described.split() == doc.split(), name


def test_every_option_help_is_whole_at_80_columns() -> None:
    """At 80 columns no option's name, default or help is cut with an ellipsis (typer gave a
    --x/--no-x pair's second name a column of its own, and the help column of `anomalies`
    and `project` became too narrow for a default or a URL: "06:00,14:00,22:0…"), and no help
    text is taken for rich markup and dropped ("[default: 512MB]" vanished)."""
    from cli.app import load

    for name in _commands():
        narrow = runner.invoke(app, [name, "--help"], env={"COLUMNS": "80"}).output
        assert "…" not in narrow, (name, [line for line in narrow.splitlines() if "…" in line])
        shown = set(narrow.replace("│", " ").split())
        for param in load(name).params:
            if getattr(param, "hidden", False) or not getattr(param, "help", None):
                continue
            lost = [word for word in param.help.split() if word not in shown]
            assert not lost, (name, param.name, lost)


def test_the_defaults_names_of_single_flags_are_still_accepted(db: Path,
                                                               tmp_path: Path) -> None:
    # --statistics, --alerts and --no-follow were the other halves of flag pairs: each is the
    # default, still accepted (hidden), and changes nothing.
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PITLOG, *args, "--db", str(db), "-f", "json"],
                              capture_output=True, text=True, timeout=300)

    plain, named = run("anomalies", "--limit", "0"), run("anomalies", "--statistics",
                                                          "--limit", "0")
    assert plain.returncode == named.returncode == 0, named.stderr
    assert json.loads(named.stdout) == json.loads(plain.stdout)
    codes = {r["code"] for r in json.loads(plain.stdout)}
    without = {r["code"] for r in json.loads(run("anomalies", "--no-statistics",
                                                 "--limit", "0").stdout)}
    # (the default includes the statistical codes: test_detection_evenings asks for
    # HOLD_VARIANCE without a flag and finds it)
    assert not without & {"HOLD_VARIANCE", "OUTCOME_FREQUENCY"} and without <= codes
    import shutil

    shutil.copy(db, tmp_path / db.name)  # the module's store left as it was
    projected = subprocess.run(
        [PITLOG, "project", "--alerts", "--no-follow", "--log", str(db.parent / "log"),
         "--db", str(tmp_path / db.name), "-f", "json"],
        capture_output=True, text=True, timeout=300)
    assert projected.returncode == 0, projected.stderr
    assert json.loads(projected.stdout)[0]["events"] == 0  # the store was current


def _callback(name: str) -> Any:
    entry = COMMANDS[name]
    return getattr(import_module(f"cli.commands.{entry.module}"), entry.function)


def test_replay_takes_the_shoe_as_argument_or_as_shoe_option(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        shoe = con.execute("SELECT shoe_id FROM shoes ORDER BY shoe_id LIMIT 1").fetchall()[0][0]

    def replay(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PITLOG, "replay", *args, "--db", str(db), "-f", "json"],
                              capture_output=True, text=True, timeout=300)

    positional, option = replay(shoe), replay("--shoe", shoe)
    assert positional.returncode == option.returncode == 0, option.stderr
    rows = json.loads(option.stdout)
    assert rows and {r["section"] for r in rows} == {"event", "hand"}
    assert option.stdout == positional.stdout
    assert replay(shoe, "--shoe", shoe).stdout == positional.stdout  # the same one twice: fine
    for bad in (replay(shoe, "--shoe", "T99-S0001"), replay()):
        assert bad.returncode == 1 and bad.stdout == ""
        assert bad.stderr.startswith("Error: ") and len(bad.stderr.splitlines()) == 1


def test_anomalies_day_is_the_gaming_day_reconcile_uses(db: Path) -> None:
    zone = "America/New_York"
    with duckdb.connect(str(db), read_only=True) as con:
        # A gaming day that starts mid-evening, so the anomalies fall on two gaming days.
        start, = con.execute(
            "SELECT strftime(timezone($tz, quantile_disc(occurred_at, 0.5)), '%H:%M') "
            "FROM anomalies", {"tz": zone}).fetchall()[0]
        minutes = int(start[:2]) * 60 + int(start[3:])
        # sql/ledger.sql's gaming_day macro: the definition reconcile --day filters rounds by.
        by_day = con.execute(
            "SELECT gaming_day(occurred_at, $tz, $m)::VARCHAR AS day, code, shoe_id, round_no, "
            "seqs FROM anomalies WHERE code NOT IN ('HOLD_VARIANCE', 'OUTCOME_FREQUENCY')",
            {"tz": zone, "m": minutes}).fetchall()
    days = sorted({row[0] for row in by_day})
    assert len(days) == 2  # the test splits the evening
    for day in days:
        proc = subprocess.run(
            [PITLOG, "anomalies", "--day", day, "--gaming-day-start", start, "--tz", zone,
             "--no-statistics", "--db", str(db), "--limit", "0", "-f", "json"],
            capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        got = sorted((r["code"], r["shoe_id"], r["round_no"], r["seqs"])
                     for r in json.loads(proc.stdout))
        expected = sorted((code, shoe, rnd, list(seqs))
                          for d, code, shoe, rnd, seqs in by_day if d == day)
        assert got == expected and got
    # With --since too, the narrower window wins: nothing after the day's end is added.
    late = subprocess.run(
        [PITLOG, "anomalies", "--day", days[0], "--gaming-day-start", start, "--tz", zone,
         "--since", f"{days[1]}T{start}", "--no-statistics", "--db", str(db), "-f", "json"],
        capture_output=True, text=True, timeout=300)
    assert late.returncode == 0 and json.loads(late.stdout) == []


# --- a file to write is never pitlog's own data ------------------------------------------------

@pytest.mark.parametrize("target", [
    "log/p0000.seg", "log/meta.json", "log/new.csv", "pitlog.duckdb", "pitlog.duckdb.wal",
    "pitlog.duckdb.detect-ids.sqlite"])
@pytest.mark.parametrize("command", [
    ["ledger", "--format", "csv", "--out"], ["anomalies", "--format", "json", "--out"],
    ["simulate", "--tables", "1", "--rounds", "1", "--truth"],
    ["ingest", "-", "--quarantine"]])
def test_no_file_option_writes_over_the_log_or_the_database(
        tmp_path: Path, db: Path, command: list[str], target: str) -> None:
    """--out, --truth and --quarantine name a file to write; aimed at a file of the event log's
    folder (even a new one), the store or a file beside it, the command is refused before it
    reads or writes anything, and the files are byte for byte as they were."""
    folder = db.parent
    path = folder / target
    wal = folder / "pitlog.duckdb.wal"  # a WAL beside the store, as a crash leaves one
    wal.touch()
    try:
        before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        where = (["--log", str(tmp_path / "other-log")] if command[0] == "simulate" else
                 ["--log", str(folder / "log")] if command[0] == "ingest" else ["--db", str(db)])
        result = subprocess.run([PITLOG, *command, str(path), *where], input="{}\n",
                                capture_output=True, text=True, timeout=300)
        after = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    finally:
        wal.unlink()  # the module's other tests open the store
    assert result.returncode != 0 and result.stdout == ""
    (line,) = result.stderr.splitlines()  # one Error line, whatever the terminal's width
    assert line.startswith(f"Error: Invalid value for '{command[-1]}'") and str(path) in line
    assert ("event log folder" if target.startswith("log/") else "database") in line
    assert after == before
    assert not (tmp_path / "other-log").exists()


@pytest.mark.parametrize("command", [
    ["anomalies", "--table", "t01"], ["ledger", "--table", "t01"],
    ["reconcile", "--table", "t01"], ["conservation", "--table", "t01"],
    ["shoes", "--table", "t01"], ["ledger", "--shoe", "T01-S9999"],
    ["anomalies", "--shoe", "T01-S9999"]])
def test_an_unknown_table_or_shoe_is_an_error_not_no_rows(db: Path, command: list[str]) -> None:
    """`--table t01` (the case wrong) or a shoe the store never saw printed "no rows" with exit
    0, as if the table had been clean; it is an error naming what the store holds, as dispute's
    is. A known table with nothing to show is still "no rows"."""
    result = subprocess.run([PITLOG, *command, "--db", str(db)], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("Error: no ") and len(result.stderr.splitlines()) == 1
    if "--table" in command:
        assert "did you mean T01?" in result.stderr and "known tables: T01, T02" in result.stderr
    else:
        assert "no shoe 'T01-S9999'" in result.stderr
    quiet = runner.invoke(app, ["anomalies", "--table", "T01", "--since", "2030-01-01",
                                "--db", str(db)])
    assert quiet.exit_code == 0 and "no rows" in quiet.output


def test_verify_gives_each_finding_the_severity_pitlog_anomalies_gives_its_code(db: Path) -> None:
    """verify said "critical", a severity `pitlog anomalies --severity` refuses; each finding
    now carries its code's severity from the one catalogue, as the anomaly rows do."""
    proc = subprocess.run([PITLOG, "verify", "--log", str(db.parent / "log"), "--format",
                           "json"], capture_output=True, text=True, timeout=300)
    found = [r for r in json.loads(proc.stdout) if r["kind_of_row"] == "anomaly"]
    assert found
    with duckdb.connect(str(db), read_only=True) as con:
        severity = dict(con.execute("SELECT code, severity FROM anomaly_codes").fetchall())
    assert all(r["severity"] == severity[r["code"]] for r in found)
    assert {r["severity"] for r in found} == {"high"}


def test_a_link_to_pitlogs_data_is_refused_and_a_stray_meta_json_is_not_a_log(
        tmp_path: Path, db: Path) -> None:
    """A symbolic link is judged by where it leads: --out through a link to a log segment was
    written over the segment (exit 0). A folder that merely holds a file named meta.json is no
    event log: writing a report beside it works."""
    segment = db.parent / "log" / "p0000.seg"
    before = segment.read_bytes()
    link = tmp_path / "rows.csv"
    link.symlink_to(segment)
    refused = subprocess.run([PITLOG, "ledger", "--db", str(db), "-f", "csv", "--out",
                              str(link)], capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1 and "is in the event log folder" in refused.stderr
    assert segment.read_bytes() == before
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "meta.json").write_text('{"author": "audit"}')
    written = subprocess.run([PITLOG, "ledger", "--db", str(db), "-f", "csv", "--out",
                              str(reports / "ledger.csv")], capture_output=True, text=True,
                             timeout=300)
    assert written.returncode == 0, written.stderr
    assert (reports / "ledger.csv").read_text().startswith("table_id,")


def test_ingest_keeps_exit_1_for_refused_lines_when_the_pipe_closes(tmp_path: Path) -> None:
    """`ingest bad.jsonl | true` exited 0 with lines refused (the closed pipe's 0): it is the
    verdict's 1 (cli/verdict.py), as without the pipe."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "Nope"}\n')
    log = tmp_path / "log"
    proc = subprocess.run(f"'{PITLOG}' ingest '{bad}' --log '{log}' | true; "
                          f"exit ${{PIPESTATUS[0]}}", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "1 of 1 lines rejected" in proc.stderr


def test_ingest_of_a_folder_says_it_is_a_folder(tmp_path: Path) -> None:
    """`ingest FOLDER` said "no file FOLDER", which exists: it says what it is."""
    proc = subprocess.run([PITLOG, "ingest", str(tmp_path), "--log", str(tmp_path / "log")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and proc.stderr == (
        f"Error: {tmp_path} is a folder: pass a JSON lines file, or - for stdin\n")
    assert not (tmp_path / "log").exists()


def test_ingest_reads_a_pipe_or_a_device_named_as_its_file(tmp_path: Path) -> None:
    """`pitlog ingest <(zcat feed.gz)` passes /dev/fd/63, a pipe, and `ingest /dev/null` a
    device: each was "no file" though it exists (an outside review, session 39). Each is
    read as standard input is, every line judged."""
    devices = Path(__file__).parents[2] / "examples" / "devices.jsonl"
    lines = len(devices.read_bytes().splitlines())
    log = tmp_path / "log"
    proc = subprocess.run(f"'{PITLOG}' ingest <(cat '{devices}') --log '{log}' -f json",
                          shell=True, executable="/bin/bash", capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    [row] = json.loads(proc.stdout)
    assert row["source"].startswith("/dev/fd/")
    assert (row["lines"], row["recorded"], row["rejected"]) == (lines, lines, 0)
    # the same lines from the file itself: all of them found recorded already
    again = subprocess.run([PITLOG, "ingest", str(devices), "--log", str(log), "-f", "json"],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)[0]["already_recorded"] == lines
    empty = subprocess.run([PITLOG, "ingest", "/dev/null", "--log", str(log), "-f", "json"],
                           capture_output=True, text=True, timeout=300)
    assert empty.returncode == 0, empty.stderr
    assert [(r["source"], r["lines"], r["recorded"]) for r in json.loads(empty.stdout)] == \
        [("/dev/null", 0, 0)]


@pytest.mark.parametrize(("level", "kafka_level"), [
    ("info", logging.WARNING), ("warning", logging.WARNING), ("error", logging.ERROR),
    ("debug", logging.NOTSET)])
def test_kafka_clients_chatter_stays_out_of_the_log_below_debug(
        level: str, kafka_level: int) -> None:
    """kafka-python's INFO lines (connections, metadata, coordinators) were most of a serve log
    (an outside review, session 38): below debug its loggers show warnings and errors only,
    while pitlog's own lines keep the level asked for."""
    from cli.logs import LogFormat, LogLevel, setup_logging
    root, kafka = logging.getLogger(), logging.getLogger("kafka")
    saved = (root.level, list(root.handlers), kafka.level)
    try:
        kafka.setLevel(logging.NOTSET)
        setup_logging(LogLevel(level), LogFormat.text)
        assert kafka.level == kafka_level
        assert logging.getLogger("pitlog.follow").isEnabledFor(
            getattr(logging, level.upper()))
        assert logging.getLogger("kafka.conn").isEnabledFor(logging.INFO) is (level == "debug")
    finally:
        root.setLevel(saved[0])
        root.handlers[:] = saved[1]
        kafka.setLevel(saved[2])


def test_the_rows_left_out_note_fits_a_narrow_terminal(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """'N of M shown' is 65 characters with its hint: at 60 columns it wrapped mid-word (an
    outside review). Where it does not fit, the count and the hint are two lines; where it
    does, and on a stderr that is no terminal, one."""
    monkeypatch.setenv("COLUMNS", "60")
    tell_shown(100, 12_345, "anomalies")
    assert capsys.readouterr().err == ("100 of 12,345 anomalies shown\n"
                                       "--limit N for more, --limit 0 for all\n")
    monkeypatch.setenv("COLUMNS", "80")
    tell_shown(100, 12_345, "anomalies")
    assert capsys.readouterr().err == (
        "100 of 12,345 anomalies shown: --limit N for more, --limit 0 for all\n")
    monkeypatch.delenv("COLUMNS")
    tell_shown(1, 2)  # captured: no terminal
    assert capsys.readouterr().err == "1 of 2 rows shown: --limit N for more, --limit 0 for all\n"

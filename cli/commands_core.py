"""Core commands: demo, simulate, project, shoes, replay, theo."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Annotated
from urllib.parse import quote

import typer

from cli.client import ServerOpt, ask
from cli.listing import LimitOpt, limited
from cli.logs import LogFormat, LogFormatOpt, LogLevel, LogLevelOpt, setup_logging
from cli.options import (
    CreateTopicOpt,
    DbOpt,
    FormatOpt,
    LogOpt,
    OutOpt,
    SummaryOpt,
    db_path,
    log_uri,
    new_file,
    open_for_writing,
)
from cli.output import Format, Summary, plain, render
from cli.progress import phase, progress_bar, progress_tasks
from events.errors import PitlogError, RuleError
from events.log.registry import open_log
from projections.serve.discovery import read as serving


def demo(
    # A folder, not --log/--db as elsewhere: the demo writes both, and its promise never to
    # delete what it did not write (cli/demo.py) is kept by claiming one whole folder.
    data_dir: Annotated[
        Path, typer.Option(
            "--data-dir", help="The folder the demo writes, new or empty: its log goes to DIR/log "
                               "and its database to DIR/pitlog.duckdb, which the other commands "
                               "take as --log DIR/log --db DIR/pitlog.duckdb (the default "
                               "folder is their default too).")
    ] = Path("pitlog-data"),
    seed: Annotated[
        int, typer.Option(help="Simulator seed; the same seed gives the same evening.")
    ] = 2026,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace an earlier demo in --data-dir, if its "
                                             "files are unchanged; other data is never touched.")
    ] = False,
    format: SummaryOpt = Summary.table,
) -> None:
    """Simulate a short evening at four tables, with irregularities, project it, and print
    the summary and the anomalies.

    Example: pitlog demo
    """
    from cli import demo as demo_mod  # the simulator and the projector: only when it runs

    report = demo_mod.run_demo(data_dir, seed=seed, replace=replace)
    demo_mod.print_report(report, format)


def simulate_cmd(
    tables: Annotated[int, typer.Option(min=1, max=500, help="Number of tables.")] = 4,
    rounds: Annotated[int, typer.Option(min=1, help="Rounds per table.")] = 200,
    decks: Annotated[
        int, typer.Option(min=1, max=8, help="Decks per shoe (casino-night tables use 1).")
    ] = 6,
    seats: Annotated[int, typer.Option(min=1, max=7, help="Seats per table.")] = 6,
    raise_from: Annotated[
        int | None,
        typer.Option(min=1, max=11, help="Players raise from this spread up; omit for never."),
    ] = 7,
    sit_out: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Chance a seat skips a round.")
    ] = 0.25,
    profile: Annotated[
        list[str] | None,
        typer.Option(
            help="Jurisdiction profile, repeatable (assigned to tables in turn): "
            "nj-casino, nj-casino-night, gaming-authority."
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option(help="Random seed: the same seed gives a byte-identical log.")
    ] = 7,
    irregularities: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0,
            help="Chance of each injectable irregularity at each opportunity for it "
            "(docs/anomalies.md).",
        ),
    ] = 0.0,
    rate: Annotated[
        list[str] | None,
        typer.Option(help="Per-code rate, CODE=RATE, repeatable (e.g. LATE_RAISE=0.05)."),
    ] = None,
    truth: Annotated[
        Path | None,
        typer.Option(
            callback=new_file,
            help="Write the ground-truth labels of injected irregularities here (JSON lines)."
        ),
    ] = None,
    log: LogOpt = None,
    create_topic: CreateTopicOpt = False,
    format: SummaryOpt = Summary.table,
) -> None:
    """Play a seeded evening at the tables and record every event to the log.

    Example: pitlog simulate --tables 8 --rounds 500 --irregularities 0.01 --truth truth.jsonl
    """
    # Imported here, not at the top: the other commands of this module must not pay for them.
    from events.reddog import rules
    from events.simulation.simulator import SimConfig, simulate

    profiles = tuple(profile or ["nj-casino"])
    for p in profiles:
        rules.profile_rules(p)  # an unknown profile is an Error: line, before any event is written
    per_code: dict[str, float] = {}
    for item in rate or []:
        code, sep, value = item.partition("=")
        try:
            per_code[code.strip().upper()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise PitlogError(f"--rate {item!r}: write CODE=RATE, e.g. --rate LATE_RAISE=0.05")
    try:  # SimConfig checks the rates: before the log is opened, so nothing is written
        config = SimConfig(seed=seed, tables=tables, rounds=rounds, decks=decks, seats=seats,
                           raise_from=raise_from, sit_out=sit_out, profiles=profiles,
                           irregularities=irregularities, per_code=per_code)
    except RuleError as exc:
        raise PitlogError(f"--rate: {exc}") from exc
    with open_for_writing(log_uri(log), create_topic) as event_log, \
            progress_bar("simulating rounds", tables * rounds) as update:
        report = simulate(event_log, config, round_progress=update)
        uri = event_log.uri
    if truth is not None:
        with truth.open("w") as f:
            for label in report.truth:
                f.write(json.dumps(asdict(label)) + "\n")
    render(
        [
            {
                "log": uri,
                "events": report.events,
                "tables": report.tables,
                "rounds": report.rounds,
                "shoes": report.shoes,
                "irregularities_injected": len(report.truth),
                "truth_file": str(truth) if truth else None,
            }
        ],
        format,
    )


def project_cmd(
    log: LogOpt = None,
    db: DbOpt = None,
    follow: Annotated[
        bool, typer.Option(help="Keep following the log until Ctrl-C or SIGTERM.")
    ] = False,
    memory_limit: Annotated[
        str | None,
        typer.Option(envvar="PITLOG_MEMORY_LIMIT",
                     help="DuckDB's memory while projecting, e.g. 2GB [default: 512MB]; "
                          "beyond it DuckDB spills to <db>.tmp."),
    ] = None,
    format: SummaryOpt = Summary.table,
    log_level: LogLevelOpt = LogLevel.warning,
    log_format: LogFormatOpt = LogFormat.text,
) -> None:
    """Bring the DuckDB views up to date with the log (only new events are read). With
    --follow, --log-level info logs one line per committed batch (records and lag).

    Example: pitlog project --db pitlog-data/pitlog.duckdb --memory-limit 2GB
    """
    from projections.projector import project

    path = db_path(db)

    if (server := serving(path)) is not None:
        raise PitlogError(f"{path} is held by `pitlog serve` at {server['url']} (pid "
                          f"{server['pid']}), which already keeps it up to date with its log; "
                          f"stop it first to project here")
    started = time.perf_counter()
    with open_log(log_uri(log), create=False) as event_log:  # a reader never creates a log
        total = sum(event_log.end_offsets().values())
        with progress_tasks() as task:
            update = task("projecting events", total)
            if follow:
                from projections.follow import follow as follow_log

                setup_logging(log_level, log_format)

                report = follow_log(event_log, path, progress=update,
                                    memory_limit=memory_limit)
            else:
                report = project(event_log, path, progress=update, memory_limit=memory_limit,
                                 anomaly_progress=phase(task, "storing anomaly rows"))
    row = report.as_row()
    # The whole run, the anomaly rows' phase included (`seconds` is the events' phase alone).
    whole = time.perf_counter() - started
    row.update(total_seconds=round(whole, 3),
               events_per_second_overall=round(report.events / whole) if whole > 0 else None)
    render([{k: plain(v) for k, v in row.items()}], format)



def shoes(
    table: Annotated[str | None, typer.Option(help="Only this table, e.g. T01.")] = None,
    limit: LimitOpt = None,
    db: DbOpt = None,
    format: FormatOpt = Format.table,
    out: OutOpt = None,
    server: ServerOpt = None,
) -> None:
    """List the shoes: table, decks, when opened and closed, rounds, cards, burns, dealers.

    Example: pitlog shoes --table T01 --format json
    """
    found = ask(db_path(db), server, "/api/shoes", table=table)
    if found is None:
        from projections.queries import list_shoes
        from projections.snapshot import open_for_reading

        with open_for_reading(db_path(db)) as con:
            found = list_shoes(con, table=table)
    found = limited(found, limit, format, format is Format.table and out is None, "shoes")
    render(found, format, out=out, title="shoes")


def replay(
    shoe: Annotated[
        str | None, typer.Argument(help="Shoe id as listed by `pitlog shoes`, e.g. T01-S0001.",
                                   show_default=False)
    ] = None,
    shoe_opt: Annotated[
        str | None, typer.Option("--shoe", show_default=False,
                                 help="The shoe, as an option (as `anomalies --shoe` and "
                                      "`ledger --shoe` name it); the same as SHOE.")
    ] = None,
    db: DbOpt = None,
    format: FormatOpt = Format.table,
    out: OutOpt = None,
    server: ServerOpt = None,
) -> None:
    """Replay one shoe event by event (times, cards, announcements, wagers, settlements),
    then its hands in discard-rack order.

    Example: pitlog replay T01-S0001  (or: pitlog replay --shoe T01-S0001)
    """
    from projections.queries import ShoeReplay, replay_shoe

    if shoe is not None and shoe_opt is not None and shoe != shoe_opt:
        raise PitlogError(f"two shoes given ({shoe} and --shoe {shoe_opt}): give one")
    shoe = shoe or shoe_opt
    if not shoe:
        raise PitlogError("which shoe? give it as `pitlog replay T01-S0001` or "
                          "`pitlog replay --shoe T01-S0001` (`pitlog shoes` lists them)")
    found = ask(db_path(db), server, f"/api/replay/{quote(shoe, safe='')}")
    if found is not None:
        result = ShoeReplay(**found)
    else:
        from projections.snapshot import open_for_reading

        with open_for_reading(db_path(db)) as con:
            result = replay_shoe(con, shoe)
    if format is Format.table and out is None:
        render(result.events, format, title=f"shoe {shoe}: events")
        render(result.hands, format, title=f"shoe {shoe}: hands in discard-rack order")
    else:
        rows = [{"section": "event", **r} for r in result.events] + [
            {"section": "hand", **r} for r in result.hands
        ]
        columns = list(dict.fromkeys(k for r in rows for k in r))
        render(rows, format, out=out, columns=columns)


def theo(
    decks: Annotated[int, typer.Option(min=1, max=8, help="Decks in the shoe.")] = 6,
    raise_from: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=11,
            help="The player raises the full wager from this spread up; omit for never.",
        ),
    ] = None,
    format: SummaryOpt = Summary.table,
) -> None:
    """The exact house edge from the combinatorics, as a fraction and a percentage.

    Example: pitlog theo --decks 6 --raise-from 7
    """
    from events.reddog import theory  # exact fractions over every shoe: only when it runs
    from events.reddog.rules import STANDARD_PAYTABLE

    edge = theory.house_edge(decks, raise_from, STANDARD_PAYTABLE)
    rows = [
        {
            "measure": "house edge per original wager",
            "exact": edge.per_original_wager,
            "percent": _pct(edge.per_original_wager),
        },
        {
            "measure": "house edge per unit wagered (element of risk)",
            "exact": edge.per_total_wagered,
            "percent": _pct(edge.per_total_wagered),
        },
        {
            "measure": "expected units wagered per original wager",
            "exact": edge.expected_wagered_per_original,
            "percent": None,
        },
    ]
    for row in rows:
        row.update(decks=decks, raise_from=raise_from)
    render(rows, format, columns=["decks", "raise_from", "measure", "exact", "percent"])


def _pct(x: object) -> str:
    from fractions import Fraction

    assert isinstance(x, Fraction)
    # Exact rounding to 4 decimals of a percent, with no float in between.
    scaled = x * 100 * 10_000
    n = (scaled.numerator * 2 + scaled.denominator) // (2 * scaled.denominator)
    sign = "-" if n < 0 else ""
    whole, frac = divmod(abs(n), 10_000)
    return f"{sign}{whole}.{frac:04d}%"

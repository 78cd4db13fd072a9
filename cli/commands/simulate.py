"""`pitlog simulate`: a seeded evening at the tables, recorded to the log (events/simulation/).

The only command module besides `demo` that imports the simulator (a leaf: nothing in events/
or projections/ imports it)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from cli.options import (
    CreateTopicOpt,
    LogOpt,
    SummaryOpt,
    log_uri,
    new_file,
    open_for_writing,
)
from cli.output import Summary, render
from cli.progress import progress_bar
from events.errors import PitlogError, RuleError
from events.log.base import EventLog
from events.reddog import rules
from events.reddog.rules import MAX_DECKS, MIN_DECKS
from events.simulation.rerun import Held, evening_truth, held_tables
from events.simulation.simulator import SimConfig, SimReport, simulate


def simulate_cmd(
    tables: Annotated[int, typer.Option(min=1, max=500, help="Number of tables.")] = 4,
    rounds: Annotated[int, typer.Option(min=1, help="Rounds per table.")] = 200,
    decks: Annotated[
        int, typer.Option(min=MIN_DECKS, max=MAX_DECKS,  # what the recorder accepts
                          help="Decks per shoe (casino-night tables use 1).")
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
    with open_for_writing(log_uri(log), create_topic) as event_log:
        held = held_tables(event_log, config)
        only = _not_yet_held(event_log, config, held)
        with progress_bar("simulating rounds", len(only) * rounds) as update:
            report = simulate(event_log, config, only=only, round_progress=update) if only \
                else SimReport(0, 0, 0, 0, [])
        uri = event_log.uri
    # The whole evening's labels, also of the tables the log held already: they are in the
    # log too, so a truth of this run's tables alone would score their anomalies as invented.
    labels = evening_truth(config, held, report.truth)
    if truth is not None:
        with truth.open("w") as f:
            for label in labels:
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
                "truth_labels": len(labels) if truth else None,
            }
        ],
        format,
    )


def _not_yet_held(log: EventLog, config: SimConfig, held: list[Held]) -> list[int]:
    """The table indexes to simulate: those the log does not hold already. A rerun with the
    same settings would append the same evening again, each event a DUPLICATE_EVENT nobody
    caused (events/simulation/rerun.py); a table held whole is left out, and one held in part
    (a run stopped part way) is refused, since appending it again would do the same."""
    part = [h for h in held if not h.whole]
    if part:
        which = ", ".join(f"{h.table} {h.held:,} of its {h.total:,} events" for h in part)
        raise PitlogError(f"the log {log.uri} already holds part of this simulation (--seed "
                          f"{config.seed}: {which}; a run stopped part way): nothing appended; "
                          f"simulate another evening with another --seed, or into a new --log")
    events = sum(h.total for h in held)
    if len(held) == config.tables:
        typer.echo(f"the log {log.uri} already holds this simulation: {events:,} events; "
                   f"nothing appended (another evening: another --seed)", err=True)
    elif held:
        typer.echo(f"the log {log.uri} already holds this simulation's "
                   f"{', '.join(h.table for h in held)} ({events:,} events): not appended "
                   f"again", err=True)
    whole = {h.index for h in held}
    return [i for i in range(config.tables) if i not in whole]

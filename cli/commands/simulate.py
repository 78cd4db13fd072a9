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
from events.recording.recorder import last_records
from events.reddog import rules
from events.reddog.rules import MAX_DECKS, MIN_DECKS
from events.simulation.rerun import Held, evening_truth, first_free_table, held_tables
from events.simulation.simulator import SimConfig, SimReport, simulate

LAST_FIRST_TABLE = 9_500  # --first-table's highest value


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
    first_table: Annotated[
        int,
        typer.Option(min=1, max=LAST_FIRST_TABLE,
                     help="Number of the first table (1: T01); another evening goes into a "
                     "log that has one at other tables."),
    ] = 1,
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

    The same command run again after a run stopped part way records the rest of the evening.

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
                           irregularities=irregularities, per_code=per_code,
                           first_table=first_table - 1)
    except RuleError as exc:
        raise PitlogError(f"--rate: {exc}") from exc
    with open_for_writing(log_uri(log), create_topic) as event_log:
        heads = last_records(event_log)
        held = held_tables(heads, config)
        only = _not_yet_held(event_log, config, held, first_free_table(heads))
        resume = {h.table: h.held for h in held if h.held and not h.whole}
        with progress_bar("simulating rounds", len(only) * rounds) as update:
            report = simulate(event_log, config, only=only, round_progress=update,
                              last=heads, resume=resume) if only else SimReport(0, 0, 0, 0, [])
        uri = event_log.uri
    # The whole evening's labels, also of the tables the log held already: they are in the
    # log too, so a truth of this run's tables alone would score their anomalies as invented.
    # A table continued (`resume`) was generated whole by this run: its labels are the report's.
    labels = evening_truth(config, [h for h in held if h.whole], report.truth)
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


def _not_yet_held(log: EventLog, config: SimConfig, held: list[Held], free: int) -> list[int]:
    """The table indexes to simulate: those the log has no record at, and those of which it
    holds this simulation's first records only (a run stopped part way), which the run
    continues (`simulate`'s `resume`, events/simulation/simulator.py). A table held whole by
    this simulation is left out. Any other record at one of its tables refuses the run,
    before anything is written: anything else there (another seed's evening; the same seed's
    with other rounds, decks, seats, profiles or rates, which shares its first event ids;
    events recorded otherwise) would get a second evening at the table: anomalies no dealer
    made (events/simulation/rerun.py)."""
    other = [h for h in held if not h.held]
    part = [h for h in held if h.held and not h.whole]
    if other:
        tables = _listed([f"{h.table} ({h.seq:,} events)" if h.seq else
                          f"{h.table} (a record that is not a pitlog event)" for h in other])
        also = (f"; at {_listed([h.table for h in part])}, this simulation's first events (a "
                f"run stopped part way), which a run with nothing else in the way continues"
                if part else "")
        raise PitlogError(
            f"the log {log.uri} already has events at this simulation's tables (--seed "
            f"{config.seed}): at {tables}, records that are not this simulation's (another "
            f"--seed, other settings, or events recorded otherwise){also}; appending would "
            f"record those tables again, anomalies no dealer made: nothing appended; simulate "
            f"into a new --log{_or_at_other_tables(free)}")
    if part:
        tables = _listed([f"{h.table} (its first {h.held:,} events)" for h in part])
        typer.echo(f"the log {log.uri} holds the first events of this simulation's {tables} "
                   f"(a run stopped part way): recording the rest of them", err=True)
    whole = [h for h in held if h.whole]
    events = sum(h.total for h in whole)
    if len(whole) == config.tables:
        typer.echo(f"the log {log.uri} already holds this simulation: {events:,} events; "
                   f"nothing appended (another evening: another --log"
                   f"{_or_at_other_tables(free, 'other tables with --first-table {}')})", err=True)
    elif whole:
        typer.echo(f"the log {log.uri} already holds this simulation's "
                   f"{', '.join(h.table for h in whole)} ({events:,} events): not appended "
                   f"again", err=True)
    left_out = {h.index for h in whole}
    return [i for i in config.table_indexes if i not in left_out]


def _or_at_other_tables(free: int, how: str = "at other tables (--first-table {})") -> str:
    """The other tables to suggest, only when --first-table takes that number: past
    LAST_FIRST_TABLE the option refuses it, so the suggestion would be a second error."""
    return ", or " + how.format(free) if free <= LAST_FIRST_TABLE else ""


def _listed(items: list[str], most: int = 6) -> str:
    """At most `most` items named, then how many more (a log of 500 tables, one line)."""
    more = f" and {len(items) - most:,} more" if len(items) > most else ""
    return ", ".join(items[:most]) + more

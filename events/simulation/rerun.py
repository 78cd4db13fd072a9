"""What a log already holds of a seeded simulation: `pitlog simulate` run again into the same log.

A simulation is deterministic (its seed, tables and settings give the same events, with the same
event ids), so a rerun into the same log would append the same evening again: every event a
second time, each a DUPLICATE_EVENT, anomalies nobody caused. Each table's newest event in the
log says how far the log holds it: if its event id is one of this simulation's own for that
table, the log holds that table's events up to there (a table's events are recorded in order).
A head that is not one of them (another seed's evening, ingested device lines) holds nothing
of it. docs/operating.md, "Simulating into a log that has events".
"""

from __future__ import annotations

from dataclasses import dataclass

from events.errors import DecodeError
from events.log.base import EventLog
from events.recording.recorder import last_records
from events.simulation.simulator import SimConfig, generate, table_name
from events.wire import codec


@dataclass(frozen=True, slots=True)
class Held:
    """Of one table of the simulation: the records the log holds, and all it has."""

    table: str
    index: int
    held: int
    total: int

    @property
    def whole(self) -> bool:
        return self.held == self.total


def held_tables(log: EventLog, config: SimConfig) -> list[Held]:
    """The simulation's tables whose newest event in `log` is one of the simulation's own.
    Costs one read of the table heads; the simulation's steps are generated (not recorded)
    only for the tables that have a head in the log, and only then."""
    heads: dict[str, str] = {}
    for key, value in last_records(log).items():
        try:
            heads[key.decode()] = codec.decode(value).event_id
        except (DecodeError, UnicodeDecodeError):
            continue  # not a pitlog event: not one of the simulation's either
    indexes = [i for i in range(config.tables) if table_name(i) in heads]
    if not indexes:
        return []
    steps, _ = generate(config, indexes)
    total = dict.fromkeys(indexes, 0)
    held: dict[int, int] = {}
    for step in steps:
        total[step.table_index] += 2 if step.tamper == "duplicate" else 1  # two records
        if step.event_id == heads[table_name(step.table_index)]:
            held[step.table_index] = total[step.table_index]
    return [Held(table_name(i), i, n, total[i]) for i, n in sorted(held.items())]

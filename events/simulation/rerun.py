"""What a log already holds of a seeded simulation: `pitlog simulate` run again into the same log.

A simulation is deterministic (its seed, tables and settings give the same events, with the same
event ids), so a rerun into the same log would append the same evening again: every event a
second time, each a DUPLICATE_EVENT, anomalies nobody caused. Each table's newest event in the
log says how far the log holds it: if its event id is one of this simulation's own for that
table, the log holds that table's events up to there (a table's events are recorded in order).
A head that is not one of them (another seed's evening, ingested device lines) holds nothing
of it. docs/operating.md, "Simulating into a log that has events".

The ground truth is of the evening, not of one run: a table the log holds is generated to its
end here anyway, so its labels come with it, and `evening_truth` lists every table's, whether
appended now or before, as one run into an empty log would.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from events.errors import DecodeError
from events.log.base import EventLog
from events.recording.recorder import last_records
from events.simulation.irregularities import TruthLabel
from events.simulation.simulator import SimConfig, TableSim, table_name
from events.wire import codec


@dataclass(frozen=True, slots=True)
class Held:
    """Of one table of the simulation: the records the log holds, all it has, and its
    injected irregularities (the whole table's: it was generated to its end)."""

    table: str
    index: int
    held: int
    total: int
    truth: tuple[TruthLabel, ...] = ()

    @property
    def whole(self) -> bool:
        return self.held == self.total


def held_tables(log: EventLog, config: SimConfig) -> list[Held]:
    """The simulation's tables whose newest event in `log` is one of the simulation's own.
    Costs one read of the table heads; then, for a table that has a head, its steps are
    generated (not recorded) up to the head's time: a table's clock only moves forward
    (TableSim.emit), so a head the simulation has not reached by then is not its own. Only a
    table the log holds is generated to its end (to count its events)."""
    heads: dict[str, tuple[str, int]] = {}
    for key, value in last_records(log).items():
        try:
            env = codec.decode(value)
            heads[key.decode()] = (env.event_id, codec.micros(env.occurred_at))
        except (DecodeError, UnicodeDecodeError):
            continue  # not a pitlog event: not one of the simulation's either
    found = []
    for index in range(config.tables):
        head = heads.get(table_name(index))
        if head is None:
            continue
        head_id, head_us = head
        total, held = 0, 0
        sim = TableSim(config, index)
        for step in sim.run():
            if not held and step.at_us > head_us:
                break
            total += 2 if step.tamper == "duplicate" else 1  # two records
            if step.event_id == head_id:
                held = total
        if held:
            found.append(Held(table_name(index), index, held, total,
                              tuple(sim.inject.labels)))
    return found


def evening_truth(config: SimConfig, held: Sequence[Held],
                  appended: Iterable[TruthLabel]) -> list[TruthLabel]:
    """The simulation's ground truth, every table's, in the order one run into an empty log
    gives it (by table, then as injected): the labels of the tables the log held already
    (`held`) and of those appended now (`appended`, simulate's SimReport.truth). The log holds
    them all, so detection is scored against them all."""
    by_table: dict[str, list[TruthLabel]] = {h.table: list(h.truth) for h in held}
    for label in appended:
        by_table.setdefault(label.table_id, []).append(label)
    return [label for index in range(config.tables)
            for label in by_table.get(table_name(index), ())]

"""What a log already holds at a seeded simulation's tables: `pitlog simulate` run again into
the same log.

A simulation is deterministic (its seed, tables and settings give the same events, with the same
event ids), so a rerun into the same log would append the same evening again: every event a
second time, each a DUPLICATE_EVENT, anomalies nobody caused. A simulation with the same seed
and other settings (more or fewer rounds, other decks, seats, profiles or rates) shares its
first event ids at each table, with other events after them or other content in them, and
another seed's evening is a second evening at the same tables (a shoe shuffled twice, wagers
settled against the other evening's cards): anomalies no dealer made either way. So a table
the log has any record at is never appended again: it is held whole by this simulation (left
out), or the run is refused (cli/commands/simulate.py).

Each table's newest record in the log says which: its chain hash covers every record of the
table before it (events/wire/chain.py), so it equals the hash of this simulation's record of
the same seq, recorded from the table's first, only if the log holds exactly this
simulation's records of that table up to there. The check reads the table heads only (the
recorder's own read), never a table's history; it records the table's steps (the same bytes
`simulate` writes, to nowhere) up to the head's seq, and generates a table whose head is this
simulation's one step further: a table that ends there is held whole (its events counted, its
labels listed); one that goes on was stopped part way, and `simulate` records its rest
(events/simulation/simulator.py, `resume`). A simulation-broken chain
(CHAIN_BROKEN injected) is recorded as `simulate` records it, so it is recognised too.
docs/operating.md, "Simulating into a log that has events".

The ground truth is of the evening, not of one run: `evening_truth` lists every table's
labels, whether appended now or before, as one run into an empty log would.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass

from events.errors import DecodeError
from events.log.base import EventLog, LogRecord
from events.recording.recorder import Recorder
from events.simulation.irregularities import TruthLabel
from events.simulation.simulator import SimConfig, TableSim, record_step, table_name
from events.wire import chain, codec


@dataclass(frozen=True, slots=True)
class Held:
    """One table of the simulation that the log has records at: how many of them are this
    simulation's (`held`: its first records; 0: the newest is not one of them, so the log
    holds something else there), whether they are all of the table's (`whole`: `total` is
    then their count; 0 otherwise, as the table is not generated past the log's newest
    record), and the seq of the log's newest record there (`seq`; 0: not a pitlog event).
    Where whole, the table's injected irregularities."""

    table: str
    index: int
    held: int
    total: int
    seq: int
    truth: tuple[TruthLabel, ...] = ()

    @property
    def whole(self) -> bool:
        return 0 < self.held == self.total


class _Compare(EventLog):
    """Where the check records a table's simulated events: nothing is kept; it counts the
    records and notes the count at the one whose chain hash is the log's head's."""

    uri = "compare:"

    def __init__(self, head_hash: bytes) -> None:
        self.head_hash = head_hash
        self.records = 0
        self.held = 0

    def append(self, items: Sequence[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        for _, value in items:
            self.records += 1
            if value[-chain.HASH_LEN:] == self.head_hash:
                self.held = self.records
        return []

    def end_offsets(self) -> dict[int, int]:
        return {}

    def read(self, start: Mapping[int, int] | None = None, *,
             max_batch: int = 5000) -> Generator[list[LogRecord], None, None]:
        yield from ()


def held_tables(heads: Mapping[bytes, bytes], config: SimConfig) -> list[Held]:
    """The simulation's tables that a log has records at, each as `Held`, from the log's
    table heads (`last_records`, which the recorder reads anyway: one read of the heads, no
    table's history). Per such table, its steps are recorded (not to the log) up to the seq
    of its head, and generated one step further where the head is this simulation's."""
    found = []
    for index in config.table_indexes:
        head = heads.get(table_name(index).encode())
        if head is not None:
            found.append(_held(config, index, head))
    return found


def _held(config: SimConfig, index: int, head: bytes) -> Held:
    table = table_name(index)
    try:
        seq = codec.decode(head).seq
    except DecodeError:
        return Held(table, index, 0, 0, 0)  # not a pitlog event: not one of the simulation's
    compare = _Compare(chain.stored_hash(head))
    recorder = Recorder(compare, heads={})  # from the table's first record
    sim = TableSim(config, index)
    steps = sim.run()
    for step in steps:
        record_step(recorder, compare, table, step)
        # At the head's seq (or past it: SEQUENCE_GAP moves seq on by two) the record of that
        # seq is made; `compare` sees it when the recorder hands it over.
        if recorder.heads[table].seq >= seq:
            break
    recorder.flush()
    if not compare.held:
        return Held(table, index, 0, 0, seq)
    if next(steps, None) is not None:  # the table goes on: a run stopped part way
        return Held(table, index, compare.held, 0, seq)
    return Held(table, index, compare.held, compare.records, seq, tuple(sim.inject.labels))


def first_free_table(heads: Mapping[bytes, bytes]) -> int:
    """The number (1: T01) of the first table past every simulation-named table a log has
    records at: where another evening can go in that log."""
    numbers = [int(key[1:]) for key in heads if key[:1] == b"T" and key[1:].isdigit()]
    return max(numbers, default=0) + 1


def evening_truth(config: SimConfig, held: Sequence[Held],
                  appended: Iterable[TruthLabel]) -> list[TruthLabel]:
    """The simulation's ground truth, every table's, in the order one run into an empty log
    gives it (by table, then as injected): the labels of the tables the log held already
    (`held`) and of those appended now (`appended`, simulate's SimReport.truth). The log holds
    them all, so detection is scored against them all."""
    by_table: dict[str, list[TruthLabel]] = {h.table: list(h.truth) for h in held}
    for label in appended:
        by_table.setdefault(label.table_id, []).append(label)
    return [label for index in config.table_indexes
            for label in by_table.get(table_name(index), ())]

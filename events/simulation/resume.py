"""Continuing a simulation that a run stopped part way (killed, or its machine lost) left in
a log: the tables of which the log holds this simulation's first records only.

A simulation is deterministic (events/simulation/rerun.py): recorded again from the table's
first step, the recorder makes the same bytes, chain hashes included. So `simulate` records
such a table from its start through `Resumed`, which drops the records the log holds already
(rerun.py's check found them equal, through the chain hash of the log's newest record there)
and appends the rest: the log then holds, table by table, byte for byte what one uninterrupted
run writes (docs/operating.md, "Simulating into a log that has events")."""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence

from events.log.base import ConditionalAppend, EventLog, LogRecord
from events.wire import chain


class Resumed(ConditionalAppend):
    """`log` less each key's first `held[key]` records (a table's records that the log holds).
    What it passes on is appended with the writer's check (ConditionalAppend, when `log` has
    it): a dropped table continues from the hash of its last dropped record, which is the log's
    newest there, so another writer that appended since is refused as the recorder's own
    appends are."""

    def __init__(self, log: EventLog, held: Mapping[bytes, int]) -> None:
        self.log = log
        self.uri = log.uri
        self.left = {key: n for key, n in held.items() if n > 0}  # records still to drop
        self.after: dict[bytes, bytes] = {}  # per dropped key: its last record's hash
        self.dropped = 0
        self.appended = 0

    def _passed(self, items: Sequence[tuple[bytes, bytes]]
                ) -> tuple[list[tuple[bytes, bytes]], dict[bytes, bytes]]:
        """The items to append, and each resumed key's hash its first passed item follows."""
        passed: list[tuple[bytes, bytes]] = []
        follows: dict[bytes, bytes] = {}
        for key, value in items:
            if self.left.get(key):
                self.left[key] -= 1
                self.after[key] = chain.stored_hash(value)
                self.dropped += 1
                continue
            if key in self.after and key not in follows:
                follows[key] = self.after[key]
            passed.append((key, value))
        return passed, follows

    def append(self, items: Sequence[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        passed, _ = self._passed(items)
        return self._append(passed, None)

    def append_expecting(self, items: Sequence[tuple[bytes, bytes]],
                         expected: Mapping[bytes, bytes | None] | None,
                         ) -> list[tuple[int, int]]:
        passed, follows = self._passed(items)
        keys = {key for key, _ in passed}
        merged = {key: follows.get(key, (expected or {}).get(key)) for key in keys
                  if key in follows or (expected is not None and key in expected)}
        return self._append(passed, merged)

    def _append(self, passed: list[tuple[bytes, bytes]],
                expected: dict[bytes, bytes | None] | None) -> list[tuple[int, int]]:
        if not passed:
            return []
        if expected is not None and isinstance(self.log, ConditionalAppend):
            at = self.log.append_expecting(passed, expected)
        else:
            at = self.log.append(passed)
        self.appended += len(passed)
        for key, value in passed:  # a resumed key goes on from what was appended
            if key in self.after:
                self.after[key] = chain.stored_hash(value)
        return at

    def last_values(self) -> dict[bytes, bytes]:
        if isinstance(self.log, ConditionalAppend):
            return self.log.last_values()
        raise NotImplementedError  # the recorder reads heads from the log itself

    def end_offsets(self) -> dict[int, int]:
        return self.log.end_offsets()

    def read(self, start: Mapping[int, int] | None = None, *,
             max_batch: int = 5000) -> Generator[list[LogRecord], None, None]:
        yield from self.log.read(start, max_batch=max_batch)

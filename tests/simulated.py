"""A simulated evening, projected into a real DuckDB file: for tests that need anomalies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from store_template import new_store

from events.log.base import EventLog
from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections.projector import project


def simulated_db(folder: Path, **config: Any) -> Path:
    """Simulate `SimConfig(**config)` into folder/log and project it into folder/pitlog.duckdb."""
    log = EmbeddedLog(folder / "log")
    simulate(log, SimConfig(**config))
    db = new_store(folder / "pitlog.duckdb")  # a copy of a new store (store_template)
    project(log, db)
    return db


def records_by_table(log: EventLog) -> dict[bytes, list[bytes]]:
    """Each table's records (key -> values, in log order): what a simulation wrote, table by
    table, whatever the interleaving of the tables in the log."""
    out: dict[bytes, list[bytes]] = {}
    for batch in log.read():
        for rec in batch:
            out.setdefault(rec.key, []).append(rec.value)
    return out

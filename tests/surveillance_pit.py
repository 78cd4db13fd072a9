"""A hand-built table for the surveillance tests: every card, word, wager and settlement is
stated by the test, recorded through the real Recorder to a real embedded log, projected into
a real DuckDB file, and judged by the real anomaly views. No simulator, no mocks.

Each recording method returns the event's sequence number, so a test can say exactly which
events prove an anomaly.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
from store_template import store_at
from table_builder import EVENING, ORIGINAL, RAISE, TableBuilder, card, recorder_for

from events.log.embedded.log import EmbeddedLog
from events.reddog import model
from events.reddog.model import Box, SettledAs
from events.simulation.irregularities import record_tampered
from projections.anomalies import AnomalyFilter, list_anomalies
from projections.projector import project

__all__ = ["EVENING", "ORIGINAL", "RAISE", "card"]
WON, LOST, VOID = SettledAs.WON, SettledAs.LOST, SettledAs.VOID
LEFT, RIGHT, MIDDLE = Box.LEFT, Box.RIGHT, Box.MIDDLE

Found = tuple[str, str, str | None, int | None, list[int]]  # code, table, shoe, round, seqs


class Pit(TableBuilder):
    """One table on a log of its own, recorded event by event, one second apart."""

    def __init__(self, folder: Path, table_id: str = "T01") -> None:
        self.folder = folder
        self.log = EmbeddedLog(folder / "log")
        super().__init__(recorder_for(self.log), table_id)

    def tampered(self, kind: str, event: model.DomainEvent) -> int:
        """Record `event` with an integrity irregularity ("gap" or "chain"), as the simulator
        injects them."""
        self.clock += timedelta(seconds=1)
        record_tampered(self.recorder, self.log, kind, self.table_id, event,
                        shoe_id=self.shoe_id, round_no=self.round_no, actor=self.dealer,
                        occurred_at=self.clock, recorded_at=self.clock,
                        event_id=str(uuid.uuid4()))
        return self.recorder.heads[self.table_id].seq

    def close_shoe(self, cards_remaining: int = 40) -> int:
        self.round_no = None
        return self.emit(model.ShoeClosed(cards_remaining=cards_remaining))

    def begin(self, round_no: int) -> None:
        self.round_no = round_no

    def end(self) -> None:
        self.round_no = None

    def choose(self, seat: int, choice: model.Choice, *, area: int | None = None) -> int:
        """13:47-20.31(g)3: a player's choice after an early third card."""
        return self.emit(model.VoidOrPlayChosen(seat=seat, area=area or seat, choice=choice))

    def play(self, round_no: int, cards: str, wagers: dict[int, int] | None = None,
             raises: dict[int, int] | None = None) -> dict[str, int]:
        """A whole round by the rules; returns the seqs of its events by name."""
        self.begin(round_no)
        seqs = self.deal_round(cards, wagers, raises)
        self.end()
        return seqs

    # --- judging --------------------------------------------------------------------------------

    def judge(self, *, statistics: bool = False) -> list[Found]:
        """Project the log into a fresh DuckDB file and return every anomaly as
        (code, table, shoe, round, seqs), sorted."""
        found = [(r["code"], r["table_id"], r["shoe_id"], r["round_no"], r["seqs"])
                 for r in self.anomalies(statistics=statistics)]
        return sorted(found, key=lambda f: (f[0], f[1], f[2] or "", f[3] or 0, f[4]))

    def anomalies(self, *, statistics: bool = False) -> list[dict[str, Any]]:
        db = self.project()
        with duckdb.connect(str(db), read_only=True) as con:
            return list_anomalies(con, AnomalyFilter(statistics=statistics))

    def project(self) -> Path:
        self.recorder.flush()
        db = store_at(self.folder / "pitlog.duckdb")  # a copy of a new store (store_template)
        project(self.log, db)
        return db


def opened(folder: Path, profile: str = "nj-casino", decks: int = 6, **table: object) -> Pit:
    """A pit with the table opened, dealer D1 tapped in and shoe S1 loaded and burned."""
    pit = Pit(folder)
    pit.open_table(profile, **table)  # type: ignore[arg-type]
    pit.tap_in("D1")
    pit.new_shoe("S1", decks=decks)
    return pit

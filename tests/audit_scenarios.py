"""Hand-built tables for the audit tests (ledger, reconcile, report, CLI): every card, wager and
settlement is stated by the test and recorded through the real Recorder to a real embedded log,
then projected into a real DuckDB file. No simulator, no mocks."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

from store_template import store_at
from table_builder import EVENING, ORIGINAL, RAISE, TableBuilder, recorder_for

from events.log.embedded.log import EmbeddedLog
from events.reddog import model
from events.reddog.model import Box, SettledAs, Suit, WagerKind
from events.reddog.rules import Paytable
from events.reddog.theory import original_wager_edge, raise_edge
from projections.projector import project

__all__ = ["ORIGINAL", "RAISE"]

# A settlement a test states: (outcome, amount_cents, odds).
Settlement = tuple[SettledAs, int, int | None]


class Pit(TableBuilder):
    """One table of a Floor, its rounds numbered 1, 2, 3... in each shoe."""

    rounds_in_shoe = 0

    def new_shoe(self, shoe_id: str, decks: int = 6, burn: str = "2C") -> int:
        self.rounds_in_shoe = 0
        return super().new_shoe(shoe_id, decks, burn)

    def begin(self) -> int:
        self.rounds_in_shoe += 1
        self.round_no = self.rounds_in_shoe
        return self.round_no

    def end(self, cards: list[str]) -> None:
        self.rack(cards)
        self.round_no = None

    def play(self, cards: str, wagers: dict[int, int], raises: dict[int, int] | None = None,
             *, override: dict[tuple[int, WagerKind], list[Settlement]] | None = None) -> int:
        """A by-the-rules round (13:47-20.31(d)): wagers, left, right, the announcements,
        raises on a spread, the third card when one is due, settlements at the table's
        paytable, and the rack. `override[(seat, kind)]` replaces the settlements of one wager
        or raise with the ones given ([] leaves it unsettled)."""
        round_no = self.begin()
        override = override or {}

        def settle(seat: int, kind: WagerKind, cents: int, dealt: list[str]) -> None:
            if (seat, kind) not in override:
                self.settle_by_the_rules(seat, kind, cents, dealt)
            for outcome, amount, odds in override.get((seat, kind), []):
                self.settle(seat, kind, outcome, amount, odds)

        self.deal_round(cards, wagers, raises, settle=settle)
        self.round_no = None
        return round_no


class Floor:
    """Several tables recording to one log; `build()` projects it into a DuckDB file."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.log = EmbeddedLog(folder / "log")
        self.recorder = recorder_for(self.log)

    def table(self, table_id: str, *, at: datetime = EVENING, dealer: str = "D1") -> Pit:
        return Pit(self.recorder, table_id=table_id, clock=at, dealer=dealer)

    def build(self, *, store_anomalies: bool = True) -> Path:
        """Project the log into pitlog.duckdb. `store_anomalies=False` leaves out the stored
        anomaly rows and alerts (a whole detection pass, most of a small projection's time):
        for tests that read only views that never read them, as the ledger's."""
        self.recorder.flush()
        db = store_at(self.folder / "pitlog.duckdb")  # a copy of a new store (store_template)
        project(self.log, db, store_anomalies=store_anomalies)
        return db


PROMO = Paytable(three_of_a_kind=12)  # a promotional three of a kind at 12 to 1

# What audit_scenarios.evening gives, per table. The exact theoretical win: W *
# original_wager_edge for every original wager, R * raise_edge(spread) for every raise.
THEO = {
    "T01": 8500 * original_wager_edge(6, PROMO) + 1000 * raise_edge(6, 5, PROMO)
    + 1000 * raise_edge(6, 7, PROMO),
    "T02": 2500 * original_wager_edge(1) + 500 * raise_edge(1, 2),
    "T03": 18000 * original_wager_edge(6),
}
MONEY = {  # rounds, handle, paid, collected, returned, net win, hold %
    "T01": (4, 10500, 32500, 2000, 3500, -30500, Decimal("-290.4762")),
    "T02": (3, 3000, 4000, 1000, 1000, -3000, Decimal("-100.0000")),
    "T03": (3, 18000, 10000, 5000, 3000, -5000, Decimal("-27.7778")),
}


def evening(folder: Path) -> Path:
    """Three tables, one per jurisdiction profile, on the evening of 28 November 2026 (New York
    time); every settlement by the rules. The tests state the exact figures this gives.

    T01 nj-casino, 6 decks, three of a kind at 12 to 1; dealer D1, then D4 from round 3.
    T02 nj-casino-night, 1 deck, the standard table; dealer D2.
    T03 gaming-authority, 6 decks, the standard table; dealer D3; round 1 of T03-S1 voided (a
    dealing-shoe jam, its DeviceFaulted recorded), then rounds 1-2 of a new shoe T03-S2.
    """
    floor = Floor(folder)
    t1 = floor.table("T01", dealer="D1")
    t1.open_table("nj-casino", PROMO)
    t1.tap_in("D1")
    t1.new_shoe("T01-S1", decks=6)
    t1.play("7S 7H 7D", {1: 2500})  # trips: paid 12 x 2500 = 30000
    t1.play("3C 9H 5D", {1: 1000, 2: 500}, {1: 1000})  # spread 5, wins: paid 2500
    t1.tap_in("D4")
    t1.emit(model.CardBurned(rank=4, suit=Suit.CLUBS, reason=model.BurnReason.NEW_DEALER))
    t1.play("2S 10H KD", {1: 1000}, {1: 1000})  # spread 7, loses: collected 2000
    t1.play("8S 9H", {1: 1000, 2: 2500})  # consecutive: returned 3500

    t2 = floor.table("T02", at=EVENING + timedelta(minutes=1), dealer="D2")
    t2.open_table("nj-casino-night")
    t2.tap_in("D2")
    t2.new_shoe("T02-S1", decks=1)
    t2.play("4S 7H 5D", {1: 500}, {1: 500})  # spread 2 at 4 to 1: paid 4000
    t2.play("4C 9H 9D", {2: 1000})  # equal to an end card: collected 1000
    t2.play("QS QH 3D", {1: 1000})  # pair, no trips: returned 1000

    t3 = floor.table("T03", at=EVENING + timedelta(minutes=2), dealer="D3")
    t3.open_table("gaming-authority")
    t3.tap_in("D3")
    t3.new_shoe("T03-S1", decks=6)
    t3.begin()
    t3.wager(1, 2500)
    t3.wager(2, 500)
    t3.draw("9S", Box.LEFT)
    # 13:69F-34.16(n) by analogy: the dealing shoe jams mid-round, so the round is void and the
    # cards are reshuffled. The void needs its cause on record (sql/rounds.sql, void_allowed), so
    # the shoe's fault is recorded before it; the jammed shoe deals no further card.
    t3.emit(model.DeviceFaulted(device_id="SHOE-3", fault=model.Fault.SHOE_JAM,
                                detail="stopped dealing"), actor="SHOE-3")
    t3.emit(model.RoundVoided(reason="dealing shoe jammed"))
    t3.settle(1, ORIGINAL, SettledAs.VOID, 2500)
    t3.settle(2, ORIGINAL, SettledAs.VOID, 500)
    t3.end(["9S"])
    t3.emit(model.ShoeClosed(cards_remaining=311))
    t3.new_shoe("T03-S2", decks=6)
    t3.play("2S AH 10D", {1: 10000})  # spread 11 at 1 to 1: paid 10000
    t3.play("5S 10H 10C", {1: 5000})  # spread 4, loses: collected 5000
    return floor.build()

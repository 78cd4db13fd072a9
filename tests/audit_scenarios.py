"""Hand-built tables for the audit tests (ledger, reconcile, report, CLI): every card, wager and
settlement is stated by the test and recorded through the real Recorder to a real embedded log,
then projected into a real DuckDB file. No simulator, no mocks."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from events.log.embedded.log import EmbeddedLog
from events.recording.recorder import Recorder
from events.reddog import model, rules
from events.reddog.model import (
    Announced,
    Box,
    Card,
    CardDrawn,
    CardsRacked,
    Meaning,
    SettledAs,
    Suit,
    WagerKind,
)
from events.reddog.rules import STANDARD_PAYTABLE, Paytable
from events.reddog.theory import original_wager_edge, raise_edge
from events.simulation.simulator import phrase
from projections.projector import project

# 18:00 in New York (EST, UTC-5) on 28 November 2026.
EVENING = datetime(2026, 11, 28, 23, 0, tzinfo=UTC)
_RANKS = {"J": 11, "Q": 12, "K": 13, "A": 14}
ORIGINAL, RAISE = WagerKind.ORIGINAL, WagerKind.RAISE


def card(label: str) -> Card:
    """'AS' -> ace of spades, '10H' -> ten of hearts."""
    rank = label[:-1]
    return Card(_RANKS.get(rank) or int(rank), Suit(label[-1]))


# A settlement a test states: (outcome, amount_cents, odds).
Settlement = tuple[SettledAs, int, int | None]


@dataclass
class Pit:
    """One table, recorded event by event with a 1-second clock that a test may move."""

    recorder: Recorder
    table_id: str = "T01"
    clock: datetime = EVENING
    dealer: str = "D1"
    paytable: Paytable = STANDARD_PAYTABLE
    profile: str = "nj-casino"
    shoe_id: str | None = None
    round_no: int | None = None
    rounds_in_shoe: int = 0
    seqs: dict[str, int] = field(default_factory=dict)

    def emit(self, event: model.DomainEvent, *, actor: str | None = None) -> int:
        self.clock += timedelta(seconds=1)
        return self.recorder.record(self.table_id, event, shoe_id=self.shoe_id,
                                    round_no=self.round_no, actor=actor or self.dealer,
                                    occurred_at=self.clock, recorded_at=self.clock)

    def open_table(self, profile: str, paytable: Paytable = STANDARD_PAYTABLE, *,
                   board_approved: bool = False) -> int:
        self.paytable, self.profile = paytable, profile
        return self.emit(model.TableOpened(
            profile=profile, pays_spread_1=paytable.spread_1, pays_spread_2=paytable.spread_2,
            pays_spread_3=paytable.spread_3, pays_spread_4_to_11=paytable.spread_4_to_11,
            pays_three_of_a_kind=paytable.three_of_a_kind, board_approved=board_approved),
            actor="pit-terminal")

    def tap_in(self, dealer: str) -> None:
        self.dealer = dealer
        self.emit(model.DealerTappedIn(dealer_id=dealer))

    def new_shoe(self, shoe_id: str, decks: int = 6, burn: str = "2C") -> None:
        self.shoe_id, self.round_no, self.rounds_in_shoe = shoe_id, None, 0
        self.emit(model.CardsLoaded(decks=decks))
        c = card(burn)  # 13:47-20.31(d)1: the first card of a shoe is burned
        self.emit(model.CardBurned(rank=c.rank, suit=c.suit, reason=model.BurnReason.NEW_SHOE))

    # --- a round, piece by piece --------------------------------------------------------------

    def begin(self) -> int:
        self.rounds_in_shoe += 1
        self.round_no = self.rounds_in_shoe
        return self.round_no

    def wager(self, seat: int, cents: int, *, player: str | None = None) -> int:
        return self.emit(model.WagerPlaced(seat=seat, area=seat, player_id=player or f"P{seat}",
                                           amount_cents=cents))

    def draw(self, label: str, box: Box) -> int:
        c = card(label)
        return self.emit(CardDrawn(rank=c.rank, suit=c.suit, face_up=True, destination=box))

    def say(self, meaning: Meaning, value: int | None = None) -> None:
        """The dealer's exact words under the table's profile (13:47-20.31(d)7-13; GA (5)-(11))."""
        self.emit(Announced(phrase=phrase(self.profile, meaning, value), meaning=meaning,
                            value=value))

    def settle(self, seat: int, kind: WagerKind, outcome: SettledAs, cents: int,
               odds: int | None = None) -> int:
        return self.emit(model.WagerSettled(seat=seat, area=seat, wager_kind=kind,
                                            outcome=outcome, amount_cents=cents, odds=odds))

    def settle_by_rules(self, seat: int, kind: WagerKind, cents: int, cards: list[str]) -> None:
        left, right = card(cards[0]).rank, card(cards[1]).rank
        third = card(cards[2]).rank if len(cards) > 2 else None
        e = rules.settle_wager(self.paytable, left, right, third, cents)
        outcome = SettledAs(e.outcome.value.upper())
        self.settle(seat, kind, outcome, e.paid_cents or e.collected_cents or e.returned_cents,
                    e.odds)

    def end(self, cards: list[str]) -> None:
        self.emit(CardsRacked(cards=tuple(card(c) for c in cards)))
        self.round_no = None

    # --- a whole round ------------------------------------------------------------------------

    def play(self, cards: str, wagers: dict[int, int], raises: dict[int, int] | None = None,
             *, override: dict[tuple[int, WagerKind], list[Settlement]] | None = None) -> int:
        """A by-the-rules round (13:47-20.31(d)): wagers, left, right, the announcements,
        raises on a spread, the third card when one is due, settlements at the table's
        paytable, and the rack. `override[(seat, kind)]` replaces the settlements of one wager
        or raise with the ones given ([] leaves it unsettled)."""
        round_no = self.begin()
        raises = raises or {}
        override = override or {}
        dealt = cards.split()
        for seat, cents in wagers.items():
            self.wager(seat, cents)
        self.draw(dealt[0], Box.LEFT)
        self.draw(dealt[1], Box.RIGHT)
        kind = rules.classify(card(dealt[0]).rank, card(dealt[1]).rank)
        if kind.kind is rules.HandKind.CONSECUTIVE:
            self.say(Meaning.CONSECUTIVE)
            dealt = dealt[:2]
        else:
            if kind.kind is rules.HandKind.SPREAD:
                self.say(Meaning.SPREAD, kind.spread)
                for seat, cents in raises.items():
                    self.emit(model.RaisePlaced(seat=seat, area=seat, amount_cents=cents))
                self.say(Meaning.RAISES_CLOSED)
            else:
                self.say(Meaning.PAIR)
            self.draw(dealt[2], Box.MIDDLE)
            third = card(dealt[2]).rank
            if kind.kind is rules.HandKind.SPREAD:
                self.say(Meaning.THIRD_CARD, third)  # (d)13: the third card's value
            elif third == card(dealt[0]).rank:
                self.say(Meaning.THREE_OF_A_KIND)  # (d)9
            else:
                self.say(Meaning.NO_THREE_OF_A_KIND)  # (d)10
        for seat, cents in wagers.items():
            self._settle(seat, ORIGINAL, cents, dealt, override)
            if seat in raises:
                self._settle(seat, RAISE, raises[seat], dealt, override)
        self.end(dealt)
        return round_no

    def _settle(self, seat: int, kind: WagerKind, cents: int, dealt: list[str],
                override: dict[tuple[int, WagerKind], list[Settlement]]) -> None:
        if (seat, kind) in override:
            for outcome, amount, odds in override[(seat, kind)]:
                self.settle(seat, kind, outcome, amount, odds)
        else:
            self.settle_by_rules(seat, kind, cents, dealt)


class Floor:
    """Several tables recording to one log; `build()` projects it into a DuckDB file."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.log = EmbeddedLog(folder / "log")
        ids = itertools.count(1)
        self.recorder = Recorder(self.log, heads={}, new_id=lambda: str(uuid.UUID(int=next(ids))),
                                 now=lambda: EVENING)

    def table(self, table_id: str, *, at: datetime = EVENING, dealer: str = "D1") -> Pit:
        return Pit(self.recorder, table_id=table_id, clock=at, dealer=dealer)

    def build(self) -> Path:
        self.recorder.flush()
        db = self.folder / "pitlog.duckdb"
        project(self.log, db)
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
    T03 gaming-authority, 6 decks, the standard table; dealer D3; round 1 voided (shoe jam).
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
    t3.emit(model.RoundVoided(reason="dealing shoe jammed"))  # 13:69F-34.16(n) by analogy
    t3.settle(1, ORIGINAL, SettledAs.VOID, 2500)
    t3.settle(2, ORIGINAL, SettledAs.VOID, 500)
    t3.end(["9S"])
    t3.play("2S AH 10D", {1: 10000})  # spread 11 at 1 to 1: paid 10000
    t3.play("5S 10H 10C", {1: 5000})  # spread 4, loses: collected 5000
    return floor.build()

"""A hand-built table for the surveillance tests: every card, word, wager and settlement is
stated by the test, recorded through the real Recorder to a real embedded log, projected into
a real DuckDB file, and judged by the real anomaly views. No simulator, no mocks.

Each recording method returns the event's sequence number, so a test can say exactly which
events prove an anomaly.
"""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from events.log.embedded.log import EmbeddedLog
from events.recording.recorder import Recorder
from events.reddog import model, rules
from events.reddog.model import (
    Announced,
    Box,
    BurnReason,
    Card,
    CardBurned,
    CardDrawn,
    CardsRacked,
    Instrument,
    Meaning,
    SettledAs,
    Suit,
    WagerKind,
)
from events.simulation.irregularities import record_tampered
from events.simulation.simulator import phrase
from projections.anomalies import AnomalyFilter, list_anomalies
from projections.projector import project

EVENING = datetime(2026, 11, 28, 23, 0, tzinfo=UTC)
_RANKS = {"J": 11, "Q": 12, "K": 13, "A": 14}
ORIGINAL, RAISE = WagerKind.ORIGINAL, WagerKind.RAISE
WON, LOST, VOID = SettledAs.WON, SettledAs.LOST, SettledAs.VOID
LEFT, RIGHT, MIDDLE = Box.LEFT, Box.RIGHT, Box.MIDDLE

Found = tuple[str, str, str | None, int | None, list[int]]  # code, table, shoe, round, seqs


def card(label: str) -> Card:
    """'AS' -> ace of spades, '10H' -> ten of hearts."""
    return Card(_RANKS.get(label[:-1]) or int(label[:-1]), Suit(label[-1]))


class Pit:
    """One table, recorded event by event, one second apart."""

    def __init__(self, folder: Path, table_id: str = "T01") -> None:
        ids = itertools.count(1)
        self.folder = folder
        self.log = EmbeddedLog(folder / "log")
        self.recorder = Recorder(self.log, heads={},
                                 new_id=lambda: str(uuid.UUID(int=next(ids))),
                                 now=lambda: EVENING)
        self.table_id = table_id
        self.clock = EVENING
        self.dealer = "D1"
        self.profile = "nj-casino"
        self.paytable = rules.STANDARD_PAYTABLE
        self.shoe_id: str | None = None
        self.round_no: int | None = None

    # --- recording ------------------------------------------------------------------------------

    def emit(self, event: model.DomainEvent, *, actor: str | None = None) -> int:
        self.clock += timedelta(seconds=1)
        return self.recorder.record(self.table_id, event, shoe_id=self.shoe_id,
                                    round_no=self.round_no, actor=actor or self.dealer,
                                    occurred_at=self.clock, recorded_at=self.clock)

    def tampered(self, kind: str, event: model.DomainEvent) -> int:
        """Record `event` with an integrity irregularity ("gap" or "chain"), as the simulator
        injects them."""
        self.clock += timedelta(seconds=1)
        record_tampered(self.recorder, self.log, kind, self.table_id, event,
                        shoe_id=self.shoe_id, round_no=self.round_no, actor=self.dealer,
                        occurred_at=self.clock, recorded_at=self.clock,
                        event_id=str(uuid.uuid4()))
        return self.recorder.heads[self.table_id].seq

    def open_table(self, profile: str = "nj-casino",
                   paytable: rules.Paytable = rules.STANDARD_PAYTABLE, *,
                   multiple_areas_permitted: bool = False, board_approved: bool = False) -> int:
        self.profile, self.paytable = profile, paytable
        return self.emit(model.TableOpened(
            profile=profile, pays_spread_1=paytable.spread_1, pays_spread_2=paytable.spread_2,
            pays_spread_3=paytable.spread_3, pays_spread_4_to_11=paytable.spread_4_to_11,
            pays_three_of_a_kind=paytable.three_of_a_kind,
            multiple_areas_permitted=multiple_areas_permitted, board_approved=board_approved),
            actor="pit-terminal")

    def tap_in(self, dealer: str) -> int:
        self.dealer = dealer
        return self.emit(model.DealerTappedIn(dealer_id=dealer))

    def load(self, shoe_id: str, decks: int = 6) -> int:
        self.shoe_id, self.round_no = shoe_id, None
        return self.emit(model.CardsLoaded(decks=decks))

    def burn(self, label: str, reason: BurnReason = BurnReason.NEW_SHOE) -> int:
        c = card(label)
        return self.emit(CardBurned(rank=c.rank, suit=c.suit, reason=reason))

    def new_shoe(self, shoe_id: str, decks: int = 6, burn: str = "2C") -> int:
        """CardsLoaded and the burn of its first card (13:47-20.31(d)1); returns the load's seq."""
        seq = self.load(shoe_id, decks)
        self.burn(burn)
        return seq

    def close_shoe(self, cards_remaining: int = 40) -> int:
        self.round_no = None
        return self.emit(model.ShoeClosed(cards_remaining=cards_remaining))

    def begin(self, round_no: int) -> None:
        self.round_no = round_no

    def end(self) -> None:
        self.round_no = None

    def wager(self, seat: int, cents: int, *, area: int | None = None, player: str | None = None,
              instrument: Instrument = Instrument.CHIPS) -> int:
        return self.emit(model.WagerPlaced(seat=seat, area=area or seat,
                                           player_id=player or f"P{seat}", amount_cents=cents,
                                           instrument=instrument))

    def draw(self, label: str, box: Box) -> int:
        c = card(label)
        return self.emit(CardDrawn(rank=c.rank, suit=c.suit, face_up=True, destination=box))

    def say(self, meaning: Meaning, value: int | None = None) -> int:
        return self.emit(Announced(phrase=phrase(self.profile, meaning, value), meaning=meaning,
                                   value=value))

    def raise_(self, seat: int, cents: int, *, area: int | None = None) -> int:
        return self.emit(model.RaisePlaced(seat=seat, area=area or seat, amount_cents=cents))

    def choose(self, seat: int, choice: model.Choice, *, area: int | None = None) -> int:
        """13:47-20.31(g)3: a player's choice after an early third card."""
        return self.emit(model.VoidOrPlayChosen(seat=seat, area=area or seat, choice=choice))

    def settle(self, seat: int, kind: WagerKind, outcome: SettledAs, cents: int,
               odds: int | None = None, *, area: int | None = None) -> int:
        return self.emit(model.WagerSettled(seat=seat, area=area or seat, wager_kind=kind,
                                            outcome=outcome, amount_cents=cents, odds=odds))

    def settle_by_the_rules(self, seat: int, kind: WagerKind, cents: int, cards: str, *,
                            area: int | None = None) -> int:
        """The settlement 13:47-20.31(d)7-14 and (e) require for these cards."""
        ranks = [card(c).rank for c in cards.split()]
        e = rules.settle_wager(self.paytable, ranks[0], ranks[1],
                               ranks[2] if len(ranks) > 2 else None, cents)
        amount = e.paid_cents or e.collected_cents or e.returned_cents
        return self.settle(seat, kind, SettledAs(e.outcome.value.upper()), amount, e.odds,
                           area=area)

    def rack(self, labels: str) -> int:
        return self.emit(CardsRacked(cards=tuple(card(c) for c in labels.split())))

    def play(self, round_no: int, cards: str, wagers: dict[int, int] | None = None,
             raises: dict[int, int] | None = None) -> dict[str, int]:
        """A whole round by the rules; returns the seqs of its events by name."""
        self.begin(round_no)
        seqs: dict[str, int] = {}
        wagers, raises = wagers or {}, raises or {}
        for seat, cents in wagers.items():
            seqs[f"wager{seat}"] = self.wager(seat, cents)
        labels = cards.split()
        seqs["left"], seqs["right"] = self.draw(labels[0], LEFT), self.draw(labels[1], RIGHT)
        left, right = card(labels[0]).rank, card(labels[1]).rank
        hand = rules.classify(left, right)
        if hand.kind is rules.HandKind.CONSECUTIVE:
            seqs["said"] = self.say(Meaning.CONSECUTIVE)
        elif hand.kind is rules.HandKind.PAIR:
            seqs["said"] = self.say(Meaning.PAIR)
            seqs["third"] = self.draw(labels[2], MIDDLE)
            trips = card(labels[2]).rank == left
            self.say(Meaning.THREE_OF_A_KIND if trips else Meaning.NO_THREE_OF_A_KIND)
        else:
            seqs["said"] = self.say(Meaning.SPREAD, hand.spread)
            for seat, cents in raises.items():
                seqs[f"raise{seat}"] = self.raise_(seat, cents)
            seqs["raises_closed"] = self.say(Meaning.RAISES_CLOSED)
            seqs["third"] = self.draw(labels[2], MIDDLE)
            self.say(Meaning.THIRD_CARD, card(labels[2]).rank)
        for seat, cents in wagers.items():
            seqs[f"settle{seat}"] = self.settle_by_the_rules(seat, ORIGINAL, cents, cards)
            if seat in raises:
                self.settle_by_the_rules(seat, RAISE, raises[seat], cards)
        seqs["rack"] = self.rack(cards)
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
        db = self.folder / "pitlog.duckdb"
        project(self.log, db)
        return db


def opened(folder: Path, profile: str = "nj-casino", decks: int = 6, **table: object) -> Pit:
    """A pit with the table opened, dealer D1 tapped in and shoe S1 loaded and burned."""
    pit = Pit(folder)
    pit.open_table(profile, **table)  # type: ignore[arg-type]
    pit.tap_in("D1")
    pit.new_shoe("S1", decks=decks)
    return pit

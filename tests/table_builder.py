"""The one test table builder: a table whose every card, word, wager and settlement the test
states, recorded event by event through the real Recorder (deterministic event ids, a clock one
second per event) to a real log. No simulator, no mocks.

conftest.HandBuiltTable, audit_scenarios.Pit and surveillance_pit.Pit are this builder with
what their tests add (a log of their own, projection, automatic round numbers, settlements
overridden); the recording itself and the by-the-rules round live here only.
"""

from __future__ import annotations

import io
import itertools
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from store_template import new_store

from events.log.base import EventLog
from events.log.embedded.log import EmbeddedLog
from events.recording.ingest import ingest
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
from events.simulation.simulator import phrase
from projections.projector import project

# 18:00 in New York (EST, UTC-5) on 28 November 2026.
EVENING = datetime(2026, 11, 28, 23, 0, tzinfo=UTC)
_RANKS = {"J": 11, "Q": 12, "K": 13, "A": 14}
ORIGINAL, RAISE = WagerKind.ORIGINAL, WagerKind.RAISE

# Settles one wager or raise of a round: (seat, kind, cents, the round's cards).
Settler = Callable[[int, WagerKind, int, list[str]], object]


def card(label: str | Card) -> Card:
    """'AS' -> ace of spades, '10H' -> ten of hearts (a Card is returned as it is)."""
    if isinstance(label, Card):
        return label
    return Card(_RANKS.get(label[:-1]) or int(label[:-1]), Suit(label[-1]))


def recorder_for(log: EventLog) -> Recorder:
    """A Recorder with event ids 1, 2, 3... (as UUIDs) and a fixed recording time."""
    ids = itertools.count(1)
    return Recorder(log, heads={}, new_id=lambda: str(uuid.UUID(int=next(ids))),
                    now=lambda: EVENING)


class TableBuilder:
    """One table, recorded event by event one second apart; each method returns the event's
    sequence number, so a test can say exactly which events prove something."""

    def __init__(self, recorder: Recorder, table_id: str = "T01", *,
                 clock: datetime = EVENING, dealer: str = "D1") -> None:
        self.recorder = recorder
        self.table_id = table_id
        self.clock = clock
        self.dealer = dealer
        self.profile = "nj-casino"
        self.paytable = rules.STANDARD_PAYTABLE
        self.shoe_id: str | None = None
        self.round_no: int | None = None

    def emit(self, event: model.DomainEvent, *, actor: str | None = None) -> int:
        self.clock += timedelta(seconds=1)
        return self.recorder.record(self.table_id, event, shoe_id=self.shoe_id,
                                    round_no=self.round_no, actor=actor or self.dealer,
                                    occurred_at=self.clock, recorded_at=self.clock)

    def flush(self) -> None:
        self.recorder.flush()

    # --- the table and its shoe -----------------------------------------------------------------

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

    def burn(self, label: str | Card, reason: BurnReason = BurnReason.NEW_SHOE) -> int:
        c = card(label)
        return self.emit(CardBurned(rank=c.rank, suit=c.suit, reason=reason))

    def new_shoe(self, shoe_id: str, decks: int = 6, burn: str = "2C") -> int:
        """CardsLoaded and the burn of its first card (13:47-20.31(d)1); returns the load's seq."""
        seq = self.load(shoe_id, decks)
        self.burn(burn)
        return seq

    # --- a round, piece by piece ----------------------------------------------------------------

    def wager(self, seat: int, cents: int, *, area: int | None = None, player: str | None = None,
              instrument: Instrument = Instrument.CHIPS) -> int:
        return self.emit(model.WagerPlaced(seat=seat, area=area or seat,
                                           player_id=player or f"P{seat}", amount_cents=cents,
                                           instrument=instrument))

    def draw(self, label: str | Card, box: Box) -> int:
        c = card(label)
        return self.emit(CardDrawn(rank=c.rank, suit=c.suit, face_up=True, destination=box))

    def say(self, meaning: Meaning, value: int | None = None) -> int:
        """The dealer's exact words under the table's profile (13:47-20.31(d)7-13; GA (5)-(11))."""
        return self.emit(Announced(phrase=phrase(self.profile, meaning, value), meaning=meaning,
                                   value=value))

    def raise_(self, seat: int, cents: int, *, area: int | None = None) -> int:
        return self.emit(model.RaisePlaced(seat=seat, area=area or seat, amount_cents=cents))

    def settle(self, seat: int, kind: WagerKind, outcome: SettledAs, cents: int,
               odds: int | None = None, *, area: int | None = None) -> int:
        return self.emit(model.WagerSettled(seat=seat, area=area or seat, wager_kind=kind,
                                            outcome=outcome, amount_cents=cents, odds=odds))

    def settle_by_the_rules(self, seat: int, kind: WagerKind, cents: int,
                            cards: str | list[str], *, area: int | None = None) -> int:
        """The settlement 13:47-20.31(d)7-14 and (e) require for these cards, at the table's
        paytable."""
        ranks = [card(c).rank for c in (cards.split() if isinstance(cards, str) else cards)]
        e = rules.settle_wager(self.paytable, ranks[0], ranks[1],
                               ranks[2] if len(ranks) > 2 else None, cents)
        amount = e.paid_cents or e.collected_cents or e.returned_cents
        return self.settle(seat, kind, SettledAs(e.outcome.value.upper()), amount, e.odds,
                           area=area)

    def rack(self, labels: str | list[str]) -> int:
        cards = labels.split() if isinstance(labels, str) else labels
        return self.emit(CardsRacked(cards=tuple(card(c) for c in cards)))

    def open_spread(self, round_no: int = 1, cards: str = "3C QD", *, cents: int = 1000,
                    closed: bool = True) -> dict[str, int]:
        """Round `round_no` begun: seat 1 wagers `cents`, the two cards to the left and right
        boxes (a spread: 3C QD is spread 8), "spread N" said and, unless `closed` is False,
        "Raises closed"; the third card is the test's. Returns the seqs by name: w1, left,
        right, spread and closed."""
        self.round_no = round_no
        first, second = (card(c) for c in cards.split())
        seqs = {"w1": self.wager(1, cents), "left": self.draw(first, Box.LEFT),
                "right": self.draw(second, Box.RIGHT)}
        seqs["spread"] = self.say(Meaning.SPREAD, rules.classify(first.rank, second.rank).spread)
        if closed:
            seqs["closed"] = self.say(Meaning.RAISES_CLOSED)
        return seqs

    # --- a whole round --------------------------------------------------------------------------

    def deal_round(self, cards: str, wagers: dict[int, int] | None = None,
                   raises: dict[int, int] | None = None, *, racked: str | None = None,
                   settle: Settler | None = None) -> dict[str, int]:
        """A whole round by the rules (13:47-20.31(d)) in the round already begun: wagers, left,
        right, the announcements, raises on a spread, the third card when one is due, each wager
        then its raise settled (by `settle`, or at the table's paytable), and the rack (in
        the order given unless `racked` says otherwise). Returns the seqs of its events by name."""
        seqs: dict[str, int] = {}
        wagers, raises = wagers or {}, raises or {}
        for seat, cents in wagers.items():
            seqs[f"wager{seat}"] = self.wager(seat, cents)
        dealt = cards.split()
        seqs["left"], seqs["right"] = self.draw(dealt[0], Box.LEFT), self.draw(dealt[1], Box.RIGHT)
        left = card(dealt[0]).rank
        hand = rules.classify(left, card(dealt[1]).rank)
        if hand.kind is rules.HandKind.CONSECUTIVE:
            seqs["said"] = self.say(Meaning.CONSECUTIVE)  # (d)7: a tie hand, no third card
            dealt = dealt[:2]
        elif hand.kind is rules.HandKind.PAIR:
            seqs["said"] = self.say(Meaning.PAIR)
            seqs["third"] = self.draw(dealt[2], Box.MIDDLE)
            trips = card(dealt[2]).rank == left
            self.say(Meaning.THREE_OF_A_KIND if trips else Meaning.NO_THREE_OF_A_KIND)  # (d)9-10
        else:
            seqs["said"] = self.say(Meaning.SPREAD, hand.spread)
            for seat, cents in raises.items():
                seqs[f"raise{seat}"] = self.raise_(seat, cents)
            seqs["raises_closed"] = self.say(Meaning.RAISES_CLOSED)
            seqs["third"] = self.draw(dealt[2], Box.MIDDLE)
            self.say(Meaning.THIRD_CARD, card(dealt[2]).rank)  # (d)13: the third card's value
        settle = settle or self.settle_by_the_rules
        for seat, cents in wagers.items():
            seqs[f"settle{seat}"] = settle(seat, ORIGINAL, cents, dealt)  # type: ignore[assignment]
            if seat in raises:
                settle(seat, RAISE, raises[seat], dealt)
        seqs["rack"] = self.rack(racked or cards)
        return seqs


T0 = datetime(2026, 11, 28, 21, 0, tzinfo=UTC)  # record_events' first second


def record_events(log: EventLog, per_table: dict[str, int], run: str = "e") -> Recorder:
    """Round-robin over the tables so their records interleave in the partition. `run`
    prefixes the event ids: two runs from the same heads then record other bytes."""
    ids = itertools.count(1)
    recorder = Recorder(log, new_id=lambda: f"{run}{next(ids)}", now=lambda: T0)
    remaining = dict(per_table)
    i = 0
    while any(remaining.values()):
        for table, left in remaining.items():
            if left:
                recorder.record(table, model.CardDrawn(
                    rank=2 + i % 13, suit=model.Suit.HEARTS, face_up=True,
                    destination=model.Box.LEFT), shoe_id=f"{table}-S0001", round_no=1 + i // 3,
                    actor="SHOE-1", occurred_at=T0 + timedelta(seconds=i))
                remaining[table] = left - 1
                i += 1
    recorder.flush()
    return recorder


def project_device_lines(lines: list[dict[str, object]], folder: Path) -> Path:
    """Device lines (JSON objects, as `pitlog ingest` reads them) recorded to a new embedded log
    in `folder`/log through the real ingest, every line accepted, then projected: the store,
    `folder`/pitlog.duckdb."""
    log = EmbeddedLog(folder / "log")
    try:
        report = ingest(io.BytesIO("\n".join(json.dumps(x) for x in lines).encode()), log,
                        source="devices", quarantine=folder / "q.jsonl")
        assert report.rejected == 0
        db = new_store(folder / "pitlog.duckdb")  # a copy of a new store (store_template)
        project(log, db)
    finally:
        log.close()
    return db

"""Shared fixtures: a fresh embedded log, and a hand-built table that records through the real
Recorder (no simulator, so tests state every card they depend on)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from events.log.embedded.log import EmbeddedLog
from events.recording.recorder import Recorder
from events.reddog import model, rules
from events.reddog.model import Announced, Box, Card, CardDrawn, CardsRacked, Meaning, Suit

START = datetime(2026, 11, 28, 23, 0, tzinfo=UTC)
_RANKS = {"J": 11, "Q": 12, "K": 13, "A": 14}


def card(label: str) -> Card:
    """'AS' -> ace of spades, '10H' -> ten of hearts."""
    rank = label[:-1]
    return Card(_RANKS.get(rank) or int(rank), Suit(label[-1]))


class HandBuiltTable:
    """Records one table's events with a 1-second clock, deterministic ids, and helpers for a
    shoe and a by-the-rules round (13:47-20.31(d))."""

    def __init__(self, log: EmbeddedLog, table_id: str = "T01") -> None:
        ids = itertools.count(1)
        self.table_id = table_id
        self.recorder = Recorder(log, heads={}, new_id=lambda: str(uuid.UUID(int=next(ids))),
                                 now=lambda: START)
        self.clock = START
        self.dealer = "D1"
        self.shoe_id: str | None = None
        self.round_no: int | None = None

    def emit(self, event: model.DomainEvent, *, actor: str | None = None) -> int:
        self.clock += timedelta(seconds=1)
        return self.recorder.record(self.table_id, event, shoe_id=self.shoe_id,
                                    round_no=self.round_no, actor=actor or self.dealer,
                                    occurred_at=self.clock, recorded_at=self.clock)

    def tap_in(self, dealer: str) -> None:
        self.dealer = dealer
        self.emit(model.DealerTappedIn(dealer_id=dealer))

    def new_shoe(self, shoe_id: str, burn: str, decks: int = 6) -> None:
        self.shoe_id, self.round_no = shoe_id, None
        self.emit(model.CardsLoaded(decks=decks))
        c = card(burn)  # 13:47-20.31(d)1: the first card of a shoe is burned
        self.emit(model.CardBurned(rank=c.rank, suit=c.suit, reason=model.BurnReason.NEW_SHOE))

    def play(self, round_no: int, cards: str, wagers: dict[int, int] | None = None,
             raises: dict[int, int] | None = None, racked: str | None = None) -> None:
        """A whole round: wagers, left, right, announcements, raises, middle, settlements and
        the rack (in dealing order unless `racked` says otherwise)."""
        self.round_no = round_no
        wagers = wagers or {}
        raises = raises or {}
        for seat, cents in wagers.items():
            self.emit(model.WagerPlaced(seat=seat, area=seat, player_id=f"P{seat}",
                                        amount_cents=cents))
        dealt = [card(c) for c in cards.split()]
        left, right = dealt[0], dealt[1]
        third = dealt[2] if len(dealt) > 2 else None
        self.draw(left, Box.LEFT)
        self.draw(right, Box.RIGHT)
        kind = rules.classify(left.rank, right.rank)
        if kind.kind is rules.HandKind.CONSECUTIVE:
            self.say("The cards are consecutive--tie hand", Meaning.CONSECUTIVE)
        elif kind.kind is rules.HandKind.PAIR:
            self.say("We have a pair", Meaning.PAIR)
            assert third is not None
            self.draw(third, Box.MIDDLE)
            trips = third.rank == left.rank
            self.say("Three of a kind" if trips else "No three of a kind--tie hand",
                     Meaning.THREE_OF_A_KIND if trips else Meaning.NO_THREE_OF_A_KIND)
        else:
            self.say(f"Spread {kind.spread}", Meaning.SPREAD, kind.spread)
            for seat, cents in raises.items():
                self.emit(model.RaisePlaced(seat=seat, area=seat, amount_cents=cents))
            self.say("Raises closed", Meaning.RAISES_CLOSED)
            assert third is not None
            self.draw(third, Box.MIDDLE)
            self.say(str(third.rank), Meaning.THIRD_CARD, third.rank)
        for seat, cents in wagers.items():
            self.settle(seat, model.WagerKind.ORIGINAL, cents, left, right, third)
            if seat in raises:
                self.settle(seat, model.WagerKind.RAISE, raises[seat], left, right, third)
        order = [card(c) for c in racked.split()] if racked else dealt
        self.emit(CardsRacked(cards=tuple(order)))
        self.round_no = None

    def draw(self, c: Card, box: Box) -> None:
        self.emit(CardDrawn(rank=c.rank, suit=c.suit, face_up=True, destination=box))

    def say(self, phrase: str, meaning: Meaning, value: int | None = None) -> None:
        self.emit(Announced(phrase=phrase, meaning=meaning, value=value))

    def settle(self, seat: int, kind: model.WagerKind, cents: int, left: Card, right: Card,
               third: Card | None) -> None:
        e = rules.settle_wager(rules.STANDARD_PAYTABLE, left.rank, right.rank,
                               third.rank if third else None, cents)
        outcome = model.SettledAs(e.outcome.value.upper())
        amount = e.paid_cents or e.collected_cents or e.returned_cents
        self.emit(model.WagerSettled(seat=seat, area=seat, wager_kind=kind, outcome=outcome,
                                     amount_cents=amount, odds=e.odds))

    def flush(self) -> None:
        self.recorder.flush()


@pytest.fixture
def log(tmp_path: Path) -> EmbeddedLog:
    # Four partitions: T01 and T03 land in partition 3, T02 in 1, so 0 and 2 stay empty.
    return EmbeddedLog(tmp_path / "log", partitions=4)


@pytest.fixture
def table(log: EmbeddedLog) -> Callable[..., HandBuiltTable]:
    """table('T01') -> a HandBuiltTable recording to this test's log."""
    return lambda table_id="T01": HandBuiltTable(log, table_id)


# --- Kafka: one real broker per session, one fresh topic per test (issue 3) ----------------


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Bootstrap address of a real broker: the one CI started (PITLOG_KAFKA_BOOTSTRAP), or one
    started here for the whole session and stopped at its end. Never skipped when Java or
    Maven are missing: deselect with `-m "not kafka"` instead."""
    from kafka_support import session_bootstrap

    with session_bootstrap(tmp_path_factory.mktemp("kafka")) as bootstrap:
        yield bootstrap


@pytest.fixture
def kafka_uri(kafka_broker: str, request: pytest.FixtureRequest) -> str:
    """kafka://BOOTSTRAP/TOPIC with a topic of this test's own (STYLE, idiom 10)."""
    from kafka_support import topic_for

    return f"kafka://{kafka_broker}/{topic_for(request.node.name)}"


# --- running the suite on several workers (pyproject: -n 3 --dist loadfile) ----------------


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test marked slow goes first (the order is the same with or without xdist): under
    pytest-xdist its module is then the first handed to a worker, so the longest test starts at
    once instead of last. (--dist loadfile keeps each module on one worker, so its module-scoped
    store, server or browser is built once; --dist loadgroup cannot do it here: xdist 3.8 marks
    a group by rewriting item._nodeid, which pytest 9 no longer reads.)"""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable

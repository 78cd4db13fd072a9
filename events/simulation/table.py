"""What the injected irregularities see of a simulated table: the round in play (`Hand`) and the
table itself (`Table`, the part of simulator.TableSim an injector may use).

The simulator calls its injector at each point of a round, and an injector acts on the table
(deals, announces, records); so the two depend on each other at run time. This module is the
seam between them: the injectors (irregularities.py, irregular_hands.py, irregular_cards.py)
import only this, and simulator.py imports them, so the modules import one way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from events.reddog import model, rules
from events.reddog.model import Box, Card, Meaning

Key = tuple[int, int]  # (seat, betting area)


@dataclass(slots=True)
class Hand:
    """The round in play: what is owed and what is on the layout."""

    wagers: dict[Key, int]  # the original wagers as they stood when the first card came out
    raises: dict[Key, int] = field(default_factory=dict)
    dealt: list[Card] = field(default_factory=list)  # every card drawn, in order (the rack)
    left: Card | None = None
    right: Card | None = None
    third: Card | None = None  # the card that decides the round
    settled: set[Key] = field(default_factory=set)  # refunded early (voided, 13:47-20.31(g)3)


class Rates(Protocol):
    """The injection rates of a simulation (simulator.SimConfig)."""

    @property
    def irregularities(self) -> float: ...  # chance per opportunity of every injectable code
    @property
    def per_code(self) -> Mapping[str, float]: ...  # overrides by anomaly code


class Table(Protocol):
    """A simulated table as an injector uses it (simulator.TableSim)."""

    table_id: str
    profile: str
    decks: int
    paytable: rules.Paytable
    players: dict[int, str]  # seat -> player id
    shoe: list[Card]  # the undealt cards, the next one last
    shoe_id: str | None
    shoe_open: bool
    cut_behind: int  # the cutting card sits this many cards from the end
    reshuffle_now: bool
    round_no: int | None
    round_count: int

    def emit(self, event: model.DomainEvent, *, actor: str | None = None,
             gap: float = 1.5) -> None: ...
    def draw(self) -> Card: ...
    def deal(self, box: Box, hand: Hand) -> Card: ...
    def announce(self, meaning: Meaning, value: int | None = None) -> None: ...
    def open_table(self, pt: rules.Paytable) -> None: ...
    def close_shoe(self) -> None: ...
    def play_round(self) -> None: ...

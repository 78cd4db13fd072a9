"""One round's state as a fold over its events: `evolve(state, event)` returns the state after
the event, and the cards, kind, deciding third card and players' result are read off it.

It decides as the read side's `rounds` view does (projections/views.sql, rounds_of and
deciding_third), so the simulator and the views agree on every round; tests/projections/test_round_state.py
folds simulated shoes and compares. Events that do not change a round's cards, announcements or
voiding (wagers, settlements, the rack) leave the state as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import singledispatch

from events.reddog import rules
from events.reddog.model import Announced, Box, Card, CardDrawn, DomainEvent, Meaning, RoundVoided
from events.reddog.rules import Classification, SettledAs


@dataclass(frozen=True, slots=True)
class Draw:
    """A card drawn from the shoe in the round (a CardDrawn), where it went, and how many
    events of the round came before it (its place in seq order)."""

    at: int
    card: Card
    box: Box


@dataclass(frozen=True, slots=True)
class RoundState:
    """What a round's events so far say. `events` counts them (it orders the draws)."""

    events: int = 0
    draws: tuple[Draw, ...] = ()
    announced: tuple[Meaning, ...] = ()
    raises_closed_at: int | None = None  # the first "Raises closed"
    voided: bool = False

    def _first_to(self, box: Box) -> Draw | None:
        return next((d for d in self.draws if d.box is box), None)

    @property
    def left(self) -> Card | None:
        """The first card to the left box (13:47-20.31(d)5)."""
        d = self._first_to(Box.LEFT)
        return d.card if d else None

    @property
    def right(self) -> Card | None:
        d = self._first_to(Box.RIGHT)
        return d.card if d else None

    @property
    def classification(self) -> Classification | None:
        """Consecutive, pair or spread (13:47-20.31(d)7-8, (d)11), once both cards are out."""
        if self.left is None or self.right is None:
            return None
        return rules.classify(self.left.rank, self.right.rank)

    @property
    def deciding_draw(self) -> Draw | None:
        """The one third card that decides (deciding_third in views.sql): for a pair, the first
        card drawn after both side cards (13:47-20.31(d)8-10); for a spread, the first after
        both and the first "Raises closed" ((d)13-14), or without one the first to the middle
        box ((g)3: EARLY_THIRD_CARD). Wherever the dealer put it; a consecutive round has none."""
        c, left, right = self.classification, self._first_to(Box.LEFT), self._first_to(Box.RIGHT)
        if c is None or left is None or right is None:
            return None
        if c.kind is rules.HandKind.PAIR:
            after = max(left.at, right.at)
        elif c.kind is rules.HandKind.SPREAD:
            if self.raises_closed_at is None:
                return self._first_to(Box.MIDDLE)
            after = max(left.at, right.at, self.raises_closed_at)
        else:
            return None
        return next((d for d in self.draws if d.at > after), None)

    @property
    def third(self) -> Card | None:
        d = self.deciding_draw
        return d.card if d else None

    @property
    def redrawn(self) -> tuple[Card, ...]:
        """Every card drawn after the deciding one (THIRD_CARD_REDRAWN): they decide nothing."""
        d = self.deciding_draw
        return tuple(x.card for x in self.draws if d is not None and x.at > d.at)

    @property
    def outcome(self) -> SettledAs | None:
        """The players' result from the cards, None while undecided. The rounds view writes the
        same decision in lower case ('won', 'lost', 'void')."""
        c = self.classification
        if self.voided:  # 13:69F-34.16(n) by analogy: a voided round returns every wager
            return SettledAs.VOID
        if c is None:
            return None
        if c.kind is rules.HandKind.CONSECUTIVE:  # (d)7: tie hand
            return SettledAs.VOID
        third, left, right = self.third, self.left, self.right
        if third is None or left is None or right is None:
            return None
        if c.kind is rules.HandKind.PAIR:  # (d)9: three of a kind; (d)10: a tie hand
            return SettledAs.WON if third.rank == left.rank else SettledAs.VOID
        # (d)14; GA (11)(a): strictly between wins, equal to either card loses
        return SettledAs.WON if rules.third_card_wins(left.rank, right.rank, third.rank) \
            else SettledAs.LOST


@singledispatch
def _apply(event: DomainEvent, state: RoundState) -> RoundState:
    return state  # wagers, settlements, the rack: not the round's cards or words


@_apply.register
def _(event: CardDrawn, state: RoundState) -> RoundState:
    draw = Draw(state.events, Card(event.rank, event.suit), event.destination)
    return replace(state, draws=(*state.draws, draw))


@_apply.register
def _(event: Announced, state: RoundState) -> RoundState:
    closed = state.raises_closed_at
    if closed is None and event.meaning is Meaning.RAISES_CLOSED:
        closed = state.events
    return replace(state, announced=(*state.announced, event.meaning), raises_closed_at=closed)


@_apply.register
def _(event: RoundVoided, state: RoundState) -> RoundState:
    return replace(state, voided=True)


def evolve(state: RoundState, event: DomainEvent) -> RoundState:
    """The round after `event`, one of its events in recorded (seq) order."""
    after = _apply(event, state)
    return replace(after, events=after.events + 1)

"""One round's state as a fold over its events: `evolve(state, event)` returns the state after
the event, and the cards, kind, deciding third card and players' result are read off it.

It decides as the read side's `rounds` view does (projections/views.sql, rounds_of,
round_cards, deciding_index and void_allowed), so the simulator and the views agree on every
round; tests/projections/test_round_state.py folds simulated shoes and compares. Events that
do not change a round's cards, announcements or voiding (wagers, settlements, the rack) leave
the state as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import singledispatch

from events.reddog import rules
from events.reddog.model import (
    Announced,
    Box,
    Card,
    CardBurned,
    CardDrawn,
    CardDrawnInError,
    CardFoundFaceUp,
    DeviceFaulted,
    DomainEvent,
    Fault,
    Meaning,
    RoundVoided,
)
from events.reddog.rules import Classification, SettledAs


@dataclass(frozen=True, slots=True)
class Draw:
    """A card out of the shoe in the round (a CardDrawn, or a CardDrawnInError that keeps its
    place), where it went (None: drawn in error and not used), and how many events of the round
    came before it (its place in seq order)."""

    at: int
    card: Card
    box: Box | None


@dataclass(frozen=True, slots=True)
class _Out:
    """Any card event of the round, in order: round_cards in views.sql reads these."""

    at: int
    kind: type
    card: Card
    box: Box | None


@dataclass(frozen=True, slots=True)
class RoundState:
    """What a round's events so far say. `events` counts them (it orders the cards)."""

    events: int = 0
    outs: tuple[_Out, ...] = ()
    announced: tuple[Meaning, ...] = ()
    raises_closed_at: int | None = None  # the first "Raises closed"
    void_at: int | None = None  # the first RoundVoided
    shoe_fault_at: int | None = None  # the first dealing-shoe fault (not the shuffler's)

    @property
    def draws(self) -> tuple[Draw, ...]:
        """The round's cards (round_cards in views.sql): every CardDrawn, and a card drawn in
        error unless the next card event deals that same card (13:47-20.31(g)2: it is used as
        the next card). Burns and cards found face up are not cards of the round ((d)1, (g)1),
        nor a CardDrawn to the discard rack of the card just found face up: the dealer placing
        it there, one card ((g)1)."""
        kept = []
        for i, o in enumerate(self.outs):
            if o.kind is CardDrawn:
                prev = self.outs[i - 1] if i > 0 else None
                if not (o.box is Box.DISCARD_RACK and prev is not None
                        and prev.kind is CardFoundFaceUp and prev.card == o.card):
                    kept.append(Draw(o.at, o.card, o.box))
            elif o.kind is CardDrawnInError:
                nxt = self.outs[i + 1] if i + 1 < len(self.outs) else None
                if not (nxt is not None and nxt.kind is CardDrawn and nxt.card == o.card):
                    kept.append(Draw(o.at, o.card, None))
        return tuple(kept)

    @property
    def left(self) -> Card | None:
        """The first card out of the shoe, whichever box it went to (13:47-20.31(d)5)."""
        d = self.draws
        return d[0].card if d else None

    @property
    def right(self) -> Card | None:
        """The second card out of the shoe, whichever box it went to (13:47-20.31(d)5)."""
        d = self.draws
        return d[1].card if len(d) > 1 else None

    @property
    def classification(self) -> Classification | None:
        """Consecutive, pair or spread (13:47-20.31(d)7-8, (d)11), once both cards are out."""
        if self.left is None or self.right is None:
            return None
        return rules.classify(self.left.rank, self.right.rank)

    @property
    def deciding_draw(self) -> Draw | None:
        """The one third card that decides (deciding_index in views.sql): for a pair, or a
        spread with no "Raises closed", the third card out (13:47-20.31(d)8-10); for a spread,
        the first card out after "Raises closed" ((d)13-14, (g)3). Wherever the dealer put it;
        a consecutive round has none."""
        c, draws = self.classification, self.draws
        if c is None or c.kind is rules.HandKind.CONSECUTIVE or len(draws) < 3:
            return None
        if c.kind is rules.HandKind.PAIR or self.raises_closed_at is None:
            return draws[2]
        return next((d for d in draws[2:] if d.at > self.raises_closed_at), None)

    @property
    def voided(self) -> bool:
        """A RoundVoided the rules allow (void_allowed in views.sql): after a dealing-shoe fault
        (13:69F-34.16(n) by analogy); on consecutive cards ((d)7) or a pair's tie hand ((d)10).
        Any other void, before the deciding card or after it, voids nothing
        (ROUND_VOIDED_WITHOUT_CAUSE)."""
        if self.void_at is None:
            return False
        c, d = self.classification, self.deciding_draw
        return ((self.shoe_fault_at is not None and self.shoe_fault_at < self.void_at)
                or (c is not None and c.kind is rules.HandKind.CONSECUTIVE)
                or (c is not None and c.kind is rules.HandKind.PAIR and d is not None
                    and self.left is not None and d.card.rank != self.left.rank))

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


def _out(state: RoundState, kind: type, card: Card, box: Box | None) -> RoundState:
    return replace(state, outs=(*state.outs, _Out(state.events, kind, card, box)))


@_apply.register
def _(event: CardDrawn, state: RoundState) -> RoundState:
    return _out(state, CardDrawn, Card(event.rank, event.suit), event.destination)


@_apply.register
def _(event: CardDrawnInError, state: RoundState) -> RoundState:
    return _out(state, CardDrawnInError, Card(event.rank, event.suit), None)


@_apply.register
def _(event: CardBurned, state: RoundState) -> RoundState:
    return _out(state, CardBurned, Card(event.rank, event.suit), None)


@_apply.register
def _(event: CardFoundFaceUp, state: RoundState) -> RoundState:
    return _out(state, CardFoundFaceUp, Card(event.rank, event.suit), None)


@_apply.register
def _(event: Announced, state: RoundState) -> RoundState:
    closed = state.raises_closed_at
    if closed is None and event.meaning is Meaning.RAISES_CLOSED:
        closed = state.events
    return replace(state, announced=(*state.announced, event.meaning), raises_closed_at=closed)


@_apply.register
def _(event: RoundVoided, state: RoundState) -> RoundState:
    return replace(state, void_at=state.events if state.void_at is None else state.void_at)


@_apply.register
def _(event: DeviceFaulted, state: RoundState) -> RoundState:
    if state.shoe_fault_at is not None or event.fault is Fault.SHUFFLER_JAM:
        return state
    return replace(state, shoe_fault_at=state.events)


def evolve(state: RoundState, event: DomainEvent) -> RoundState:
    """The round after `event`, one of its events in recorded (seq) order."""
    after = _apply(event, state)
    return replace(after, events=after.events + 1)

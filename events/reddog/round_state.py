"""One round's state as a fold over its events: `evolve(state, event)` returns the state after
the event, and the cards, kind, deciding third card and players' result are read off it.

It decides as the read side's `rounds` view does (projections/sql/rounds.sql, rounds_of,
round_cards, deciding_index and void_allowed), so the simulator and the views agree on every
round; tests/projections/test_round_state.py folds simulated shoes and compares. Events that
do not change a round's cards, announcements or voiding (wagers, settlements, the rack) leave
the state as it was.

Before and after are game order, as in sql/macros.sql (game_order): when an event happened at the
table (its envelope's occurred_at), then the order it was folded in (seq). Events arrive in seq
order, which across the shoe and the dealer terminal is arrival order, not play order, so the
fold keeps its cards sorted by game order and its marks ("Raises closed", the void, the shoe
fault) at the earliest in game order.
"""

from __future__ import annotations

from bisect import insort
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from functools import singledispatch
from operator import attrgetter

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

# An event's place in game order: (occurred_at, how many events of the round were folded
# before it). The second part is seq order within the round, the tie-breaker of sql/macros.sql.
Order = tuple[datetime, int]

# An event folded without a time is put after everything so far (the fold's seq order).
_NO_TIME = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Draw:
    """A card out of the shoe in the round (a CardDrawn, or a CardDrawnInError that keeps its
    place), where it went (None: drawn in error and not used), and its place in game order."""

    at: Order
    card: Card
    box: Box | None


@dataclass(frozen=True, slots=True)
class _Out:
    """Any card event of the round, in order: round_cards in sql/macros.sql reads these."""

    at: Order
    kind: type
    card: Card
    box: Box | None


def _draws(outs: tuple[_Out, ...]) -> tuple[Draw, ...]:
    """The round's cards (round_cards in sql/macros.sql) from its card events in game order: every
    CardDrawn, and a card drawn in error unless the next card event deals that same card
    (13:47-20.31(g)2: it is used as the next card). Burns and cards found face up are not cards
    of the round ((d)1, (g)1), nor a CardDrawn to the discard rack of the card just found face
    up: the dealer placing it there, one card ((g)1)."""
    kept = []
    for i, o in enumerate(outs):
        if o.kind is CardDrawn:
            prev = outs[i - 1] if i > 0 else None
            if not (o.box is Box.DISCARD_RACK and prev is not None
                    and prev.kind is CardFoundFaceUp and prev.card == o.card):
                kept.append(Draw(o.at, o.card, o.box))
        elif o.kind is CardDrawnInError:
            nxt = outs[i + 1] if i + 1 < len(outs) else None
            if not (nxt is not None and nxt.kind is CardDrawn and nxt.card == o.card):
                kept.append(Draw(o.at, o.card, None))
    return tuple(kept)


@dataclass(frozen=True, slots=True)
class RoundState:
    """What a round's events so far say. `events` counts them; `now` is the game order of the
    event being folded (set by evolve); `latest` the latest time folded so far."""

    events: int = 0
    now: Order = (_NO_TIME, 0)
    latest: datetime = _NO_TIME
    outs: tuple[_Out, ...] = ()  # the card events, in game order
    draws: tuple[Draw, ...] = ()  # the round's cards (_draws of outs), folded once per card event
    announced: tuple[Meaning, ...] = ()  # in seq order, as the rounds view lists them
    raises_closed_at: Order | None = None  # the first "Raises closed" in game order
    void_at: Order | None = None  # the first RoundVoided in game order
    shoe_fault_at: Order | None = None  # the first dealing-shoe fault (not the shuffler's)

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
        """The one third card that decides (deciding_index in sql/cards.sql): for a pair, or a
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
        """A RoundVoided the rules allow (sql/rounds.sql, void_allowed): after a dealing-shoe fault
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


def _earliest(mark: Order | None, now: Order) -> Order:
    return now if mark is None else min(mark, now)


def _out(state: RoundState, kind: type, card: Card, box: Box | None) -> RoundState:
    outs = list(state.outs)
    insort(outs, _Out(state.now, kind, card, box), key=lambda o: o.at)
    done = tuple(outs)
    # The constructor with every field in order (_FIELDS is checked below): dataclasses.replace
    # cost ~3x as much, once per card of every simulated round (issue 19, item 3).
    return RoundState(state.events, state.now, state.latest, done, _draws(done),
                      state.announced, state.raises_closed_at, state.void_at,
                      state.shoe_fault_at)


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
    if event.meaning is Meaning.RAISES_CLOSED:
        closed = _earliest(closed, state.now)
    return RoundState(state.events, state.now, state.latest, state.outs, state.draws,
                      (*state.announced, event.meaning), closed, state.void_at,
                      state.shoe_fault_at)


@_apply.register
def _(event: RoundVoided, state: RoundState) -> RoundState:
    return replace(state, void_at=_earliest(state.void_at, state.now))


@_apply.register
def _(event: DeviceFaulted, state: RoundState) -> RoundState:
    if event.fault is Fault.SHUFFLER_JAM:
        return state
    return replace(state, shoe_fault_at=_earliest(state.shoe_fault_at, state.now))


def evolve(state: RoundState, event: DomainEvent,
           occurred_at: datetime | None = None) -> RoundState:
    """The round after `event`, one of its events in recorded (seq) order; `occurred_at` is its
    envelope's time at the table, which places it in game order (None: after every event so
    far, as a fold in seq order of one device's events)."""
    at = state.latest if occurred_at is None else occurred_at
    # One copy per event, counted here (no _apply reads `events`, and each keeps it), made by
    # the constructor with the other fields in order: dataclasses.replace costs ~1.4x as much, and
    # evolve runs once per simulated event (issue 19, item 3).
    # The handler registered for the event's own class, without singledispatch's wrapper and
    # its cache look-up (another class, a subclass say, goes through singledispatch).
    return _HANDLERS.get(type(event), _apply)(
        event, RoundState(state.events + 1, (at, state.events), max(state.latest, at),
                          *_REST(state)))


def _positional_fields(cls: type) -> list[str]:
    """The fields evolve's positional copy passes, in order: the class's fields, which must be
    exactly its constructor's parameters in the same order (no InitVar, init=False or kw_only
    field that would shift a value into its neighbour's place), the first three evolve's."""
    names = [f.name for f in fields(cls)]
    code = cls.__init__.__code__  # type: ignore[misc]  # the dataclass's generated __init__
    if list(code.co_varnames[1:code.co_argcount]) != names or code.co_kwonlyargcount:
        raise TypeError(f"{cls.__name__}'s constructor does not take its fields {names} in "
                        f"order; update evolve")
    if names[:3] != ["events", "now", "latest"]:  # evolve passes these three first
        raise TypeError(f"{cls.__name__}'s first fields changed: {names[:3]}; update evolve")
    return names


_HANDLERS = _apply.registry  # a live view of what _apply.register added
_FIELDS = _positional_fields(RoundState)
# evolve passes the first three, _out and the Announced handler every field in this order
if _FIELDS != ["events", "now", "latest", "outs", "draws", "announced", "raises_closed_at",
               "void_at", "shoe_fault_at"]:
    raise TypeError(f"RoundState's fields changed: {_FIELDS}; update evolve, _out and Announced")
_REST = attrgetter(*_FIELDS[3:])

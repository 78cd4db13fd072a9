"""round_state.evolve copies the round positionally (the constructor, then every field after
the first three in declaration order): the copy must put each value back in its own field,
and a class whose constructor would take them in another order or shape is refused at import."""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

import pytest

from events.reddog import model
from events.reddog.round_state import RoundState, _positional_fields, evolve


def test_evolve_keeps_every_field_an_event_does_not_change_in_its_own_place() -> None:
    """Each field after the three evolve sets holds a value of its own: a wager (which does not
    touch the round's cards or words) must leave every one where it was."""
    at = datetime(2026, 5, 1, 20, 0, tzinfo=UTC)
    rest = [f.name for f in fields(RoundState)][3:]
    marks: dict[str, Any] = {name: (at, k) for k, name in enumerate(rest)}  # all distinct
    state = RoundState(**marks)
    after = evolve(state, model.WagerPlaced(seat=1, area=1, player_id="P1", amount_cents=500),
                   at)
    assert {name: getattr(after, name) for name in rest} == marks
    assert (after.events, after.now, after.latest) == (1, (at, 0), at)


@dataclass(frozen=True)
class _Shifted:
    events: int = 0
    now: int = 0
    latest: int = 0
    extra: InitVar[int] = 0  # a constructor parameter that is not a field
    outs: int = 0


@dataclass(frozen=True)
class _Hidden:
    events: int = 0
    now: int = 0
    latest: int = 0
    cache: int = field(default=0, init=False)
    outs: int = 0


@dataclass(frozen=True)
class _KeywordOnly:
    events: int = 0
    now: int = 0
    latest: int = 0
    outs: int = field(default=0, kw_only=True)


@dataclass(frozen=True)
class _Reordered:
    now: int = 0
    events: int = 0
    latest: int = 0


@pytest.mark.parametrize("cls", [_Shifted, _Hidden, _KeywordOnly, _Reordered])
def test_a_layout_the_positional_copy_would_mismap_is_refused(cls: type) -> None:
    with pytest.raises(TypeError, match="update evolve"):
        _positional_fields(cls)


def test_round_states_layout_is_the_positional_copys() -> None:
    assert _positional_fields(RoundState) == [f.name for f in fields(RoundState)]

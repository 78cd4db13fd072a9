"""Round state as a fold (events/reddog/round_state.py): folding each round's events with
`evolve` gives the rounds view's cards, kind, deciding third card and result, on simulated
shoes with and without injected irregularities, in every jurisdiction profile."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from events.log.embedded.log import EmbeddedLog
from events.reddog import model
from events.reddog.model import Announced, Box, Card, CardDrawn, Meaning, RoundVoided, Suit
from events.reddog.round_state import RoundState, evolve
from events.reddog.rules import SettledAs
from events.simulation.simulator import SimConfig, simulate
from events.wire import codec
from projections.projector import project

_CARD_EVENTS = (model.CardDrawn, model.CardDrawnInError, model.CardFoundFaceUp, model.CardBurned)
PROFILES = ("nj-casino", "nj-casino-night", "gaming-authority")


def _label(card: Card | None) -> str | None:
    return None if card is None else str(card)


def folded(state: RoundState) -> tuple:
    c = state.classification
    d = state.deciding_draw
    return (_label(state.left), _label(state.right), c.kind.value.lower() if c else None,
            c.spread if c else None, _label(state.third), d.box.value if d and d.box else None,
            [str(x) for x in state.redrawn], state.voided,
            [m.value for m in state.announced] or None,
            # the view writes the decision in lower case: SettledAs.WON is 'won'
            state.outcome.value.lower() if state.outcome else None)


_VIEW = """
SELECT table_id, shoe_id, round_no, left_card, right_card, kind, spread, middle_card,
       third_card_box, redrawn_cards, voided, announced, outcome
FROM rounds
"""


@pytest.mark.parametrize("irregularities", [0.0, 0.08], ids=["clean", "irregular"])
def test_the_fold_of_every_simulated_round_is_its_row_in_the_rounds_view(
        tmp_path: Path, irregularities: float) -> None:
    log = EmbeddedLog(tmp_path / "log")
    simulate(log, SimConfig(seed=17, tables=3, rounds=120, decks=2, profiles=PROFILES,
                            irregularities=irregularities))
    states: dict[tuple, RoundState] = {}
    envelopes = [codec.decode(r.value) for batch in log.read() for r in batch]
    seen: set[tuple[str, str]] = set()
    for env in sorted(envelopes, key=lambda e: (e.table_id, e.seq)):
        if isinstance(env.event, _CARD_EVENTS):  # the card views read each event id once
            if (env.table_id, env.event_id) in seen:
                continue  # a copy is DUPLICATE_EVENT's finding, not a second card
            seen.add((env.table_id, env.event_id))
        if env.round_no is not None:
            key = (env.table_id, env.shoe_id, env.round_no)
            states[key] = evolve(states.get(key, RoundState()), env.event, env.occurred_at)
    db = tmp_path / "p.duckdb"
    project(log, db)
    with duckdb.connect(str(db), read_only=True) as con:
        view = {tuple(r[:3]): tuple(r[3:]) for r in con.execute(_VIEW).fetchall()}
    assert len(view) > 300 and set(states) == set(view)
    differ = {k: (folded(s), view[k]) for k, s in states.items() if folded(s) != view[k]}
    assert differ == {}
    outcomes = {s.outcome for s in states.values()}
    assert {SettledAs.WON, SettledAs.LOST, SettledAs.VOID} <= outcomes  # every branch was met


def _drawn(rank: int, box: Box) -> CardDrawn:
    return CardDrawn(rank=rank, suit=Suit.CLUBS, face_up=True, destination=box)


def test_a_card_exposed_before_raises_closed_does_not_decide() -> None:
    """13:47-20.31(g)3: the first card after "Raises closed" decides, not an early one."""
    s = RoundState()
    for e in (_drawn(3, Box.LEFT), _drawn(9, Box.RIGHT), _drawn(9, Box.MIDDLE),
              Announced(phrase="Raises closed", meaning=Meaning.RAISES_CLOSED, value=None),
              _drawn(5, Box.MIDDLE)):
        s = evolve(s, e)
    assert (s.third, s.outcome) == (Card(5, Suit.CLUBS), SettledAs.WON)
    # A void after the deciding card with no cause voids nothing (ROUND_VOIDED_WITHOUT_CAUSE);
    # after a dealing-shoe fault it stands (13:69F-34.16(n) by analogy).
    assert evolve(s, RoundVoided(reason="void")).outcome is SettledAs.WON
    faulted = evolve(s, model.DeviceFaulted(device_id="SHOE-1", fault=model.Fault.SHOE_JAM))
    assert evolve(faulted, RoundVoided(reason="void")).outcome is SettledAs.VOID


def test_the_fold_judges_in_game_order_not_arrival_order() -> None:
    """sql/macros.sql, game_order: the shoe's third card 8H (at 14 s) reaches the fold before the
    terminal's "Raises closed" (at 13 s). In game order it comes after and decides ((d)13-14),
    as the rounds view says. A void after a dealing-shoe fault stands when the fault was keyed
    before it in game order, whatever order they were folded in, and not when the fault was
    keyed after it; a void with no cause voids nothing, folded before or after the card
    (void_allowed)."""
    t0 = datetime(2026, 11, 28, 23, 0, tzinfo=UTC)
    closed = Announced(phrase="Raises closed", meaning=Meaning.RAISES_CLOSED, value=None)
    s = RoundState()
    for e, second in ((_drawn(3, Box.LEFT), 6), (_drawn(12, Box.RIGHT), 7),
                      (_drawn(8, Box.MIDDLE), 14), (closed, 13)):
        s = evolve(s, e, t0 + timedelta(seconds=second))
    assert (s.third, s.outcome) == (Card(8, Suit.CLUBS), SettledAs.WON)
    assert [d.card.rank for d in s.draws] == [3, 12, 8]
    jam = model.DeviceFaulted(device_id="SHOE-1", fault=model.Fault.SHOE_JAM)
    jam_then_void = evolve(evolve(s, RoundVoided(reason="jam"), t0 + timedelta(seconds=13.5)),
                           jam, t0 + timedelta(seconds=13.2))
    assert (jam_then_void.voided, jam_then_void.outcome) == (True, SettledAs.VOID)
    void_then_jam = evolve(evolve(s, jam, t0 + timedelta(seconds=13.8)),
                           RoundVoided(reason="jam"), t0 + timedelta(seconds=13.5))
    assert (void_then_jam.voided, void_then_jam.outcome) == (False, SettledAs.WON)
    # the void keyed at 14.5 s, folded before the card keyed at 14 s
    s = RoundState()
    for e, second in ((_drawn(3, Box.LEFT), 6), (_drawn(12, Box.RIGHT), 7), (closed, 13),
                      (RoundVoided(reason="void"), 14.5), (_drawn(8, Box.MIDDLE), 14)):
        s = evolve(s, e, t0 + timedelta(seconds=second))
    assert (s.third, s.voided, s.outcome) == (Card(8, Suit.CLUBS), False, SettledAs.WON)
    # a card keyed before the ones already folded takes its place among them
    s = RoundState()
    for e, second in ((_drawn(12, Box.RIGHT), 7), (_drawn(3, Box.LEFT), 6)):
        s = evolve(s, e, t0 + timedelta(seconds=second))
    assert (s.left, s.right) == (Card(3, Suit.CLUBS), Card(12, Suit.CLUBS))


def test_a_void_before_the_deciding_card_needs_its_cause_and_a_racked_face_up_card_is_none(
        ) -> None:
    """As the views (void_allowed, round_cards): a void before any third card, on the dealer's
    word, voids nothing (no outcome yet); after a dealing-shoe fault it stands. A card found
    face up and then drawn to the discard rack is the same card placed there ((g)1): no card of
    the round, so the next card out decides."""
    s = RoundState()
    for e in (_drawn(3, Box.LEFT), _drawn(9, Box.RIGHT),
              Announced(phrase="Raises closed", meaning=Meaning.RAISES_CLOSED, value=None)):
        s = evolve(s, e)
    voided = evolve(s, RoundVoided(reason="dealer's call"))
    assert (voided.voided, voided.outcome) == (False, None)
    faulted = evolve(s, model.DeviceFaulted(device_id="SHOE-1", fault=model.Fault.SHOE_JAM))
    assert evolve(faulted, RoundVoided(reason="jam")).outcome is SettledAs.VOID
    for e in (model.CardFoundFaceUp(rank=4, suit=Suit.CLUBS), _drawn(4, Box.DISCARD_RACK),
              _drawn(5, Box.MIDDLE)):
        s = evolve(s, e)
    assert (s.third, s.outcome) == (Card(5, Suit.CLUBS), SettledAs.WON)

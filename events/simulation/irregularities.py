"""Injected irregularities: the simulator's dealer and players going wrong, with ground truth.

`Irregularities` is the seam the simulator calls at each point of a shoe or a round where a
rule can be broken (see TableSim.play_cards). It draws from a random stream of its own, so
turning injection on or off never changes the clean game; with every rate at 0 each call
returns at once and draws nothing, and the log is byte-identical to an evening without it.

Rates are chances per *opportunity*: a round with a winner for WRONG_PAYOUT, a spread round for
EARLY_THIRD_CARD, a round in which the cutting card came out for ROUND_ABANDONED_AT_CUT_CARD,
and so on (docs/anomalies.md lists them). At most one irregularity is injected per round, so
every label's anomaly is the only one in its round and detection can be scored exactly.

Every injection writes the `TruthLabel`s of exactly the anomaly codes the read side must
raise, keyed by (code, table, shoe, round). Some injections are, half the time, the *correct*
handling of a mishap (a shuffler jam followed by a reshuffle, a card found face up that is
discarded): those are recorded without a label, so that detection is also tested on what it
must not flag.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from events.log.base import ConditionalAppend, EventLog
from events.recording import limits
from events.recording.heads import TableHead
from events.recording.recorder import Recorder
from events.reddog import model, rules
from events.reddog.model import (
    Card,
    DomainEvent,
    Envelope,
    Fault,
    Instrument,
    Meaning,
    ShuffleMethod,
    Suit,
)
from events.simulation.irregular_cards import CardSlips
from events.simulation.irregular_hands import EXTRA_SIZES_CENTS, HandSlips, RoundStopped, free_seats
from events.simulation.irregular_places import PlaceSlips
from events.simulation.table import Hand, Rates, Table
from events.wire import chain, codec

__all__ = ["Irregularities", "RoundStopped", "TruthLabel", "record_tampered"]

_WRONG_LINES = ("spread_1", "spread_2", "spread_3", "three_of_a_kind")
_ALL_CARDS = tuple(Card(r, s) for r in range(2, 15) for s in Suit)


@dataclass(frozen=True, slots=True)
class TruthLabel:
    """One injected irregularity: the anomaly code the read side should raise, and where."""

    code: str
    table_id: str
    shoe_id: str | None
    round_no: int | None
    note: str = ""


def record_tampered(recorder: Recorder, log: EventLog, kind: str, table_id: str,
                    event: DomainEvent, **stamp: Any) -> None:
    """Record one event with an integrity irregularity (docs/architecture.md, principle 2).

    "gap": the table's sequence skips one number before this event, as if the event before it
    had been lost from the log (SEQUENCE_GAP at this event). "chain": this event links to a
    hash that no event has, as if its predecessor had been altered after it was sealed
    (CHAIN_BROKEN at this event). The recorder would never write that, so the event is sealed
    and appended here, after the recorder's buffer is flushed, with the recorder's check of
    the table's head where the log has it (another writer that appended to the table since
    is a ConcurrencyError, as at the recorder's own appends); the recorder then continues the
    table from it. "duplicate": the event is recorded twice with one event id, as a
    device line re-sent and recorded again by a writer that did not check (DUPLICATE_EVENT).
    """
    head = recorder.heads.setdefault(table_id, TableHead())
    if kind == "gap":
        head.seq += 1
        recorder.record(table_id, event, **stamp)
        return
    if kind == "duplicate":
        recorder.record(table_id, event, **stamp)
        recorder.record(table_id, event, **stamp)
        return
    recorder.flush()
    wrong = hashlib.sha256(b"pitlog-sim:altered:" + head.hash).digest()
    env = Envelope(table_id=table_id, seq=head.seq + 1, event=event, prev_hash=wrong, **stamp)
    # Not through Recorder.record, so its value check is made here (events/recording/limits.py).
    limits.check_envelope(table_id, env.shoe_id, env.actor, env.event_id, env.occurred_at,
                          env.recorded_at, env.round_no)
    limits.check_event(event)
    message = chain.seal(codec.encode(env), wrong)
    key = table_id.encode()
    if isinstance(log, ConditionalAppend):  # as the recorder appends: only onto its head
        log.append_expecting([(key, message)], {key: head.hash if head.seq else None})
    else:
        log.append([(key, message)])
    head.seq, head.hash = env.seq, chain.stored_hash(message)


class Irregularities(HandSlips, CardSlips, PlaceSlips):
    """The seam where irregularities are injected; draws from its own random stream."""

    def __init__(self, config: Rates, table_seed: str) -> None:
        self.config = config
        self.rng = random.Random(f"{table_seed}:irregularities")
        self.labels: list[TruthLabel] = []
        self._labelled: set[tuple[str, str, str | None, int | None]] = set()
        self.enabled = config.irregularities > 0 or any(r > 0 for r in config.per_code.values())
        self.busy = False  # something was injected in the round in play
        self.hold_next_round = False  # a shoe-level injection owns the next round
        self._tamper: str | None = None
        self._call_bet = False
        self._coupon = False
        self._rack_second = False
        self._late_raise: tuple[int, int] | None = None
        self._settle_rolled = self._payout_rolled = False
        self.extra_card_pending = False
        self.unseen: Counter[Card] = Counter()  # genuine cards swapped out of the shoe
        self.illegal_paytable = False
        self.cut_card_out = False  # CuttingCardReached was recorded in this shoe
        self.cut_card_this_round = False

    # --- the random stream and the labels -------------------------------------------------------

    def rate(self, code: str) -> float:
        return self.config.per_code.get(code, self.config.irregularities)

    def chance(self, code: str) -> bool:
        rate = self.rate(code)
        return rate > 0 and self.rng.random() < rate

    def roll(self, code: str) -> bool:
        """True if `code` is injected now; at most one injection per round."""
        if self.busy or not self.chance(code):
            return False
        self.busy = True
        return True

    def label(self, code: str, table: Table, note: str = "", *,
              round_no: int | None | str = "in play") -> None:
        rn = table.round_no if round_no == "in play" else round_no
        assert rn is None or isinstance(rn, int)
        key = (code, table.table_id, table.shoe_id, rn)
        if key not in self._labelled:
            self._labelled.add(key)
            self.labels.append(TruthLabel(code, table.table_id, table.shoe_id, rn, note))

    def tamper_next(self, table: Table, event: DomainEvent) -> str | None:
        """The integrity irregularity the next event carries, if any. A duplicate waits for a
        wager: a card recorded twice would also be a second card in the rack count
        (CARD_UNACCOUNTED, EXTRA_CARD, WRONG_BOX), which is not what this label measures."""
        t = self._tamper
        if t == "duplicate":
            if not isinstance(event, model.WagerPlaced):
                return None
            self.label("DUPLICATE_EVENT", table)
        if t is not None:
            self._tamper = None
        return t

    # --- shoe and staff -------------------------------------------------------------------------

    def shoe_opening(self, table: Table) -> None:
        """BELOW_MINIMUM_ODDS: the pit opens this shoe with a paytable line below the minimum."""
        if not self.enabled:
            return
        self.unseen.clear()
        self.cut_card_out = False
        if self.illegal_paytable:  # the next shoe is back on the standard table
            self.illegal_paytable = False
            table.open_table(rules.STANDARD_PAYTABLE)
        if self.chance("BELOW_MINIMUM_ODDS"):
            line = self.rng.choice(_WRONG_LINES)
            std = rules.STANDARD_PAYTABLE
            # 13:47-20.31(d)9: at a casino night three of a kind is fixed at 11 to 1, so a
            # promotional 12 to 1 is illegal there too; elsewhere a line is lowered.
            step = -1
            if line == "three_of_a_kind" and table.profile == rules.Profile.NJ_CASINO_NIGHT \
                    and self.rng.random() < 0.5:
                step = 1
            pt = replace(std, **{line: getattr(std, line) + step})
            table.open_table(pt)
            self.illegal_paytable = True
            self.label("BELOW_MINIMUM_ODDS", table,
                       f"{line} {'raised' if step > 0 else 'lowered'}", round_no=None)

    def shuffling(self, table: Table, method: ShuffleMethod, device: str) -> None:
        """DEVICE_FAULT_NOT_VOIDED: the shuffler jams; half the time the cards are reshuffled
        (13:69F-34.16(m), correct), half the time the shoe is loaded anyway (labelled)."""
        if not (self.enabled and self.chance("DEVICE_FAULT_NOT_VOIDED")):
            return
        table.emit(model.DeviceFaulted(device_id=device, fault=Fault.SHUFFLER_JAM,
                                       detail="stopped mid-cycle"), actor=device)
        if self.rng.random() < 0.5:
            table.emit(model.ShuffleStarted(method=method, device_id=device), gap=30)
        else:
            self.label("DEVICE_FAULT_NOT_VOIDED", table, "shuffler jam, no reshuffle",
                       round_no=None)

    def skip_burn(self, table: Table, next_round: int) -> bool:
        """MISSING_BURN: no burn after a new shoe or a new dealer (13:47-20.31(d)1)."""
        if not (self.enabled and self.chance("MISSING_BURN")):
            return False
        self.hold_next_round = True  # the unburned first card comes out in that round
        self.label("MISSING_BURN", table, round_no=next_round)
        return True

    def after_cutting_card_round(self, table: Table) -> None:
        """NO_RESHUFFLE_AFTER_CUT_CARD: one more round is dealt from the shoe ((d)16)."""
        # Only when the cutting card was seen to come out (a new dealer's burn can take it
        # silently, and then no record shows that this round came after it).
        if not self.cut_card_out or not table.shoe_open or table.reshuffle_now or not self.chance(
                "NO_RESHUFFLE_AFTER_CUT_CARD"):
            return
        self.label("NO_RESHUFFLE_AFTER_CUT_CARD", table, round_no=table.round_count + 1)
        self.hold_next_round = True
        table.play_round()

    # --- a round --------------------------------------------------------------------------------

    def round_starting(self, table: Table) -> None:
        if not self.enabled:
            return
        self.busy, self.hold_next_round = self.hold_next_round, False
        self._settle_rolled = self._payout_rolled = False
        self.cut_card_this_round = False
        if self.roll("SEQUENCE_GAP"):
            self._tamper = "gap"
            self.label("SEQUENCE_GAP", table)
        elif self.roll("CHAIN_BROKEN"):
            self._tamper = "chain"
            self.label("CHAIN_BROKEN", table)
        elif self.roll("DUPLICATE_EVENT"):
            self._tamper = "duplicate"  # labelled when a wager takes it (tamper_next)
        elif not self.busy and (self.extra_card_pending or self.chance("EXTRA_CARD")):
            self.extra_card_pending = not self._introduce_card(table)
        elif self.roll("CALL_BET"):
            self._call_bet = True
        elif self.roll("MATCH_PLAY_NOT_ALLOWED"):
            self._coupon = True

    def _introduce_card(self, table: Table) -> bool:
        """EXTRA_CARD (13:47-20.31(a)2): a copy of a card whose every copy has already left
        the shoe replaces the next card; only then is the extra copy provable."""
        if len(table.shoe) > 51 * table.decks:
            return False  # fewer cards out than one card's copies: none can be all out
        present = set(table.shoe)
        full = [c for c in _ALL_CARDS if c not in present and not self.unseen[c]]
        if not full:
            return False
        extra = self.rng.choice(full)
        self.unseen[table.shoe[-1]] += 1
        table.shoe[-1] = extra
        self.busy = True
        self.label("EXTRA_CARD", table, f"extra {extra}")
        return True

    def instrument(self, table: Table, instrument: Instrument) -> Instrument:
        """CALL_BET: the round's first wager is a verbal call bet (forbidden at every profile:
        13:47-20.31(d)4; 13:69F-6.5(b); GA (2)). MATCH_PLAY_NOT_ALLOWED: it is a match play
        coupon, flagged only where wagers are chips and plaques only (GA (2)), recorded
        unlabelled elsewhere."""
        allowed = rules.profile_rules(table.profile)
        if self._call_bet:
            self._call_bet = False
            if not allowed.call_bets_allowed:
                self.label("CALL_BET", table)
            return Instrument.CALL_BET
        if self._coupon:
            self._coupon = False
            if not allowed.match_play_allowed:
                self.label("MATCH_PLAY_NOT_ALLOWED", table)
            return Instrument.MATCH_PLAY_COUPON
        return instrument

    def wagers_placed(self, table: Table, hand: Hand) -> None:
        """MULTIPLE_BETTING_AREAS: a player also wagers on a free area ((g)4; 13:69F-6.8)."""
        if not self.enabled or not hand.wagers:
            return
        free = free_seats(table, hand)
        if free and self.roll("MULTIPLE_BETTING_AREAS"):
            seat, _ = self.rng.choice(sorted(hand.wagers))
            area = self.rng.choice(free)
            amount = self.rng.choice(EXTRA_SIZES_CENTS)
            table.emit(model.WagerPlaced(seat=seat, area=area, player_id=table.players[seat],
                                         amount_cents=amount), gap=0.8)
            hand.wagers[seat, area] = amount
            self.label("MULTIPLE_BETTING_AREAS", table, f"seat {seat} also on area {area}")

    def announcement(self, table: Table, meaning: Meaning,
                     value: int | None) -> tuple[Meaning, int | None] | None:
        """WRONG_ANNOUNCEMENT ((d)7-11, 13): an announcement left out or contradicting the
        cards. "Raises closed" is never touched: its absence is EARLY_THIRD_CARD's business."""
        if not self.enabled or meaning is Meaning.RAISES_CLOSED \
                or not self.roll("WRONG_ANNOUNCEMENT"):
            return meaning, value
        wrong: tuple[Meaning, int | None] | None = None
        if self.rng.random() < 0.5:
            wrong = _contradiction(meaning, value)
        how = "said wrong" if wrong else "left out"
        self.label("WRONG_ANNOUNCEMENT", table, f"{meaning} {how}")
        return wrong

    def racking(self, table: Table, dealt: list[Card]) -> list[Card] | None:
        """DISCARD_RACK_ORDER ((d)15; GA (12)) or CARD_UNACCOUNTED ((d)15)."""
        cards = list(dealt)
        if not self.enabled:
            return cards
        if self.roll("DISCARD_RACK_ORDER"):
            swaps = [i for i in range(len(cards) - 1) if cards[i] != cards[i + 1]]
            self.label("DISCARD_RACK_ORDER", table)
            if not swaps:
                return None  # the hand is never racked
            i = self.rng.choice(swaps)
            cards[i], cards[i + 1] = cards[i + 1], cards[i]
        elif len(cards) >= 2 and self.roll("CARD_UNACCOUNTED"):
            gone = cards.pop(self.rng.randrange(len(cards)))
            self.label("CARD_UNACCOUNTED", table, f"{gone} not racked")
        return cards


def _contradiction(meaning: Meaning, value: int | None) -> tuple[Meaning, int | None]:
    """An announcement that contradicts the cards it is about."""
    swaps: dict[Meaning, Any] = {
        Meaning.CONSECUTIVE: (Meaning.PAIR, None),
        Meaning.PAIR: (Meaning.CONSECUTIVE, None),
        Meaning.THREE_OF_A_KIND: (Meaning.NO_THREE_OF_A_KIND, None),
        Meaning.NO_THREE_OF_A_KIND: (Meaning.THREE_OF_A_KIND, None),
    }
    if meaning in swaps:
        return swaps[meaning]
    assert value is not None
    top = rules.SPREAD_MAX if meaning is Meaning.SPREAD else rules.RANK_MAX
    return meaning, value + 1 if value < top else value - 1


"""A seeded red dog table simulator: ground truth for tests, demos and benchmarks.

Same config, same seed: byte-identical log. Each table runs from its own random stream; tables are
merged by time, so the log interleaves them as a real floor would. The dealer follows the rules
(13:47-20.31(d); 13:69F-6) unless an irregularity is injected: `Irregularities`
(events/simulation/irregularities.py) draws from a stream of its own, so turning injection on or
off never changes the clean parts of the game, and every injection is written down as a
ground-truth `TruthLabel`. The round below calls the injector at each point where a dealer or
player can go wrong; with every rate at 0 those calls do nothing and draw nothing.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from operator import attrgetter

from events.errors import RuleError
from events.log.base import EventLog
from events.recording.recorder import Recorder, scan_heads
from events.reddog import model, rules
from events.reddog.catalogue import INJECTABLE
from events.reddog.model import Box, Card, Meaning, Suit, WagerKind
from events.reddog.round_state import RoundState, evolve
from events.simulation.irregularities import (
    Irregularities,
    RoundStopped,
    TruthLabel,
    record_tampered,
)
from events.simulation.table import Hand, Key
from events.wire import codec

SUITS = (Suit.SPADES, Suit.HEARTS, Suit.DIAMONDS, Suit.CLUBS)
WAGER_SIZES_CENTS = (500, 500, 1000, 1000, 2500, 2500, 5000, 10000)
DEFAULT_START = datetime(2026, 11, 28, 23, 0, tzinfo=UTC)  # 18:00 on the US east coast

# The dealer's exact words per jurisdiction: 13:47-20.31(d)7-10 and GA (5)-(8).
PHRASES: dict[str, dict[Meaning, str]] = {
    "nj": {
        Meaning.CONSECUTIVE: "The cards are consecutive--tie hand",
        Meaning.PAIR: "We have a pair",
        Meaning.THREE_OF_A_KIND: "Three of a kind",
        Meaning.NO_THREE_OF_A_KIND: "No three of a kind--tie hand",
        Meaning.RAISES_CLOSED: "Raises closed",
    },
    "ga": {
        Meaning.CONSECUTIVE: "The cards are consecutive, Tie Hand",
        Meaning.PAIR: "We have a pair",
        Meaning.THREE_OF_A_KIND: "3 of a kind",
        Meaning.NO_THREE_OF_A_KIND: "No 3 of a kind, Tie hand",
        Meaning.RAISES_CLOSED: "Raises closed",
    },
}


def phrase(profile: str, meaning: Meaning, value: int | None = None) -> str:
    if meaning is Meaning.SPREAD:
        return f"Spread {value}"
    if meaning is Meaning.THIRD_CARD:
        return rules.RANK_WORDS[value or 0]
    return PHRASES["ga" if profile == rules.Profile.GAMING_AUTHORITY else "nj"][meaning]


@dataclass(frozen=True)
class SimConfig:
    seed: int = 7
    tables: int = 4
    rounds: int = 200  # per table
    decks: int = 6
    seats: int = 6
    raise_from: int | None = 7  # players raise the full wager from this spread up
    sit_out: float = 0.25  # chance a seat has no wager in a round
    profiles: tuple[str, ...] = ("nj-casino",)  # assigned to tables in turn
    dealer_shift_rounds: int = 120  # a new dealer (with a burn) after this many rounds
    start: datetime = DEFAULT_START
    irregularities: float = 0.0  # chance per opportunity of each injectable irregularity
    per_code: Mapping[str, float] = field(default_factory=dict)  # overrides by anomaly code
    # Every Nth shoe of a table is dealt from an automatic reshuffling shoe (13:69F-6.9;
    # ShuffleMethod.CONTINUOUS_SHUFFLER); 0: never. No random draw decides it.
    reshuffling_every: int = 0
    # The index of the first table (0: T01): another evening goes into a log that holds one
    # at other tables (a second evening at one table is anomalies no dealer made). A table's
    # events depend on its index, not on how many tables precede it in the run.
    first_table: int = 0

    def __post_init__(self) -> None:
        # An unknown code or a rate outside 0..1 would be silently ignored or always true.
        for code, rate in {"all codes": self.irregularities, **self.per_code}.items():
            if code != "all codes" and code not in INJECTABLE:
                raise RuleError(f"rate for unknown irregularity code {code!r}; injectable "
                                f"codes are {', '.join(INJECTABLE)} (docs/anomalies.md)")
            if not 0.0 <= rate <= 1.0:
                raise RuleError(f"rate {rate} for {code} is not a chance: give a number "
                                f"from 0 to 1, e.g. 0.05")

    @property
    def table_indexes(self) -> range:
        return range(self.first_table, self.first_table + self.tables)

    def profile_for(self, table_index: int) -> str:
        return self.profiles[table_index % len(self.profiles)]

    def decks_for(self, table_index: int) -> int:
        # 13:47-20.31(a)2: casino nights deal from "a deck".
        return 1 if self.profile_for(table_index) == rules.Profile.NJ_CASINO_NIGHT else self.decks


@dataclass(slots=True, eq=False)  # merged by __lt__ alone: identity equality is enough
class Step:
    """One event as the table produced it, before the recorder stamps it."""

    at_us: int
    table_index: int
    n: int  # tie-breaker: a table's own order
    event: model.DomainEvent
    actor: str
    shoe_id: str | None
    round_no: int | None
    delay_us: int  # recorded_at - occurred_at
    event_id: str
    tamper: str | None = None  # an integrity irregularity applied when it is recorded

    def __lt__(self, other: Step) -> bool:
        return (self.at_us, self.table_index, self.n) < (other.at_us, other.table_index, other.n)


_STEP_ORDER = attrgetter("at_us", "table_index", "n")
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


# recorded_at - occurred_at: 5 to 400 ms, drawn as randrange(5_000, 400_000) draws it
_DELAY_MIN, _DELAY_SPAN = 5_000, 400_000 - 5_000
_DELAY_BITS = _DELAY_SPAN.bit_length()


def uuid4_text(bits: int) -> str:
    """str(uuid.UUID(int=bits, version=4)) without the UUID object (RFC 4122 4.4: the version
    nibble 4, the variant bits 10), the same text for the same bits (a seeded evening's ids)."""
    h = f"{bits & _UUID4_CLEAR | _UUID4_SET:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def table_name(index: int) -> str:
    """The id of the simulation's table `index` (0-based): T01, T02, ..."""
    return f"T{index + 1:02d}"


class TableSim:
    """One table's evening, as a generator of steps."""

    def __init__(self, config: SimConfig, index: int) -> None:
        self.config = config
        self.index = index
        self.table_id = table_name(index)
        seed = f"{config.seed}:{self.table_id}"
        self.rng = random.Random(seed)
        self.inject = Irregularities(config, seed)
        self.profile = config.profile_for(index)
        self.decks = config.decks_for(index)
        self.paytable = rules.STANDARD_PAYTABLE
        self.clock_us = int((config.start - datetime(1970, 1, 1, tzinfo=UTC))
                            / timedelta(microseconds=1))
        self.clock_us += index * 7_000_000  # tables open a few seconds apart
        self.n = 0
        self.shoe_no = 0
        self.shoe_id: str | None = None
        self.shoe_open = False
        self.burn_owed = True  # 13:69F-6.9: not at an nj-casino reshuffling shoe
        self.reshuffle_now = False  # set when a round ends the shoe early (a jam, the cut card)
        self.round_no: int | None = None  # the round in play, None between rounds
        # The fold of the round's events (round_state.evolve), made when it is read: only
        # play_cards reads it, after the second card, so the events after that (the third
        # card, raises, settlements, the rack: most of a round) are never folded (issue 19,
        # item 3). The same fold, in the same order, as folding each event when emitted.
        self._folded = RoundState()
        self._unfolded: list[model.DomainEvent] = []
        self.round_count = 0  # rounds dealt from the current shoe
        self.rounds_played = 0
        self.dealer_no = 0
        self.dealer = ""
        self.shoe: list[Card] = []
        self.cut_behind = 0
        self.steps: list[Step] = []
        seats = range(rules.FIRST_SEAT, rules.FIRST_SEAT + config.seats)
        self.players = {seat: f"P-{self.table_id}-{seat}-0" for seat in seats}

    # --- emitting -------------------------------------------------------------------------------

    def emit(self, event: model.DomainEvent, *, actor: str | None = None, gap: float = 1.5) -> None:
        rng = self.rng
        # rng.uniform(0.3, 2 * gap) and rng.randrange(5_000, 400_000), written out as random.py
        # computes them (the same draws in the same order: the same evening for a seed,
        # benchmarks/sim_digest.py) without their two calls each, once per simulated event
        # (issue 19, item 3).
        self.clock_us += int((0.3 + (2 * gap - 0.3) * rng.random()) * 1_000_000)
        delay = rng.getrandbits(_DELAY_BITS)
        while delay >= _DELAY_SPAN:
            delay = rng.getrandbits(_DELAY_BITS)
        self.n += 1
        self.steps.append(Step(
            self.clock_us, self.index, self.n, event, actor or self.dealer, self.shoe_id,
            self.round_no, _DELAY_MIN + delay, uuid4_text(rng.getrandbits(128)),
            self.inject.tamper_next(self, event)))
        if self.round_no is not None:
            self._unfolded.append(event)

    @property
    def round_state(self) -> RoundState:
        state = self._folded
        for event in self._unfolded:
            state = evolve(state, event)
        self._folded, self._unfolded = state, []
        return state

    @round_state.setter
    def round_state(self, state: RoundState) -> None:
        self._folded, self._unfolded = state, []

    def draw(self) -> Card:
        return self.shoe.pop()

    # --- the evening ----------------------------------------------------------------------------

    def run(self) -> Iterator[Step]:
        self.open_table(self.paytable)
        self.change_dealer(burn=False)
        yield from self.flush()
        self.open_shoe()
        for played in range(1, self.config.rounds + 1):
            if played % self.config.dealer_shift_rounds == 0:
                self.change_dealer(burn=True)
                if self.shoe_open and len(self.shoe) <= self.cut_behind:
                    # The new dealer's burn brought out the cutting card between rounds: no
                    # round is in progress, so the cards are reshuffled now (13:47-20.31(d)16).
                    self.close_shoe()
                    self.open_shoe()
            self.play_round()
            if self.inject.enabled and len(self.shoe) <= self.cut_behind:
                self.inject.after_cutting_card_round(self)
            if self.reshuffle_now or len(self.shoe) <= self.cut_behind:
                if self.shoe_open:
                    self.close_shoe()
                if played < self.config.rounds:
                    self.open_shoe()
            yield from self.flush()
        if self.shoe_open:
            self.close_shoe()
        self.emit(model.DealerTappedOut(dealer_id=self.dealer))
        yield from self.flush()

    def flush(self) -> Iterator[Step]:
        steps, self.steps = self.steps, []
        yield from steps

    def open_table(self, pt: rules.Paytable) -> None:
        """The profile and paytable in force until the next TableOpened."""
        self.paytable = pt
        self.emit(model.TableOpened(
            profile=self.profile, pays_spread_1=pt.spread_1, pays_spread_2=pt.spread_2,
            pays_spread_3=pt.spread_3, pays_spread_4_to_11=pt.spread_4_to_11,
            pays_three_of_a_kind=pt.three_of_a_kind), actor="pit-terminal")

    def change_dealer(self, *, burn: bool) -> None:
        if self.dealer:
            self.emit(model.DealerTappedOut(dealer_id=self.dealer))
        self.dealer_no += 1
        self.dealer = f"D-{self.table_id}-{self.dealer_no}"
        self.emit(model.DealerTappedIn(dealer_id=self.dealer), gap=20)
        # 13:47-20.31(d)1; 13:69F-6.4: each new dealer burns one card before dealing.
        if burn and self.burn_owed and not self.inject.skip_burn(self, self.round_count + 1):
            card = self.draw()
            self.emit(model.CardBurned(rank=card.rank, suit=card.suit,
                                       reason=model.BurnReason.NEW_DEALER))
            if len(self.shoe) == self.cut_behind:
                self.emit(model.CuttingCardReached(), gap=0.3)
            self.inject.burn_disclosure(self, card)

    def open_shoe(self) -> None:
        self.shoe_no += 1
        self.round_no = None
        self.shoe_id = f"{self.table_id}-S{self.shoe_no:04d}"
        self.shoe_open, self.reshuffle_now = True, False
        self.inject.shoe_opening(self)
        self.decks = self.inject.shoe_decks(self, self.config.decks_for(self.index))
        every = self.config.reshuffling_every
        reshuffling = every > 0 and self.shoe_no % every == 0
        self.burn_owed = rules.burn_owed(self.profile, reshuffling)
        auto = model.ShuffleMethod.AUTOMATIC_SHUFFLER
        method = auto if self.decks > 1 else model.ShuffleMethod.HAND
        if reshuffling:
            method = model.ShuffleMethod.CONTINUOUS_SHUFFLER
        device = f"SHUF-{self.table_id}" if method is not model.ShuffleMethod.HAND else None
        self.emit(model.ShuffleStarted(method=method, device_id=device), gap=30)
        if device is not None:
            self.inject.shuffling(self, method, device)
        self.shoe = [Card(r, s) for _ in range(self.decks) for r in range(2, 15) for s in SUITS]
        self.rng.shuffle(self.shoe)
        self.emit(model.ShuffleCompleted(method=method, device_id=device), gap=30)
        cut = self.rng.randrange(10, len(self.shoe) - 10)
        self.shoe = self.shoe[cut:] + self.shoe[:cut]
        self.emit(model.CardsCut(position=cut))
        # The cutting card goes about a quarter of the way from the back.
        self.cut_behind = max(8, int(len(self.shoe) * self.rng.uniform(0.2, 0.3)))
        self.emit(model.CuttingCardPlaced(cards_behind=self.cut_behind))
        self.shoe.reverse()  # pop() deals from the front
        self.emit(model.CardsLoaded(decks=self.decks))
        # 13:47-20.31(d)1: the first card of a new shoe is burned face down to the rack
        # (13:69F-6.9: none owed at an nj-casino table's automatic reshuffling shoe).
        if self.burn_owed and not self.inject.skip_burn(self, 1):
            card = self.draw()
            self.emit(model.CardBurned(rank=card.rank, suit=card.suit,
                                       reason=model.BurnReason.NEW_SHOE))
            self.inject.burn_disclosure(self, card)
        self.round_count = 0

    def close_shoe(self) -> None:
        self.shoe_open = False
        self.emit(model.ShoeClosed(cards_remaining=len(self.shoe)), gap=3)

    # --- one round ------------------------------------------------------------------------------

    def place_wagers(self) -> dict[Key, int]:
        wagers: dict[Key, int] = {}
        for seat, player in self.players.items():
            if self.rng.random() < self.config.sit_out:
                continue
            if self.rng.random() < 0.02:  # a new player sits down
                player = f"{player.rsplit('-', 1)[0]}-{self.rng.randrange(10**6)}"
                self.players[seat] = player
            amount = self.rng.choice(WAGER_SIZES_CENTS)
            instrument = model.Instrument.PLAQUES if amount >= 10000 else model.Instrument.CHIPS
            wagers[seat, seat] = amount
            self.emit(model.WagerPlaced(
                seat=seat, area=seat, player_id=player, amount_cents=amount,
                instrument=self.inject.instrument(self, instrument)), gap=0.8)
        return wagers

    def announce(self, meaning: Meaning, value: int | None = None) -> None:
        said = self.inject.announcement(self, meaning, value)  # WRONG_ANNOUNCEMENT
        if said is not None:
            meaning, value = said
            self.emit(model.Announced(phrase=phrase(self.profile, meaning, value), meaning=meaning,
                                      value=value), gap=0.7)

    def deal(self, box: Box, hand: Hand) -> Card:
        self.inject.before_card(self, hand)  # a card found face up in the shoe
        self.inject.card_in_error(self, hand)  # a card drawn in error (13:47-20.31(g)2)
        card = self.draw()
        if len(self.shoe) == self.cut_behind:
            # 13:47-20.31(d)16: the round in progress is completed, then the cards reshuffled.
            self.emit(model.CuttingCardReached(), gap=0.3)
            self.inject.cutting_card_reached(self, hand, card)
        self.emit(model.CardDrawn(rank=card.rank, suit=card.suit, face_up=True,
                                  destination=box), gap=1)
        hand.dealt.append(card)
        return card

    def settle(self, key: Key, kind: WagerKind, amount: int, hand: Hand) -> None:
        assert hand.left is not None and hand.right is not None
        third = hand.third.rank if hand.third else None
        if third is None and rules.classify(hand.left.rank, hand.right.rank).kind \
                is not rules.HandKind.CONSECUTIVE:
            # Only after an injected irregularity (a pair without its third card): the dealer
            # treats the round as a tie and returns the wager.
            expected = rules.ExpectedSettlement(model.SettledAs.VOID, None, 0, 0, amount)
        else:
            expected = rules.settle_wager(self.paytable, hand.left.rank, hand.right.rank, third,
                                          amount, is_raise=kind is WagerKind.RAISE)
        outcome = expected.outcome
        value = {model.SettledAs.WON: expected.paid_cents,
                 model.SettledAs.LOST: expected.collected_cents,
                 model.SettledAs.VOID: expected.returned_cents}[outcome]
        made = self.inject.settlement(self, hand, amount, outcome, value, expected.odds)
        if made is not None:
            outcome, value, odds = made
            self.emit(model.WagerSettled(seat=key[0], area=key[1], wager_kind=kind, outcome=outcome,
                                         amount_cents=value, odds=odds), gap=0.8)

    def settle_all(self, hand: Hand) -> None:
        for key, amount in hand.wagers.items():
            if key in hand.settled:
                continue
            self.settle(key, WagerKind.ORIGINAL, amount, hand)
            if key in hand.raises:
                self.settle(key, WagerKind.RAISE, hand.raises[key], hand)
        for key, amount in hand.raises.items():  # a raise with no wager (injected only)
            if key not in hand.wagers:
                self.settle(key, WagerKind.RAISE, amount, hand)

    def rack(self, hand: Hand) -> None:
        # (d)15: the cards are picked up into the discard rack in order.
        cards = self.inject.racking(self, hand.dealt)
        if cards is not None:
            self.emit(model.CardsRacked(cards=tuple(cards)), gap=2)

    def raise_wagers(self, hand: Hand, spread: int) -> None:
        raise_from = self.config.raise_from
        for key, amount in hand.wagers.items():
            # (d)12: a raise may not exceed the original wager (one raised early, injected,
            # is not raised again).
            if key in hand.raises:
                continue
            if raise_from is not None and spread >= raise_from and self.rng.random() < 0.9:
                hand.raises[key] = amount
                self.emit(model.RaisePlaced(seat=key[0], area=key[1], amount_cents=amount), gap=1)

    def play_round(self) -> None:
        self.round_count += 1
        self.rounds_played += 1
        self.round_no = self.round_count
        self.round_state = RoundState()
        self.clock_us += int(self.rng.uniform(4, 12) * 1_000_000)
        self.inject.round_starting(self)
        hand = Hand(self.place_wagers())
        self.inject.wagers_placed(self, hand)
        try:
            self.play_cards(hand)
        except RoundStopped:
            pass  # the injector ended the round and racked its cards
        self.round_no = None

    def play_cards(self, hand: Hand) -> None:
        x = self.inject
        # 13:47-20.31(d)5: first card to the left box, second to the right (unless injected).
        first_box, second_box = x.first_boxes(self)
        self.deal(first_box, hand)
        x.first_card_out(self, hand)
        x.before_second_card(self, hand)  # a raise before the second card (EARLY_RAISE)
        self.deal(second_box, hand)
        # The round as its events say, as the views will read it (the first card to each box).
        state = self.round_state
        left, right, kind = state.left, state.right, state.classification
        assert left is not None and right is not None and kind is not None
        hand.left, hand.right = left, right
        if kind.kind is rules.HandKind.CONSECUTIVE:
            self.announce(Meaning.CONSECUTIVE)  # (d)7: all wagers void, no third card
            x.consecutive_round(self, hand)
        elif kind.kind is rules.HandKind.PAIR:
            self.announce(Meaning.PAIR)  # (d)8: draw the third card at once
            if x.pair_round(self, hand):
                x.third_card_diverted(self, hand)  # to the rack or a side box (THIRD_CARD_DIVERTED)
                hand.third = third = self.deal(Box.MIDDLE, hand)
                self.announce(Meaning.THREE_OF_A_KIND if third.rank == left.rank
                              else Meaning.NO_THREE_OF_A_KIND)
                x.third_card_dealt(self, hand)  # a redraw (THIRD_CARD_REDRAWN)
        else:
            assert kind.spread is not None
            self.announce(Meaning.SPREAD, kind.spread)  # (d)11
            self.raise_wagers(hand, kind.spread)
            x.raises_made(self, hand)
            if not x.early_third_card(self, hand):  # (g)3, when injected
                self.announce(Meaning.RAISES_CLOSED)  # (d)13
                x.raises_closed(self, hand)
                x.card_out_of_place(self, hand)  # BURN_DURING_ROUND, CARD_OUTSIDE_ROUND
                if not x.skip_third_card(self, hand):  # SPREAD_WITHOUT_THIRD_CARD
                    x.third_card_diverted(self, hand)  # THIRD_CARD_DIVERTED
                    hand.third = third = self.deal(Box.MIDDLE, hand)
                    self.announce(Meaning.THIRD_CARD, third.rank)
                    x.third_card_announced(self, hand)
                    x.third_card_dealt(self, hand)  # a redraw (THIRD_CARD_REDRAWN)
                    x.round_decided(self, hand)  # ROUND_VOIDED_WITHOUT_CAUSE
        self.settle_all(hand)
        self.rack(hand)


@dataclass
class SimReport:
    events: int
    tables: int
    rounds: int
    shoes: int
    truth: list[TruthLabel]


def generate(config: SimConfig, only: Sequence[int] | None = None,
             ) -> tuple[Iterator[Step], list[TableSim]]:
    """Every table's steps (or those of the table indexes in `only`), merged in time order
    (deterministic tie-breaks)."""
    sims = [TableSim(config, i) for i in (config.table_indexes if only is None else only)]
    # Step.__lt__'s order as a key made in C: (at_us, table_index, n) is unique per step, so
    # the merge is the same, without a Python call per comparison (issue 19, item 3).
    return heapq.merge(*(sim.run() for sim in sims), key=_STEP_ORDER), sims


def step_records(step: Step) -> int:
    """The records one step makes in the log: two for a duplicate, else one."""
    return 2 if step.tamper == "duplicate" else 1


def record_step(recorder: Recorder, log: EventLog, table_id: str, step: Step,
                first: int = 0) -> int:
    """Record one step as `simulate` records it (the rerun check, events/simulation/rerun.py,
    records the same bytes to compare them with a log's); returns the records it made: two
    for a duplicate. `first`: how many of the step's records the log holds already (a run
    stopped between a duplicate's two copies): only the rest are made."""
    if step.tamper is None:  # the clock is integer micros, which the writer encodes: no datetime
        recorder.record_us(table_id, step.event, shoe_id=step.shoe_id, round_no=step.round_no,
                           actor=step.actor, occurred_us=step.at_us,
                           recorded_us=step.at_us + step.delay_us, event_id=step.event_id)
        return 1
    stamp = {"shoe_id": step.shoe_id, "round_no": step.round_no, "actor": step.actor,
             "occurred_at": codec.from_micros(step.at_us),
             "recorded_at": codec.from_micros(step.at_us + step.delay_us),
             "event_id": step.event_id}
    if first:  # the second copy of a duplicate: the same event recorded once more
        recorder.record(table_id, step.event, **stamp)  # type: ignore[arg-type]
        return 1
    record_tampered(recorder, log, step.tamper, table_id, step.event, **stamp)
    return step_records(step)


def simulate(log: EventLog, config: SimConfig,
             progress: Callable[[int], None] | None = None, *,
             only: Sequence[int] | None = None,
             round_progress: Callable[[int], None] | None = None,
             last: Mapping[bytes, bytes] | None = None,
             resume: Mapping[str, int] | None = None) -> SimReport:
    """Play the evening and record it to `log`; returns counts and the ground truth.

    `last`: the log's `last_records`, when the caller read them already (the rerun check):
    the recorder's heads are taken from them instead of read again.

    `resume`: tables of which the log holds this simulation's first records already, and how
    many (a run stopped part way: rerun.Held.held, which found them equal to this simulation's
    through the chain hash of the log's newest record there). Such a table is generated from
    its start, as the recorder needs nothing of the steps it holds but its head: those steps
    are not recorded, and the recorder continues from the log's head of the table (`last`), so
    the rest is byte for byte what one uninterrupted run writes, appended with the recorder's
    check of that head. The report counts the events appended.

    `only` plays just these table indexes (0-based): each table is its own seeded stream, so
    several processes can share one evening's tables between them, each recording its own
    tables to the same log, and together record exactly what one process would (in another
    interleaving of tables).

    `progress(events)` is called every 5,000 events; `round_progress(rounds)` with the rounds
    begun so far, whose total is known beforehand (config.rounds per table played)."""
    steps, sims = generate(config, only)
    current: dict[int, tuple[str | None, int]] = {}  # table index -> (shoe, round) in play
    begun = 0
    recorder = Recorder(log, heads=None if last is None else scan_heads(log, last))
    held = {table: n for table, n in (resume or {}).items() if n > 0}  # records still held
    n = 0
    table_ids = {sim.index: sim.table_id for sim in sims}
    for step in steps:
        table = table_ids[step.table_index]
        made = 0
        if not held.get(table):
            made = record_step(recorder, log, table, step)
        elif step_records(step) <= held[table]:  # in the log already
            held[table] -= step_records(step)
        else:  # the log holds the first copy of this duplicate
            made = record_step(recorder, log, table, step, first=held.pop(table))
        n += made
        if made and progress and n % 5000 < made:
            progress(n)
        if step.round_no is not None and current.get(step.table_index) != (step.shoe_id,
                                                                            step.round_no):
            current[step.table_index] = (step.shoe_id, step.round_no)
            begun += 1
            if round_progress and begun % 20 == 0:
                round_progress(begun)
    recorder.flush()
    if progress:
        progress(n)
    if round_progress:
        round_progress(begun)
    truth = [label for sim in sims for label in sim.inject.labels]
    return SimReport(n, len(sims), sum(sim.rounds_played for sim in sims),
                     sum(sim.shoe_no for sim in sims), truth)

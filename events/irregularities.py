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
from typing import TYPE_CHECKING, Any

from events import chain, codec, rules
from events.log import EventLog
from events.model import (
    Box, Card, CardFoundFaceUp, DomainEvent, Envelope, CardsRacked, Choice, CuttingCardReached, DeviceFaulted, Fault,
    Instrument, Meaning, RaisePlaced, RoundVoided, SettledAs, ShuffleMethod, ShuffleStarted, Suit,
    VoidOrPlayChosen, WagerChanged, WagerKind, WagerPlaced, WagerRemoved, WagerSettled,
)

from events.recorder import Recorder, TableHead

if TYPE_CHECKING:
    from events.simulator import Hand, SimConfig, TableSim

# The rule codes that can be injected: every code of the catalogue but the two statistical ones.
INJECTABLE = (
    "EARLY_THIRD_CARD", "EARLY_EXPOSURE_MISHANDLED", "LATE_WAGER", "WAGER_ALTERED",
    "RAISE_OVER_LIMIT", "RAISE_NOT_ALLOWED", "LATE_RAISE", "WRONG_PAYOUT", "BELOW_MINIMUM_ODDS",
    "WRONG_SETTLEMENT", "WRONG_ANNOUNCEMENT", "THIRD_CARD_ON_CONSECUTIVE",
    "PAIR_WITHOUT_THIRD_CARD", "MISSING_BURN", "FACE_UP_CARD_USED", "NO_RESHUFFLE_AFTER_CUT_CARD",
    "ROUND_ABANDONED_AT_CUT_CARD", "DISCARD_RACK_ORDER", "CARD_UNACCOUNTED", "EXTRA_CARD",
    "MULTIPLE_BETTING_AREAS", "CALL_BET", "DEVICE_FAULT_NOT_VOIDED", "SEQUENCE_GAP",
    "CHAIN_BROKEN",
)
EXTRA_SIZES_CENTS = (500, 1000, 2500)
_WRONG_LINES = ("spread_1", "spread_2", "spread_3", "three_of_a_kind")


_ALL_CARDS = tuple(Card(r, s) for r in range(2, 15) for s in Suit)


class RoundStopped(Exception):
    """Internal control flow: the round ended early (abandoned at the cutting card, or voided
    after a dealing-shoe jam); its cards are already racked."""


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
    """Record one event with an integrity irregularity (DESIGN, principle 2).

    "gap": the table's sequence skips one number before this event, as if the event before it
    had been lost from the log (SEQUENCE_GAP at this event). "chain": this event links to a
    hash that no event has, as if its predecessor had been altered after it was sealed
    (CHAIN_BROKEN at this event). The recorder would never write that, so the event is sealed
    and appended here, after the recorder's buffer is flushed; the recorder then continues
    the table from it.
    """
    head = recorder.heads.setdefault(table_id, TableHead())
    if kind == "gap":
        head.seq += 1
        recorder.record(table_id, event, **stamp)
        return
    recorder.flush()
    wrong = hashlib.sha256(b"pitlog-sim:altered:" + head.hash).digest()
    env = Envelope(table_id=table_id, seq=head.seq + 1, event=event, prev_hash=wrong, **stamp)
    message = chain.seal(codec.encode(env), wrong)
    log.append([(table_id.encode(), message)])
    head.seq, head.hash = env.seq, chain.stored_hash(message)


class Irregularities:
    """The seam where irregularities are injected; draws from its own random stream."""

    def __init__(self, config: SimConfig, table_seed: str) -> None:
        self.config = config
        self.rng = random.Random(f"{table_seed}:irregularities")
        self.labels: list[TruthLabel] = []
        self._labelled: set[tuple[str, str, str | None, int | None]] = set()
        self.enabled = config.irregularities > 0 or any(r > 0 for r in config.per_code.values())
        self.busy = False  # something was injected in the round in play
        self.hold_next_round = False  # a shoe-level injection owns the next round
        self._tamper: str | None = None
        self._call_bet = False
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

    def label(self, code: str, table: TableSim, note: str = "", *,
              round_no: int | None | str = "in play") -> None:
        rn = table.round_no if round_no == "in play" else round_no
        assert rn is None or isinstance(rn, int)
        key = (code, table.table_id, table.shoe_id, rn)
        if key not in self._labelled:
            self._labelled.add(key)
            self.labels.append(TruthLabel(code, table.table_id, table.shoe_id, rn, note))

    def tamper_next(self) -> str | None:
        t = self._tamper
        if t is not None:
            self._tamper = None
        return t

    # --- shoe and staff -------------------------------------------------------------------------

    def shoe_opening(self, table: TableSim) -> None:
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
            pt = replace(rules.STANDARD_PAYTABLE, **{line: getattr(rules.STANDARD_PAYTABLE, line) - 1})
            table.open_table(pt)
            self.illegal_paytable = True
            self.label("BELOW_MINIMUM_ODDS", table, f"{line} lowered", round_no=None)

    def shuffling(self, table: TableSim, method: ShuffleMethod, device: str) -> None:
        """DEVICE_FAULT_NOT_VOIDED: the shuffler jams; half the time the cards are reshuffled
        (13:69F-34.16(m), correct), half the time the shoe is loaded anyway (labelled)."""
        if not (self.enabled and self.chance("DEVICE_FAULT_NOT_VOIDED")):
            return
        table.emit(DeviceFaulted(device_id=device, fault=Fault.SHUFFLER_JAM,
                                 detail="stopped mid-cycle"), actor=device)
        if self.rng.random() < 0.5:
            table.emit(ShuffleStarted(method=method, device_id=device), gap=30)
        else:
            self.label("DEVICE_FAULT_NOT_VOIDED", table, "shuffler jam, no reshuffle",
                       round_no=None)

    def skip_burn(self, table: TableSim, next_round: int) -> bool:
        """MISSING_BURN: no burn after a new shoe or a new dealer (13:47-20.31(d)1)."""
        if not (self.enabled and self.chance("MISSING_BURN")):
            return False
        self.hold_next_round = True  # the unburned first card comes out in that round
        self.label("MISSING_BURN", table, round_no=next_round)
        return True

    def after_cutting_card_round(self, table: TableSim) -> None:
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

    def round_starting(self, table: TableSim) -> None:
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
        elif not self.busy and (self.extra_card_pending or self.chance("EXTRA_CARD")):
            self.extra_card_pending = not self._introduce_card(table)
        elif self.roll("CALL_BET"):
            self._call_bet = True

    def _introduce_card(self, table: TableSim) -> bool:
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

    def instrument(self, table: TableSim, instrument: Instrument) -> Instrument:
        """CALL_BET: the round's first wager is a verbal call bet; flagged only where call bets
        are forbidden (GA (2)), recorded unlabelled elsewhere."""
        if not self._call_bet:
            return instrument
        self._call_bet = False
        if not rules.profile_rules(table.profile).call_bets_allowed:
            self.label("CALL_BET", table)
        return Instrument.CALL_BET

    def wagers_placed(self, table: TableSim, hand: Hand) -> None:
        """MULTIPLE_BETTING_AREAS: a player also wagers on a free area ((g)4; 13:69F-6.8)."""
        if not self.enabled or not hand.wagers:
            return
        free = _free_seats(table, hand)
        if free and self.roll("MULTIPLE_BETTING_AREAS"):
            seat, _ = self.rng.choice(sorted(hand.wagers))
            area = self.rng.choice(free)
            amount = self.rng.choice(EXTRA_SIZES_CENTS)
            table.emit(WagerPlaced(seat=seat, area=area, player_id=table.players[seat],
                                   amount_cents=amount), gap=0.8)
            hand.wagers[seat, area] = amount
            self.label("MULTIPLE_BETTING_AREAS", table, f"seat {seat} also on area {area}")

    def before_card(self, table: TableSim, hand: Hand) -> None:
        """FACE_UP_CARD_USED: the next card is found face up in the shoe ((g)1). Half the time
        it is discarded as the rule says (unlabelled), half the time it is dealt (labelled)."""
        if not self.enabled or len(table.shoe) < 2 or not self.roll("FACE_UP_CARD_USED"):
            return
        top = table.shoe[-1]
        if self.rng.random() < 0.5 or top == table.shoe[-2]:
            table.emit(CardFoundFaceUp(rank=top.rank, suit=top.suit), gap=0.5)
            self.label("FACE_UP_CARD_USED", table, f"{top} used")
            return  # the caller deals it next
        table.draw()
        if len(table.shoe) == table.cut_behind:
            table.emit(CuttingCardReached(), gap=0.3)
            self.cut_card_out = self.cut_card_this_round = True
        table.emit(CardFoundFaceUp(rank=top.rank, suit=top.suit), gap=0.5)

    def cutting_card_reached(self, table: TableSim, hand: Hand, card: Card) -> None:
        """ROUND_ABANDONED_AT_CUT_CARD: the dealer stops the round at the cutting card, returns
        the wagers and racks what is out, instead of completing the round ((d)16)."""
        if not self.enabled:
            return
        self.cut_card_out = self.cut_card_this_round = True
        if not self.roll("ROUND_ABANDONED_AT_CUT_CARD"):
            return
        table.shoe.append(card)  # not dealt: it goes back with the shoe to the reshuffle
        self._return_all(table, hand)
        table.reshuffle_now = True
        self.label("ROUND_ABANDONED_AT_CUT_CARD", table)
        raise RoundStopped

    def first_card_out(self, table: TableSim, hand: Hand) -> None:
        """After the first card: a dealing-shoe jam, a late wager, or an altered wager."""
        if not self.enabled:
            return
        free = _free_seats(table, hand)
        if self.roll("DEVICE_FAULT_NOT_VOIDED"):
            self._shoe_jam(table, hand)
        elif free and self.roll("LATE_WAGER"):  # (d)3; GA (1)
            seat = self.rng.choice(free)
            amount = self.rng.choice(EXTRA_SIZES_CENTS)
            table.emit(WagerPlaced(seat=seat, area=seat, player_id=table.players[seat],
                                   amount_cents=amount), gap=0.8)
            hand.wagers[seat, seat] = amount
            self.label("LATE_WAGER", table, f"seat {seat}")
        elif hand.wagers and self.roll("WAGER_ALTERED"):  # (d)6; GA (4)
            seat, area = self.rng.choice(sorted(hand.wagers))
            if self.rng.random() < 0.5:
                table.emit(WagerRemoved(seat=seat, area=area), gap=0.8)
            else:
                table.emit(WagerChanged(seat=seat, area=area,
                                        amount_cents=2 * hand.wagers[seat, area]), gap=0.8)
            # The wager still stands as it was when the first card came out: it is settled so.
            self.label("WAGER_ALTERED", table, f"seat {seat}")

    def _shoe_jam(self, table: TableSim, hand: Hand) -> None:
        """13:69F-34.16(n) by analogy: a jam mid-round voids the round and the cards are
        reshuffled. Half the time that is done (unlabelled); half the time the dealer clears
        the jam and deals on (DEVICE_FAULT_NOT_VOIDED)."""
        device = f"SHOE-{table.table_id}"
        table.emit(DeviceFaulted(device_id=device, fault=Fault.SHOE_JAM,
                                 detail="stopped dealing"), actor=device)
        if self.rng.random() < 0.5:
            self.label("DEVICE_FAULT_NOT_VOIDED", table, "shoe jam, dealt on")
            return
        table.emit(RoundVoided(reason="dealing shoe jammed"))
        self._return_all(table, hand)
        table.close_shoe()
        table.reshuffle_now = True
        raise RoundStopped

    def _return_all(self, table: TableSim, hand: Hand) -> None:
        """Every wager and raise returned, and the cards out racked in dealing order."""
        for key, amount in [*((k, (WagerKind.ORIGINAL, a)) for k, a in hand.wagers.items()),
                            *((k, (WagerKind.RAISE, a)) for k, a in hand.raises.items())]:
            kind, cents = amount
            table.emit(WagerSettled(seat=key[0], area=key[1], wager_kind=kind,
                                    outcome=SettledAs.VOID, amount_cents=cents), gap=0.8)
        if hand.dealt:
            table.emit(CardsRacked(cards=tuple(hand.dealt)), gap=2)

    def consecutive_round(self, table: TableSim, hand: Hand) -> None:
        if not self.enabled:
            return
        if self.roll("THIRD_CARD_ON_CONSECUTIVE"):  # (d)7: no third card is drawn
            table.deal(Box.MIDDLE, hand)  # on the layout, but it decides nothing
            self.label("THIRD_CARD_ON_CONSECUTIVE", table)
        else:
            self._raise_on_tie(table, hand)

    def pair_round(self, table: TableSim, hand: Hand) -> bool:
        """False when the dealer does not draw the pair's third card ((d)8)."""
        if not self.enabled:
            return True
        # With the cutting card out in this round, a missing third card is the round abandoned
        # at the cutting card (ROUND_ABANDONED_AT_CUT_CARD), not this.
        if not self.cut_card_this_round and self.roll("PAIR_WITHOUT_THIRD_CARD"):
            self.label("PAIR_WITHOUT_THIRD_CARD", table)
            return False
        self._raise_on_tie(table, hand)
        return True

    def _raise_on_tie(self, table: TableSim, hand: Hand) -> None:
        """RAISE_NOT_ALLOWED ((d)12): a raise on a consecutive or pair round."""
        if hand.wagers and self.roll("RAISE_NOT_ALLOWED"):
            key = self.rng.choice(sorted(hand.wagers))
            self._raise(table, hand, key, hand.wagers[key])
            self.label("RAISE_NOT_ALLOWED", table, f"seat {key[0]}")

    def _raise(self, table: TableSim, hand: Hand, key: tuple[int, int], cents: int) -> None:
        table.emit(RaisePlaced(seat=key[0], area=key[1], amount_cents=cents), gap=1)
        hand.raises[key] = hand.raises.get(key, 0) + cents

    def raises_made(self, table: TableSim, hand: Hand) -> None:
        """A spread round's raises are in: one over the limit, or one with no wager ((d)12)."""
        if not self.enabled:
            return
        free = _free_seats(table, hand)
        if hand.wagers and self.roll("RAISE_OVER_LIMIT"):
            key = self.rng.choice(sorted(hand.wagers))
            owed = hand.wagers[key]
            self._raise(table, hand, key, owed if key in hand.raises else 2 * owed)
            self.label("RAISE_OVER_LIMIT", table, f"seat {key[0]}")
        elif free and self.roll("RAISE_NOT_ALLOWED"):
            seat = self.rng.choice(free)
            self._raise(table, hand, (seat, seat), self.rng.choice(EXTRA_SIZES_CENTS))
            self.label("RAISE_NOT_ALLOWED", table, f"seat {seat} has no wager")

    def early_third_card(self, table: TableSim, hand: Hand) -> bool:
        """EARLY_THIRD_CARD ((g)3; 13:69F-6.7): a third card exposed before "Raises closed".

        The protocol as recorded: the exposed card (CardDrawn face up to the middle box); a
        VoidOrPlayChosen per wager; the voiders' wagers and raises returned (WagerSettled VOID);
        "Raises closed"; the new third card; its value; the players' settlements. Half the
        injections follow it (EARLY_THIRD_CARD only); the rest break it one way (also
        EARLY_EXPOSURE_MISHANDLED): the exposed card is used, a player is offered no choice,
        or a voider is refunded only after the new third card. Returns True when it dealt
        the round's third card.
        """
        if not (self.enabled and self.roll("EARLY_THIRD_CARD")):
            return False
        keys = sorted(hand.wagers)
        way = self.rng.choice(("proper", "proper", "proper", "used", "no_choice", "late_refund")
                              if keys else ("proper", "used"))
        exposed = table.deal(Box.MIDDLE, hand)
        self.label("EARLY_THIRD_CARD", table, way)
        if way != "proper":
            self.label("EARLY_EXPOSURE_MISHANDLED", table, way)
        if way == "used":
            hand.third = exposed
            table.announce(Meaning.THIRD_CARD, exposed.rank)
            return True
        voiders = [k for k in keys if self.rng.random() < 0.3]
        if way == "late_refund" and keys[0] not in voiders:
            voiders.insert(0, keys[0])
        for key in keys:
            if way == "no_choice" and key == keys[0]:
                voiders = [k for k in voiders if k != key]
                continue
            choice = Choice.VOID if key in voiders else Choice.PLAY
            table.emit(VoidOrPlayChosen(seat=key[0], area=key[1], choice=choice), gap=1)
        if way != "late_refund":
            self._refund(table, hand, voiders)
        table.announce(Meaning.RAISES_CLOSED)
        hand.third = third = table.deal(Box.MIDDLE, hand)
        table.announce(Meaning.THIRD_CARD, third.rank)
        if way == "late_refund":
            self._refund(table, hand, voiders)
        return True

    def _refund(self, table: TableSim, hand: Hand, voiders: list[tuple[int, int]]) -> None:
        for key in voiders:
            for kind, cents in ((WagerKind.ORIGINAL, hand.wagers[key]),
                                (WagerKind.RAISE, hand.raises.get(key))):
                if cents:
                    table.emit(WagerSettled(seat=key[0], area=key[1], wager_kind=kind,
                                            outcome=SettledAs.VOID, amount_cents=cents), gap=0.8)
            hand.settled.add(key)

    def raises_closed(self, table: TableSim, hand: Hand) -> None:
        """LATE_RAISE ((d)12-13; GA (11)): a raise after "Raises closed", before or after the
        third card is dealt."""
        if not self.enabled:
            return
        unraised = [k for k in sorted(hand.wagers) if k not in hand.raises]
        if unraised and self.roll("LATE_RAISE"):
            key = self.rng.choice(unraised)
            self.label("LATE_RAISE", table, f"seat {key[0]}")
            if self.rng.random() < 0.5:
                self._raise(table, hand, key, hand.wagers[key])
            else:
                self._late_raise = key

    def third_card_announced(self, table: TableSim, hand: Hand) -> None:
        if self._late_raise is not None:
            key, self._late_raise = self._late_raise, None
            self._raise(table, hand, key, hand.wagers[key])

    def announcement(self, table: TableSim, meaning: Meaning,
                     value: int | None) -> tuple[Meaning, int | None] | None:
        """WRONG_ANNOUNCEMENT ((d)7-11, 13): an announcement left out or contradicting the
        cards. "Raises closed" is never touched: its absence is EARLY_THIRD_CARD's business."""
        if not self.enabled or meaning is Meaning.RAISES_CLOSED \
                or not self.roll("WRONG_ANNOUNCEMENT"):
            return meaning, value
        wrong: tuple[Meaning, int | None] | None = None
        if self.rng.random() < 0.5:
            wrong = _contradiction(meaning, value)
        self.label("WRONG_ANNOUNCEMENT", table, f"{meaning} {'said wrong' if wrong else 'left out'}")
        return wrong

    def settlement(self, table: TableSim, hand: Hand, amount: int, outcome: SettledAs,
                   value: int, odds: int | None) -> tuple[SettledAs, int, int | None] | None:
        """WRONG_PAYOUT or WRONG_SETTLEMENT on the round's first winner / first settlement; and
        the BELOW_MINIMUM_ODDS label of a payout made at an illegal table's line."""
        if not self.enabled:
            return outcome, value, odds
        made: tuple[SettledAs, int, int | None] | None = (outcome, value, odds)
        if outcome is SettledAs.WON and not self._payout_rolled:
            self._payout_rolled = True
            if self.roll("WRONG_PAYOUT") and odds is not None:  # (e); GA (11)(b)
                over = self.rng.random() < 0.5
                made = (outcome, amount * (odds + 1), odds + 1) if over else (outcome, value // 2, odds)
                self.label("WRONG_PAYOUT", table, "over" if over else "under")
        if not self._settle_rolled:
            self._settle_rolled = True
            if self.roll("WRONG_SETTLEMENT"):  # (d)7, 10, 14
                made = self._wrong_settlement(table, hand, amount, outcome)
        if made is not None and made[0] is SettledAs.WON and outcome is SettledAs.WON \
                and self.illegal_paytable and odds is not None and made[1] == amount * odds \
                and odds < _standard_odds(hand):
            self.label("BELOW_MINIMUM_ODDS", table, "paid at the illegal line")
        return made

    def _wrong_settlement(self, table: TableSim, hand: Hand, amount: int,
                          outcome: SettledAs) -> tuple[SettledAs, int, int | None] | None:
        self.label("WRONG_SETTLEMENT", table, f"{outcome} settled wrong")
        if outcome is SettledAs.WON:
            return SettledAs.LOST, amount, None  # a winner collected
        if outcome is SettledAs.LOST:  # a loser paid
            assert hand.left is not None and hand.right is not None
            s = rules.classify(hand.left.rank, hand.right.rank).spread or 4
            odds = rules.spread_odds(table.paytable, s)
            return SettledAs.WON, amount * odds, odds
        return None  # a void wager never returned

    def racking(self, table: TableSim, dealt: list[Card]) -> list[Card] | None:
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


def _free_seats(table: TableSim, hand: Hand) -> list[int]:
    """Seats whose betting area holds no wager in this round."""
    used = {area for _, area in hand.wagers} | {area for _, area in hand.raises}
    return [s for s in table.players if s not in used]


def _standard_odds(hand: Hand) -> int:
    """The standard table's odds for this round's win (13:47-20.31(e), (d)9)."""
    assert hand.left is not None and hand.right is not None
    c = rules.classify(hand.left.rank, hand.right.rank)
    std = rules.STANDARD_PAYTABLE
    return std.three_of_a_kind if c.spread is None else rules.spread_odds(std, c.spread)


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

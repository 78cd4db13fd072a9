"""The dealer's and players' slips within a round, injected by the simulator (see
events/simulation/irregularities.py, whose `Irregularities` is this class plus the shoe-level
injections, the random stream and the ground-truth labels).

Every method is called by TableSim.play_cards at one point of the round, returns at once when
injection is off, and otherwise may roll its codes (at most one injection per round) and change
what the table records next. Each injection labels exactly the anomaly codes it must raise.
"""

from __future__ import annotations

import random

from events.reddog import model, rules
from events.reddog.model import Box, Card, Choice, Fault, Meaning, SettledAs, WagerKind
from events.simulation.table import Hand, Key, Table

EXTRA_SIZES_CENTS = (500, 1000, 2500)


class RoundStopped(Exception):
    """Internal control flow: the round ended early (abandoned at the cutting card, or voided
    after a dealing-shoe jam); its cards are already racked."""


class Slips:
    """What every mixin of injections needs from `Irregularities`: its random stream, its state
    and its ground-truth labels (declared here, provided there)."""

    rng: random.Random
    enabled: bool
    busy: bool
    cut_card_out: bool
    cut_card_this_round: bool
    illegal_paytable: bool

    def roll(self, code: str) -> bool:
        raise NotImplementedError

    def chance(self, code: str) -> bool:
        raise NotImplementedError

    def label(self, code: str, table: Table, note: str = "", *,
              round_no: int | None | str = "in play") -> None:
        raise NotImplementedError


class HandSlips(Slips):
    """The round-level injections; mixed into `Irregularities`, which provides the state."""

    _late_raise: Key | None
    _settle_rolled: bool
    _payout_rolled: bool

    def before_card(self, table: Table, hand: Hand) -> None:
        """FACE_UP_CARD_USED: the next card is found face up in the shoe ((g)1). Half the time
        it is discarded as the rule says (unlabelled), half the time it is dealt (labelled)."""
        if not self.enabled or len(table.shoe) < 2 or not self.roll("FACE_UP_CARD_USED"):
            return
        top = table.shoe[-1]
        if self.rng.random() < 0.5 or top == table.shoe[-2]:
            table.emit(model.CardFoundFaceUp(rank=top.rank, suit=top.suit), gap=0.5)
            self.label("FACE_UP_CARD_USED", table, f"{top} used")
            return  # the caller deals it next
        table.draw()
        if len(table.shoe) == table.cut_behind:
            table.emit(model.CuttingCardReached(), gap=0.3)
            self.cut_card_out = self.cut_card_this_round = True
        table.emit(model.CardFoundFaceUp(rank=top.rank, suit=top.suit), gap=0.5)

    def cutting_card_reached(self, table: Table, hand: Hand, card: Card) -> None:
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

    def first_card_out(self, table: Table, hand: Hand) -> None:
        """After the first card: a dealing-shoe jam, a late wager, or an altered wager."""
        if not self.enabled:
            return
        free = free_seats(table, hand)
        if self.roll("DEVICE_FAULT_NOT_VOIDED"):
            self._shoe_jam(table, hand)
        elif free and self.roll("LATE_WAGER"):  # (d)3; GA (1)
            seat = self.rng.choice(free)
            amount = self.rng.choice(EXTRA_SIZES_CENTS)
            table.emit(model.WagerPlaced(seat=seat, area=seat, player_id=table.players[seat],
                                         amount_cents=amount), gap=0.8)
            hand.wagers[seat, seat] = amount
            self.label("LATE_WAGER", table, f"seat {seat}")
        elif hand.wagers and self.roll("WAGER_ALTERED"):  # (d)6; GA (4)
            seat, area = self.rng.choice(sorted(hand.wagers))
            if self.rng.random() < 0.5:
                table.emit(model.WagerRemoved(seat=seat, area=area), gap=0.8)
            else:
                table.emit(model.WagerChanged(seat=seat, area=area,
                                              amount_cents=2 * hand.wagers[seat, area]), gap=0.8)
            # The wager still stands as it was when the first card came out: it is settled so.
            self.label("WAGER_ALTERED", table, f"seat {seat}")

    def _shoe_jam(self, table: Table, hand: Hand) -> None:
        """13:69F-34.16(n) by analogy: a jam mid-round voids the round and the cards are
        reshuffled. Half the time that is done (unlabelled); half the time the dealer clears
        the jam and deals on (DEVICE_FAULT_NOT_VOIDED)."""
        device = f"SHOE-{table.table_id}"
        table.emit(model.DeviceFaulted(device_id=device, fault=Fault.SHOE_JAM,
                                       detail="stopped dealing"), actor=device)
        if self.rng.random() < 0.5:
            self.label("DEVICE_FAULT_NOT_VOIDED", table, "shoe jam, dealt on")
            return
        table.emit(model.RoundVoided(reason="dealing shoe jammed"))
        self._return_all(table, hand)
        table.close_shoe()
        table.reshuffle_now = True
        raise RoundStopped

    def _return_all(self, table: Table, hand: Hand) -> None:
        """Every wager and raise returned, and the cards out racked in dealing order."""
        for key, amount in [*((k, (WagerKind.ORIGINAL, a)) for k, a in hand.wagers.items()),
                            *((k, (WagerKind.RAISE, a)) for k, a in hand.raises.items())]:
            kind, cents = amount
            table.emit(model.WagerSettled(seat=key[0], area=key[1], wager_kind=kind,
                                          outcome=SettledAs.VOID, amount_cents=cents), gap=0.8)
        if hand.dealt:
            table.emit(model.CardsRacked(cards=tuple(hand.dealt)), gap=2)

    def consecutive_round(self, table: Table, hand: Hand) -> None:
        if not self.enabled:
            return
        if self.roll("THIRD_CARD_ON_CONSECUTIVE"):  # (d)7: no third card is drawn
            table.deal(Box.MIDDLE, hand)  # on the layout, but it decides nothing
            self.label("THIRD_CARD_ON_CONSECUTIVE", table)
        else:
            self._raise_on_tie(table, hand)

    def pair_round(self, table: Table, hand: Hand) -> bool:
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

    def _raise_on_tie(self, table: Table, hand: Hand) -> None:
        """RAISE_NOT_ALLOWED ((d)12): a raise on a consecutive or pair round."""
        if hand.wagers and self.roll("RAISE_NOT_ALLOWED"):
            key = self.rng.choice(sorted(hand.wagers))
            self._raise(table, hand, key, hand.wagers[key])
            self.label("RAISE_NOT_ALLOWED", table, f"seat {key[0]}")

    def _raise(self, table: Table, hand: Hand, key: tuple[int, int], cents: int) -> None:
        table.emit(model.RaisePlaced(seat=key[0], area=key[1], amount_cents=cents), gap=1)
        hand.raises[key] = hand.raises.get(key, 0) + cents

    def raises_made(self, table: Table, hand: Hand) -> None:
        """A spread round's raises are in: one over the limit, or one with no wager ((d)12)."""
        if not self.enabled:
            return
        free = free_seats(table, hand)
        if hand.wagers and self.roll("RAISE_OVER_LIMIT"):
            key = self.rng.choice(sorted(hand.wagers))
            owed = hand.wagers[key]
            self._raise(table, hand, key, owed if key in hand.raises else 2 * owed)
            self.label("RAISE_OVER_LIMIT", table, f"seat {key[0]}")
        elif free and self.roll("RAISE_NOT_ALLOWED"):
            seat = self.rng.choice(free)
            self._raise(table, hand, (seat, seat), self.rng.choice(EXTRA_SIZES_CENTS))
            self.label("RAISE_NOT_ALLOWED", table, f"seat {seat} has no wager")

    def early_third_card(self, table: Table, hand: Hand) -> bool:
        """EARLY_THIRD_CARD ((g)3; 13:69F-6.7): a third card exposed before "Raises closed".

        The protocol as recorded: the exposed card (CardDrawn face up to the middle box); a
        VoidOrPlayChosen per wager; the voiders' wagers and raises returned (WagerSettled VOID);
        "Raises closed"; the new third card; its value; the players' settlements. Half the
        injections follow it (EARLY_THIRD_CARD only); the rest break it one way (also
        EARLY_EXPOSURE_MISHANDLED): the exposed card is used, a player is offered no choice,
        a voider is refunded only after the new third card, or "elsewhere" (see
        _exposed_elsewhere). Returns True when it dealt the round's third card.
        """
        if not (self.enabled and self.roll("EARLY_THIRD_CARD")):
            return False
        keys = sorted(hand.wagers)
        ways: tuple[str, ...] = (
            ("proper", "proper", "proper", "used", "no_choice", "late_refund") if keys
            else ("proper", "used"))
        # "elsewhere" settles on the card after the exposed one: not at an illegal paytable
        # (its payouts are BELOW_MINIMUM_ODDS's), nor with the cutting card near.
        if not self.illegal_paytable and not self.cut_card_this_round \
                and len(table.shoe) > table.cut_behind + 3:
            ways += ("elsewhere",)
        way = self.rng.choice(ways)
        self.label("EARLY_THIRD_CARD", table, way)
        if way != "proper":
            self.label("EARLY_EXPOSURE_MISHANDLED", table, way)
        if way == "elsewhere":
            self._exposed_elsewhere(table, hand)
            return True
        exposed = table.deal(Box.MIDDLE, hand)
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
            table.emit(model.VoidOrPlayChosen(seat=key[0], area=key[1], choice=choice), gap=1)
        if way != "late_refund":
            self._refund(table, hand, voiders)
        table.announce(Meaning.RAISES_CLOSED)
        hand.third = third = table.deal(Box.MIDDLE, hand)
        table.announce(Meaning.THIRD_CARD, third.rank)
        if way == "late_refund":
            self._refund(table, hand, voiders)
        return True

    def _exposed_elsewhere(self, table: Table, hand: Hand) -> None:
        """A spread round with no "Raises closed" at all: the third card out goes to any box or
        the discard rack, no choice is offered, and the dealer deals the next card to the middle
        box, announces it and settles on it. Nothing discarded the exposed card ((g)3 discards
        it only in favour of a card dealt after "Raises closed"), so it decides wherever it went
        (sql/cards.sql deciding_index): EARLY_THIRD_CARD, EARLY_EXPOSURE_MISHANDLED (it was used),
        THIRD_CARD_REDRAWN for the card after it (the exposed card in the middle box) or
        THIRD_CARD_DIVERTED (elsewhere), and WRONG_SETTLEMENT when a wager settled on the card
        after it is decided otherwise by the exposed card."""
        assert hand.left is not None and hand.right is not None
        box = self.rng.choice((Box.MIDDLE, Box.DISCARD_RACK, Box.LEFT, Box.RIGHT))
        exposed = table.deal(box, hand)
        hand.third = dealt = table.deal(Box.MIDDLE, hand)
        table.announce(Meaning.THIRD_CARD, dealt.rank)
        self.label("THIRD_CARD_REDRAWN" if box is Box.MIDDLE else "THIRD_CARD_DIVERTED", table,
                   f"{exposed} to {box.value.lower()} before raises closed, then {dealt}")
        left, right = hand.left.rank, hand.right.rank
        decided = rules.settle_wager(table.paytable, left, right, exposed.rank, 100)
        settled = rules.settle_wager(table.paytable, left, right, dealt.rank, 100)
        if decided != settled and (hand.wagers or hand.raises):
            self.label("WRONG_SETTLEMENT", table, f"settled on {dealt}, not {exposed}")

    def _refund(self, table: Table, hand: Hand, voiders: list[tuple[int, int]]) -> None:
        for key in voiders:
            for kind, cents in ((WagerKind.ORIGINAL, hand.wagers[key]),
                                (WagerKind.RAISE, hand.raises.get(key))):
                if cents:
                    table.emit(model.WagerSettled(
                        seat=key[0], area=key[1], wager_kind=kind, outcome=SettledAs.VOID,
                        amount_cents=cents), gap=0.8)
            hand.settled.add(key)

    def raises_closed(self, table: Table, hand: Hand) -> None:
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

    def third_card_announced(self, table: Table, hand: Hand) -> None:
        if self._late_raise is not None:
            key, self._late_raise = self._late_raise, None
            self._raise(table, hand, key, hand.wagers[key])

    def settlement(self, table: Table, hand: Hand, amount: int, outcome: SettledAs,
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
                made = ((outcome, amount * (odds + 1), odds + 1) if over
                        else (outcome, value // 2, odds))
                self.label("WRONG_PAYOUT", table, "over" if over else "under")
        if not self._settle_rolled:
            self._settle_rolled = True
            if self.roll("WRONG_SETTLEMENT"):  # (d)7, 10, 14
                made = self._wrong_settlement(table, hand, amount, outcome)
        if made is not None and made[0] is SettledAs.WON and outcome is SettledAs.WON \
                and self.illegal_paytable and odds is not None and made[1] == amount * odds \
                and _illegal_odds(table, hand, odds):
            self.label("BELOW_MINIMUM_ODDS", table, "paid at the illegal line")
        return made

    def _wrong_settlement(self, table: Table, hand: Hand, amount: int,
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



def free_seats(table: Table, hand: Hand) -> list[int]:
    """Seats whose betting area holds no wager in this round."""
    used = {area for _, area in hand.wagers} | {area for _, area in hand.raises}
    return [s for s in table.players if s not in used]


def _illegal_odds(table: Table, hand: Hand, odds: int) -> bool:
    """Whether a win paid at `odds` is below the standard table's (13:47-20.31(e), (d)9), or a
    casino night's three of a kind at other than 11 to 1 ((d)9)."""
    assert hand.left is not None and hand.right is not None
    c = rules.classify(hand.left.rank, hand.right.rank)
    std = rules.STANDARD_PAYTABLE
    if c.spread is None and table.profile == rules.Profile.NJ_CASINO_NIGHT:
        return odds != std.three_of_a_kind
    return odds < (std.three_of_a_kind if c.spread is None else rules.spread_odds(std, c.spread))

"""Events where the rules allow none, injected by the simulator: a card burned inside a round, a
card dealt with no round (and never racked), a round voided after its deciding card without cause.

Mixed into `Irregularities` (events/simulation/irregularities.py), which provides the random
stream, the state and the ground-truth labels. Every method returns at once, drawing nothing, when
injection is off; each labels exactly the anomaly codes its injection must raise.
"""

from __future__ import annotations

from events.reddog import model, rules
from events.reddog.model import Box, BurnReason, Card
from events.simulation.irregular_hands import RoundStopped, Slips
from events.simulation.table import Hand, Table


class PlaceSlips(Slips):
    """The out-of-place injections; mixed into `Irregularities`, which provides the state."""

    def _return_all(self, table: Table, hand: Hand) -> None:
        raise NotImplementedError  # irregular_hands.HandSlips

    def _quiet_round(self, table: Table) -> bool:
        """No cutting card near (its round is the cutting card's), a legal paytable (its payouts
        are BELOW_MINIMUM_ODDS's)."""
        return not (self.illegal_paytable or self.cut_card_this_round
                    or len(table.shoe) <= table.cut_behind + 3)

    def card_out_of_place(self, table: Table, hand: Hand) -> None:
        """After "Raises closed", the next card leaves the shoe where the rules allow none:
        BURN_DURING_ROUND (13:47-20.31(d)1; 13:69F-6.4: burns come at a new deck or a new
        dealer, before a round), the dealer burns it face down; or CARD_OUTSIDE_ROUND, it is
        drawn to the discard rack and recorded with no round. The card after it then decides.
        Offered only when the two cards would settle the round alike (both between the first
        two, or both not), so the card taken changes no wager whichever card is read as the
        third: the label is the misplaced card alone."""
        if not self.enabled or len(table.shoe) < 2 or not self._quiet_round(table):
            return
        assert hand.left is not None and hand.right is not None
        low, high = sorted((hand.left.rank, hand.right.rank))

        def wins(card: Card) -> bool:
            return low < card.rank < high

        if wins(table.shoe[-1]) != wins(table.shoe[-2]):
            return
        if self.roll("BURN_DURING_ROUND"):
            card = table.draw()
            table.emit(model.CardBurned(rank=card.rank, suit=card.suit, reason=BurnReason.OTHER))
            self.label("BURN_DURING_ROUND", table, f"{card} burned after raises closed")
        elif self.roll("CARD_OUTSIDE_ROUND"):
            card = table.draw()
            round_no, table.round_no = table.round_no, None
            table.emit(model.CardDrawn(rank=card.rank, suit=card.suit, face_up=True,
                                       destination=Box.DISCARD_RACK), gap=1)
            table.round_no = round_no
            self.label("CARD_OUTSIDE_ROUND", table, f"{card} drawn with no round")
            # 13:47-20.31(d)15: no rack holds it, and every shoe is closed before the evening
            # ends, so it is also a card that never reached the rack (no round).
            self.label("CARD_UNACCOUNTED", table, f"{card} never racked", round_no=None)

    def round_decided(self, table: Table, hand: Hand) -> None:
        """ROUND_VOIDED_WITHOUT_CAUSE: the deciding third card loses, and the dealer voids the
        round (no shoe fault, no tie hand) and returns every wager and raise instead of
        collecting them: each is also WRONG_SETTLEMENT (the ledger judges the third card,
        13:47-20.31(d)14)."""
        if not self.enabled or not (hand.wagers or hand.raises) or hand.settled \
                or not self._quiet_round(table):
            return
        assert hand.left is not None and hand.right is not None and hand.third is not None
        expected = rules.settle_wager(table.paytable, hand.left.rank, hand.right.rank,
                                      hand.third.rank, 100)
        if expected.outcome is not rules.SettledAs.LOST \
                or not self.roll("ROUND_VOIDED_WITHOUT_CAUSE"):
            return
        table.emit(model.RoundVoided(reason="dealer's call"))
        self._return_all(table, hand)
        self.label("ROUND_VOIDED_WITHOUT_CAUSE", table, f"voided after {hand.third}")
        self.label("WRONG_SETTLEMENT", table, "losing wagers returned")
        raise RoundStopped

"""The dealer's slips with the cards themselves, injected by the simulator (issue 13): a card
redrawn to the middle box after the deciding third card, the deciding third card put in the
discard rack or on a side box and a winner dealt to the middle box, a spread settled with no
third card, a raise before the first two cards, the first two cards to the wrong boxes (swapped,
stacked, or the second racked between), a card drawn in error and not used, a burnt card
disclosed wrong, a casino-night shoe of two decks.

Mixed into `Irregularities` (events/simulation/irregularities.py), which provides the random
stream, the state and the ground-truth labels. Every method returns at once, drawing nothing, when
injection is off; each labels exactly the anomaly codes its injection must raise.
"""

from __future__ import annotations

from events.reddog import model, rules
from events.reddog.model import Box, Card, Meaning, Suit
from events.simulation.irregular_hands import Slips
from events.simulation.table import Hand, Table

_ALL_CARDS = tuple(Card(r, s) for r in range(2, 15) for s in Suit)


class CardSlips(Slips):
    """The card-level injections; mixed into `Irregularities`, which provides the state."""

    _rack_second: bool  # WRONG_BOX racked between: the second card goes to the rack

    # --- the shoe --------------------------------------------------------------------------------

    def shoe_decks(self, table: Table, decks: int) -> int:
        """TOO_MANY_DECKS (13:47-20.31(a)2: "A deck of cards"): a casino-night shoe of two."""
        if not self.enabled or table.profile != rules.Profile.NJ_CASINO_NIGHT \
                or not self.chance("TOO_MANY_DECKS"):
            return decks
        self.label("TOO_MANY_DECKS", table, "two decks", round_no=None)
        return 2

    def burn_disclosure(self, table: Table, burnt: Card) -> None:
        """BURN_MISDISCLOSED ((d)1): a player asks for the burnt card; half the time it is shown
        as it was (unlabelled), half the time another card is named (labelled)."""
        if not (self.enabled and self.chance("BURN_MISDISCLOSED")):
            return
        shown = burnt
        if self.rng.random() < 0.5:
            shown = self.rng.choice([c for c in _ALL_CARDS if c != burnt])
            self.label("BURN_MISDISCLOSED", table, f"{burnt} shown as {shown}", round_no=None)
        seat = self.rng.choice(sorted(table.players))
        table.emit(model.BurnDisclosed(rank=shown.rank, suit=shown.suit, requested_by_seat=seat),
                   gap=2)

    # --- the first two cards ---------------------------------------------------------------------

    def first_boxes(self, table: Table) -> tuple[Box, Box]:
        """WRONG_BOX ((d)5; GA (3)), one of three slips, each labelled with exactly what the views
        raise (the first two cards out make the round wherever they went, sql/macros.sql):
        - swapped: the first card to the right box, the second to the left (WRONG_BOX);
        - stacked: both on one side box, the second on top of the first; the dealer plays the
          round on those two, so the spread does not change (WRONG_BOX alone);
        - racked between: the second card to the discard rack and the next to the right box, in
          a round whose first two out are consecutive, and the first with the card on the right
          too; the dealer calls the tie and returns the wagers, which is right for the round the
          views read (the first two out), but the card on the right came out after a tie hand
          (WRONG_BOX and THIRD_CARD_ON_CONSECUTIVE, 13:47-20.31(d)7). Offered when two such cards
          are left in the shoe, moved up, and not near the cutting card."""
        if not (self.enabled and self.roll("WRONG_BOX")):
            return Box.LEFT, Box.RIGHT
        way = self.rng.choice(("swapped", "stacked", "racked"))
        if way == "racked" and self._neighbours_up(table):
            self._rack_second = True
            self.label("WRONG_BOX", table, "second card racked between")
            self.label("THIRD_CARD_ON_CONSECUTIVE", table, "the card on the right after the tie")
            return Box.LEFT, Box.RIGHT
        if way == "swapped":
            self.label("WRONG_BOX", table, "swapped")
            return Box.RIGHT, Box.LEFT
        side = self.rng.choice((Box.LEFT, Box.RIGHT))
        self.label("WRONG_BOX", table, f"stacked on the {side.value.lower()} box")
        return side, side

    def _neighbours_up(self, table: Table) -> bool:
        """Move two cards consecutive to the next card (the first of the round) to come right
        after it; False (nothing moved) when the shoe holds no two, or the cutting card is near."""
        if len(table.shoe) <= table.cut_behind + 4:
            return False
        first = table.shoe[-1].rank
        near = [i for i in range(len(table.shoe) - 1) if abs(table.shoe[i].rank - first) == 1]
        if len(near) < 2:
            return False
        # table.shoe deals from its end: after the first card, shoe[-2] then shoe[-3].
        for slot, i in ((-2, near[-1]), (-3, near[-2])):
            table.shoe[i], table.shoe[slot] = table.shoe[slot], table.shoe[i]
        return True

    def before_second_card(self, table: Table, hand: Hand) -> None:
        """The second card racked between the first two (first_boxes): it goes to the discard
        rack, and the caller deals the next card to the right box. Or EARLY_RAISE ((d)12): a
        player raises before the second card, in a round that the second card (the next in the
        shoe) makes a spread."""
        if self._rack_second:
            self._rack_second = False
            table.deal(Box.DISCARD_RACK, hand)
            return
        if not self.enabled or not hand.wagers or not table.shoe:
            return
        first, second = hand.dealt[0], table.shoe[-1]
        if rules.classify(first.rank, second.rank).kind is not rules.HandKind.SPREAD \
                or not self.roll("EARLY_RAISE"):
            return
        key = self.rng.choice(sorted(hand.wagers))
        cents = hand.wagers[key]  # within (d)12's limit: only the timing is wrong
        table.emit(model.RaisePlaced(seat=key[0], area=key[1], amount_cents=cents), gap=1)
        hand.raises[key] = cents
        self.label("EARLY_RAISE", table, f"seat {key[0]}")

    # --- a card drawn in error -------------------------------------------------------------------

    def card_in_error(self, table: Table, hand: Hand) -> None:
        """DRAWN_IN_ERROR_NOT_USED ((g)2; 13:69F-6.7(b)): the next card is drawn in error. Half
        the time it is used as the next card, as the rule says (unlabelled: the caller deals
        it); half the time, at the deal of a pair's or a spread's third card, it is put aside,
        racked with the round's cards, and the card after it is dealt, announced and settled
        instead (labelled). The card drawn in error is the third card all the same ((g)2: "used
        as though it were the next card"; sql/macros.sql round_cards), so where it decides otherwise
        than the card dealt every wager settled on that card is also WRONG_SETTLEMENT. Not for
        the first two cards (the card drawn in error would be one of them, and every later card
        shift one place: WRONG_BOX, the announcements, ...), nor at an illegal paytable (its
        payouts are BELOW_MINIMUM_ODDS's)."""
        if not self.enabled or len(table.shoe) < 2 or not self.roll("DRAWN_IN_ERROR_NOT_USED"):
            return
        top = table.shoe[-1]
        table.emit(model.CardDrawnInError(rank=top.rank, suit=top.suit), gap=0.5)
        if self.rng.random() < 0.5 or top == table.shoe[-2] or hand.left is None \
                or hand.right is None or self.illegal_paytable:
            return  # used: the caller deals it next (the same card twice looks used)
        table.draw()
        hand.dealt.append(top)  # it left the shoe: it goes to the rack in dealing order
        if len(table.shoe) == table.cut_behind:
            table.emit(model.CuttingCardReached(), gap=0.3)
            self.cut_card_out = self.cut_card_this_round = True
        self.label("DRAWN_IN_ERROR_NOT_USED", table, f"{top} not used")
        left, right = hand.left.rank, hand.right.rank
        decided = rules.settle_wager(table.paytable, left, right, top.rank, 100)
        dealt = rules.settle_wager(table.paytable, left, right, table.shoe[-1].rank, 100)
        if decided != dealt and (hand.wagers or hand.raises):
            self.label("WRONG_SETTLEMENT", table, f"settled on the card after {top}")

    # --- the third card --------------------------------------------------------------------------

    def skip_third_card(self, table: Table, hand: Hand) -> bool:
        """SPREAD_WITHOUT_THIRD_CARD ((d)13-14): after "Raises closed" no third card is drawn and
        the wagers are returned. Not with the cutting card out in this round (that is
        ROUND_ABANDONED_AT_CUT_CARD's), nor without a wager to settle."""
        if not self.enabled or not hand.wagers or self.cut_card_this_round \
                or not self.roll("SPREAD_WITHOUT_THIRD_CARD"):
            return False
        self.label("SPREAD_WITHOUT_THIRD_CARD", table)
        return True

    def third_card_diverted(self, table: Table, hand: Hand) -> None:
        """THIRD_CARD_DIVERTED ((d)8, (d)13; GA (6), (11)): the dealer draws the third card, sees
        it lose, and puts it in the discard rack (half the time) or on a side box instead of the
        middle box; then a winner goes to the middle box and the caller announces and pays it.
        The diverted card decides (sql/cards.sql, deciding_index), so every wager paid on the winner
        is also WRONG_SETTLEMENT. Offered when the next card loses (a spread: not between; a
        pair: another rank) and a winner lies further in the shoe, which is moved up to be the
        card after it; never with the cutting card near (its round would be the cut card's),
        nor at an illegal paytable (its payouts are BELOW_MINIMUM_ODDS's)."""
        if not self.enabled or self.busy or self.illegal_paytable or self.cut_card_this_round \
                or len(table.shoe) <= table.cut_behind + 2:
            return
        assert hand.left is not None and hand.right is not None
        left, right = hand.left.rank, hand.right.rank
        pair = left == right

        def wins(card: Card) -> bool:
            return card.rank == left if pair else min(left, right) < card.rank < max(left, right)

        # table.shoe deals from its end: the next card is shoe[-1].
        winners = [i for i in range(len(table.shoe) - 1) if wins(table.shoe[i])]
        if wins(table.shoe[-1]) or not winners or not self.roll("THIRD_CARD_DIVERTED"):
            return
        i = winners[-1]  # the nearest winner, moved up to come right after the loser
        table.shoe[i], table.shoe[-2] = table.shoe[-2], table.shoe[i]
        box = Box.DISCARD_RACK if self.rng.random() < 0.5 else self.rng.choice((Box.LEFT,
                                                                                Box.RIGHT))
        loser = table.deal(box, hand)  # in hand.dealt: racked in dealing order
        self.label("THIRD_CARD_DIVERTED", table, f"{loser} to {box.value.lower()}")
        if hand.wagers or hand.raises:
            self.label("WRONG_SETTLEMENT", table, "paid on the card after the diverted one")

    def third_card_dealt(self, table: Table, hand: Hand) -> None:
        """THIRD_CARD_REDRAWN ((d)10, (d)13-14): after the deciding third card the dealer draws
        another to the middle box, announces it, and settles on it. Where that changes any
        wager's decision it is also WRONG_SETTLEMENT (the ledger judges the deciding card).
        Not at a table whose paytable is illegal (its payouts are BELOW_MINIMUM_ODDS's)."""
        if not self.enabled or self.illegal_paytable or len(table.shoe) < 2 \
                or not self.roll("THIRD_CARD_REDRAWN"):
            return
        assert hand.left is not None and hand.right is not None and hand.third is not None
        decided = hand.third
        hand.third = redrawn = table.deal(Box.MIDDLE, hand)
        left = hand.left.rank
        if rules.classify(left, hand.right.rank).kind is rules.HandKind.PAIR:
            table.announce(Meaning.THREE_OF_A_KIND if redrawn.rank == left
                           else Meaning.NO_THREE_OF_A_KIND)
        else:
            table.announce(Meaning.THIRD_CARD, redrawn.rank)
        self.label("THIRD_CARD_REDRAWN", table, f"{decided} then {redrawn}")
        before = rules.settle_wager(table.paytable, left, hand.right.rank, decided.rank, 100)
        after = rules.settle_wager(table.paytable, left, hand.right.rank, redrawn.rank, 100)
        owed = [k for k in (*hand.wagers, *hand.raises) if k not in hand.settled]
        if before != after and owed:
            self.label("WRONG_SETTLEMENT", table, "settled on the redrawn card")

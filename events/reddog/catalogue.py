"""The anomaly catalogue: every code pitlog can flag, with its severity, the rule it cites, what
it flags, and whether the simulator injects it. This is its one definition: the `anomaly_codes`
view is generated from it (projections/reddog_macros.py), list_anomalies, the console and the
CLI take their severities from it, and the simulator its injectable codes.

Adding a code: one entry here, its SELECT in projections/sql/anomalies_*.sql and its section in
docs/anomalies.md (tests/projections/test_catalogue.py fails until all three agree).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class Severity(StrEnum):
    """In rising order: a filter `--severity medium` keeps medium and high."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        """1 for low, 2 for medium, 3 for high (the view's severity_rank)."""
        return list(Severity).index(self) + 1


SEVERITIES: Final = tuple(s.value for s in Severity)
LOW, MEDIUM, HIGH = Severity.LOW, Severity.MEDIUM, Severity.HIGH


@dataclass(frozen=True, slots=True)
class AnomalyCode:
    """One row of the catalogue. `rule` cites the clause (13:47-20.31 written out, GA for the
    gaming authority's rules); `flagged` says what is flagged, for the anomaly_codes view and
    `pitlog anomalies --help`. A statistical code is computed in Python
    (projections/statistics.py), never injected: it is a judgement over many rounds."""

    code: str
    severity: Severity
    rule: str
    flagged: str
    injectable: bool = True
    statistical: bool = False


def _stat(code: str, rule: str, flagged: str) -> AnomalyCode:
    return AnomalyCode(code, LOW, rule, flagged, injectable=False, statistical=True)


# The order is the simulator's (its error message lists INJECTABLE in this order).
CATALOGUE: Final[tuple[AnomalyCode, ...]] = (
    AnomalyCode("EARLY_THIRD_CARD", MEDIUM, "13:47-20.31(g)3; 13:69F-6.7",
                'a third card exposed before "Raises closed"'),
    AnomalyCode("EARLY_EXPOSURE_MISHANDLED", HIGH, "13:47-20.31(g)3; 13:69F-6.7",
                "after an early exposure: the exposed card used, no void-or-play choice "
                "offered, or a voiding player not refunded the wager and raise before the new "
                "third card"),
    AnomalyCode("LATE_WAGER", HIGH, "13:47-20.31(d)3; GA (1)",
                "wager placed after the first card left the shoe"),
    AnomalyCode("WAGER_ALTERED", HIGH, "13:47-20.31(d)6; GA (4)",
                "wager changed or removed after the first card, before its decision"),
    AnomalyCode("RAISE_OVER_LIMIT", MEDIUM, "13:47-20.31(d)12",
                "raise larger than the original wager"),
    AnomalyCode("RAISE_NOT_ALLOWED", MEDIUM, "13:47-20.31(d)12",
                "raise on a consecutive or pair round, or with no original wager"),
    AnomalyCode("LATE_RAISE", HIGH, "13:47-20.31(d)12-13; GA (11)",
                'raise after "Raises closed" or after the third card was dealt'),
    AnomalyCode("WRONG_PAYOUT", HIGH, "13:47-20.31(e); GA (11)(b)",
                "a winner paid at other than the table's paytable, under or over"),
    AnomalyCode("BELOW_MINIMUM_ODDS", HIGH, "13:47-20.31(d)9, (e)-(f); GA (11)(c)",
                "a paytable or payout below the jurisdiction's minimum (at a casino night, "
                "three of a kind at other than 11 to 1)"),
    AnomalyCode("WRONG_SETTLEMENT", HIGH, "13:47-20.31(d)7, 10, 14",
                "a winner collected, a loser paid, or a void/tie not returned"),
    AnomalyCode("WRONG_ANNOUNCEMENT", LOW, "13:47-20.31(d)7-11, 13",
                "an announcement missing or contradicting the cards"),
    AnomalyCode("THIRD_CARD_ON_CONSECUTIVE", MEDIUM, "13:47-20.31(d)7",
                "a third card drawn in a consecutive round"),
    AnomalyCode("PAIR_WITHOUT_THIRD_CARD", MEDIUM, "13:47-20.31(d)8",
                "a pair not followed at once by the third card"),
    AnomalyCode("MISSING_BURN", MEDIUM, "13:47-20.31(d)1; 13:69F-6.4, 6.9",
                "no burn after a new shoe or a dealer change (none owed at an nj-casino table "
                "dealing from an automatic reshuffling shoe)"),
    AnomalyCode("FACE_UP_CARD_USED", HIGH, "13:47-20.31(g)1",
                "a card found face up in the shoe played instead of discarded"),
    AnomalyCode("NO_RESHUFFLE_AFTER_CUT_CARD", MEDIUM, "13:47-20.31(d)16; GA (13)",
                "a new round dealt after the cutting card was reached"),
    AnomalyCode("ROUND_ABANDONED_AT_CUT_CARD", MEDIUM, "13:47-20.31(d)16",
                "the round stopped at the cutting card instead of completed"),
    AnomalyCode("DISCARD_RACK_ORDER", MEDIUM, "13:47-20.31(d)15; GA (12)",
                "cards racked out of dealing order, or missing from the rack"),
    AnomalyCode("CARD_UNACCOUNTED", HIGH, "13:47-20.31(d)15",
                "a card that left the shoe never reached the rack (a round's card missing from "
                "its rack, or a card dealt with no round not racked before its shoe closed)"),
    AnomalyCode("EXTRA_CARD", HIGH, "13:47-20.31(a)2",
                "more copies of a card than the shoe's decks hold (a card introduced)"),
    AnomalyCode("MULTIPLE_BETTING_AREAS", MEDIUM, "13:47-20.31(g)4; 13:69F-6.8",
                "one player on more than one area without permission"),
    AnomalyCode("CALL_BET", MEDIUM, "13:47-20.31(d)4; 13:69F-6.5(b); GA (2)",
                "a verbal wager (call bet): every profile wants wagers placed on the layout"),
    AnomalyCode("DEVICE_FAULT_NOT_VOIDED", HIGH, "13:69F-34.16(m)-(n) by analogy",
                "a shuffler or shoe fault not followed by void and reshuffle"),
    AnomalyCode("SEQUENCE_GAP", HIGH, "integrity",
                "a missing sequence number in a table stream (an event lost or deleted)"),
    AnomalyCode("CHAIN_BROKEN", HIGH, "integrity",
                "a hash link that does not verify (an event altered)"),
    AnomalyCode("DUPLICATE_EVENT", HIGH, "integrity",
                "an event id recorded more than once in a table stream (one event counted "
                "twice)"),
    # the checkable clauses of the seeds (events/simulation/irregular_cards.py and below)
    AnomalyCode("MATCH_PLAY_NOT_ALLOWED", MEDIUM, "GA (2)",
                "a match play coupon at a table that takes chips and plaques only"),
    AnomalyCode("TOO_MANY_DECKS", MEDIUM, "13:47-20.31(a)2",
                "a shoe of more than one deck at a casino-night table"),
    AnomalyCode("THIRD_CARD_REDRAWN", HIGH, "13:47-20.31(d)10, (d)13-14; GA (8), (11)",
                "a card drawn from the shoe (to any box) after the third card that decided the "
                "round"),
    AnomalyCode("SPREAD_WITHOUT_THIRD_CARD", HIGH, "13:47-20.31(d)13-14; GA (11)",
                "a spread round settled with no third card, or before it"),
    AnomalyCode("EARLY_RAISE", MEDIUM, "13:47-20.31(d)12",
                "a raise placed before the first two cards were dealt"),
    AnomalyCode("WRONG_BOX", MEDIUM, "13:47-20.31(d)5; GA (3)",
                "the first card dealt to other than the left box, or the second to other than "
                "the right"),
    AnomalyCode("BURN_MISDISCLOSED", HIGH, "13:47-20.31(d)1; 13:69F-6.4",
                "a burnt card disclosed that is not the card burnt"),
    AnomalyCode("DRAWN_IN_ERROR_NOT_USED", HIGH, "13:47-20.31(g)2; 13:69F-6.7",
                "a card drawn in error not used as the next card"),
    AnomalyCode("THIRD_CARD_DIVERTED", HIGH, "13:47-20.31(d)8, (d)13; GA (6), (11)",
                "the deciding third card put in the discard rack or on a side box instead of "
                "the middle box"),
    AnomalyCode("BURN_DURING_ROUND", HIGH, "13:47-20.31(d)1; 13:69F-6.4",
                "a card burned inside a round, between its first card and its end: burns come "
                "only after a new deck is loaded or a new dealer arrives, before a round"),
    AnomalyCode("CARD_OUTSIDE_ROUND", HIGH, "13:47-20.31(d)5, (d)15; GA (3), (12)",
                "a card dealt with no round or round 0, or a card dealt or found face up from a "
                "shoe not loaded (or closed), or for a round already concluded"),
    AnomalyCode("ROUND_VOIDED_WITHOUT_CAUSE", HIGH,
                "13:47-20.31(d)7, (d)10, (d)13-14; 13:69F-34.16(n) by analogy",
                "a round voided though no rule voids it, before its deciding third card or "
                "after: no dealing-shoe fault before the void and no tie hand"),
    _stat("HOLD_VARIANCE",
          "statistical reports in the style of the minimum internal control standards",
          "hold for a table, shift or day outside statistical bounds of theoretical"),
    _stat("OUTCOME_FREQUENCY", "deck-integrity statistics",
          "pairs, trips or spreads off their combinatorial frequencies (chi-square)"),
)

BY_CODE: Final[dict[str, AnomalyCode]] = {c.code: c for c in CATALOGUE}
INJECTABLE: Final = tuple(c.code for c in CATALOGUE if c.injectable)
STATISTICAL: Final = tuple(c.code for c in CATALOGUE if c.statistical)

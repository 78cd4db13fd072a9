"""The event catalogue: what can happen at a red dog table, named in the past tense.

Domain events carry only what happened. Where and when it happened, who did it, and its place
in the table's hash chain live in the `Envelope` the recorder wraps around it. The Avro schemas
in schemas/ flatten the two into one record per event type (envelope fields, then the payload,
then `hash` last, so that the hash is the last 32 bytes of the message).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

# SettledAs is the rules' decision on a wager, recorded as it is (one definition, in rules.py).
from events.reddog.rules import RANK_NAMES, STANDARD_PAYTABLE, SettledAs


class Suit(StrEnum):
    """Suits identify a card; they never decide an outcome (13:47-20.31(a)2)."""

    SPADES = "S"
    HEARTS = "H"
    DIAMONDS = "D"
    CLUBS = "C"


class Box(StrEnum):
    """Where a card removed from the shoe was placed (13:47-20.31(d)5, (d)8, (d)13)."""

    LEFT = "LEFT"
    RIGHT = "RIGHT"
    MIDDLE = "MIDDLE"
    DISCARD_RACK = "DISCARD_RACK"


class ShuffleMethod(StrEnum):
    """13:69F-6.3 hand shuffle or shuffler; 13:69F-6.9 automatic reshuffling shoe;
    13:69E-1.18(r) pre-shuffled decks."""

    HAND = "HAND"
    AUTOMATIC_SHUFFLER = "AUTOMATIC_SHUFFLER"
    CONTINUOUS_SHUFFLER = "CONTINUOUS_SHUFFLER"
    PRESHUFFLED = "PRESHUFFLED"


class BurnReason(StrEnum):
    """13:47-20.31(d)1: a burn after each full deck is placed in the shoe, and one for each new
    dealer."""

    NEW_SHOE = "NEW_SHOE"
    NEW_DEALER = "NEW_DEALER"
    OTHER = "OTHER"


class Fault(StrEnum):
    """13:69F-34.16(m)-(n), applied to red dog by analogy."""

    SHUFFLER_JAM = "SHUFFLER_JAM"
    SHOE_JAM = "SHOE_JAM"


class Meaning(StrEnum):
    """The structured meaning of a dealer's announcement (13:47-20.31(d)7-13)."""

    CONSECUTIVE = "CONSECUTIVE"
    PAIR = "PAIR"
    THREE_OF_A_KIND = "THREE_OF_A_KIND"
    NO_THREE_OF_A_KIND = "NO_THREE_OF_A_KIND"
    SPREAD = "SPREAD"
    RAISES_CLOSED = "RAISES_CLOSED"
    THIRD_CARD = "THIRD_CARD"


class Instrument(StrEnum):
    """13:69F-6.5(b): chips, plaques and match play coupons; GA (2): no call bets."""

    CHIPS = "CHIPS"
    PLAQUES = "PLAQUES"
    MATCH_PLAY_COUPON = "MATCH_PLAY_COUPON"
    CALL_BET = "CALL_BET"


class Choice(StrEnum):
    """13:47-20.31(g)3: after an early third card each player plays out the round or voids it."""

    VOID = "VOID"
    PLAY = "PLAY"


class WagerKind(StrEnum):
    ORIGINAL = "ORIGINAL"
    RAISE = "RAISE"


@dataclass(frozen=True, slots=True)
class Card:
    rank: int  # 2..10 face value, J=11, Q=12, K=13, A=14 (13:47-20.31(a)2ii)
    suit: Suit

    def __str__(self) -> str:
        return f"{RANK_NAMES.get(self.rank, str(self.rank))}{self.suit.value}"


# --- table and staff ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TableOpened:
    """The table's jurisdiction profile and paytable, in force until the next TableOpened."""

    profile: str  # nj-casino | nj-casino-night | gaming-authority
    # The standard table unless the casino posts another (events/reddog/rules.py).
    pays_spread_1: int = STANDARD_PAYTABLE.spread_1
    pays_spread_2: int = STANDARD_PAYTABLE.spread_2
    pays_spread_3: int = STANDARD_PAYTABLE.spread_3
    pays_spread_4_to_11: int = STANDARD_PAYTABLE.spread_4_to_11
    pays_three_of_a_kind: int = STANDARD_PAYTABLE.three_of_a_kind
    min_wager_cents: int = 500
    max_wager_cents: int = 100_000
    multiple_areas_permitted: bool = False
    board_approved: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class TableClosed:
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class DealerTappedIn:
    dealer_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DealerTappedOut:
    dealer_id: str


# --- shoe lifecycle ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShuffleStarted:
    method: ShuffleMethod
    device_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ShuffleCompleted:
    method: ShuffleMethod
    device_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CardsLoaded:
    """A new shoe: `decks` full decks placed in the shoe. The envelope's shoe_id names it."""

    decks: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CardsCut:
    position: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CuttingCardPlaced:
    cards_behind: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CardBurned:
    rank: int
    suit: Suit
    reason: BurnReason


@dataclass(frozen=True, slots=True, kw_only=True)
class BurnDisclosed:
    """13:47-20.31(d)1: the burnt card is disclosed if a player asks."""

    rank: int
    suit: Suit
    requested_by_seat: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CuttingCardReached:
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeClosed:
    cards_remaining: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceFaulted:
    device_id: str
    fault: Fault
    detail: str = ""


# --- cards -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CardDrawn:
    """A card removed from the shoe, and where it went."""

    rank: int
    suit: Suit
    face_up: bool
    destination: Box
    # Added in schemas/CardDrawn.v2.avsc: the card's position in the shoe as counted by a
    # card-reading shoe. None when not reported, which is also what v1 events decode to.
    shoe_position: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CardFoundFaceUp:
    """13:47-20.31(g)1: not used in the game; it goes to the discard rack."""

    rank: int
    suit: Suit


@dataclass(frozen=True, slots=True, kw_only=True)
class CardDrawnInError:
    """13:47-20.31(g)2: drawn unexposed; used as though it were the next card."""

    rank: int
    suit: Suit


@dataclass(frozen=True, slots=True, kw_only=True)
class CardsRacked:
    """The cards placed in the discard rack, in the order the dealer actually racked them."""

    cards: tuple[Card, ...]


# --- announcements -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Announced:
    phrase: str
    meaning: Meaning
    value: int | None = None  # the spread for SPREAD, the rank for THIRD_CARD


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundVoided:
    """The whole round declared void, e.g. after a dealing-shoe jam (13:69F-34.16(n))."""

    reason: str


# --- money -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class WagerPlaced:
    seat: int
    area: int
    player_id: str
    amount_cents: int
    instrument: Instrument = Instrument.CHIPS


@dataclass(frozen=True, slots=True, kw_only=True)
class WagerChanged:
    seat: int
    area: int
    amount_cents: int  # the new amount


@dataclass(frozen=True, slots=True, kw_only=True)
class WagerRemoved:
    seat: int
    area: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RaisePlaced:
    seat: int
    area: int
    amount_cents: int


@dataclass(frozen=True, slots=True, kw_only=True)
class VoidOrPlayChosen:
    seat: int
    area: int
    choice: Choice


@dataclass(frozen=True, slots=True, kw_only=True)
class WagerSettled:
    seat: int
    area: int
    wager_kind: WagerKind
    outcome: SettledAs
    amount_cents: int  # paid if WON, collected if LOST, returned if VOID
    odds: int | None = None  # "X to 1" when WON


@dataclass(frozen=True, slots=True, kw_only=True)
class EventCorrected:
    """Corrections are new events that refer to old ones, never edits (docs/architecture.md,
    principle 2)."""

    corrects_seq: int
    reason: str


DomainEvent = (
    TableOpened
    | TableClosed
    | DealerTappedIn
    | DealerTappedOut
    | ShuffleStarted
    | ShuffleCompleted
    | CardsLoaded
    | CardsCut
    | CuttingCardPlaced
    | CardBurned
    | BurnDisclosed
    | CuttingCardReached
    | ShoeClosed
    | DeviceFaulted
    | CardDrawn
    | CardFoundFaceUp
    | CardDrawnInError
    | CardsRacked
    | Announced
    | RoundVoided
    | WagerPlaced
    | WagerChanged
    | WagerRemoved
    | RaisePlaced
    | VoidOrPlayChosen
    | WagerSettled
    | EventCorrected
)

EVENT_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        TableOpened,
        TableClosed,
        DealerTappedIn,
        DealerTappedOut,
        ShuffleStarted,
        ShuffleCompleted,
        CardsLoaded,
        CardsCut,
        CuttingCardPlaced,
        CardBurned,
        BurnDisclosed,
        CuttingCardReached,
        ShoeClosed,
        DeviceFaulted,
        CardDrawn,
        CardFoundFaceUp,
        CardDrawnInError,
        CardsRacked,
        Announced,
        RoundVoided,
        WagerPlaced,
        WagerChanged,
        WagerRemoved,
        RaisePlaced,
        VoidOrPlayChosen,
        WagerSettled,
        EventCorrected,
    )
}

GENESIS_HASH = bytes(32)  # prev_hash of a table's first event


@dataclass(frozen=True, slots=True, kw_only=True)
class Envelope:
    """One recorded event: the domain event plus where, when, who, and its chain link."""

    event_id: str
    table_id: str
    shoe_id: str | None
    round_no: int | None
    seq: int  # gapless per table, from 1
    occurred_at: datetime  # UTC, microseconds
    recorded_at: datetime
    actor: str  # dealer id or device id
    event: DomainEvent
    prev_hash: bytes = GENESIS_HASH
    hash: bytes = field(default=GENESIS_HASH)

    @property
    def event_type(self) -> str:
        return type(self.event).__name__

"""The values pitlog accepts: every one the read side can sum, convert and show.

One definition, checked by the Recorder (events/recording/recorder.py) before an event is stamped,
so `pitlog ingest`, `pitlog simulate` and any Python caller are held to the same bounds; ingest
quarantines a refused line with the reason and its line number. The projector checks the same
bounds on what it reads (projections/bounds.py), so a record written around the Recorder is
quarantined, not projected. Stated in docs/integrity.md,
"Confidentiality and input limits".

Why these bounds:
- Amounts in cents are 0..MAX_AMOUNT_CENTS. DuckDB sums BIGINT columns into a HUGEINT and the
  views cast totals back to BIGINT: at 2**62 cents a sum of two amounts is already out of range.
  With at most 10**12 cents ($10,000,000,000.00) per event, 9 million events at the maximum still
  sum inside BIGINT. An amount is never negative: a wager or raise is an amount placed on the
  layout (13:47-20.31(d)12), a settlement moves money the way its outcome says (paid if WON,
  (e); collected if LOST; returned if VOID); minimum and maximum wagers are amounts too.
- Payout odds ("X to 1") are 0..MAX_ODDS, so amount times odds stays inside BIGINT.
- Times are in [MIN_TIME, MAX_TIME): a time zone shift of year 1 or 9999 leaves Python's and
  DuckDB's date range, and no casino device speaks from before 2000.
- Strings are at most MAX_TEXT_CHARS characters (ids at most MAX_ID_CHARS), so one event stays
  small and a table cell stays readable.
- A device line's JSON nests at most MAX_JSON_DEPTH deep (a card list inside a line is 3).
- A shoe holds MIN_DECKS..MAX_DECKS decks (CardsLoaded.decks). The rules set the floor,
  13:69F-6.1(a): "Red dog shall be played with at least one deck of cards"; none given sets a
  ceiling (13:47-20.31(a)2's one deck at casino nights is judged, TOO_MANY_DECKS, not refused).
  The ceiling is what pitlog supports (simulate --decks and theo --decks take the same 1..8): the
  read side's exact probabilities are over N(N-1)(N-2) for N = 52 * decks cards, and a count of
  a million decks already overflows them (anomalies, reconcile and report failed), while a
  count below one has no card to deal (report refused it).
- Seats, betting areas and card positions are numbered as NUMBER_BOUNDS says, a round number is
  never negative (ROUND_BOUNDS), and an id (table, shoe, actor, player, dealer, device) is never
  empty or blank: a wager at seat 0 or a card at shoe position 0 is one no `pitlog dispute`
  could ask about, and a blank id names no one. `pitlog ingest` words them with a hint for the
  device (events/recording/device_line.py); the Recorder and the projector hold them too.
"""

from __future__ import annotations

import dataclasses
import typing
from datetime import UTC, datetime

from events.errors import EncodeError
from events.reddog import model, rules
from events.reddog.rules import MAX_DECKS, MIN_DECKS  # defined beside the rules (module doc)
from events.text import UNSAFE as _CONTROL
from events.text import visible
from events.wire import codec

MAX_AMOUNT_CENTS = 10**12
MAX_ODDS = 10_000
MIN_TIME = datetime(2000, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(2100, 1, 1, tzinfo=UTC)
MIN_TIME_US, MAX_TIME_US = codec.micros(MIN_TIME), codec.micros(MAX_TIME)  # the writers' clock
MAX_TEXT_CHARS = 1024
MAX_ID_CHARS = 128
MAX_JSON_DEPTH = 16

# Numbers no valid event holds (the read side could never place them): payload field ->
# (lowest, highest or None, why). Bounds the domain implies, never a game rule's: a cut at 0 (no
# cut at all) or a cutting card with no card behind it is recorded and judged.
_SHOE = f"at most {rules.MAX_SHOE_CARDS}: {rules.MAX_DECKS} decks of {rules.CARDS_PER_DECK}"
NUMBER_BOUNDS: dict[str, tuple[int, int | None, str]] = {
    # rules.FIRST_SEAT: a seat or area 0 was recorded, then no `pitlog dispute --seat` could
    # ask for it. No rule given sets a highest number (13:47-20.31(g)4 and 13:69F-6.8 say how
    # many areas a player may bet, not how many a layout has).
    "seat": (rules.FIRST_SEAT, None, f"seats are numbered from {rules.FIRST_SEAT}"),
    "area": (rules.FIRST_SEAT, None, f"betting areas are numbered from {rules.FIRST_SEAT}"),
    "requested_by_seat": (rules.FIRST_SEAT, None, f"seats are numbered from {rules.FIRST_SEAT}"),
    # schemas/CardDrawn.v2.avsc: "1 = first card dealt after the cut". No highest: an automatic
    # reshuffling shoe (13:69F-6.9) returns cards as it deals, so its count has no end.
    "shoe_position": (1, None, "the first card dealt after the cut is 1"),
    # Counts of the cards in one shoe: none is negative, and none exceeds the cards of the
    # largest shoe pitlog accepts (rules.MAX_SHOE_CARDS: MAX_DECKS decks of 52).
    "position": (0, rules.MAX_SHOE_CARDS, f"a cut is made among a shoe's cards, {_SHOE}"),
    "cards_behind": (0, rules.MAX_SHOE_CARDS, f"a count of a shoe's cards, {_SHOE}"),
    "cards_remaining": (0, rules.MAX_SHOE_CARDS, f"a count of a shoe's cards, {_SHOE}"),
    # EventCorrected names the event it corrects by its table's seq, and a table's seqs are
    # numbered from 1 (docs/integrity.md): a correction of seq 0 or below corrects nothing.
    "corrects_seq": (1, None, "a table's events are numbered from seq 1"),
}
# The envelope's round_no: from rules.MIN_ROUND_NO (round 0 is recorded and judged, a card
# outside any round), null is a shoe- or table-level event.
ROUND_BOUNDS: tuple[int, None, str] = (rules.MIN_ROUND_NO, None,
                                       "a round number is never negative")
# The payload's ids, by what each names: never empty or blank (a blank id names no one), as
# the envelope's table, shoe and actor ids (check_ids).
PAYLOAD_IDS: dict[str, str] = {"player_id": "player", "dealer_id": "dealer",
                               "device_id": "device"}

_ODDS_FIELDS = frozenset({"odds", "pays_spread_1", "pays_spread_2", "pays_spread_3",
                          "pays_spread_4_to_11", "pays_three_of_a_kind"})
_HINT = "docs/integrity.md (Confidentiality and input limits) states the accepted ranges"


class ValueLimitError(EncodeError):
    """A value outside what pitlog accepts (this module's bounds). `field` names it."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{reason}; {_HINT}")
        self.field, self.reason, self.hint = field, reason, _HINT


def check_amount(field: str, value: int) -> None:
    if not 0 <= value <= MAX_AMOUNT_CENTS:
        raise ValueLimitError(field, f"field '{field}' is {value} cents, outside 0.."
                                     f"{MAX_AMOUNT_CENTS} (an amount is never negative)")


def number_refusal(name: str, value: int, label: str | None = None) -> str | None:
    """Why `value` of the number `name` (a NUMBER_BOUNDS field, or "round_no") is outside its
    bounds, naming it `label` (default `name`); None when it is within them."""
    low, high, why = ROUND_BOUNDS if name == "round_no" else NUMBER_BOUNDS[name]
    if low <= value and (high is None or value <= high):
        return None
    bound = f"below {low}" if value < low else f"above {high}"
    return f"field '{label or name}' is {value}, {bound} ({why})"


def blank(text: str) -> bool:
    """An id that names no one: empty or only white space."""
    return not text.strip()


def check_time(field: str, value: datetime) -> None:
    if value.tzinfo is None:
        raise ValueLimitError(field, f"field '{field}' has no time zone")
    if not MIN_TIME <= value < MAX_TIME:
        raise ValueLimitError(field, f"field '{field}' is {value.isoformat()}, outside "
                                     f"{MIN_TIME:%Y-%m-%d} to {MAX_TIME:%Y-%m-%d} (UTC)")


def check_time_us(field: str, value: int) -> None:
    """check_time for a time in integer microseconds since the epoch (UTC)."""
    if not MIN_TIME_US <= value < MAX_TIME_US:
        check_time(field, codec.from_micros(value))


def check_text(field: str, value: str | None, limit: int = MAX_TEXT_CHARS) -> None:
    if value is not None and len(value) > limit:
        raise ValueLimitError(field, f"field '{field}' has {len(value)} characters, more than "
                                     f"{limit}")


# Per event type, once: the fields with a bound, as (name, kind). This runs for every event.
_PLANS: dict[type, tuple[tuple[str, str], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, str], ...]:
    hints = typing.get_type_hints(cls)
    plan = []
    for f in dataclasses.fields(cls):
        if f.name.endswith("_cents"):
            plan.append((f.name, "amount"))
        elif f.name in _ODDS_FIELDS:
            plan.append((f.name, "odds"))
        elif f.name == "decks":
            plan.append((f.name, "decks"))
        elif f.name in NUMBER_BOUNDS:
            plan.append((f.name, "number"))
        elif f.name in PAYLOAD_IDS:
            plan.append((f.name, "id"))
        elif str in (hints[f.name], *typing.get_args(hints[f.name])):
            plan.append((f.name, "text"))
    return tuple(plan)


def check_event(event: model.DomainEvent) -> None:
    """ValueLimitError unless every payload value of `event` is within bounds."""
    plan = _PLANS.get(type(event))
    if plan is None:
        plan = _PLANS[type(event)] = _plan(type(event))
    for name, kind in plan:
        value = getattr(event, name)
        if value is not None:
            check_field(name, kind, value)


def check_field(name: str, kind: str, value: typing.Any) -> None:
    """ValueLimitError unless `value` of the payload field `name`, of kind "amount", "odds",
    "decks", "number", "id" or "text" (_plan), is within bounds."""
    if kind == "amount":
        check_amount(name, value)
    elif kind == "odds":
        if not 0 <= value <= MAX_ODDS:
            raise ValueLimitError(name, f"field '{name}' is {value}, outside 0..{MAX_ODDS}")
    elif kind == "decks":
        if not MIN_DECKS <= value <= MAX_DECKS:
            raise ValueLimitError(name, f"field '{name}' is {value}, outside {MIN_DECKS}.."
                                        f"{MAX_DECKS}: send the number of full decks "
                                        f"placed in the shoe")
    elif kind == "number":
        low, high, _ = NUMBER_BOUNDS[name]
        if value < low or (high is not None and value > high):
            raise ValueLimitError(name, number_refusal(name, value) or "")
    else:
        check_text(name, value)
        if kind == "id" and blank(value):
            raise ValueLimitError(name, f"field '{name}' is empty")


def payload_bounds() -> dict[str, str]:
    """Every payload field with a bound, over all event types, as name -> kind: what the
    projector checks on what it reads (projections/bounds.py), by this module's checks."""
    return {name: kind for cls in model.EVENT_TYPES.values() for name, kind in _plan(cls)}


def check_envelope(table_id: str, shoe_id: str | None, actor: str, event_id: str | None,
                   occurred_at: datetime, recorded_at: datetime | None,
                   round_no: int | None = None) -> None:
    """ValueLimitError unless the envelope values a caller gives are within bounds."""
    check_ids(table_id, shoe_id, actor, event_id)
    check_round(round_no)
    check_time("at", occurred_at)
    if recorded_at is not None:
        check_time("recorded_at", recorded_at)


def check_envelope_us(table_id: str, shoe_id: str | None, actor: str, event_id: str | None,
                      occurred_us: int, recorded_us: int | None,
                      round_no: int | None = None) -> None:
    """check_envelope with the times in integer microseconds (the writers' hot path)."""
    check_ids(table_id, shoe_id, actor, event_id)
    if round_no is not None and round_no < rules.MIN_ROUND_NO:
        check_round(round_no)
    # The bounds tested here first, check_time_us called only for a time outside them (the
    # usual case costs no call: this runs for every simulated and ingested event).
    if not MIN_TIME_US <= occurred_us < MAX_TIME_US:
        check_time_us("at", occurred_us)
    if recorded_us is not None and not MIN_TIME_US <= recorded_us < MAX_TIME_US:
        check_time_us("recorded_at", recorded_us)


def check_event_id(event_id: str) -> None:
    """ValueLimitError for a blank event id (white space only; the Recorder mints an id for
    None or ""). Ingest de-duplicates by event id: two events sharing a blank one were taken
    for one event sent twice, and the second never recorded. The writers' check alone: an
    event an older pitlog recorded with one is projected as it is (projections/bounds.py)."""
    if not event_id.strip():
        raise ValueLimitError("id", f"the event id {event_id[:16]!r} is blank; a blank id "
                                    f"names no event, and two events sharing one were taken "
                                    f"for one")


def check_round(round_no: int | None) -> None:
    """ValueLimitError for a negative round number (ROUND_BOUNDS); null is no round."""
    reason = None if round_no is None else number_refusal("round_no", round_no)
    if reason is not None:
        raise ValueLimitError("round_no", reason)


def check_ids(table_id: str, shoe_id: str | None, actor: str, event_id: str | None) -> None:
    """ValueLimitError unless the ids are short printable text, the table, shoe (when given)
    and actor ids not blank (the event id's: check_event_id)."""
    if max(len(table_id), len(shoe_id or ""), len(actor), len(event_id or "")) > MAX_ID_CHARS:
        for name, text in (("table", table_id), ("shoe", shoe_id), ("actor", actor),
                           ("id", event_id)):
            check_text(name, text, MAX_ID_CHARS)
    # Inline: this runs for every event, and an id is almost never blank.
    if not (table_id.strip() and actor.strip() and (shoe_id is None or shoe_id.strip())):
        for name, text in (("table", table_id), ("shoe", shoe_id), ("actor", actor)):
            if text is not None and blank(text):
                raise ValueLimitError(name, f"the {name} id {text!r} is blank; a blank id "
                                            f"names no {name}")
    # One search over the four (the usual case: none has a control character), then the one
    # to blame; the separator is printable, so it finds nothing itself.
    if not _CONTROL.search(f"{table_id} {shoe_id} {actor} {event_id}"):
        return
    for name, text in (("table", table_id), ("shoe", shoe_id), ("actor", actor),
                       ("id", event_id)):
        if text and _CONTROL.search(text):
            # An id names a table, shoe or device in keys, file names and reports: a control
            # character there is a sender's fault, never a name (events/text.py for free text).
            # visible() escapes it once; quoted by hand, as repr() would escape it again
            raise ValueLimitError(name, f"the {name} id '{visible(text)}' holds a control "
                                        f"character; send ids as printable text")


def json_depth_exceeds(raw: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON text nests objects and arrays deeper than `limit` (brackets inside
    strings do not count). Checked before json.loads, whose recursion would otherwise end in a
    RecursionError on a short line."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False  # the usual line: too few brackets to be that deep
    depth, in_string, escaped = 0, False, False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False

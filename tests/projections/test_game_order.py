"""Game order (sql/macros.sql, game_order: occurred_at, then seq) in every before/after rule.

A table's lines come from two devices, the card-reading shoe and the dealer terminal; `seq` is
the order the recorder received them, which across devices is arrival order. Each scenario is
one spread round (3C QD, spread 8, the third card 8H: players win at 1 to 1), or a pair, on its
own table, ingested as device lines through `pitlog ingest`, with some lines arriving late. For
each rule there is a round whose lines arrive out of time order but whose play is correct (no
anomaly, the ledger OK) and one where the event is genuinely late in game order although its
seq says otherwise (the exact code and seqs). Money in integer cents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from live_support import differences
from store_template import store_at
from surveillance_pit import EVENING
from table_builder import project_device_lines

from events.log.embedded.log import EmbeddedLog
from projections.anomalies import STORED, AnomalyFilter, list_anomalies
from projections.projector import project

TERM, SHOE = "TERM-1", "SHOE-1"
RACKED = [{"rank": 3, "suit": "C"}, {"rank": 12, "suit": "D"}, {"rank": 8, "suit": "H"}]


@dataclass
class Line:
    name: str
    kind: str
    second: float  # when it happened at the table (occurred_at)
    actor: str
    payload: dict[str, object] = field(default_factory=dict)
    round_no: int | None = 1
    arrives: float | None = None  # when it reached the recorder (None: at once)


def _spread_round(*extra: Line, third: int = 8, suit: str = "H") -> list[Line]:
    lines = [
        Line("open", "TableOpened", 0, TERM, {"profile": "nj-casino"}, None),
        Line("tap", "DealerTappedIn", 1, TERM, {"dealer_id": "D1"}, None),
        Line("load", "CardsLoaded", 2, SHOE, {"decks": 6}, None),
        Line("burn", "CardBurned", 3, SHOE, {"rank": 2, "suit": "C", "reason": "NEW_SHOE"}, None),
        Line("wager", "WagerPlaced", 4, TERM,
             {"seat": 1, "area": 1, "player_id": "P1", "amount_cents": 1000}),
        Line("left", "CardDrawn", 6, SHOE,
             {"rank": 3, "suit": "C", "face_up": True, "destination": "LEFT"}),
        Line("right", "CardDrawn", 7, SHOE,
             {"rank": 12, "suit": "D", "face_up": True, "destination": "RIGHT"}),
        Line("kind", "Announced", 8, TERM, {"phrase": "Spread 8", "meaning": "SPREAD", "value": 8}),
        Line("closed", "Announced", 13, TERM,
             {"phrase": "Raises closed", "meaning": "RAISES_CLOSED"}),
        Line("third", "CardDrawn", 14, SHOE,
             {"rank": third, "suit": suit, "face_up": True, "destination": "MIDDLE"}),
        Line("value", "Announced", 15, TERM,
             {"phrase": str(third), "meaning": "THIRD_CARD", "value": third}),
        Line("settle", "WagerSettled", 16, TERM,
             {"seat": 1, "area": 1, "wager_kind": "ORIGINAL", "outcome": "WON",
              "amount_cents": 1000, "odds": 1}),
        Line("rack", "CardsRacked", 17, TERM,
             {"cards": RACKED[:2] + [{"rank": third, "suit": suit}]}),
        Line("shoe_closed", "ShoeClosed", 18, SHOE, {"cards_remaining": 300}, None),
    ]
    return _with(lines, *extra)


def _with(lines: list[Line], *changes: Line) -> list[Line]:
    """The lines with each change: a line of the same name replaced, or a new line added."""
    by_name = {x.name: x for x in lines}
    for c in changes:
        by_name[c.name] = c
    return list(by_name.values())


def _arrive(lines: list[Line], **arrives: float) -> list[Line]:
    for x in lines:
        if x.name in arrives:
            x.arrives = arrives[x.name]
    return lines


def _settle(name: str, second: float, outcome: str, cents: int, odds: int | None = None,
            kind: str = "ORIGINAL") -> Line:
    return Line(name, "WagerSettled", second, TERM,
                {"seat": 1, "area": 1, "wager_kind": kind, "outcome": outcome,
                 "amount_cents": cents} | ({"odds": odds} if odds is not None else {}))


def _raise(second: float) -> Line:
    return Line("raised", "RaisePlaced", second, TERM, {"seat": 1, "area": 1, "amount_cents": 1000})


def _raise_won(second: float) -> Line:
    return _settle("raise_settle", second, "WON", 1000, 1, "RAISE")


def _pair_round(*extra: Line) -> list[Line]:
    pair = [
        Line("right", "CardDrawn", 7, SHOE,
             {"rank": 3, "suit": "D", "face_up": True, "destination": "RIGHT"}),
        Line("kind", "Announced", 8, TERM, {"phrase": "Pair", "meaning": "PAIR"}),
        Line("third", "CardDrawn", 14, SHOE,
             {"rank": 3, "suit": "H", "face_up": True, "destination": "MIDDLE"}),
        Line("value", "Announced", 15, TERM,
             {"phrase": "Three of a kind", "meaning": "THREE_OF_A_KIND"}),
        _settle("settle", 16, "WON", 11000, 11),
        Line("rack", "CardsRacked", 17, TERM,
             {"cards": [{"rank": 3, "suit": "C"}, {"rank": 3, "suit": "D"},
                        {"rank": 3, "suit": "H"}]}),
    ]
    lines = [x for x in _with(_spread_round(), *pair) if x.name != "closed"]
    return _with(lines, *extra)


def _choice(name: str, second: float, choice: str) -> Line:
    return Line(name, "VoidOrPlayChosen", second, TERM, {"seat": 1, "area": 1, "choice": choice})


def _exposed_round(*extra: Line) -> list[Line]:
    """The spread round with 9S exposed at 9, before "Raises closed" (13:47-20.31(g)3)."""
    exposed = Line("exposed", "CardDrawn", 9, SHOE,
                   {"rank": 9, "suit": "S", "face_up": True, "destination": "MIDDLE"})
    rack = Line("rack", "CardsRacked", 17, TERM,
                {"cards": RACKED[:2] + [{"rank": 9, "suit": "S"}, RACKED[2]]})
    return _with(_spread_round(), exposed, rack, *extra)


@dataclass
class Case:
    lines: list[Line]
    found: list[tuple[str, list[str]]]  # (code, the names of the lines its seqs are, in order)
    # seat 1's (kind): (status, expected outcome, paid, collected, returned) in cents
    ledger: dict[str, tuple[str, str | None, int, int, int]]
    arrived_after: tuple[str, str] | None = None  # (a, b): a's seq really is after b's


WON_1000 = ("OK", "WON", 1000, 0, 0)
CASES: dict[str, Case] = {
    # LATE_WAGER (13:47-20.31(d)3): the wager keyed at 5 reaches the recorder after both cards.
    "wager_on_time_arriving_late": Case(
        _arrive(_spread_round(Line("wager", "WagerPlaced", 5, TERM,
                                   {"seat": 1, "area": 1, "player_id": "P1",
                                    "amount_cents": 1000})), wager=7.5),
        [], {"ORIGINAL": WON_1000}, ("wager", "right")),
    # the wager keyed at 6.5, after the first card (6), whose shoe line arrives after it
    "wager_late_arriving_early": Case(
        _arrive(_spread_round(Line("wager", "WagerPlaced", 6.5, TERM,
                                   {"seat": 1, "area": 1, "player_id": "P1",
                                    "amount_cents": 1000})), left=7.2, right=7.3),
        [("LATE_WAGER", ["left", "wager"])], {"ORIGINAL": WON_1000}, ("left", "wager")),
    # WAGER_ALTERED (13:47-20.31(d)6) and the ledger's cutoff: a change to $20 keyed at 5.5,
    # before the first card, arriving after both cards: owed $20, paid $20 is OK.
    "change_on_time_arriving_late": Case(
        _arrive(_spread_round(Line("change", "WagerChanged", 5.5, TERM,
                                   {"seat": 1, "area": 1, "amount_cents": 2000}),
                              _settle("settle", 16, "WON", 2000, 1)), change=7.5),
        [], {"ORIGINAL": ("OK", "WON", 2000, 0, 0)}, ("change", "right")),
    # the change keyed at 6.5, after the first card, arriving before it: the wager stays $10
    "change_late_arriving_early": Case(
        _arrive(_spread_round(Line("change", "WagerChanged", 6.5, TERM,
                                   {"seat": 1, "area": 1, "amount_cents": 2000}),
                              _settle("settle", 16, "WON", 2000, 1)), left=7.2, right=7.3),
        [("WAGER_ALTERED", ["left", "change"]), ("WRONG_PAYOUT", ["wager", "change", "settle"])],
        {"ORIGINAL": ("WRONG_AMOUNT", "WON", 1000, 0, 0)}, ("left", "change")),
    # EARLY_RAISE (13:47-20.31(d)12): a raise keyed at 7.5, after the second card (7), whose
    # shoe line arrives after the raise.
    "raise_after_two_cards_arriving_first": Case(
        _arrive(_spread_round(_raise(7.5), _raise_won(16.5)), left=7.6, right=7.7),
        [], {"ORIGINAL": WON_1000, "RAISE": WON_1000}, ("left", "raised")),
    # a raise keyed at 6.5, between the first two cards, arriving after the second card
    "raise_before_second_card_arriving_late": Case(
        _arrive(_spread_round(_raise(6.5), _raise_won(16.5)), raised=7.5),
        [("EARLY_RAISE", ["raised", "right"])], {"ORIGINAL": WON_1000, "RAISE": WON_1000},
        ("raised", "right")),
    # LATE_RAISE (13:47-20.31(d)12-13): a raise keyed at 12.5, before "Raises closed" (13),
    # arriving after it (a retried terminal line).
    "raise_on_time_arriving_late": Case(
        _arrive(_spread_round(_raise(12.5), _raise_won(16.5)), raised=13.5),
        [], {"ORIGINAL": WON_1000, "RAISE": WON_1000}, ("raised", "closed")),
    # a raise keyed at 14.5, after "Raises closed" and the third card, arriving before both
    "raise_after_closed_arriving_early": Case(
        _arrive(_spread_round(_raise(14.5), _raise_won(16.5)), raised=12.5),
        [("LATE_RAISE", ["closed", "raised"])], {"ORIGINAL": WON_1000, "RAISE": WON_1000},
        ("closed", "raised")),
    # WRONG_ANNOUNCEMENT (13:47-20.31(d)13): the value said at 15 reaches the recorder before
    # the shoe's third card (14): it is about that card.
    "value_said_after_card_arriving_first": Case(
        _arrive(_spread_round(), third=15.5),
        [], {"ORIGINAL": WON_1000}, ("third", "value")),
    # the value "8" said at 13.5, before any third card (14), arriving after it: it names no
    # card, and the third card was never announced after it came out
    "value_said_before_card_arriving_after": Case(
        _arrive(_spread_round(Line("value", "Announced", 13.5, TERM,
                                   {"phrase": "8", "meaning": "THIRD_CARD", "value": 8})),
                value=14.5),
        [("WRONG_ANNOUNCEMENT", ["value"]), ("WRONG_ANNOUNCEMENT", ["third"])],
        {"ORIGINAL": WON_1000}, ("value", "third")),
    # SPREAD_WITHOUT_THIRD_CARD (13:47-20.31(d)13-14): the settlement at 16 arrives before
    # the shoe's third card (14).
    "spread_settled_after_third_arriving_first": Case(
        _arrive(_spread_round(), third=16.5),
        [], {"ORIGINAL": WON_1000}, ("third", "settle")),
    # the settlement keyed at 13.8, before the third card (14), arriving after it
    "spread_settled_before_third_arriving_after": Case(
        _arrive(_spread_round(_settle("settle", 13.8, "WON", 1000, 1)), settle=16.5),
        [("SPREAD_WITHOUT_THIRD_CARD", ["left", "right", "settle"])], {"ORIGINAL": WON_1000},
        ("settle", "third")),
    # PAIR_WITHOUT_THIRD_CARD (13:47-20.31(d)8): the same for a pair 3C 3D, third 3H, 11 to 1
    "pair_settled_after_third_arriving_first": Case(
        _arrive(_pair_round(), third=16.5),
        [], {"ORIGINAL": ("OK", "WON", 11000, 0, 0)}, ("third", "settle")),
    "pair_settled_before_third_arriving_after": Case(
        _arrive(_pair_round(_settle("settle", 13.8, "WON", 11000, 11),
                            Line("value", "Announced", 14.5, TERM,
                                 {"phrase": "Three of a kind", "meaning": "THREE_OF_A_KIND"})),
                settle=16.5),
        [("PAIR_WITHOUT_THIRD_CARD", ["left", "right", "settle"])],
        {"ORIGINAL": ("OK", "WON", 11000, 0, 0)}, ("settle", "third")),
    # void_allowed (sql/rounds.sql): the round voided at 13.5, before the third card (14), the
    # void's line arriving after the card. Before the deciding card or after it, a void needs
    # its cause (a dealing-shoe fault, a tie hand); with none it voids nothing and the third
    # card decides: the wager returned is a wrong settlement.
    "void_before_third_arriving_after": Case(
        _arrive(_spread_round(Line("void", "RoundVoided", 13.5, TERM, {"reason": "dispute"}),
                              _settle("settle", 16, "VOID", 1000)), void=14.5),
        [("ROUND_VOIDED_WITHOUT_CAUSE", ["third", "void"]),
         ("WRONG_SETTLEMENT", ["wager", "settle"])],
        {"ORIGINAL": ("WRONG_OUTCOME", "WON", 1000, 0, 0)}, ("void", "third")),
    # voided at 14.5, after the third card had decided, the void's line arriving before it
    "void_after_third_arriving_before": Case(
        _arrive(_spread_round(Line("void", "RoundVoided", 14.5, TERM, {"reason": "dispute"}),
                              _settle("settle", 16, "VOID", 1000)), void=13.5),
        [("ROUND_VOIDED_WITHOUT_CAUSE", ["third", "void"]),
         ("WRONG_SETTLEMENT", ["wager", "settle"])],
        {"ORIGINAL": ("WRONG_OUTCOME", "WON", 1000, 0, 0)}, ("third", "void")),
    # DEVICE_FAULT_NOT_VOIDED (13:69F-34.16(n) by analogy) and void_allowed: the shoe jams at
    # 14.2, after the third card; the terminal's void at 14.5 arrives before the shoe's fault
    # line. The void follows the fault at the table: it stands, the wager comes back.
    "void_after_fault_arriving_before_it": Case(
        _arrive(_spread_round(
            Line("fault", "DeviceFaulted", 14.2, SHOE, {"device_id": SHOE, "fault": "SHOE_JAM"}),
            Line("void", "RoundVoided", 14.5, TERM, {"reason": "shoe jam"}),
            _settle("settle", 16, "VOID", 1000)), fault=16.5),
        [], {"ORIGINAL": ("OK", "VOID", 0, 0, 1000)}, ("fault", "void")),
    # BURN_MISDISCLOSED (13:47-20.31(d)1): 2C burned at 3 and disclosed at 3.5, the shoe's burn
    # line arriving after the disclosure: the card disclosed is the card burned.
    "burn_disclosed_after_burn_arriving_first": Case(
        _arrive(_spread_round(Line("disclosed", "BurnDisclosed", 3.5, TERM,
                                   {"rank": 2, "suit": "C", "requested_by_seat": 1}, None)),
                burn=3.7),
        [], {"ORIGINAL": WON_1000}, ("burn", "disclosed")),
    # 2C "disclosed" at 2.5, before any card was burned, the line arriving after the burn
    "burn_disclosed_before_burn_arriving_after": Case(
        _arrive(_spread_round(Line("disclosed", "BurnDisclosed", 2.5, TERM,
                                   {"rank": 2, "suit": "C", "requested_by_seat": 1}, None)),
                disclosed=3.5),
        [("BURN_MISDISCLOSED", ["disclosed"])], {"ORIGINAL": WON_1000}, ("disclosed", "burn")),
    # The ledger's last void-or-play choice ((g)3; 13:69F-6.7): 9S exposed before "Raises
    # closed"; seat 1 says VOID at 10 then PLAY at 11, the PLAY line arriving first. The last
    # word is PLAY: the wager plays on, and the new third card 8H wins it.
    "last_choice_play_arriving_first": Case(
        _arrive(_exposed_round(_choice("void_choice", 10, "VOID"), _choice("play", 11, "PLAY")),
                play=9.5),
        [("EARLY_THIRD_CARD", ["exposed", "closed"])], {"ORIGINAL": WON_1000},
        ("void_choice", "play")),
    # PLAY at 11 then VOID at 12, the VOID line arriving first: the wager comes back.
    "last_choice_void_arriving_first": Case(
        _arrive(_exposed_round(_choice("play", 11, "PLAY"), _choice("void_choice", 12, "VOID"),
                               _settle("settle", 12.5, "VOID", 1000)), void_choice=9.5),
        [("EARLY_THIRD_CARD", ["exposed", "closed"])],
        {"ORIGINAL": ("OK", "VOID", 0, 0, 1000)}, ("play", "void_choice")),
    # BURN_DURING_ROUND (13:47-20.31(d)1; sql/intruders.sql, round_intruders_of):
    # a burn at 17.5, after
    # the round's last line (the rack at 17), reaching the recorder before the rack line.
    "burn_after_rack_arriving_before_it": Case(
        _arrive(_spread_round(Line("burn2", "CardBurned", 17.5, SHOE,
                                   {"rank": 4, "suit": "S", "reason": "OTHER"}, None)),
                rack=17.8),
        [], {"ORIGINAL": WON_1000}, ("rack", "burn2")),
    # a burn at 16.5, inside the round (before its rack at 17), arriving after the rack line
    "burn_inside_round_arriving_after_rack": Case(
        _arrive(_spread_round(Line("burn2", "CardBurned", 16.5, SHOE,
                                   {"rank": 4, "suit": "S", "reason": "OTHER"}, None)),
                burn2=17.5),
        [("BURN_DURING_ROUND", ["left", "burn2"])],
        {"ORIGINAL": ("IRREGULAR_ROUND", "WON", 1000, 0, 0)}, ("burn2", "rack")),
    # a burn at 10, before "Raises closed" (13), arriving after it: burned "after its first
    # card", not "after Raises closed" (test_a_burn_is_placed_against_raises_closed_in_game_order)
    "burn_before_raises_closed_arriving_after_it": Case(
        _arrive(_spread_round(Line("burn2", "CardBurned", 10, SHOE,
                                   {"rank": 4, "suit": "S", "reason": "OTHER"}, None)),
                burn2=13.5),
        [("BURN_DURING_ROUND", ["left", "burn2"])],
        {"ORIGINAL": ("IRREGULAR_ROUND", "WON", 1000, 0, 0)}, ("burn2", "closed")),
    # a burn at 13.5, after "Raises closed" (13), arriving before it: where the third card is
    "burn_after_raises_closed_arriving_before_it": Case(
        _arrive(_spread_round(Line("burn2", "CardBurned", 13.5, SHOE,
                                   {"rank": 4, "suit": "S", "reason": "OTHER"}, None)),
                burn2=12),
        [("BURN_DURING_ROUND", ["left", "burn2"])],
        {"ORIGINAL": ("IRREGULAR_ROUND", "WON", 1000, 0, 0)}, ("closed", "burn2")),
}
TABLES = {name: f"T{i:02d}" for i, name in enumerate(CASES, start=1)}


def _device_lines(name: str, case: Case) -> list[dict[str, object]]:
    """The case's lines in arrival order, each device numbering its own lines in that order."""
    order = sorted(case.lines, key=lambda x: x.second if x.arrives is None else x.arrives)
    counters: dict[str, int] = {}
    out = []
    for x in order:
        counters[x.actor] = counters.get(x.actor, 0) + 1
        at = (EVENING + timedelta(seconds=x.second)).isoformat().replace("+00:00", "Z")
        shoe = None if x.kind in ("TableOpened", "DealerTappedIn") else "S1"
        out.append({"type": x.kind, "table": TABLES[name], "shoe": shoe, "round": x.round_no,
                    "seq": counters[x.actor], "at": at, "actor": x.actor, **x.payload})
    return out


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Every case on its own table in one log, projected once."""
    tmp = tmp_path_factory.mktemp("game_order")
    lines = [d for name, case in CASES.items() for d in _device_lines(name, case)]
    db = project_device_lines(lines, tmp)
    with duckdb.connect(str(db), read_only=True) as con:
        seqs = con.execute("SELECT table_id, event_type, occurred_at, seq FROM events").fetchall()
        ledger = con.execute(
            "SELECT table_id, wager_kind, status, expected_outcome, expected_paid_cents, "
            "expected_collected_cents, expected_returned_cents FROM ledger WHERE seat = 1"
        ).fetchall()
        rows = list_anomalies(con, AnomalyFilter())
        found = [(a["table_id"], a["code"], a["seqs"]) for a in rows]
        explained = {(a["table_id"], a["code"]): a["explanation"] for a in rows}
    with EmbeddedLog(tmp / "log", create=False) as log:
        records = [(r.key, r.value) for batch in log.read() for r in batch]
    return {"seqs": {(t, k, at): s for t, k, at, s in seqs},
            "ledger": ledger, "found": found, "explained": explained, "records": records}


def _seq(judged: dict[str, object], name: str, line: str) -> int:
    x = next(x for x in CASES[name].lines if x.name == line)
    at = EVENING + timedelta(seconds=x.second)
    seqs = judged["seqs"]
    assert isinstance(seqs, dict)
    return next(s for (t, k, when), s in seqs.items()
                if t == TABLES[name] and k == x.kind and when == at)


@pytest.mark.parametrize("name", list(CASES))
def test_each_rule_judges_in_game_order_not_arrival_order(
        judged: dict[str, object], name: str) -> None:
    case, table = CASES[name], TABLES[name]
    if case.arrived_after is not None:  # the log order really is out of time order
        first, then = case.arrived_after
        assert _seq(judged, name, first) > _seq(judged, name, then)
    found = judged["found"]
    assert isinstance(found, list)
    got = sorted((code, seqs) for t, code, seqs in found if t == table)
    # each code's seqs in the order it lists them
    assert got == sorted((code, [_seq(judged, name, n) for n in names])
                         for code, names in case.found)
    ledger = judged["ledger"]
    assert isinstance(ledger, list)
    assert {kind: tuple(rest) for t, kind, *rest in ledger if t == table} == case.ledger


def test_an_early_raise_says_where_it_fell_among_the_first_two_cards(
        judged: dict[str, object]) -> None:
    """EARLY_RAISE's explanation places the raise in game order: keyed at 6.5, after 3C (6) and
    before QD (7), it fell between the first two cards, not before both."""
    explained = judged["explained"]
    assert isinstance(explained, dict)
    assert explained[(TABLES["raise_before_second_card_arriving_late"], "EARLY_RAISE")] == (
        "Seat 1 raised $10.00 on area 1 between the first two cards "
        "(3C came before the raise, QD after)")


def test_a_burn_is_placed_against_raises_closed_in_game_order(
        judged: dict[str, object]) -> None:
    """BURN_DURING_ROUND says whether the burn took the third card's place by game order
    (docs/anomalies.md "Order"; 13:47-20.31(d)13: "Raises closed", then the third card), not
    by seq: a burn keyed before "Raises closed" but arriving after it was burned after the
    first card; one keyed after "Raises closed" but arriving first, where the third card is."""
    explained = judged["explained"]
    assert isinstance(explained, dict)
    assert explained[(TABLES["burn_before_raises_closed_arriving_after_it"],
                      "BURN_DURING_ROUND")] == (
        "4S was burned face down in round 1 after its first card was dealt: a card is burned "
        "only after a new deck is loaded or when a new dealer arrives, before a round")
    assert explained[(TABLES["burn_after_raises_closed_arriving_before_it"],
                      "BURN_DURING_ROUND")] == (
        '4S was burned face down in round 1 after "Raises closed", where the third card is '
        "dealt: a card is burned only after a new deck is loaded or when a new dealer "
        "arrives, before a round")


def test_incremental_detection_stays_exact_when_lines_arrive_out_of_time_order(
        judged: dict[str, object], tmp_path: Path) -> None:
    """The projector's incremental detection (projections/incremental.py) re-evaluates every
    shoe a batch touches from its first seq, so a line that arrives late but happened early
    (a void after the shoe's fault, a raise before "Raises closed") replaces the rows the
    earlier batches stored: after batches of 13 records (cutting rounds anywhere) the stored
    anomalies equal a full evaluation, row for row, and hold every code the cases raise."""
    records = judged["records"]
    assert isinstance(records, list)
    log = EmbeddedLog(tmp_path / "log")
    with duckdb.connect(str(store_at(tmp_path / "p.duckdb"))) as con:
        for start in range(0, len(records), 52):
            log.append(records[start:start + 52])
            project(log, con, batch_size=13, publish_alerts=False)
        assert differences(con) == (0, 0)
        stored = {c for (c,) in con.execute(f"SELECT DISTINCT code FROM {STORED}").fetchall()}
    assert {code for case in CASES.values() for code, _ in case.found} <= stored

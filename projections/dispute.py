"""Dispute reconstruction: "what happened at table 7, seat 3, at 21:14?"

The hand in play at a moment (or named by shoe and round) is rebuilt from the events: its cards
in discard-rack order (13:47-20.31(d)15: "in order ... to reconstruct the hand in case of a
question or dispute") with the wall-clock time each left the shoe, so the video can be found;
every announcement; every wager, raise and void-or-play choice per seat; the settlement the
rules require (the ledger view) next to the one made; and the anomalies that touch the round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NoReturn

import duckdb

from events.errors import NotFoundError
from projections import dispute_sql as sql
from projections.anomalies import anomalies_touching
from projections.lookup import taps_from
from projections.moment import (
    SEAT_ABSENT,
    UNKNOWN_TABLE,
    Near,
    OutsideRound,
    RoundSpan,
    locate,
    neighbours,
    neighbours_of,
)
from projections.queries import rows
from projections.replay import (
    kept_round,
    kept_settlements,
    kept_shoe_row,
    query_params,
    shoe_span,
)

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Dispute:
    """One round rebuilt; the lists are filtered to one seat when a seat was asked for."""

    round: Row
    cards: list[Row] = field(default_factory=list)
    announcements: list[Row] = field(default_factory=list)
    wagers: list[Row] = field(default_factory=list)
    settlements: list[Row] = field(default_factory=list)
    anomalies: list[Row] = field(default_factory=list)
    # The other rounds in play at the moment asked (RoundSpan.as_dict): rounds overlap when
    # the next one's first wager comes before the last one is racked (moment.neighbours).
    also_in_play: list[Row] = field(default_factory=list)

    def others_in_play(self) -> list[RoundSpan]:
        """`also_in_play` as RoundSpans: what every view of the dispute names."""
        return [RoundSpan(**row) for row in self.also_in_play]


def dispute(con: duckdb.DuckDBPyConnection, table: str, *, at: datetime | None = None,
            shoe: str | None = None, round_no: int | None = None,
            seat: int | None = None) -> Dispute:
    """Rebuild the round at `table` in play at `at`, or the round `round_no` of `shoe`.

    A moment in no round, an unknown table, or a seat with no wager in the round raises
    OutsideRound (moment.py), naming the rounds just before and after: never another hand.
    The round's row and settlements are the writer's kept rows when its shoe is kept and
    they hold (projections/replay_kept.py), else their queries (projections/dispute_sql.py):
    the same rows either way (docs/operating.md, "Kept replays")."""
    also: list[RoundSpan] = []
    of_seat: Near | None = None  # the seat's neighbours of `at`, once found
    if at is not None:
        # With a seat, the seat's round in play then first: in a whole second in which one
        # round ends and the next begins (moment.neighbours), the one the seat played.
        # The table's rounds around the moment, whoever played: every other round in play
        # then is named, the video shows them all (a second read, session 41).
        near, of_seat = neighbours_of(con, table, at, seat)
        mine = of_seat["in"]  # None with no seat
        try:
            span = mine or locate(con, table, at, near)
        except OutsideRound as outside:  # in no round: offer the seat's own rounds
            if seat is None or outside.where == UNKNOWN_TABLE:
                raise
            raise outside.for_seat(con, seat, of_seat) from None
        shoe, round_no = span.shoe_id, span.round_no
        first, last = span.first_seq, span.last_seq
        also = [s for s in (near["in"], *near["also"]) if s is not None and s != span]
    elif shoe is None or round_no is None:
        raise NotFoundError("name the moment (--at) or the round (--round SHOE:ROUND)")
    else:
        found = rows(con, sql.SPAN, {"table": table, "shoe": shoe, "round": round_no})[0]
        first, last = found["first_seq"], found["last_seq"]
    if first is None:  # the round has no event
        raise NotFoundError(_no_round(con, table, shoe, round_no))
    context, kept = _context(con, table, shoe, first, last)
    kept_shoe = shoe if kept else None  # only a shoe's rounds are kept
    key = {"table": table, "shoe": shoe, "round": round_no}
    r = (kept_round(con, table, kept_shoe, round_no) if kept_shoe is not None else
         next(iter(rows(con, _ONE_ROUND, {**context, "round": round_no})), None))
    if r is None:
        raise NotFoundError(f"no round {round_no} of shoe {shoe} at table {table}; "
                            f"`pitlog replay {shoe}` lists its rounds")
    in_round = {**key, "round_first": r["first_seq"], "round_last": r["last_seq"]}
    wagers = rows(con, sql.WAGERS, {**in_round, "seat": seat})
    if seat is not None and not any(w["action"] == "wager placed" for w in wagers):
        _seat_absent(con, table, r, seat, at, of_seat)
    return Dispute(
        round=r,
        cards=rows(con, sql.CARDS, {**in_round, "first": context["first"],
                                    "last": context["last"], "third_pos": r["third_card_pos"],
                                    "kind": r["kind"]}),
        announcements=rows(con, sql.ANNOUNCEMENTS, in_round),
        wagers=wagers,
        settlements=(kept_settlements(con, table, kept_shoe, round_no, seat)
                     if kept_shoe is not None else
                     rows(con, _ONE_ROUNDS_SETTLEMENTS, {**context, "round": round_no,
                                                         "seat": seat})),
        anomalies=anomalies_touching(con, table, shoe, round_no, r["first_seq"], r["last_seq"]),
        also_in_play=[span.as_dict() for span in also],
    )


# One round's rows in the context (dispute_sql.py): the round and its settlements.
_ONE_ROUND = (f"SELECT * FROM ({sql.ROUNDS}) WHERE round_no = $round AND "
              "shoe_id IS NOT DISTINCT FROM $shoe")
_ONE_ROUNDS_SETTLEMENTS = (f"SELECT * EXCLUDE (round_no) FROM ({sql.SETTLEMENTS}) WHERE "
                           "round_no = $round AND ($seat IS NULL OR seat = $seat) "
                           "ORDER BY seat, area, wager_kind")


def _no_round(con: duckdb.DuckDBPyConnection, table: str, shoe: str | None,
               round_no: int | None) -> str:
    """What to say of a round named by shoe and number that has no event at the table: the
    shoe is unknown, was used at another table, or has no such round."""
    tables = [r["table_id"] for r in rows(con, sql.SHOE_TABLES, {"shoe": shoe})]
    if not tables:
        return f"no shoe {shoe!r} in the store; `pitlog shoes` lists the shoes"
    if table not in tables:
        return (f"shoe {shoe} was used at table {', '.join(tables)}, not at {table}: name that "
                f"table with --table")
    return (f"no round {round_no} of shoe {shoe} at table {table}; "
            f"`pitlog replay {shoe}` lists its rounds")


def _context(con: duckdb.DuckDBPyConnection, table: str, shoe: str | None, first: int,
             last: int) -> tuple[dict[str, object], bool]:
    """The queries' context (dispute_sql.py) of the round of `shoe` whose events lie between
    `first` and `last`: its shoe's, the replay's own parameters, and whether the shoe's kept
    rows hold; a round with no shoe is its own context, never kept. Kept rows need no dealer
    look-up (only CARDS runs, and it reads the span), so it is made only for the queries."""
    if shoe is None:
        return {"table": table, "shoe": None, "first": first, "last": last,
                "taps_from": taps_from(con, table, first)}, False
    span = shoe_span(con, shoe, table)
    if kept_shoe_row(con, span) is not None:
        return {"table": table, "shoe": shoe, "first": span.first, "last": span.last}, True
    return query_params(con, span), False


def _seat_absent(con: duckdb.DuckDBPyConnection, table: str, r: Row, seat: int,
                 at: datetime | None, near: Near | None) -> NoReturn:
    """The seat placed no wager in round `r`: say so, with the seats that did and the seat's
    own rounds just before and after (`near`: the seat's neighbours of `at`, when found)."""
    seats = tuple(sorted({int(w["seat"]) for w in rows(con, sql.WAGERS, {
        "table": table, "shoe": r["shoe_id"], "round": r["round_no"],
        "round_first": r["first_seq"], "round_last": r["last_seq"], "seat": None})
        if w["seat"] is not None}))
    moment = at or r["started_at"]
    near = near or neighbours(con, table, moment, seat)
    raise OutsideRound(table, moment, SEAT_ABSENT, before=near["before"], after=near["after"],
                       seat=seat, seats=seats)

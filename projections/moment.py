"""Where a moment falls at a table: inside a round, or outside every round, and which.

A dispute names a table and a wall-clock moment. When the moment lies inside a round, that round
is the hand in question. When it does not (between two rounds, between shoes, while the table was
closed, before it opened, after its last round) there is no hand to show: `locate` raises
OutsideRound, which says where the moment fell and names the rounds just before and after, with
their times, so the officer can pick one. It never returns another hand as if it were the one
asked for. An unknown table id is the same error, with the ids the store knows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, TypedDict

import duckdb

from events.errors import NotFoundError
from projections.localtime import asked_exactly, clock, clock_exact, local, stamp, stamp_asked
from projections.queries import known_tables, rows, unknown_table_text

# Every round of the table with its span, from the three columns the span needs (`s`), each
# with `who` it is a round of: 'table' (every round), or also 'seat' (a round $seat placed a
# wager in). With a seat, both from one scan of the table's events: a dispute about a seat names
# the seat's round and every other round in play (dispute.py), which took two scans of the
# table's history before (session 47); with none, no flag and no second half, so a dispute that
# names no seat pays for neither (an outside review found them slowing such a lookup). The
# places are found per `who` (`_places`). The round in
# play is the one whose first and last events bracket the moment, or begun within it when the
# moment is a whole second ($until, `neighbours`), the one in play at its start first, then the
# latest begun; any other such round is also in play then (`rank` after 1: a wager for the next
# round placed while the last is racked); the neighbours are the last round begun by then and
# the first begun after. Round 0 is never the
# round in play: its cards are cards outside any round (rules.MIN_ROUND_NO; 13:47-20.31(d)5,
# (d)15), no hand, and their first and last may lie minutes apart, around real rounds. It is
# still a neighbour, and `--round SHOE:0` still asks for it.
_SPANS = """shoe_id, round_no, min(occurred_at) AS started_at, max(occurred_at) AS ended_at,
           min(seq) AS first_seq, max(seq) AS last_seq"""


def _places(*whos: str) -> str:
    """The places of each `who`'s rounds in `s`: those in play ranked, the last begun by then
    and the first begun after (each a sorted LIMIT 1, DuckDB's top-N, as before session 47)."""
    sides = [f"""SELECT * FROM (SELECT '{place}' AS place, 1 AS rank, * FROM s
                       WHERE who = '{who}' AND {where} ORDER BY {order} LIMIT 1)"""
             for who in whos for place, where, order in (
                 ("before", "started_at <= $at AND ended_at < $at",
                  "started_at DESC, first_seq DESC"),
                 ("after", "started_at > $at", "started_at, first_seq"))]
    return "\nUNION ALL\n".join([
        """SELECT 'in' AS place, row_number() OVER (
                   PARTITION BY who ORDER BY started_at <= $at DESC, started_at DESC,
                   first_seq DESC) AS rank, *
        FROM s WHERE started_at < $until AND ended_at >= $at AND round_no <> 0""", *sides])


_ROUNDS_OF_TABLE = f"""
WITH s AS (
    SELECT 'table' AS who, {_SPANS}
    FROM events
    WHERE table_id = $table AND round_no IS NOT NULL
    GROUP BY shoe_id, round_no
)
{_places("table")}"""
_ROUNDS_OF_TABLE_AND_SEAT = f"""
WITH r AS (
    SELECT {_SPANS},
           coalesce(bool_or(seat = $seat AND event_type = 'WagerPlaced'), false) AS played
    FROM events
    WHERE table_id = $table AND round_no IS NOT NULL
    GROUP BY shoe_id, round_no
), s AS (
    SELECT 'table' AS who, * EXCLUDE (played) FROM r
    UNION ALL
    SELECT 'seat' AS who, * EXCLUDE (played) FROM r WHERE played
)
{_places("table", "seat")}"""

# The table's own events around the moment: when it first opened, and the last opening,
# closing and shoe closing at or before the moment.
_TABLE = """
SELECT count(*) AS events, min(occurred_at) AS first_at, max(occurred_at) AS last_at,
       min(occurred_at) FILTER (event_type = 'TableOpened') AS first_opened,
       max(occurred_at) FILTER (event_type = 'TableOpened' AND occurred_at <= $at) AS opened,
       max(occurred_at) FILTER (event_type = 'TableClosed' AND occurred_at <= $at) AS closed,
       max(occurred_at) FILTER (event_type = 'ShoeClosed' AND occurred_at <= $at) AS shoe_closed
FROM events WHERE table_id = $table
"""



@dataclass(frozen=True, slots=True)
class RoundSpan:
    """A round named by its shoe and number, with the times of its first and last events."""

    shoe_id: str | None  # None: a round dealt with no shoe
    round_no: int
    started_at: datetime
    ended_at: datetime
    first_seq: int
    last_seq: int

    def describe(self, tz: tzinfo, exact: bool = False) -> str:
        """Where the round lies, to the second (the video's clock); `exact`: with the
        fractions of its start and end (beside a moment asked with a fraction)."""
        show = clock_exact if exact else clock
        span = f"{show(self.started_at, tz)} to {show(self.ended_at, tz)}"
        if self.shoe_id is None:  # --round names a shoe: this round is found by its start
            return (f"round {self.round_no} dealt with no shoe, {span} "
                    f"(--at {local(self.started_at, tz).isoformat()})")
        return f"shoe {self.shoe_id} round {self.round_no}, {span} " \
               f"(--round {self.shoe_id}:{self.round_no})"

    def as_dict(self) -> dict[str, Any]:
        """For JSON: times left as datetimes, so the server's encoder writes them with the
        casino's offset (projections/serve/encoding.py), as every other answer's."""
        return {"shoe_id": self.shoe_id, "round_no": self.round_no,
                "started_at": self.started_at, "ended_at": self.ended_at,
                "first_seq": self.first_seq, "last_seq": self.last_seq}


ONE_SECOND, ONE_MICROSECOND = timedelta(seconds=1), timedelta(microseconds=1)

# Where a moment fell, when not inside a round (OutsideRound.where).
UNKNOWN_TABLE = "unknown table"
BEFORE_OPEN = "before the table opened"
BEFORE_FIRST = "before the first round"
BETWEEN_ROUNDS = "between rounds"
BETWEEN_SHOES = "between shoes"
TABLE_CLOSED = "after the table closed"
AFTER_LAST = "after the last round"
SEAT_ABSENT = "the seat did not play"


class OutsideRound(NotFoundError):
    """The moment asked for is in no round (or the seat asked for did not play in it).

    `where` is one of the constants above; `before` and `after` are the nearest rounds (of the
    seat, when a seat was asked for), the ones offered to look at instead; `between` the
    table's own rounds either side, which the headline names (default: `before` and `after`);
    `since` is the time of the table event that explains the gap (its opening, closing, shoe
    closing or last event); `known_tables` is filled for an unknown table. The message is in
    UTC; `describe(tz)` says it on the casino's clock.
    """

    def __init__(self, table: str, at: datetime, where: str, *,
                 before: RoundSpan | None = None, after: RoundSpan | None = None,
                 since: datetime | None = None, seat: int | None = None,
                 seats: tuple[int, ...] = (), known_tables: tuple[str, ...] = (),
                 between: tuple[RoundSpan | None, RoundSpan | None] | None = None) -> None:
        self.table, self.at, self.where = table, at, where
        self.before, self.after, self.since = before, after, since
        self.between = between or (before, after)
        self.seat, self.seats, self.known_tables = seat, seats, known_tables
        super().__init__(self.describe(UTC))

    def for_seat(self, con: duckdb.DuckDBPyConnection, seat: int,
                 near: Near | None = None) -> OutsideRound:
        """The same moment outside any round, offering the seat's own rounds before and after
        (the table's, which the seat may not have played, sent it to an error: an outside
        review, session 37); the headline still names the table's rounds either side. `near`:
        the seat's neighbours of the moment, when already found."""
        near = near or neighbours(con, self.table, self.at, seat)
        return OutsideRound(self.table, self.at, self.where, before=near["before"],
                            after=near["after"], since=self.since, seat=seat,
                            between=(self.before, self.after))

    @property
    def exact(self) -> bool:
        """Asked with a fraction of a second: the times beside the moment are shown with theirs."""
        return asked_exactly(self.at)

    def headline(self, tz: tzinfo) -> str:
        """One sentence: where the moment fell."""
        at = stamp_asked(self.at, tz)
        b, a = self.between
        if self.where == UNKNOWN_TABLE:
            return unknown_table_text(self.table, self.known_tables)
        if self.where == SEAT_ABSENT:
            played = ", ".join(map(str, self.seats)) or "none"
            return (f"seat {self.seat} did not play at table {self.table} at {at}: no wager of "
                    f"seat {self.seat} in that round (seats that played: {played})")
        lead = f"{at} at table {self.table} is outside any round: {self.where}"
        if self.where == BETWEEN_ROUNDS and b and a:
            of = f"of shoe {b.shoe_id}" if b.shoe_id is not None else "dealt with no shoe"
            return f"{lead} {b.round_no} and {a.round_no} {of}"
        if self.where == BETWEEN_SHOES and b and a:
            closed = (f", shoe {b.shoe_id} closed at "
                      f"{(clock_exact if self.exact else clock)(self.since, tz)}"
                      if self.since and b.shoe_id is not None else "")
            return f"{lead} {b.shoe_id or '(rounds with no shoe)'} and " \
                   f"{a.shoe_id or '(rounds with no shoe)'}{closed}"
        if self.since is not None:
            verb = {BEFORE_OPEN: "opens at", BEFORE_FIRST: "opened at", TABLE_CLOSED: "at",
                    AFTER_LAST: "last event at"}.get(self.where, "at")
            return f"{lead} ({verb} {(stamp_asked if self.exact else stamp)(self.since, tz)})"
        return lead

    def describe(self, tz: tzinfo) -> str:
        """The headline and the rounds just before and after, on the casino's clock."""
        what = "round of seat " + str(self.seat) if self.seat is not None else "round"
        parts = [self.headline(tz)]
        if self.where != UNKNOWN_TABLE:
            parts.append(f"{what} before: {self.before.describe(tz, self.exact)}" if self.before
                         else f"no {what} before")
            parts.append(f"{what} after: {self.after.describe(tz, self.exact)}" if self.after
                         else f"no {what} after")
        return "; ".join(parts)

    def as_dict(self, tz: tzinfo) -> dict[str, Any]:
        """For JSON: times as datetimes (RoundSpan.as_dict), the message on `tz`'s clock, as
        the page beside it says it (were: UTC, in the casino's zone's JSON twin)."""
        return {"outside": self.where, "table_id": self.table, "at": self.at,
                "seat": self.seat, "since": self.since,
                "before": self.before.as_dict() if self.before else None,
                "after": self.after.as_dict() if self.after else None,
                "seats_that_played": list(self.seats), "known_tables": list(self.known_tables),
                "message": self.describe(tz)}


def _span(row: dict[str, Any] | None) -> RoundSpan | None:
    if row is None:
        return None
    return RoundSpan(row["shoe_id"], int(row["round_no"]), row["started_at"], row["ended_at"],
                     int(row["first_seq"]), int(row["last_seq"]))


# What `neighbours` finds: the round in play, the rounds either side (each None when there is
# none), and any other round in play at the same moment.
Near = TypedDict("Near", {"in": RoundSpan | None, "before": RoundSpan | None,
                          "after": RoundSpan | None, "also": list[RoundSpan]})


def neighbours(con: duckdb.DuckDBPyConnection, table: str, at: datetime,
               seat: int | None = None) -> Near:
    """The round in play at `at` ('in') and the last begun by then and first begun after
    ('before', 'after'), each None when there is none; with a seat, only rounds it played.
    'also': the other rounds in play at that moment (rounds overlap when the next round's
    first wager comes before the last one is racked): a dispute names them, so the hand shown
    is never taken for the only one.

    A moment to the second (no fraction: the video's clock, or a time copied from a table,
    which shows seconds) is that whole second: a round begun within it is in play then, as
    the screen that showed its start to the second says (a round in play at the second's start
    comes first). A moment with a fraction (`.000` too: localtime.Instant) is that instant."""
    of_table, of_seat = neighbours_of(con, table, at, seat)
    return of_table if seat is None else of_seat


def neighbours_of(con: duckdb.DuckDBPyConnection, table: str, at: datetime,
                  seat: int | None) -> tuple[Near, Near]:
    """`neighbours` among all the table's rounds and among the seat's (all None with no
    seat), from one scan of the table's events."""
    until = at + (ONE_MICROSECOND if asked_exactly(at) else ONE_SECOND)
    params: dict[str, object] = {"table": table, "at": at, "until": until}
    found = sorted(rows(con, _ROUNDS_OF_TABLE, params) if seat is None else
                   rows(con, _ROUNDS_OF_TABLE_AND_SEAT, {**params, "seat": seat}),
                   key=lambda r: r["rank"])
    return _near([r for r in found if r["who"] == "table"]), \
        _near([r for r in found if r["who"] == "seat"])


def _near(found: list[dict[str, Any]]) -> Near:
    """Near from one `who`'s rows of _ROUNDS_OF_TABLE(_AND_SEAT), in rank order."""
    placed = {r["place"]: r for r in reversed(found)}  # each place's first (rank 1)
    also = [span for r in found if r["place"] == "in" and r["rank"] > 1
            if (span := _span(r)) is not None]
    return {"in": _span(placed.get("in")), "before": _span(placed.get("before")),
            "after": _span(placed.get("after")), "also": also}


def locate(con: duckdb.DuckDBPyConnection, table: str, at: datetime,
           near: Near | None = None) -> RoundSpan:
    """The round in play at `table` at `at` (of `near`, the table's neighbours of `at`, when
    given); OutsideRound when the moment is in none. The table's own facts are read only to
    say why the moment is in no round (one query fewer for every dispute that names a moment
    in a round)."""
    near = near or neighbours(con, table, at)
    if near["in"] is not None:
        return near["in"]
    facts = rows(con, _TABLE, {"table": table, "at": at})[0]
    if not facts["events"]:
        raise OutsideRound(table, at, UNKNOWN_TABLE, known_tables=known_tables(con))
    before, after = near["before"], near["after"]
    if before is None:
        opened = facts["first_opened"] or facts["first_at"]
        where = BEFORE_OPEN if at < opened else BEFORE_FIRST
        raise OutsideRound(table, at, where, after=after, since=opened)
    closed, opened = facts["closed"], facts["opened"]
    if closed is not None and closed >= before.ended_at and (opened is None or opened <= closed):
        raise OutsideRound(table, at, TABLE_CLOSED, before=before, after=after, since=closed)
    if after is None:
        raise OutsideRound(table, at, AFTER_LAST, before=before, since=facts["last_at"])
    if after.shoe_id != before.shoe_id:
        shoe_closed = facts["shoe_closed"]
        since = shoe_closed if shoe_closed and shoe_closed >= before.ended_at else None
        raise OutsideRound(table, at, BETWEEN_SHOES, before=before, after=after, since=since)
    raise OutsideRound(table, at, BETWEEN_ROUNDS, before=before, after=after)

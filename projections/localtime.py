"""Times for people: the casino's zone, set once, and the one way every time is shown.

Officers and video systems work on the casino's wall clock, so the CLI's table output and the
console's pages show every time in that zone, to the second, with the zone named
(`21:14:07 EST`); JSON keeps ISO 8601 with its offset (`iso`). The zone comes from --tz, else
PITLOG_TZ, else UTC (`casino_zone`). Both the CLI and the console import this module: the
format is defined here once.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from events.errors import PitlogError

ENV = "PITLOG_TZ"
# A fixed offset, east positive: -05:00, +0530, +5, UTC+2, GMT-03:30.
_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)


def parse_zone(name: str) -> tzinfo:
    """'UTC', 'America/New_York', '-05:00', '+0530' or 'UTC+2' as a tzinfo: every time zone
    pitlog is given (--tz, PITLOG_TZ, the API's tz=) is read here, and only here."""
    text = name.strip()
    if m := _OFFSET.match(text):
        sign, hours, minutes = m.group(1), int(m.group(2)), int(m.group(3) or 0)
        if hours > 18 or minutes > 59:
            raise PitlogError(f"--tz {name!r}: an offset runs from -18:00 to +18:00")
        offset = timedelta(hours=hours, minutes=minutes)
        return timezone(-offset if sign == "-" else offset)
    if text.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise PitlogError(f"unknown time zone {name!r}: give an IANA name such as "
                          f"America/New_York, UTC, or an offset such as -05:00") from None


def sql_zone(zone: tzinfo) -> str:
    """The zone's name for DuckDB's timezone(): an IANA name as it is, a fixed offset as ICU's
    custom zone 'GMT-05:00' (east positive), UTC as 'UTC'."""
    key = getattr(zone, "key", None)  # a ZoneInfo
    if key:
        return str(key)
    offset = zone.utcoffset(None) or timedelta()
    if not offset:
        return "UTC"
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"GMT{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def casino_zone_name(name: str | None = None) -> str:
    """The casino's zone as given: the one named (--tz), else $PITLOG_TZ, else UTC. The one
    definition of the default: a command sends this to a server (whose own default is its
    `serve --tz`), so it answers as it would on the file."""
    return name or os.environ.get(ENV) or "UTC"


def casino_zone(name: str | None = None) -> tzinfo:
    """The zone named (--tz), else $PITLOG_TZ, else UTC (casino_zone_name)."""
    return parse_zone(casino_zone_name(name))


def zone_name(at: datetime, tz: tzinfo) -> str:
    """The zone's name at that moment: EST or EDT by the date, UTC, or UTC-05:00."""
    return at.astimezone(tz).tzname() or "UTC"


class Instant(datetime):
    """A moment asked for with a fraction of a second, `.000` included (parse_local): that
    instant. A moment written to the second is the whole second, as the video's clock shows
    it (projections/moment.py). A subclass, so the distinction survives the moment's way
    through zones and arithmetic to where it is read (asked_exactly), and written in ISO 8601
    it keeps its fraction (a query string to a server, a link, JSON): read back, it asks for
    the same instant."""

    def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
        if timespec == "auto":
            timespec = "microseconds" if self.microsecond % 1000 else "milliseconds"
        return super().isoformat(sep, timespec)


def asked_exactly(at: datetime) -> bool:
    """The moment was asked with a fraction of a second: an Instant, or a time with a fraction
    however it was made."""
    return isinstance(at, Instant) or bool(at.microsecond)


def local(at: datetime, tz: tzinfo) -> datetime:
    if at.tzinfo is None:  # DuckDB TIMESTAMP (no zone) values are UTC in every pitlog table
        at = at.replace(tzinfo=UTC)
    return at.astimezone(tz)


def clock(at: datetime | None, tz: tzinfo) -> str:
    """`21:14:07 EST`: the wall-clock time to the second, for the video."""
    if at is None:
        return ""
    t = local(at, tz)
    return f"{t:%H:%M:%S} {t.tzname()}"


def wall_clock(at: datetime | None, tz: tzinfo) -> str:
    """`2026-11-28 21:14:07`: date and time to the second on the casino's clock, without the
    zone's name: what a form's time field shows, and reads back (parse_local)."""
    return "" if at is None else f"{local(at, tz):%Y-%m-%d %H:%M:%S}"


def form_time(at: datetime | None, tz: tzinfo) -> str:
    """What a form's time field shows and reads back (parse_local): the wall clock
    (wall_clock), with the offset when that wall clock happens twice (the fall-back hour), so
    that sending the form again asks for the same instant, not the first of the two; and
    with the fraction of a second of a moment asked with one (Instant), so that it is asked
    as that instant again, not as the whole second."""
    if at is None:
        return ""
    shown = local(at, tz)
    naive = shown.replace(tzinfo=None)
    twice = (naive.replace(tzinfo=tz, fold=0).utcoffset()
             != naive.replace(tzinfo=tz, fold=1).utcoffset())
    return (wall_clock(at, tz) + (_fraction(shown) if asked_exactly(at) else "")
            + (shown.isoformat()[-6:] if twice else ""))


def as_written(at: datetime) -> str:
    """`2026-11-28 21:14:07`: a time without a zone that a query made a wall clock (`AT TIME
    ZONE` in `pitlog sql`), to the second as written: no zone to move it to, none to name."""
    return at.replace(tzinfo=None).isoformat(sep=" ", timespec="seconds")


def stamp(at: datetime | None, tz: tzinfo) -> str:
    """`2026-11-28 21:14:07 EST`: date, time to the second, zone."""
    if at is None:
        return ""
    return f"{wall_clock(at, tz)} {local(at, tz).tzname()}"


def stamp_asked(at: datetime, tz: tzinfo) -> str:
    """A moment someone asked about, as `stamp` shows it but with its fraction when it has one
    (`2026-11-28 23:02:58.900 UTC`): a moment outside a round that ended within its second
    (23:02:58.5) must not read as that round's end."""
    if not asked_exactly(at):
        return stamp(at, tz)
    return f"{local(at, tz):%Y-%m-%d} {clock_exact(at, tz)}"


def clock_exact(at: datetime, tz: tzinfo) -> str:
    """`clock` with the fraction of the second when there is one (`23:06:50.996 UTC`, to the
    millisecond, or to the microsecond when that is not exact): the rounds beside a moment
    asked with a fraction, so a round begun within that second does not read as begun before
    it."""
    t = local(at, tz)
    if not asked_exactly(at):
        return clock(at, tz)
    return f"{t:%H:%M:%S}{_fraction(t)} {t.tzname()}"


def _fraction(t: datetime) -> str:
    """`.996` (milliseconds), or `.500001` when the microseconds are not whole milliseconds."""
    return f".{t.microsecond // 1000:03d}" if not t.microsecond % 1000 else f".{t.microsecond:06d}"


def iso(at: datetime | date | None) -> str | None:
    """ISO 8601 with its offset, for JSON (a naive DuckDB TIMESTAMP is UTC)."""
    if at is None:
        return None
    if isinstance(at, datetime) and at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.isoformat()


def check_gaming_day(day: date) -> date:
    """`day` when a gaming day can be asked for: its span (from its start to the next day's,
    on any clock) lies within the years 1 to 9999."""
    if not date(1, 1, 2) <= day <= date(9999, 12, 30):
        raise PitlogError(f"gaming day {day} is out of range: give a day between 0001-01-02 "
                          f"and 9999-12-30")
    return day


_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _on_the_clock(at: datetime, tz: tzinfo, what: str, text: str) -> datetime:
    """A wall-clock time on the casino's clock, refused when that clock shows it twice or
    never (parse_local)."""
    first, second = at.replace(tzinfo=tz, fold=0), at.replace(tzinfo=tz, fold=1)
    try:
        offsets = (first.utcoffset(), second.utcoffset())
        back = first.astimezone(UTC).astimezone(tz).replace(tzinfo=None)
    except OverflowError:
        return first  # at the ends of datetime's range: parse_local says so
    if offsets[0] == offsets[1]:
        return first
    shown = [_offset_text(o) for o in offsets]
    if back == at:  # the hour the clocks went back: it happened at both offsets
        raise PitlogError(
            f"{what} {text!r} happened twice on the casino's clock ({first.tzname()} "
            f"{shown[0]}, then {second.tzname()} {shown[1]}): give the offset, e.g. "
            f"{at.isoformat()}{shown[0]} or {at.isoformat()}{shown[1]}")
    raise PitlogError(
        f"{what} {text!r} never happened on the casino's clock (the clocks went forward "
        f"over it, from {first.tzname()} {shown[0]} to {second.tzname()} {shown[1]}): give a "
        f"time outside that hour, or the offset the video's clock used")


def _offset_text(offset: timedelta | None) -> str:
    minutes = int((offset or timedelta()).total_seconds()) // 60
    return f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def parse_local(text: str, tz: tzinfo, what: str) -> datetime:
    """An ISO 8601 time; one without a zone is on the casino's wall clock. Returned in UTC,
    as an Instant when written with a fraction of a second (`21:14:05.000` is that instant,
    `21:14:05` the whole second: projections/moment.py).

    A wall-clock time that happens twice (the fall-back hour) or never (the spring-forward
    hour) is refused, naming the offsets to give: read as the first of the two, the video's
    time from the second pass brought up another hand, and a time that never was the hand an
    hour later (an outside audit, session 38).
    """
    try:
        at = datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    except ValueError:
        raise PitlogError(f"{what} {text!r} is not a time: write it as ISO 8601, e.g. "
                          f"2026-11-28T21:14:00 or 2026-11-28T21:14:00-05:00") from None
    if at.tzinfo is None:
        # a date alone is that day's start: where midnight is skipped (a zone that changes its
        # clocks then), the first instant the clock shows that day (fold=0 gives it)
        at = (at.replace(tzinfo=tz) if _DATE_ONLY.fullmatch(text.strip())
              else _on_the_clock(at, tz, what, text))
    try:
        utc = at.astimezone(UTC)
        # A fraction written, `.000` too, asks for the instant (Instant); a date has no dot or
        # comma, nor has an offset, so either one is the seconds' fraction.
        return Instant.combine(utc.date(), utc.timetz()) if re.search(r"[.,]", text) else utc
    except OverflowError:  # 0001-01-01 east of UTC, 9999-12-31 west of it
        raise PitlogError(f"{what} {text!r} is out of range: in UTC it falls outside the years "
                          f"1 to 9999") from None

"""The one time format of the CLI and the console (projections/localtime.py): the casino's wall
clock to the second with the zone named, across daylight-saving changes; ISO 8601 for JSON."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from events.errors import PitlogError
from projections.localtime import casino_zone, clock, iso, parse_local, parse_zone, stamp

NY = parse_zone("America/New_York")


def test_a_time_is_shown_to_the_second_with_the_zone_named() -> None:
    at = datetime(2026, 11, 29, 2, 14, 7, 987654, tzinfo=UTC)
    assert clock(at, NY) == "21:14:07 EST"  # cut to the second, not rounded
    assert stamp(at, NY) == "2026-11-28 21:14:07 EST"  # the local date, not the UTC one
    assert stamp(at, UTC) == "2026-11-29 02:14:07 UTC"


def test_the_autumn_change_shows_the_repeated_hour_with_its_own_zone_name() -> None:
    # 2026-11-01: 02:00 EDT becomes 01:00 EST; 01:30 happens twice.
    first = datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
    second = first + timedelta(hours=1)
    assert (clock(first, NY), clock(second, NY)) == ("01:30:00 EDT", "01:30:00 EST")
    assert stamp(datetime(2026, 11, 1, 5, 59, 59, tzinfo=UTC), NY) == "2026-11-01 01:59:59 EDT"
    assert stamp(datetime(2026, 11, 1, 6, 0, 0, tzinfo=UTC), NY) == "2026-11-01 01:00:00 EST"


def test_the_spring_change_skips_the_missing_hour() -> None:
    # 2026-03-08: 02:00 EST becomes 03:00 EDT.
    assert clock(datetime(2026, 3, 8, 6, 59, 59, tzinfo=UTC), NY) == "01:59:59 EST"
    assert clock(datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC), NY) == "03:00:00 EDT"


def test_a_local_input_time_is_read_on_the_casino_clock() -> None:
    assert parse_local("2026-11-28T21:14:07", NY, "--at") == datetime(
        2026, 11, 29, 2, 14, 7, tzinfo=UTC)
    # The repeated hour: with an offset, as written; without one it is refused, naming both
    # (taken for the first, EDT, a video's time from the second pass brought up another hand:
    # an outside audit, session 38). So is a time of the skipped spring hour.
    assert parse_local("2026-11-01T01:30-04:00", NY, "--at") == datetime(
        2026, 11, 1, 5, 30, tzinfo=UTC)
    assert parse_local("2026-11-01T01:30-05:00", NY, "--at") == datetime(
        2026, 11, 1, 6, 30, tzinfo=UTC)
    with pytest.raises(PitlogError) as twice:
        parse_local("2026-11-01 01:30", NY, "--at")
    assert str(twice.value) == (
        "--at '2026-11-01 01:30' happened twice on the casino's clock (EDT -04:00, then EST "
        "-05:00): give the offset, e.g. 2026-11-01T01:30:00-04:00 or 2026-11-01T01:30:00-05:00")
    with pytest.raises(PitlogError, match=r"--at '2026-03-08 02:30' never happened on the "
                                          r"casino's clock \(the clocks went forward over it, "
                                          r"from EST -05:00 to EDT -04:00\)"):
        parse_local("2026-03-08 02:30", NY, "--at")
    # a date alone is the day's start, also where the clock skips midnight: Santiago's first
    # instant of 6 September 2026 is 01:00 -03 (a second review, session 38: refused)
    assert parse_local("2026-09-06", ZoneInfo("America/Santiago"), "--since") == datetime(
        2026, 9, 6, 4, tzinfo=UTC)
    # the minutes either side of each change are read as usual
    assert parse_local("2026-11-01 00:59:59", NY, "--at") == datetime(
        2026, 11, 1, 4, 59, 59, tzinfo=UTC)
    assert parse_local("2026-11-01 02:00", NY, "--at") == datetime(2026, 11, 1, 7, tzinfo=UTC)
    assert parse_local("2026-03-08 03:00", NY, "--at") == datetime(2026, 3, 8, 7, tzinfo=UTC)
    assert parse_local("2026-03-08 01:59:59", NY, "--at") == datetime(
        2026, 3, 8, 6, 59, 59, tzinfo=UTC)
    with pytest.raises(PitlogError, match="--at 'at nine' is not a time"):
        parse_local("at nine", NY, "--at")


def test_json_keeps_iso_8601_with_the_offset() -> None:
    at = datetime(2026, 11, 29, 2, 14, 7, 5, tzinfo=UTC)
    assert iso(at) == "2026-11-29T02:14:07.000005+00:00"
    assert iso(datetime(2026, 11, 29, 2, 14, 7)) == "2026-11-29T02:14:07+00:00"  # naive is UTC
    assert iso(None) is None


def test_the_zone_comes_from_the_option_then_the_environment_then_utc(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PITLOG_TZ", raising=False)
    assert casino_zone() is UTC
    monkeypatch.setenv("PITLOG_TZ", "Europe/London")
    assert str(casino_zone()) == "Europe/London"
    assert str(casino_zone("Asia/Tokyo")) == "Asia/Tokyo"
    assert casino_zone("-05:00") == timezone(-timedelta(hours=5))
    at = datetime(2026, 11, 29, 2, 14, 7, tzinfo=UTC)
    assert clock(at, casino_zone("+05:30")) == "07:44:07 UTC+05:30"
    with pytest.raises(PitlogError, match="unknown time zone 'Mars/Olympus'"):
        casino_zone("Mars/Olympus")

"""Money and time zones, each defined once (issue 15, item 2): projections/money.py shows every
amount, projections/localtime.py reads every time zone, for the CLI, the console, the report and
the SQL alike."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from urllib.parse import unquote

import duckdb
import pytest
from repo_paths import REPO

from cli.people import shown_value
from events.errors import PitlogError
from projections.localtime import local, parse_local, parse_zone, sql_zone, stamp, wall_clock
from projections.moment import OutsideRound
from projections.money import dollars
from projections.reconcile import ReconcileError, zone_name
from projections.serve.templates.base import money
from projections.serve.templates.dispute import outside_body, picker


@pytest.mark.parametrize(("cents", "shown"), [
    (0, "$0.00"), (5, "$0.05"), (-5, "-$0.05"), (123456, "$1,234.56"),
    (-100_000_000_01, "-$100,000,000.01"), (None, ""),
    # a theoretical amount, exact to fractions of a cent: to the nearest, a half to the even
    (Decimal("60759.5"), "$607.60"), (Decimal("60760.5"), "$607.60"),
    (Decimal("-150.5"), "-$1.50"), (Decimal("-0.4"), "$0.00"), (Decimal("99.51"), "$1.00"),
])
def test_dollars_are_exact_from_integer_cents(cents: int | Decimal | None, shown: str) -> None:
    assert dollars(cents) == shown


def test_the_cli_and_the_console_show_an_amount_the_same_way() -> None:
    assert shown_value("handle_cents", 123456) == "$1,234.56"
    assert shown_value("theo_win_cents", Decimal("60759.5")) == "~$607.60"  # marked theoretical
    assert money(-250) == '<span class="money">-$2.50</span>'


def test_no_other_module_formats_money() -> None:
    """Thousands separators after a division of cents by 100, or a `$` written before a
    number: only projections/money.py does either."""
    pattern = re.compile(r"divmod\([^)]*,\s*100\)|\$\{|\"\$\"|'\$'|f\"[^\"]*\$\{")
    found = [f"{p.relative_to(REPO)}:{n}" for folder in ("cli", "projections", "events")
             for p in sorted((REPO / folder).rglob("*.py")) if p.name != "money.py"
             for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []


@pytest.mark.parametrize(("given", "sql"), [
    ("UTC", "UTC"), ("utc", "UTC"), ("America/New_York", "America/New_York"),
    ("-05:00", "GMT-05:00"), ("+0530", "GMT+05:30"), ("+5", "GMT+05:00"),
    ("UTC+2", "GMT+02:00"), ("GMT-3:30", "GMT-03:30"), ("+00:00", "UTC"),
])
def test_a_zone_is_read_once_and_named_for_duckdb_from_that_reading(given: str, sql: str) -> None:
    assert sql_zone(parse_zone(given)) == sql
    assert zone_name(given) == sql  # reconcile's calendar reads it the same way


@pytest.mark.parametrize("given", ["Mars/Olympus", "+19:00", "-05:75"])
def test_a_bad_zone_is_the_same_error_for_the_cli_and_for_reconcile(given: str) -> None:
    with pytest.raises(PitlogError) as cli_error:
        parse_zone(given)
    with pytest.raises(ReconcileError) as reconcile_error:
        zone_name(given)
    assert str(reconcile_error.value) == str(cli_error.value)


@pytest.mark.parametrize("given", ["America/New_York", "Europe/London", "-05:00", "+0530",
                                   "UTC+2", "UTC"])
@pytest.mark.parametrize("at", [datetime(2026, 3, 8, 6, 59, 59, tzinfo=UTC),
                                datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC),
                                datetime(2026, 11, 1, 5, 30, 0, tzinfo=UTC)])
def test_duckdb_and_python_read_the_wall_clock_alike(given: str, at: datetime) -> None:
    """The SQL's gaming days and the pages' times agree, across the DST changes too."""
    with duckdb.connect() as con:
        (wall,) = con.execute("SELECT timezone(?, ?::TIMESTAMPTZ)",
                              [sql_zone(parse_zone(given)), at]).fetchone()
    assert wall == local(at, parse_zone(given)).replace(tzinfo=None)


def test_no_other_module_formats_a_time_for_people() -> None:
    """A time shown to people to the second goes through projections/localtime.py (clock,
    stamp, wall_clock), so it is on the casino's clock and, where shown, its zone is named.
    export.py's format is the machines' ISO 8601 in UTC, not a time for people."""
    found = [f"{p.relative_to(REPO)}:{n}" for folder in ("cli", "projections")
             for p in sorted((REPO / folder).rglob("*")) if p.suffix in (".py", ".html")
             and p.name not in ("localtime.py", "export.py")
             for n, line in enumerate(p.read_text().splitlines(), 1) if "%H:%M:%S" in line]
    assert found == []


def test_the_dispute_form_shows_the_time_on_the_casino_clock_it_names() -> None:
    new_york = parse_zone("America/New_York")
    at = datetime(2026, 11, 29, 2, 14, 7, tzinfo=UTC)
    form = picker(["T01"], new_york, "T01", at, None)
    assert wall_clock(at, new_york) == "2026-11-28 21:14:07"
    assert 'value="2026-11-28 21:14:07"' in form and "Local time (America/New_York)" in form
    assert stamp(at, new_york) == "2026-11-28 21:14:07 EST"  # the same clock, zone named


@pytest.mark.parametrize(("at", "shown"), [
    (datetime(2026, 11, 1, 5, 30, tzinfo=UTC), "2026-11-01 01:30:00-04:00"),  # the first 01:30
    (datetime(2026, 11, 1, 6, 30, tzinfo=UTC), "2026-11-01 01:30:00-05:00"),  # the second
    (datetime(2026, 3, 8, 7, 30, tzinfo=UTC), "2026-03-08 03:30:00")])  # after spring forward
def test_the_dispute_form_keeps_the_instant_in_the_fall_back_hour(at: datetime,
                                                                 shown: str) -> None:
    """A moment in the hour that happens twice was shown as a bare 01:30:00, which the form
    then sent back as the first 01:30 (parse_local's fold=0): asked about the EST 01:30, a
    second look (adding a seat) rebuilt the EDT round. So was the known tables' link."""
    new_york = parse_zone("America/New_York")
    form = picker(["T01"], new_york, "T01", at, None)
    assert f'value="{shown}"' in form
    # the field as wide as the time it shows, so the offset is on screen, not cut off
    assert f'size="{len(shown)}"' in form
    assert parse_local(shown, new_york, "at") == at
    page = outside_body(OutsideRound("T9", at, "unknown table", known_tables=("T01",)),
                        new_york)
    (link,) = re.findall(r'href="/dispute\?table=T01&amp;at=([^"]+)"', page)
    assert parse_local(unquote(link), new_york, "at") == at

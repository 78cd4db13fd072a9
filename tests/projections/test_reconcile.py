"""Reconciliation and conservation on hand-built evenings, to the cent, with the theoretical
win exact (events.reddog.theory's Fractions), for each jurisdiction profile."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import pytest
from audit_scenarios import MONEY, ORIGINAL, PROMO, THEO, Floor, evening

from events.reddog.model import SettledAs
from events.reddog.rules import STANDARD_PAYTABLE
from events.reddog.theory import original_wager_edge, raise_edge
from projections.memory import memory_bytes
from projections.reconcile import (
    Calendar,
    ReconcileError,
    conservation,
    edge_denominator,
    edge_rows,
    reconcile,
    run_rows,
)
from projections.snapshot import open_for_reading

NEW_YORK = Calendar.parse("America/New_York", "06:00", "06:00,14:00,22:00")

@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return evening(tmp_path_factory.mktemp("evening"))


def _by(rows: list[dict[str, Any]], *keys: str) -> dict[Any, dict[str, Any]]:
    return {tuple(r[k] for k in keys) if len(keys) > 1 else r[keys[0]]: r for r in rows}


def test_reconcile_by_table_gives_exact_money_and_exact_theoretical_win(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = _by(reconcile(con, ["table"], NEW_YORK), "table_id")
    assert sorted(rows) == ["T01", "T02", "T03"]
    for table, (n, handle, paid, collected, returned, net, hold) in MONEY.items():
        r = rows[table]
        assert (r["rounds"], r["handle_cents"], r["paid_cents"], r["collected_cents"],
                r["returned_cents"], r["net_win_cents"], r["hold_pct"]) == \
            (n, handle, paid, collected, returned, net, hold)
        assert r["theo_win_exact"] == THEO[table]
        assert r["theo_win_cents"] == Decimal(round(THEO[table] * 100)) / 100
        variance = net - THEO[table]
        assert r["variance_cents"] == Decimal(round(variance * 100)) / 100
        assert r["variance_pct"] == Decimal(round(variance * 100 * 10_000 / handle)) / 10_000
        assert r["expected_win_cents"] == net and r["settlement_difference_cents"] == 0
        assert r["exceptions"] == 0


def test_promotional_and_voided_rounds_are_in_the_handle(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = _by(reconcile(con, ["table"]), "table_id")
    # T01's 12 to 1 three of a kind: 30000 paid on 2500; T03's voided round: 3000 returned
    # and counted in the handle (void wagers were wagered; theory counts a tie as a 0 win).
    assert rows["T01"]["raises_cents"] == 2000
    assert rows["T03"]["handle_cents"] == 18000 and rows["T03"]["returned_cents"] == 3000
    assert rows["T01"]["flags"] == rows["T02"]["flags"] == rows["T03"]["flags"] == ""


def test_reconcile_by_dealer_follows_the_tap_in(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = _by(reconcile(con, ["dealer"], NEW_YORK), "dealer")
    assert {d: (r["rounds"], r["handle_cents"], r["net_win_cents"]) for d, r in rows.items()} \
        == {"D1": (2, 5000, -32500), "D4": (2, 5500, 2000), "D2": (3, 3000, -3000),
            "D3": (3, 18000, -5000)}
    assert rows["D4"]["theo_win_exact"] == \
        4500 * original_wager_edge(6, PROMO) + 1000 * raise_edge(6, 7, PROMO)


def test_reconcile_by_table_and_day_and_shift_combine(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        by_day = reconcile(con, ["table", "day"], NEW_YORK)
        by_shift = reconcile(con, ["shift"], NEW_YORK)
    assert [(r["table_id"], r["gaming_day"]) for r in by_day] == [
        ("T01", date(2026, 11, 28)), ("T02", date(2026, 11, 28)), ("T03", date(2026, 11, 28))]
    # 18:00 in New York is in the 14:00-22:00 shift of gaming day 28 November.
    assert [(r["gaming_day"], r["shift"], r["rounds"], r["handle_cents"]) for r in by_shift] \
        == [(date(2026, 11, 28), "14:00-22:00", 10, 31500)]
    assert by_shift[0]["theo_win_exact"] == sum(THEO.values(), Fraction(0))


def _two_rounds_around_six(folder: Path) -> Path:
    """Rounds at 05:30 and 06:30 New York time on 29 November (10:30 and 11:30 UTC)."""
    floor = Floor(folder)
    t = floor.table("T09", at=datetime(2026, 11, 29, 10, 29, 50, tzinfo=UTC))
    t.open_table("nj-casino")
    t.new_shoe("T09-S1")
    t.play("3C 9H 5D", {1: 1000})
    t.clock = datetime(2026, 11, 29, 11, 30, tzinfo=UTC)
    t.play("3D 9S KD", {1: 2500})
    return floor.build()


@pytest.mark.parametrize("tz", ["America/New_York", "-05:00", "UTC-5"])
def test_gaming_day_starts_at_six_local_not_midnight(tmp_path: Path, tz: str) -> None:
    db = _two_rounds_around_six(tmp_path)
    cal = Calendar.parse(tz, "06:00", "06:00,14:00,22:00")
    with duckdb.connect(str(db), read_only=True) as con:
        rows = reconcile(con, ["shift"], cal)
    assert [(r["gaming_day"], r["shift"], r["handle_cents"], r["net_win_cents"])
            for r in rows] == [(date(2026, 11, 28), "22:00-06:00", 1000, -1000),
                               (date(2026, 11, 29), "06:00-14:00", 2500, 2500)]


def test_gaming_day_start_and_shifts_are_configurable(tmp_path: Path) -> None:
    db = _two_rounds_around_six(tmp_path)
    cal = Calendar.parse("America/New_York", "04:00", "04:00,12:00,20:00")
    with duckdb.connect(str(db), read_only=True) as con:
        rows = reconcile(con, ["shift"], cal)
    assert [(r["gaming_day"], r["shift"], r["rounds"]) for r in rows] == [
        (date(2026, 11, 29), "04:00-12:00", 2)]


def test_a_table_paying_every_round_beyond_theory_is_flagged(tmp_path: Path) -> None:
    floor = Floor(tmp_path)
    t = floor.table("T07")
    t.open_table("nj-casino")
    t.new_shoe("T07-S1")
    for _ in range(20):
        t.play("2S 10H KD", {1: 1000})  # the house wins 1000 every round
    with duckdb.connect(str(floor.build()), read_only=True) as con:
        (row,) = reconcile(con, ["table"])
        (lenient,) = reconcile(con, ["table"], sigma=5.0)
    # Equal deviations d: z = 20 d / sqrt(20 d^2) = sqrt(20).
    assert row["z_score"] == 4.472 and row["flags"] == "HOLD_VARIANCE"
    assert lenient["flags"] == ""
    assert row["net_win_cents"] == 20000 and row["hold_pct"] == Decimal("100.0000")


def test_conservation_balances_to_the_cent_per_table_and_day(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = _by(conservation(con, ["table", "day"], NEW_YORK), "table_id")
    t1 = rows["T01"]
    assert (t1["money_in_cents"], t1["paid_cents"], t1["winner_stakes_cents"],
            t1["returned_cents"], t1["money_out_cents"], t1["collected_cents"],
            t1["net_win_cents"], t1["difference_cents"], t1["balanced"]) == \
        (10500, 32500, 5000, 3500, 41000, 2000, -30500, 0, True)
    for r in rows.values():
        assert r["money_in_cents"] == r["money_out_cents"] + r["net_win_cents"]
        assert r["gaming_day"] == date(2026, 11, 28) and r["balanced"]


def test_conservation_finds_every_stake_not_accounted_for_once(tmp_path: Path) -> None:
    floor = Floor(tmp_path)
    t = floor.table("T05")
    t.open_table("nj-casino")
    t.new_shoe("T05-S1")
    won, lost = SettledAs.WON, SettledAs.LOST
    t.play("3C 9H 5D", {1: 1000, 2: 500, 3: 2500}, override={
        (1, ORIGINAL): [(won, 1000, 1), (won, 1000, 1)],  # the stake handed back twice
        (2, ORIGINAL): [],  # never settled
    })
    t.play("3D 9S KD", {1: 1000}, override={(1, ORIGINAL): [(lost, 600, None)]})  # short
    t.play("8S 9H", {}, override={})
    t.begin()
    t.settle(4, ORIGINAL, SettledAs.VOID, 700)  # a return with no wager
    t.end([])
    with duckdb.connect(str(floor.build()), read_only=True) as con:
        (row,) = conservation(con, ["table"])
    # In: 1000 + 500 + 2500 + 1000. Out: paid 2000 + 2500, stakes 2 x 1000 + 2500, returned 700.
    assert (row["money_in_cents"], row["money_out_cents"], row["net_win_cents"]) == \
        (5000, 9700, 600 - 4500)
    # -1000 (stake twice) + 500 (unsettled) + 400 (short) - 700 (no wager) = -800.
    assert row["difference_cents"] == -800 and row["balanced"] is False


def test_a_win_paid_on_no_wager_balances_and_is_the_ledgers_not_owed(tmp_path: Path) -> None:
    """docs/auditing.md: a winning settlement with no wager leaves difference_cents at 0 (its
    payout is in money out and in net win, and no stake went back with it); the ledger is where
    it shows, NOT_OWED. A void with no wager, beside it, is the -700 it always was."""
    floor = Floor(tmp_path)
    t = floor.table("T06")
    t.open_table("nj-casino")
    t.new_shoe("T06-S1")
    t.play("3C 9H 5D", {1: 1000})  # by the rules: spread 5, 5D inside, won 1 to 1
    t.begin()
    t.settle(4, ORIGINAL, SettledAs.WON, 50000, 1)  # a win paid where no wager was placed
    t.end([])
    with duckdb.connect(str(floor.build()), read_only=True) as con:
        (row,) = conservation(con, ["table"])
        statuses = con.execute("SELECT seat, status, actual_paid_cents FROM ledger "
                               "ORDER BY seat").fetchall()
    assert statuses == [(1, "OK", 1000), (4, "NOT_OWED", 50000)]
    assert (row["money_in_cents"], row["money_out_cents"], row["net_win_cents"]) == \
        (1000, 1000 + 1000 + 50000, -1000 - 50000)
    assert row["difference_cents"] == 0 and row["balanced"] is True


def test_reconcile_runs_on_a_read_only_connection(db: Path) -> None:
    con = open_for_reading(db)
    try:
        rows = reconcile(con, ["table"])
        assert len(rows) == 3
        with pytest.raises(duckdb.Error):
            con.execute("CREATE TABLE nope (x INTEGER)")
    finally:
        con.close()


def test_the_audit_queries_run_within_the_writers_memory_limit_and_restore_it(
        db: Path) -> None:
    # A read-only connection has DuckDB's default, 80% of the machine: the ledger's joins and
    # windows then grew with the store (issue 19 item 5). run_rows caps the query's memory and
    # threads, then restores both.
    con = open_for_reading(db)
    try:
        con.execute("SET memory_limit = '4GB'")
        con.execute("SET threads = 2")
        (during,) = run_rows(con, "SELECT current_setting('memory_limit') AS m, "
                                  "current_setting('threads') AS t", {})
        ((after, threads),) = con.execute(
            "SELECT current_setting('memory_limit'), current_setting('threads')").fetchall()
        con.execute("SET memory_limit = '100MB'")  # a lower limit is never raised
        (lower,) = run_rows(con, "SELECT current_setting('memory_limit') AS m", {})
    finally:
        con.close()
    assert during["m"] == "488.2 MiB"  # DuckDB's spelling of 512MB (memory.DEFAULT_MEMORY_LIMIT)
    assert during["t"] == 1 and threads == 2  # one thread (memory.threads_at_most), then two
    # restored from DuckDB's rounded spelling ('3.7 GiB'), so to within that rounding
    assert abs(memory_bytes(after) - 4e9) < 0.05 * 4e9
    assert lower["m"] == "95.3 MiB"


def test_the_audit_queries_leave_a_writers_shared_settings_alone(db: Path) -> None:
    """On `pitlog serve`'s read-write connection (its requests read through cursors of it),
    memory_limit and threads are the database instance's: lowering them for a reconcile would
    also bind the follower's batches, and two requests at once could leave threads at 1 for
    good (one restoring what the other lowered). run_rows caps only a read-only connection."""
    con = duckdb.connect(str(db))
    try:
        con.execute("SET threads = 2")
        con.execute("SET memory_limit = '1GB'")
        cur = con.cursor()  # as a request of pitlog serve reads
        (during,) = run_rows(cur, "SELECT current_setting('memory_limit') AS m, "
                                  "current_setting('threads') AS t", {})
        cur.close()
    finally:
        con.close()
    assert during["t"] == 2 and during["m"] == "953.6 MiB"  # DuckDB's spelling of 1GB


def test_a_stock_duckdb_client_sees_the_ledger_paytables_and_calendar_macros(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con:
        statuses = con.execute("SELECT status, count(*) FROM ledger GROUP BY ALL").fetchall()
        valid = con.execute("SELECT table_id, profile, pays_three_of_a_kind, valid "
                            "FROM paytables ORDER BY table_id").fetchall()
        days = con.execute("SELECT DISTINCT gaming_day(started_at, 'America/New_York', 360), "
                           "shift_name(started_at, 'America/New_York', [360, 840, 1320], "
                           "['day', 'swing', 'grave']) FROM ledger").fetchall()
    assert statuses == [("OK", 16)]
    assert valid == [("T01", "nj-casino", 12, True), ("T02", "nj-casino-night", 11, True),
                     ("T03", "gaming-authority", 11, True)]
    assert days == [(date(2026, 11, 28), "swing")]


@pytest.mark.parametrize("decks", range(1, 9))
def test_edges_are_integers_over_one_denominator_per_deck_count(decks: int) -> None:
    for row in edge_rows(decks, PROMO) + edge_rows(decks, STANDARD_PAYTABLE):
        assert row["edge_den"] == edge_denominator(decks)
        edge = Fraction(row["edge_num"], row["edge_den"])
        pt = PROMO if row["pays_three_of_a_kind"] == 12 else STANDARD_PAYTABLE
        assert edge == (original_wager_edge(decks, pt) if row["spread"] == 0
                        else raise_edge(decks, row["spread"], pt))


@pytest.mark.parametrize(("args", "message"), [
    (("Mars/Olympus", "06:00", "06:00"), "unknown time zone"),
    (("UTC", "6am", "06:00"), "gaming-day start '6am'"),
    (("UTC", "06:00", "06:00,25:00"), "shift start '25:00'"),
    (("UTC", "06:00", " , "), "at least one start time"),
])
def test_a_bad_calendar_is_a_clear_error(db: Path, args: tuple[str, str, str],
                                         message: str) -> None:
    with duckdb.connect(str(db), read_only=True) as con, \
            pytest.raises(ReconcileError, match=message):
        reconcile(con, ["table"], Calendar.parse(*args))


def test_an_unknown_grouping_is_a_clear_error(db: Path) -> None:
    with duckdb.connect(str(db), read_only=True) as con, \
            pytest.raises(ReconcileError, match="cannot group by 'pit'"):
        reconcile(con, ["pit"])


@pytest.mark.parametrize(("shifts", "message"), [
    ("06:00,06:00", "--shifts '06:00,06:00' gives the start 06:00 twice: each shift runs from "
                    "its start to the next one, so give each start once, e.g. 06:00,14:00,22:00"),
    ("06:00,14:00,6:00", "--shifts '06:00,14:00,6:00' gives the start 06:00 twice: each shift "
                         "runs from its start to the next one, so give each start once, e.g. "
                         "06:00,14:00,22:00"),
    ("06:00,,14:00", "--shifts '06:00,,14:00' has an empty entry (two commas in a row, or one at "
                     "an end): list each shift's start once, comma-separated, e.g. "
                     "06:00,14:00,22:00"),
])
def test_a_shift_start_given_twice_or_an_empty_entry_is_refused(shifts: str,
                                                                message: str) -> None:
    """--shifts 06:00,06:00 was accepted (the set dropped the second start silently)."""
    with pytest.raises(ReconcileError) as exc:
        Calendar.parse("UTC", "06:00", shifts)
    assert str(exc.value) == message


def test_shift_starts_in_any_order_are_the_same_calendar() -> None:
    """Each shift runs to the next start on the clock: the order given carries no meaning."""
    assert Calendar.parse("UTC", "06:00", "22:00,06:00,14:00") == \
        Calendar.parse("UTC", "06:00", "06:00,14:00,22:00")

"""`pitlog anomalies --day` takes the gaming day reconcile groups rounds by (sql/ledger.sql's
gaming_day: the casino's wall-clock date of the moment less the day's start), also on the
night the clocks go back. It used its own bounds, the day's start read once on the wall clock
(fold=0): with a start inside the repeated hour the two disagreed, and an anomaly at 01:10 EST
(after 01:30 EDT had passed) was listed under 1 November while reconcile counted its round
on 31 October."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import pytest
from cli_support import run
from table_builder import TableBuilder, recorder_for

from events.log.embedded.log import EmbeddedLog
from projections.anomalies import AnomalyFilter, list_anomalies
from projections.projector import project
from projections.reconcile import Calendar

NEW_YORK = "America/New_York"  # 1 November 2026: 02:00 EDT (06:00 UTC) is 01:00 EST again


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One table through the night the clocks go back: a round with a card dealt while a burn
    is owed (MISSING_BURN, at the round's first card) at 01:10 EDT, 01:40 EDT, 01:10 EST and
    01:40 EST (05:10, 05:40, 06:10 and 06:40 UTC), rounds 1 to 4."""
    folder = tmp_path_factory.mktemp("dst")
    log = EmbeddedLog(folder / "log")
    t = TableBuilder(recorder_for(log), clock=datetime(2026, 11, 1, 4, 0, tzinfo=UTC))
    t.open_table()
    t.tap_in("D1")
    t.load("S1")  # no burn: round 1's first card is dealt while one is owed
    for n, (hour, minute) in enumerate(((5, 10), (5, 40), (6, 10), (6, 40)), start=1):
        if n > 1:
            t.tap_in(f"D{n}")  # a new dealer, no burn: owed again
        t.clock = datetime(2026, 11, 1, hour, minute - 1, 59, tzinfo=UTC)
        t.round_no = n
        t.deal_round("4C JS 7D", {1: 500})  # the first card at hour:minute:01
    t.flush()
    db = folder / "s.duckdb"
    project(log, str(db), publish_alerts=False)
    log.close()
    return db


def _rounds(con: duckdb.DuckDBPyConnection, day: str, start: str) -> list[int]:
    f = AnomalyFilter(codes=("MISSING_BURN",), day=date.fromisoformat(day))
    return sorted(r["round_no"] for r in list_anomalies(
        con, f, calendar=Calendar.parse(NEW_YORK, start)))


def _reconciled(con: duckdb.DuckDBPyConnection, day: str, start: str) -> list[int]:
    """The rounds reconcile counts on that gaming day (sql/ledger.sql's gaming_day)."""
    minutes = int(start[:2]) * 60 + int(start[3:])
    return [n for (n,) in con.execute(
        "SELECT round_no FROM round_money WHERE gaming_day(started_at, $tz, $m) = $d "
        "ORDER BY round_no", {"tz": NEW_YORK, "m": minutes, "d": date.fromisoformat(day)}
    ).fetchall()]


@pytest.mark.parametrize(("start", "days"), [
    # The day starts in the repeated hour: 01:10 EST reads before 01:30 again.
    ("01:30", {"2026-10-31": [1, 3], "2026-11-01": [2, 4]}),
    # The usual start, and one before the night: every round on one day (the other has no
    # round: an error, as on any day not played).
    ("06:00", {"2026-10-31": [1, 2, 3, 4]}),
    ("00:30", {"2026-11-01": [1, 2, 3, 4]}),
])
def test_an_anomalys_gaming_day_is_its_rounds_reconcile_day(store: Path, start: str,
                                                            days: dict[str, list[int]]) -> None:
    with duckdb.connect(str(store), read_only=True) as con:
        for day, rounds in days.items():
            assert _rounds(con, day, start) == rounds
            assert _reconciled(con, day, start) == rounds


def test_the_cli_lists_the_same_days(store: Path) -> None:
    for day, rounds in (("2026-10-31", ["1", "3"]), ("2026-11-01", ["2", "4"])):
        proc = run("anomalies", "--db", str(store), "--code", "MISSING_BURN", "--day", day,
                   "--tz", NEW_YORK, "--gaming-day-start", "01:30", "-f", "csv")
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        at = lines[0].split(",").index("round_no")
        assert sorted(line.split(",")[at] for line in lines[1:]) == rounds

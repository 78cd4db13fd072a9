"""The API's calendar on the server's clock: `pitlog serve --tz America/New_York` puts gaming
days and shifts on New York's clock when a request names no zone (they were on UTC's: an
outside review, session 41), a request's `tz=` still wins, `/api/anomalies` reads a `since=` or
`until=` without an offset on that `tz=`, and the CLI sends the zone it reads the file on, so a
command prints the same answer whether or not a server runs, whatever the server's zone.

The evening starts at 05:55 in New York (10:55 UTC): in New York its rounds straddle the gaming
day's start (06:00) and the 22:00-06:00 / 06:00-14:00 shift change; in UTC all are in the
06:00-14:00 shift of 2026-11-28. A real server (tests/serve_support.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import duckdb
import pytest
from serve_support import Server, query, run_cli, start_server

from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections.anomalies import AnomalyFilter, list_anomalies
from projections.reconcile import Calendar, conservation, ledger_rows, reconcile
from projections.serve.encoding import encoder

NEW_YORK = ZoneInfo("America/New_York")
LEDGER_ROWS = 71  # the wagers and raises of the rounds before 06:00 in New York
CONFIG = SimConfig(seed=5, tables=2, rounds=30, seats=4, irregularities=0.03,
                   per_code={"LATE_RAISE": 0.3}, start=datetime(2026, 11, 28, 10, 55, tzinfo=UTC))

# The CLI on the file, then through the server: with --tz, with PITLOG_TZ, with neither (UTC).
COMMANDS: dict[str, tuple[list[str], dict[str, str]]] = {
    "anomalies-day-utc": (["anomalies", "--day", "2026-11-27", "-f", "json"], {}),
    "anomalies-day-ny": (["anomalies", "--day", "2026-11-27", "--tz", "America/New_York",
                          "-f", "json"], {}),
    "anomalies-day-env": (["anomalies", "--day", "2026-11-27", "-f", "json"],
                          {"PITLOG_TZ": "America/New_York"}),
    "reconcile-shift-utc": (["reconcile", "--by", "shift", "-f", "json"], {}),
    "reconcile-shift-ny": (["reconcile", "--by", "shift", "--tz", "America/New_York", "-f",
                            "json"], {}),
}


@dataclass
class Evening:
    server: Server
    db: Path
    direct: dict[str, tuple[int, str, str]]
    expected: dict[str, Any]


def _run(name: str, db: Path) -> tuple[int, str, str]:
    args, env = COMMANDS[name]
    r = run_cli(*args, "--db", str(db), env=env)
    return r.returncode, r.stdout, r.stderr


def _expected(db: Path) -> dict[str, Any]:
    """The library's answers on the file, encoded as a New York server encodes them."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        ny = Calendar.parse("America/New_York")
        found = {
            "reconcile-ny": reconcile(con, ["shift"], ny),
            "reconcile-utc": reconcile(con, ["shift"], Calendar()),
            "conservation-ny": conservation(con, ["day"], ny),
            "ledger-day-ny": ledger_rows(con, day=date(2026, 11, 27), calendar=ny),
            "anomalies-day-ny": list_anomalies(con, AnomalyFilter(day=date(2026, 11, 27)),
                                               calendar=ny),
            "anomalies-since-11-utc": list_anomalies(
                con, AnomalyFilter(since=datetime(2026, 11, 28, 11, 0, tzinfo=UTC)),
                calendar=Calendar()),
        }
    finally:
        con.close()
    return json.loads(json.dumps(found, default=encoder(NEW_YORK)))


@pytest.fixture(scope="module")
def evening(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Evening]:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PITLOG_TZ", raising=False)  # "no zone given" is UTC here, whatever the shell's
        mp.delenv("PITLOG_SERVER", raising=False)
        tmp = tmp_path_factory.mktemp("serve-zone")
        log, db = tmp / "log", tmp / "pit.duckdb"
        events = EmbeddedLog(log, partitions=2)
        simulate(events, CONFIG)
        events.close()
        done = run_cli("project", "--log", str(log), "--db", str(db))
        assert done.returncode == 0, done.stderr
        direct = {name: _run(name, db) for name in COMMANDS}
        expected = _expected(db)
        server = start_server(log, db, tmp, "--tz", "America/New_York")
        try:
            yield Evening(server, db, direct, expected)
        finally:
            assert server.stop() == 0, server.err.read_text()


def _shifts(rows: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(r["gaming_day"], r["shift"], r["rounds"]) for r in rows]


def test_reconcile_by_shift_without_a_zone_is_on_the_servers_clock(evening: Evening) -> None:
    """05:55 in New York is the 22:00-06:00 shift of 2026-11-27 there; the server put it in
    the 06:00-14:00 shift of 2026-11-28 (UTC's) for `serve --tz America/New_York`."""
    got = evening.server.json(query("/api/reconcile", by="shift"))
    assert _shifts(got) == [("2026-11-27", "22:00-06:00", 20),
                            ("2026-11-28", "06:00-14:00", 40)]
    assert got == evening.expected["reconcile-ny"]
    # ledger and conservation take the same calendar
    days = evening.server.json(query("/api/conservation", by="day"))
    assert [r["gaming_day"] for r in days] == ["2026-11-27", "2026-11-28"]
    assert days == evening.expected["conservation-ny"]
    ledger = evening.server.json(query("/api/ledger", day="2026-11-27"))
    assert ledger == evening.expected["ledger-day-ny"] and len(ledger) == LEDGER_ROWS


def test_anomalies_of_a_day_without_a_zone_are_on_the_servers_clock(evening: Evening) -> None:
    """`day=2026-11-27` on a New York server: the anomalies from 05:55 to 06:00 there (the
    server answered 404 "no rounds on gaming day 2026-11-27 (gaming days start at 06:00 in
    UTC)")."""
    r = evening.server.get(query("/api/anomalies", day="2026-11-27"))
    assert r.status == 200, r.body
    got = r.json()
    assert got == evening.expected["anomalies-day-ny"]
    assert len(got) == 12
    assert (got[0]["code"], got[0]["seqs"]) == ("CARD_OUTSIDE_ROUND", [43])
    assert (got[-1]["code"], got[-1]["occurred_at"]) == \
        ("WRONG_SETTLEMENT", "2026-11-28T05:59:59.557829-05:00")


def test_a_requests_tz_overrides_the_servers_zone(evening: Evening) -> None:
    """tz=UTC: UTC's shifts and days, and a since= without an offset on UTC's clock (it was
    read on the server's: 11:00 New York, after the evening, so no row)."""
    s = evening.server
    got = s.json(query("/api/reconcile", by="shift", tz="UTC"))
    assert _shifts(got) == [("2026-11-28", "06:00-14:00", 60)]
    assert got == evening.expected["reconcile-utc"]
    r = s.get(query("/api/anomalies", day="2026-11-27", tz="UTC"))
    assert (r.status, r.json()) == (404, {"error": "no rounds on gaming day 2026-11-27 (gaming "
                                                   "days start at 06:00 in UTC); rounds were "
                                                   "played on 2026-11-28"})
    since = s.json(query("/api/anomalies", since="2026-11-28T11:00:00", tz="UTC"))
    assert since == evening.expected["anomalies-since-11-utc"]
    assert len(since) == 24 and since[0]["occurred_at"] == "2026-11-28T06:00:00.896326-05:00"
    # the same moment written on the server's clock, without tz=
    assert s.json(query("/api/anomalies", since="2026-11-28T06:00:00")) == since
    # an empty window is said on the clock its times were read on
    r = s.get(query("/api/anomalies", since="2026-11-28T11:00:00", until="2026-11-28T11:00:00",
                    tz="UTC"))
    assert r.status == 400 and "UTC" in r.json()["error"], r.json()


def test_the_cli_prints_the_files_answer_through_a_server_in_another_zone(
        evening: Evening) -> None:
    """Each command through the New York server as on the file: with --tz, with PITLOG_TZ, and
    with neither (UTC: `anomalies --day` sent no zone, and the server answered on its own)."""
    for name in COMMANDS:
        args, env = COMMANDS[name]
        served = run_cli(*args, "--db", str(evening.db), "--server", evening.server.url,
                         env=env)
        code, out, err = evening.direct[name]
        assert served.returncode == code, (name, served.stderr)
        if code == 0:
            assert json.loads(served.stdout) == json.loads(out), name
        else:
            assert served.stderr.startswith(err.strip()), (name, served.stderr)
            assert evening.server.url in served.stderr, name
    # UTC's answer on the file: no round on 2026-11-27
    assert evening.direct["anomalies-day-utc"][0] == 1
    assert evening.direct["anomalies-day-utc"][2].startswith(
        "Error: no rounds on gaming day 2026-11-27 (gaming days start at 06:00 in UTC)")
    # New York's, by --tz or PITLOG_TZ, is the server's own answer without tz=
    ny = json.loads(evening.direct["anomalies-day-ny"][1])
    assert evening.direct["anomalies-day-env"][1] == evening.direct["anomalies-day-ny"][1]
    api = evening.server.json(query("/api/anomalies", day="2026-11-27"))
    assert [(a["code"], a["seqs"]) for a in ny] == [(a["code"], a["seqs"]) for a in api]
    assert len(ny) == 12
    assert _shifts(json.loads(evening.direct["reconcile-shift-utc"][1])) == \
        [("2026-11-28", "06:00-14:00", 60)]

"""Kept replays (projections/replay_kept.py, read by projections/replay.py): the writer's rows of
each shoe's replay (an open shoe's kept only while idle and quiet) are what its queries give, a
replay reads them while nothing it read has changed and never after, and a keeper killed in the
middle of a shoe leaves no half of one.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from live_support import assert_kept_replays_hold
from repo_paths import REPO
from serve_support import query, start_server, wait_until
from store_template import new_store
from table_builder import EVENING, TableBuilder, recorder_for

from events.errors import ProjectionError
from events.log.embedded.log import EmbeddedLog
from events.recording.recorder import Recorder
from events.reddog import model
from events.simulation.simulator import SimConfig, simulate
from projections import follow, replay, replay_kept
from projections.dispute import dispute
from projections.follow import Follower
from projections.projector import project
from projections.replay import replay_shoe
from projections.serve.encoding import encoder
from projections.views import VIEW_NAMES

CLOSED_TX = "TX-SA"  # TX's first shoe, closed; TX-SB stays open
OPEN_TX = "TX-SB"


def _closed_shoes(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str]]:
    return {(str(t), str(s)) for t, s in con.execute(
        "SELECT DISTINCT table_id, shoe_id FROM events WHERE event_type = 'ShoeClosed'"
    ).fetchall()}


def _all_shoes(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str]]:
    return {(str(t), str(s)) for t, s in con.execute(
        "SELECT DISTINCT table_id, shoe_id FROM events WHERE shoe_id IS NOT NULL").fetchall()}


def _kept(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str]]:
    return {(str(t), str(s)) for t, s in con.execute(
        f"SELECT table_id, shoe_id FROM {replay.SHOES}").fetchall()}


def _tx(log: EmbeddedLog) -> None:
    tx = TableBuilder(recorder_for(log), "TX", clock=EVENING + timedelta(days=30))
    tx.open_table()
    tx.tap_in("DX1")
    tx.new_shoe(CLOSED_TX)
    for n, cards in enumerate(("3S QH 7C", "8C 8D 2S", "4D 9H 5C"), start=1):
        tx.round_no = n
        tx.deal_round(cards, {1: 1000, 2: 500})
    tx.round_no = None
    tx.emit(model.ShoeClosed(cards_remaining=300))
    tx.new_shoe(OPEN_TX)
    tx.round_no = 1
    tx.deal_round("2H 9S 6D", {1: 500})
    tx.flush()


def _evening(folder: Path) -> tuple[Path, Path]:
    """A log (two simulated tables, T02 dealing single-deck shoes, and TX) and its projected
    store with no kept replay."""
    log = EmbeddedLog(folder / "log")
    simulate(log, SimConfig(seed=19, tables=2, rounds=45, irregularities=0.04,
                            dealer_shift_rounds=7, profiles=("nj-casino", "nj-casino-night")))
    _tx(log)
    db = new_store(folder / "pitlog.duckdb")
    project(log, db)
    return folder / "log", db


@pytest.fixture(scope="module")
def evening(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _evening(tmp_path_factory.mktemp("kept"))


@pytest.fixture
def store(evening: tuple[Path, Path], tmp_path: Path) -> Path:
    return Path(shutil.copy(evening[1], tmp_path / "pitlog.duckdb"))


def _keep_all(con: duckdb.DuckDBPyConnection) -> int:
    return replay_kept.ReplayKeeper(con).keep_some(float("inf"), backlog=True)


def test_the_follower_keeps_every_shoe_as_its_queries_give_it(
        evening: tuple[Path, Path], store: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(follow, "IDLE_BUDGET_S", float("inf"))  # the whole backlog in a round
    stop = threading.Event()
    with duckdb.connect(str(store)) as con:
        assert replay.kept_tables_current(con) is False  # projected without a follower
        follower = Follower(con, EmbeddedLog(evening[0]), stop_event=stop, poll_interval=0.01,
                            on_round=lambda commit: stop.set())
        follower.run()
        closed = _closed_shoes(con)
        assert len(closed) > 5 and (("TX", CLOSED_TX)) in closed
        # every shoe once idle: the closed ones, then the open ones (TX's second among them)
        assert _kept(con) == _all_shoes(con) and ("TX", OPEN_TX) in _kept(con) - closed
        assert_kept_replays_hold(con)
        # The kept rows are the whole replay: a single-deck shoe's every event and hand.
        counts = dict(((str(t), str(s)), (int(e), int(h))) for t, s, e, h in con.execute(
            "SELECT k.table_id, k.shoe_id, (SELECT count(*) FROM replay_events AS e WHERE "
            "e.table_id = k.table_id AND e.shoe_id = k.shoe_id), (SELECT count(*) FROM "
            "replay_hands AS h WHERE h.table_id = k.table_id AND h.shoe_id = k.shoe_id) "
            "FROM replay_shoes AS k").fetchall())
        tx = replay.computed(con, replay.shoe_span(con, CLOSED_TX, "TX"))
        assert counts[("TX", CLOSED_TX)] == (len(tx.events), len(tx.hands))
        assert len(tx.hands) == 4 and tx.hands[0]["source"] == "burn"  # the burn, 3 rounds
        # ... and its rounds and their settlements, for disputes: 3 rounds, 2 wagers each.
        assert _rounds_of(con, "TX", CLOSED_TX) == [1, 2, 3]
        assert con.execute("SELECT count(*) FROM replay_settlements WHERE table_id = 'TX' AND "
                           "shoe_id = $s", {"s": CLOSED_TX}).fetchall() == [(6,)]


def _tamper(con: duckdb.DuckDBPyConnection, shoe: str) -> None:
    con.execute("UPDATE replay_events SET description = 'TAMPERED' "
                "WHERE shoe_id = $shoe AND ord = 0", {"shoe": shoe})


def test_a_replay_reads_the_kept_rows_until_a_late_tap_inside_the_shoe(store: Path) -> None:
    with duckdb.connect(str(store)) as con:
        assert _keep_all(con) == len(_all_shoes(con))
        _tamper(con, CLOSED_TX)  # only a replay that reads the kept rows says TAMPERED
        assert replay_shoe(con, CLOSED_TX).events[0]["description"] == "TAMPERED"
        before = replay.computed(con, replay.shoe_span(con, CLOSED_TX, "TX"))
        assert before.shoe["dealers"] == ["DX1"]
        # A tap recorded late, at a seq inside the shoe (two writers of the table): the
        # span is the same, the number of events read is not.
        ((first, last),) = con.execute("SELECT min(seq), max(seq) FROM events WHERE shoe_id = "
                                       "$s", {"s": CLOSED_TX}).fetchall()
        con.execute(
            "INSERT INTO events SELECT * REPLACE ('DealerTappedIn' AS event_type, "
            "'DX9' AS dealer_id, NULL AS shoe_id, NULL AS round_no, "
            "(SELECT max(log_offset) + 1 FROM events) AS log_offset, NULL AS event_id) "
            "FROM events WHERE table_id = 'TX' AND seq = $seq", {"seq": first + 5})
        assert replay.shoe_span(con, CLOSED_TX, "TX").last == last
        after = replay_shoe(con, CLOSED_TX)
        assert after == replay.computed(con, replay.shoe_span(con, CLOSED_TX, "TX"))
        assert after.events[0]["description"] != "TAMPERED"
        assert after.shoe["dealers"] == ["DX1", "DX9"]  # the late tap is read
        # A keeper started afterwards (the one that saw the tap was stopped first) finds it in
        # its backlog: kept again, it is read again.
        # (and TX's open shoe, whose dealer it is now: the taps it read changed too)
        assert replay_kept.ReplayKeeper(con).keep_some(float("inf"), backlog=True) == 2
        assert replay_kept.keep(con, "TX", CLOSED_TX) == 0  # kept already: not made twice
        _tamper(con, CLOSED_TX)
        assert replay_shoe(con, CLOSED_TX).events[0]["description"] == "TAMPERED"


def test_a_late_line_of_a_closed_shoe_is_read_and_the_follower_keeps_it_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log_dir, db = _evening(tmp_path)  # its own log: the store is tied to the log's path
    log = EmbeddedLog(log_dir)
    with duckdb.connect(str(db)) as con:
        _keep_all(con)
        _tamper(con, CLOSED_TX)
        ((heads,),) = con.execute("SELECT max(seq) FROM events WHERE table_id = 'TX'").fetchall()
    # TX's builder again, continuing after its last seq: a burn of the closed shoe recorded
    # after the next shoe's round (a device line re-stamped), so the closed shoe's span grows.
    ids = itertools.count(10**6)  # ids after the first builder's
    recorder = Recorder(log, new_id=lambda: str(uuid.UUID(int=next(ids))), now=lambda: EVENING)
    tx = TableBuilder(recorder, "TX", clock=EVENING + timedelta(days=31))  # heads from the log
    tx.shoe_id = CLOSED_TX
    late = tx.burn("KD")
    tx.flush()
    assert late == heads + 1
    monkeypatch.setattr(follow, "LIVE_BUDGET_S", 0.0)
    stop = threading.Event()
    seen: list[Any] = []
    with duckdb.connect(str(db)) as con:
        # The follower's round projects the line, then keeps the shoes it changed: this one.
        def on_round(commit: Any) -> None:
            seen.append(replay.stored(con, replay.shoe_span(con, CLOSED_TX, "TX")))
            stop.set()
        monkeypatch.setattr(follow, "IDLE_BUDGET_S", 0.0)
        Follower(con, log, stop_event=stop, poll_interval=0.01, on_round=on_round).run()
        span = replay.shoe_span(con, CLOSED_TX, "TX")
        assert span.last == late
        kept = replay.stored(con, span)
        assert seen and seen[0] is not None  # kept again right after the round, not the backlog
        assert kept == replay.computed(con, span)
        assert kept.events[0]["description"] != "TAMPERED"
        assert [e["seq"] for e in kept.events][-1] == late
        assert "burns KD" in kept.events[-1]["description"]


@pytest.mark.parametrize("other", ["kept tables", "views"])
def test_kept_replays_of_another_definition_are_never_read_and_are_made_again(
        store: Path, other: str) -> None:
    with duckdb.connect(str(store)) as con:
        _keep_all(con)
        _tamper(con, CLOSED_TX)
        if other == "kept tables":  # kept by an older pitlog
            con.execute("COMMENT ON TABLE replay_hands IS 'pitlog replay 0000'")
        else:  # the views made again by another pitlog (its read-write open), tagged with its SQL
            for name in VIEW_NAMES:
                con.execute(f"COMMENT ON VIEW {name} IS 'pitlog views 0000'")
        assert replay.kept_tables_current(con) is False
        assert replay_shoe(con, CLOSED_TX).events[0]["description"] != "TAMPERED"
        replay_kept.ensure_tables(con)  # a follower's start: made again, empty
        assert replay.kept_tables_current(con) is True
        assert _kept(con) == set()
        assert _keep_all(con) == len(_all_shoes(con))
        assert_kept_replays_hold(con)


@pytest.mark.parametrize("kind", ["TABLE", "VIEW"])
def test_a_users_table_of_a_kept_tables_name_is_never_dropped(store: Path, kind: str) -> None:
    with duckdb.connect(str(store)) as con:
        con.execute(f"CREATE {kind} replay_hands AS SELECT 42 AS my_data")
        with pytest.raises(ProjectionError, match="replay_hands in the store is not pitlog's"):
            replay_kept.ReplayKeeper(con)
        assert con.execute("SELECT * FROM replay_hands").fetchall() == [(42,)]
        assert replay_shoe(con, CLOSED_TX) == replay.computed(
            con, replay.shoe_span(con, CLOSED_TX, "TX"))


_KEEPER = """
import sys
import duckdb
from projections import replay_kept
con = duckdb.connect(sys.argv[1])
keeper = replay_kept.ReplayKeeper(con)
while keeper.keep_some(0.0, backlog=True):
    print(keeper.kept, flush=True)
"""


def test_a_keeper_killed_in_the_middle_leaves_every_kept_replay_whole(store: Path) -> None:
    with duckdb.connect(str(store)) as con:
        shoes = _all_shoes(con)
    proc = subprocess.Popen([sys.executable, "-c", _KEEPER, str(store)], cwd=REPO,
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None
    lines = [proc.stdout.readline() for _ in range(3)]
    os.kill(proc.pid, signal.SIGKILL)  # during the fourth shoe's transaction, or just after
    proc.wait()
    assert [int(n) for n in lines] == [1, 2, 3]
    with duckdb.connect(str(store)) as con:
        kept = _kept(con)
        assert 3 <= len(kept) < len(shoes)  # killed before the last
        assert_kept_replays_hold(con)
        # No rows of a shoe without its kept row (a half-written shoe).
        ((orphans,),) = con.execute(
            "SELECT count(*) FROM (SELECT table_id, shoe_id FROM replay_events UNION "
            "SELECT table_id, shoe_id FROM replay_hands) ANTI JOIN replay_shoes "
            "USING (table_id, shoe_id)").fetchall()
        assert orphans == 0
        # A restarted keeper finishes the rest.
        assert _keep_all(con) == len(shoes) - len(kept)
        assert _kept(con) == shoes


def test_a_served_replay_of_a_kept_shoe_answers_what_the_queries_answer(tmp_path: Path) -> None:
    log, db = _evening(tmp_path)
    with duckdb.connect(str(db), read_only=True) as con:
        shoes = _all_shoes(con)
        want = {}
        for table, shoe in sorted(shoes):
            r = replay.computed(con, replay.shoe_span(con, shoe, table))
            want[shoe] = json.loads(json.dumps(
                {"shoe": r.shoe, "events": r.events, "hands": r.hands}, default=encoder(UTC)))
    server = start_server(log, db, tmp_path)
    try:
        # The server's follower keeps every shoe once it has caught up with the log (the open
        # ones last).
        wait_until(lambda: server.json(query("/api/sql", q="SELECT count(*) AS n FROM "
                                                           "replay_shoes"))["rows"][0]["n"]
                   == len(shoes), "every shoe kept", server.proc, server.err)
        for shoe, expected in want.items():
            assert server.json(f"/api/replay/{shoe}") == expected, shoe
    finally:
        assert server.stop() == 0, server.err.read_text()


def test_the_backlog_waits_while_records_are_arriving(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    log_dir, db = _evening(tmp_path)
    log = EmbeddedLog(log_dir)
    monkeypatch.setattr(follow, "IDLE_BUDGET_S", float("inf"))
    recorder = Recorder(log, new_id=lambda: str(uuid.uuid4()), now=lambda: EVENING)

    def a_record_arrives(commit: Any) -> None:  # after the round read the log's end
        recorder.record("TX", model.DealerTappedIn(dealer_id="DX7"), shoe_id=None,
                        round_no=None, actor="pit", occurred_at=EVENING + timedelta(days=32))
        recorder.flush()
        stop.set()

    with duckdb.connect(str(db)) as con:
        stop = threading.Event()
        Follower(con, log, stop_event=stop, poll_interval=0.01,
                 on_round=a_record_arrives).run()
        assert _kept(con) == set()  # a record was waiting: no backlog was kept
        stop = threading.Event()
        Follower(con, log, stop_event=stop, poll_interval=0.01,
                 on_round=lambda commit: stop.set()).run()
        assert _kept(con) == _all_shoes(con)  # idle: the whole backlog, open shoes last


def test_an_open_shoe_is_kept_once_idle_and_read_until_its_next_event(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay_kept, "QUIET_S", 0.0)  # quiet at once (the next test: not)
    log_dir, db = _evening(tmp_path)
    log = EmbeddedLog(log_dir)
    with duckdb.connect(str(db)) as con:
        closed, shoes = _closed_shoes(con), _all_shoes(con)
        keeper = replay_kept.ReplayKeeper(con)
        keeper.note_new({})  # every event new: a first round's notes
        # Behind the log, a round keeps the closed shoes only; the open ones wait for idle.
        assert keeper.keep_some(float("inf"), backlog=False) == len(closed)
        assert _kept(con) == closed
        assert shoes - closed == {("TX", OPEN_TX)}  # the simulated tables closed their last
        assert keeper.keep_some(float("inf"), backlog=True) == 1
        assert _kept(con) == shoes
        assert_kept_replays_hold(con)
        # Only a replay or dispute that reads the kept rows says TAMPERED.
        _tamper(con, OPEN_TX)
        con.execute("UPDATE replay_rounds SET dealer = 'TAMPERED' WHERE shoe_id = $s",
                    {"s": OPEN_TX})
        assert replay_shoe(con, OPEN_TX).events[0]["description"] == "TAMPERED"
        assert dispute(con, "TX", shoe=OPEN_TX, round_no=1).round["dealer"] == "TAMPERED"
    # The open shoe deals a second round (TX's builder again, after its last seq).
    ids = itertools.count(10**6)
    recorder = Recorder(log, new_id=lambda: str(uuid.UUID(int=next(ids))), now=lambda: EVENING)
    tx = TableBuilder(recorder, "TX", clock=EVENING + timedelta(days=31))
    tx.shoe_id, tx.round_no = OPEN_TX, 2
    tx.deal_round("4C 9D 6H", {1: 500})
    tx.flush()
    monkeypatch.setattr(follow, "LIVE_BUDGET_S", 0.0)
    monkeypatch.setattr(follow, "IDLE_BUDGET_S", float("inf"))
    stop = threading.Event()
    seen: list[Any] = []
    with duckdb.connect(str(db)) as con:
        def on_round(commit: Any) -> None:  # after the round's keep, before the idle one
            span = replay.shoe_span(con, OPEN_TX, "TX")
            seen.append((replay.stored(con, span), dispute(con, "TX", shoe=OPEN_TX, round_no=1),
                         replay.computed(con, span)))
            stop.set()
        Follower(con, log, stop_event=stop, poll_interval=0.01, on_round=on_round).run()
        (stored, asked, computed), = seen
        # Dealt since it was kept: not read, and not kept again while behind the log.
        assert stored is None and asked.round["dealer"] == "DX1"
        assert [r["round_no"] for r in computed.hands if r["source"] == "round"] == [1, 2]
        # Once idle, kept again with the new round, and read.
        kept = replay.stored(con, replay.shoe_span(con, OPEN_TX, "TX"))
        assert kept == computed and kept.events[0]["description"] != "TAMPERED"
        assert _rounds_of(con, "TX", OPEN_TX) == [1, 2]
        assert_kept_replays_hold(con)


def _add_line(con: duckdb.DuckDBPyConnection, table: str, shoe: str, seq: int,
              round_no: int | None, like_seq: int) -> None:
    """A copy of TX's line at `like_seq` as a line of `table`'s `shoe` at `seq`."""
    con.execute("INSERT INTO events SELECT * REPLACE ((SELECT max(log_offset) + 1 FROM events) "
                "AS log_offset, NULL AS event_id, $t AS table_id, $s AS shoe_id, $q AS seq, "
                "$r AS round_no) FROM events WHERE table_id = 'TX' AND seq = $like",
                {"t": table, "s": shoe, "q": seq, "r": round_no, "like": like_seq})


def _positions(con: duckdb.DuckDBPyConnection) -> dict[int, int]:
    """The next log offset per partition: what a round's notes start from."""
    return {int(p): int(o) + 1 for p, o in con.execute(
        "SELECT log_partition, max(log_offset) FROM events GROUP BY 1").fetchall()}


def _copy_open_shoe_to_ty(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """A second open shoe: TY-S1 at table TY, a copy of TX's open shoe line by line (TY's seqs
    from 1); TX's open shoe's first and last seq."""
    ((first, last),) = con.execute("SELECT min(seq), max(seq) FROM events WHERE "
                                   "shoe_id = $s", {"s": OPEN_TX}).fetchall()
    for seq in range(first, last + 1):
        _add_line(con, "TY", "TY-S1", seq - first + 1, con.execute(
            "SELECT round_no FROM events WHERE table_id = 'TX' AND seq = $q",
            {"q": seq}).fetchall()[0][0], seq)
    return first, last


def test_an_idle_keeper_keeps_the_longest_quiet_open_shoe_and_none_still_dealing(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The open shoes waiting for idle were taken last noted first (an outside review, session
    45): the table that dealt last was kept at each idle look, and stale at its next line,
    while a table gone quiet for the night waited for ever. Now the longest quiet first, and
    none that had an event within QUIET_S. A clock of the test's: no timing."""
    now = [1000.0]
    monkeypatch.setattr(replay_kept, "_clock", lambda: now[0])
    with duckdb.connect(str(store)) as con:
        first, last = _copy_open_shoe_to_ty(con)
        keeper = replay_kept.ReplayKeeper(con)
        assert keeper.keep_some(float("inf"), backlog=True) == len(_all_shoes(con))

        def held(table: str, shoe: str) -> bool:
            return replay.kept_shoe_row(con, replay.shoe_span(con, shoe, table)) is not None

        since = _positions(con)  # TY deals one more line at 1000, then goes quiet
        _add_line(con, "TY", "TY-S1", last - first + 2, 2, last)
        keeper.note_new(since)
        looks = []
        for n in range(6):  # TX deals a line every 2 s; an idle look after each
            now[0] += 2.0
            since = _positions(con)
            _add_line(con, "TX", OPEN_TX, last + 1 + n, 2, last)
            keeper.note_new(since)
            looks.append(keeper.keep_some(0.0, backlog=True))
        assert looks == [0, 0, 1, 0, 0, 0]  # TY once quiet 5 s (at 1006); TX never
        assert held("TY", "TY-S1") and not held("TX", OPEN_TX)
        now[0] += 4.9  # TX quiet since 1012: not yet
        assert keeper.keep_some(0.0, backlog=True) == 0
        now[0] += 0.2
        assert keeper.keep_some(0.0, backlog=True) == 1 and held("TX", OPEN_TX)
        assert_kept_replays_hold(con)


def test_an_open_shoe_whose_keep_raised_is_kept_at_a_later_idle_look(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A keep of an open shoe that raises (the store out of memory, say) ends the idle look
    but puts the shoe back, last and quiet from then: were it dropped, it would wait for its
    table's next event to be noted again, all night for a table closed for it; put back
    first, a shoe whose keep keeps failing would be tried before every other at each look."""
    now = [1000.0]
    monkeypatch.setattr(replay_kept, "_clock", lambda: now[0])
    real_keep = replay_kept.keep

    def keep_open_fails(con: duckdb.DuckDBPyConnection, table: str, shoe: str,
                        **how: bool) -> int | None:
        if how.get("open_too"):
            raise duckdb.OutOfMemoryException("the test's: no memory for an open shoe")
        return real_keep(con, table, shoe, **how)

    with duckdb.connect(str(store)) as con:
        _copy_open_shoe_to_ty(con)
        keeper = replay_kept.ReplayKeeper(con)
        monkeypatch.setattr(replay_kept, "keep", keep_open_fails)
        with pytest.raises(duckdb.OutOfMemoryException, match="the test's"):
            keeper.keep_some(float("inf"), backlog=True)  # TX's first: the newer of the two
        # back, last, quiet from the failure; TY's, quiet since before the keeper, first
        assert list(keeper.idle.items()) == [(("TY", "TY-S1"), float("-inf")),
                                             (("TX", OPEN_TX), 1000.0)]
        assert _kept(con) == _closed_shoes(con) != _all_shoes(con)
        monkeypatch.setattr(replay_kept, "keep", real_keep)
        now[0] += replay_kept.QUIET_S - 0.1
        assert keeper.keep_some(float("inf"), backlog=True) == 1  # TY's; TX's not quiet yet
        assert list(keeper.idle) == [("TX", OPEN_TX)]
        now[0] += 0.1
        assert keeper.keep_some(float("inf"), backlog=True) == 1
        assert _kept(con) == _all_shoes(con) and not keeper.idle
        assert_kept_replays_hold(con)


def test_a_shoe_id_loaded_again_after_its_close_is_open(store: Path) -> None:
    """A shoe id closed and loaded again (sql/macros.sql shoe_loads_of) deals again: open, so
    kept only while idle, not after each round (an outside review, session 45: it counted as
    closed by any ShoeClosed, and was kept each round while behind the log)."""
    with duckdb.connect(str(store)) as con:
        replay_kept.ensure_tables(con)
        ((load, close),) = con.execute(
            "SELECT max(seq) FILTER (event_type = 'CardsLoaded'), max(seq) FILTER (event_type = "
            "'ShoeClosed') FROM events WHERE shoe_id = $s", {"s": CLOSED_TX}).fetchall()
        assert replay.shoe_span(con, CLOSED_TX, "TX").closed is True
        ((end,),) = con.execute("SELECT max(seq) FROM events WHERE table_id = 'TX'").fetchall()
        _add_line(con, "TX", CLOSED_TX, end + 1, None, load)  # loaded again after `close`
        assert end + 1 > close
        assert replay.shoe_span(con, CLOSED_TX, "TX").closed is False
        assert replay_kept.keep(con, "TX", CLOSED_TX) is None  # not while behind the log
        assert replay_kept.keep(con, "TX", CLOSED_TX, open_too=True) == 1
        assert_kept_replays_hold(con)


# --- the kept rounds and settlements a dispute reads ---------------------------------------------

def _rounds_of(con: duckdb.DuckDBPyConnection, table: str, shoe: str) -> list[int]:
    return [int(r) for (r,) in con.execute(
        f"SELECT round_no FROM {replay.ROUNDS} WHERE table_id = $t AND shoe_id = $s AND "
        "round_no IS NOT NULL ORDER BY round_no", {"t": table, "s": shoe}).fetchall()]


def test_every_dispute_about_a_kept_shoe_is_the_one_its_queries_give(
        evening: tuple[Path, Path], store: Path) -> None:
    """Each round of each kept shoe, whole and for one of its seats (each round the next seat
    in turn, so every seat number is asked across the rounds: all of them each round took
    over three minutes of CI), against the same dispute on the store before anything was kept
    (evening[1]: its queries)."""
    with duckdb.connect(str(store)) as con:
        assert _keep_all(con) == len(_all_shoes(con))
    asked = 0
    seats_asked: set[int] = set()
    seen_seats: set[int] = set()
    with duckdb.connect(str(store), read_only=True) as kept, \
            duckdb.connect(str(evening[1]), read_only=True) as plain:
        assert replay.kept_tables_current(plain) is False
        for table, shoe in sorted(_kept(kept)):
            for round_no in _rounds_of(kept, table, shoe):
                want = dispute(plain, table, shoe=shoe, round_no=round_no)
                assert dispute(kept, table, shoe=shoe, round_no=round_no) == want
                seats = sorted({s["seat"] for s in want.settlements})
                seen_seats.update(seats)
                if seats:
                    seat = seats[asked % len(seats)]
                    assert dispute(kept, table, shoe=shoe, round_no=round_no, seat=seat) == \
                        dispute(plain, table, shoe=shoe, round_no=round_no, seat=seat)
                    seats_asked.add(seat)
                asked += 1
    assert asked > 50  # every round of every closed shoe: 45 rounds a table, and TX's 3
    assert seats_asked == seen_seats


def test_a_dispute_reads_the_kept_rows_until_an_opening_recorded_late_before_the_shoe(
        store: Path) -> None:
    with duckdb.connect(str(store)) as con:
        _keep_all(con)
        want = dispute(con, "TX", shoe=CLOSED_TX, round_no=2)
        assert [(s["seat"], s["made"]) for s in want.settlements] == [
            (1, "VOID: returned $10.00"), (2, "VOID: returned $5.00")]  # a pair, no three
        con.execute("UPDATE replay_settlements SET made = 'TAMPERED' WHERE shoe_id = $s AND "
                    "round_no = 2", {"s": CLOSED_TX})
        con.execute("UPDATE replay_rounds SET dealer = 'TAMPERED' WHERE shoe_id = $s AND "
                    "round_no = 2", {"s": CLOSED_TX})
        # Only a dispute that reads the kept rows says TAMPERED.
        got = dispute(con, "TX", shoe=CLOSED_TX, round_no=2, seat=2)
        assert got.round["dealer"] == "TAMPERED"
        assert [(s["seat"], s["made"]) for s in got.settlements] == [(2, "TAMPERED")]
        # An opening of TX recorded late at seq 1 (a second writer of the table), before the
        # dealer's tap the replay's count starts at: the paytable in force may be another, so
        # the kept rows no longer hold.
        span = replay.shoe_span(con, CLOSED_TX, "TX")
        assert replay.query_params(con, span)["taps_from"] == 2
        con.execute(
            "INSERT INTO events SELECT * REPLACE ((SELECT max(log_offset) + 1 FROM events) "
            "AS log_offset, NULL AS event_id) "
            "FROM events WHERE table_id = 'TX' AND event_type = 'TableOpened'")
        assert replay.shoe_span(con, CLOSED_TX, "TX") == span
        assert replay.kept_shoe_row(con, span) is None
        assert dispute(con, "TX", shoe=CLOSED_TX, round_no=2) == want
        # A keeper started afterwards finds the shoe in its backlog and keeps it again (and TX's
        # open shoe, whose settlements read the openings too).
        assert replay_kept.ReplayKeeper(con).keep_some(float("inf"), backlog=True) == 2
        assert replay.kept_shoe_row(con, span) is not None
        assert_kept_replays_hold(con)


def test_an_opening_recorded_late_before_the_one_in_force_leaves_the_kept_rows_read(
        store: Path) -> None:
    """A kept shoe's settlements read the paytable in force at each round (the table's latest
    TableOpened at or before it), so only openings from the one in force at the shoe's first
    seq on can change them; the count from the table's start read every row group of its
    history for each kept lookup (session 46). TX opens again at its second shoe's first seq,
    paying 2 to 1 on a spread of 4 to 11 (its first opening: 1 to 1); then an opening paying 5
    to 1 is recorded late at the first one's seq 1: in force for the first shoe (of two at one
    seq, the later in the log), for no round of the second."""
    def required(shoe: str) -> list[str]:  # round 1's seat 1, a spread of 4 to 11 won
        return [s["required"] for s in dispute(con, "TX", shoe=shoe, round_no=1,
                                               seat=1).settlements]

    with duckdb.connect(str(store)) as con:
        ((first_opening, reopened),) = con.execute(
            "SELECT (SELECT seq FROM events WHERE table_id = 'TX' AND event_type = "
            "'TableOpened'), (SELECT min(seq) FROM events WHERE shoe_id = $s)",
            {"s": OPEN_TX}).fetchall()
        copy = ("INSERT INTO events SELECT * REPLACE ((SELECT max(log_offset) + 1 FROM events) "
                "AS log_offset, NULL AS event_id, {seq} AS seq, {odds} AS pays_spread_4_to_11) "
                "FROM events WHERE table_id = 'TX' AND event_type = 'TableOpened' AND seq = 1")
        con.execute(copy.format(seq=reopened, odds=2))  # the second shoe's paytable
        assert _keep_all(con) == len(_all_shoes(con))
        assert_kept_replays_hold(con)
        assert required(CLOSED_TX) == ["WON: pay $10.00 at 1 to 1"]  # 3S QH 7C, $10
        assert required(OPEN_TX) == ["WON: pay $10.00 at 2 to 1"]  # 2H 9S 6D, $5
        closed, opened = (replay.shoe_span(con, s, "TX") for s in (CLOSED_TX, OPEN_TX))
        since = {p: o for p, o in con.execute(
            "SELECT log_partition, max(log_offset) + 1 FROM events GROUP BY ALL").fetchall()}
        con.execute(copy.format(seq=first_opening, odds=5))  # late, before the reopening
        # The second shoe's kept rows are read (and, below, are what its queries give); the
        # first's are not: its paytable is the copy now, and its kept rows say otherwise.
        assert replay.kept_shoe_row(con, opened) is not None
        assert replay.stored(con, opened) == replay.computed(con, opened)
        assert required(OPEN_TX) == ["WON: pay $10.00 at 2 to 1"]
        assert replay.kept_shoe_row(con, closed) is None
        assert required(CLOSED_TX) == ["WON: pay $50.00 at 5 to 1"]
        assert con.execute("SELECT required FROM replay_settlements WHERE shoe_id = $s AND "
                           "round_no = 1 AND seat = 1", {"s": CLOSED_TX}).fetchall() == [
            ("WON: pay $10.00 at 1 to 1",)]
        keeper = replay_kept.ReplayKeeper(con)  # a round that noted the copy queues the first
        keeper.note_new(since)
        assert list(keeper.queue) == [("TX", CLOSED_TX)] and not keeper.idle
        # A keeper started now finds only the first shoe in its backlog.
        assert replay_kept.ReplayKeeper(con).keep_some(float("inf"), backlog=True) == 1
        assert replay.kept_shoe_row(con, closed) is not None
        assert required(CLOSED_TX) == ["WON: pay $50.00 at 5 to 1"]
        assert_kept_replays_hold(con)  # the second shoe's kept settlements too
        assert dict(((str(s), f) for s, f in con.execute(
            "SELECT shoe_id, openings_from FROM replay_shoes WHERE table_id = 'TX'"
        ).fetchall())) == {CLOSED_TX: first_opening, OPEN_TX: reopened}


def test_of_two_openings_at_one_seq_the_later_in_the_log_is_in_force_kept_or_not(
        store: Path) -> None:
    """A second TableOpened of TX at its opening's seq (two writers of the table), paying 3 to 1
    on a spread of 4 to 11 where the first pays 1 to 1: the later in the log is in force
    (sql/ledger.sql paytables_in_force_of), in the ledger, in a dispute by its queries and in
    the kept rows. An ASOF join over both picked either, so the verdict could change from one
    run to the next, and kept rows could freeze the other pick."""
    with duckdb.connect(str(store)) as con:
        ((opened,),) = con.execute("SELECT seq FROM events WHERE table_id = 'TX' AND "
                                   "event_type = 'TableOpened'").fetchall()
        con.execute(
            "INSERT INTO events SELECT * REPLACE ((SELECT max(log_offset) + 1 FROM events) "
            "AS log_offset, NULL AS event_id, 3 AS pays_spread_4_to_11) "
            "FROM events WHERE table_id = 'TX' AND event_type = 'TableOpened'")
        ((opening, odds),) = con.execute(
            "SELECT seq, pays_spread_4_to_11 FROM paytables_in_force_of('TX', NULL)").fetchall()
        assert (opening, odds) == (opened, 3)
        # Round 1, 3S QH 7C: a spread of 8 won; seat 1's $10 is owed $30 at 3 to 1.
        assert con.execute("SELECT expected_odds, expected_paid_cents FROM ledger WHERE "
                           "shoe_id = $s AND round_no = 1 AND seat = 1",
                           {"s": CLOSED_TX}).fetchall() == [(3, 3000)]
        asked = dispute(con, "TX", shoe=CLOSED_TX, round_no=1, seat=1)
        assert [s["required"] for s in asked.settlements] == ["WON: pay $30.00 at 3 to 1"]
        assert _keep_all(con) == len(_all_shoes(con))
        assert replay.kept_shoe_row(con, replay.shoe_span(con, CLOSED_TX, "TX")) is not None
        assert dispute(con, "TX", shoe=CLOSED_TX, round_no=1, seat=1) == asked
        assert_kept_replays_hold(con)

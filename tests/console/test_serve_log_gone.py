"""`pitlog serve` on an embedded log whose folder goes from its path: moved away, then another
log made at the same path, then the first one put back (docs/operating.md, "Health and
metrics"). Until session 42 /health answered ready with lag 0 throughout, and the follower
projected the other log's records at the first one's offsets. A real server, real logs made
by `pitlog simulate`; the deadlines only stop a hung test."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from serve_support import Server, query, run_cli, start_server, wait_until

from events.log.embedded.log import EmbeddedLog


def _log_id(log: Path) -> str:
    opened = EmbeddedLog(log, create=False)
    try:
        assert opened.log_id is not None
        return opened.log_id
    finally:
        opened.close()


def _events(s: Server) -> int:
    return int(s.json(query("/api/sql", q="SELECT count(*) AS n FROM events"))["rows"][0]["n"])


def _records(log: Path) -> int:
    opened = EmbeddedLog(log, create=False)
    try:
        return sum(opened.end_offsets().values())
    finally:
        opened.close()


def _simulate(log: Path, *args: str) -> None:
    done = run_cli("simulate", "--tables", "1", "--log", str(log), *args)
    assert done.returncode == 0, done.stderr


def _health_of(s: Server, status: str) -> dict[str, Any]:
    return wait_until(lambda: (h := s.health())["status"] == status and h,
                      f"/health status {status}", s.proc, s.err)


def test_a_log_moved_away_or_replaced_is_not_followed_and_health_says_why(
        tmp_path: Path) -> None:
    log, db = tmp_path / "log", tmp_path / "p.duckdb"
    _simulate(log, "--seed", "1", "--rounds", "5")
    first_id, first = _log_id(log), _records(log)
    s = start_server(log, db, tmp_path)
    try:
        wait_until(lambda: _events(s) == first, "the first log's events", s.proc, s.err)
        uri = f"file://{log.resolve()}"

        log.rename(tmp_path / "away")
        gone = _health_of(s, "log_gone")
        assert gone["ready"] is False
        assert gone["error"] == (
            f"the log {uri} (log id {first_id}) is gone: {log.resolve()}/meta.json is missing "
            f"(the folder was moved away or removed); put it back at that path (a follower "
            f"goes on by itself once it is back; run any other command again then)")
        r = s.get("/health")
        assert r.status == 503
        assert r.headers["x-pitlog-stale"].startswith(
            f"the server is not following the log ({gone['error']}); answers are as of its "
            f"last commit at ")

        # another log at the same path, with more records
        _simulate(log, "--seed", "2", "--rounds", "12")
        second_id = _log_id(log)
        assert second_id != first_id and _records(log) > first
        other = wait_until(lambda: (h := s.health())["error"] != gone["error"] and h,
                           "the other log's error", s.proc, s.err)
        assert other["status"] == "log_gone" and other["ready"] is False
        assert other["error"] == (
            f"{uri} is another log now: its log id is {second_id}, not {first_id}, the one "
            f"opened (a new log was made at {log.resolve()} after that one was moved away or "
            f"removed); put it back at that path (a follower goes on by itself once it is "
            f"back; run any other command again then), or project the new log into a new "
            f"database file (--db)")
        assert _events(s) == first  # nothing of the other log was projected
        err = s.err.read_text()
        assert f"WARNING pitlog.follow: not following: {other['error']} (looking again in " in err
        assert f"WARNING pitlog.follow: not following: {gone['error']} (looking again in " in err

        # The first log back at its path, and written to: followed again, from where it was.
        shutil.rmtree(log)
        (tmp_path / "away").rename(log)
        _health_of(s, "ready")
        _simulate(log, "--seed", "1", "--rounds", "5", "--first-table", "2")
        more = _records(log)
        assert more > first
        wait_until(lambda: _events(s) == more, "the first log's new events", s.proc, s.err)
        # The rows are visible once the batch commits; /health takes the batch's positions
        # right after (runner.on_commit), so lag 0 is waited for, not read at once (CI, stop 52:
        # it read lag 85, the positions of the batch before).
        back = wait_until(lambda: (h := s.health())["lag_total"] == 0 and h, "lag 0",
                          s.proc, s.err)
        assert (back["ready"], back["error"], back["lag_total"]) == (True, None, 0)
        assert "x-pitlog-stale" not in s.get("/health").headers
        assert (f"INFO pitlog.follow: the log {uri} (log id {first_id}) is back at its address: "
                f"following it again") in s.err.read_text()
    finally:
        assert s.stop() == 0, s.err.read_text()

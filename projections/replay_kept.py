"""The writer keeps each shoe's replay as rows (projections/replay.py says why and when a reader
may use them), so that `pitlog replay` and `GET /api/replay` read a few stored rows instead of
planning the views' macros.

The follower (`project --follow`, `pitlog serve`) keeps them between its rounds, off the path
from an event to its alert (projections/follow.py):

- after a round that committed events, first the shoes those events closed (a ShoeClosed) and
  the kept closed shoes whose replay they changed (an event of the shoe's table at a seq the
  replay read, or an event of the shoe itself): one shoe a round while behind the log, for
  IDLE_BUDGET_S seconds once idle (below);
- once idle (the log's end offsets read again after a round are the ones it projected to, so
  no event waits for it), then, the closed shoes with no kept replay yet, newest first (a store
  projected before this existed: 1,944 shoes at 2.1M events, each costing about what one
  replay costs, 0.2 s of CPU);
- once idle, last, the open shoes (replay.CLOSED: no ShoeClosed after the shoe's last load)
  that have had no event for QUIET_S: those with no kept replay of their current span when
  the keeper started (the backlog's), newest first, then those a round gave events since
  (`idle`), the longest quiet first. An open shoe's kept rows hold until its next event (its
  span moves; or a late line among what they read, as a closed shoe's), so a replay of it, or
  a dispute about one of its rounds, reads rows once its table has been quiet while the
  follower was idle (the end of a shift, the night's close, a store restored for an inquiry),
  and computes them while its table deals: keeping a shoe costs 0.74-0.97 s of CPU at 9.9M
  events (benchmarks/results.md, session 45), so keeping each open shoe after every round
  would cost 13-17 s of CPU a second at 300 events a second (about 18 rounds a second), which
  the follower spends only while nothing waits.

Each shoe's rows are replaced in one transaction, computed in it by the replay's own queries:
a kill at any instant leaves the shoe's old rows or its new ones, and a reader checks them
against the events anyway. `pitlog project` without --follow keeps none (a rebuild pays only
for the views).
"""

from __future__ import annotations

import time
from collections import deque
from typing import cast

import duckdb
import pyarrow as pa

from events.errors import ProjectionError
from projections.dispute_sql import KEPT_QUERIES
from projections.dispute_sql import ROUNDS as ROUNDS_QUERY
from projections.dispute_sql import SETTLEMENTS as SETTLEMENTS_QUERY
from projections.kept_at import tagged
from projections.replay import (
    CLOSED,
    EVENTS,
    HANDS,
    KEPT,
    REPLAY_EVENTS,
    REPLAY_HANDS,
    ROUNDS,
    SETTLEMENTS,
    SHOE_ROW,
    SHOES,
    Span,
    kept_shoe_row,
    opened_from,
    openings,
    query_params,
    replay_tag,
    shoe_span,
    span_events,
)
from projections.transaction import roll_back

# Seconds of kept replays a follower makes after a round (module docstring; at least one shoe
# when any is queued): while it is behind the log, one shoe (200 tables at 300 events a second
# close about one shoe every 3.7 s, benchmarks/results.md session 23, so one a round keeps up);
# once idle, IDLE_BUDGET_S, so that its next look at the log waits at most about that long
# (plus one shoe).
LIVE_BUDGET_S = 0.0
IDLE_BUDGET_S = 0.5
# Seconds an open shoe must have had no event before an idle follower keeps it: a table still
# dealing (a line every few seconds) would make its kept rows stale at its next line, each keep
# then wasted and delaying that line by up to a keep's time (0.7-1 s of CPU at 9.9M events).
QUIET_S = 5.0
_clock = time.monotonic  # what QUIET_S is measured by (a test sets its own)

_KEY_COLUMNS = "table_id VARCHAR NOT NULL, shoe_id VARCHAR NOT NULL"

# The shoes without a kept replay of their current span, and the kept shoes whose
# table has another number of events in the span the replay read, or of the openings its
# settlements can read (from the one in force at its start, replay.OPENINGS) up to it, than
# when it was kept (a late event among its seqs, which a round queued but a stop left unkept:
# replay.kept_shoe_row's check, for every kept shoe at once), newest first (by first seq across
# tables: the evening's order).
_BACKLOG = f"""
WITH spans AS (
    SELECT table_id, shoe_id, min(seq) AS first_seq, max(seq) AS last_seq, {CLOSED} AS closed
    FROM events WHERE shoe_id IS NOT NULL
    GROUP BY table_id, shoe_id
),
unkept AS (
    SELECT s.table_id, s.shoe_id, s.first_seq, s.closed FROM spans AS s
    ANTI JOIN {SHOES} AS k USING (table_id, shoe_id, first_seq, last_seq)
),
stale AS (
    SELECT k.table_id, k.shoe_id, k.first_seq, k.closed_at IS NOT NULL FROM {SHOES} AS k
    JOIN events AS e ON e.table_id = k.table_id
                    AND e.seq BETWEEN coalesce(k.taps_from, 0) AND k.last_seq
    GROUP BY k.table_id, k.shoe_id, k.first_seq, k.closed_at, k.span_events
    HAVING count(*) <> k.span_events
    UNION
    -- the openings apart: joined with every event up to the shoe, the table's history would be
    -- read once per kept shoe
    SELECT k.table_id, k.shoe_id, k.first_seq, k.closed_at IS NOT NULL FROM {SHOES} AS k
    LEFT JOIN (SELECT table_id, seq FROM events WHERE event_type = 'TableOpened') AS o
           ON o.table_id = k.table_id
          AND o.seq BETWEEN k.openings_from AND k.last_seq
    GROUP BY k.table_id, k.shoe_id, k.first_seq, k.closed_at, k.openings
    HAVING count(o.seq) <> k.openings
)
SELECT table_id, shoe_id, closed FROM (SELECT * FROM unkept UNION SELECT * FROM stale)
ORDER BY first_seq DESC, table_id, shoe_id
"""

# The shoes a round's new events (log positions at or after `since`) can have changed: the
# shoes they closed, the kept shoes they belong to, whose replay read a seq of theirs, or
# whose settlements read the paytable of an opening among them, and the other shoes they
# belong to; `closed` (bool_or over a shoe's reasons): known closed, to keep while behind the
# log. The others (open shoes, or a closed shoe's late line while it has no kept replay) wait
# for the follower to be idle.
_CHANGED = f"""
WITH new AS (
    SELECT table_id, shoe_id, seq, event_type FROM events
    WHERE {{since}}
),
changed AS (
    SELECT table_id, shoe_id, event_type = 'ShoeClosed' AS closed FROM new
    WHERE shoe_id IS NOT NULL
    UNION ALL
    SELECT k.table_id, k.shoe_id, k.closed_at IS NOT NULL FROM {SHOES} AS k JOIN new AS n
        ON n.table_id = k.table_id
       AND (n.shoe_id = k.shoe_id OR n.seq BETWEEN coalesce(k.taps_from, 0) AND k.last_seq
            OR (n.event_type = 'TableOpened'
                AND n.seq BETWEEN k.openings_from AND k.last_seq))
)
SELECT table_id, shoe_id, bool_or(closed) FROM changed GROUP BY table_id, shoe_id
"""


class ReplayKeeper:
    """Keeps shoes' replays current on the writer's connection (module docstring)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        # Shoes to keep, next first: those a round changed before the backlog's.
        self.queue: deque[tuple[str, str]] = deque()
        self.queued: set[tuple[str, str]] = set()  # what the queue holds, each once
        # Open shoes, kept only once idle and quiet for QUIET_S: each with the _clock() a round
        # last noted an event of it (-inf: the backlog's, quiet since before this keeper), the
        # longest quiet first (a dict keeps the order they were put in).
        self.idle: dict[tuple[str, str], float] = {}
        self.backlog_read = False  # the backlog is read once, when first idle
        self.kept = 0  # replays written by this keeper
        ensure_tables(con)

    def _note_open(self, key: tuple[str, str], at: float | None = None) -> None:
        """`key` last in the idle order, quiet since `at` (None: it had an event now)."""
        self.idle.pop(key, None)
        self.idle[key] = _clock() if at is None else at

    def note_new(self, since: dict[int, int]) -> None:
        """Queue first the shoes that the events from the log positions `since` on (the next
        offset per partition before a round; a partition not in it: all its events) closed or
        changed; the other shoes they belong to wait for the follower to be idle."""
        known = " OR ".join(f"(log_partition = {int(p)} AND log_offset >= {int(o)})"
                            for p, o in sorted(since.items()))
        others = (f"log_partition NOT IN ({', '.join(str(int(p)) for p in sorted(since))})"
                  if since else "true")
        where = f"({known}) OR {others}" if known else others
        changed = self.con.execute(_CHANGED.format(since=where)).fetchall()
        found = {(str(t), str(s)) for t, s, closed in changed if closed}
        for shoe in sorted(found - self.queued, reverse=True):
            self.queue.appendleft(shoe)
            self.idle.pop(shoe, None)  # noted open by an earlier round, closed since
        self.queued |= found
        for shoe in sorted({(str(t), str(s)) for t, s, closed in changed if not closed}):
            self._note_open(shoe)

    def keep_some(self, budget_s: float, *, backlog: bool) -> int:
        """Keep queued shoes until `budget_s` has passed (at least one, if any), reading the
        backlog into the queue first when `backlog` (the follower is idle), and then, still
        within the budget, the open shoes waiting for it (`idle`) that have been quiet for
        QUIET_S, the longest quiet first; the number kept."""
        if backlog and not self.backlog_read:
            opened: list[tuple[str, str]] = []
            for t, s, closed in self.con.execute(_BACKLOG).fetchall():  # newest first
                key = (str(t), str(s))
                if not closed:
                    opened.append(key)
                elif key not in self.queued:
                    self.queue.append(key)
                    self.queued.add(key)
            # the backlog's open shoes first (quiet since before this keeper), newest first,
            # then those rounds noted, in the order they were noted
            noted, self.idle = self.idle, dict.fromkeys(opened, float("-inf"))
            for key, at in noted.items():
                self._note_open(key, at)
            self.backlog_read = True
        done, started = 0, time.perf_counter()
        while self.queue and (done == 0 or time.perf_counter() - started < budget_s):
            table, shoe = self.queue.popleft()
            self.queued.discard((table, shoe))
            kept = keep(self.con, table, shoe)
            if kept is None:  # open after all (its id loaded again): when idle
                self._note_open((table, shoe))
            done += kept or 0
        while backlog and self.idle and (done == 0 or time.perf_counter() - started < budget_s):
            key, noted_at = next(iter(self.idle.items()))
            if _clock() - noted_at < QUIET_S:
                break  # the longest quiet is not quiet yet: nor is any other
            del self.idle[key]
            try:
                done += keep(self.con, *key, open_too=True) or 0
            except BaseException:
                self._note_open(key)  # tried again later, after the others
                raise
        self.kept += done
        return done


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the kept tables, tagged with this definition of this store (replay.replay_tag);
    kept tables made by another definition are dropped first (their rows would never be read).
    Raises ProjectionError when the store's views carry no one pitlog tag, or a table or view of
    one of the kept tables' names is not pitlog's (a user's: never dropped)."""
    tag = replay_tag(con)
    if tag is None:
        raise ProjectionError("the store's views carry no one pitlog tag; a read-write open "
                              "(`pitlog project`) makes them again")
    if tagged(con, KEPT, tag):
        return
    foreign = [name for name, kind, comment in con.execute(
        "SELECT table_name, 'table', comment FROM duckdb_tables() WHERE database_name = "
        "current_database() AND schema_name = 'main' UNION ALL SELECT view_name, 'view', "
        "comment FROM duckdb_views() WHERE database_name = current_database() AND "
        "schema_name = 'main'").fetchall()
        if name in KEPT and (kind == "view" or not (comment or "").startswith("pitlog replay "))]
    if foreign:
        raise ProjectionError(f"not keeping shoes' replays: {', '.join(sorted(foreign))} in the "
                              f"store is not pitlog's; rename it to let pitlog keep them")
    probe = {"table": "", "shoe": "", "first": 0, "last": 0, "taps_from": None}
    shoe_cols = _columns(con, SHOE_ROW, probe)
    every = {**probe, "round": None}  # the dispute queries' rows of every round
    con.execute("BEGIN TRANSACTION")
    try:
        for name in KEPT:
            con.execute(f"DROP TABLE IF EXISTS {name}")
        # shoe_cols: the shoes row, table_id and shoe_id first (queries.SHOE_COLUMNS)
        con.execute(f"CREATE TABLE {SHOES} ({shoe_cols}, first_seq BIGINT NOT NULL, "
                    f"last_seq BIGINT NOT NULL, taps_from BIGINT, span_events BIGINT NOT NULL, "
                    f"openings_from BIGINT NOT NULL, openings BIGINT NOT NULL)")
        for name, sql in _ROWS:
            con.execute(f"CREATE TABLE {name} ({_KEY_COLUMNS}, ord INTEGER NOT NULL, "
                        f"{_columns(con, sql, every if sql in KEPT_QUERIES else probe)})")
        # ROUNDS_QUERY's rows carry their table and shoe themselves.
        con.execute(f"CREATE TABLE {ROUNDS} (ord INTEGER NOT NULL, "
                    f"{_columns(con, ROUNDS_QUERY, every)})")
        for name in KEPT:  # the tag is hex digits after a fixed text
            con.execute(f"COMMENT ON TABLE {name} IS '{tag}'")
        con.execute("COMMIT")
    except BaseException:
        roll_back(con)
        raise


def _columns(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object]) -> str:
    """`name TYPE, ...` of a query's result (bound, not run)."""
    rel = con.sql(sql, params=params)
    return ", ".join(f'"{c}" {t}' for c, t in zip(rel.columns, rel.types, strict=True))


def keep(con: duckdb.DuckDBPyConnection, table: str, shoe: str, *,
         open_too: bool = False) -> int | None:
    """Replace the shoe's kept replay with one computed now, in one transaction; 1 when kept,
    0 when its kept rows hold already, None when the shoe is open and not `open_too` (the
    follower keeps open shoes only while idle, module docstring)."""
    con.execute("BEGIN TRANSACTION")
    try:
        span = shoe_span(con, shoe, table)
        if not span.closed and not open_too:
            roll_back(con)
            return None
        if kept_shoe_row(con, span) is not None:
            roll_back(con)
            return 0
        _replace(con, span)
        con.execute("COMMIT")
    except BaseException:
        roll_back(con)
        raise
    return 1


# The kept tables of a shoe's rows (beside SHOES and ROUNDS) and the queries that make them.
_ROWS = ((EVENTS, REPLAY_EVENTS), (HANDS, REPLAY_HANDS), (SETTLEMENTS, SETTLEMENTS_QUERY))


def _replace(con: duckdb.DuckDBPyConnection, span: Span) -> None:
    params = query_params(con, span)
    key: dict[str, object] = {"table": span.table, "shoe": span.shoe}
    n = span_events(con, span.table, cast(int | None, params["taps_from"]), span.last)
    for name in KEPT:
        con.execute(f"DELETE FROM {name} WHERE table_id = $table AND shoe_id = $shoe", key)
    since = opened_from(con, span)
    con.execute(f"INSERT INTO {SHOES} BY NAME SELECT *, $first AS first_seq, $last AS "
                f"last_seq, $taps_from AS taps_from, $n AS span_events, $since AS "
                f"openings_from, $opened AS openings FROM ({SHOE_ROW})",
                {**params, "n": n, "since": since,
                 "opened": openings(con, span.table, since, span.last)})
    for name, sql in (*_ROWS, (ROUNDS, ROUNDS_QUERY)):
        # the dispute queries (KEPT_QUERIES) for every round of the shoe: $round NULL
        found = con.sql(sql, params={**params, "round": None} if sql in KEPT_QUERIES
                        else params).to_arrow_table()
        found = found.append_column("ord", pa.array(range(found.num_rows), pa.int32()))
        con.register("_replay_rows", found)
        try:
            keys = "" if name == ROUNDS else "$table AS table_id, $shoe AS shoe_id, "
            con.execute(f"INSERT INTO {name} BY NAME SELECT {keys}* FROM _replay_rows",
                        {} if name == ROUNDS else key)
        finally:
            con.unregister("_replay_rows")


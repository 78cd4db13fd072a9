"""The anomalies surveillance reads: the SQL views of sql/anomalies*.sql, plus the statistics.

Every rule and integrity code is decided in SQL (projections/sql/anomalies_*.sql: one view per code
and the `anomalies` view over them), so an auditor can read each decision in any DuckDB client.
Only HOLD_VARIANCE and OUTCOME_FREQUENCY, which need exact theory and a chi-square tail, are
computed in Python (projections/statistics.py). `list_anomalies` returns both, filtered.

Each row: code, severity, table_id, shoe_id, round_no, seqs (the sequence numbers of the
events that prove it), explanation, rule, occurred_at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, tzinfo
from functools import cache
from typing import Any, Protocol

import duckdb

from events.errors import ProjectionError, first_line
from events.reddog.catalogue import SEVERITIES, STATISTICAL, Severity
from projections import view_cache
from projections.kept_at import current as kept_current
from projections.kept_at import mark_sql, tagged
from projections.localtime import stamp_asked
from projections.memory import MORE_MEMORY
from projections.queries import require_known
from projections.queries import rows as query_rows
from projections.reconcile import Calendar, require_rounds_on
from projections.statistics import statistical_anomalies
from projections.views import VIEW_FILES, create_views, views_fingerprint

COLUMNS = ("code", "severity", "table_id", "shoe_id", "round_no", "seqs", "explanation", "rule",
           "occurred_at")
Row = dict[str, Any]


class AnomalyQueryError(ProjectionError):
    """An anomaly filter names a code or severity that does not exist."""


class EmptyWindow(AnomalyQueryError):
    """`until` is not after `since`: no moment is in the window. The message is in UTC;
    `describe(tz)` says it on the casino's clock, the one the times were asked on (the CLI's
    --tz, the server's zone), as OutsideRound does."""

    def __init__(self, since: datetime, until: datetime) -> None:
        self.since, self.until = since, until
        super().__init__(self.describe(UTC))

    def describe(self, tz: tzinfo) -> str:
        # stamp_asked: with the fraction of a time asked with one, so that 21:00:00.500 and
        # 21:00:00.200 do not read as the same second
        return (f"until {stamp_asked(self.until, tz)} is not after since "
                f"{stamp_asked(self.since, tz)}: no moment is in that window (since is "
                f"inclusive, until exclusive); give the earlier time as since")


# The `anomalies` view evaluates every rule over the whole store: seconds per million events.
# The projector stores its rows in STORED, with the checkpoints they were computed at, so a
# dispute or a listing reads a table. It keeps them current in each batch's own transaction
# (projections/incremental.py), so they lag the checkpoints only in a store projected with
# store_anomalies=False; readers then fall back to the view itself.
STORED = "anomalies_stored"
STORED_AT = "anomalies_stored_at"
# The view is the union of its families (sql/anomalies_*.sql); a family's rows, as the view
# gives them.
FAMILY_ROWS = """
SELECT f.code, c.severity, f.table_id, f.shoe_id, f.round_no, f.seqs, f.explanation, c.rule,
       f.occurred_at
FROM {family} AS f
JOIN anomaly_codes AS c USING (code)
"""


@cache  # read at every anomaly_source: the SQL files once per process
def stored_tag() -> str:
    """The definition the stored rows were evaluated by: the views' SQL and DuckDB's version
    (views.views_fingerprint), the table's comment. Rows a pitlog with other rules stored (an
    upgrade) are not read, and the projector evaluates the store whole again before its next
    batch (incremental.detector_for), as for rows behind the checkpoints."""
    return f"pitlog anomalies {views_fingerprint()}"


def anomaly_families(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The views whose union is `anomalies` (anomalies_found_rounds, ...), in name order."""
    return [name for (name,) in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE database_name = current_database() "
        "AND view_name LIKE 'anomalies\\_found\\_%' ESCAPE '\\' ORDER BY view_name").fetchall()]


# Every rule is decided within one table (sql/anomalies_*.sql), so the rows of the whole store are
# the union of the rows of its tables, evaluated a few tables at a time. One query over the
# whole store holds hash tables that grow with the log: at 10M events they outgrow a 1GB limit
# and spill, and the phase took 20x its time at 1M. A group of whole tables with at most
# GROUP_EVENTS events needs what 1M events need, whatever the log's length (benchmarks/README.md,
# "Storing the anomaly rows"); a table with more events than that is a group by itself.
GROUP_EVENTS = 1_000_000
_SCOPE = "pitlog_anomaly_scope"


@dataclass(frozen=True, slots=True)
class TableGroup:
    """Whole tables evaluated together, with the log partitions their events lie in."""

    tables: tuple[str, ...]
    partitions: tuple[int, ...]
    events: int

    def predicate(self) -> str:
        """SQL selecting the group's events. The partitions add nothing to which rows match
        (they are all of the tables' partitions) but let DuckDB skip other partitions' row
        groups. Table ids come from the log, so they are quoted, never pasted."""
        tables = ", ".join("'" + t.replace("'", "''") + "'" for t in self.tables)
        partitions = ", ".join(str(int(p)) for p in self.partitions)
        return f"log_partition IN ({partitions}) AND table_id IN ({tables})"


def table_groups(con: duckdb.DuckDBPyConnection,
                 max_events: int = GROUP_EVENTS) -> list[TableGroup]:
    """The store's tables in groups of at most `max_events` events, in partition and table
    order: the projector writes each batch's rows grouped by table (projector._by_key), so
    neighbours in this order lie in the same row groups."""
    groups: list[TableGroup] = []
    tables: list[str] = []
    partitions: set[int] = set()
    events = 0
    for table, parts, n in con.execute(
            "SELECT table_id, list(DISTINCT log_partition), count(*) FROM events "
            "GROUP BY table_id ORDER BY min(log_partition), table_id").fetchall():
        if tables and events + n > max_events:
            groups.append(TableGroup(tuple(tables), tuple(sorted(partitions)), events))
            tables, partitions, events = [], set(), 0
        tables.append(table)
        partitions.update(parts)
        events += n
    if tables:
        groups.append(TableGroup(tuple(tables), tuple(sorted(partitions)), events))
    return groups


def refresh_stored_anomalies(
        con: duckdb.DuckDBPyConnection, max_events: int = GROUP_EVENTS,
        progress: Callable[[int, int], None] | None = None, *,
        within: Callable[[duckdb.DuckDBPyConnection], None] | None = None) -> None:
    """Store the view's rows and the checkpoints they reflect, in one transaction.

    The rows are evaluated one table group (table_groups) and one family at a time, in a
    scratch in-memory catalog that holds the same views over an `events` view of the group's
    rows alone; each query then has DuckDB's memory limit to itself, and needs as much at 10M
    events as at 1M. The transaction that replaces the stored rows only copies them in (and
    runs `within`, which the incremental detector uses to build its state and raise alerts).
    `progress(done, total)` is called after each (table group, family) step: groups x families.
    """
    try:
        groups = table_groups(con, max_events)
        if not groups:  # an empty store (a first `project`): no family to evaluate
            _store_rows(con, FAMILY_ROWS.format(family=_smallest_family(con)) + " LIMIT 0",
                        within)
            return
    except duckdb.Error as exc:
        if isinstance(exc, duckdb.OutOfMemoryException):
            raise memory_error(con) from exc
        raise ProjectionError(f"cannot store the anomalies ({first_line(exc)})") from exc
    ((database,),) = con.execute("SELECT current_database()").fetchall()
    source = '"' + database.replace('"', '""') + '".main.events'
    scope = con.cursor()  # its own default catalog: USE below leaves `con`'s alone
    try:
        scope.execute(f"DETACH DATABASE IF EXISTS {_SCOPE}")
        scope.execute(f"ATTACH ':memory:' AS {_SCOPE}")
        scope.execute(f"CREATE VIEW {_SCOPE}.main.events AS SELECT * FROM {source} WHERE false")
        # The views over it, bound once per definition (projections/view_cache.py); `scope`
        # uses their catalog from here on.
        view_cache.attach_views(scope, f"{_SCOPE}_views", f"SELECT * FROM {_SCOPE}.main.events",
                                create_views, "every view: " + ", ".join(VIEW_FILES))
        families = anomaly_families(scope)
        found = f"{_SCOPE}.main.found"
        scope.execute(
            f"CREATE TABLE {found} AS {FAMILY_ROWS.format(family=_smallest_family(scope))} "
            f"LIMIT 0")
        steps = len(groups) * len(families)
        for g, group in enumerate(groups):
            scope.execute(f"CREATE OR REPLACE VIEW {_SCOPE}.main.events AS SELECT * FROM {source} "
                          f"WHERE {group.predicate()}")
            for f, family in enumerate(families):
                scope.execute(f"INSERT INTO {found} {FAMILY_ROWS.format(family=family)}")
                if progress is not None:
                    progress(g * len(families) + f + 1, steps)
        _store_rows(con, f"SELECT * FROM {_SCOPE}.found", within)
    except duckdb.Error as exc:
        if isinstance(exc, duckdb.OutOfMemoryException):
            raise memory_error(con) from exc
        raise ProjectionError(f"cannot store the anomalies ({first_line(exc)})") from exc
    finally:
        scope.close()
        con.execute(f"DETACH DATABASE IF EXISTS {_SCOPE}_views")
        con.execute(f"DETACH DATABASE IF EXISTS {_SCOPE}")


def _store_rows(con: duckdb.DuckDBPyConnection, rows: str,
                within: Callable[[duckdb.DuckDBPyConnection], None] | None) -> None:
    """In one transaction: `rows` as the stored rows, the checkpoints they reflect, `within`."""
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(f"CREATE OR REPLACE TABLE {STORED} AS {rows}")
        # The tag is hex digits after a fixed text (COMMENT takes no parameter).
        con.execute(f"COMMENT ON TABLE {STORED} IS '{stored_tag()}'")
        con.execute(mark_sql(STORED_AT))
        if within is not None:
            within(con)
        con.execute("COMMIT")
    except BaseException:  # an error or Ctrl-C: the stored rows stay as they were
        con.execute("ROLLBACK")
        raise


def _smallest_family(con: duckdb.DuckDBPyConnection) -> str:
    """A family of `con`'s views whose columns are cheap to bind (all have the same columns):
    binding one costs about what planning it does, up to a second for the largest."""
    families = anomaly_families(con)
    return "anomalies_found_streams" if "anomalies_found_streams" in families else families[0]


def memory_error(con: duckdb.DuckDBPyConnection) -> ProjectionError:
    """The anomaly rows did not fit DuckDB's memory limit: what to do."""
    # DuckDB spills most of a query to disk, but not all (benchmarks/README.md, Memory).
    ((limit,),) = con.execute("SELECT current_setting('memory_limit')").fetchall()
    return ProjectionError(
        f"cannot store the anomaly rows within DuckDB's memory limit of {limit}; the "
        f"projected rows are safe: {MORE_MEMORY}; until then readers evaluate the anomaly "
        f"view themselves")


def anomaly_source(con: duckdb.DuckDBPyConnection) -> str:
    """`anomalies_stored` when it is as fresh as the checkpoints and evaluated by these rules
    (stored_tag), else the `anomalies` view. Asked of the catalog first (kept_at.current): no
    statement that can fail, so a served request's transaction survives a store whose stored
    rows are missing."""
    current = tagged(con, (STORED,), stored_tag()) and kept_current(con, STORED_AT)
    return STORED if current else "anomalies"


def catalogue(con: duckdb.DuckDBPyConnection) -> list[Row]:
    """The codes, severities and rules (the `anomaly_codes` view)."""
    return query_rows(con, "SELECT code, severity, rule, flagged FROM anomaly_codes ORDER BY code")


@dataclass(frozen=True, slots=True)
class AnomalyFilter:
    """What `pitlog anomalies` asks for. `severity` is a minimum; `until` is exclusive. `day`,
    the gaming day asked for (its window is in `since` and `until`), only makes an empty answer
    on a day with no round an error (reconcile.require_rounds_on)."""

    codes: tuple[str, ...] = ()
    table: str | None = None
    shoe: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    severity: str | None = None
    statistics: bool = True
    day: date | None = None

    def __post_init__(self) -> None:
        # A window that holds no moment answered "no rows", as if nothing had happened in it
        # (an outside review, session 39): an officer who swapped the two reads that as a
        # quiet table. Decided here, so the CLI on the file, the CLI through a server and the
        # API refuse it alike; each says it on its clock (EmptyWindow.describe).
        if self.since is not None and self.until is not None and self.until <= self.since:
            raise EmptyWindow(self.since, self.until)


_SELECT = """
SELECT a.code, a.severity, a.table_id, a.shoe_id, a.round_no, a.seqs, a.explanation, a.rule,
       a.occurred_at
FROM {source} AS a
JOIN anomaly_codes AS c USING (code)
WHERE (len($codes) = 0 OR list_contains($codes, a.code))
  AND ($table IS NULL OR a.table_id = $table)
  AND ($shoe IS NULL OR a.shoe_id = $shoe)
  AND ($since IS NULL OR a.occurred_at >= $since)
  AND ($until IS NULL OR a.occurred_at < $until)
  -- the gaming day as reconcile groups rounds (sql/ledger.sql): one definition, DST included;
  -- first a range days wider than any zone's day, which the table's row groups can skip by
  AND ($day IS NULL OR (a.occurred_at >= CAST($day AS TIMESTAMPTZ) - INTERVAL 2 DAYS
                        AND a.occurred_at < CAST($day AS TIMESTAMPTZ) + INTERVAL 3 DAYS
                        AND gaming_day(a.occurred_at, $tz, $day_start_minutes) = $day))
  AND c.severity_rank >= $min_rank
ORDER BY a.occurred_at, a.table_id, a.code, a.seqs
"""


def list_anomalies(con: duckdb.DuckDBPyConnection, f: AnomalyFilter | None = None, *,
                   calendar: Calendar | None = None,
                   progress: Callable[[int, int], None] | None = None) -> list[Row]:
    """Every anomaly that passes the filter, in time order (statistical rows included unless
    `f.statistics` is False or the codes asked for exclude them). `progress(done, 2)` follows
    its two steps: the rule rows, then the statistics."""
    f = f or AnomalyFilter()
    known = {r["code"]: r["severity"] for r in catalogue(con)}
    codes = tuple(c.upper() for c in f.codes)
    unknown = [c for c in codes if c not in known]
    if unknown:
        raise AnomalyQueryError(f"no anomaly code {', '.join(unknown)}; the codes are "
                                f"{', '.join(sorted(known))}")
    if f.severity is not None and f.severity not in SEVERITIES:
        raise AnomalyQueryError(f"no severity {f.severity!r}; use {', '.join(SEVERITIES)}")
    min_rank = Severity(f.severity).rank if f.severity else Severity.LOW.rank
    calendar = calendar or Calendar()
    found = query_rows(con, _SELECT.format(source=anomaly_source(con)), {
        "codes": list(codes), "table": f.table, "shoe": f.shoe, "since": f.since,
        "until": f.until, "min_rank": min_rank, "day": f.day, "tz": calendar.tz,
        "day_start_minutes": calendar.day_start})
    if progress is not None:
        progress(1, 2)
    wants_stats = f.statistics and (not codes or any(c in STATISTICAL for c in codes))
    if wants_stats and f.shoe is None and min_rank <= Severity.LOW.rank:  # the statistics are low
        stats = [r for r in statistical_anomalies(con, calendar)
                 if (not codes or r["code"] in codes)
                 and (f.table is None or r["table_id"] == f.table)
                 and (f.since is None or (r["occurred_at"] is not None
                                          and r["occurred_at"] >= f.since))
                 and (f.until is None or (r["occurred_at"] is not None
                                          and r["occurred_at"] < f.until))]
        if f.day is not None and stats:  # their gaming days by the same macro as the rows'
            ((days,),) = con.execute(
                "SELECT list_transform($at, lambda t: gaming_day(t, $tz, $s))",
                {"at": [r["occurred_at"] for r in stats], "tz": calendar.tz,
                 "s": calendar.day_start}).fetchall()
            stats = [r for r, d in zip(stats, days, strict=True) if d == f.day]
        found.extend(stats)
    if progress is not None:
        progress(2, 2)
    if not found:
        require_known(con, table=f.table, shoe=f.shoe)  # a typo is an error, not "no rows"
        require_rounds_on(con, calendar, f.day, f.table,
                          f.shoe)  # nor a day not played
    return found


def anomalies_touching(con: duckdb.DuckDBPyConnection, table: str, shoe: str | None,
                       round_no: int, first_seq: int, last_seq: int) -> list[Row]:
    """The anomalies of one round: those located at it, and those whose proving events lie
    within its first and last sequence numbers (a sequence gap inside it, for one)."""
    return query_rows(con, f"""
        SELECT code, severity, table_id, shoe_id, round_no, seqs, explanation, rule, occurred_at
        FROM {anomaly_source(con)}
        WHERE table_id = $table
          AND ((shoe_id IS NOT DISTINCT FROM $shoe AND round_no = $round)
               OR len(list_filter(seqs, lambda s: s BETWEEN $first AND $last)) > 0)
        ORDER BY occurred_at, code, seqs
    """, {"table": table, "shoe": shoe, "round": round_no, "first": first_seq,
          "last": last_seq})


# --- scoring detection against the simulator's ground truth -------------------------------------


class Labelled(Protocol):
    """A ground-truth label (events.simulation.irregularities.TruthLabel)."""

    @property
    def code(self) -> str: ...
    @property
    def table_id(self) -> str: ...
    @property
    def shoe_id(self) -> str | None: ...
    @property
    def round_no(self) -> int | None: ...


Key = tuple[str, str | None, int | None]  # (table, shoe, round)


@dataclass(frozen=True, slots=True)
class Score:
    """Precision and recall of one code, over distinct (table, shoe, round) places."""

    code: str
    truth: int
    found: int
    true_positives: int

    @property
    def precision(self) -> float:
        return self.true_positives / self.found if self.found else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.truth if self.truth else 1.0


def score(truth: Iterable[Labelled], found: Iterable[Row],
          codes: Sequence[str] | None = None) -> list[Score]:
    """Per code: truth labels against anomaly rows, matched on (code, table, shoe, round)."""
    want: dict[str, set[Key]] = {}
    for t in truth:
        want.setdefault(t.code, set()).add((t.table_id, t.shoe_id, t.round_no))
    got: dict[str, set[Key]] = {}
    for r in found:
        got.setdefault(r["code"], set()).add((r["table_id"], r["shoe_id"], r["round_no"]))
    return [Score(c, len(want.get(c, set())), len(got.get(c, set())),
                  len(want.get(c, set()) & got.get(c, set())))
            for c in (codes or sorted(set(want) | set(got)))]

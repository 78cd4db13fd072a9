"""Reconciliation for auditors: handle, win and hold per table, dealer, shift, gaming day and
shoe, against the exact theoretical win; and the conservation check, to the cent.

The money comes from the `ledger` view (sql/ledger.sql); the queries are in sql/reconcile.sql.
The house edges are exact Fractions from events/reddog/theory.py, loaded into a temporary table
as integer numerators over one denominator per deck count, so every theoretical figure stays
exact until it is presented: a Decimal rounded to hundredths of a cent, next to the exact
fraction.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from fractions import Fraction
from functools import cache
from math import sqrt
from typing import Any

import duckdb
import pyarrow as pa

from events.errors import NotFoundError, PitlogError, ProjectionError, first_line
from events.reddog import theory
from events.reddog.rules import STANDARD_PAYTABLE, Paytable, PaytableError
from projections.defaults import DEFAULT_SIGMA
from projections.export import Rows
from projections.kept_at import current as kept_current
from projections.kept_at import tagged
from projections.localtime import parse_zone, sql_zone
from projections.memory import (
    DEFAULT_MEMORY_LIMIT,
    MORE_MEMORY,
    MORE_READER_MEMORY,
    memory_limit_at_most,
    threads_at_most,
)
from projections.queries import require_known
from projections.views import sql_path, views_fingerprint

RECONCILE_SQL = sql_path("reconcile.sql")

# The groupings auditors ask for, and the columns that name a group. A shift is a shift on a
# given gaming day, so grouping by shift groups by day too.
GROUPINGS: dict[str, tuple[str, ...]] = {
    "table": ("table_id",),
    "dealer": ("dealer",),
    "day": ("gaming_day",),
    "shift": ("gaming_day", "shift"),
    "shoe": ("table_id", "shoe_id"),
}

Row = dict[str, Any]


class ReconcileError(ProjectionError):
    """A reconciliation was asked for with a grouping, time zone, gaming-day start or shift
    list that pitlog cannot use."""


# --- the calendar ----------------------------------------------------------------------------

_HHMM = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def parse_hhmm(text: str, what: str) -> int:
    """'06:00' -> 360 minutes after midnight."""
    m = _HHMM.match(text.strip())
    if not m:
        raise ReconcileError(f"{what} {text!r} is not a time of day: write HH:MM, e.g. 06:00")
    return int(m.group(1)) * 60 + int(m.group(2))


def parse_shifts(shifts: str) -> tuple[int, ...]:
    """'14:00,06:00,22:00' -> (360, 840, 1320). Each shift runs to the next start on the clock,
    so the order given does not matter (they are sorted); a start given twice (06:00,6:00) or an
    empty entry is a mistake, refused rather than dropped."""
    entries = shifts.split(",")
    if not any(e.strip() for e in entries):
        raise ReconcileError("--shifts needs at least one start time, e.g. 06:00,14:00,22:00")
    if not all(e.strip() for e in entries):
        raise ReconcileError(f"--shifts {shifts!r} has an empty entry (two commas in a row, or "
                             f"one at an end): list each shift's start once, comma-separated, "
                             f"e.g. 06:00,14:00,22:00")
    starts = [parse_hhmm(e, "shift start") for e in entries]
    twice = sorted({m for m in starts if starts.count(m) > 1})
    if twice:
        raise ReconcileError(f"--shifts {shifts!r} gives the start {hhmm(twice[0])} twice: each "
                             f"shift runs from its start to the next one, so give each start "
                             f"once, e.g. 06:00,14:00,22:00")
    return tuple(sorted(starts))


def hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def zone_name(tz: str) -> str:
    """The DuckDB (ICU) name of a time zone, read by projections.localtime.parse_zone: IANA
    names as given; a fixed offset such as '-05:00', '+0530' or 'UTC+2' becomes 'GMT-05:00'."""
    try:
        return sql_zone(parse_zone(tz))
    except PitlogError as exc:
        raise ReconcileError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class Calendar:
    """Where gaming days and shifts begin, on the wall clock of `tz`.

    `day_start` and `shift_starts` are minutes after local midnight; `shift_starts` is sorted.
    """

    tz: str = "UTC"
    day_start: int = 6 * 60
    shift_starts: tuple[int, ...] = (6 * 60, 14 * 60, 22 * 60)

    @classmethod
    def parse(cls, tz: str = "UTC", gaming_day_start: str = "06:00",
              shifts: str = "06:00,14:00,22:00") -> Calendar:
        return cls(zone_name(tz), parse_hhmm(gaming_day_start, "gaming-day start"),
                   parse_shifts(shifts))

    @property
    def shift_names(self) -> list[str]:
        """'06:00-14:00', ..., '22:00-06:00': each shift runs to the next one's start."""
        s = self.shift_starts
        return [f"{hhmm(a)}-{hhmm(s[(i + 1) % len(s)])}" for i, a in enumerate(s)]

    def params(self) -> dict[str, Any]:
        return {"tz": self.tz, "day_start_minutes": self.day_start,
                "shift_starts": list(self.shift_starts), "shift_names": self.shift_names}


def check_calendar(con: duckdb.DuckDBPyConnection, calendar: Calendar) -> None:
    """ReconcileError unless DuckDB knows the calendar's time zone."""
    try:
        con.execute(query_sql("calendar_check"), {"tz": calendar.tz}).fetchall()
    except duckdb.Error as exc:
        raise ReconcileError(
            f"unknown time zone {calendar.tz!r}: give an IANA name such as America/New_York, "
            f"UTC, or a fixed offset such as -05:00") from exc


# --- the SQL ---------------------------------------------------------------------------------


@cache
def _sections() -> dict[str, str]:
    """sql/reconcile.sql split at its `-- name: NAME` lines."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in RECONCILE_SQL.read_text().splitlines():
        if line.startswith("-- name: "):
            current = sections.setdefault(line.removeprefix("-- name: ").strip(), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines).strip().rstrip(";") for name, lines in sections.items()}


def query_sql(name: str, keys: Sequence[str] = (), round_rows: str = "") -> str:
    """A section of sql/reconcile.sql with its placeholders filled; `round_rows` is what
    by_round reads (the stored table, or by default the round_money query over the views)."""
    round_rows = round_rows or f"({_sections()['round_money']})"
    text = _sections()[name]
    if "{keys}" in text:
        text = text.replace("{keys}", ", ".join(f'"{k}"' for k in keys))
    if "{standard_paytable}" in text:  # the one definition, events/reddog/rules.py
        text = text.replace("{standard_paytable}",
                            ", ".join(str(odds) for _, odds in STANDARD_PAYTABLE.lines()))
    if "{by_round}" in text:
        text = text.replace("{by_round}", _sections()["by_round"])
    if "{round_rows}" in text:
        text = text.replace("{round_rows}", round_rows)
    return text


def round_money_rows(con: duckdb.DuckDBPyConnection) -> str:
    """What a query of each round's money reads: the writer's stored rows when they hold every
    committed batch (a day's rows alone, not the views' every round: issue 19 item 5), else
    the round_money query over the views, its edges loaded."""
    if stored_money_current(con):
        return ROUND_MONEY
    load_edges(con)
    return f"({round_money_sql()})"


def round_money_sql() -> str:
    """The round_money query (one row per round: its money) over the `rounds` and `ledger`
    views of the catalog it runs in: the store's, or the writer's window of a batch
    (projections/round_money.py)."""
    return query_sql("round_money")


# The writer's stored rows of the round_money query (projections/round_money.py keeps them),
# and the checkpoints they were last brought up to. Read only while they are current
# (stored_money_current): the same checkpoints as the store's, and built by this definition.
ROUND_MONEY = "round_money"
ROUND_MONEY_AT = "round_money_at"


@cache  # read at every project() call of a follower and every reconcile: the files once
def round_money_tag() -> str:
    """The definition the stored rows were built by: the views' SQL and DuckDB's version
    (views.views_fingerprint) and this file's round_money query. The table's comment holds it;
    a store built by another pitlog is rebuilt, and read through the views until then."""
    h = hashlib.sha256(f"{views_fingerprint()}\0{round_money_sql()}".encode())
    return f"pitlog round_money {h.hexdigest()}"


def stored_money_current(con: duckdb.DuckDBPyConnection) -> bool:
    """The stored round_money rows hold every committed batch (their checkpoints are the
    store's) and were built by this pitlog's definition (round_money_tag)."""
    return _kept_current(con, (ROUND_MONEY,), ROUND_MONEY_AT, round_money_tag())


def _kept_current(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...], at: str,
                  tag: str) -> bool:
    """Each of `tables` is tagged `tag` and the checkpoints in `at` are the store's."""
    try:
        return tagged(con, tables, tag) and kept_current(con, at)
    except duckdb.Error:  # no checkpoints table: not a store, so nothing is current
        return False


# The running sums the writer keeps beside round_money (projections/running_sums.py; issue 16
# item 1: "the statistical codes keep running sums per table, shift and day"), so that neither
# statistical code reads one row per round, with their one checkpoints table:
# - SHIFT_MONEY, for HOLD_VARIANCE and reconcile by table, day or shift: the reconcile query's
#   rows at its finest grouping by table, gaming day and shift, one per deck-count denominator
#   (the theoretical win's exact fraction is summed per denominator), of the default calendar
#   (Calendar(): the gaming days and shifts `pitlog anomalies` judges HOLD_VARIANCE by unless
#   given another, which sums the per-round rows instead). Each
#   is a sum of integers (exact whatever the order) but sum_sq_deviation, a DOUBLE that only
#   feeds the statistic's z.
# - OUTCOME_COUNTS, for OUTCOME_FREQUENCY: per table, deck count and outcome, the rounds with
#   that outcome and the latest one's start; integers.
SHIFT_MONEY = "shift_money"
OUTCOME_COUNTS = "outcome_counts"
RUNNING_SUMS_AT = "running_sums_at"
SHIFT_KEYS = ("table_id", "gaming_day", "shift")
OUTCOME_KEYS = ("table_id", "decks", "outcome")


def shift_money_sql(round_rows: str) -> str:
    """The shift sums of the rounds in `round_rows` (the reconcile query by SHIFT_KEYS), with
    Calendar()'s parameters and $day, $table NULL: shift_money_params()."""
    return query_sql("reconcile", SHIFT_KEYS, round_rows)


def shift_money_params() -> dict[str, Any]:
    return {**Calendar().params(), "day": None, "table": None}


def outcome_counts_sql(round_rows: str) -> str:
    """Per table, deck count and outcome (OUTCOME_KEYS), the rounds in `round_rows` with that
    outcome and the latest one's start. A round whose cards decide no outcome yet (a pair
    without its third card), or of a shoe whose decks are unknown, is not counted."""
    return (f"SELECT table_id, decks, outcome, count(*) AS rounds, max(started_at) AS last_at "
            f"FROM {round_rows} WHERE outcome IS NOT NULL AND decks IS NOT NULL "
            f"GROUP BY table_id, decks, outcome")


@cache
def running_sums_tag() -> str:
    """The definition of the stored sums: the round money's, the two queries' and the default
    calendar's."""
    h = hashlib.sha256(f"{round_money_tag()}\0{shift_money_sql(ROUND_MONEY)}\0"
                       f"{outcome_counts_sql(ROUND_MONEY)}\0"
                       f"{sorted(Calendar().params().items())}".encode())
    return f"pitlog running_sums {h.hexdigest()}"


def running_sums_current(con: duckdb.DuckDBPyConnection) -> bool:
    """The stored running sums hold every committed batch and are of this definition, as the
    round_money rows they sum are. Their own checkpoints too: an older pitlog continuing the
    store keeps round_money current and leaves the sums behind."""
    return (stored_money_current(con)
            and _kept_current(con, (SHIFT_MONEY, OUTCOME_COUNTS), RUNNING_SUMS_AT,
                              running_sums_tag()))


def _from_shift_money(keys: Sequence[str]) -> str:
    """The reconcile query's rows by `keys` (at most SHIFT_KEYS) from the stored shift sums."""
    k = ", ".join(f'"{c}"' for c in keys)
    sums = ", ".join(f"sum({c})::BIGINT AS {c}" for c in SUMMED)
    return (f"SELECT {k}, theo_den, {sums}, sum(theo_num) AS theo_num, "
            f"sum(sum_sq_deviation) AS sum_sq_deviation, max(last_at) AS last_at "
            f"FROM {SHIFT_MONEY} WHERE ($day IS NULL OR gaming_day = $day) "
            f"AND ($table IS NULL OR table_id = $table) "
            f"GROUP BY {k}, theo_den ORDER BY {k}, theo_den")


def reconcile_query(con: duckdb.DuckDBPyConnection, keys: Sequence[str], calendar: Calendar,
                    day: date | None, table: str | None,
                    sums: bool | None = None) -> tuple[str, dict[str, Any]]:
    """The reconcile query by `keys` and its parameters: from the stored shift sums when they
    are current and serve it (keys among table, gaming day and shift; the default calendar),
    which reads one row per table, shift and denominator instead of one per round; else over
    each round's money (round_money_rows). `sums`: shift_sums_serve's answer when the caller
    has it (read in the same snapshot), so it is not asked again."""
    if set(keys) <= set(SHIFT_KEYS) and (shift_sums_serve(con, calendar) if sums is None
                                         else sums):
        return _from_shift_money(keys), {"day": day, "table": table}
    return (query_sql("reconcile", keys, round_money_rows(con)),
            {**calendar.params(), "day": day, "table": table})


def shift_sums_serve(con: duckdb.DuckDBPyConnection, calendar: Calendar) -> bool:
    """The stored shift sums can answer for `calendar`: it is theirs and they are current."""
    return calendar == Calendar() and running_sums_current(con)


def group_columns(by: Iterable[str]) -> tuple[str, ...]:
    """The group-naming columns of one or more groupings, in order, without repeats."""
    cols: list[str] = []
    for name in by:
        if name not in GROUPINGS:
            raise ReconcileError(
                f"cannot group by {name!r}: choose from {', '.join(GROUPINGS)}")
        cols.extend(c for c in GROUPINGS[name] if c not in cols)
    if not cols:
        raise ReconcileError(f"group by at least one of {', '.join(GROUPINGS)}")
    return tuple(cols)


def run_rows(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any]) -> Rows:
    # Through Arrow: timezone-aware datetimes without the optional pytz package. Within
    # DEFAULT_MEMORY_LIMIT, the writer's own bound: a read-only connection has DuckDB's default
    # (80% of the machine), and the ledger's joins and windows over every round then kept
    # 754 MB resident at 1M events and ~2 GB at 10M (issue 19 item 5, benchmarks/results.md
    # "Session 12: 10M"). A read-only connection never spills (memory.NO_SPILL: a reader writes
    # no file), so should the capped query run out, it runs again within the connection's own
    # limit (PITLOG_MEMORY_LIMIT, else DuckDB's default), and only then fails.
    # Only on a read-only connection (a query command's own): DuckDB's memory_limit and threads
    # are settings of the database instance, so on `pitlog serve`'s cursors they would also
    # bind the follower's batches and race with concurrent requests (one restoring what another
    # lowered); the writer's connection is within DEFAULT_MEMORY_LIMIT already.
    read_only = _read_only(con)  # asked first: after a failure the transaction takes no query
    try:
        if not read_only:
            return Rows.of(con.sql(sql, params=params).to_arrow_table())
        try:
            with memory_limit_at_most(con, DEFAULT_MEMORY_LIMIT), threads_at_most(con, 1):
                return Rows.of(con.sql(sql, params=params).to_arrow_table())
        except duckdb.OutOfMemoryException:
            # Again at the instance's own limit. Only here: on `pitlog serve`'s cursor the
            # same query would run again at the same limit, inside a transaction the failure
            # already aborted (ServeState.snapshot).
            return Rows.of(con.sql(sql, params=params).to_arrow_table())
    except duckdb.CatalogException as exc:
        raise ProjectionError(
            f"the database has no pitlog ledger ({exc}); run `pitlog project` first") from exc
    except duckdb.OutOfMemoryException as exc:
        more = MORE_READER_MEMORY if read_only else MORE_MEMORY
        raise ProjectionError(f"reconciliation query failed ({first_line(exc)}); "
                              f"{more}") from exc
    except duckdb.Error as exc:
        raise ProjectionError(f"reconciliation query failed ({first_line(exc)})") from exc


def _read_only(con: duckdb.DuckDBPyConnection) -> bool:
    ((mode,),) = con.execute("SELECT current_setting('access_mode')").fetchall()
    return str(mode).lower() == "read_only"


# --- exact theoretical edges -----------------------------------------------------------------


def edge_denominator(decks: int) -> int:
    """One denominator for every edge of a deck count: N(N-1)(N-2) for N = 52 * decks cards
    (the ordered draws of the first two cards, then the cards left for the third)."""
    n = 52 * decks
    return n * (n - 1) * (n - 2)


def edge_rows(decks: int, paytable: Paytable) -> list[Row]:
    """The exact edges of one deck count and paytable as integers over edge_denominator:
    spread 0 for an original wager (theory.original_wager_edge), 1..11 for a raise at that
    spread (theory.raise_edge)."""
    den = edge_denominator(decks)
    edges = {0: theory.original_wager_edge(decks, paytable)}
    edges.update((s, theory.raise_edge(decks, s, paytable)) for s in theory.SPREADS)
    rows = []
    for spread, edge in edges.items():
        num = edge * den
        assert num.denominator == 1, f"edge {edge} is not over {den}"
        rows.append({"decks": decks, "pays_spread_1": paytable.spread_1,
                     "pays_spread_2": paytable.spread_2, "pays_spread_3": paytable.spread_3,
                     "pays_spread_4_to_11": paytable.spread_4_to_11,
                     "pays_three_of_a_kind": paytable.three_of_a_kind, "spread": spread,
                     "edge_num": int(num), "edge_den": den})
    return rows


_EDGE_SCHEMA = pa.schema([(n, pa.int64()) for n in (
    "decks", "pays_spread_1", "pays_spread_2", "pays_spread_3", "pays_spread_4_to_11",
    "pays_three_of_a_kind", "spread", "edge_num", "edge_den")])


def load_edges(con: duckdb.DuckDBPyConnection) -> int:
    """(Re)create the temporary table theo_edges for every (decks, paytable) in the ledger;
    returns its row count. Temporary, so it works on a read-only database."""
    rows: list[Row] = []
    for key in run_rows(con, query_sql("edge_keys"), {}):
        try:
            paytable = Paytable(key["pays_spread_1"], key["pays_spread_2"], key["pays_spread_3"],
                                key["pays_spread_4_to_11"], key["pays_three_of_a_kind"])
        except PaytableError:
            continue  # an ill-formed table has no edge; the ledger names its violation
        if key["decks"] >= 1:
            rows.extend(edge_rows(key["decks"], paytable))
    # Registered, not scanned by its Python name: a sealed instance (pitlog serve,
    # sql_console.seal_writer) has replacement scans of Python objects off.
    con.register("pitlog_theo_edges", pa.Table.from_pylist(rows, schema=_EDGE_SCHEMA))
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE theo_edges AS SELECT * FROM pitlog_theo_edges")
    finally:
        con.unregister("pitlog_theo_edges")
    return len(rows)


# --- presentation ----------------------------------------------------------------------------


def exact_decimal(x: Fraction | int, places: int) -> Decimal:
    """x rounded half-even to `places` decimals, with no float in between."""
    n = round(Fraction(x) * 10**places)  # Fraction rounding is exact, half to even
    return Decimal(n).scaleb(-places).quantize(Decimal(1).scaleb(-places))


def percent(part: Fraction | int, whole: int) -> Decimal | None:
    """part / whole as a percentage with four decimals, exactly rounded; None if whole is 0."""
    if not whole:
        return None
    return exact_decimal(Fraction(part) * 100 / whole, 4)


# --- the reports -----------------------------------------------------------------------------

SUMMED = ("rounds", "wagers", "handle_cents", "raises_cents", "paid_cents", "collected_cents",
           "returned_cents", "net_win_cents", "expected_win_cents", "exceptions",
           "invalid_paytable_wagers", "unknown_decks_wagers")


# The columns reconcile() computes, with their types: what an export writes, rows or none.
# Money is integer cents; theoretical amounts exact to the cent; ratios percentages to 4 places.
_CENTS, _THEO, _PCT = pa.int64(), pa.decimal128(38, 2), pa.decimal128(38, 4)
RECONCILE_TYPES: dict[str, pa.DataType] = {
    "rounds": pa.int64(), "wagers": pa.int64(), "handle_cents": _CENTS, "raises_cents": _CENTS,
    "paid_cents": _CENTS, "collected_cents": _CENTS, "returned_cents": _CENTS,
    "net_win_cents": _CENTS, "hold_pct": _PCT, "theo_win_cents": _THEO,
    "theo_win_exact": pa.string(), "theo_hold_pct": _PCT, "variance_cents": _THEO,
    "variance_pct": _PCT, "sd_cents": _THEO, "z_score": pa.float64(),
    "expected_win_cents": _CENTS, "settlement_difference_cents": _CENTS,
    "exceptions": pa.int64(), "invalid_paytable_wagers": pa.int64(), "flags": pa.string()}


def reconcile(con: duckdb.DuckDBPyConnection, by: Sequence[str] = ("table",),
              calendar: Calendar | None = None, *, day: date | None = None,
              table: str | None = None, sigma: float = DEFAULT_SIGMA,
              sums: bool | None = None) -> Rows:
    """Handle, paid, collected, returned, net win, hold, theoretical win and variance per group.

    Handle counts every original wager and raise in force at its decision, void ones included.
    Theoretical win applies the exact edge for the shoe's deck count and the table's paytable
    to the wagers actually made: an original wager W contributes W * original_wager_edge, a
    raise R at spread s contributes R * raise_edge(s). The variance statistic is documented in
    docs/auditing.md: z = (sum of per-round deviations) / sqrt(sum of their squares), flagged
    HOLD_VARIANCE when |z| > sigma. `sums` as reconcile_query takes it.
    """
    calendar = calendar or Calendar()
    keys = group_columns(by)
    check_calendar(con, calendar)
    sql, params = reconcile_query(con, keys, calendar, day, table, sums)
    groups: dict[tuple[Any, ...], Row] = {}
    parts = run_rows(con, sql, params)
    for part in parts:
        key = tuple(part[k] for k in keys)
        g = groups.get(key)
        if g is None:
            g = groups[key] = {k: part[k] for k in keys} | {s: 0 for s in SUMMED}
            g["_theo"], g["_sq"] = Fraction(0), 0.0
        for s in SUMMED:
            g[s] += int(part[s] or 0)
        if part["theo_den"]:
            g["_theo"] += Fraction(int(part["theo_num"]), int(part["theo_den"]))
        g["_sq"] += float(part["sum_sq_deviation"] or 0.0)
    if not groups:
        require_known(con, table=table)  # a typo is an error, not "no rows"
        require_rounds_on(con, calendar, day, table)
    return Rows((_finish(g, sigma) for g in groups.values()),
                {**{k: v for k, v in parts.types.items() if k in keys}, **RECONCILE_TYPES})


def _finish(g: Row, sigma: float) -> Row:
    theo: Fraction = g.pop("_theo")
    sq: float = g.pop("_sq")
    handle, net = g["handle_cents"], g["net_win_cents"]
    variance = net - theo
    sd = sqrt(sq)
    z = float(variance) / sd if sd > 0 else None
    flags = []
    if z is not None and abs(z) > sigma:
        flags.append("HOLD_VARIANCE")
    if g["exceptions"]:
        flags.append("LEDGER_EXCEPTIONS")
    if g["invalid_paytable_wagers"]:
        flags.append("INVALID_PAYTABLE")
    if g["unknown_decks_wagers"]:
        flags.append("DECKS_UNKNOWN")
    row = {k: v for k, v in g.items() if k not in SUMMED}
    row.update(
        rounds=g["rounds"], wagers=g["wagers"], handle_cents=handle,
        raises_cents=g["raises_cents"], paid_cents=g["paid_cents"],
        collected_cents=g["collected_cents"], returned_cents=g["returned_cents"],
        net_win_cents=net, hold_pct=percent(net, handle),
        theo_win_cents=exact_decimal(theo, 2), theo_win_exact=theo,
        theo_hold_pct=percent(theo, handle),
        variance_cents=exact_decimal(variance, 2), variance_pct=percent(variance, handle),
        sd_cents=Decimal(f"{sd:.2f}"), z_score=None if z is None else round(z, 3),
        expected_win_cents=g["expected_win_cents"],
        settlement_difference_cents=net - g["expected_win_cents"],
        exceptions=g["exceptions"], invalid_paytable_wagers=g["invalid_paytable_wagers"],
        flags=",".join(flags))
    return row


def conservation(con: duckdb.DuckDBPyConnection, by: Sequence[str] = ("table", "day"),
                 calendar: Calendar | None = None, *, day: date | None = None,
                 table: str | None = None) -> Rows:
    """Money in = money out + net win, per group, to the cent (sql/reconcile.sql explains the
    terms). `balanced` is False, and `difference_cents` says by how much, when it fails."""
    calendar = calendar or Calendar()
    keys = group_columns(by)
    check_calendar(con, calendar)
    rows = run_rows(con, query_sql("conservation", keys),
                {**calendar.params(), "day": day, "table": table})
    for r in rows:
        r["balanced"] = r["difference_cents"] == 0
    rows.types["balanced"] = pa.bool_()
    if not rows:
        require_known(con, table=table)  # a typo is an error, not a balance of nothing
        require_rounds_on(con, calendar, day, table)
    return rows


def require_rounds_on(con: duckdb.DuckDBPyConnection, calendar: Calendar, day: date | None,
                      table: str | None = None, shoe: str | None = None) -> None:
    """NotFoundError when `day` (None: no day asked) has no round (of `table`, of `shoe`):
    asked by an audit whose answer came back empty, so a day mistyped, or not projected yet,
    is an error naming the days that have rounds, never an empty reconciliation or a balance
    of nothing that `conservation` would pass."""
    if day is None:
        return
    span = run_rows(con, query_sql("days_with_rounds"),
                    {"tz": calendar.tz, "day_start_minutes": calendar.day_start, "day": day,
                     "table": table, "shoe": shoe})[0]
    if span["on_day"]:  # rounds with nothing to sum (no wager): the empty answer is the answer
        return
    at = f" at table {table}" if table is not None else ""
    at += f" of shoe {shoe}" if shoe is not None else ""
    if not span["days"]:
        if shoe is not None:  # a shoe of another table, or with no round: projecting won't help
            raise NotFoundError(f"no rounds{at} on gaming day {day}: there are none{at} on any "
                                f"day; `pitlog shoes` lists each table's shoes and rounds")
        raise NotFoundError(f"no rounds{at} on gaming day {day}: the database has none{at} "
                            f"at all; run `pitlog project`")
    played = (f"on {span['first_day']}" if span["days"] == 1 else
              f"on {span['days']:,} gaming days from {span['first_day']} to {span['last_day']}")
    raise NotFoundError(f"no rounds{at} on gaming day {day} (gaming days start at "
                        f"{hhmm(calendar.day_start)} in {calendar.tz}); rounds{at} were played "
                        f"{played}")


LEDGER_STATUSES = ("OK", "REMOVED", "IN_PLAY", "UNSETTLED", "DOUBLE_SETTLED", "WRONG_OUTCOME",
                   "WRONG_AMOUNT", "WRONG_ODDS", "NOT_OWED", "SETTLED_BEFORE_DECISION",
                   "IRREGULAR_ROUND")


def check_ledger_status(status: str | None) -> None:
    """ReconcileError for a status the ledger has not (None: every status)."""
    if status is not None and status.upper() not in LEDGER_STATUSES:
        raise ReconcileError(f"unknown ledger status {status!r}: choose from "
                             f"{', '.join(LEDGER_STATUSES)}")


def ledger_rows(con: duckdb.DuckDBPyConnection, *, table: str | None = None,
                shoe: str | None = None, status: str | None = None,
                exceptions_only: bool = False, day: date | None = None,
                calendar: Calendar | None = None) -> list[Row]:
    """Rows of the ledger view, optionally only one table, shoe, status or gaming day (of
    `calendar`: the day its round started in, as reconcile counts it), or only the exceptions
    (every status but OK, REMOVED and IN_PLAY)."""
    check_ledger_status(status)
    calendar = calendar or Calendar()
    check_calendar(con, calendar)
    found = run_rows(con, query_sql("ledger"), {
        "table": table, "shoe": shoe, "status": status.upper() if status else None,
        "exceptions_only": exceptions_only, "day": day, "tz": calendar.tz,
        "day_start_minutes": calendar.day_start})
    if not found:
        require_known(con, table=table, shoe=shoe)  # a typo is an error, not "no rows"
        require_rounds_on(con, calendar, day, table, shoe)
    return found


def parse_day(text: str | None) -> date | None:
    """'2026-11-28' -> a date; None passes through."""
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ReconcileError(f"gaming day {text!r} is not a date: write YYYY-MM-DD") from None

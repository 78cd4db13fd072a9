"""The two statistical anomalies: HOLD_VARIANCE and OUTCOME_FREQUENCY.

Neither is a rule break that one event proves: each compares many rounds with what the
combinatorics of red dog say they should look like, so each has a false-alarm rate, chosen
here and documented in docs/anomalies.md (with the rates measured on clean simulations by
benchmarks/bench_detection.py).

- HOLD_VARIANCE: the net win of a group (a table, a gaming day, a shift) against its exact
  theoretical win, from projections/reconcile.py: z = (net win - theoretical win) /
  sqrt(sum over rounds of (round net win - round theoretical win)^2). Flagged when
  |z| > HOLD_Z (3.29: two-sided 1 in 1,000 under the normal approximation) and the group has
  at least MIN_HOLD_ROUNDS rounds (below that, the 11-to-1 three of a kind makes the sum too
  skewed for the approximation).
- OUTCOME_FREQUENCY: per table and deck count, the rounds' first two cards and a pair's third
  (consecutive, three of a kind, pair without, spread 1..11) against their exact probabilities
  (events/reddog/theory.py, outcome_probabilities) by Pearson's chi-square; cells expected below 5
  are pooled. Flagged when the p-value is below OUTCOME_ALPHA (1 in 1,000) with at least
  MIN_FREQUENCY_ROUNDS rounds.

The chi-square tail probability is computed here (the regularized upper incomplete gamma
function), so no SciPy is needed.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import duckdb

from events.reddog import theory
from events.reddog.catalogue import BY_CODE
from projections.money import dollars
from projections.queries import rows as query_rows
from projections.reconcile import (
    DEFAULT_SIGMA,
    OUTCOME_COUNTS,
    ROUND_MONEY,
    SHIFT_MONEY,
    Calendar,
    check_calendar,
    outcome_counts_sql,
    reconcile,
    round_money_rows,
    run_rows,
    running_sums_current,
    shift_sums_serve,
    stored_money_current,
)

Row = dict[str, Any]

HOLD_Z = DEFAULT_SIGMA  # two-sided P(|Z| > 3.29) = 0.001, as `pitlog reconcile` flags
MIN_HOLD_ROUNDS = 200
OUTCOME_ALPHA = 0.001
MIN_FREQUENCY_ROUNDS = 500
MIN_EXPECTED = 5.0  # Pearson's rule of thumb for a chi-square cell
HOLD, FREQUENCY = BY_CODE["HOLD_VARIANCE"], BY_CODE["OUTCOME_FREQUENCY"]
CATEGORIES = ("consecutive", "trips", "pair_no_trips", *(f"spread_{s}" for s in theory.SPREADS))


# --- the chi-square distribution ---------------------------------------------------------------


def chi_square_sf(x: float, df: int) -> float:
    """P(X > x) for X chi-square with df degrees of freedom: Q(df/2, x/2), the regularized
    upper incomplete gamma function (series below a+1, continued fraction above)."""
    if x <= 0:
        return 1.0
    a, z = df / 2.0, x / 2.0
    log_front = a * math.log(z) - z - math.lgamma(a)
    if z < a + 1:
        term = total = 1.0 / a
        n = a
        for _ in range(1000):
            n += 1
            term *= z / n
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    # Lentz's continued fraction for Q.
    tiny = 1e-300
    b = z + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return math.exp(log_front) * h


def pearson(observed: list[int], expected: list[float]) -> tuple[float, int]:
    """(chi-square statistic, degrees of freedom) after pooling the cells expected below
    MIN_EXPECTED into their smallest neighbours in expectation."""
    cells = sorted(zip(expected, observed, strict=True))
    while len(cells) > 1 and cells[0][0] < MIN_EXPECTED:
        (e1, o1), (e2, o2) = cells[0], cells[1]
        cells = sorted([(e1 + e2, o1 + o2), *cells[2:]])
    stat = sum((o - e) ** 2 / e for e, o in cells if e > 0)
    return stat, len(cells) - 1


# --- OUTCOME_FREQUENCY -------------------------------------------------------------------------

# {counts}: the writer's running counts per table, deck count and outcome when current
# (projections/running_sums.py), else the same counts (reconcile.outcome_counts_sql, one
# definition) over each round's stored money, or over the views when that is behind: a test
# reads a row per table, deck count and outcome, not one per round (10.1 s p50 and 2.2 GB at
# 9.5M events through the views, benchmarks/results.md).
_OUTCOMES = """
SELECT table_id, decks, sum(rounds)::BIGINT AS rounds, max(last_at) AS last_at,
       map(list(outcome ORDER BY outcome), list(rounds ORDER BY outcome)) AS counts
FROM {counts}
GROUP BY table_id, decks
ORDER BY table_id, decks
"""


def _outcome_counts(con: duckdb.DuckDBPyConnection) -> str:
    if running_sums_current(con):
        return OUTCOME_COUNTS
    return f"({outcome_counts_sql(round_money_rows(con))})"


def outcome_frequency(con: duckdb.DuckDBPyConnection, *, alpha: float = OUTCOME_ALPHA,
                      min_rounds: int = MIN_FREQUENCY_ROUNDS) -> list[Row]:
    """One row per table and deck count tested: counts, chi-square, p-value and `flagged`."""
    out = []
    # run_rows: on a reader's connection within the writer's memory bound, as reconcile.
    for g in run_rows(con, _OUTCOMES.format(counts=_outcome_counts(con)), {}):
        if g["rounds"] < min_rounds:
            continue
        held = dict(g["counts"])  # a MAP: Arrow gives its (key, value) pairs
        counts = {c: int(held.get(c, 0)) for c in CATEGORIES}
        probs = theory.outcome_probabilities(int(g["decks"]))
        n = g["rounds"]
        observed = [counts[c] for c in CATEGORIES]
        expected = [float(probs[c] * n) for c in CATEGORIES]
        stat, df = pearson(observed, expected)
        p = chi_square_sf(stat, df)
        worst = max(CATEGORIES, key=lambda c: abs(counts[c] - float(probs[c] * n))
                    / math.sqrt(max(float(probs[c] * n), 1e-9)))
        out.append({**{k: g[k] for k in ("table_id", "decks", "rounds", "last_at")},
                    **counts, "chi_square": round(stat, 3), "df": df, "p_value": p,
                    "worst": worst, "worst_observed": counts[worst],
                    "worst_expected": round(float(probs[worst] * n), 1),
                    "flagged": p < alpha})
    return out


# --- HOLD_VARIANCE -----------------------------------------------------------------------------

# {rounds}: the `rounds` view, or the writer's stored round_money rows (one per round, with its
# started_at) when current, as reconcile() reads them: neither figure then rescans the rounds.
_GROUP_TIMES = """
SELECT table_id, gaming_day(started_at, $tz, $day_start_minutes) AS gaming_day,
       shift_name(started_at, $tz, $shift_starts, $shift_names) AS shift,
       max(started_at) AS last_at
FROM {rounds}
WHERE round_no > 0  -- money with no round, and round 0 (no round of play), are no round
GROUP BY ALL
"""
GROUPINGS = {"table": ("table_id",), "day": ("gaming_day",), "shift": ("gaming_day", "shift")}


def hold_variance(con: duckdb.DuckDBPyConnection, calendar: Calendar | None = None, *,
                  z_limit: float = HOLD_Z, min_rounds: int = MIN_HOLD_ROUNDS) -> list[Row]:
    """One row per table, gaming day and shift with at least `min_rounds` rounds: the reconcile
    figures, `grouping`, `last_at` and `flagged` (|z| > z_limit)."""
    calendar = calendar or Calendar()
    # A zone Python knows and DuckDB does not (posixrules) is one clear error, before any query
    # of the calendar's (reconcile checks it too, but after _GROUP_TIMES below).
    check_calendar(con, calendar)
    # Asked once (a few small queries), not again by each grouping's reconcile below: the
    # caller reads one snapshot (a served request's transaction, or a file no one writes).
    sums = shift_sums_serve(con, calendar)
    if sums:  # the running sums: one row per table and shift
        times = query_rows(con, f"SELECT table_id, gaming_day, shift, max(last_at) AS last_at "
                                f"FROM {SHIFT_MONEY} WHERE last_at IS NOT NULL "  # a round's
                                f"GROUP BY ALL", {})
    else:
        rounds = ROUND_MONEY if stored_money_current(con) else "rounds"
        times = query_rows(con, _GROUP_TIMES.format(rounds=rounds), calendar.params())
    out = []
    for grouping, keys in GROUPINGS.items():
        last: dict[tuple[Any, ...], datetime] = {}
        for t in times:
            k = tuple(t[c] for c in keys)
            last[k] = max(last.get(k, t["last_at"]), t["last_at"])
        for g in reconcile(con, (grouping,), calendar, sigma=z_limit, sums=sums):
            if g["rounds"] < min_rounds or g["z_score"] is None:
                continue
            z = float(g["z_score"])
            out.append({**g, "grouping": grouping, "last_at": last.get(tuple(g[c] for c in keys)),
                        "flagged": abs(z) > z_limit})
    return out


# --- as anomaly rows ---------------------------------------------------------------------------


def _group_name(g: Row) -> str:
    if g["grouping"] == "table":
        return f"Table {g['table_id']}"
    if g["grouping"] == "day":
        return f"Gaming day {g['gaming_day']}"
    return f"Shift {g['shift']} of gaming day {g['gaming_day']}"


def statistical_anomalies(con: duckdb.DuckDBPyConnection,
                          calendar: Calendar | None = None) -> list[Row]:
    """HOLD_VARIANCE and OUTCOME_FREQUENCY as rows of the anomaly schema."""
    found: list[Row] = []
    for g in hold_variance(con, calendar):
        if not g["flagged"]:
            continue
        found.append({
            "code": HOLD.code, "severity": HOLD.severity.value,
            "table_id": g.get("table_id"), "shoe_id": None, "round_no": None, "seqs": [],
            "explanation": (
                f"{_group_name(g)} held {g['hold_pct']}% of {dollars(g['handle_cents'])} "
                f"(net win {dollars(g['net_win_cents'])}) against a theoretical "
                f"{g['theo_hold_pct']}% ({dollars(g['theo_win_cents'])}) over {g['rounds']} "
                f"rounds: z = {g['z_score']}, beyond +/-{HOLD_Z} (1 in 1,000 by chance)"),
            "rule": HOLD.rule, "occurred_at": g["last_at"]})
    for g in outcome_frequency(con):
        if not g["flagged"]:
            continue
        found.append({
            "code": FREQUENCY.code, "severity": FREQUENCY.severity.value, "table_id": g["table_id"],
            "shoe_id": None, "round_no": None, "seqs": [],
            "explanation": (
                f"Table {g['table_id']} ({g['decks']}-deck shoes, {g['rounds']} rounds): outcome "
                f"frequencies off the combinatorics, chi-square {g['chi_square']} on {g['df']} "
                f"df, p = {g['p_value']:.2g} < {OUTCOME_ALPHA}; most off: {g['worst']} "
                f"{g['worst_observed']} seen, {g['worst_expected']} expected"),
            "rule": FREQUENCY.rule, "occurred_at": g["last_at"]})
    return found

"""`pitlog report`: one gaming day as a self-contained HTML page, for auditors.

Inline CSS (report_template.html) and inline SVG charts drawn by matplotlib (report_charts.py):
no scripts, nothing fetched.
Every figure in a table cell carries its exact value in `data-value` (integer cents, exact
percentages), so a test, or an auditor's script, can read the numbers back.

Sections: hold against theoretical by table and by dealer; anomalies over time (from the
`anomalies` view when it exists); outcome frequencies against events.reddog.theory's exact
probabilities, with a chi-square statistic; the conservation check; the ledger's statuses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from fractions import Fraction
from pathlib import Path
from string import Template
from typing import Any

import duckdb

from events.errors import NotFoundError
from events.reddog.theory import SPREADS, outcome_probabilities
from projections import reconcile as rc
from projections.localtime import clock, parse_zone
from projections.money import dollars
from projections.report_charts import escape, hold_chart, outcome_chart, timeline_chart
from projections.statistics import chi_square_sf, pearson

TEMPLATE = Path(__file__).with_name("report_template.html")
CHART_MAX = 30  # bars per hold chart; the tables always list every group
ANOMALY_LIST_MAX = 300  # anomalies listed one by one; the counts and the chart cover all
ANOMALY_DETAIL = ("severity", "table_id", "shoe_id", "round_no", "explanation")
OUTCOMES = ("consecutive", "trips", "pair_no_trips", *(f"spread_{s}" for s in SPREADS))
Row = dict[str, Any]



@dataclass
class Report:
    html: str
    day: date
    rounds: int
    tables: list[Row] = field(default_factory=list)
    dealers: list[Row] = field(default_factory=list)
    outcomes: list[Row] = field(default_factory=list)
    anomalies_note: str | None = None


# --- cells -------------------------------------------------------------------------------------


def _cell(col: str, value: Any, text: str | None = None, cls: str = "") -> str:
    shown = text if text is not None else ("" if value is None else str(value))
    data = "" if value is None else f' data-value="{escape(str(value))}"'
    klass = f' class="{cls}"' if cls else ""
    return f'<td data-col="{col}"{data}{klass}>{escape(shown)}</td>'


def _pct(v: Any) -> str:
    return "" if v is None else f"{v}%"


def _table(head: Sequence[str], body: Sequence[str]) -> str:
    ths = "".join(f"<th>{escape(h)}</th>" for h in head)
    return f"<table><thead><tr>{ths}</tr></thead><tbody>{''.join(body)}</tbody></table>"


# --- sections ----------------------------------------------------------------------------------


def _hold_section(rows: list[Row], key: str, label: str) -> str:
    if not rows:
        return '<p class="note">No rounds on this gaming day.</p>'
    head = [label, "Rounds", "Handle", "Paid", "Collected", "Returned", "Net win", "Hold",
            "Theo win", "Theo hold", "Variance", "Var. % pts", "z", "Flags"]
    body = []
    for r in rows:
        name = str(r[key] if r[key] is not None else "(none)")
        # Marked: the figure that needs attention (z beyond the limit), and the flags; the
        # group's name stays plain, so a page of tables with one exception each is not all red.
        off = "HOLD_VARIANCE" in r["flags"]
        body.append(
            f'<tr data-group="{escape(name)}"><td>{escape(name)}</td>'
            + _cell("rounds", r["rounds"])
            + "".join(_cell(c, r[c], dollars(r[c])) for c in
                      ("handle_cents", "paid_cents", "collected_cents", "returned_cents",
                       "net_win_cents"))
            + _cell("hold_pct", r["hold_pct"], _pct(r["hold_pct"]))
            + _cell("theo_win_cents", r["theo_win_cents"], dollars(r["theo_win_cents"]))
            + _cell("theo_hold_pct", r["theo_hold_pct"], _pct(r["theo_hold_pct"]))
            + _cell("variance_cents", r["variance_cents"],
                    dollars(r["variance_cents"]))
            + _cell("variance_pct", r["variance_pct"], _pct(r["variance_pct"]))
            + _cell("z_score", r["z_score"], cls="attn" if off else "")
            + f'<td class="flags{" attn" if r["flags"] else ""}">'
              f'{escape(r["flags"].replace(",", ", "))}</td></tr>')
    charted, note = rows, ""
    if len(rows) > CHART_MAX:  # a big floor: chart the groups furthest from theory
        charted = sorted(rows, key=lambda r: -abs(r["z_score"] or 0.0))[:CHART_MAX]
        note = (f" The chart shows the {CHART_MAX} of {len(rows)} furthest from theory "
                f"(largest |z| first); the table lists them all.")
    chart = hold_chart([(str(r[key] if r[key] is not None else "(none)"), r["hold_pct"],
                         r["theo_hold_pct"], "HOLD_VARIANCE" in r["flags"]) for r in charted])
    legend = ('<span class="legend" style="background:#2f6db5"></span>hold (net win / handle)'
              '<span class="legend" style="background:#9aa5b5"></span>theoretical hold')
    return (f"<figure>{chart}<figcaption>{legend}. A red name holds further from theory than "
            f"chance allows (HOLD_VARIANCE: |z| above the limit); the Flags column names every "
            f"flag.{escape(note)}</figcaption></figure>" + _table(head, body))


def _find(columns: Sequence[str], *names: str) -> str | None:
    return next((n for n in names if n in columns), None)


def _anomalies(con: duckdb.DuckDBPyConnection, cal: rc.Calendar, day: date,
               span: tuple[datetime, datetime]) -> tuple[str, str | None]:
    """(HTML, note) for the anomalies of the day; a note instead when there is no view."""
    found = con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = 'anomalies' "
                        "AND NOT internal").fetchall()
    if not found[0][0]:
        note = ("The database has no anomalies view yet (the anomaly rules are projected by a "
                "later version of pitlog); this section will fill in once it exists.")
        return f'<p class="note">{escape(note)}</p>', note
    try:
        cols = [r[0] for r in con.execute("DESCRIBE anomalies").fetchall()]
        code = _find(cols, "code")
        table = _find(cols, "table_id", "table")
        at = _find(cols, "occurred_at", "at", "detected_at", "started_at", "time")
        if code is None:
            raise duckdb.Error("the anomalies view has no code column")
        # Column names come from DESCRIBE of the view (fixed names above), not from a user.
        extra = ", ".join(f'"{c}" AS {c}' if c in cols else f"NULL AS {c}"
                          for c in ANOMALY_DETAIL)
        if at is not None:
            sql = (f'SELECT "{code}" AS code, timezone($tz, "{at}") AS local_at, '
                   f'"{at}" AS happened_at, {extra} '
                   f'FROM anomalies WHERE gaming_day("{at}", $tz, $day_start_minutes) = $day '
                   # Ties (two anomalies of one round at one moment) broken by code and
                   # explanation, so the same day always gives the same page.
                   f'ORDER BY local_at, table_id, round_no, code, explanation')
        elif table is not None and {"shoe_id", "round_no"} <= set(cols):
            detail = ", ".join(f'a."{c}" AS {c}' if c in cols else f"NULL AS {c}"
                               for c in ANOMALY_DETAIL)
            sql = (f'SELECT a."{code}" AS code, timezone($tz, r.started_at) AS local_at, '
                   f'r.started_at AS happened_at, '
                   f'{detail} FROM anomalies AS a JOIN rounds AS r ON r.table_id = a."{table}" '
                   f'AND r.shoe_id IS NOT DISTINCT FROM a.shoe_id AND r.round_no = a.round_no '
                   f'WHERE gaming_day(r.started_at, $tz, $day_start_minutes) = $day '
                   f'ORDER BY local_at, table_id, round_no, code, explanation')
        else:
            raise duckdb.Error("the anomalies view has no time and no round to place it by")
        params = {"tz": cal.tz, "day_start_minutes": cal.day_start, "day": day}
        rows = con.sql(sql, params=params).to_arrow_table().to_pylist()
    except duckdb.Error as exc:
        note = f"The anomalies view could not be read ({exc})."
        return f'<p class="note">{escape(note)}</p>', note
    if not rows:
        return '<p class="note">No anomalies on this gaming day.</p>', None
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["code"]] = counts.get(r["code"], 0) + 1
    zone = parse_zone(cal.tz)
    for r in rows:  # `21:14:07 EST`: the time on the casino's clock, its zone named
        r["clock"] = clock(r["happened_at"], zone)
    chart = timeline_chart([(r["code"], r["local_at"], r["clock"], _place(r)) for r in rows],
                           span)
    body = [f'<tr data-group="{escape(c)}"><td>{escape(c)}</td>{_cell("count", n)}</tr>'
            for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    listed = rows[:ANOMALY_LIST_MAX]
    items = [f'<tr data-group="anomaly"><td>{escape(r["clock"])}</td>'
             + _cell("code", r["code"])
             + _cell("severity", r["severity"], cls="attn" if r["severity"] == "high" else "")
             + _cell("table_id", r["table_id"]) + _cell("shoe_id", r["shoe_id"])
             + _cell("round_no", r["round_no"])
             + _cell("explanation", r["explanation"], cls="wrap") + "</tr>" for r in listed]
    more = ("" if len(rows) <= len(listed) else
            f'<p class="note">The first {len(listed)} of {len(rows)} are listed; '
            f'pitlog anomalies --since ... --until ... lists them all.</p>')
    return (f"<figure>{chart}<figcaption>Each dot is one anomaly, at the local time of its "
            f"round or event; the list below gives its table and round.</figcaption></figure>"
            + _table(["Code", "Count"], body)
            + "<h3>Each anomaly, in time order (severity high marked)</h3>"
            + _table(["Time", "Code", "Severity", "Table", "Shoe", "Round", "Explanation"],
                     items) + more), None


def _place(r: Row) -> str:
    """'T01, shoe T01-S0002, round 7' for a dot's tooltip."""
    parts = [str(r["table_id"] or "")]
    if r["shoe_id"]:
        parts.append(f"shoe {r['shoe_id']}")
    if r["round_no"] is not None:
        parts.append(f"round {r['round_no']}")
    return ", ".join(p for p in parts if p)


def outcome_rows(counts: list[Row]) -> list[Row]:
    """Observed and expected rounds per outcome; expected = sum over deck counts of rounds
    dealt from that many decks times events.reddog.theory.outcome_probabilities (exact)."""
    by_decks: dict[int, int] = {}
    observed = dict.fromkeys(OUTCOMES, 0)
    for r in counts:
        by_decks[r["decks"]] = by_decks.get(r["decks"], 0) + r["rounds"]
        observed[r["outcome"]] += r["rounds"]
    expected = dict.fromkeys(OUTCOMES, Fraction(0))
    for decks, n in by_decks.items():
        probs = outcome_probabilities(decks)
        for o in OUTCOMES:
            expected[o] += n * probs[o]
    return [{"outcome": o, "observed": observed[o], "expected": expected[o]} for o in OUTCOMES]


def chi_square(rows: list[Row]) -> tuple[float, int, float] | None:
    """(statistic, degrees of freedom, p-value): the very statistic of the OUTCOME_FREQUENCY
    anomaly (projections/statistics.py), so the report and `pitlog anomalies` agree. None if
    pooling leaves fewer than 2 cells."""
    stat, df = pearson([r["observed"] for r in rows], [float(r["expected"]) for r in rows])
    if df < 1:
        return None
    return stat, df, chi_square_sf(stat, df)


def _outcome_section(rows: list[Row]) -> str:
    total = sum(r["observed"] for r in rows)
    if not total:
        return '<p class="note">No rounds with a decided outcome on this gaming day.</p>'
    test = chi_square(rows)
    stat = ("" if test is None else
            f" Chi-square {test[0]:.2f} on {test[1]} degrees of freedom, p = {test[2]:.3f} "
            f"(outcomes expected fewer than 5 times pooled).")
    body = []
    for r in rows:
        e = r["expected"]
        body.append(
            f'<tr data-group="{r["outcome"]}"><td>{r["outcome"].replace("_", " ")}</td>'
            + _cell("observed", r["observed"])
            + _cell("expected", f"{e.numerator}/{e.denominator}", f"{float(e):.2f}")
            + _cell("observed_pct", None, f"{100 * r['observed'] / total:.2f}%")
            + _cell("expected_pct", None, f"{100 * float(e) / total:.2f}%") + "</tr>")
    chart = outcome_chart([(r["outcome"], r["observed"], float(r["expected"])) for r in rows])
    legend = ('<span class="legend" style="background:#2f6db5"></span>observed'
              '<span class="legend" style="border:2px solid #1d2430"></span>expected '
              "(events.reddog.theory, exact, for each round's deck count)")
    return (f"<figure>{chart}<figcaption>{legend}. {total} rounds.{stat}</figcaption></figure>"
            + _table(["Outcome", "Observed", "Expected", "Observed %", "Expected %"], body))


def _conservation_section(rows: list[Row]) -> str:
    head = ["Table", "Money in", "Paid", "Winners' stakes", "Voids returned", "Money out",
            "Collected", "Net win", "In play", "Difference", "Balanced"]
    body = []
    for r in rows:
        ok = r["balanced"]
        body.append(
            f'<tr data-group="{escape(r["table_id"])}"><td>{escape(r["table_id"])}</td>'
            + "".join(_cell(c, r[c], dollars(r[c])) for c in (
                "money_in_cents", "paid_cents", "winner_stakes_cents", "returned_cents",
                "money_out_cents", "collected_cents", "net_win_cents", "open_cents",
                "difference_cents"))
            + _cell("balanced", str(ok).lower(), "yes" if ok else "NO", "" if ok else "attn")
            + "</tr>")
    return ('<p class="meta">Money in (handle) = paid winnings + stakes returned to winners + '
            'void wagers returned + net win (collected &minus; paid), to the cent, with stakes '
            'still in play set aside.</p>' + _table(head, body))


def _ledger_section(rows: list[Row]) -> str:
    body = [f'<tr data-group="{escape(r["status"])}"><td>{escape(r["status"])}</td>'
            + _cell("wagers", r["wagers"])
            + _cell("amount_cents", r["amount_cents"], dollars(r["amount_cents"])) + "</tr>"
            for r in rows]
    return ('<p class="meta">Every wager and raise of the day by status (pitlog ledger '
            '--exceptions lists the ones to look at).</p>'
            + _table(["Status", "Wagers and raises", "Amount"], body))


def _summary(total: Row | None, conserved: list[Row]) -> str:
    if total is None:
        return ""
    balanced = all(r["balanced"] for r in conserved)
    cards = [("Rounds", str(total["rounds"]), "rounds"),
             ("Handle", dollars(total["handle_cents"]), "handle_cents"),
             ("Net win", dollars(total["net_win_cents"]), "net_win_cents"),
             ("Hold", _pct(total["hold_pct"]), "hold_pct"),
             ("Theoretical hold", _pct(total["theo_hold_pct"]), "theo_hold_pct"),
             ("Conservation", "balanced" if balanced else "NOT balanced", "balanced")]
    html = "".join(
        f'<div class="card{" bad" if key == "balanced" and not balanced else ""}" '
        f'data-col="{key}" data-value="{escape(str(total.get(key, balanced)))}">'
        f'<div class="label">{escape(label)}</div><div class="value">{escape(value)}</div></div>'
        for label, value, key in cards)
    return f'<div class="cards">{html}</div>'


# --- the report --------------------------------------------------------------------------------


def _one(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any],
         round_rows: str = "") -> list[Row]:
    return rc.run_rows(con, rc.query_sql(name, round_rows=round_rows), params)


REPORT_STEPS = 8  # the queries build_report runs, for a progress bar's total


def build_report(con: duckdb.DuckDBPyConnection, calendar: rc.Calendar | None = None, *,
                 day: date | None = None, db_label: str = "",
                 progress: Callable[[int, int], None] | None = None) -> Report:
    """The HTML report of one gaming day (the latest with a round when `day` is None).
    `progress(done, REPORT_STEPS)` follows its queries."""
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, REPORT_STEPS)

    cal = calendar or rc.Calendar()
    rc.check_calendar(con, cal)
    params = {"tz": cal.tz, "day_start_minutes": cal.day_start}
    rounds = rc.round_money_rows(con)
    if day is None:
        day = _one(con, "latest_day", params, rounds)[0]["day"]
        if day is None:
            raise NotFoundError("the database has no rounds to report on: run `pitlog project`")
    params["day"] = day
    span_row = _one(con, "day_span", params, rounds)[0]
    if not span_row["money_rows"]:
        rc.require_rounds_on(con, cal, day)  # names the days that have rounds
        raise NotFoundError(f"no rounds on gaming day {day} (gaming days start at "
                            f"{rc.hhmm(cal.day_start)} in {cal.tz})")
    span = (span_row["first_local"], span_row["last_local"] + timedelta(seconds=1))
    step()
    tables = rc.reconcile(con, ["table"], cal, day=day)
    step()
    dealers = rc.reconcile(con, ["dealer"], cal, day=day)
    step()
    totals = rc.reconcile(con, ["day"], cal, day=day)
    step()
    conserved = rc.conservation(con, ["table"], cal, day=day)
    step()
    outcomes = outcome_rows(rc.run_rows(con, rc.query_sql("outcomes", round_rows=rounds), params))
    step()
    anomalies_html, note = _anomalies(con, cal, day, span)
    step()
    statuses = _one(con, "statuses", params)
    step()
    html = Template(TEMPLATE.read_text(encoding="utf-8")).substitute(
        day=escape(day.isoformat()), day_start=escape(rc.hhmm(cal.day_start)),
        tz=escape(cal.tz), db=escape(db_label or "(connection)"),
        summary=_summary(totals[0] if totals else None, conserved),
        hold_tables=_hold_section(tables, "table_id", "Table"),
        hold_dealers=_hold_section(dealers, "dealer", "Dealer"),
        anomalies=anomalies_html, outcomes=_outcome_section(outcomes),
        conservation=_conservation_section(conserved),
        ledger=_ledger_section(statuses))
    return Report(html, day, span_row["rounds"], tables, dealers, outcomes, note)

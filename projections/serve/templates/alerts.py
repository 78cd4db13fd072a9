"""The alerts page: the live feed (pushed over /alerts, server-sent events), newest first, with
filters by table, code and severity; each alert opens its dispute."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from projections.console_data import SEVERITIES, AlertFilter
from projections.serve.templates.base import e, href, page, seqs_text, severity, time_cell

Row = dict[str, Any]


def alert_row(a: Row, tz: tzinfo) -> str:
    """One alert as a table row; the whole row opens the dispute."""
    link = href("/dispute", alert=a["alert_seq"])
    where = (f'{e(a["shoe_id"])} · round {e(a["round_no"])}' if a["round_no"] is not None
             else e(a["shoe_id"] or "table"))
    return (f'<tr class="alert sev-row-{e(a["severity"])}" data-seq="{e(a["alert_seq"])}" '
            f'data-table="{e(a["table_id"])}" data-code="{e(a["code"])}">'
            f'<td class="num">{e(a["alert_seq"])}</td>'
            f'<td>{time_cell(a["occurred_at"], tz)}</td><td>{severity(a["severity"])}</td>'
            f'<td><b>{e(a["table_id"])}</b></td><td class="where">{where}</td>'
            f'<td><a class="open" href="{link}"><b class="code">{e(a["code"])}</b></a></td>'
            f'<td class="expl"><a href="{link}">{e(a["explanation"])}</a></td>'
            f'<td class="rule">{e(a["rule"])}</td>'
            f'<td class="num seqs">{e(seqs_text(a["seqs"]))}</td></tr>')


def rows_html(alerts: list[Row], tz: tzinfo) -> str:
    return "".join(alert_row(a, tz) for a in alerts)


def _select(name: str, options: list[str], chosen: str | None, every: str) -> str:
    opts = "".join(f'<option{" selected" if o == chosen else ""}>{e(o)}</option>'
                   for o in options)
    return (f'<label>{name.title()} <select name="{name}"><option value="">{every}</option>'
            f'{opts}</select></label>')


def alerts_page(alerts: list[Row], tz: tzinfo, f: AlertFilter, tables: list[str],
                codes: list[str], *, now: datetime | None = None) -> str:
    last = max((int(a["alert_seq"]) for a in alerts), default=0)
    query = href("", table=f.table, code=f.code, severity=f.severity).lstrip("?")
    counts = {s: sum(1 for a in alerts if a["severity"] == s) for s in SEVERITIES}
    summary = " ".join(f'<span class="count">{severity(s)} <b id="count-{s}">{n}</b></span>'
                       for s, n in counts.items())
    filters = (f'<form class="filters" method="get" action="/alerts-page">'
               f'{_select("table", tables, f.table, "all tables")}'
               f'{_select("code", codes, f.code, "all codes")}'
               f'{_select("severity", list(SEVERITIES), f.severity, "any severity")}'
               f'<button type="submit">Filter</button>'
               f'<a class="clear" href="/alerts-page">clear</a></form>')
    body = f"""<div class="feedhead"><h1>Alerts</h1>
<span id="live" class="live off" title="the feed is pushed by the server">connecting…</span>
{summary}{filters}</div>
<table class="feed"><thead><tr><th>#</th><th>Time</th><th>Severity</th><th>Table</th>
<th>Shoe · round</th><th>Code</th><th>What happened</th><th>Rule</th><th>Events</th></tr></thead>
<tbody id="feed" data-last="{last}" data-query="{query}">{rows_html(alerts, tz)}</tbody></table>
<p class="muted" id="empty"{" hidden" if alerts else ""}>No alert matches yet; new ones appear
here as the server raises them.</p>"""
    twin = href("/alerts-page", table=f.table, code=f.code, severity=f.severity, format="json")
    return page("Alerts", body, tz, active="alerts", json_href=twin, scripts=("alerts.js",),
                now=now)

"""The tables page: the wall of tables, one tile each (the /api/tables rows)."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from projections.serve.templates.base import e, href, page, replay_href, time_cell

Row = dict[str, Any]


def tile(t: Row, tz: tzinfo) -> str:
    n = int(t["open_alerts"] or 0)
    alerts = href("/alerts-page", table=t["table_id"])
    badge = (f'<a class="badge{" hot" if n else ""}" href="{alerts}">'
             f'<b>{n}</b> alert{"s" if n != 1 else ""}</a>')
    replay = (f'<a href="{replay_href(t["shoe_id"], table=t["table_id"])}">replay</a>'
              if t["shoe_id"] else "")
    last = t["last_event_at"]
    current = href("/dispute", table=t["table_id"], shoe=t["shoe_id"], round=t["round_no"])
    dispute = f'<a href="{current}">current hand</a>' if t["round_no"] is not None else ""
    return (f'<article class="tile{" hot" if n else ""}" data-table="{e(t["table_id"])}">'
            f'<header><h2>{e(t["table_id"])}</h2>{badge}</header>'
            f'<dl><dt>Profile</dt><dd>{e(t["profile"])}</dd>'
            f'<dt>Shoe</dt><dd class="shoe">{e(t["shoe_id"])}</dd>'
            f'<dt>Round</dt><dd class="round">{e(t["round_no"])}</dd>'
            f'<dt>Dealer</dt><dd>{e(t["dealer"])}</dd>'
            f'<dt>Last event</dt><dd class="last">{time_cell(last, tz)}</dd>'
            f'<dt>Events</dt><dd>{e(t["events"])}</dd></dl>'
            f'<footer>{dispute} {replay}</footer></article>')


def tiles_html(tables: list[Row], tz: tzinfo) -> str:
    return "".join(tile(t, tz) for t in tables) or '<p class="muted">No table has events yet.</p>'


def tables_page(tables: list[Row], tz: tzinfo, *, last_alert: int = 0,
                now: datetime | None = None) -> str:
    hot = sum(1 for t in tables if t["open_alerts"])
    body = (f'<div class="feedhead"><h1>Tables</h1><span class="muted">{len(tables)} tables, '
            f'{hot} with alerts</span>'
            f'<span id="live" class="live off">connecting…</span></div>'
            f'<div class="tiles" id="tiles" data-last="{last_alert}">'
            f'{tiles_html(tables, tz)}</div>')
    return page("Tables", body, tz, active="tables", json_href="/api/tables",
                scripts=("tables.js",), now=now)

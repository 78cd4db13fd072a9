"""The layout and the cells every console page shares.

Times are shown by projections/localtime.py (the casino's clock, to the second, zone named);
money by projections/money.py (integer cents); cards by cards.py (drawn, not text).
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from projections.localtime import clock, iso, stamp, stamp_asked, zone_name
from projections.money import dollars

STATIC = Path(__file__).resolve().parent.parent / "static"

NAV = (("tables", "/tables", "Tables"), ("alerts", "/alerts-page", "Alerts"),
       ("dispute", "/dispute", "Dispute"), ("replay", "/replay", "Shoe replay"))


def e(value: Any) -> str:
    """HTML-escaped text of a value; None is empty."""
    return "" if value is None else escape(str(value), quote=True)


def href(path: str, **query: Any) -> str:
    """A link with its query string, skipping empty values (escaped for an attribute)."""
    q = {k: v for k, v in query.items() if v is not None and v != ""}
    return e(path + ("?" + urlencode(q) if q else ""))


def replay_href(shoe: object, **query: Any) -> str:
    """The console's replay page of a shoe: the id percent-encoded whole (an id may hold "/",
    "?", "#" or ".."; the route's {shoe:path} takes it back)."""
    return href("/replay/" + quote(str(shoe), safe=""), **query)


def time_cell(at: datetime | None, tz: tzinfo, *, full: bool = False,
              asked: bool = False) -> str:
    """A <time> with the wall clock shown and ISO 8601 (with offset) in datetime=; `asked`: a
    moment someone asked about, shown with its fraction when asked with one (stamp_asked)."""
    if at is None:
        return '<span class="muted">-</span>'
    shown = stamp_asked(at, tz) if asked else stamp(at, tz) if full else clock(at, tz)
    return f'<time datetime="{e(iso(at))}" title="{e(stamp(at, tz))}">{e(shown)}</time>'


def money(cents: int | None) -> str:
    return f'<span class="money">{e(dollars(cents))}</span>' if cents is not None else ""


def severity(level: str | None) -> str:
    return f'<span class="sev sev-{e(level)}">{e(level)}</span>'


def seqs_text(values: Any) -> str:
    return " ".join(str(v) for v in values or [])


def with_stale_banner(html: str, warning: str) -> str:
    """`html` with `warning` (api.stale_headers: the server stopped following the log) at the
    top of its body (styled by console.css, and incident.css on the printed report): a page or
    a printout from a stale server must say it is one, as every API answer does."""
    at = html.find("<body")
    if at < 0:  # a fragment (the tiles, the alert rows): its page carries the banner
        return html
    end = html.index(">", at) + 1
    banner = f'<div class="stale" role="alert">Not current: {e(warning)}</div>'  # stale.js too
    return html[:end] + banner + html[end:]


def page(title: str, body: str, tz: tzinfo, *, active: str = "", json_href: str = "",
         scripts: tuple[str, ...] = (), now: datetime | None = None) -> str:
    """A whole console page: the bar with the navigation, the casino zone and the JSON twin."""
    nav = "".join(f'<a href="{url}" class="{"on" if key == active else ""}">{label}</a>'
                  for key, url, label in NAV)
    twin = f'<a class="twin" href="{json_href}">JSON</a>' if json_href else ""
    zone = e(zone_name(now, tz)) if now else e(str(tz))
    js = "".join(f'<script src="/static/{s}" defer></script>' for s in ("stale.js", *scripts))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)} · pitlog</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/cards.css">
<link rel="stylesheet" href="/static/console.css">{js}
</head><body>
<header class="bar"><span class="brand">pitlog <b>surveillance</b></span>
<nav>{nav}</nav><span class="spacer"></span>
<span class="zone" title="the casino's time zone: every time on these pages">{zone}</span>
{twin}</header>
<main>{body}</main>
</body></html>
"""

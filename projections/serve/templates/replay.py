"""The shoe replay page: the shoe event by event (buttons and arrow keys), the hand building
card by card, the discard rack filling. The steps go to the page as JSON with their times
already on the casino's clock; static/replay.js draws the state after each step, with the card
pictures the server rendered once (one <template> per card of the shoe)."""

from __future__ import annotations

import json
from datetime import datetime, tzinfo
from typing import Any

from projections.console_data import ReplaySteps
from projections.localtime import clock
from projections.serve.templates.base import e, page, replay_href, time_cell
from projections.serve.templates.cards import card_svg

Row = dict[str, Any]


def steps_json(r: ReplaySteps, tz: tzinfo) -> str:
    steps = [{"seq": s["seq"], "time": clock(s["occurred_at"], tz), "round": s["round_no"],
              "type": s["event_type"], "text": s["description"], "card": s["card"],
              "box": s["box"], "racked": s["racked"], "role": s.get("role")} for s in r.steps]
    # </script> cannot appear inside the JSON: escape the slash of every "</".
    return json.dumps(steps).replace("</", "<\\/")


def replay_page(r: ReplaySteps, tz: tzinfo, *, start_seq: int | None = None,
                now: datetime | None = None) -> str:
    s = r.shoe
    labels = sorted({x["card"] for x in r.steps if x["card"]}
                    | {c for x in r.steps for c in x["racked"] or []})
    faces = "".join(f'<template data-card="{e(c)}">{card_svg(c, size="md")}</template>'
                    f'<template data-back="{e(c)}">{card_svg(c, size="sm", back=True)}</template>'
                    f'<template data-small="{e(c)}">{card_svg(c, size="sm")}</template>'
                    for c in labels)
    start = 0
    if start_seq is not None:
        start = next((i for i, x in enumerate(r.steps) if x["seq"] >= start_seq), 0)
    head = (f'<div class="roundhead"><h1>Shoe <b>{e(s["shoe_id"])}</b> at table '
            f'<b>{e(s["table_id"])}</b></h1><div class="facts">'
            f'<div class="fact"><span>Opened</span>'
            f'<b>{time_cell(s["opened_at"], tz, full=True)}</b></div>'
            f'<div class="fact"><span>Closed</span><b>{time_cell(s["closed_at"], tz)}</b></div>'
            f'<div class="fact"><span>Rounds</span><b>{e(s["rounds"])}</b></div>'
            f'<div class="fact"><span>Decks</span><b>{e(s["decks"])}</b></div>'
            f'<div class="fact"><span>Dealers</span><b>{e(", ".join(s["dealers"] or []))}</b></div>'
            f'</div></div>')
    body = f"""{head}
<div class="player" id="player" data-start="{start}" data-table="{e(s['table_id'])}">
<div class="controls">
<button id="first" title="first event (Home)">|◀ first</button>
<button id="prevround" title="previous round (PageUp)">◀◀ round</button>
<button id="prev" title="previous event (←)">◀ prev</button>
<span id="pos" class="pos"></span>
<button id="next" title="next event (→)">next ▶</button>
<button id="nextround" title="next round (PageDown)">round ▶▶</button>
<button id="last" title="last event (End)">last ▶|</button>
<a id="dispute" class="button" href="#">Dispute this round</a>
<span class="muted keys">keys: ← → step · PgUp PgDn round · Home End</span></div>
<div class="now" id="now"><span id="now-time"></span> <span id="now-seq" class="seq"></span>
<b id="now-type"></b> <span id="now-text"></span></div>
<div class="grid-replay">
<section class="panel"><h2>The hand <span id="round" class="muted"></span></h2>
<div class="layout"><div class="box"><h3>Left</h3><div id="box-left" class="cards"></div></div>
<div class="box"><h3>Middle</h3><div id="box-middle" class="cards"></div></div>
<div class="box"><h3>Right</h3><div id="box-right" class="cards"></div></div></div></section>
<section class="panel"><h2>Discard rack <span id="rack-count" class="muted"></span></h2>
<div id="rack" class="cards rack"></div></section>
<section class="panel events"><h2>Events</h2><ol id="events" class="events"></ol></section>
</div></div>
<div hidden id="faces">{faces}</div>
<script type="application/json" id="steps">{steps_json(r, tz)}</script>"""
    twin = replay_href(s["shoe_id"], table=s["table_id"], format="json")
    return page(f"Replay {s['shoe_id']}", body, tz, active="replay", json_href=twin,
                scripts=("replay.js",), now=now)


def shoes_page(shoes: list[Row], tz: tzinfo, *, now: datetime | None = None) -> str:
    body = "".join(
        f'<tr><td><b>{e(s["table_id"])}</b></td><td><a href="'
        f'{replay_href(s["shoe_id"], table=s["table_id"])}">{e(s["shoe_id"])}</a></td>'
        f'<td>{time_cell(s["opened_at"], tz, full=True)}</td>'
        f'<td>{time_cell(s["closed_at"], tz)}</td>'
        f'<td class="num">{e(s["rounds"])}</td><td class="num">{e(s["cards_dealt"])}</td>'
        f'<td>{e(", ".join(s["dealers"] or []))}</td></tr>' for s in shoes)
    table = (f'<section class="panel"><h1>Shoes</h1><table id="shoes"><thead><tr><th>Table</th>'
             f'<th>Shoe</th><th>Opened</th><th>Closed</th><th>Rounds</th><th>Cards</th>'
             f'<th>Dealers</th></tr></thead><tbody>{body}</tbody></table></section>')
    return page("Shoe replay", table, tz, active="replay", json_href="/api/shoes", now=now)

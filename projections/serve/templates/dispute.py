"""The dispute page: the hand in question, everything an officer needs on one screen.

Cards in dealing order and in discard-rack order (13:47-20.31(d)15: the rack order lets the hand
be reconstructed in a dispute), each with its wall-clock time to the second for the video; the
announcements; each seat's wagers and raises; the settlement required next to the one made, the
differences highlighted; the anomalies, their proving events highlighted wherever they appear.
A moment outside every round says so and offers the rounds before and after (moment.py).
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from events.reddog.rules import FIRST_SEAT
from projections.dispute import Dispute
from projections.localtime import form_time, local
from projections.moment import OutsideRound, RoundSpan
from projections.serve.templates.base import (
    e,
    href,
    money,
    page,
    replay_href,
    seqs_text,
    severity,
    time_cell,
)
from projections.serve.templates.cards import card_svg

Row = dict[str, Any]


def proving_seqs(d: Dispute, extra: list[int] | None = None) -> set[int]:
    """The sequence numbers of the events that prove the round's anomalies (and an alert's)."""
    return {int(s) for a in d.anomalies for s in a.get("seqs") or []} | set(extra or [])


def _mark(seq: Any, proof: set[int]) -> str:
    return " proof" if seq is not None and int(seq) in proof else ""


def round_head(d: Dispute, tz: tzinfo) -> str:
    r = d.round
    hand = f"spread {r['spread']}" if r["kind"] == "spread" else e(r["kind"])
    facts = [("Dealer", e(r["dealer"])), ("Started", time_cell(r["started_at"], tz, full=True)),
             ("Ended", time_cell(r["ended_at"], tz)), ("Hand", hand),
             ("Players", e(r["players_result"])),
             ("Voided", "yes" if r["voided"] else "no"),
             ("Events", f"seq {e(r['first_seq'])}–{e(r['last_seq'])}")]
    cells = "".join(f'<div class="fact"><span>{k}</span><b>{v}</b></div>' for k, v in facts)
    return (f'<div class="roundhead"><h1>Table <b data-field="table">{e(r["table_id"])}</b> · '
            f'shoe <b data-field="shoe">{e(r["shoe_id"])}</b> · round '
            f'<b data-field="round">{e(r["round_no"])}</b></h1><div class="facts">{cells}</div>'
            f'</div>')


def anomalies_panel(d: Dispute, tz: tzinfo) -> str:
    if not d.anomalies:
        return '<section class="panel ok"><h2>Anomalies</h2><p>None touch this round.</p></section>'
    items = "".join(
        f'<li class="anomaly" data-code="{e(a["code"])}">{severity(a["severity"])} '
        f'<b class="code">{e(a["code"])}</b> {time_cell(a.get("occurred_at"), tz)}'
        f'<p>{e(a["explanation"])}</p><p class="rule">Rule {e(a["rule"])} · proving events: '
        f'<span class="seqs">{e(seqs_text(a["seqs"]))}</span></p></li>' for a in d.anomalies)
    return (f'<section class="panel alarm"><h2>Anomalies</h2><ul class="anomalies">{items}</ul>'
            f'</section>')


def role_tag(role: str | None) -> str:
    """A card's role in its round (dispute.py's `role`, sql/cards.sql's card_role) as a short tag,
    the whole sentence on hover: which card decided (13:47-20.31(d)13-14), whether it was
    diverted from the middle box, and which decided nothing."""
    if not role:
        return ""
    if role.startswith("the deciding third card, diverted"):
        short, kind = "decides · diverted", "diverted"
    elif role.startswith("the deciding third card"):
        short, kind = "decides", "deciding"
    elif role.startswith("redrawn"):
        short, kind = "redrawn · decides nothing", "redrawn"
    else:
        short, kind = role.split(":")[0].split(" (")[0], "nothing"
    return f' <span class="role {kind}" data-role="{kind}" title="{e(role)}">{e(short)}</span>'


def cards_panel(d: Dispute, tz: tzinfo, proof: set[int], size: str = "md") -> str:
    drawn = sorted((c for c in d.cards
                    if c["drawn_seq"] is not None and c["box"] != "found face up"),
                   key=lambda c: c["drawn_seq"])
    dealing = "".join(card_svg(
        c["card"], size=size, cls="drawn" + _mark(c["drawn_seq"], proof),
        caption=f'<b>{e(c["box"])}</b> <span class="seq">#{e(c["drawn_seq"])}</span>'
                f'{role_tag(c.get("role"))}<br>{time_cell(c["drawn_at"], tz)}') for c in drawn)
    rack = "".join(card_svg(
        c["card"], size=size, cls="racked" + _mark(c["racked_seq"], proof) + (
            " unracked" if c["rack_position"] is None else ""),
        caption=(f'<b>{e(c["rack_position"]) if c["rack_position"] is not None else "—"}</b> '
                 f'<span class="seq">#{e(c["racked_seq"])}</span><br>'
                 f'{time_cell(c["racked_at"], tz)}'
                 + (f'<span class="note">{e(c["note"])}</span>' if c["note"] else "")))
        for c in d.cards)
    return (f'<section class="panel cardpanel"><div><h2>Cards in dealing order</h2>'
            f'<div class="cards" id="dealing">{dealing or "<p>No card drawn.</p>"}</div></div>'
            f'<div><h2>In the discard rack, in rack order</h2>'
            f'<div class="cards" id="rack">{rack or "<p>No card racked.</p>"}</div></div>'
            f'</section>')


def _table(title: str, head: list[str], body: str, ident: str) -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    empty = f'<tr><td colspan="{len(head)}" class="muted">none</td></tr>'
    return (f'<section class="panel"><h2>{title}</h2><table id="{ident}"><thead><tr>{th}</tr>'
            f'</thead><tbody>{body or empty}</tbody></table></section>')


def announcements_panel(d: Dispute, tz: tzinfo, proof: set[int]) -> str:
    body = "".join(
        f'<tr data-seq="{e(a["seq"])}" class="{_mark(a["seq"], proof)}">'
        f'<td>{time_cell(a["occurred_at"], tz)}</td><td class="num">{e(a["seq"])}</td>'
        f'<td>“{e(a["phrase"])}”</td><td class="muted">{e(a["meaning"])}'
        f'{" " + e(a["value"]) if a["value"] is not None else ""}</td></tr>'
        for a in d.announcements)
    return _table("Announcements", ["Time", "Seq", "Said", "Meaning"], body, "announcements")


def wagers_panel(d: Dispute, tz: tzinfo, proof: set[int]) -> str:
    body = "".join(
        f'<tr data-seq="{e(w["seq"])}" class="{_mark(w["seq"], proof)}">'
        f'<td class="num">{e(w["seat"])}</td><td class="num">{e(w["area"])}</td>'
        f'<td>{time_cell(w["occurred_at"], tz)}</td><td class="num">{e(w["seq"])}</td>'
        f'<td>{e(w["action"])}</td><td class="num">{money(w["amount_cents"])}</td>'
        f'<td class="muted">{e(w["player_id"])}</td></tr>' for w in d.wagers)
    return _table("Wagers, raises and choices by seat",
                  ["Seat", "Area", "Time", "Seq", "Action", "Amount", "Player"], body, "wagers")


def settlements_panel(d: Dispute, tz: tzinfo, proof: set[int]) -> str:
    body = ""
    for s in d.settlements:
        differs = s["status"] != "OK"
        seqs = s["settlement_seqs"] or []
        mark = " proof" if any(int(q) in proof for q in seqs) else ""
        body += (f'<tr class="{"diff" if differs else ""}{mark}" data-status="{e(s["status"])}" '
                 f'data-seat="{e(s["seat"])}" data-kind="{e(s["wager_kind"])}">'
                 f'<td class="num">{e(s["seat"])}</td><td class="num">{e(s["area"])}</td>'
                 f'<td>{e(str(s["wager_kind"]).lower())}</td>'
                 f'<td class="num">{money(s["wager_cents"])}</td>'
                 f'<td class="required">{e(s["required"])}</td>'
                 f'<td class="made">{e(s["made"])}</td>'
                 f'<td><span class="status{" bad" if differs else ""}">{e(s["status"])}</span></td>'
                 f'<td>{time_cell(s["settled_at"], tz)}</td>'
                 f'<td class="num">{e(seqs_text(seqs))}</td></tr>')
    return _table("Settlement: required by the rules, and made",
                  ["Seat", "Area", "Wager", "Amount", "Required", "Made", "Status", "Settled",
                   "Seqs"], body, "settlements")


def also_in_play_panel(d: Dispute, tz: tzinfo) -> str:
    """The other rounds in play at the moment asked (Dispute.also_in_play), each a link: the
    hand shown is not the only one the video shows then."""
    if not d.also_in_play:
        return ""
    table = d.round["table_id"]
    spans = "".join(_neighbour("Also in play", span, table, tz, None)
                    for span in d.others_in_play())
    return ('<section class="panel also" id="also-in-play"><h2>Also in play at this moment'
            "</h2><p class=\"headline\">Another round's events bracket the moment asked too "
            "(the next round's first wager placed before this one was racked, say): the video "
            f'shows both.</p><div class="neighbours">{spans}</div></section>')


def dispute_sections(d: Dispute, tz: tzinfo, proof: set[int], size: str = "md") -> str:
    """Everything below the form: shared by the page and the incident report."""
    return (round_head(d, tz) + also_in_play_panel(d, tz) + anomalies_panel(d, tz)
            + cards_panel(d, tz, proof, size)
            + '<div class="grid2">' + settlements_panel(d, tz, proof)
            + wagers_panel(d, tz, proof) + announcements_panel(d, tz, proof) + "</div>")


def picker(tables: list[str], tz: tzinfo, table: str | None, at: datetime | None,
           seat: int | None) -> str:
    """Pick a table and a local time (and a seat): GET /dispute."""
    opts = "".join(f'<option{" selected" if t == table else ""}>{e(t)}</option>' for t in tables)
    if table and table not in tables:
        opts = f'<option selected>{e(table)}</option>' + opts
    value = form_time(at, tz)
    return (f'<form class="picker" method="get" action="/dispute">'
            f'<label>Table <select name="table">{opts}</select></label>'
            # as wide as what it shows: the offset of the fall-back hour (25 characters) too
            f'<label>Local time ({e(str(tz))}), 24-hour <input type="text" name="at" '
            f'size="{max(19, len(value))}" '
            f'placeholder="2026-11-28 21:14:07" value="{e(value)}" required '
            f'pattern="\\d{{4}}-\\d{{2}}-\\d{{2}}[ T]\\d{{2}}:\\d{{2}}(:\\d{{2}})?.*"></label>'
            f'<label>Seat <input type="number" min="{FIRST_SEAT}" name="seat" '
            f'value="{e(seat or "")}" placeholder="all"></label>'
            f'<button type="submit">Rebuild the hand</button></form>')


def _neighbour(title: str, span: RoundSpan | None, table: str, tz: tzinfo,
               seat: int | None) -> str:
    """A round offered instead: a link to it, for the seat asked about (its own rounds are
    offered, so the link keeps it: a session 37 review)."""
    if span is None:
        return f'<div class="neighbour none"><h3>{title}</h3><p>none</p></div>'
    if span.shoe_id is None:  # a round dealt with no shoe: asked for by its start, as --at
        link = href("/dispute", table=table, at=local(span.started_at, tz).isoformat(),
                    seat=seat)
        name = f"round {span.round_no} (no shoe)"
    else:
        link = href("/dispute", table=table, shoe=span.shoe_id, round=span.round_no, seat=seat)
        name = f"{e(span.shoe_id)} round {span.round_no}"
    return (f'<a class="neighbour" data-round="{e(span.shoe_id or "")}:{span.round_no}" '
            f'href="{link}"><h3>{title}</h3><b>{name}</b>'
            f'<span>{time_cell(span.started_at, tz, full=True)} to '
            f'{time_cell(span.ended_at, tz)}</span></a>')


def outside_body(x: OutsideRound, tz: tzinfo) -> str:
    """The moment is in no round: say where it fell and offer the rounds before and after."""
    what = f"Seat {x.seat}'s rounds" if x.seat is not None else "Rounds"
    near = ""
    if x.before or x.after or x.where != "unknown table":
        near = (f'<h2>{what} just before and after</h2><div class="neighbours">'
                + _neighbour("Before", x.before, x.table, tz, x.seat)
                + _neighbour("After", x.after, x.table, tz, x.seat) + "</div>")
    known = ""
    if x.known_tables:
        moment = local(x.at, tz).isoformat()  # with its offset: exact in the fall-back hour
        known = "<p>Known tables: " + " ".join(
            f'<a href="{href("/dispute", table=t, at=moment)}">{e(t)}</a>'
            for t in x.known_tables) + "</p>"
    return (f'<section class="panel outside" id="outside" data-where="{e(x.where)}">'
            f'<h1>No hand to show: {e(x.where)}</h1><p class="headline">{e(x.headline(tz))}</p>'
            f'<p class="muted">No other hand is shown in its place: pick one of these.</p>'
            f'{near}{known}</section>')


def dispute_page(d: Dispute | None, tz: tzinfo, *, tables: list[str], table: str | None,
                 at: datetime | None, seat: int | None, outside: OutsideRound | None = None,
                 alert: Row | None = None, json_href: str = "", now: datetime | None = None) -> str:
    shown_at = at or (d.round["started_at"] if d is not None else None)
    body = picker(tables, tz, table, shown_at, seat)
    if alert is not None:
        body += (f'<div class="from-alert">From alert #{e(alert["alert_seq"])}: '
                 f'{severity(alert["severity"])} <b>{e(alert["code"])}</b> '
                 f'{time_cell(alert["occurred_at"], tz)} — {e(alert["explanation"])}</div>')
    if outside is not None:
        body += outside_body(outside, tz)
    elif d is not None:
        r = d.round
        report = href("/incident", table=r["table_id"], shoe=r["shoe_id"], round=r["round_no"],
                      seat=seat, alert=alert["alert_seq"] if alert else None)
        replay = replay_href(r["shoe_id"], table=r["table_id"], seq=r["first_seq"])
        links = (f'<div class="actions"><a class="button" id="incident" href="{report}">'
                 f'Incident report</a><a class="button" id="replay" href="{replay}">'
                 f'Replay the shoe from this round</a></div>')
        proof = proving_seqs(d, list(alert["seqs"]) if alert else None)
        body += links + dispute_sections(d, tz, proof)
    title = (f"Dispute {d.round['table_id']} {d.round['shoe_id']} round {d.round['round_no']}"
             if d else "Dispute")
    return page(title, body, tz, active="dispute", json_href=json_href, now=now)

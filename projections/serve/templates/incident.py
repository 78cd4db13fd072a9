"""The incident report: one printable page per dispute for the shift manager.

The same function renders GET /incident and `pitlog dispute ... --out incident.html`, so the file
and the page are the same document. It is self-contained (its CSS inline, the cards inline SVG),
so the written file opens anywhere; the print CSS (static/incident.css) fits one Letter or A4
page and numbers the pages in the margin.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Any

from projections.dispute import Dispute
from projections.localtime import stamp, zone_name
from projections.serve.templates.base import STATIC, e, seqs_text, severity, time_cell
from projections.serve.templates.dispute import (
    announcements_panel,
    cards_panel,
    proving_seqs,
    settlements_panel,
    wagers_panel,
)

Row = dict[str, Any]


def report_id(d: Dispute) -> str:
    r = d.round
    shoe = str(r["shoe_id"])
    where = shoe if shoe.startswith(str(r["table_id"])) else f"{r['table_id']}-{shoe}"
    return f"{where}-R{r['round_no']}"


def incident_page(d: Dispute, tz: tzinfo, *, at: datetime | None = None, seat: int | None = None,
                  alert: Row | None = None, now: datetime | None = None) -> str:
    """The whole report as one HTML document."""
    r = d.round
    prepared = now or datetime.now(UTC)
    css = (STATIC / "cards.css").read_text() + (STATIC / "incident.css").read_text()
    proof = proving_seqs(d, list(alert["seqs"]) if alert else None)
    rid = report_id(d)
    asked = [("Table", e(r["table_id"])), ("Shoe", e(r["shoe_id"])),
             ("Round", e(r["round_no"])), ("Dealer", e(r["dealer"])),
             ("Round began", time_cell(r["started_at"], tz, full=True)),
             ("Round ended", time_cell(r["ended_at"], tz)),
             ("Moment in question", time_cell(at, tz, asked=True) if at else "by round"),
             ("Seat", e(seat) if seat else "all seats"),
             ("Hand", f"spread {e(r['spread'])}" if r["kind"] == "spread" else e(r["kind"])),
             ("Players' result", e(r["players_result"])),
             ("Events", f"seq {e(r['first_seq'])}–{e(r['last_seq'])}")]
    if alert is not None:
        asked.append(("Alert", f"#{e(alert['alert_seq'])} {e(alert['code'])}"))
    facts = "".join(f"<div><span>{k}</span><b>{v}</b></div>" for k, v in asked)
    # The moment is in more than one round (Dispute.also_in_play): the report names the others
    also = "".join(f'<p class="also" id="also-in-play" data-round="{e(span.shoe_id or "")}:'
                   f'{e(span.round_no)}">Also in play at that moment: '
                   f'{e(span.describe(tz))}</p>' for span in d.others_in_play())
    findings = "".join(
        f'<li>{severity(a["severity"])} <b>{e(a["code"])}</b> — {e(a["explanation"])} '
        f'<span class="rule">(rule {e(a["rule"])}; events {e(seqs_text(a["seqs"]))})</span></li>'
        for a in d.anomalies) or "<li>No anomaly touches this round.</li>"
    sign = "".join(
        f'<div class="sign"><b>{who}</b><div class="line">Name</div>'
        f'<div class="line">Signature</div><div class="line">Date and time</div></div>'
        for who in ("Surveillance officer", "Shift manager"))
    # A busy round (many seats, raises, findings) gets a smaller type so that it still fits
    # one page: the report is one sheet for the shift manager.
    lines = (len(d.settlements) + max(len(d.wagers), len(d.announcements))
             + 2 * len(d.anomalies))
    # Thresholds measured on Letter, the shorter sheet: 24 lines printed on two Letter pages
    # at the "dense" size, on one at "denser".
    density = "dense" if lines > 12 else ""
    density = "denser" if lines > 20 else density
    density = "densest" if lines > 32 else density
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Incident report {e(rid)}</title>
<style>{css}
@page {{ @bottom-left {{ content: "pitlog incident report {e(rid)}"; }} }}
</style></head><body class="incident">
<button class="print-button" onclick="window.print()">Print</button>
<article class="report {density}">
<header><h1>Incident report</h1><div class="rid">{e(rid)}<br>
<span>prepared {e(stamp(prepared, tz))}</span></div></header>
<section class="subject"><h2>Subject</h2><div class="facts">{facts}</div>{also}</section>
<section class="findings"><h2>Findings</h2><ul>{findings}</ul></section>
<section class="evidence"><h2>Evidence</h2>
{cards_panel(d, tz, proof, size="sm")}
{settlements_panel(d, tz, proof)}
<div class="two">{wagers_panel(d, tz, proof)}{announcements_panel(d, tz, proof)}</div>
<p class="legend">Times are on the casino's clock ({e(_zones(d, tz, prepared))}), to
the second, for the video. Highlighted: the events that prove the findings. Required
settlement from the paytable in force (docs/anomalies.md); made: as recorded.</p>
</section>
<section class="signoff"><h2>Review and sign-off</h2>
<div class="notes"><div class="line">Notes</div></div>
<div class="signs">{sign}</div></section>
</article></body></html>
"""


def _zones(d: Dispute, tz: tzinfo, prepared: datetime) -> str:
    """The zone's name when the round was played (EDT or EST by its own date, not the day the
    report was prepared); both, in order, for a round across a change of offset."""
    began = d.round.get("started_at") or prepared
    ended = d.round.get("ended_at") or began
    return ", then ".join(dict.fromkeys(zone_name(at, tz) for at in (began, ended)))

"""`pitlog dispute` for people: the rebuilt hand as a few narrow tables that fit 80 columns.

Every time is on the casino's clock to the second with the zone named (the video is found by
it); amounts, statuses and card labels are never wrapped or cut (render's `keep`), the longer
texts (settlement wording, explanations) fold onto more lines instead.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Any

from cli.output import Format, cents, render
from projections.dispute import Dispute
from projections.localtime import clock, stamp

Row = dict[str, Any]


def _seqs(value: Any) -> str:
    return " ".join(str(v) for v in value or [])


def round_fields(d: Dispute, tz: tzinfo) -> list[Row]:
    """The round's facts, one (field, value) row each."""
    r = d.round
    # The third card is the deciding one (13:47-20.31(d)10, (d)13-14), wherever the dealer put
    # it (a diverted one is named); any later card drawn is listed apart, as a redraw that
    # decides nothing.
    cards = " ".join(c for c in (r["left_card"], r["right_card"], r["third_card"]) if c)
    third = r["third_card"] or "none"
    box = r["third_card_box"]
    if box and box != "middle":
        place = "the discard rack" if box == "discard_rack" else f"the {box} box"
        third += f" (diverted to {place}, not the middle box: it still decides)"
    redrawn = " ".join(r["redrawn_cards"] or []) or "none"
    return [{"field": k, "value": v} for k, v in (
        ("table", r["table_id"]), ("shoe", r["shoe_id"]), ("round", r["round_no"]),
        ("dealer", r["dealer"]), ("started", stamp(r["started_at"], tz)),
        ("ended", stamp(r["ended_at"], tz)), ("cards", cards), ("deciding third card", third),
        ("redrawn", redrawn),
        ("hand", f"spread {r['spread']}" if r["kind"] == "spread" else r["kind"]),
        ("players' result", r["players_result"]), ("voided", "yes" if r["voided"] else "no"),
        ("events", f"seq {r['first_seq']} to {r['last_seq']}"))]


def render_dispute(d: Dispute, tz: tzinfo) -> None:
    r = d.round
    where = f"{r['table_id']} {r['shoe_id']} round {r['round_no']}"
    render(round_fields(d, tz), Format.table, title=f"dispute: {where}", tz=tz, compact=True)
    render([{"rack": c["rack_position"], "card": c["card"], "box": c["box"],
             "drawn": clock(c["drawn_at"], tz), "seq": c["drawn_seq"],
             "racked": clock(c["racked_at"], tz),
             "note": "; ".join(x for x in (c["role"], c["note"]) if x)} for c in d.cards],
           Format.table, title=f"{where}: cards in discard-rack order", tz=tz, compact=True,
           keep=("card", "drawn", "racked"))
    render([{"time": clock(a["occurred_at"], tz), "seq": a["seq"], "phrase": a["phrase"],
             "meaning": a["meaning"], "value": a["value"]} for a in d.announcements],
           Format.table, title=f"{where}: announcements", tz=tz, compact=True, keep=("time",))
    render([{"seat": w["seat"], "area": w["area"], "time": clock(w["occurred_at"], tz),
             "seq": w["seq"], "action": w["action"], "player": w["player_id"],
             "amount": cents(w["amount_cents"])} for w in d.wagers],
           Format.table, title=f"{where}: wagers, raises and choices", tz=tz, compact=True,
           keep=("time", "amount"))
    render([{"seat": s["seat"], "kind": s["wager_kind"].lower(),
             "wager": cents(s["wager_cents"]), "required": s["required"], "made": s["made"],
             "status": s["status"], "settled": clock(s["settled_at"], tz)}
            for s in d.settlements],
           Format.table, title=f"{where}: settlement required and made", tz=tz, compact=True,
           keep=("wager", "status", "settled"))
    render([{"code": a["code"], "severity": a["severity"], "seqs": _seqs(a["seqs"]),
             "explanation": a["explanation"]} for a in d.anomalies],
           Format.table, title=f"{where}: anomalies", tz=tz, compact=True, keep=("code",))

"""`pitlog dispute`: the hand in play at a table at a moment, rebuilt for a dispute
(projections/dispute.py), as rows for machines, the console's printable incident page
(FILE.html), or, for people, a few narrow tables that fit 80 columns.

Every time is on the casino's clock to the second with the zone named (the video is found by
it); amounts, statuses and card labels are never wrapped or cut (render's `keep`), the longer
texts (settlement wording, explanations) fold onto more lines instead.
"""

from __future__ import annotations

from dataclasses import fields
from datetime import tzinfo
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.client import ServerOpt, ask
from cli.options import DbOpt, FormatOpt, TzOpt, db_path, given, new_file, parse_time
from cli.output import FILE_FORMATS, Format, render
from cli.reading import reading
from events.errors import PitlogError
from events.reddog.rules import FIRST_SEAT, MIN_ROUND_NO
from projections.dispute import Dispute, dispute
from projections.localtime import casino_zone, casino_zone_name, clock, stamp
from projections.moment import OutsideRound
from projections.money import dollars
from projections.serve.templates.base import seqs_text
from projections.serve.templates.incident import incident_page

# The --out names that get the printable incident report (any other needs --format).
INCIDENT_SUFFIXES = (".html", ".htm")

Row = dict[str, Any]


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
    shoe = r["shoe_id"] if r["shoe_id"] is not None else "(no shoe)"  # a round dealt with none
    where = f"{r['table_id']} {shoe} round {r['round_no']}"
    render(round_fields(d, tz), Format.table, title=f"dispute: {where}", tz=tz, compact=True)
    for span in d.others_in_play():  # the moment is in more than one round: never hide one
        typer.echo(f"Also in play at that moment: {span.describe(tz)}")
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
             "amount": dollars(w["amount_cents"])} for w in d.wagers],
           Format.table, title=f"{where}: wagers, raises and choices", tz=tz, compact=True,
           keep=("time", "amount"))
    render([{"seat": s["seat"], "kind": s["wager_kind"].lower(),
             "wager": dollars(s["wager_cents"]), "required": s["required"], "made": s["made"],
             "status": s["status"], "settled": clock(s["settled_at"], tz)}
            for s in d.settlements],
           Format.table, title=f"{where}: settlement required and made", tz=tz, compact=True,
           keep=("wager", "status", "settled"))
    render([{"code": a["code"], "severity": a["severity"], "seqs": seqs_text(a["seqs"]),
             "explanation": a["explanation"]} for a in d.anomalies],
           Format.table, title=f"{where}: anomalies", tz=tz, compact=True, keep=("code",))


def _round_id(text: str) -> tuple[str, int]:
    shoe, sep, number = text.rpartition(":")
    if not sep or not shoe or not number.removeprefix("-").isdigit():
        raise PitlogError(f"--round {text!r}: write SHOE:ROUND, e.g. --round T07-S0012:31")
    if int(number) < MIN_ROUND_NO:  # the API's and the console's bound too
        raise PitlogError(f"--round {text!r}: round must be at least {MIN_ROUND_NO}")
    return shoe, int(number)


def dispute_cmd(
    table: Annotated[str, typer.Option("--table", help="The table, e.g. T07.",
                                       callback=given)],
    at: Annotated[str | None, typer.Option(
        "--at", help="The moment in question (ISO 8601; without a zone, on the --tz clock): "
                     "the round in play then is shown. A time to the second (the video's, or "
                     "one copied from a table) is that whole second: a round begun within it "
                     "counts.")] = None,
    round_: Annotated[str | None, typer.Option(
        "--round", help="Or the round itself, as SHOE:ROUND (e.g. T07-S0012:31).")] = None,
    seat: Annotated[int | None, typer.Option(
        "--seat", min=FIRST_SEAT, help="Only this seat's wagers and settlements.")] = None,
    tz: TzOpt = None,
    db: DbOpt = None, format: FormatOpt = Format.table, out: Annotated[Path | None, typer.Option(
        "--out", "-o", callback=new_file,
        help="Write to this file: FILE.html is the printable incident report (the console's "
             "page); otherwise the rows as --format.")] = None,
    server: ServerOpt = None,
) -> None:
    """Rebuild the hand in play at a table at a moment: its cards in discard-rack order with the
    time each left the shoe, every announcement, every wager and raise per seat, the settlement
    the rules require next to the one made, and the anomalies that touch the round. Times are
    shown on the casino's clock (--tz or PITLOG_TZ).

    A moment in no round (between rounds or shoes, before the table opened, after it closed),
    an unknown table or a seat that did not play is an error (exit 1) naming the rounds just
    before and after, with their times: never another hand.

    Example: pitlog dispute --table T01 --at 2026-11-28T18:14:20 --tz America/New_York --seat 3
    """
    zone = casino_zone(tz)
    if out is not None and format is Format.table and \
            out.suffix.lower() not in INCIDENT_SUFFIXES:  # said before anything is read
        raise PitlogError(
            f"--out {out.name}: dispute writes the incident report to a "
            f"{' or '.join(INCIDENT_SUFFIXES)} file, or the rows with --format "
            f"{'|'.join(FILE_FORMATS)}: name the file {out.stem}{INCIDENT_SUFFIXES[0]}, or add "
            f"--format")
    if out is not None and format is not Format.table and \
            out.suffix.lower() in INCIDENT_SUFFIXES:  # the report has no --format: said first
        raise PitlogError(
            f"--out {out.name} writes the incident report (HTML), which --format {format.value} "
            f"does not change: drop --format, or name the file {out.stem}.{format.value}")
    if (at is None) == (round_ is None):
        raise PitlogError("give either --at TIME or --round SHOE:ROUND")
    moment = parse_time(at, tz, "--at") if at is not None else None
    shoe, number = _round_id(round_) if round_ is not None else (None, None)
    found = ask(db_path(db), server, "/api/dispute", table=table, at=moment, shoe=shoe,
                round=number, seat=seat,
                # this command's zone, UTC included: the server's own would word an error
                # on another clock than the file's answer does
                tz=casino_zone_name(tz))
    if found is not None:
        # the fields this CLI knows: a newer server may answer more (also_in_play was new once)
        d = Dispute(**{f.name: found[f.name] for f in fields(Dispute) if f.name in found})
    else:
        with reading(db) as con:
            try:
                d = dispute(con, table, at=moment, shoe=shoe, round_no=number, seat=seat)
            except OutsideRound as exc:
                raise PitlogError(exc.describe(zone)) from None
    if out is not None and out.suffix.lower() in INCIDENT_SUFFIXES:
        out.write_text(incident_page(d, zone, at=moment, seat=seat))
        return
    if format is Format.table and out is None:
        render_dispute(d, zone)
        return
    sections: list[tuple[str, list[dict[str, Any]]]] = [
        ("round", [d.round]), ("card", d.cards), ("announcement", d.announcements),
        ("wager", d.wagers), ("settlement", d.settlements), ("anomaly", d.anomalies),
        ("also in play", d.also_in_play)]
    flat = [{"section": name, **row} for name, rows in sections for row in rows]
    columns = list(dict.fromkeys(k for row in flat for k in row))
    render(flat, format, out=out, columns=columns)

"""Shoes and their replay: `pitlog shoes` lists them, `pitlog replay` rebuilds one event by
event. The lookups a surveillance officer runs most, so this module imports DuckDB's side of
pitlog and nothing heavier (issue 19: no pyarrow, numpy or simulator for a lookup)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

import typer

from cli.client import ServerOpt, ask
from cli.listing import LimitOpt, limited
from cli.options import DbOpt, FormatOpt, OutOpt, TableOpt, TzOpt, db_path, given
from cli.output import Format, render
from cli.reading import reading
from events.errors import PitlogError
from projections.localtime import casino_zone
from projections.queries import list_shoes
from projections.replay import ShoeReplay, replay_shoe


def shoes(
    table: TableOpt = None,
    limit: LimitOpt = None,
    db: DbOpt = None,
    format: FormatOpt = Format.table,
    out: OutOpt = None,
    tz: TzOpt = None,
    server: ServerOpt = None,
) -> None:
    """List the shoes: table, decks, when opened and closed, rounds, cards, burns, dealers.

    Example: pitlog shoes --table T01 --tz America/New_York
    """
    found = ask(db_path(db), server, "/api/shoes", table=table)
    if found is None:
        with reading(db) as con:
            found = list_shoes(con, table=table)
    found = limited(found, limit, format, format is Format.table and out is None, "shoes")
    render(found, format, out=out, title="shoes", tz=casino_zone(tz))


def replay(
    shoe: Annotated[
        str | None, typer.Argument(help="Shoe id as listed by `pitlog shoes`, e.g. T01-S0001.",
                                   show_default=False)
    ] = None,
    shoe_opt: Annotated[
        str | None, typer.Option("--shoe", show_default=False,
                                 help="The shoe, as an option (as `anomalies --shoe` and "
                                      "`ledger --shoe` name it); the same as SHOE.")
    ] = None,
    table: Annotated[
        str | None, typer.Option("--table", show_default=False,
                                 callback=given,
                                 help="The table, when the shoe id was used at more than one "
                                      "(the error then names them).")
    ] = None,
    db: DbOpt = None,
    format: FormatOpt = Format.table,
    out: OutOpt = None,
    tz: TzOpt = None,
    server: ServerOpt = None,
) -> None:
    """Replay one shoe event by event (times, cards, announcements, wagers, settlements),
    then its hands in discard-rack order.

    Example: pitlog replay T01-S0001  (or: pitlog replay --shoe T01-S0001 --table T01)
    """
    if shoe is not None and shoe_opt is not None and shoe != shoe_opt:
        raise PitlogError(f"two shoes given ({shoe} and --shoe {shoe_opt}): give one")
    shoe = shoe or shoe_opt
    if not shoe:
        raise PitlogError("which shoe? give it as `pitlog replay T01-S0001` or "
                          "`pitlog replay --shoe T01-S0001` (`pitlog shoes` lists them)")
    found = ask(db_path(db), server, f"/api/replay/{quote(shoe, safe='')}", table=table)
    if found is not None:
        result = ShoeReplay(**found)
    else:
        with reading(db) as con:
            result = replay_shoe(con, shoe, table)
    if format is Format.table and out is None:
        zone = casino_zone(tz)
        render(result.events, format, title=f"shoe {shoe}: events", tz=zone)
        render(result.hands, format, title=f"shoe {shoe}: hands in discard-rack order", tz=zone)
    else:
        rows = [{"section": "event", **r} for r in result.events] + [
            {"section": "hand", **r} for r in result.hands
        ]
        columns = list(dict.fromkeys(k for r in rows for k in r))
        render(rows, format, out=out, columns=columns)

"""`pitlog theo`: the exact house edge from the combinatorics (events/reddog/theory.py)."""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated

import typer

from cli.options import SummaryOpt
from cli.output import Summary, render
from events.reddog import theory
from events.reddog.rules import MAX_DECKS, MIN_DECKS, STANDARD_PAYTABLE


def theo(
    decks: Annotated[
        int, typer.Option(min=MIN_DECKS, max=MAX_DECKS, help="Decks in the shoe.")
    ] = 6,
    raise_from: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=11,
            help="The player raises the full wager from this spread up; omit for never.",
        ),
    ] = None,
    format: SummaryOpt = Summary.table,
) -> None:
    """The exact house edge from the combinatorics, as a fraction and a percentage.

    Example: pitlog theo --decks 6 --raise-from 7
    """
    edge = theory.house_edge(decks, raise_from, STANDARD_PAYTABLE)
    rows = [
        {
            "measure": "house edge per original wager",
            "exact": edge.per_original_wager,
            "percent": percent(edge.per_original_wager),
        },
        {
            "measure": "house edge per unit wagered (element of risk)",
            "exact": edge.per_total_wagered,
            "percent": percent(edge.per_total_wagered),
        },
        {
            "measure": "expected units wagered per original wager",
            "exact": edge.expected_wagered_per_original,
            "percent": None,
        },
    ]
    for row in rows:
        row.update(decks=decks, raise_from=raise_from)
    render(rows, format, columns=["decks", "raise_from", "measure", "exact", "percent"])


def percent(x: Fraction) -> str:
    """The fraction as a percentage to 4 decimals, rounded half up exactly, with no float in
    between: 1/50 -> '2.0000%'."""
    scaled = x * 100 * 10_000
    n = (scaled.numerator * 2 + scaled.denominator) // (2 * scaled.denominator)
    sign = "-" if n < 0 else ""
    whole, frac = divmod(abs(n), 10_000)
    return f"{sign}{whole}.{frac:04d}%"

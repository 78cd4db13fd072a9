"""Rendering shared by every query command: --format table|json|jsonl|csv|parquet, --out FILE.

json is an array of objects, jsonl one object a line, csv has a header row: DuckDB writes them
all from the rows' own types (projections/export.py). table is for people: every time on the
casino's clock, to the second, with the zone named (projections/localtime.py: --tz, else
PITLOG_TZ, else UTC), and a long cell folded onto more lines rather than cut. Strings come from
devices: table and csv show control characters as escapes (events/text.py), json escapes them,
and table cells are rich Text, never markup.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from datetime import date, datetime, tzinfo
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from events.errors import PitlogError
from events.text import visible
from projections.export import columns_of, write
from projections.localtime import casino_zone, stamp


class Format(StrEnum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    parquet = "parquet"


class Summary(StrEnum):
    """--format of commands that print a summary, not rows to export (no parquet)."""
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"


def plain(value: Any) -> Any:
    """One JSON- and CSV-friendly rendering of a value, used by every format."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


PIPED_WIDTH = 10_000  # Rich pads a table to its own width, not the console's
SHORT_CELL = 32  # a column whose every cell fits in this is never wrapped
LONG_CELL_MIN = 24  # a long text column gets at least this, so it never goes a word a line


def render(rows: Sequence[dict[str, Any]], fmt: Format | Summary, *, out: Path | None = None,
           title: str | None = None, columns: Sequence[str] | None = None,
           tz: tzinfo | None = None, keep: Sequence[str] = (), compact: bool = False) -> None:
    """Write `rows` as `fmt`. In the table format, times are shown in `tz` (default: the
    casino's zone), the columns named in `keep` (amounts, statuses) are never wrapped, and
    `compact` drops the vertical rules to leave their room to the cells."""

    fmt = Format(str(fmt))
    cols = list(columns or columns_of(rows))
    if fmt is not Format.table:
        if fmt is Format.parquet and out is None:
            raise PitlogError("--format parquet writes a file: add --out FILE.parquet")
        write(rows, cols, fmt.value, out if out is not None else sys.stdout)
        return
    if out is not None:
        raise PitlogError("--out writes csv, json, jsonl or parquet: add --format "
                          "csv|json|jsonl|parquet")
    # Piped output has no terminal width: as wide as the rows need, never cut. $COLUMNS, when
    # set, is the width asked for (rich reads it).
    wide = sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()
    console = Console(soft_wrap=False, width=None if wide else PIPED_WIDTH)
    if not rows:
        console.print(Text(f"{visible(title) + ': ' if title else ''}no rows"))
        return
    zone = tz or casino_zone()
    cells = [[_cell(r.get(c), zone) for c in cols] for r in rows]
    table = Table(title=Text(visible(title)) if title else None, show_lines=False,
                  header_style="bold", box=box.SIMPLE_HEAD if compact else box.HEAVY_HEAD,
                  pad_edge=not compact, collapse_padding=compact)
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    short = [w <= SHORT_CELL for w in widths]
    # Each column costs 3 more characters of borders and padding.
    needed = sum(w + 3 if s else LONG_CELL_MIN + 3 for w, s in zip(widths, short, strict=True))
    fits = needed < console.width
    for c, w, s in zip(cols, widths, short, strict=True):
        if c in keep or (s and fits):  # money, codes, statuses, times: whole, on one line
            table.add_column(Text(visible(c)), no_wrap=True, min_width=w)
        elif s:  # too narrow a terminal: folded onto more lines, never cut
            table.add_column(Text(visible(c)), overflow="fold")
        else:  # explanations and descriptions take the room left, wrapped between words
            table.add_column(Text(visible(c)), ratio=1,
                             min_width=LONG_CELL_MIN if fits else None)
    for row in cells:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)

def _cell(value: Any, zone: tzinfo) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return stamp(value, zone)
    value = plain(value)
    if isinstance(value, list):
        return visible(" ".join(str(v) for v in value))
    return visible(str(value))


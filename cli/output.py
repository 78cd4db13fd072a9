"""Rendering shared by every query command: --format table|json|csv, and --out FILE.

json is an array of objects; csv has a header row; table is for people. Values that are not
JSON-native (datetimes, bytes, decimals) are rendered the same way in json, csv and parquet
(times as ISO 8601 with their offset); the table format shows every time on the casino's clock,
to the second, with the zone named (projections/localtime.py: --tz, else PITLOG_TZ, else UTC),
and folds a long cell onto more lines rather than cut it.
"""

from __future__ import annotations

import csv
import io
import json
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

from events.errors import PitlogError
from projections.localtime import casino_zone, stamp


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    parquet = "parquet"


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


def render(rows: Sequence[dict[str, Any]], fmt: Format, *, out: Path | None = None,
           title: str | None = None, columns: Sequence[str] | None = None,
           tz: tzinfo | None = None, keep: Sequence[str] = (), compact: bool = False) -> None:
    """Write `rows` as `fmt`. In the table format, times are shown in `tz` (default: the
    casino's zone), the columns named in `keep` (amounts, statuses) are never wrapped, and
    `compact` drops the vertical rules to leave their room to the cells."""
    cols = list(columns or (rows[0].keys() if rows else []))
    if fmt is Format.parquet:
        if out is None:
            raise PitlogError("--format parquet writes a file: add --out FILE.parquet")
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist([{c: plain(r.get(c)) for c in cols} for r in rows])
        pq.write_table(table, out)
        return
    if fmt is Format.json:
        text = json.dumps([{c: plain(r.get(c)) for c in cols} for r in rows], indent=2) + "\n"
    elif fmt is Format.csv:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(cols)
        for r in rows:
            writer.writerow([_csv_cell(plain(r.get(c))) for c in cols])
        text = buf.getvalue()
    else:
        if out is not None:
            raise PitlogError("--out writes csv, json or parquet: add --format csv|json|parquet")
        # Piped output has no terminal width: give tables room rather than cut every cell.
        # $COLUMNS, when set, is the width asked for (rich reads it).
        wide = sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()
        console = Console(soft_wrap=False, width=None if wide else 160)
        if not rows:
            console.print(f"{title + ': ' if title else ''}no rows")
            return
        zone = tz or casino_zone()
        table = Table(title=title, show_lines=False, header_style="bold",
                      box=box.SIMPLE_HEAD if compact else box.HEAVY_HEAD,
                      pad_edge=not compact, collapse_padding=compact)
        for c in cols:
            table.add_column(c, overflow="fold", no_wrap=c in keep)
        for r in rows:
            table.add_row(*(_cell(r.get(c), zone) for c in cols))
        console.print(table)
        return
    if out is not None:
        out.write_text(text)
    else:
        sys.stdout.write(text)


def _cell(value: Any, zone: tzinfo) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return stamp(value, zone)
    value = plain(value)
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)


def _csv_cell(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, list | dict) else value


def cents(amount: int | None) -> str:
    """$1,234.50 from integer cents, exactly (no floats)."""
    if amount is None:
        return ""
    sign = "-" if amount < 0 else ""
    dollars, rest = divmod(abs(amount), 100)
    return f"{sign}${dollars:,}.{rest:02d}"

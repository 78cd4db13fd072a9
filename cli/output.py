"""Rendering shared by every query command: --format table|json|jsonl|csv|parquet, --out FILE.

json is an array of objects, jsonl one object a line, csv has a header row: DuckDB writes them
all from the rows' own types (projections/export.py). table is for people: every time on the
casino's clock, to the second, with the zone named (projections/localtime.py: --tz, else
PITLOG_TZ, else UTC), and a long cell folded onto more lines rather than cut. Columns too wide
together for the terminal are shown a block at a time, each value whole. Strings come from
devices: table and csv show control characters as escapes (events/text.py), json escapes them,
and table cells are rich Text, never markup.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, tzinfo
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from pathlib import Path
from typing import Any

from rich import box
from rich._wrap import divide_line  # rich's own line breaks (rich pinned at 15.0.0)
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from events.errors import PitlogError
from events.text import visible
from projections.export import columns_of, write
from projections.localtime import as_written, casino_zone, local, stamp


class Format(StrEnum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    parquet = "parquet"


# The formats --out writes a file in (all but the table, which is for people).
FILE_FORMATS = tuple(sorted(f.value for f in Format if f is not Format.table))


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
MIN_CELL = 3  # fewer characters than this for every column: a row per table (render)


def render(rows: Sequence[dict[str, Any]], fmt: Format | Summary, *, out: Path | None = None,
           title: str | None = None, columns: Sequence[str] | None = None,
           tz: tzinfo | None = None, keep: Sequence[str] = (), compact: bool = False,
           line_breaks: bool = False) -> None:
    """Write `rows` as `fmt`. In the table format, times are shown in `tz` (default: the
    casino's zone), the columns named in `keep` (amounts, statuses) are never wrapped,
    `compact` drops the vertical rules to leave their room to the cells, and with
    `line_breaks` a newline in a text starts a new line of its cell (`pitlog sql`: EXPLAIN's
    plan, a query's own text) instead of showing as `\\x0a`."""

    fmt = Format(str(fmt))
    cols = list(columns or columns_of(rows))
    if fmt is not Format.table:
        if fmt is Format.parquet and out is None:
            raise PitlogError("--format parquet writes a file: add --out FILE.parquet")
        write(rows, cols, fmt.value, out if out is not None else sys.stdout)
        return
    if out is not None:
        raise PitlogError(f"--out writes {', '.join(FILE_FORMATS[:-1])} or {FILE_FORMATS[-1]}: "
                          f"add --format {'|'.join(FILE_FORMATS)}")
    # Piped output has no terminal width: as wide as the rows need, never cut. $COLUMNS, when
    # set, is the width asked for (rich reads it).
    wide = sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()
    console = Console(soft_wrap=False, width=None if wide else PIPED_WIDTH)
    if not rows:
        console.print(Text(f"{visible(title) + ': ' if title else ''}no rows"))
        return
    # The casino's zone read only for rows that may hold a time (`pitlog theo` shows none,
    # and answers with PITLOG_TZ misspelt)
    zone = tz or (casino_zone() if _may_hold_a_time(rows, cols) else UTC)
    if len(cols) * (3 + MIN_CELL) + 1 > console.width and len(cols) > 2:
        # More columns than the terminal can draw (each costs 3 characters of borders before
        # its text): rich would shrink them to nothing and show no value at all. One small
        # table per row instead, a line per column, as duckdb's `.mode line` does.
        for n, r in enumerate(rows, 1):
            render([{"column": c, "value": r.get(c)} for c in cols], Format.table, tz=zone,
                   title=f"{title + ': ' if title else ''}row {n:,} of {len(rows):,}",
                   keep=("column",), line_breaks=line_breaks)
        return
    cells = [[_cell(r.get(c), zone, line_breaks) for c in cols] for r in rows]
    heads = [visible(c) for c in cols]
    titled = visible(title) if title else None
    widths = [max(len(c), *(_widest_line(row[i]) for row in cells)) for i, c in enumerate(cols)]
    short = [w <= SHORT_CELL for w in widths]
    # A cell of several lines: a rule between rows, so its next line is never read as a row
    # of its own (a device's string with a newline could otherwise forge one).
    ruled = line_breaks and any("\n" in c for row in cells for c in row)
    # Each column costs 3 more characters of borders and padding.
    cost = [w + 3 if s else LONG_CELL_MIN + 3 for w, s in zip(widths, short, strict=True)]
    fits = sum(cost) < console.width
    blocks = None if fits else _column_blocks(_key_width(cells), cost, console.width)
    if blocks is not None:
        # Too wide for the terminal: folding would break amounts, dates and ids mid-value
        # ("$43,3" over "75.00"). Instead the columns in turn, each value whole, a table per
        # block that fits, each repeating the columns that name a row so its rows match.
        for n, block in enumerate(blocks, 1):
            render(rows, fmt, title=f"{title + ' ' if title else ''}(part {n} of {len(blocks)})",
                   columns=[cols[i] for i in block], tz=zone, keep=keep, compact=compact,
                   line_breaks=line_breaks)
        return

    def table() -> Table:
        """The table with its columns, no rows yet."""
        drawn = Table(title=Text(titled) if titled else None, show_lines=ruled,
                      header_style="bold", box=box.SIMPLE_HEAD if compact else box.HEAVY_HEAD,
                      pad_edge=not compact, collapse_padding=compact)
        for c, head, w, s in zip(cols, heads, widths, short, strict=True):
            if c in keep or (s and fits):  # money, codes, statuses, times: whole, on one line
                drawn.add_column(Text(head), no_wrap=True, min_width=w)
            elif s:  # too narrow a terminal: folded onto more lines, never cut
                drawn.add_column(Text(head), overflow="fold")
            else:  # explanations and descriptions take the room left, wrapped between words
                # (a word longer than the column folded, never cut with an ellipsis)
                drawn.add_column(Text(head), ratio=1, min_width=LONG_CELL_MIN if fits else None,
                                 overflow="fold")
        return drawn

    if not compact and _plain_table(console, table, titled, heads, cells):
        return
    drawn = table()
    for row in cells:
        drawn.add_row(*(Text(cell) for cell in row))
    console.print(drawn)


def _key_width(cells: list[list[str]]) -> int:
    """How many leading columns name a row: the fewest (up to 4) whose values no two rows
    share (a shoe's table and shoe id; a table's id alone when grouped by table), else as
    many as that allows."""
    most = min(4, len(cells[0]) - 1)
    for n in range(1, most):
        if len({tuple(row[:n]) for row in cells}) == len(cells):
            return n
    return max(most, 1)


def _column_blocks(key: int, cost: list[int], width: int) -> list[list[int]] | None:
    """The columns (by index, each taking `cost` characters) packed in order into tables
    that each fit `width` whole, the first `key` columns in each; None when one table fits,
    or when the key columns and some other could not share a table (then the cells are
    folded instead)."""
    keys = sum(cost[:key])
    blocks, block, used = [], list(range(key)), keys
    for i in range(key, len(cost)):
        if keys + cost[i] >= width:
            return None
        if used + cost[i] >= width:
            blocks.append(block)
            block, used = list(range(key)), keys
        block.append(i)
        used += cost[i]
    blocks.append(block)
    return blocks if len(blocks) > 1 else None


def _measured_as(texts: list[str]) -> str:
    """ASCII text that rich measures as it measures the widest of `texts` together: its
    longest word (the least width) and its longest line (the most)."""
    least = max((len(w) for t in texts for w in (t.split() or [t])), default=0)
    most = max((len(t) for t in texts), default=0)
    out = "x" * least
    while len(out) < most:
        out += (" " + "x" * least)[:most - len(out)]
    return out


def _plain_table(console: Console, table: Callable[[], Table], title: str | None,
                 heads: list[str], cells: list[list[str]]) -> bool:
    """Write, without styles, the table rich draws, and answer True; or write nothing and
    answer False, for rich to draw it.

    Why: rich measures, wraps and pads each cell as a renderable, which made `pitlog replay`
    of a long shoe (1,500 rows) cost four times its query (issue 19, item 4). Here rich lays out
    the columns from one row measured as the whole column measures (`_measured_as`); a cell
    that fits is padded, one that does not is wrapped or folded by `_wrapped` (rich itself for
    a column `_wrapped` does not cover), each distinct text once. Taken only where that is
    rich's output to the byte (tests/cli/test_output_plain.py compares the two): no colours or
    styles to write (output piped, or a terminal without colour), a UTF-8 box, ASCII text (one
    cell per character), the table within the console and the title within the table.
    """
    if console.color_system is not None or console.legacy_windows \
            or console.options.ascii_only or not all(h.isascii() for h in heads) \
            or (title is not None and not title.isascii()) \
            or not all(c.isascii() and "\n" not in c for row in cells for c in row):
        return False
    proxy = table()
    proxy.add_row(*(Text(_measured_as([h, *(row[i] for row in cells)]))
                    for i, h in enumerate(heads)))
    options = console.options
    widths = proxy._calculate_column_widths(  # rich 15.0.0 (pinned): how it lays out columns
        console, options.update_width(options.max_width - proxy._extra_width))
    width = sum(widths) + len(widths) + 1
    if width > console.width or (title is not None and len(title.rstrip()) > width):
        return False  # rich crops the lines to the console, wraps the title
    columns = proxy.columns

    drawn_before: dict[tuple[str, int], list[str]] = {}  # a shoe's texts repeat

    def lines(text: str, i: int) -> list[str]:
        """One cell as rich draws it in column i: padded, wrapped or folded."""
        if len(text) + 2 <= widths[i]:
            return [" " + text.ljust(widths[i] - 2) + " "]
        found = drawn_before.get((text, i))
        if found is None:
            found = drawn_before[(text, i)] = wrapped(text, i)
        return found

    def wrapped(text: str, i: int) -> list[str]:
        col = columns[i]
        if widths[i] >= 3 and not col.no_wrap and col.justify == "left" \
                and col.overflow in ("fold", "ellipsis", "crop"):
            return [f" {line} " for line in _wrapped(text, widths[i] - 2, col.overflow)]
        drawn = console.render_lines(
            Padding(Text(text), (0, 1)),
            options.update(width=widths[i], justify=col.justify, no_wrap=col.no_wrap,
                           overflow=col.overflow, height=None), pad=True)
        w = widths[i]  # rich's set_shape: each line cut or padded to the column
        return ["".join(seg.text for seg in line)[:w].ljust(w) for line in drawn]

    out = []
    if title is not None:
        shown = title.rstrip()  # rich's centring: the title's trailing spaces dropped
        left = (width - len(shown)) // 2
        out.append(" " * left + shown + " " * (width - left - len(shown)))
    out.append("┏" + "┳".join("━" * w for w in widths) + "┓")
    out.extend(_row("┃", [lines(h, i) for i, h in enumerate(heads)], widths, bottom=True))
    out.append("┡" + "╇".join("━" * w for w in widths) + "┩")
    for row in cells:
        out.extend(_row("│", [lines(c, i) for i, c in enumerate(row)], widths, bottom=False))
    out.append("└" + "┴".join("─" * w for w in widths) + "┘")
    console.file.write("\n".join(out) + "\n")
    return True


def _wrapped(text: str, width: int, overflow: str) -> list[str]:
    """Single-line ASCII text as rich 15.0.0's Text.wrap lays it out, justified left, with
    rich's own break finder: the breaks between words, a line's trailing spaces cut to the
    width, a word longer than the width folded, or cut with an ellipsis."""
    offsets = divide_line(text, width, fold=overflow == "fold")
    out = []
    for start, end in zip([0, *offsets], [*offsets, len(text)], strict=True):
        line = text[start:end]
        if len(line) > width:  # Text.rstrip_end
            line = line[:len(line) - min(len(line) - len(line.rstrip()), len(line) - width)]
        if len(line) > width:  # Text.truncate
            line = line[:width - 1] + "…" if overflow == "ellipsis" else line[:width]
        out.append(line.ljust(width))
    return out


def _row(bar: str, cells: list[list[str]], widths: list[int], *, bottom: bool) -> list[str]:
    """A row's lines: each cell's lines at the top (a header's at the bottom), blank below."""
    height = max(1, *(len(c) for c in cells))
    if all(len(c) == 1 for c in cells):
        return [bar + bar.join(c[0] for c in cells) + bar]
    shaped = []
    for c, w in zip(cells, widths, strict=True):
        blank = [" " * w] * (height - len(c))
        shaped.append(blank + c if bottom else c + blank)
    return [bar + bar.join(c[n] for c in shaped) + bar for n in range(height)]


def _cell(value: Any, zone: tzinfo, line_breaks: bool = False) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        # a TIMESTAMP without a zone (`AT TIME ZONE` in `pitlog sql`) is a wall clock already:
        # shown as it is, never moved to the casino's zone again
        return stamp(value, zone) if value.tzinfo is not None else as_written(value)
    if isinstance(value, list | tuple | dict):
        # a time inside a list or struct on the casino's clock too, as ISO 8601 with its
        # offset (it was shown on the machine's: an outside review, session 39)
        value = _on_clock(value, zone)
    value = plain(value)
    if isinstance(value, list):
        text = " ".join(_nested(v, top=True) for v in value)
    else:
        text = _nested(value, top=True)
    if line_breaks:  # each line's control characters still escaped, a line's end kept
        return "\n".join(visible(line) for line in text.split("\n"))
    return visible(text)


def _nested(value: Any, top: bool = False) -> str:
    """A value in a table cell as Python writes a list or a dict, but a NULL inside one as
    `NULL`, as the CSV and DuckDB write it (Python's `None` showed: an outside review). `top`:
    the cell's own value or an item of its list, a string as it is, not quoted."""
    if value is None:
        return "NULL"
    if isinstance(value, list):
        return "[" + ", ".join(_nested(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_nested(v)}" for k, v in value.items()) + "}"
    return str(value) if top else repr(value)


def _on_clock(value: Any, zone: tzinfo) -> Any:
    """`value` with every time that has a zone, however deep, moved to `zone`."""
    if isinstance(value, datetime):
        return local(value, zone) if value.tzinfo is not None else value
    if isinstance(value, list | tuple):
        return [_on_clock(v, zone) for v in value]
    if isinstance(value, dict):
        return {k: _on_clock(v, zone) for k, v in value.items()}
    return value


def _may_hold_a_time(rows: Sequence[dict[str, Any]], cols: Sequence[str]) -> bool:
    return any(isinstance(r.get(c), datetime | list | tuple | dict) for r in rows for c in cols)


def _widest_line(text: str) -> int:
    return max(len(line) for line in text.split("\n"))


"""`--limit N` for listing commands, and the "N of M shown" line when rows are left out.

The table format is for people: it shows the first DEFAULT_TABLE_ROWS rows unless told
otherwise (as the duckdb CLI does); json, jsonl, csv and parquet get every row unless limited.
The note goes to stderr, so a machine format on stdout stays exactly the rows.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Annotated, Any

import typer

from cli.output import Format
from projections.export import Rows

DEFAULT_TABLE_ROWS = 100

# Past this a count is no count of rows; a larger --limit is read as it (past 2**63 the query
# layer could not hold it: an internal error, an outside review, session 39).
MAX_LIMIT = 10**15

LimitOpt = Annotated[int | None, typer.Option(
    "--limit", "-n", min=0, show_default=False,
    help=f"Show at most N rows; 0 for all. Default: {DEFAULT_TABLE_ROWS} in the table format, "
         f"every row in the others. Says 'N of M shown' when rows are left out.")]


def shown_rows(limit: int | None, for_people: bool) -> int:
    """How many rows to show (0: all): `limit` (at most MAX_LIMIT), else LimitOpt's default."""
    return min(limit, MAX_LIMIT) if limit is not None else (DEFAULT_TABLE_ROWS if for_people
                                                            else 0)


def limited(rows: list[dict[str, Any]], limit: int | None, fmt: Format,
            for_people: bool, what: str = "rows") -> list[dict[str, Any]]:
    """The first `limit` rows (see LimitOpt for the default), telling stderr what was left out."""
    n = shown_rows(limit, for_people)
    if not n or len(rows) <= n:
        return rows
    tell_shown(n, len(rows), what)
    return rows.head(n) if isinstance(rows, Rows) else rows[:n]


def tell_shown(n: int, total: int, what: str = "rows") -> None:
    """On stderr: n of the total are shown (a machine format on stdout stays exactly rows). One
    line, or the count and the hint on two when one would not fit the terminal (62 characters
    or more: it wrapped mid-word at 60 columns, an outside review)."""
    counted = f"{n:,} of {total:,} {what} shown"
    hint = "--limit N for more, --limit 0 for all"
    line = f"{counted}: {hint}"
    width = _stderr_width()
    typer.echo(line if width is None or len(line) <= width else f"{counted}\n{hint}", err=True)


def _stderr_width() -> int | None:
    """The width of the terminal stderr writes to: $COLUMNS when set (as for the tables,
    cli/output.py), else the terminal's; None when stderr is no terminal (one line for a log)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return shutil.get_terminal_size().columns if sys.stderr.isatty() else None

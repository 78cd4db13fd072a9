"""The table format's money and ratios, named by what they show (json, csv, parquet keep the
exact cents and numbers under their `_cents` and `_pct` names).

`handle_cents` 1367000 is shown as `handle` $13,670.00, `hold_pct` 8.9612 as `hold` 8.9612%, and
a theoretical amount (exact to the cent, a Decimal) as ~$607.60.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from projections.money import dollars


def shown_name(column: str) -> str:
    """What the table format calls a column: `handle_cents` -> `handle`, `hold_pct` -> `hold %`."""
    if column.endswith("_cents"):
        return column.removesuffix("_cents")
    if column.endswith("_pct"):
        return column.removesuffix("_pct") + " %"
    return column


def shown_value(column: str, value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if column.endswith("_cents"):
        # A theoretical amount (a Decimal) is shown to the nearest cent, marked as such.
        return ("~" if isinstance(value, Decimal) else "") + dollars(value)
    if column.endswith("_pct"):
        return f"{value}%"
    return value


def for_people(rows: Sequence[dict[str, Any]], columns: Sequence[str]
               ) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows and column names the table format shows."""
    shown = [{shown_name(c): shown_value(c, r.get(c)) for c in columns} for r in rows]
    return shown, [shown_name(c) for c in columns]

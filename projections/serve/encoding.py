"""JSON for the API and the alert stream: times ISO 8601 in the casino's zone, decimals as
strings (exact), fractions as "n/d", bytes as hex."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any

from projections.serve.state import ServeState


def encoder(tz: Any) -> Callable[[Any], Any]:
    def default(value: Any) -> Any:
        if isinstance(value, datetime):
            return value.astimezone(tz).isoformat() if value.tzinfo else value.isoformat()
        if isinstance(value, date):
            return value.isoformat()
        if isinstance(value, Decimal):
            return str(value)
        if isinstance(value, Fraction):
            return f"{value.numerator}/{value.denominator}"
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value).hex()
        if isinstance(value, set | frozenset | tuple):
            return list(value)
        raise TypeError(f"cannot encode {type(value).__name__}")
    return default


def to_json(state: ServeState, body: Any) -> str:
    return json.dumps(body, default=encoder(state.tz), allow_nan=False)

"""JSON for the API and the alert stream: times ISO 8601 in the casino's zone, decimals as
strings (exact), fractions as "n/d", bytes as hex."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import date, datetime, time
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
        if isinstance(value, time):  # a TIME inside a list or struct (/api/sql casts a column)
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
    """JSON has no NaN or infinity (a `pitlog sql` query can make them): such a float is sent
    as its text (discovery.NON_FINITE: `nan`, `inf`, `-inf`), its key named in FLOATS_HEADER
    (api.reply), so the CLI reads the float back; only a body that holds one is walked."""
    try:
        return json.dumps(body, default=encoder(state.tz), allow_nan=False)
    except ValueError:
        return json.dumps(_finite(body), default=encoder(state.tz), allow_nan=False)


def _finite(value: Any) -> Any:
    """`value` with every NaN or infinite float, however deep, made its text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value

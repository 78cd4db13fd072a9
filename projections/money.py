"""Money for people: integer cents as dollars, the one way pitlog shows an amount (the CLI's
table format, the console's pages, the report, the statistical anomalies' explanations).

Exact: no float ever holds an amount. A Decimal amount of cents (a theoretical win, exact to
fractions of a cent) is shown to the nearest cent, a half cent to the even one.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal


def dollars(cents: int | Decimal | None) -> str:
    """`-$1,234.50` from -123450 cents; '' for None."""
    if cents is None:
        return ""
    if isinstance(cents, Decimal):
        cents = int(cents.to_integral_value(ROUND_HALF_EVEN))
    sign = "-" if cents < 0 else ""
    whole, rest = divmod(abs(int(cents)), 100)
    return f"{sign}${whole:,}.{rest:02d}"

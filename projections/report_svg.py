"""Inline SVG charts for the HTML report: plain strings, no libraries, no scripts.

Each function returns one <svg> element sized by its viewBox, so the page scales it. Labels are
escaped; numbers are drawn from floats (these are pictures; the tables beside them carry the
exact values).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from html import escape

ACTUAL, THEO, INK, MUTED, GRID, BAD = "#2f6db5", "#9aa5b5", "#1d2430", "#5b6575", "#e3e7ee", \
    "#c0392b"
PALETTE = ("#2f6db5", "#c0392b", "#2e7d4f", "#b9770e", "#7d3c98", "#148f77", "#a04000",
           "#34495e", "#d35400", "#1f618d")


def nice_ticks(lo: float, hi: float, target: int = 6) -> list[float]:
    """Round tick values covering [lo, hi], at a step of 1, 2 or 5 times a power of ten."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / target
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    ticks, v = [], first
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 10))
        v += step
    if ticks[-1] < hi:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _fmt(v: float) -> str:
    return f"{v:g}"


def _svg(width: int, height: int, body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" aria-label="{escape(label)}">'
            + "".join(body) + "</svg>")


def hold_chart(items: Sequence[tuple[str, Decimal | None, Decimal | None, bool]]) -> str:
    """Horizontal bars per group: hold % (dark) above theoretical hold % (light)."""
    left, right, top, row = 170, 80, 34, 40
    width = 960
    plot = width - left - right
    values = [float(v) for _, h, t, _ in items for v in (h, t) if v is not None] + [0.0]
    ticks = nice_ticks(min(values), max(values))
    lo, hi = ticks[0], ticks[-1]
    height = top + row * len(items) + 26

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * plot

    body = []
    for t in ticks:
        body.append(f'<line x1="{x(t):.1f}" y1="{top - 6}" x2="{x(t):.1f}" '
                    f'y2="{height - 22}" stroke="{GRID}"/>')
        body.append(f'<text x="{x(t):.1f}" y="{top - 12}" font-size="11" fill="{MUTED}" '
                    f'text-anchor="middle">{_fmt(t)}%</text>')
    body.append(f'<line x1="{x(0):.1f}" y1="{top - 6}" x2="{x(0):.1f}" y2="{height - 22}" '
                f'stroke="{INK}" stroke-width="1.2"/>')
    for i, (name, hold, theo, flagged) in enumerate(items):
        y = top + i * row
        weight = ' font-weight="600"' if flagged else ""
        body.append(f'<text x="{left - 10}" y="{y + 19}" font-size="13" text-anchor="end" '
                    f'fill="{BAD if flagged else INK}"{weight}>{escape(name)}</text>')
        for value, color, dy, h in ((hold, ACTUAL, 4, 14), (theo, THEO, 20, 9)):
            if value is None:
                continue
            v = float(value)
            x0, x1 = sorted((x(0), x(v)))
            body.append(f'<rect x="{x0:.1f}" y="{y + dy}" width="{max(x1 - x0, 1):.1f}" '
                        f'height="{h}" fill="{color}" rx="1.5"/>')
            anchor, tx = ("start", x1 + 5) if v >= 0 else ("end", x0 - 5)
            if v < 0 and x0 - 50 < left:  # no room left of the bar: write it right of zero
                anchor, tx = "start", x(0) + 5
            body.append(f'<text x="{tx:.1f}" y="{y + dy + h - 2}" font-size="11" '
                        f'text-anchor="{anchor}" fill="{MUTED}">{v:.2f}%</text>')
    body.append(f'<text x="{left + plot / 2:.0f}" y="{height - 6}" font-size="11" '
                f'text-anchor="middle" fill="{MUTED}">hold, % of handle</text>')
    return _svg(width, height, body, "hold against theoretical hold")


def timeline_chart(points: Sequence[tuple[str, datetime, str]],
                   span: tuple[datetime, datetime]) -> str:
    """One row per anomaly code, a dot per anomaly at its local time, its tooltip naming its
    table and round (`place`); hourly grid."""
    counts: dict[str, int] = {}
    for code, _, _ in points:
        counts[code] = counts.get(code, 0) + 1
    codes = sorted(counts, key=lambda c: (-counts[c], c))
    start = span[0].replace(minute=0, second=0, microsecond=0)
    end = span[1].replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    times = [t for _, t, _ in points]
    start = min([start, *(t.replace(minute=0, second=0, microsecond=0) for t in times)])
    end = max([end, *(t.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
                      for t in times)])
    left, right, top, row, width = 250, 60, 16, 28, 960
    plot = width - left - right
    height = top + row * len(codes) + 34
    total = (end - start).total_seconds()

    def x(t: datetime) -> float:
        return left + (t - start).total_seconds() / total * plot

    hours = int(total // 3600)
    every = max(1, math.ceil(hours / 12))
    body = []
    for h in range(0, hours + 1):
        t = start + timedelta(hours=h)
        body.append(f'<line x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{height - 30}" '
                    f'stroke="{GRID}"/>')
        if h % every == 0:
            body.append(f'<text x="{x(t):.1f}" y="{height - 14}" font-size="11" '
                        f'text-anchor="middle" fill="{MUTED}">{t:%H:%M}</text>')
    for i, code in enumerate(codes):
        y = top + i * row + row / 2
        body.append(f'<text x="{left - 10}" y="{y + 4:.1f}" font-size="12" text-anchor="end">'
                    f'{escape(code)} ({counts[code]})</text>')
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" '
                    f'stroke="{GRID}" stroke-dasharray="2 3"/>')
    color = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(codes)}
    for code, t, place in points:
        y = top + codes.index(code) * row + row / 2
        body.append(f'<circle cx="{x(t):.1f}" cy="{y:.1f}" r="5" fill="{color[code]}" '
                    f'fill-opacity="0.7"><title>{escape(code)} at {t:%H:%M:%S}: '
                    f'{escape(place)}</title></circle>')
    return _svg(width, height, body, "anomalies over time")


def outcome_chart(items: Sequence[tuple[str, int, float]]) -> str:
    """Vertical bars per outcome: observed rounds (filled), expected (outlined)."""
    left, right, top, bottom, width, height = 60, 20, 16, 58, 960, 330
    plot_w, plot_h = width - left - right, height - top - bottom
    ticks = nice_ticks(0, max([1.0, *(max(o, e) for _, o, e in items)]))
    hi = ticks[-1]
    slot = plot_w / len(items)

    def y(v: float) -> float:
        return top + plot_h - v / hi * plot_h

    body = []
    for t in ticks:
        body.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{width - right}" y2="{y(t):.1f}" '
                    f'stroke="{GRID}"/>')
        body.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" font-size="11" text-anchor="end" '
                    f'fill="{MUTED}">{_fmt(t)}</text>')
    for i, (name, observed, expected) in enumerate(items):
        cx = left + slot * (i + 0.5)
        w = slot * 0.56
        body.append(f'<rect x="{cx - w / 2:.1f}" y="{y(observed):.1f}" width="{w:.1f}" '
                    f'height="{y(0) - y(observed):.1f}" fill="{ACTUAL}" fill-opacity="0.85">'
                    f'<title>{escape(name)}: {observed} observed</title></rect>')
        body.append(f'<rect x="{cx - w / 2 - 3:.1f}" y="{y(expected):.1f}" width="{w + 6:.1f}" '
                    f'height="{y(0) - y(expected):.1f}" fill="none" stroke="{INK}" '
                    f'stroke-width="1.5"><title>{escape(name)}: {expected:.2f} expected'
                    f'</title></rect>')
        short = name.replace("spread_", "").replace("pair_no_trips", "pair, no trips") \
            .replace("consecutive", "consec.")
        body.append(f'<text x="{cx:.1f}" y="{height - bottom + 16}" font-size="11" '
                    f'text-anchor="middle">{escape(short)}</text>')
    spreads = [i for i, (n, _, _) in enumerate(items) if n.startswith("spread_")]
    if spreads:
        x0 = left + slot * spreads[0] + 4
        x1 = left + slot * (spreads[-1] + 1) - 4
        yb = height - bottom + 26
        body.append(f'<path d="M{x0:.1f} {yb} V{yb + 5} H{x1:.1f} V{yb}" fill="none" '
                    f'stroke="{MUTED}"/>')
        body.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{yb + 19}" font-size="11" '
                    f'text-anchor="middle" fill="{MUTED}">spread</text>')
    body.append(f'<line x1="{left}" y1="{y(0):.1f}" x2="{width - right}" y2="{y(0):.1f}" '
                f'stroke="{INK}"/>')
    return _svg(width, height, body, "outcome frequencies against expectation")

"""The report's charts, drawn by matplotlib as inline SVG (no scripts, nothing fetched).

matplotlib places the ticks, scales and labels (the hand-written SVG and tick arithmetic this
replaces had to get each right by itself). Text stays text (svg.fonttype 'none'), so a chart is
small, searchable and prints sharp; ids are salted and the date left out, so the same data gives
the same SVG. Each function returns one <svg> element; the tables beside the charts carry the
exact values (these are pictures, drawn from floats).
"""

from __future__ import annotations

import html
import io
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

# matplotlib makes a settings folder and a font list when imported (~/.config/matplotlib and
# ~/.cache/matplotlib; where HOME cannot be written, a /tmp/matplotlib-* folder and two lines on
# stderr). `pitlog report` writes its --out file and no other (docs/operating.md), so unless the
# user chose a folder, matplotlib gets a private temporary one for its import, which loads the
# font list into memory, and the folder is removed as soon as that is done (not at exit, which
# a SIGTERM or a test worker's end skips); its log says nothing below an error (an outside
# review, session 37).
_PRIVATE = None if os.environ.get("MPLCONFIGDIR") else tempfile.mkdtemp(prefix="pitlog-report-mpl-")
if _PRIVATE is not None:
    os.environ["MPLCONFIGDIR"] = _PRIVATE
logging.getLogger("matplotlib").setLevel(logging.ERROR)
try:
    import matplotlib

    matplotlib.use("Agg")  # no display: SVG only

    import matplotlib.dates as mdates
    import matplotlib.font_manager  # noqa: F401  (the font list, read while the folder exists)
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator
finally:
    if _PRIVATE is not None:
        del os.environ["MPLCONFIGDIR"]  # a child process does not inherit a folder that is gone
        shutil.rmtree(_PRIVATE, ignore_errors=True)

from events.text import visible  # noqa: E402

ACTUAL, THEO, INK, MUTED, GRID, BAD = "#2f6db5", "#9aa5b5", "#1d2430", "#5b6575", "#e3e7ee", \
    "#c0392b"
STYLE: dict[str, Any] = {"svg.fonttype": "none", "svg.hashsalt": "pitlog-report", "font.size": 9,
         "font.family": "DejaVu Sans", "axes.edgecolor": MUTED, "axes.labelcolor": MUTED,
         "xtick.color": MUTED, "ytick.color": MUTED, "axes.spines.top": False,
         "axes.spines.right": False}
WIDTH = 10.0  # inches; the page scales the SVG to its column


def escape(text: str, quote: bool = True) -> str:
    """HTML-escaped (every label in the report), with control characters as visible escapes
    (events/text.py): device strings never reach a page raw."""
    return html.escape(visible(text), quote)


def _svg(fig: Figure, label: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    svg = text[text.index("<svg"):]
    return svg.replace("<svg ", f'<svg role="img" aria-label="{escape(label)}" ', 1)


def hold_chart(items: Sequence[tuple[str, Decimal | None, Decimal | None, bool]]) -> str:
    """Horizontal bars per group: hold % (dark) above theoretical hold % (light); the name of a
    group flagged HOLD_VARIANCE in red."""
    with plt.rc_context(STYLE):  # type: ignore[arg-type]
        fig, ax = plt.subplots(figsize=(WIDTH, 0.45 * len(items) + 0.8))
        names = [n for n, _, _, _ in items]
        ys = range(len(items))
        for offset, index, color, height in ((-0.18, 1, ACTUAL, 0.34), (0.2, 2, THEO, 0.24)):
            values = [float(str(it[index])) if it[index] is not None else 0.0 for it in items]
            bars = ax.barh([y + offset for y in ys], values, height=height, color=color)
            ax.bar_label(bars, labels=[f"{v:.2f}%" if it[index] is not None else ""
                                       for v, it in zip(values, items, strict=True)],
                         padding=3, fontsize=8, color=MUTED)
        ax.set_yticks(list(ys), labels=names)
        for label, (_, _, _, flagged) in zip(ax.get_yticklabels(), items, strict=True):
            if flagged:
                label.set_color(BAD)
                label.set_fontweight("bold")
        ax.invert_yaxis()  # the first group on top, as in the table
        ax.axvline(0, color=INK, linewidth=1)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=8))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}%"))
        ax.grid(axis="x", color=GRID)
        ax.set_axisbelow(True)
        ax.margins(x=0.12)
        ax.set_xlabel("hold, % of handle")
        return _svg(fig, "hold against theoretical hold")


def timeline_chart(points: Sequence[tuple[str, datetime, str, str]],
                   span: tuple[datetime, datetime]) -> str:
    """One row per anomaly code (most frequent on top), a dot per anomaly at its local time
    (code, local time, that time as shown with its zone, place), its tooltip naming the code,
    time, table and round."""
    counts: dict[str, int] = {}
    for code, *_ in points:
        counts[code] = counts.get(code, 0) + 1
    codes = sorted(counts, key=lambda c: (-counts[c], c))
    titles: list[str] = []
    with plt.rc_context(STYLE):  # type: ignore[arg-type]
        fig, ax = plt.subplots(figsize=(WIDTH, 0.32 * len(codes) + 0.9))
        palette = plt.get_cmap("tab10")
        for n, (code, t, when, place) in enumerate(points):
            i = codes.index(code)
            ax.scatter([mdates.date2num(t)], [i], s=28, alpha=0.7, color=palette(i % 10),
                       linewidths=0, gid=f"anomaly-dot-{n}")
            titles.append(f"{code} at {when}: {place}")
        ax.set_yticks(range(len(codes)), labels=[f"{c} ({counts[c]})" for c in codes])
        ax.set_ylim(len(codes) - 0.5, -0.5)  # the most frequent code on top
        start = min([span[0], *(t for _, t, *_ in points)])
        end = max([span[1], *(t for _, t, *_ in points)])
        ax.set_xlim(mdates.date2num(start - timedelta(minutes=5)),
                    mdates.date2num(end + timedelta(minutes=5)))
        tz = start.tzinfo
        ax.xaxis.set_major_locator(mdates.AutoDateLocator(tz=tz, maxticks=12))
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M", tz=tz))
        ax.grid(axis="x", color=GRID)
        ax.set_axisbelow(True)
        ax.set_xlabel("local time")
        svg = _svg(fig, "anomalies over time")
    for n, title in enumerate(titles):  # a tooltip on each dot's group
        token = f'<g id="anomaly-dot-{n}">'
        svg = svg.replace(token, f"{token}<title>{escape(title)}</title>", 1)
    return svg


def outcome_chart(items: Sequence[tuple[str, int, float]]) -> str:
    """Vertical bars per outcome: observed rounds (filled), expected (outlined)."""
    with plt.rc_context(STYLE):  # type: ignore[arg-type]
        fig, ax = plt.subplots(figsize=(WIDTH, 3.4))
        xs = range(len(items))
        ax.bar(xs, [o for _, o, _ in items], width=0.56, color=ACTUAL, alpha=0.85,
               label="observed")
        ax.bar(xs, [e for _, _, e in items], width=0.66, fill=False, edgecolor=INK,
               linewidth=1.3, label="expected")
        short = [n.replace("spread_", "").replace("pair_no_trips", "pair, no trips")
                 .replace("consecutive", "consec.") for n, _, _ in items]
        ax.set_xticks(list(xs), labels=short)
        spreads = [i for i, (n, _, _) in enumerate(items) if n.startswith("spread_")]
        if spreads:
            ax.annotate("spread", xy=((spreads[0] + spreads[-1]) / 2, 0),
                        xytext=(0, -30), textcoords="offset points", ha="center",
                        color=MUTED, annotation_clip=False)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
        ax.grid(axis="y", color=GRID)
        ax.set_axisbelow(True)
        ax.set_ylabel("rounds")
        return _svg(fig, "outcome frequencies against expectation")

"""Playing cards drawn as inline SVG: rank and suit in the corners, a large pip in the middle,
red for hearts and diamonds. A card can be shown face down (a burn) and marked (`cls`)."""

from __future__ import annotations

from events.reddog.rules import RANK_NAMES, RANK_WORDS
from projections.serve.templates.base import e

SUITS = {"S": ("♠", "spades"), "H": ("♥", "hearts"), "D": ("♦", "diamonds"),
         "C": ("♣", "clubs")}
# The face cards' labels in words (A: ace); a number card's label is read as it is.
RANKS = {label: RANK_WORDS[r].lower() for r, label in RANK_NAMES.items() if label != str(r)}


def card_name(label: str) -> str:
    rank, suit = label[:-1], label[-1:]
    return f"{RANKS.get(rank, rank)} of {SUITS.get(suit, ('', suit))[1]}"


def card_svg(label: str | None, *, size: str = "md", back: bool = False, cls: str = "",
             caption: str = "") -> str:
    """One card. `label` is as the views write it ('10H', 'AS'); `caption` goes beneath."""
    if not label:
        return ""
    rank, suit = label[:-1], label[-1:]
    pip, _ = SUITS.get(suit, ("?", suit))
    colour = "red" if suit in ("H", "D") else "black"
    if back:
        face = ('<rect x="5" y="5" width="40" height="60" rx="3" class="pattern"/>'
                f'<text x="25" y="41" class="backlabel">{e(label)}</text>')
    else:
        face = (f'<text x="5" y="15" class="corner">{e(rank)}</text>'
                f'<text x="5" y="26" class="corner-pip">{pip}</text>'
                f'<text x="25" y="50" class="pip">{pip}</text>'
                f'<text x="45" y="64" class="corner corner-r">{e(rank)}</text>')
    svg = (f'<svg viewBox="0 0 50 70" class="card {colour}{" back" if back else ""}" '
           f'role="img" aria-label="{e(card_name(label))}{" (face down)" if back else ""}">'
           f'<rect x="0.5" y="0.5" width="49" height="69" rx="4" class="face"/>{face}</svg>')
    cap = f'<figcaption>{caption}</figcaption>' if caption else ""
    return (f'<figure class="cardbox {e(size)} {e(cls)}" data-card="{e(label)}">'
            f'{svg}{cap}</figure>')

"""Device strings made safe to show: every control character becomes a visible escape.

A device line may carry any string (a dealer terminal's announcement phrase, a shoe id). Shown
raw, an ESC sequence recolours a terminal or sets its title, a carriage return overwrites what
was printed, and bidirectional overrides reorder text (CVE-2021-42574). Every printer (the CLI's
table, csv and error lines, the HTML report) passes strings through `visible`; JSON output
escapes them (`json_safe`). The stored value is never changed.
"""

from __future__ import annotations

import re

# C0, DEL and C1 (category Cc), and the Unicode bidirectional embeddings, overrides and isolates.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with each control or bidi-control character as `\\x1b` / `\\u202e`, so it prints
    as what it is. Printable text, including non-ASCII letters, is unchanged."""
    return UNSAFE.sub(_escape, text)


# What a JSON writer may leave raw inside a string: it must escape C0 there, and C0 outside
# strings is only the structural whitespace (tab, newline, carriage return).
_RAW_IN_JSON = re.compile(f"[\x7f-\x9f{_BIDI}]")


def json_safe(text: str) -> str:
    """JSON text with DEL, C1 and bidi-control characters as `\\u` escapes: they can only stand
    inside a JSON string, where the escape means the same value."""
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)

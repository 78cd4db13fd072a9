"""The repository's folders, for a test module in any folder below tests/ (this module stays in
tests/, which pytest puts on sys.path for conftest.py)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
EXAMPLES = REPO / "examples"
TOOLS = REPO / "tools"

"""Defaults the command line shows in its help, importable without DuckDB or Arrow.

`pitlog --help` builds every command's options, so their defaults must come from a module this
light (issue 19: the help must start in the time of importing DuckDB, not of importing pyarrow).
"""

from __future__ import annotations

DEFAULT_SIGMA = 3.29  # |z| beyond it: 1 in 1,000 by chance; the HOLD_VARIANCE anomaly's too

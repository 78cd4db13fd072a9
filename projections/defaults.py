"""Defaults the command line shows in its help, importable without DuckDB or Arrow.

`pitlog --help` builds every command's options, so their defaults must come from a module this
light (issue 19: the help must start in the time of importing DuckDB, not of importing pyarrow).
"""

from __future__ import annotations

DEFAULT_SIGMA = 3.29  # |z| beyond it: 1 in 1,000 by chance; the HOLD_VARIANCE anomaly's too

# The storage format new database files are written in. DuckDB 2.0 writes storage version 69 by
# default, which the newest 1.5 clients (duckdb and duckdb-cli 1.5.6 on PyPI) refuse; files
# written as 'v1.4.0' open in DuckDB 1.4.0 and later, views included (README, "Opening the
# database elsewhere"; tests/projections/test_storage_compat.py opens one with duckdb 1.5.6). It
# applies when a file is created: a file made earlier keeps the version it was written in.
STORAGE_VERSION = "v1.4.0"

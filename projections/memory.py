"""DuckDB's memory limit: the amounts pitlog gives it, and lowering it for one block.

Imports only DuckDB, so a query command (projections/reconcile.py) can bound its query without
importing the projector's codec (issue 19 item 4: a command imports only what it needs).
"""

from __future__ import annotations

import os
import re
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from events.errors import ProjectionError

if TYPE_CHECKING:  # only for annotations: projections.export imports this module, and
    import duckdb  # `pitlog --help` must not import DuckDB

# DuckDB's default is 80% of the machine's memory, and its buffer pool keeps the blocks it has
# read or written cached up to its limit: a projector's resident memory would grow with the log.
# A read-write connection gets DEFAULT_MEMORY_LIMIT, and while loading batches only
# LOAD_MEMORY_LIMIT: appending needs the row group being written, not the cache. Storing the
# anomaly rows evaluates the rules a table group of at most 1M events at a time
# (anomalies.GROUP_EVENTS), which needs no more at 10M events than at 1M: under 512MB its peak
# RSS was 509 MB at 1M and 649 MB at 10M, and under 1GB the cache took it to 1,112 MB at 10M
# (benchmarks/README.md, Memory).
DEFAULT_MEMORY_LIMIT = "512MB"
# What to do when a query ran out of it (DuckDB spills most of a query to disk, not all).
MORE_MEMORY = "give DuckDB more memory (pitlog project --memory-limit 1GB, or PITLOG_MEMORY_LIMIT)"
LOAD_MEMORY_LIMIT = "128MB"
# A read-only connection writes no file (read-only means no file, network or environment access):
# DuckDB's default temp_directory would offload what exceeds the memory limit to
# `<database>.tmp` (and leave the folder behind). '' turns offloading off (checked on DuckDB
# 2.0: a query over the limit then raises OutOfMemoryException and writes nothing).
NO_SPILL: dict[str, str] = {"temp_directory": ""}
# What to do when a read-only command's query ran out of memory: it cannot spill, so only more
# memory helps. PITLOG_MEMORY_LIMIT sets a reader's limit too (reader_config).
MORE_READER_MEMORY = ("give DuckDB more memory (PITLOG_MEMORY_LIMIT=4GB, for example); a "
                      "read-only command never spills to disk")
_LIMITS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, str] = weakref.WeakKeyDictionary()
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_MEMORY = re.compile(r"(\d+(?:\.\d+)?)\s*(" + "|".join(_UNITS) + ")", re.IGNORECASE)


def chosen_limit(memory_limit: str | None, default: str | None) -> str | None:
    """The memory limit to give DuckDB: `memory_limit` (an option), else PITLOG_MEMORY_LIMIT,
    else `default`. ProjectionError when it is not an amount."""
    limit = memory_limit or os.environ.get("PITLOG_MEMORY_LIMIT") or default
    if limit is not None and not _MEMORY.fullmatch(limit):
        raise ProjectionError(f"memory limit {limit!r} (--memory-limit or PITLOG_MEMORY_LIMIT) "
                              f"is not an amount: write it like 1GB or 512MB")
    return limit


def reader_config() -> dict[str, str | bool | int | float | list[str]]:
    """The DuckDB settings of a read-only connection: no spilling (NO_SPILL), and
    PITLOG_MEMORY_LIMIT when set (else DuckDB's default, 80% of the machine)."""
    limit = chosen_limit(None, None)
    config: dict[str, str | bool | int | float | list[str]] = dict(NO_SPILL)
    if limit:
        config["memory_limit"] = limit
    return config


def memory_bytes(amount: str) -> float:
    """'1GB', '953.6 MiB' (DuckDB's own spelling) -> bytes."""
    m = _MEMORY.fullmatch(amount.strip())
    if m is None:
        raise ProjectionError(f"cannot read the memory amount {amount!r}")
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


@contextmanager
def memory_limit_at_most(con: duckdb.DuckDBPyConnection, amount: str) -> Iterator[None]:
    """Lower DuckDB's memory_limit to `amount` for the block (never raise it), then restore.
    DuckDB reports its setting rounded ('244.1 MiB'), so the amount open_store set is restored
    when known."""
    ((shown,),) = con.execute("SELECT current_setting('memory_limit')").fetchall()
    current = _LIMITS.get(con, shown)
    if memory_bytes(amount) >= memory_bytes(current):
        yield
        return
    con.execute(f"SET memory_limit = '{amount}'").fetchall()
    try:
        yield
    finally:
        con.execute(f"SET memory_limit = '{current}'").fetchall()


@contextmanager
def threads_at_most(con: duckdb.DuckDBPyConnection, threads: int) -> Iterator[None]:
    """Lower DuckDB's worker threads to `threads` for the block (never raise them), then
    restore: each thread keeps its own share of a query's state, and what does not spill (list
    and ordered aggregates) then needs that much more memory under a limit."""
    ((current,),) = con.execute("SELECT current_setting('threads')").fetchall()
    if threads >= int(current):
        yield
        return
    con.execute(f"SET threads = {int(threads)}").fetchall()
    try:
        yield
    finally:
        con.execute(f"SET threads = {int(current)}").fetchall()

"""Checks of what the projector reads (issue 14): is the log still the one the checkpoints
describe, and does each event's bytes match its own hash.

Both are the projector's (projections/projector.py calls them before and while loading); they
live here to keep the loader small.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa

from events.errors import LogError, ProjectionError
from events.log.base import EventLog, LogRecord, record_digest
from events.wire.chain import verify_each


def hash_ok(batch: list[LogRecord], rows: np.ndarray, table: pa.Table) -> list[bool]:
    """Per decoded row: do its bytes match its own hash, SHA-256(prev_hash || the message
    before the hash) (events/wire/chain.py)? False is an event altered in place after it was sealed:
    CHAIN_BROKEN in the views (sql/anomalies_streams.sql) without running `verify`. The
    link to the previous event is the views' to check, over the stored rows, so no chain state
    lives in this process and a restart cannot lose it. One hashlib call per event: SHA-256
    does not vectorise: ~1.2 s of 200k events' ~15 s load here (benchmarks/README.md)."""
    return verify_each(table.column("prev_hash").to_pylist(),
                       [batch[i].value for i in rows.tolist()])


def check_log_holds(con: duckdb.DuckDBPyConnection, log: EventLog) -> None:
    """Refuse a log that is not the one this database was projected from (issue 14): its id
    must be the checkpoints' (when both have one), and every partition must still hold, at the
    checkpoint's last offset, the record with the same SHA-256. Reads one record per partition,
    whatever the history. A log restored from a backup and appended to, or made anew at the
    same address, fails here, before anything is inserted."""
    rows = con.execute(
        "SELECT log_partition, next_offset, log_id, last_offset, last_digest FROM checkpoints "
        "WHERE source = ? ORDER BY 1", [log.uri]).fetchall()
    if not rows:
        return
    fix = ("rebuild into a new database file (pitlog project --db NEW.duckdb), and keep the "
           "old one to find out what changed")
    ids = {r[2] for r in rows if r[2] is not None}
    if log.log_id is not None and ids and log.log_id not in ids:
        raise ProjectionError(
            f"{log.uri} is not the log this database was projected from: its log id is "
            f"{log.log_id}, the checkpoints' {sorted(ids)[0]} (it was made anew at this "
            f"address); {fix}")
    ends = log.end_offsets()
    for partition, next_offset, _, last_offset, digest in rows:
        end = ends.get(partition)
        if end is not None and end < next_offset:
            raise ProjectionError(
                f"{log.uri} partition {partition} ends at offset {end}, but this database "
                f"projected it up to {next_offset}: the log was replaced, truncated or "
                f"restored from an older backup; {fix}")
        if digest is None or end is None:  # a checkpoint from before digests: nothing to compare
            continue
        try:
            rec = log.record_at(partition, last_offset)
        except LogError as exc:
            raise ProjectionError(f"{log.uri} partition {partition}: cannot read the record at "
                                  f"the checkpoint (offset {last_offset}): {exc}") from exc
        if rec is None or record_digest(rec) != digest:
            what = "no longer holds" if rec is None else "holds another record than"
            raise ProjectionError(
                f"{log.uri} partition {partition} {what} the one projected at offset "
                f"{last_offset}: the log was replaced, rewritten or restored from a backup "
                f"since this database was built from it, and projecting on would mix two "
                f"logs; {fix}")

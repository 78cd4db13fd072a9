"""The floor the issue names, and the projector's previous per-message decode, for comparison.

The floor: bare fastavro, one `schemaless_reader` call per message (the writer schema looked
up by fingerprint, no validation, no upcasting, no error handling), the dicts turned into one
Arrow table per batch, one INSERT per batch into the same `events` table, one transaction per
batch. No checkpoints, no quarantine, no views: what any per-message Avro-to-DuckDB loader pays.
"""

from __future__ import annotations

import io
from pathlib import Path

import duckdb
import fastavro
import pyarrow as pa

from events.errors import DecodeError
from events.log.base import EventLog, LogRecord
from events.wire import codec
from projections import projector, store


def floor_projection(log: EventLog, db: Path, batch_size: int) -> int:
    reg = codec.registry()
    schemas = {sv.fingerprint: (sv.event_type, sv.raw_parsed) for sv in reg.by_fingerprint.values()}
    schema = store.arrow_schema(store.event_columns())
    read = fastavro.schemaless_reader
    n = 0
    with duckdb.connect(str(db)) as con:
        store.ensure_schema(con)
        for batch in log.read(max_batch=batch_size):
            rows = []
            for rec in batch:
                value = rec.value
                event_type, writer = schemas[value[2:10]]
                buf = io.BytesIO(value)
                buf.seek(codec.HEADER_LEN)
                row = read(buf, writer, None)
                row["log_partition"] = rec.partition
                row["log_offset"] = rec.offset
                row["event_type"] = event_type
                rows.append(row)
            con.register("floor_batch", pa.Table.from_pylist(rows, schema=schema))
            con.begin()
            con.execute("INSERT INTO events BY NAME SELECT * FROM floor_batch")
            con.commit()
            con.unregister("floor_batch")
            n += len(rows)
    return n


def per_message_decode(self: projector._BatchLoader, batch: list[LogRecord],
                       ) -> tuple[pa.Table, list[tuple[LogRecord, str]]]:
    """The projector's decode before events/wire/batch_decode.py: decode_raw, one dict a message."""
    decode_raw, reg = codec.decode_raw, self.reg
    rows: list[dict[str, object]] = []
    bad: list[tuple[LogRecord, str]] = []
    for rec in batch:
        try:
            event_type, row = decode_raw(rec.value, reg)
        except DecodeError as exc:
            bad.append((rec, str(exc)))
            continue
        row["log_partition"] = rec.partition
        row["log_offset"] = rec.offset
        row["event_type"] = event_type
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=self.schema), bad


def use_per_message_decode() -> None:
    """Make this process's projector decode as it did before (benchmark variant only)."""
    projector._BatchLoader.decode = per_message_decode  # type: ignore[method-assign]

"""Ways to decode a batch of messages, compared on the same messages in one process.

Each idea turns batches of log values into the projector's Arrow table (or, where it yields
dicts, dicts plus `pa.Table.from_pylist`, which is then timed too). Rounds alternate the order
of the ideas; reported are the median µs per message over the rounds, CPU time (this machine is
shared: CPU time is what the idea costs, wall time is what the load around it allowed) and,
for the multi-process idea, wall time (its CPU is spent in other processes).
"""

from __future__ import annotations

import io
import json
import os
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import fastavro
import pyarrow as pa

from events.log.base import EventLog
from events.wire import codec
from events.wire.batch_decode import BatchDecoder
from projections import store

Batch = list[bytes]
_SCHEMA = pa.schema([f for f in store.arrow_schema(store.event_columns())
                     if f.name not in ("log_partition", "log_offset")])
_NONCE = os.urandom(16)


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class Ideas:
    def __init__(self) -> None:
        self.reg = codec.registry()
        self.writers = {sv.fingerprint: sv for sv in self.reg.by_fingerprint.values()}
        self.decoder = BatchDecoder(self.reg, _SCHEMA)
        self.arrays: dict[bytes, tuple[Any, Any]] = {}

    def fastavro_per_message(self, batch: Batch) -> list[dict[str, Any]]:
        read, out = fastavro.schemaless_reader, []
        for v in batch:
            buf = io.BytesIO(v)
            buf.seek(codec.HEADER_LEN)
            out.append(read(buf, self.writers[v[2:10]].raw_parsed, None))
        return out

    def decode_raw_per_message(self, batch: Batch) -> list[dict[str, Any]]:
        return [codec.decode_raw(v, self.reg)[1] for v in batch]

    def _array_schema(self, fp: bytes) -> tuple[Any, Any]:
        """The writer's record as the items of an Avro array, each item framed by the
        message's own 10-byte header in front and a 16-byte nonce behind (a misaligned read
        shows as a wrong nonce)."""
        if fp not in self.arrays:
            sv = self.writers[fp]
            latest = self.reg.latest[sv.event_type]

            def wrap(v: codec.SchemaVersion) -> Any:
                raw = codec._strip_logical_types(json.loads(v.path.read_text()))
                raw["fields"] = [
                    {"name": "_hdr", "type": {"type": "fixed", "name": "Hdr", "size": 10}},
                    *raw["fields"],
                    {"name": "_nonce", "type": {"type": "fixed", "name": "Nonce", "size": 16}}]
                return fastavro.parse_schema({"type": "array", "items": raw})

            self.arrays[fp] = (wrap(sv), None if latest is sv else wrap(latest))
        return self.arrays[fp]

    def fastavro_array_per_schema(self, batch: Batch) -> list[dict[str, Any]]:
        """Idea (a): one schemaless_reader call per writer schema and batch."""
        groups: dict[bytes, list[int]] = {}
        for i, v in enumerate(batch):
            groups.setdefault(v[2:10], []).append(i)
        out: list[Any] = [None] * len(batch)
        for fp, idx in groups.items():
            writer, reader = self._array_schema(fp)
            data = _zigzag(len(idx)) + _NONCE.join([batch[i] for i in idx]) + _NONCE + b"\0"
            for i, row in zip(idx, fastavro.schemaless_reader(io.BytesIO(data), writer, reader),
                              strict=True):
                if row.pop("_nonce") != _NONCE:
                    raise ValueError("misaligned")
                del row["_hdr"]
                out[i] = row
        return out

    def fastavro_container_per_schema(self, batch: Batch) -> list[dict[str, Any]]:
        """Idea (b): an in-memory object container file (header + one block of the bodies)
        per writer schema and batch, read by fastavro.reader (compiled block reading)."""
        groups: dict[bytes, list[int]] = {}
        for i, v in enumerate(batch):
            groups.setdefault(v[2:10], []).append(i)
        out: list[Any] = [None] * len(batch)
        for fp, idx in groups.items():
            sv = self.writers[fp]
            latest = self.reg.latest[sv.event_type]
            head = io.BytesIO()
            fastavro.writer(head, sv.raw_parsed, [], sync_marker=_NONCE)
            body = b"".join([memoryview(batch[i])[codec.HEADER_LEN:] for i in idx])
            block = head.getvalue() + _zigzag(len(idx)) + _zigzag(len(body)) + body + _NONCE
            rows = fastavro.reader(io.BytesIO(block),
                                   None if latest is sv else latest.raw_parsed)
            for i, row in zip(idx, rows, strict=True):
                out[i] = row
        return out

    def batch_decode(self, batch: Batch) -> pa.Table:
        """Idea (c): events/wire/batch_decode.py, field by field across the batch, into Arrow."""
        return self.decoder.decode(batch).table


def _to_arrow(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=_SCHEMA)


_WORKER: Ideas | None = None


def _worker_decode(batch: Batch) -> pa.Table:
    global _WORKER
    if _WORKER is None:
        _WORKER = Ideas()
    return _WORKER.decoder.decode(batch).table


def batches(log: EventLog, messages: int, batch_size: int) -> list[Batch]:
    out: list[Batch] = []
    n = 0
    for batch in log.read(max_batch=batch_size):
        out.append([r.value for r in batch])
        n += len(batch)
        if n >= messages:
            break
    return out


def compare(log: EventLog, messages: int, batch_size: int, rounds: int = 3) -> dict[str, Any]:
    data = batches(log, messages, batch_size)
    n = sum(map(len, data))
    ideas = Ideas()
    runs: dict[str, Callable[[Batch], Any]] = {
        "fastavro_per_message (floor decode)": ideas.fastavro_per_message,
        "fastavro_per_message + from_pylist": lambda b: _to_arrow(ideas.fastavro_per_message(b)),
        "decode_raw_per_message + from_pylist (projector before)":
            lambda b: _to_arrow(ideas.decode_raw_per_message(b)),
        "(a) fastavro array per schema": ideas.fastavro_array_per_schema,
        "(a) fastavro array per schema + from_pylist":
            lambda b: _to_arrow(ideas.fastavro_array_per_schema(b)),
        "(b) fastavro container block per schema": ideas.fastavro_container_per_schema,
        "(c) batch_decode to Arrow": ideas.batch_decode,
    }
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    wall: dict[str, list[float]] = {k: [] for k in runs}
    names = list(runs)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            w, c = time.perf_counter(), time.process_time()
            for batch in data:
                runs[name](batch)
            cpu[name].append((time.process_time() - c) / n * 1e6)
            wall[name].append((time.perf_counter() - w) / n * 1e6)
    pool_name = "(d) batch_decode in 2 worker processes"
    wall[pool_name], cpu[pool_name] = [], []
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_worker_decode, data[:4]))  # warm: imports and plans, not timed
        for _ in range(rounds):
            w = time.perf_counter()
            for _table in pool.map(_worker_decode, data):
                pass
            wall[pool_name].append((time.perf_counter() - w) / n * 1e6)
    return {"messages": n, "batch_size": batch_size, "rounds": rounds,
            "us_per_message_cpu": {k: statistics.median(v) for k, v in cpu.items() if v},
            "us_per_message_wall": {k: statistics.median(v) for k, v in wall.items()}}

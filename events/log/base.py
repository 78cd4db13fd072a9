"""The event log contract, shared by the embedded log and Kafka.

A log is a set of partitions; each partition is an append-only sequence of (key, value) records
at gapless offsets from 0. The key is the table id, so every table's events stay in one
partition, in order. Values are the codec's exact bytes. Only the backends know their storage.
"""

from __future__ import annotations

import hashlib
import os
import struct
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from events.errors import LogError

DEFAULT_DATA_DIR = Path("pitlog-data")


@dataclass(frozen=True, slots=True)
class LogRecord:
    partition: int
    offset: int
    key: bytes
    value: bytes


def record_digest(rec: LogRecord) -> bytes:
    """SHA-256 of a record's key and value: what a checkpoint remembers of the last record it
    covers, for any record (a quarantined one has no chain hash of its own)."""
    h = hashlib.sha256(struct.pack("<I", len(rec.key)))
    h.update(rec.key)
    h.update(rec.value)
    return h.digest()


class EventLog(ABC):
    """Append-only, partitioned by key, ordered per partition."""

    uri: str
    # A name written once when the log is created (the embedded log's meta.json), so a reader
    # can tell another log at the same address; None where the backend has none (Kafka).
    log_id: str | None = None

    @abstractmethod
    def append(self, items: Sequence[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        """Append (key, value) pairs in order; return each one's (partition, offset).

        Durable once it returns: fsynced (embedded) or acknowledged by all in-sync replicas
        (Kafka). A failure raises LogError and nothing after the failed record is appended."""

    @abstractmethod
    def end_offsets(self) -> dict[int, int]:
        """Next offset to be written, per partition (the log's current end)."""

    @abstractmethod
    def read(self, start: Mapping[int, int] | None = None, *,
             max_batch: int = 5000) -> Iterator[list[LogRecord]]:
        """Batches of records from `start` (partition -> first offset, default 0) up to the end
        as it was when reading began. Each batch holds records of one partition, in order."""

    def record_at(self, partition: int, offset: int) -> LogRecord | None:
        """The record at (partition, offset), or None when the log holds none there. Reads
        that record only (the projector checks its checkpoints with it on every run)."""
        ends = self.end_offsets()
        if partition not in ends or not 0 <= offset < ends[partition]:
            return None
        with closing(self.read({**ends, partition: offset}, max_batch=1)) as batches:
            for batch in batches:
                for rec in batch:
                    # A reader that hands over earlier records too (at least once) is
                    # followed up to the offset; its first record is the one for a true one.
                    if rec.partition == partition and rec.offset >= offset:
                        return rec if rec.offset == offset else None
        return None

    def close(self) -> None:  # noqa: B027 - optional for backends with nothing to release
        """Release files, sockets and locks."""

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def default_log_uri(data_dir: Path = DEFAULT_DATA_DIR) -> str:
    return os.environ.get("PITLOG_LOG") or f"file://{(data_dir / 'log').resolve()}"


def open_log(uri: str | None = None, *, partitions: int | None = None,
             create: bool = True) -> EventLog:
    """`file:///path` or a bare path: the embedded log; `kafka://host:port/topic`: Kafka.

    `create=False` (readers: project, verify): a missing log folder or Kafka topic is a
    LogError naming it, never an empty log made on the spot."""
    uri = uri or default_log_uri()
    if uri.startswith("kafka://"):
        from events.log.kafka.log import KafkaLog  # imported lazily: only this backend knows Kafka

        _check_kafka_address(uri)
        return KafkaLog.from_uri(uri, partitions=partitions, create=create)
    if "://" in uri and not uri.startswith("file://"):
        raise LogError(f"unknown log address {uri!r}: use file:///path/to/log or kafka://host:port/topic")
    from events.log.embedded.log import EmbeddedLog

    folder = Path(uri.removeprefix("file://"))
    if folder.exists() and not folder.is_dir():
        raise LogError(f"--log {folder} is a file, not an event log folder: give the folder "
                       f"of an embedded log (e.g. pitlog-data/log) or kafka://HOST:PORT/TOPIC")
    if not create and not (folder / "meta.json").is_file():
        raise LogError(f"no event log at {folder} (no such folder, or no meta.json in it): "
                       f"check --log / PITLOG_LOG; `pitlog simulate` or `pitlog ingest` "
                       f"creates a log")
    return EmbeddedLog(folder, partitions=partitions, create=create)


def _check_kafka_address(uri: str) -> None:
    """Every HOST:PORT of a kafka:// address has a port number, before any client starts."""
    netloc = uri.removeprefix("kafka://").split("/", 1)[0]
    for server in filter(None, netloc.split(",")):
        host, sep, port = server.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise LogError(f"bad Kafka address {uri!r}: {server!r} is not HOST:PORT with a port "
                           f"from 1 to 65535; write kafka://HOST:PORT/TOPIC, e.g. "
                           f"kafka://127.0.0.1:9092/pitlog.reddog.events")

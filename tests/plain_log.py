"""A log that keeps no table heads of its own: another log's records behind the plain EventLog
interface (not ConditionalAppend), as a Kafka topic without fencing is. Its writers' heads come
from reading records; `records_read` counts the records its reads handed over."""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence

from events.log.base import EventLog, LogRecord


class PlainLog(EventLog):
    def __init__(self, inner: EventLog) -> None:
        self.inner, self.uri, self.log_id = inner, inner.uri, inner.log_id
        self.records_read = 0

    def append(self, items: Sequence[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        return self.inner.append(items)

    def end_offsets(self) -> dict[int, int]:
        return self.inner.end_offsets()

    def read(self, start: Mapping[int, int] | None = None, *,
             max_batch: int = 5000) -> Generator[list[LogRecord], None, None]:
        for batch in self.inner.read(start, max_batch=max_batch):
            self.records_read += len(batch)
            yield batch

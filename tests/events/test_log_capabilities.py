"""What a log can do beyond the contract is a type (events/log/base.py), never a probe.

Every capability type a backend claims must work on a real instance of it, and no reader
finds a capability with getattr/hasattr: verify checks an index only on an `IndexedLog`, and
the event id index lives beside a `LocalFolder` log; every other log gets neither.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from repo_paths import REPO

from events.integrity.verify import verify_log
from events.log.base import (
    ConditionalAppend,
    EventLog,
    FramedRead,
    IndexedLog,
    LocalFolder,
    LogRecord,
)
from events.log.embedded.log import EmbeddedLog
from events.log.registry import BACKENDS, backend, open_log
from events.recording.event_ids import index_path

CAPABILITIES = (ConditionalAppend, FramedRead, IndexedLog, LocalFolder)


@pytest.fixture(params=["embedded", "kafka", "kafka-fenced"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, EventLog]]:
    """A fresh log of each backend (and Kafka's fenced kind), opened by its address."""
    if request.param == "embedded":
        uri = f"file://{tmp_path / 'log'}"
    else:
        request.applymarker(pytest.mark.kafka)
        uri = request.getfixturevalue("kafka_uri")
        if request.param == "kafka-fenced":
            uri += "?fencing=true"
    log = open_log(uri, partitions=2)
    try:
        yield request.param, log
    finally:
        log.close()


@pytest.mark.parametrize("scheme", sorted(BACKENDS))
def test_every_registered_backend_implements_each_capability_it_claims(scheme: str) -> None:
    cls = backend(scheme)
    assert not cls.__abstractmethods__, f"{cls.__name__} leaves {cls.__abstractmethods__}"


def test_a_log_that_claims_a_capability_must_define_it() -> None:
    class Careless(IndexedLog):  # the plain contract, but no check_index
        uri = "careless://"

        def append(self, items: Sequence[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
            return []

        def end_offsets(self) -> dict[int, int]:
            return {}

        def read(self, start: Mapping[int, int] | None = None, *,
                 max_batch: int = 5000) -> Iterator[list[LogRecord]]:
            yield from ()

    with pytest.raises(TypeError, match="check_index"):
        Careless()  # type: ignore[abstract]


def test_each_capability_a_log_claims_works_on_it(opened: tuple[str, EventLog]) -> None:
    kind, log = opened
    claimed = {c.__name__ for c in CAPABILITIES if isinstance(log, c)}
    if isinstance(log, LocalFolder):
        assert isinstance(log.folder, Path) and (log.folder / "meta.json").is_file()
        assert index_path(log) == log.folder / "event-ids.sqlite"
    else:  # a log with no folder here keeps its event id index in the data folder
        assert index_path(log).name.startswith("kafka-")
    if isinstance(log, IndexedLog):
        assert log.check_index() == []  # a fresh log's index agrees with its records
    if isinstance(log, ConditionalAppend):
        assert log.last_values() == {}
        log.append_expecting([(b"T01", b"first")], {b"T01": None})
        assert log.last_values() == {b"T01": b"first"}
    else:
        log.append([(b"T01", b"first")])
    assert verify_log(log).records == 1  # verify reads every kind, through its types
    # Which backend has which capability is part of the contract: changing it is a decision.
    assert claimed == {
        "embedded": {"ConditionalAppend", "FramedRead", "IndexedLog", "LocalFolder"},
        "kafka": set(),
        "kafka-fenced": {"ConditionalAppend"},
    }[kind]


def test_verify_checks_the_index_of_an_indexed_log(tmp_path: Path) -> None:
    """Through the IndexedLog type: a deleted .idx is found and reported (docs/integrity.md)."""
    with EmbeddedLog(tmp_path / "log", partitions=1) as log:
        log.append([(b"T01", b"a"), (b"T01", b"b")])
    (tmp_path / "log" / "p0000.idx").unlink()
    with EmbeddedLog(tmp_path / "log", create=False) as log:
        kinds = [a.kind for a in verify_log(log).anomalies]
    assert "index" in kinds


# getattr(log, ...), hasattr(self.log, ...), getattr(inner_log, ...): a capability probed by name.
PROBE = re.compile(r"\b(?:getattr|hasattr)\(\s*(?:self\.)?(?:\w+_)?log\b")


def test_no_reader_probes_a_log_for_a_capability() -> None:
    probes = [f"{path.relative_to(REPO)}:{n}: {line.strip()}"
              for package in ("events", "projections", "cli")
              for path in sorted((REPO / package).rglob("*.py"))
              for n, line in enumerate(path.read_text().splitlines(), 1)
              if PROBE.search(line)]
    assert probes == []

"""`verify_log` reads the embedded log as batches of bytes (FramedRead, numpy envelopes, issue 19)
and any other log a record at a time: on the same bytes, however damaged, both must give the
same report, finding for finding. The record path is the reference (it is the one Kafka takes
and the one every verify test before issue 19 pinned down)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from table_builder import record_events

from events.integrity.verify import VerifyReport, verify_log
from events.log.base import FramedRead, IndexedLog, LogRecord
from events.log.embedded.log import EmbeddedLog


class RecordsOnly(IndexedLog):
    """The embedded log through the plain contract and its index check only (not FramedRead):
    verify's record-at-a-time path."""

    def __init__(self, log: EmbeddedLog) -> None:
        self.log, self.uri = log, log.uri

    def append(self, items: Sequence[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        raise AssertionError("verify never appends")

    def end_offsets(self) -> dict[int, int]:
        return self.log.end_offsets()

    def read(self, start: Mapping[int, int] | None = None, *,
             max_batch: int = 5000) -> Iterator[list[LogRecord]]:
        return self.log.read(start, max_batch=max_batch)

    def check_index(self) -> list[tuple[int, int, str]]:
        return self.log.check_index()


def as_data(report: VerifyReport) -> tuple[object, ...]:
    return (report.records, report.anomalies_total, report.anomalies,
            [t.as_row() for t in report.tables])


def both(folder: Path, max_batch: int) -> tuple[tuple[object, ...], tuple[object, ...]]:
    framed = EmbeddedLog(folder, create=False)
    assert isinstance(framed, FramedRead)
    fast = verify_log(framed, max_batch=max_batch)
    reference = verify_log(RecordsOnly(EmbeddedLog(folder, create=False)), max_batch=max_batch)
    return as_data(fast), as_data(reference)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("frames") / "log"
    log = EmbeddedLog(folder, partitions=2)
    record_events(log, {"T01": 25, "T02": 25, "T03": 20, "T04": 10})
    return folder


def test_an_intact_log_reads_the_same_both_ways(pristine: Path) -> None:
    fast, reference = both(pristine, max_batch=7)
    assert fast == reference
    assert fast[0] == 80 and fast[1] == 0  # every record checked, nothing found


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), max_batch=st.sampled_from([1, 4, 9, 5000]))
def test_damaged_bytes_give_the_same_findings_both_ways(
        pristine: Path, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject,
        max_batch: int) -> None:
    folder = tmp_path_factory.mktemp("damaged") / "log"
    shutil.copytree(pristine, folder)
    segments = sorted(folder.glob("p*.seg"))
    for _ in range(data.draw(st.integers(1, 4))):
        seg = data.draw(st.sampled_from(segments))
        raw = bytearray(seg.read_bytes())
        if not raw:
            continue
        how = data.draw(st.sampled_from(["flip", "flip", "flip", "set", "truncate"]))
        at = data.draw(st.integers(0, len(raw) - 1))
        if how == "flip":
            raw[at] ^= data.draw(st.sampled_from([0x01, 0x02, 0x80, 0xFF]))
        elif how == "set":  # a varint or union byte forced to a long or odd value
            raw[at] = data.draw(st.sampled_from([0x00, 0x02, 0x7F, 0x80, 0xFF]))
        else:
            del raw[at:]
        seg.write_bytes(bytes(raw))
    fast, reference = both(folder, max_batch)
    assert fast == reference


def test_a_damaged_index_entry_gives_the_same_findings_both_ways(
        pristine: Path, tmp_path: Path) -> None:
    folder = tmp_path / "log"
    shutil.copytree(pristine, folder)
    idx = folder / "p0000.idx"
    raw = bytearray(idx.read_bytes())
    raw[8 * 5] ^= 0x04  # the sixth record's entry points into the middle of another
    idx.write_bytes(bytes(raw))
    fast, reference = both(folder, max_batch=4)
    assert fast == reference
    assert any(a.kind == "index" for a in fast[2])  # type: ignore[attr-defined]

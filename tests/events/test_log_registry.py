"""Opening a log by address (events/log/registry.py), and the capabilities a log declares in
its type (events/log/base.py, ConditionalAppend)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from events.errors import ConcurrencyError, LogError
from events.log.base import ConditionalAppend
from events.log.embedded.log import EmbeddedLog
from events.log.registry import BACKENDS, open_log
from events.recording.recorder import Recorder
from events.reddog import model


def test_a_file_address_opens_an_embedded_log_that_appends_conditionally(tmp_path: Path) -> None:
    with open_log(f"file://{tmp_path / 'log'}") as log:
        assert type(log) is EmbeddedLog and isinstance(log, ConditionalAppend)
    with open_log(str(tmp_path / "log")) as log:  # a bare path is the embedded log too
        assert type(log) is EmbeddedLog


def test_an_unknown_scheme_is_a_log_error_naming_the_address() -> None:
    with pytest.raises(LogError, match=r"unknown log address 's3://bucket/events': use "
                                       r"file:///path/to/log or kafka://host:port/topic"):
        open_log("s3://bucket/events")


def test_a_backend_that_cannot_be_loaded_is_a_log_error_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BACKENDS, "file", ("events.log.no_such_backend", "NoLog"))
    with pytest.raises(LogError, match=r"the file:// log backend "
                                       r"\(events\.log\.no_such_backend\.NoLog\) cannot be loaded"):
        open_log(f"file://{tmp_path / 'log'}")
    assert not (tmp_path / "log").exists()  # nothing made on the way


def test_a_missing_embedded_log_is_not_created_for_a_reader(tmp_path: Path) -> None:
    with pytest.raises(LogError, match="no event log at"):
        open_log(f"file://{tmp_path / 'absent'}", create=False)
    assert not (tmp_path / "absent").exists()


def test_the_recorder_refuses_a_stale_head_on_a_conditional_append_log(tmp_path: Path) -> None:
    """Two recorders of one table on an embedded log: the second, whose head is stale, gets
    ConcurrencyError instead of taking a seq already taken (the log's declared capability)."""
    when = datetime(2026, 11, 28, 23, 0, tzinfo=UTC)
    with open_log(f"file://{tmp_path / 'log'}") as log:
        first, second = Recorder(log), Recorder(log)  # both read the (empty) heads now
        first.record("T01", model.TableClosed(reason="a"), shoe_id=None, round_no=None,
                     actor="D1", occurred_at=when)
        first.flush()
        second.record("T01", model.TableClosed(reason="b"), shoe_id=None, round_no=None,
                      actor="D2", occurred_at=when)
        with pytest.raises(ConcurrencyError, match="another writer appended"):
            second.flush()
        assert sum(log.end_offsets().values()) == 1

"""events/wire/quiet_call.py: a call's stderr dropped on a worker thread with its own file
descriptor table, the process's fd 2 and every other descriptor left as they are."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator

import pytest

from events.wire import quiet_call as qc


@pytest.fixture()
def fresh_worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A worker made during the test (the module's one may predate what the test opens)."""
    monkeypatch.setattr(qc, "_pool", None)
    yield
    if qc._pool is not None:
        qc._pool[1].shutdown()


def _needs_own_table() -> None:
    if not sys.platform.startswith("linux") or not qc._worker()[1]:
        pytest.skip("no unshare(CLONE_FILES) here: the call runs on the caller's thread")


def test_the_call_writes_to_its_own_stderr_and_the_process_keeps_its_own(
        fresh_worker: None, capfd: pytest.CaptureFixture[str]) -> None:
    _needs_own_table()
    before = os.fstat(2)
    assert qc.quiet_call(os.write, 2, b"from the quiet call\n") == 20
    os.write(2, b"from the caller\n")
    after = os.fstat(2)
    assert (before.st_dev, before.st_ino) == (after.st_dev, after.st_ino)
    assert capfd.readouterr().err == "from the caller\n"


def test_the_worker_holds_no_copy_of_a_socket_its_owner_closes(fresh_worker: None) -> None:
    """The worker's table starts as a copy of the process's: unless its copies are closed, a
    socket the server closes stays open there and its client never sees the end."""
    mine, peer = socket.socketpair()
    try:
        _needs_own_table()  # the worker starts now, with `mine` open
        assert qc.quiet_call(lambda: 7) == 7
        mine.close()
        peer.settimeout(10)
        assert peer.recv(1) == b""  # end of stream, not a timeout
    finally:
        peer.close()


def test_the_callees_exception_reaches_the_caller() -> None:
    with pytest.raises(ZeroDivisionError):
        qc.quiet_call(divmod, 1, 0)

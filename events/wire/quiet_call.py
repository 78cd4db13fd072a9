"""A call whose own writes to stderr are dropped, without touching the process's stderr.

Why (native_decode.py): hostile bytes can make polars' Avro reader panic; the panic is caught
(the reference then says which message is bad, and why), but Rust's panic hook prints it, with
a backtrace, to file descriptor 2 before Python sees it, and polars has no option to silence
it. Pointing the process's fd 2 at /dev/null for the call (dup2) would also swallow whatever
every other thread writes meanwhile (`pitlog serve`'s HTTP thread, logging), and leave fd 2
redirected if the restore were skipped.

So the call runs on one worker thread that has its own file descriptor table (Linux's
unshare(CLONE_FILES), which acts on the calling thread only): in that table, and only there,
fd 2 is /dev/null. The copies of the other descriptors the table starts with are closed at
once, so no socket or file is held open by the worker after its owner closes it. Threads
other than the worker keep the process's table and its fd 2, untouched.

Where unshare is unavailable (not Linux, or refused by a sandbox) the call runs on the caller's
thread with stderr as it is: a panic's message is then shown, nothing else changes.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

_CLONE_FILES = 0x400  # linux/sched.h
_lock = threading.Lock()
# (the pid it was made in, the worker, whether the worker's stderr is its own /dev/null)
_pool: tuple[int, ThreadPoolExecutor, bool] | None = None
_private = threading.local()


def _own_table() -> None:
    """The worker's start: its own descriptor table, holding only 0, 1 and 2 (/dev/null)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(_CLONE_FILES) != 0:
            return
    except (OSError, AttributeError):
        return
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    _private.quiet = True


def _is_quiet() -> bool:
    return getattr(_private, "quiet", False)


def _worker() -> tuple[ThreadPoolExecutor, bool]:
    global _pool
    with _lock:
        # A forked child has no worker thread, only the parent's executor object: a new one.
        if _pool is None or _pool[0] != os.getpid():
            worker = ThreadPoolExecutor(1, "pitlog-quiet", _own_table)
            _pool = (os.getpid(), worker, worker.submit(_is_quiet).result())
        return _pool[1], _pool[2]


def quiet_call(fn: Callable[..., T], *args: object) -> T:
    """fn(*args) with its stderr dropped (module doc); its result, or its exception (a Rust
    panic's PanicException included), as if called here."""
    worker, quiet = _worker()
    if not quiet:
        return fn(*args)
    return worker.submit(fn, *args).result()

"""The console's browser tests: a real store, a real server, a real chromium.

`build_store` simulates tables with irregularities injected into a real embedded log and
projects them into a real DuckDB file (its alerts table filled by the projector); `running`
serves create_app over it with uvicorn on a free loopback port, in a thread, as `pitlog serve`
would (one read-write connection, a fresh cursor per request).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import pytest
from store_template import new_store

from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections.projector import project

CHROMIUM = Path("/usr/bin/chromium")
NEW_YORK = ZoneInfo("America/New_York")

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="no /usr/bin/chromium (CI installs Debian's chromium)")


def build_store(folder: Path) -> Path:
    """Three tables (two profiles), irregularities of every kind, short payouts and late
    raises more often; returns the DuckDB file."""
    config = SimConfig(seed=8, tables=3, rounds=150, seats=5, irregularities=0.01,
                       profiles=("nj-casino", "gaming-authority"),
                       per_code={"LATE_RAISE": 0.03, "WRONG_PAYOUT": 0.03})
    with EmbeddedLog(folder / "log") as log:
        simulate(log, config)
        project(log, new_store(folder / "pitlog.duckdb"))  # a copy of a new store
    return folder / "pitlog.duckdb"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    url: str
    state: object  # ServeState
    con: duckdb.DuckDBPyConnection


@contextmanager
def running(db: Path, *, tz: ZoneInfo = NEW_YORK, token: str | None = None) -> Iterator[Served]:
    import uvicorn

    from projections.serve.app import create_app
    from projections.serve.state import ServeState

    con = duckdb.connect(str(db))
    state = ServeState(con, tz=tz, db_path=db)
    state.status.ready = True
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(
        create_app(state, token), host="127.0.0.1", port=port, log_level="warning",
        lifespan="off", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield Served(f"http://127.0.0.1:{port}", state, con)
    finally:
        server.should_exit = True
        thread.join(10)
        con.close()

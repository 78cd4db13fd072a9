"""A request to `pitlog serve` reads one snapshot of the store (ServeState.snapshot).

An answer made of several queries (a dispute: the round, its cards, announcements, wagers,
settlements, then its anomalies) must not mix the store before a batch the follower commits
mid-request with the store after it. Real store, real server (uvicorn), real DuckDB; the
writer's commit is placed between the dispute's queries by wrapping the last of them."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from console_support import running
from store_template import new_store

from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections import dispute
from projections.anomalies import STORED
from projections.projector import project


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("snapshot")
    with EmbeddedLog(folder / "log", partitions=2) as log:
        simulate(log, SimConfig(seed=4, tables=2, rounds=20, irregularities=0.05))
        project(log, new_store(folder / "pitlog.duckdb"))
    return folder / "pitlog.duckdb"


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=60) as r:  # noqa: S310 - a loopback test server
        return json.loads(r.read())


def test_a_batch_committed_during_a_dispute_request_is_not_half_seen(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with running(store) as served:
        ((table, shoe, round_no, flagged),) = served.con.execute(
            f"SELECT table_id, shoe_id, round_no, count(*) FROM {STORED} WHERE round_no IS NOT "
            f"NULL AND shoe_id IS NOT NULL GROUP BY ALL ORDER BY 4 DESC, 1, 2, 3 LIMIT 1"
        ).fetchall()
        url = f"{served.url}/api/dispute?table={table}&shoe={shoe}&round={round_no}"
        before = _get(url)
        assert len(before["anomalies"]) >= flagged > 0  # the round has anomalies to lose

        original = dispute.anomalies_touching
        committed = []

        def writer_commits_first(con: Any, *args: Any) -> Any:
            # The follower's commit, between the request's queries: the round's stored
            # anomaly rows gone from the store (its checkpoints unchanged, so still current).
            writer = served.con.cursor()
            writer.execute(f"DELETE FROM {STORED} WHERE table_id = ? AND shoe_id = ? AND "
                           f"round_no = ?", [table, shoe, round_no])
            writer.close()
            committed.append(True)
            return original(con, *args)

        monkeypatch.setattr(dispute, "anomalies_touching", writer_commits_first)
        during = _get(url)
        monkeypatch.setattr(dispute, "anomalies_touching", original)
        after = _get(url)

    assert committed == [True]
    assert during == before  # the whole answer from the store as the request began
    # ... and the commit was real: the next request sees it.
    assert len(after["anomalies"]) == len(before["anomalies"]) - flagged
    assert after["cards"] == before["cards"]

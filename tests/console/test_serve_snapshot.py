"""A request to `pitlog serve` reads one snapshot of the store (ServeState.snapshot).

An answer made of several queries (a dispute: the round, its cards, announcements, wagers,
settlements, then its anomalies) must not mix the store before a batch the follower commits
mid-request with the store after it. Real store, real server (uvicorn), real DuckDB; the
writer's commit is placed between the dispute's queries by wrapping the last of them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from console_support import running
from store_template import copy_store, new_store

from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections import dispute
from projections.anomalies import STORED, STORED_AT
from projections.projector import project
from projections.reconcile import ROUND_MONEY_AT, RUNNING_SUMS_AT


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
        store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with running(copy_store(store, tmp_path / "served.duckdb")) as served:
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


def _status_and_body(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:  # noqa: S310 - a loopback server
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _without_float_sums(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # sd and z come from a floating-point sum of squares: from the running sums or from the
    # views they may differ in their last digit (docs/auditing.md); every other figure is exact.
    return [{k: v for k, v in r.items() if k not in ("sd_cents", "z_score")} for r in rows]


@pytest.mark.parametrize("marker", [ROUND_MONEY_AT, RUNNING_SUMS_AT, STORED_AT])
@pytest.mark.parametrize("damage", ["DROP TABLE {marker}",
                                    "CREATE OR REPLACE TABLE {marker} AS SELECT 1 AS a, 2 AS b"])
def test_a_served_store_whose_kept_marker_is_missing_or_misshapen_still_answers(
        store: Path, tmp_path: Path, marker: str, damage: str) -> None:
    """A kept table's marker gone or of another shape (an older pitlog's, a rebuild stopped
    part way): the reads fall back to the views, and inside the request's transaction nothing
    may fail on the way (a failed statement would abort it: 500 and 400 before this was
    checked through the catalog, kept_at.current)."""
    paths = ["/api/anomalies", "/api/reconcile", "/api/reconcile?by=shift"]
    with running(copy_store(store, tmp_path / "damaged.duckdb")) as served:
        before = [_status_and_body(served.url + p) for p in paths]
        writer = served.con.cursor()
        writer.execute(damage.format(marker=marker))
        writer.close()
        after = [_status_and_body(served.url + p) for p in paths]
    assert [s for s, _ in before] == [s for s, _ in after] == [200, 200, 200]
    assert after[0][1] == before[0][1]
    assert [_without_float_sums(b) for _, b in after[1:]] == \
        [_without_float_sums(b) for _, b in before[1:]]
    assert len(before[1][1]) == 2 and len(before[0][1]) > 0  # two tables, some anomalies


def test_a_served_read_out_of_memory_says_to_give_more_memory(store: Path,
                                                               tmp_path: Path) -> None:
    """The memory advice survives the request's transaction: no retry inside the aborted
    transaction (reconcile.run_rows retries only on a read-only connection's own)."""
    with running(copy_store(store, tmp_path / "small.duckdb")) as served:
        served.con.execute("SET memory_limit = '6MB'")
        status, body = _status_and_body(served.url + "/api/ledger")
    assert status == 400
    assert "Out of Memory" in body["error"] and "more memory" in body["error"], body

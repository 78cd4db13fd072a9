"""The projector stores the anomaly rows; readers use them only while they are fresh."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from events.errors import ProjectionError
from events.log.embedded.log import EmbeddedLog
from events.simulation.simulator import SimConfig, simulate
from projections.anomalies import (
    FAMILY_ROWS,
    STORED,
    anomaly_families,
    anomaly_source,
    list_anomalies,
    refresh_stored_anomalies,
    table_groups,
)
from projections.incremental import CONTEXT, state_ready
from projections.projector import project


def _rows(con: duckdb.DuckDBPyConnection, relation: str) -> list[tuple[object, ...]]:
    return con.sql(f"SELECT * FROM {relation} ORDER BY ALL").fetchall()


def test_stored_anomalies_equal_the_view_and_go_stale_when_events_arrive(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log")
    simulate(log, SimConfig(seed=3, tables=2, rounds=80, irregularities=0.02))
    db = tmp_path / "v.duckdb"
    project(log, db)
    with duckdb.connect(str(db)) as con:
        assert anomaly_source(con) == STORED
        stored = _rows(con, STORED)
        assert len(stored) > 5 and stored == _rows(con, "anomalies")
        listed = list_anomalies(con)
        assert len([a for a in listed if a["code"] not in ("HOLD_VARIANCE",
                                                           "OUTCOME_FREQUENCY")]) == len(stored)
    # New events projected without storing: readers fall back to the view.
    simulate(log, SimConfig(seed=4, tables=1, rounds=20, irregularities=0.05))
    project(log, db, store_anomalies=False)
    with duckdb.connect(str(db)) as con:
        assert anomaly_source(con) == "anomalies"
        assert len(_rows(con, "anomalies")) > len(stored)
    project(log, db)  # nothing new to read, but the stored rows are stale: refreshed
    with duckdb.connect(str(db)) as con:
        assert anomaly_source(con) == STORED
        assert _rows(con, STORED) == _rows(con, "anomalies")


def test_rows_stored_by_other_rules_or_state_of_another_pitlog_are_evaluated_again(
        tmp_path: Path) -> None:
    """An upgraded pitlog whose rules differ: the stored rows carry the rules' fingerprint
    (anomalies.stored_tag) and the detection state its definition (incremental._STATE_TAG), so
    rows an older rule stored are not read, and the next projection evaluates the store whole
    and builds the state again, even with nothing new in the log."""
    log = EmbeddedLog(tmp_path / "log")
    simulate(log, SimConfig(seed=3, tables=2, rounds=60, irregularities=0.02))
    db = tmp_path / "v.duckdb"
    project(log, db)
    with duckdb.connect(str(db)) as con:
        fresh = _rows(con, STORED)
        context = _rows(con, CONTEXT)
        assert len(fresh) > 5 and len(context) > 2
        # What an older pitlog left: a row its rules made, its tag; a context without rows.
        con.execute(f"INSERT INTO {STORED} SELECT * REPLACE ('an older rule' AS explanation) "
                    f"FROM {STORED} LIMIT 1")
        con.execute(f"COMMENT ON TABLE {STORED} IS 'pitlog anomalies 0123'")
        assert anomaly_source(con) == "anomalies"
        assert _rows(con, "anomalies") == fresh
    project(log, db)
    with duckdb.connect(str(db)) as con:
        assert anomaly_source(con) == STORED
        assert _rows(con, STORED) == fresh
        con.execute(f"DELETE FROM {CONTEXT}")
        con.execute(f"COMMENT ON TABLE {CONTEXT} IS 'pitlog detect_context 0123'")
        assert not state_ready(con)
    project(log, db)
    with duckdb.connect(str(db)) as con:
        assert state_ready(con)
        assert _rows(con, CONTEXT) == context
        assert _rows(con, STORED) == fresh


def test_the_rows_stored_family_by_family_are_the_views_rows_for_every_family(
        tmp_path: Path) -> None:
    # Irregularities of every kind, on three tables of the three profiles: each of the five
    # families (sql/anomalies_*.sql) has rows of its own to store.
    log = EmbeddedLog(tmp_path / "log")
    simulate(log, SimConfig(seed=5, tables=3, rounds=150, seats=4, irregularities=0.03,
                            profiles=("nj-casino", "nj-casino-night", "gaming-authority")))
    db = tmp_path / "v.duckdb"
    project(log, db)
    with duckdb.connect(str(db)) as con:
        families = anomaly_families(con)
        assert families == ["anomalies_found_money", "anomalies_found_places",
                            "anomalies_found_rounds",
                            "anomalies_found_shoes", "anomalies_found_streams",
                            "anomalies_found_tables"]
        per_family = {f: con.sql(f"SELECT count(*) FROM ({FAMILY_ROWS.format(family=f)})")
                      .fetchall()[0][0] for f in families}
        assert all(n > 0 for n in per_family.values()), per_family
        stored = _rows(con, STORED)
        assert len(stored) == sum(per_family.values())
        assert stored == _rows(con, "anomalies")


def test_the_rows_stored_a_table_group_at_a_time_are_the_views_rows_whatever_the_groups(
        tmp_path: Path) -> None:
    # Every code the view finds on four tables of the three profiles, stored one table at a
    # time, two tables at a time and all at once: the same rows (every rule is decided within
    # one table, anomalies.py, GROUP_EVENTS).
    log = EmbeddedLog(tmp_path / "log", partitions=2)
    simulate(log, SimConfig(seed=6, tables=4, rounds=120, seats=4, irregularities=0.04,
                            profiles=("nj-casino", "nj-casino-night", "gaming-authority")))
    db = tmp_path / "v.duckdb"
    project(log, db, store_anomalies=False)
    with duckdb.connect(str(db)) as con:
        view = _rows(con, "anomalies")
        assert len({row[0] for row in view}) >= 15 and len({row[2] for row in view}) == 4
        per_table = dict(con.sql("SELECT table_id, count(*) FROM events GROUP BY 1").fetchall())
        half = sum(per_table.values()) // 2
        for cap, n_groups in ((1, {4}), (half, {2, 3}), (10**9, {1})):
            groups = table_groups(con, cap)
            assert len(groups) in n_groups
            assert all(g.events <= cap or len(g.tables) == 1 for g in groups)
            assert sorted(t for g in groups for t in g.tables) == sorted(per_table)
            assert sum(g.events for g in groups) == sum(per_table.values())
            refresh_stored_anomalies(con, max_events=cap)
            assert anomaly_source(con) == STORED
            assert _rows(con, STORED) == view, f"groups of at most {cap} events"


def test_too_little_memory_for_the_anomaly_rows_keeps_the_rows_and_says_what_to_do(
        tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log")
    simulate(log, SimConfig(seed=3, tables=2, rounds=80, irregularities=0.02))
    db = tmp_path / "v.duckdb"
    project(log, db)
    simulate(log, SimConfig(seed=4, tables=1, rounds=20, irregularities=0.05))
    # Loading fits in any limit the projector takes; evaluating every rule at once does not.
    with pytest.raises(ProjectionError, match=r"within DuckDB's memory limit of .*the projected "
                                              r"rows are safe.*--memory-limit"):
        project(log, db, memory_limit="16MB")
    with duckdb.connect(str(db)) as con:
        assert con.sql("SELECT count(*) FROM events").fetchall() == [
            (sum(log.end_offsets().values()),)]
        assert anomaly_source(con) == "anomalies"  # stale: readers evaluate the view

"""Several projectors sharing one topic: each reads its own partitions (``?assign=``) into its
own DuckDB file, and the files together hold exactly what one projector of the whole topic
holds (docs/operating.md, "Several projectors")."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from kafka_support import WALL_CLOCK_COLUMNS, content_digests, read_alerts, relation_digest

from events.errors import LogError
from events.log.kafka.log import share_name
from events.log.registry import open_log
from events.simulation.simulator import SimConfig, simulate
from projections.projector import project

pytestmark = pytest.mark.kafka


def _merged_digest(dbs: list[Path], relation: str) -> tuple[int, str]:
    """(rows, content hash) of `relation` over several files, ATTACHed read-only."""
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        for i, db in enumerate(dbs):
            con.execute(f"ATTACH '{db}' AS s{i} (READ_ONLY)")
        columns = [c for (c, *_) in con.execute(f"DESCRIBE SELECT * FROM s0.{relation}")
                   .fetchall()]
        union = " UNION ALL ".join(f"SELECT * FROM s{i}.{relation}" for i in range(len(dbs)))
        return relation_digest(con, f"({union})", columns)
    finally:
        con.close()


def test_projectors_with_disjoint_partitions_together_hold_the_whole_topic(
        kafka_uri: str, tmp_path: Path) -> None:
    with open_log(kafka_uri, partitions=4) as log:
        total = simulate(log, SimConfig(seed=8, tables=8, rounds=15, irregularities=0.05)).events
        whole = project(log, tmp_path / "whole.duckdb")
    shares = {"a": "0,1", "b": "2-3"}
    for name, assign in shares.items():
        with open_log(f"{kafka_uri}?assign={assign}") as log:
            assert log.end_offsets().keys() == ({0, 1} if name == "a" else {2, 3})
            project(log, tmp_path / f"{name}.duckdb")
    parts = [tmp_path / "a.duckdb", tmp_path / "b.duckdb"]
    a, b = (duckdb.connect(str(p), read_only=True) for p in parts)
    try:
        assert [p for (p,) in a.execute("SELECT log_partition FROM checkpoints ORDER BY 1")
                .fetchall()] == [0, 1]
        assert [p for (p,) in b.execute("SELECT log_partition FROM checkpoints ORDER BY 1")
                .fetchall()] == [2, 3]
        tables_a = {t for (t,) in a.execute("SELECT DISTINCT table_id FROM events").fetchall()}
        tables_b = {t for (t,) in b.execute("SELECT DISTINCT table_id FROM events").fetchall()}
    finally:
        a.close()
        b.close()
    assert tables_a and tables_b and not tables_a & tables_b  # a table lives in one share
    assert whole.events == total
    expected = content_digests(tmp_path / "whole.duckdb", exclude=WALL_CLOCK_COLUMNS)
    # Raw events, and the per-table views, are the union of the shares.
    for relation in ("events", "hands", "shoes", "timeline"):
        assert _merged_digest(parts, relation) == expected[relation], relation
    # Each projector publishes the alerts its own file numbers to a topic of its own: on one
    # topic a share would take another's last alert for its own and skip alerts.
    bootstrap, topic = kafka_uri.removeprefix("kafka://").split("/", 1)
    for name, alert_topic in (("whole", f"{topic}.alerts"), ("a", f"{topic}.alerts.0-1"),
                              ("b", f"{topic}.alerts.2-3")):
        with duckdb.connect(str(tmp_path / f"{name}.duckdb"), read_only=True) as con:
            raised = con.execute("SELECT alert_seq, alert_id FROM alerts ORDER BY 1").fetchall()
        assert raised, name
        assert [(a["alert_seq"], a["alert_id"]) for _, a in read_alerts(bootstrap, alert_topic)
                ] == raised, name


def test_assigning_a_partition_the_topic_lacks_is_refused(kafka_uri: str) -> None:
    with open_log(kafka_uri, partitions=2):
        pass
    with pytest.raises(LogError, match=r"has partitions 0\.\.1; cannot assign \[1, 2\]"):
        open_log(f"{kafka_uri}?assign=1-2")


def test_a_share_is_named_as_a_topic_may_spell_it() -> None:
    assert share_name([8, 0, 1, 2, 3, 3]) == "0-3_8"
    assert share_name([5]) == "5"

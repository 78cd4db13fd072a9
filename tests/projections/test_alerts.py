"""Alerts (projections/alerts.py): every new anomaly row raised once, with a deterministic id,
in the batch's transaction; published after the commit to the alert log beside the embedded
log or to the Kafka alert topic, with no loss and no repeat across a SIGKILL and restart."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from kafka_support import read_alerts
from live_support import SHORT, feed, fill, kill_repeatedly, random_cuts, source_log
from store_template import store_at

from events.log.embedded.alerts import EmbeddedAlertLog
from events.log.embedded.log import EmbeddedLog
from events.log.registry import open_log
from projections.alerts import ALERT_ID, alerts_after
from projections.anomalies import STORED
from projections.projector import project


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, bytes]]:
    return source_log(tmp_path_factory.mktemp("source") / "log")


@pytest.fixture(scope="module")
def short_records(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, bytes]]:
    """The shorter evening (live_support.SHORT), for the test that projects it in batches of
    700: a third fewer batches, each paying detection. The rebuild's test needs six batches of
    1,000 and the SIGKILL ones a child killed part-way: they keep the long one."""
    return source_log(tmp_path_factory.mktemp("short") / "log", SHORT)


def _alerts(con: duckdb.DuckDBPyConnection) -> list[dict]:
    return alerts_after(con, 0, limit=10**9)


def _check_table(con: duckdb.DuckDBPyConnection) -> list[dict]:
    alerts = _alerts(con)
    assert [a["alert_seq"] for a in alerts] == list(range(1, len(alerts) + 1))
    ids = [a["alert_id"] for a in alerts]
    assert len(ids) == len(set(ids))  # raised once each
    stored = {i for (i,) in con.execute(f"SELECT {ALERT_ID} FROM {STORED}").fetchall()}
    assert stored and stored <= set(ids)  # every stored row has its alert
    return alerts


def test_every_stored_row_is_raised_once_and_the_alert_log_holds_them_in_order(
        tmp_path: Path, short_records: list[tuple[bytes, bytes]]) -> None:
    records = short_records
    log = EmbeddedLog(tmp_path / "log")
    raised = 0
    start = 0
    with duckdb.connect(str(store_at(tmp_path / "v.duckdb"))) as con:
        for stop in random_cuts(len(records), 6, 8):
            feed(log, records, start, stop)
            start = stop
            raised += project(log, con, batch_size=700).alerts
        alerts = _check_table(con)
        assert raised == len(alerts)
        # A rebuild of a stretch (the same rows again) raises nothing new.
        assert project(log, con).alerts == 0
        one = alerts[0]
        assert set(one) >= {"code", "severity", "table_id", "shoe_id", "round_no", "seqs",
                            "explanation", "rule", "occurred_at", "alert_id"}
    published = list(EmbeddedAlertLog(tmp_path / "log").read())
    assert [p["alert_id"] for p in published] == [a["alert_id"] for a in alerts]
    assert [p["seqs"] for p in published] == [list(a["seqs"]) for a in alerts]


@pytest.mark.slow
def test_the_alert_id_is_the_same_in_an_independent_rebuild(
        tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    log = EmbeddedLog(tmp_path / "log")
    feed(log, records, 0, len(records))
    with duckdb.connect(str(store_at(tmp_path / "a.duckdb"))) as a, \
            duckdb.connect(str(store_at(tmp_path / "b.duckdb"))) as b:
        project(log, a, publish_alerts=False)
        # In batches (several per table: each re-evaluates its stretch), against one batch.
        assert project(log, b, batch_size=1000, publish_alerts=False).batches >= 6
        ids_a = {i for (i,) in a.execute(f"SELECT {ALERT_ID} FROM {STORED}").fetchall()}
        ids_b = {i for (i,) in b.execute(f"SELECT {ALERT_ID} FROM {STORED}").fetchall()}
        assert ids_a == ids_b and len(ids_a) > 50


def _kill_repeatedly(uri: str, db: Path, seed: int) -> None:
    kill_repeatedly(uri, db, seed, publish=True)
    log = open_log(uri)
    try:
        project(log, db)
    finally:
        log.close()


def test_a_sigkill_and_restart_neither_loses_nor_repeats_an_alert_in_the_alert_log(
        tmp_path: Path, records: list[tuple[bytes, bytes]]) -> None:
    fill(f"file://{tmp_path / 'log'}", records)
    _kill_repeatedly(f"file://{tmp_path / 'log'}", tmp_path / "v.duckdb", 6)
    with duckdb.connect(str(tmp_path / "v.duckdb")) as con:
        alerts = _check_table(con)
    lines = (tmp_path / "log" / "alerts.jsonl").read_bytes().splitlines()
    published = [json.loads(line) for line in lines]
    assert [p["alert_seq"] for p in published] == [a["alert_seq"] for a in alerts]
    assert [p["alert_id"] for p in published] == [a["alert_id"] for a in alerts]


@pytest.mark.kafka
def test_a_bare_kafka_consumer_reads_every_alert_once_across_sigkills(
        tmp_path: Path, records: list[tuple[bytes, bytes]], kafka_uri: str) -> None:
    fill(kafka_uri, records)
    _kill_repeatedly(kafka_uri, tmp_path / "v.duckdb", 7)
    with duckdb.connect(str(tmp_path / "v.duckdb")) as con:
        alerts = _check_table(con)
    bootstrap, topic = kafka_uri.removeprefix("kafka://").split("/", 1)
    read = read_alerts(bootstrap, f"{topic}.alerts")
    assert [v["alert_seq"] for _, v in read] == [a["alert_seq"] for a in alerts]
    assert [v["alert_id"] for _, v in read] == [a["alert_id"] for a in alerts]
    assert all(k == (v["table_id"] or "").encode() for k, v in read)
    assert [v["explanation"] for _, v in read] == [a["explanation"] for a in alerts]


@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")])
def test_rows_sharing_an_alert_id_raise_the_same_alert_whatever_order_they_come_in(
        order: tuple[str, str]) -> None:
    # Two writers' lines at one seq can prove the same code with the same seqs: one alert_id,
    # two rows. The alert raised must not depend on which row the evaluation met first (a live
    # store and one rebuilt from the log meet them in different orders).
    from projections.alerts import create_tables, raise_alerts

    con = duckdb.connect()
    create_tables(con)
    explanation = {"a": "explained by the first writer", "b": "explained by the second writer"}
    con.execute("CREATE TABLE rows_in (code VARCHAR, severity VARCHAR, table_id VARCHAR, "
                "shoe_id VARCHAR, round_no INTEGER, seqs BIGINT[], explanation VARCHAR, "
                "rule VARCHAR, occurred_at TIMESTAMPTZ)")
    for key in order:  # one insert each: the table's scan meets them in this order
        con.execute("INSERT INTO rows_in VALUES ('WRONG_PAYOUT', 'high', 'T1', 'S1', 4, "
                    "[17, 18], ?, '13:47-20.31(g)', TIMESTAMPTZ '2026-12-01 21:14:05+00')",
                    [explanation[key]])
    assert raise_alerts(con, "rows_in") == 1
    assert con.execute("SELECT explanation FROM alerts").fetchall() == [(explanation["a"],)]

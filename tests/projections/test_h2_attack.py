"""Attacks on money recorded with no round (ecdd1b4): the stored rows, batch by batch, against
a full evaluation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from audit_scenarios import ORIGINAL, Floor, Pit
from live_support import assert_money_exact, differences

from events.log.embedded.log import EmbeddedLog
from events.reddog.model import SettledAs
from projections.anomalies import STORED
from projections.projector import project


def _batches(tmp_path: Path, build: Callable[[Pit], list[int]]) -> duckdb.DuckDBPyConnection:
    """T11 recorded by `build`, which returns the seqs that end each batch but the last; each
    batch projected in turn, the stored rows checked against a full evaluation after each."""
    source = Floor(tmp_path / "source")
    t = source.table("T11")
    opened = t.open_table("nj-casino")
    cuts = build(t)
    t.flush()
    records = [(r.key, r.value) for batch in source.log.read() for r in batch]
    log = EmbeddedLog(tmp_path / "log")
    con = duckdb.connect(str(tmp_path / "v.duckdb"))
    start = 0
    for stop in [c - opened + 1 for c in cuts] + [len(records)]:
        log.append(records[start:stop])
        start = stop
        project(log, con, publish_alerts=False)
        assert differences(con) == (0, 0), stop
        assert_money_exact(con)
    return con


@pytest.mark.parametrize("shoes_before", [1, 0])
def test_loose_money_between_the_last_shoe_and_the_stretch_reaches_the_window(
        tmp_path: Path, shoes_before: int) -> None:
    """A wager with no shoe and no round recorded before the table's last shoe (after another
    shoe, or before any), another event with no shoe after it, and the wager's settlement,
    with no shoe, in the next batch: the stretch starts at the last shoe (K), the window at
    the first's last card (W; with no shoe before, the table's start), and the wager lies
    between them, where copy_windows kept only the context types and K's predecessor
    (detect_context's copy is read before W only). The window's settlement had no wager:
    NOT_OWED "no wager was on area 5", stored; the full evaluation pairs them."""
    seqs: dict[str, int] = {}

    def build(t: Pit) -> list[int]:
        if shoes_before:
            t.new_shoe("T11-S1")
            t.play("3C 9H 5D", {1: 1000})
            t.shoe_id = None
        seqs["wager"] = t.wager(5, 2000)
        t.wager(6, 1000)
        t.new_shoe("T11-S2")
        t.play("2C 8D 4H", {2: 3000})
        cut = t.rack("4H")  # any last event of the shoe
        t.shoe_id = None
        seqs["settled"] = t.settle(5, ORIGINAL, SettledAs.LOST, 2000)
        return [cut]

    with _batches(tmp_path, build) as con:
        rows = con.execute(f"SELECT code, seqs FROM {STORED} WHERE shoe_id IS NULL "
                           "AND round_no IS NULL").fetchall()
    assert rows == [("WRONG_SETTLEMENT", [seqs["wager"], seqs["settled"]])]


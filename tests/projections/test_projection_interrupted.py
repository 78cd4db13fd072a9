"""The projector stopped after any number of batches of any size, and resumed, ends with the
views of one uninterrupted run (docs/architecture.md, principle 3). A module of its own: it is
the longest of the projector's tests, and the suite's workers take a module each
(pyproject.toml, --dist loadfile), so it runs beside test_projection.py instead of after it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from hypothesis import example, given, seed, settings
from hypothesis import strategies as st
from recorded_evening import digests_of, record_evening

from events.log.embedded.log import EmbeddedLog
from projections.projector import project


@pytest.fixture(scope="module")
def shared_evening(tmp_path_factory: pytest.TempPathFactory) -> tuple[EmbeddedLog, dict]:
    """A short evening and its uninterrupted projection's digests, for the property test: two
    tables (two partitions) of two rounds each, seed 135 dealing one round of every kind (a
    pair, a spread of 8 or more with raises, a smaller spread, a consecutive tie), so that batch
    size 1 splits every kind of round at every event and every round from the next."""
    from conftest import HandBuiltTable

    folder = tmp_path_factory.mktemp("shared")
    log = EmbeddedLog(folder / "log", partitions=4)
    record_evening(lambda table_id="T01": HandBuiltTable(log, table_id), rounds=2, seed=135)
    project(log, folder / "clean.duckdb")
    with duckdb.connect(str(folder / "clean.duckdb"), read_only=True) as con:
        kinds = con.execute("SELECT table_id, kind, spread >= 8 FROM rounds "
                            "ORDER BY table_id, round_no").fetchall()
        raised = con.execute("SELECT count(*) FROM events WHERE event_type = 'RaisePlaced'"
                             ).fetchone()
    assert kinds == [("T01", "pair", None), ("T01", "spread", True),
                     ("T02", "spread", False), ("T02", "consecutive", None)]
    assert raised is not None and raised[0] > 0
    return log, digests_of(folder / "clean.duckdb")


def _stop_after(batches: int) -> Callable[[int], None]:
    calls: list[int] = []

    def progress(done: int) -> None:
        calls.append(done)
        if len(calls) == batches:
            raise KeyboardInterrupt

    return progress


# Batch size 1 explicitly (every event its own batch: every split of every kind of round, and of
# one round from the next), stopped three times on the way; Hypothesis adds sizes 2 and up and
# stops, from a fixed seed. Every batch runs detection, which is what makes a batch cost (hence
# the short evening). The timeout is a hang guard for a loaded machine, not a timing.
@pytest.mark.slow  # started first (tests/conftest.py): the longest of the projector's tests
@pytest.mark.timeout(1800)
@example(batch_size=1, stops=[1, 4, 9])
@seed(20261201)
@settings(max_examples=6, deadline=None)
@given(batch_size=st.integers(2, 120), stops=st.lists(st.integers(1, 6), max_size=3))
def test_any_batch_size_and_any_interruptions_give_the_same_views(
        shared_evening: tuple[EmbeddedLog, dict], tmp_path_factory: pytest.TempPathFactory,
        empty_store: Callable[[Path], Path], batch_size: int, stops: list[int]) -> None:
    log, expected = shared_evening
    # An empty store copied from one made once (conftest): the views are not created again.
    db = empty_store(tmp_path_factory.mktemp("prop") / "p.duckdb")
    for stop in stops:  # each run is stopped after `stop` batches, then resumed
        try:
            project(log, db, batch_size=batch_size, progress=_stop_after(stop))
        except KeyboardInterrupt:
            pass
    project(log, db, batch_size=batch_size)
    assert digests_of(db) == expected

"""Shared fixtures: a fresh embedded log, and a hand-built table that records through the real
Recorder (no simulator, so tests state every card they depend on)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from store_template import new_store
from table_builder import EVENING, TableBuilder, card, recorder_for

from events.log.embedded.log import EmbeddedLog

__all__ = ["START", "HandBuiltTable", "card"]

START = EVENING  # the hand-built tables' first second


class HandBuiltTable(TableBuilder):
    """A TableBuilder on a test's log, rounds numbered by the test (13:47-20.31(d))."""

    def __init__(self, log: EmbeddedLog, table_id: str = "T01") -> None:
        super().__init__(recorder_for(log), table_id)

    def play(self, round_no: int, cards: str, wagers: dict[int, int] | None = None,
             raises: dict[int, int] | None = None, racked: str | None = None) -> None:
        """A whole round: wagers, left, right, announcements, raises, middle, settlements and
        the rack (in dealing order unless `racked` says otherwise)."""
        self.round_no = round_no
        self.deal_round(cards, wagers, raises, racked=racked)
        self.round_no = None


@pytest.fixture
def log(tmp_path: Path) -> EmbeddedLog:
    # Four partitions: T01 and T03 land in partition 3, T02 in 1, so 0 and 2 stay empty.
    return EmbeddedLog(tmp_path / "log", partitions=4)


@pytest.fixture
def table(log: EmbeddedLog) -> Callable[..., HandBuiltTable]:
    """table('T01') -> a HandBuiltTable recording to this test's log."""
    return lambda table_id="T01": HandBuiltTable(log, table_id)


@pytest.fixture(scope="session")
def empty_store() -> Callable[[Path], Path]:
    """empty_store(path) -> path, holding a new store's tables and views: copied from one
    created once per worker (tests/store_template.py), so a test that projects into many fresh
    stores (a property test's examples) pays for creating the views once (projections/views.py
    ensure_views sees them current). For tests whose point is the projection, not the creation
    of a file."""
    return new_store


# --- Kafka: one real broker per session, one fresh topic per test (issue 3) ----------------


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Bootstrap address of a real broker: the one CI started (PITLOG_KAFKA_BOOTSTRAP), or one
    started here for the whole session and stopped at its end. Never skipped when Java or
    Maven are missing: deselect with `-m "not kafka"` instead."""
    from kafka_support import session_bootstrap

    with session_bootstrap(tmp_path_factory.mktemp("kafka")) as bootstrap:
        yield bootstrap


@pytest.fixture
def kafka_uri(kafka_broker: str, request: pytest.FixtureRequest) -> str:
    """kafka://BOOTSTRAP/TOPIC with a topic of this test's own (STYLE, idiom 10)."""
    from kafka_support import topic_for

    return f"kafka://{kafka_broker}/{topic_for(request.node.name)}"


# --- running the suite on several workers (pyproject: -n 3 --dist loadfile) ----------------


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test marked slow goes first (the order is the same with or without xdist): under
    pytest-xdist its module is then among the first handed to a worker, so the longest modules
    start at once instead of last (pyproject's --no-loadscope-reorder keeps this order; xdist's
    default hands out the modules with the most tests first, whatever they cost). (--dist
    loadfile keeps each module on one worker, so its module-scoped store, server or browser is
    built once; --dist loadgroup cannot do it here: xdist 3.8 marks a group by rewriting
    item._nodeid, which pytest 9 no longer reads.)"""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable

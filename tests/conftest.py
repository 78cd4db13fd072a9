"""Shared fixtures: a fresh embedded log, and a hand-built table that records through the real
Recorder (no simulator, so tests state every card they depend on)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from store_template import new_store
from table_builder import EVENING, TableBuilder, card, recorder_for

from events.log.embedded.log import EmbeddedLog

__all__ = ["START", "HandBuiltTable", "card"]

START = EVENING  # the hand-built tables' first second

# The projector's cache of bound views (projections/view_cache.py) in a folder of the test
# process's own (its children inherit it), not the user's ~/.cache; removed when it ends.
_VIEWS = tempfile.mkdtemp(prefix="pitlog-test-views-")
os.environ.setdefault("PITLOG_CACHE_DIR", _VIEWS)
atexit.register(shutil.rmtree, _VIEWS, True)


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


# The modules of the suite's longest tests, longest first (from the slowest durations each CI
# log lists: pyproject's --durations=40): each is started at once, on a worker of its own. The
# fourth is short on purpose: xdist hands a worker its next module as soon as fewer than three
# of its tests are left, so a module of one long test (test_projection_interrupted.py) always
# has a module queued behind it from the start, and that one should be short.
LONGEST_FIRST = (
    "tests/projections/test_detection.py",  # 100,000 rounds simulated, projected and scored
    "tests/projections/test_projection_interrupted.py",  # a detection per event, and resumes
    "tests/kafka/test_kafka_follower_killed.py",  # 100k events through Kafka, a follower killed
    "tests/events/test_import_contract.py",  # short: queued behind test_projection_interrupted
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules of LONGEST_FIRST first, in its order; then every test marked slow, so that
    under pytest-xdist its module is among the next handed to a worker (the order is the same
    with or without xdist; pyproject's --no-loadscope-reorder keeps it: xdist's default hands out
    the modules with the most tests first, whatever they cost). Within a module its slow tests
    come first. (--dist loadfile keeps each module on one worker, so its module-scoped store,
    server or browser is built once; --dist loadgroup cannot do it here: xdist 3.8 marks a group
    by rewriting item._nodeid, which pytest 9 no longer reads.)"""
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}

    def key(item: pytest.Item) -> tuple[int, bool]:
        return (rank.get(item.nodeid.split("::", 1)[0], len(LONGEST_FIRST)),
                item.get_closest_marker("slow") is None)

    items.sort(key=key)  # stable: otherwise in the order collected

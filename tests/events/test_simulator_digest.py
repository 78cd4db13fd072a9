"""`pitlog simulate` writes the same bytes for a seed as before the writers were made faster
(issue 19, item 3): benchmarks/results_issue19_sim_digest.json holds the SHA-256 of every
segment and index file that benchmarks/sim_digest.py wrote for three seeds, with and without
irregularities, at the code before the compiled writers. One of them is written again here;
the simulator's draws, the writers and the recorder all decide those bytes."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest
from repo_paths import REPO

BENCH = REPO / "benchmarks"


def _sim_digest():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("sim_digest", BENCH / "sim_digest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_seeded_evening_with_irregularities_writes_the_recorded_bytes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The bytes are what is checked, not their durability: no fsync (on a busy disk the
    # appends' fsyncs took 20 of this test's 24 seconds).
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    recorded = json.loads((BENCH / "results_issue19_sim_digest.json").read_text())
    name, files = _sim_digest().digest(7, 6, 60, 0.05)  # sim_digest.py's defaults
    assert name in recorded  # the same number of events
    assert len(files) == 8  # a segment and an index for each of the four partitions
    assert files == recorded[name]

"""Defaults the command line shows in its help, importable without the event model or fastavro.

`pitlog --help` builds every command's options, so their defaults must come from a module this
light: importing events/reddog/model.py alone (its dataclasses) costs more than a third of a second
on a loaded machine (issue 19).
"""

from __future__ import annotations

# `pitlog ingest`: lines per appended batch (events/recording/ingest.py). Each append pays a
# fixed cost (the log's journal and per-partition fsyncs, the id index's commit and look-ups):
# 10,000 lines take 5-6% less CPU than 2,000, for about 7 MB more memory (benchmarks/results.md,
# session 38).
BATCH_LINES = 10_000

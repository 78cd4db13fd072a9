"""Defaults the command line shows in its help, importable without the event model or fastavro.

`pitlog --help` builds every command's options, so their defaults must come from a module this
light: importing events/reddog/model.py alone (its dataclasses) costs more than a third of a second
on a loaded machine (issue 19).
"""

from __future__ import annotations

BATCH_LINES = 2000  # `pitlog ingest`: lines per appended batch (events/recording/ingest.py)

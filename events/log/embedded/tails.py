"""The writers' table heads kept beside the log, so a new writer reads only what is new.

A recorder continues each table from its last record (seq and hash chain). Without this file
every writer process read the whole log once to find those records: 1.7 CPU s at 1M events,
growing with the history, paid again by each `pitlog ingest` a device feed starts (issue 16).
`tails.cache` holds, per partition, how many records it reflects and each key's last value
among them. It is a cache, never a second truth (docs/integrity.md, "The writers' heads"):

- it is written whole to a temporary file and renamed into place, with a SHA-256 of its
  contents, so a torn or damaged file is found and ignored;
- it names the log's id and partition count, so a cache of another log is ignored;
- before it is used, each key's record is read from the log at the offset the file gives and
  must be that key's, byte for byte the value the file holds, and the record just before each
  partition's `upto` must be one of those: a log restored from an older backup, or a copy that
  went another way after the cache was written, fails that check (unless every table's last
  record before the file's end is the same in both, at the same place: then the records
  between them differ only where no table's last record is, and a writer continuing from them
  breaks a hash chain that `pitlog verify` and CHAIN_BROKEN report) and the writer reads the
  whole log as before;
- whatever fails, the writer falls back to reading the log: a bad cache costs time, never a
  wrong head.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from events.files import remove_quietly

TAILS_FILE = "tails.cache"
FORMAT = 1
# A writer saves the heads again after this many records since its last save (and on close):
# a writer killed before closing leaves at most this many records, plus what others appended,
# for the next one to read.
SAVE_EVERY_RECORDS = 50_000


@dataclass(frozen=True, slots=True)
class SavedTails:
    upto: dict[int, int]  # per partition: the records [0, upto) the values reflect
    values: dict[bytes, bytes]  # each key's last value among them
    offsets: dict[bytes, int]  # and its offset in the key's partition


def _digest(body: Mapping[str, object]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def load(folder: Path, log_id: str | None, partitions: int) -> SavedTails | None:
    """The saved heads, if the file is whole and of this log; None otherwise (never raises:
    the caller then reads the log)."""
    if log_id is None:
        return None
    try:
        saved = json.loads((folder / TAILS_FILE).read_text())
        body = saved["body"]
        if saved["sha256"] != _digest(body):
            return None
        if (body["format"], body["log_id"], body["partitions"]) != (FORMAT, log_id, partitions):
            return None
        upto = {int(p): int(n) for p, n in body["upto"].items()}
        values, offsets = {}, {}
        for k, offset, v in body["values"]:
            key = base64.b64decode(k, validate=True)
            values[key], offsets[key] = base64.b64decode(v, validate=True), int(offset)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if sorted(upto) != list(range(partitions)) or any(n < 0 for n in upto.values()):
        return None
    return SavedTails(upto, values, offsets)


def save(folder: Path, log_id: str, partitions: int, tails: SavedTails) -> None:
    """Write the heads atomically. A failure (a full disk, a read-only folder) is not the
    append's: the cache is skipped and the next writer reads the log."""
    body = {"format": FORMAT, "log_id": log_id, "partitions": partitions,
            "upto": {str(p): n for p, n in sorted(tails.upto.items())},
            "values": sorted([base64.b64encode(k).decode(), tails.offsets[k],
                              base64.b64encode(v).decode()] for k, v in tails.values.items())}
    tmp = folder / f"{TAILS_FILE}.{os.getpid()}.tmp"
    try:
        tmp.write_text(json.dumps({"body": body, "sha256": _digest(body)}))
        os.replace(tmp, folder / TAILS_FILE)
    except OSError:
        remove_quietly(tmp)

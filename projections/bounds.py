"""The value bounds of events/recording/limits.py, enforced on what the projector reads.

The Recorder refuses an out-of-bounds value before it is written, but a log may hold records
pitlog's recorder never saw: a foreign Kafka producer writing well-formed Avro of pitlog's
schemas, or an embedded log written by older code. Projected as is, a count of a million decks
or an amount of 2**62 cents made `pitlog anomalies`, `reconcile` and `report` fail (their exact
sums and probabilities overflow). docs/integrity.md, "Confidentiality and input limits": every
value accepted is one the read side can handle, so such a record is quarantined with the reason,
never projected and never dropped.

The check runs on the decoded batch's Arrow columns (a few vector comparisons per batch, whichever
decoder built them: the native, the batch and the per-record paths give the same table), with
limits.py's constants: amounts, odds, decks, times, id and text lengths, control characters in
ids, and the bounds `pitlog ingest` held alone until session 16 (seats and areas from 1, card
positions and counts a shoe can hold, a round from 0, no blank id: a seat-0 wager written around
ingest reached the ledger, where no `pitlog dispute --seat` could ask for it); the reason of
each refused row is the one limits.py's own checks give for its value, so the recorder and the
projector word and draw each bound alike.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from events.recording import limits
from events.text import UNSAFE

# The envelope's ids and times, as limits.check_envelope names them.
_IDS = (("table_id", "table"), ("shoe_id", "shoe"), ("actor", "actor"), ("event_id", "id"))
_TIMES = ("occurred_at", "recorded_at")
_PAYLOAD = limits.payload_bounds()
_RANGES = {"amount": (0, limits.MAX_AMOUNT_CENTS), "odds": (0, limits.MAX_ODDS),
           "decks": (limits.MIN_DECKS, limits.MAX_DECKS)}
_WHAT_TO_DO = ("the record was not written by pitlog's recorder, which refuses such a value: fix "
               "the producer (docs/integrity.md, Confidentiality and input limits)")


def outside(table: pa.Table) -> np.ndarray[Any, Any]:
    """Which rows of a decoded batch hold a value outside limits.py's bounds (vectorised)."""
    bad = np.zeros(table.num_rows, bool)
    names = set(table.column_names)

    def flag(hit: pa.ChunkedArray | pa.Array) -> None:
        bad[:] |= np.asarray(pc.fill_null(hit, False).to_numpy(zero_copy_only=False))

    for name, kind in _PAYLOAD.items():
        if name not in names:
            continue
        col = table.column(name)
        if kind in ("text", "id"):
            flag(pc.greater(pc.utf8_length(col), limits.MAX_TEXT_CHARS))
            if kind == "id":
                flag(_blank(col))
        elif kind == "number":
            low, high, _ = limits.NUMBER_BOUNDS[name]
            flag(pc.less(col, low) if high is None else
                 pc.or_(pc.less(col, low), pc.greater(col, high)))
        else:
            low, high = _RANGES[kind]
            flag(pc.or_(pc.less(col, low), pc.greater(col, high)))
    for name in _TIMES:
        if name in names:
            us = pc.cast(table.column(name), pa.int64())
            flag(pc.or_(pc.less(us, limits.MIN_TIME_US), pc.greater_equal(us, limits.MAX_TIME_US)))
    for name, _ in _IDS:
        if name in names:
            col = table.column(name)
            flag(pc.or_(pc.greater(pc.utf8_length(col), limits.MAX_ID_CHARS),
                        pc.match_substring_regex(col, UNSAFE.pattern)))
            # The table, shoe and actor ids (limits.check_ids); not a blank event id: the
            # writers refuse a new one, and one an older pitlog recorded is an event like
            # any other (quarantined, its table's next event would raise a SEQUENCE_GAP no
            # dealer made; two such ids of a table are DUPLICATE_EVENT, as they share it).
            if name != "event_id":
                flag(_blank(col))
    if "round_no" in names:
        flag(pc.less(table.column("round_no"), limits.ROUND_BOUNDS[0]))
    return bad


def _blank(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """limits.blank, vectorised: empty or only white space (null: no id, not a blank one).
    A row flagged here is judged again by limits.py's own check (split), so the two agree.
    utf8_is_space classifies each string in place (no trimmed copy: a third of the time)."""
    return pc.or_(pc.utf8_is_space(col), pc.equal(pc.binary_length(col), 0))


def refusal(row: dict[str, Any]) -> str | None:
    """The reason a decoded row (its columns by name) is outside the bounds, as limits.py's
    checks word it; None when it is within them."""
    try:
        limits.check_ids(row.get("table_id") or "", row.get("shoe_id"),
                         row.get("actor") or "", row.get("event_id"))
        limits.check_round(row.get("round_no"))
        for name in _TIMES:
            if row.get(name) is not None:
                limits.check_time_us(name, row[name])
        for name, kind in _PAYLOAD.items():
            if row.get(name) is not None:
                limits.check_field(name, kind, row[name])
    except limits.ValueLimitError as exc:
        return f"{row.get('event_type')} of table {row.get('table_id')!r}: {exc.reason}; " \
               f"{_WHAT_TO_DO}"
    return None


def split(table: pa.Table) -> tuple[pa.Table, list[tuple[int, int, str]]]:
    """The rows within the bounds, and (log_partition, log_offset, reason) of the rest."""
    mask = outside(table)
    if not mask.any():
        return table, []
    index = np.nonzero(mask)[0]
    rows = table.take(pa.array(index))
    for name in _TIMES:  # integer microseconds: no datetime for a time out of Python's range
        if name in rows.column_names:
            at = rows.schema.get_field_index(name)
            rows = rows.set_column(at, name, pc.cast(rows.column(name), pa.int64()))
    refused: list[tuple[int, int, str]] = []
    for i, row in zip(index.tolist(), rows.to_pylist(), strict=True):
        reason = refusal(row)
        if reason is None:
            mask[i] = False  # flagged, yet limits.py accepts it (none should): kept
        else:
            p, o = row["log_partition"], row["log_offset"]
            refused.append((p, o, reason))  # the quarantine row holds the position
    return table.filter(pa.array(~mask)), refused

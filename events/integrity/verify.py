"""`pitlog verify`: every table stream's gapless sequence and hash chain (docs/architecture.md,
principle 2; each finding and what it means: docs/integrity.md).

It reads the log through the EventLog contract only, so it checks the embedded log and Kafka
alike, batch by batch in bounded memory: per table one small state (the last hash, the highest
seq, the seqs still missing), never the events. One SHA-256 per record checks its own hash
(CHAIN_BROKEN `altered`) and, against the previous record, its link (`link`); after a record
that failed its own hash the next link is taken on trust, so one damaged record is reported
once. Only the envelope is parsed (events/wire/envelope.py), never the body.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from events.integrity import envelope_batch
from events.integrity.reading import partition_frames, partition_records
from events.log.base import EventLog, FrameBatch, FramedRead, IndexedLog, LogRecord
from events.reddog import model
from events.reddog.catalogue import BY_CODE
from events.wire import codec
from events.wire.chain import HASH_LEN
from events.wire.envelope import Envelope, EnvelopeReader

SEQUENCE_GAP = "SEQUENCE_GAP"
CHAIN_BROKEN = "CHAIN_BROKEN"
RULE = "integrity: gapless per-table sequence and hash chain (docs/architecture.md, principle 2)"
MAX_MISSING_RANGES = 1000  # per table; beyond it the count is kept, not the ranges

@dataclass(frozen=True, slots=True)
class Anomaly:
    """One integrity finding, located by log position and sequence number."""

    code: str  # SEQUENCE_GAP or CHAIN_BROKEN (docs/architecture.md's anomaly catalogue)
    kind: str  # gap | out_of_order | duplicate | altered | link | unreadable | framing |
    # misfiled | index
    table: str
    partition: int
    offset: int
    seq: int | None  # as the record says; None when it cannot be read
    expected_seq: int | None
    shoe: str | None
    round: int | None
    explanation: str
    rule: str = RULE

    @property
    def severity(self) -> str:
        """The code's severity in the catalogue (events/reddog/catalogue.py), as `pitlog
        anomalies` gives it: one definition (verify said "critical", a severity no other
        command knows)."""
        return BY_CODE[self.code].severity.value


@dataclass(slots=True)
class TableSummary:
    """One table stream as verify saw it, in log order."""

    table: str
    partition: int
    events: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    first_offset: int | None = None
    last_offset: int | None = None
    head_hash: str = ""
    missing: int = 0  # seqs below the highest never seen
    # Records of its partition the log could not return (a truncated segment): of no known
    # table, so they may be this table's, and its last seq and head hash are not its end.
    # The table said `ok` beside them, an anchor an auditor would keep (an outside review,
    # session 41).
    unreadable: int = 0
    anomalies: int = 0

    @property
    def status(self) -> str:
        return "ok" if self.anomalies == 0 and self.missing == 0 and self.unreadable == 0 \
            else "broken"

    def as_row(self) -> dict[str, Any]:
        return {"table": self.table, "partition": self.partition, "events": self.events,
                "first_seq": self.first_seq, "last_seq": self.last_seq,
                "first_offset": self.first_offset, "last_offset": self.last_offset,
                "missing": self.missing, "unreadable": self.unreadable,
                "anomalies": self.anomalies, "head_hash": self.head_hash, "status": self.status}


@dataclass(slots=True)
class VerifyReport:
    tables: list[TableSummary]
    anomalies: list[Anomaly]  # the first `limit` found, in log order
    anomalies_total: int
    records: int
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.anomalies_total == 0 and all(t.status == "ok" for t in self.tables)


@dataclass(slots=True)
class _Stream:
    summary: TableSummary
    key: bytes = b""  # the raw key (the summary's name is escaped for printing)
    high: int = 0  # the highest seq seen
    last_hash: bytes = model.GENESIS_HASH
    last_seq: int | None = None
    last_offset: int | None = None
    resync: bool = False  # the previous record failed its own hash: trust the next link
    missing: list[list[int]] = field(default_factory=list)  # [lo, hi] ranges, log order
    missing_overflow: int = 0


# --- the verifier ----------------------------------------------------------------------------


class _Verifier:
    def __init__(self, limit: int) -> None:
        self.envelopes = EnvelopeReader(codec.registry())
        self.streams: dict[bytes, _Stream] = {}
        self.keys_by_partition: dict[int, set[bytes]] = {}
        self.unreadable: dict[int, int] = {}  # per partition: records the log could not return
        self.anomalies: list[Anomaly] = []
        self.total = 0
        self.records = 0
        self.limit = limit

    def _report(self, st: _Stream | None, code: str, kind: str, rec: LogRecord,
                env: Envelope | None, expected: int | None, explanation: str,
                table: str | None = None) -> None:
        self.total += 1
        if st is not None:
            st.summary.anomalies += 1
        if len(self.anomalies) < self.limit:
            self.anomalies.append(Anomaly(
                code, kind, table or (st.summary.table if st else "?"), rec.partition,
                rec.offset, env.seq if env else None, expected,
                env.shoe_id if env else None, env.round_no if env else None, explanation))

    def _envelope(self, value: bytes) -> tuple[Envelope | None, str]:
        try:
            return self.envelopes.read(value), ""
        except ValueError as exc:
            return None, str(exc)

    def _resplice(self, rec: LogRecord) -> tuple[bytes, bytes, Envelope] | None:
        """A damaged key length moves the key/value boundary but keeps key + value intact:
        find a known table of this partition whose key starts the bytes and whose event then
        reads as that table's."""
        body = rec.key + rec.value
        for key in sorted(self.keys_by_partition.get(rec.partition, ()), key=len, reverse=True):
            if key != rec.key and body.startswith(key):
                env, _ = self._envelope(body[len(key):])
                if env is not None and env.table_id.encode() == key:
                    return key, body[len(key):], env
        return None

    def check(self, rec: LogRecord) -> None:
        self.records += 1
        key, value = rec.key, rec.value
        env, why = self._envelope(value)
        framing = ""
        if env is None or env.table_id.encode() != key:
            spliced = self._resplice(rec)
            if spliced is not None:
                framing = (f"the record's framing is damaged: its key reads as {rec.key!r}, "
                           f"but its bytes are table {printable(spliced[0])}'s event")
                key, value, env = spliced
        st = self.streams.get(key)
        if st is None:
            table = printable(key)
            st = self.streams[key] = _Stream(TableSummary(table, rec.partition), key)
            self.keys_by_partition.setdefault(rec.partition, set()).add(key)
        self._check_chain(st, rec, value, env, why, framing)
        self._check_seq(st, rec, env)
        seq = st.high if env is None else env.seq  # an unreadable record is assumed in place
        s = st.summary
        s.events += 1
        if s.first_offset is None:
            s.first_offset, s.first_seq = rec.offset, seq
        s.last_offset = st.last_offset = rec.offset
        s.last_seq = st.last_seq = seq

    def _check_chain(self, st: _Stream, rec: LogRecord, value: bytes, env: Envelope | None,
                     why: str, framing: str) -> None:
        stored = bytes(value[-HASH_LEN:]) if len(value) > HASH_LEN else b""
        kind, explanation = "", ""
        body = memoryview(value)[:-HASH_LEN]
        if env is None:
            h = hashlib.sha256(st.last_hash)
            h.update(body)
            if not stored or h.digest() != stored:  # else: intact, in a schema we lack
                kind, explanation = "unreadable", f"the record is not a readable event ({why})"
        else:
            h = hashlib.sha256(env.prev_hash)
            h.update(body)
            if h.digest() != stored:
                kind, explanation = "altered", ("its bytes do not match its own hash: the event "
                                                "was altered after it was recorded")
            elif not st.resync and env.prev_hash != st.last_hash:
                where = (f"offset {st.last_offset} (seq {st.last_seq})" if st.summary.events
                         else "the genesis hash (it is the table's first record)")
                kind, explanation = "link", (
                    f"its prev_hash is not the hash of the table's previous record at {where}: "
                    f"a record was deleted, inserted or moved before it, or that one rewritten")
            elif env.table_id.encode() != st.key:
                kind, explanation = "misfiled", (
                    f"the event says table {printable(env.table_id.encode())} but the "
                    f"record's key says {st.summary.table}")
        # Its own hash failed: the next record's link cannot be checked against this one.
        st.resync = kind in ("altered", "unreadable")
        if framing:
            kind, explanation = "framing", framing + (f"; also {explanation}" if kind else "")
        if kind:
            self._report(st, CHAIN_BROKEN, kind, rec, env, st.high + 1, explanation)
        st.last_hash = stored

    def _check_seq(self, st: _Stream, rec: LogRecord, env: Envelope | None) -> None:
        expected = st.high + 1
        if env is None:
            st.high = expected  # unreadable: assume it holds the next seq rather than guess a gap
            return
        seq = env.seq
        if seq == expected:
            st.high = seq
        elif seq > expected:
            n = seq - expected
            self._report(st, SEQUENCE_GAP, "gap", rec, env, expected,
                         f"seq {seq} follows seq {st.high}: {n} missing "
                         f"({expected}{'' if n == 1 else f'..{seq - 1}'})")
            if len(st.missing) < MAX_MISSING_RANGES:
                st.missing.append([expected, seq - 1])
            else:
                st.missing_overflow += n
            st.high = seq
        elif _take_missing(st.missing, seq):
            self._report(st, SEQUENCE_GAP, "out_of_order", rec, env, expected,
                         f"seq {seq} arrives after seq {st.high}: out of order")
        else:
            self._report(st, SEQUENCE_GAP, "duplicate", rec, env, expected,
                         f"seq {seq} appears again after seq {st.high}: a duplicate or a replay")

    def check_frames(self, fb: FrameBatch, fast_fps: Any) -> None:
        """`check` for every record of a batch of bytes, without an object per record (issue 19,
        item 6). Per table, the batch's records that continue its stream as expected (a regular
        envelope, events/integrity/envelope_batch.py; the next seq; the link; their own hash) only
        move the stream on, checked with numpy; from a table's first record that does not,
        its records go through `check`, in log order, so every finding is made by the same
        code either way. No finding comes from the fast records, so taking them first changes
        nothing: each stream's state still moves in its own log order."""
        n = len(fb)
        if len(fb.buf) < HASH_LEN:  # no whole event in it: nothing for the fast path
            for k in range(n):
                self.check(fb.record(k))
            return
        eb = envelope_batch.read_batch(fb, fast_fps)
        buf = fb.buf
        kid, keys = envelope_batch.key_ids(fb)
        good = eb.regular.copy()
        at = np.flatnonzero(good)
        # chain.verify_split's check, written out over the buffer: prev_hash is read from the
        # message itself here, and slicing the three parts straight from the buffer made the
        # whole of check_frames ~15% cheaper than building verify_each's two lists (measured
        # old beside new in one run, session 10; benchmarks/results.md, verify).
        sha256, h = hashlib.sha256, HASH_LEN
        good[at] = [sha256(buf[p:p + h] + buf[v:e - h]).digest() == buf[e - h:e]
                    for p, v, e in zip(eb.prev_at[at].tolist(), fb.value_at[at].tolist(),
                                       fb.end[at].tolist(), strict=True)]
        b = np.frombuffer(buf, np.uint8)
        span = np.arange(HASH_LEN)
        stored = b[np.clip(fb.end - HASH_LEN, 0, len(b) - HASH_LEN)[:, None] + span]
        prev = b[np.clip(eb.prev_at, 0, len(b) - HASH_LEN)[:, None] + span]
        order = envelope_batch.grouped(kid, len(keys))
        later = np.flatnonzero(kid[order][1:] == kid[order][:-1]) + 1  # not a table's first
        cur, before = order[later], order[later - 1]
        good[cur] &= ((prev[cur] == stored[before]).all(axis=1)
                      & (eb.seq[cur] == eb.seq[before] + 1))
        slow: list[int] = []
        seqs = eb.seq
        firsts = np.flatnonzero(np.r_[True, kid[order][1:] != kid[order][:-1]]).tolist()
        for g, first in enumerate(firsts):
            members = order[first:firsts[g + 1] if g + 1 < len(firsts) else n]
            head = int(members[0])
            st = self.streams.get(keys[kid[head]])
            p = int(eb.prev_at[head])
            if (st is None and good[head] and seqs[head] == 1
                    and buf[p:p + HASH_LEN] == model.GENESIS_HASH):
                # A table's first event, intact: `check` makes its stream and can find
                # nothing wrong with it, so checking it ahead of the batch's slow records
                # changes no finding's order; the rest of the table's records may go fast.
                self.check(fb.record(head))
                members = members[1:]
                if not len(members):
                    continue
                head = int(members[0])
                st = self.streams[keys[kid[head]]]
                p = int(eb.prev_at[head])
            fast = 0
            if (st is not None and not st.resync and good[head] and seqs[head] == st.high + 1
                    and buf[p:p + HASH_LEN] == st.last_hash):
                bad = np.flatnonzero(~good[members])
                fast = int(bad[0]) if len(bad) else len(members)
            if fast and st is not None:  # fast > 0 only with a stream (above)
                last = int(members[fast - 1])
                st.high = st.last_seq = int(seqs[last])
                e = int(fb.end[last])
                st.last_hash = buf[e - HASH_LEN:e]
                summary = st.summary
                summary.events += fast
                summary.last_offset = st.last_offset = fb.offset + last
                summary.last_seq = st.last_seq
                self.records += fast
            slow.extend(members[fast:].tolist())
        for k in sorted(slow):
            self.check(fb.record(k))

    def index_problem(self, partition: int, offset: int, what: str) -> None:
        """The embedded log's index disagrees with its segment (check_index): verify reads the
        segment itself, so every table is still checked, and says so."""
        rec = LogRecord(partition, offset, b"", b"")
        self._report(None, CHAIN_BROKEN, "index", rec, None, None, what, table="?")

    def unreadable_record(self, partition: int, offset: int, reason: str) -> None:
        """The log itself could not return this record (its frame lies past the end, etc.)."""
        self.records += 1
        self.unreadable[partition] = self.unreadable.get(partition, 0) + 1
        rec = LogRecord(partition, offset, b"", b"")
        self._report(None, CHAIN_BROKEN, "unreadable", rec, None, None,
                     f"the log cannot return this record ({reason})", table="?")

    def report(self) -> VerifyReport:
        tables = []
        for st in self.streams.values():
            st.summary.missing = sum(hi - lo + 1 for lo, hi in st.missing) + st.missing_overflow
            st.summary.head_hash = st.last_hash.hex()
            st.summary.unreadable = self.unreadable.get(st.summary.partition, 0)
            tables.append(st.summary)
        tables.sort(key=lambda s: (s.table, s.partition))
        return VerifyReport(tables, self.anomalies, self.total, self.records)


def printable(key: bytes) -> str:
    """A table name fit for a terminal or a report: invalid UTF-8 and every unprintable
    character (an ESC sequence in a forged key) escaped as \\xNN or \\uNNNN."""
    text = key.decode("utf-8", "backslashreplace")
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def _take_missing(ranges: list[list[int]], seq: int) -> bool:
    """Remove seq from the missing ranges if it is in one."""
    for i, (lo, hi) in enumerate(ranges):
        if lo <= seq <= hi:
            if lo == hi:
                del ranges[i]
            elif seq == lo:
                ranges[i][0] = lo + 1
            elif seq == hi:
                ranges[i][1] = hi - 1
            else:
                ranges[i:i + 1] = [[lo, seq - 1], [seq + 1, hi]]
            return True
    return False


def verify_records(records: Iterable[LogRecord], *, limit: int = 10_000) -> VerifyReport:
    """The same checks over records from anywhere (in log order within each partition)."""
    started = time.perf_counter()
    verifier = _Verifier(limit)
    for rec in records:
        verifier.check(rec)
    report = verifier.report()
    report.seconds = time.perf_counter() - started
    return report


def verify_log(log: EventLog, *, limit: int = 10_000, max_batch: int = 5000,
               progress: Callable[[int], None] | None = None) -> VerifyReport:
    """Check every table stream of `log`; keep the first `limit` anomalies (all are counted)."""
    started = time.perf_counter()
    verifier = _Verifier(limit)
    # The embedded log's .idx is never trusted: its view is rebuilt from the segment, and
    # where they disagree is reported (a deleted .idx must not hide a table).
    if isinstance(log, IndexedLog):
        for partition, offset, what in log.check_index():
            verifier.index_problem(partition, offset, what)
    ends = log.end_offsets()
    if isinstance(log, FramedRead):  # batches of bytes, not an object per record (issue 19)
        fast_fps = envelope_batch.fingerprints(verifier.envelopes.fast)
        for partition in sorted(ends):
            for fb in partition_frames(log, partition, ends[partition], max_batch,
                                       verifier.unreadable_record):
                verifier.check_frames(fb, fast_fps)
                if progress is not None:
                    progress(verifier.records)
    else:
        for partition in sorted(ends):
            for rec in partition_records(log, partition, ends, max_batch,
                                         verifier.unreadable_record):
                verifier.check(rec)
                if progress is not None and verifier.records % max_batch == 0:
                    progress(verifier.records)
    report = verifier.report()
    report.seconds = time.perf_counter() - started
    return report

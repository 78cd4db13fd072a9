"""`pitlog ingest`: JSON lines from card-reading shoes, shufflers and dealer terminals into events.

The line format is documented in docs/ingest.md and parsed in events/recording/device_line.py. A
line's `seq` is the sending device's own counter for that table (per `actor` and `table`): it must
increase, so a line that arrives late or twice is refused here. Across runs, a line already in the
log (its event id, given or derived from device, table and device seq, is in the log's event id
index, events/recording/event_ids.py) is reported as already recorded and skipped.

Only *structurally* bad lines are refused (docs/architecture.md, principle 1): malformed JSON, an
unknown
type, a missing or unknown field, a value of the wrong type, an invalid card, a device
sequence out of order. A line that breaks a game rule (a raise after "Raises closed") is
structurally fine and is recorded: the read side judges it. Each refused line is reported
and written to the quarantine file with its line number, raw text and reason; never dropped.

Memory is bounded: lines are read one at a time (each at most MAX_LINE_BYTES), the recorder
holds at most one batch, and the only other state is one counter per device and table.
"""

from __future__ import annotations

import base64
import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from events.errors import NO_ROOM, ConcurrencyError, EncodeError, IngestError
from events.log.base import DEFAULT_DATA_DIR, ConditionalAppend, EventLog
from events.recording.defaults import BATCH_LINES
from events.recording.device_line import DeviceLine, LineRejected, parse_line
from events.recording.event_ids import EventIdIndex, derived_event_id, event_content, index_path
from events.recording.limits import ValueLimitError
from events.recording.recorder import Recorder
from events.wire.codec import micros

__all__ = ["BadLine", "IngestReport", "LineRejected", "default_quarantine", "ingest",
           "parse_line"]

MAX_LINE_BYTES = 64 * 1024
MAX_RETRIES = 20  # conflicts: another writer of the same table appended first


@dataclass(frozen=True, slots=True)
class BadLine:
    """A refused line: where, why, what to do, and its exact bytes."""

    line: int
    reason: str
    hint: str
    raw: bytes
    source: str = ""  # the file (or <stdin>) it was read from

    @property
    def message(self) -> str:
        where = f"{self.source} line" if self.source else "line"
        return f"{where} {self.line}: {self.reason}; {self.hint}"


@dataclass(slots=True)
class IngestReport:
    source: str
    log: str
    quarantine: str
    lines: int = 0
    recorded: int = 0
    rejected: int = 0
    device_seq_gaps: int = 0  # a device's seq jumped: lines may be missing upstream
    already_recorded: int = 0  # lines whose event id the log holds already: skipped
    tables: set[str] = field(default_factory=set)
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        """0: every line recorded; 1: at least one line rejected (docs/ingest.md)."""
        return 1 if self.rejected else 0

    def as_row(self) -> dict[str, Any]:
        return {"source": self.source, "lines": self.lines, "recorded": self.recorded,
                "rejected": self.rejected, "tables": len(self.tables),
                "device_seq_gaps": self.device_seq_gaps,
                "already_recorded": self.already_recorded, "quarantine": self.quarantine,
                "log": self.log, "lines_per_second": round(self.lines / self.seconds)
                if self.seconds else None}


# --- a whole input --------------------------------------------------------------------------


def default_quarantine(log_uri: str) -> Path:
    """Next to the log: `pitlog-data/log` -> `pitlog-data/log-quarantine.jsonl`. A Kafka log
    has no folder: `pitlog-data/kafka-TOPIC-quarantine.jsonl`."""
    if log_uri.startswith("kafka://"):
        topic = log_uri.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0]
        return DEFAULT_DATA_DIR / f"kafka-{topic}-quarantine.jsonl"
    folder = Path(log_uri.removeprefix("file://"))
    return folder.parent / f"{folder.name}-quarantine.jsonl"


def _lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, the line's bytes without the LF that ends it, too long?), one line in
    memory at a time. A CR before the LF is the line's own and stays: the quarantine keeps the
    line as sent (docs/ingest.md, "The quarantine file"). Stripping every trailing CR and LF
    made a line of only a CR (the second line of the bytes a CR LF CR LF b) an entry with raw ""
    (an outside review, session 42)."""
    n = 0
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        n += 1
        too_long = len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n")
        if too_long:
            while True:  # skip the rest of the line without holding it
                rest = stream.readline(MAX_LINE_BYTES)
                if not rest or rest.endswith(b"\n"):
                    break
        yield n, raw[:-1] if raw.endswith(b"\n") else raw, too_long


class _Quarantine:
    """Refused lines, appended as JSON lines: an audit record too, so never truncated."""

    def __init__(self, path: Path, source: str) -> None:
        self.path, self.source = path, source
        self.file: IO[str] | None = None

    def add(self, bad: BadLine) -> None:
        try:
            self._write(bad)
        except OSError as exc:
            raise self.failed(exc) from exc

    def failed(self, exc: OSError) -> IngestError:
        """A quarantine that cannot be written: said before the batch's lines are recorded
        (ingest's commit), so that nothing refused is lost and nothing good is half sent."""
        # What to do by the machine's answer: "free some space" was said of every failure,
        # a refused permission too (a review, session 41).
        todo = ("free some space or pass --quarantine elsewhere" if exc.errno in NO_ROOM else
                "pass --quarantine a file you may write")
        return IngestError(f"cannot write the quarantine file {self.path} "
                           f"({exc.strerror or exc}): this batch's lines were not recorded; "
                           f"{todo}, then send the file again (the lines recorded before are "
                           f"found recorded)")

    def _write(self, bad: BadLine) -> None:
        if self.file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.file = self.path.open("a", encoding="utf-8")
        entry: dict[str, Any] = {
            "source": self.source, "line": bad.line, "reason": bad.reason,
            "raw": bad.raw.decode("utf-8", "replace"),
            "quarantined_at": datetime.now(UTC).isoformat()}
        try:
            bad.raw.decode("utf-8")
        except UnicodeDecodeError:
            entry["raw_base64"] = base64.b64encode(bad.raw).decode()  # the exact bytes
        self.file.write(json.dumps(entry) + "\n")

    def sync(self) -> None:
        if self.file is not None:
            self.file.flush()
            os.fsync(self.file.fileno())

    def close(self) -> None:
        if self.file is not None:
            self.sync()
            self.file.close()


def refuse_reading_the_quarantine(stream: IO[bytes], source: str, quarantine: Path) -> None:
    """IngestError, before anything is read or written, when the lines come from the very file
    their refusals would be appended to (the quarantine itself re-sent, or named as its own
    --quarantine; a link or standard input redirected from it too): each refused line would be
    read back, refused again and appended again, without end (an outside review, session 37:
    1.4 GB in 10 s), and a device's own file would be altered."""
    try:
        same = os.path.samestat(os.fstat(stream.fileno()), os.stat(quarantine))
    except (OSError, AttributeError, ValueError):  # no quarantine yet, or a stream of no file
        return
    if same:
        raise IngestError(f"{source} is the quarantine file these lines' refusals would be "
                          f"appended to ({quarantine}): nothing was read or recorded. To send "
                          f"refused lines again, put each entry's raw line in a file of its "
                          f"own (jq -r .raw {quarantine} > resend.jsonl), fix them there and "
                          f"ingest that file; or pass --quarantine another file")


_ENTRY_KEYS = frozenset({"source", "line", "reason", "raw", "quarantined_at"})


def _is_quarantine_entry(raw: bytes) -> bool:
    """A line the quarantine wrote (_Quarantine._write: its keys, no `type`), never a device's.
    Read only for a refused line, and only when its text names the keys."""
    if b'"quarantined_at"' not in raw or b'"raw"' not in raw:
        return False
    try:
        obj = json.loads(raw)
    except ValueError:
        return False
    return isinstance(obj, dict) and _ENTRY_KEYS <= obj.keys() and "type" not in obj


def _quarantine_fed(n: int, source: str, quarantine: Path) -> IngestError:
    """A quarantine's entries sent as device lines (a pipe from the quarantine file itself,
    which refuse_reading_the_quarantine cannot see, fed each refusal back without end; a
    second outside review, session 37). The run stops at the first one."""
    return IngestError(f"{source} line {n} is an entry of a quarantine file (source, line, "
                       f"reason, raw), not a device line: ingest stopped there, the lines "
                       f"before it judged and recorded or quarantined ({quarantine}). To send "
                       f"refused lines again, send their raw lines (jq -r .raw QUARANTINE > "
                       f"resend.jsonl), fixed")


def ingest(stream: IO[bytes], log: EventLog, *, source: str, quarantine: Path,
           on_reject: Callable[[BadLine], None] | None = None,
           now: Callable[[], datetime] | None = None,
           batch_lines: int = BATCH_LINES,
           progress: Callable[[int], None] | None = None) -> IngestReport:
    """Record every good line of `stream` through the Recorder; quarantine every bad one.
    `progress(lines)` is called after each batch is recorded, with the lines read so far."""
    refuse_reading_the_quarantine(stream, source, quarantine)
    started = time.perf_counter()
    report = IngestReport(source, log.uri, str(quarantine))
    # An id index this run makes goes again if it appends nothing to a log that held nothing
    # (EventIdIndex.discard): an ingest of refused lines only leaves the log's folder as it
    # was. One made by reading a log's records (one `simulate` wrote, a topic) is kept for the
    # next run, which would read them all again (a second read, session 41).
    made_index, appended = not index_path(log).exists(), False
    # Flushed here, to retry conflicts. `now` None: the recorder's own clock (integer micros).
    if isinstance(log, ConditionalAppend):
        # The log's own heads first: reading them recovers the log, or refuses a damaged one
        # with the writer's Error, before the index reads anything.
        recorder = Recorder(log, batch_size=2**62, now=now)
        ids = EventIdIndex(log)
    else:
        # A log that keeps no heads of its own (Kafka without fencing) gets them from the
        # index, current with it: its records read since, not the whole topic (issue 16).
        ids = EventIdIndex(log)
        try:
            recorder = Recorder(log, batch_size=2**62, now=now, heads=ids.heads())
        except BaseException:
            ids.close()
            raise
    try:
        made_index = made_index and not any(log.end_offsets().values())
    except BaseException:
        ids.close()
        raise
    # Each device's last seq accepted (recorded, or found recorded before) per table: the
    # order check runs against it, and a line refused when it is recorded (an amount beyond
    # its bound, a game rule) uses no seq, so the device can send it again corrected under the
    # same seq (docs/ingest.md).
    accepted: dict[tuple[str, str], int] = {}
    # The batch's lines in file order: parsed, or refused by parsing (reason, hint). Each is
    # judged in commit(), in that order, so refusals are reported in file order and the order
    # check sees what was recorded; event ids are looked up a batch at a time (one query).
    candidates: list[tuple[int, bytes, DeviceLine | None, str, str]] = []
    bad_lines = _Quarantine(quarantine, source)

    def reject(n: int, raw: bytes, reason: str, hint: str) -> None:
        bad = BadLine(n, reason, hint, raw, source)
        report.rejected += 1
        bad_lines.add(bad)
        if on_reject is not None:
            on_reject(bad)

    origin: dict[int, tuple[int, bytes]] = {}  # a batch's lines: their number and bytes

    def sync() -> None:
        try:
            bad_lines.sync()  # the refused lines on disk before the good ones are recorded
        except OSError as exc:
            raise bad_lines.failed(exc) from exc

    def still_new(lines: list[DeviceLine]) -> list[DeviceLine]:
        """Of lines about to be recorded again after another writer appended to their
        tables, those the log does not hold now: that writer may have recorded these very
        lines (the same file sent by two ingests at once), and the look-up before the first
        attempt did not see them. The index reads what it appended from the log first."""
        ids.catch_up()
        keys = [(line.table, line.event_id or "") for line in lines]
        known = ids.recorded_many(keys)
        recorded = ids.contents_at(at for at in known.values() if at is not None)
        fresh: list[DeviceLine] = []
        for line, key in zip(lines, keys, strict=True):
            if key not in known:
                fresh.append(line)
                continue
            at = known[key]
            was = recorded.get(at) if at is not None else None
            if was is not None and was != _content(line):
                reject(*origin[id(line)], *_other_content(line))
            else:
                report.already_recorded += 1
        sync()
        return fresh

    def commit() -> None:
        """Judge the batch's lines in file order: record those the log does not hold yet,
        refuse the rest with their reasons; then flush."""
        nonlocal appended
        keys = [(line.table, line.event_id or "") for _, _, line, _, _ in candidates
                if line is not None]
        known = ids.recorded_many(keys)
        recorded = ids.contents_at(at for at in known.values() if at is not None)
        twice = {k for k, n in Counter(keys).items() if n > 1}
        batch: list[DeviceLine] = []
        in_batch: dict[tuple[str, str], tuple[object, ...]] = {}  # recorded lines' contents
        for n, raw, line, reason, hint in candidates:
            if line is None:
                reject(n, raw, reason, hint)
                continue
            device = (line.actor, line.table)
            try:
                last = _check_order(line, accepted)
            except LineRejected as exc:
                reject(n, raw, exc.reason, exc.hint)
                continue
            key = (line.table, line.event_id or "")
            if key in known or key in in_batch:
                at = known.get(key)
                was = in_batch[key] if key in in_batch else (
                    recorded.get(at) if at is not None else None)
                if was is not None and was != _content(line):
                    # The same id, other content: not the line sent again, and not to be
                    # dropped as if it were (docs/ingest.md, "Lines sent again").
                    reject(n, raw, *_other_content(line))
                    continue
                report.already_recorded += 1  # a re-sent line: recorded once, not again
                accepted[device] = line.seq
                continue
            try:
                _record(recorder, line)
            except (LineRejected, ValueLimitError) as exc:
                reject(n, raw, exc.reason, exc.hint)
                continue
            except EncodeError as exc:
                reject(n, raw, f"not encodable ({exc})", "check the values against the schema")
                continue
            if key in twice:  # the same id again later in this batch: recorded once, as above
                in_batch[key] = _content(line)
            report.device_seq_gaps += bool(last and line.seq > last + 1)
            accepted[device] = line.seq
            batch.append(line)
            origin[id(line)] = (n, raw)
        candidates.clear()
        sync()
        appended = appended or bool(batch)  # before: an append that fails may have landed some
        positions, batch = _flush(recorder, batch, still_new)
        origin.clear()
        ids.catch_up([(line.table, line.event_id or "") for line in batch], positions)
        report.recorded += len(batch)
        report.tables.update(x.table for x in batch)
        if progress is not None:
            progress(report.lines)

    try:
        for n, raw, too_long in _lines(stream):
            report.lines += 1
            if too_long:
                candidates.append((n, raw, None, f"line longer than {MAX_LINE_BYTES} bytes "
                                   "(first ones kept)",
                                   "a device line is one small JSON object: check the sender"))
            elif not raw.strip():
                candidates.append((n, raw, None, "empty line", "remove it or send an event"))
            else:
                try:
                    # The line's own `id`, else one derived from its device, table and device
                    # seq: a line re-sent in a later run then has the same id, and is found
                    # recorded.
                    # parsed without the \r of a CRLF line end, as before; quarantined with it
                    line = parse_line(raw.rstrip(b"\r"), derived_event_id)
                    candidates.append((n, raw, line, "", ""))
                except LineRejected as exc:
                    if _is_quarantine_entry(raw):
                        commit()  # the lines before it judged, recorded or quarantined
                        raise _quarantine_fed(n, source, quarantine) from None
                    candidates.append((n, raw, None, exc.reason, exc.hint))
            if len(candidates) >= batch_lines:
                commit()
        commit()
    finally:
        try:
            bad_lines.close()
        except OSError:
            pass  # raised already by add or commit, naming the file
        if made_index and not appended:
            ids.discard()
        else:
            ids.close()
    report.seconds = time.perf_counter() - started
    return report


def _check_order(line: DeviceLine, last_seq: dict[tuple[str, str], int]) -> int:
    """The device's last accepted seq for this table; LineRejected unless this one is above."""
    last = last_seq.get((line.actor, line.table), 0)
    if line.seq <= last:
        raise LineRejected(
            f"sequence out of order: {line.actor} seq {line.seq} for table {line.table} "
            f"after seq {last}", "a device's seq must increase: resend its lines in order "
                                 "(a line sent twice is refused too)")
    return last


def _other_content(line: DeviceLine) -> tuple[str, str]:
    """Why a line whose event id is recorded with other content is refused, and what to do."""
    return (f"event id {line.event_id} of table {line.table} was recorded with other content",
            "a line sent again must be the same line: give a new event its own id (or device "
            "seq)")


def _content(line: DeviceLine) -> tuple[object, ...]:
    """event_ids.event_content of what the line records (read only for a line whose id is
    recorded already: the hot path never pays for it)."""
    return event_content(line.shoe, line.round_no, micros(line.at), line.actor, line.event)


def _record(recorder: Recorder, line: DeviceLine) -> None:
    # line.at is in UTC (parse_line converts it): integer micros, what the writer encodes.
    recorder.record_us(line.table, line.event, shoe_id=line.shoe, round_no=line.round_no,
                       actor=line.actor, occurred_us=micros(line.at), event_id=line.event_id)


def _flush(recorder: Recorder, batch: list[DeviceLine],
           still_new: Callable[[list[DeviceLine]], list[DeviceLine]]
           ) -> tuple[list[tuple[int, int]], list[DeviceLine]]:
    """Another writer of one of these tables may append first: the recorder then drops the
    batch and reloads its heads, and the lines still new (`still_new`: that writer may have
    recorded some of them) are recorded again on top (issue 6). Between attempts, a random and
    growing pause, so two writers in step stop colliding. Returns where the last attempt's
    append put the lines it recorded, in order, and the lines this call recorded."""
    kept: list[DeviceLine] = []  # recorded by an attempt that conflicted on other tables
    for attempt in range(MAX_RETRIES + 1):
        try:
            return recorder.flush(), kept + batch
        except ConcurrencyError as exc:
            if attempt == MAX_RETRIES:
                raise
            # Tables the conflict did not stop are recorded (Kafka commits each table on its
            # own): only the others' lines are recorded again, or theirs would be twice.
            done = {key.decode() for key in exc.recorded}
            kept += [line for line in batch if line.table in done]
            # Recorded again without this look, two ingests of one file recorded 40% of its
            # lines twice (an outside review, session 41).
            batch = still_new([line for line in batch if line.table not in done])
            time.sleep(random.uniform(0, 0.002 * 2 ** min(attempt, 8)))
            for line in batch:
                _record(recorder, line)
    raise AssertionError("unreachable: the last attempt returns or raises")

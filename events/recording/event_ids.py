"""The event ids already in a log, per table, for `pitlog ingest` to refuse a line twice.

Why: a device re-sends its lines after a failure or a restart, and the device `seq` check of
events/recording/ingest.py lasts one run. A line's event id (its `id`, or one derived from its
device, table and device seq: `derived_event_id`) is looked up here; one already recorded is
reported as such and not recorded again (issue 14).

The index is a SQLite file beside the log (`event-ids.sqlite` in the embedded log's folder;
for Kafka `pitlog-data/kafka-TOPIC-event-ids.sqlite`). It is a cache of the log, never a
second truth: it remembers up to which offset of each partition it has read, with the last
record's digest and the log's id (as the projector's checkpoints do), and at each use reads
only the records appended since. So opening it costs one look per partition, not the history;
only the first use on a log indexes what is already there, once. A log replaced or restored
from a backup fails the digest check, and the index is rebuilt from the log.

Two writers sending the same line at the same instant can both record it (the lookup and the
append are not one transaction): the read side flags that as DUPLICATE_EVENT.

The index also keeps each table's last record read (`heads`: its seq and chain hash), for the
recorder of a log that keeps no heads of its own (a Kafka topic without fencing, where the
heads were a read of the whole topic by every `pitlog ingest`, issue 16). They are current
with the index's `upto`, so a run reads only the records appended since. A table whose last
record is not a pitlog event (a foreign producer's), or was appended by this index's own
writer without being read back (the embedded log's fast path below, which keeps heads of its
own), has no known head, and the recorder then reads the log (`heads` returns None).
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
import time
import uuid
from collections.abc import Collection, Iterable, Sequence
from contextlib import closing
from pathlib import Path

from events.errors import LogCorruptError, LogError
from events.log.base import DEFAULT_DATA_DIR, EventLog, LocalFolder, LogRecord, record_digest
from events.recording.heads import TableHead, head_of
from events.wire import codec

# Device lines without an `id` get a name-based UUID (RFC 4122 v5) of (table, actor, seq): the
# same line re-sent has the same id, whichever run sends it.
_LINE_NAMESPACE = uuid.UUID("6f1c1a52-7a43-5d3e-9a51-3f0c2b1d1e14")
_NAMESPACE_BYTES = _LINE_NAMESPACE.bytes

_DDL = (
    # With where the event recorded under each id is in the log (log_partition, log_offset;
    # NULL: not known), so a line sent again under a recorded id is compared with what was
    # recorded (ingest). In the ids' own rows: with a table of its own (and a wider text
    # check since narrowed) ingest ran at 0.84x of a9a7998's events per CPU second, with
    # neither at 0.97x (benchmarks/results.md, session 32). An older pitlog cannot write this
    # table (two values a row): delete the file after going back to one; it is rebuilt.
    "CREATE TABLE IF NOT EXISTS ids (table_id BLOB NOT NULL, event_id TEXT NOT NULL, "
    "log_partition INTEGER, log_offset INTEGER, PRIMARY KEY (table_id, event_id)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS upto (log_partition INTEGER PRIMARY KEY, next_offset INTEGER "
    "NOT NULL, last_offset INTEGER, last_digest BLOB, log_id TEXT)",
    # Each table's last record read (its seq and chain hash; NULL: not a pitlog event, or not
    # read back), for a recorder on a log that keeps no heads of its own (module docstring).
    "CREATE TABLE IF NOT EXISTS heads (table_id BLOB PRIMARY KEY, log_partition INTEGER NOT "
    "NULL, log_offset INTEGER NOT NULL, seq INTEGER, hash BLOB) WITHOUT ROWID",
)


def derived_event_id(table: str, actor: str, device_seq: int) -> str:
    """uuid.uuid5(_LINE_NAMESPACE, ...) spelled out: the same string at a quarter of the cost
    (it runs once a line): the SHA-1's first 32 hex digits, the version digit 5 in place of
    the 13th and the 17th's top two bits the RFC 4122 variant (10)."""
    x = hashlib.sha1(_NAMESPACE_BYTES + f"{table}\x00{actor}\x00{device_seq}".encode()
                     ).hexdigest()
    return f"{x[:8]}-{x[8:12]}-5{x[13:16]}-{_VARIANT[x[16]]}{x[17:20]}-{x[20:32]}"


_VARIANT = {d: "89ab"[int(d, 16) & 3] for d in "0123456789abcdef"}  # 10xx: 8, 9, a or b


def event_content(shoe: str | None, round_no: int | None, occurred_us: int, actor: str,
                  event: object) -> tuple[object, ...]:
    """What an event says, apart from where and when it was recorded (its table's seq, chain
    link and recorded_at): the same line sent twice has equal contents, a line with other
    content under the same event id does not (`event`: a model dataclass, compared by field)."""
    return (shoe, round_no, occurred_us, actor, event)


def record_content(value: bytes) -> tuple[object, ...] | None:
    """event_content of an encoded event; None for bytes that do not decode as one."""
    try:
        env = codec.decode(value)
    except Exception:  # noqa: BLE001 - a foreign record: no content to compare
        return None
    return event_content(env.shoe_id, env.round_no, codec.micros(env.occurred_at), env.actor,
                         env.event)


def event_id_of(value: bytes) -> str | None:
    """The event id of an encoded event: every schema's first field (docs/schema-evolution.md),
    an Avro string right after the single-object header. None for bytes that are not an event."""
    if value[:2] != codec.MAGIC:
        return None
    pos, shift, n = codec.HEADER_LEN, 0, 0
    while pos < len(value) and shift < 64:
        b = value[pos]
        n |= (b & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if b < 0x80:
            break
    else:
        return None
    n = (n >> 1) ^ -(n & 1)
    if n < 0 or pos + n > len(value):
        return None
    try:
        return value[pos:pos + n].decode("utf-8")
    except UnicodeDecodeError:
        return None


def index_path(log: EventLog) -> Path:
    if isinstance(log, LocalFolder):
        return log.folder / "event-ids.sqlite"
    topic = log.uri.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0]
    return DEFAULT_DATA_DIR / f"kafka-{topic}-event-ids.sqlite"


# How long opening the index waits for another process's (a concurrent ingest's) lock.
OPEN_PATIENCE_S = 60.0


class EventIdIndex:
    """Which (table, event id) pairs the log holds; see the module docstring."""

    def __init__(self, log: EventLog, path: Path | None = None) -> None:
        self.log = log
        self.path = path or index_path(log)
        deadline = time.monotonic() + OPEN_PATIENCE_S
        while True:
            try:
                self._open()
                return
            except sqlite3.OperationalError as exc:
                # Two ingests starting at once: SQLite answers "database is locked" at once,
                # without its busy timeout, while another connection switches the new file to
                # WAL or recovers it (CI saw it in test_two_concurrent_ingests_...). Wait, then
                # open again, as the busy timeout would.
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise self._unusable(exc) from exc
                if getattr(self, "db", None) is not None:
                    self.db.close()
                time.sleep(random.uniform(0.02, 0.2))
            except (OSError, sqlite3.Error) as exc:
                raise self._unusable(exc) from exc

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=OPEN_PATIENCE_S, isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        # A cache of the log (module docstring): a commit lost to a power cut leaves `upto`
        # behind with its ids, and the next use reads those records from the log again. So
        # no fsync per commit (WAL's NORMAL: never a damaged file, only a later state lost);
        # FULL's were 2-3% of `pitlog ingest`'s CPU (benchmarks/results.md, session 38).
        self.db.execute("PRAGMA synchronous = NORMAL")
        # The tables made and, for an index made before `heads` (it read records whose heads
        # it never kept) or before the ids' positions, emptied to be read again, in one
        # transaction (SQLite's DDL is transactional): a kill or a lock in between cannot leave
        # the new columns made and the old ids kept without positions.
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            had_heads = self.db.execute(
                "SELECT count(*) FROM sqlite_master WHERE name = 'heads'").fetchone()[0]
            for ddl in _DDL:
                self.db.execute(ddl)
            columns = {row[1] for row in self.db.execute("PRAGMA table_info(ids)")}
            had_positions = "log_offset" in columns
            if not had_positions:
                self.db.execute("ALTER TABLE ids ADD COLUMN log_partition INTEGER")
                self.db.execute("ALTER TABLE ids ADD COLUMN log_offset INTEGER")
            if not had_heads or not had_positions or not self._still_the_same_log():
                for table in ("ids", "upto", "heads"):
                    self.db.execute(f"DELETE FROM {table}")
        self.catch_up()

    def _unusable(self, exc: BaseException) -> LogError:
        return LogError(f"cannot use the event id index {self.path} ({exc}): it is a cache of "
                        f"the log; check the disk, or delete the file and it is rebuilt from the "
                        f"log")

    def _still_the_same_log(self) -> bool:
        """Does the log still hold the last record indexed in every partition?"""
        for p, _, last, digest, log_id in self.db.execute("SELECT * FROM upto").fetchall():
            if log_id is not None and self.log.log_id is not None and log_id != self.log.log_id:
                return False
            if last is None:
                continue
            rec = self.log.record_at(p, last)
            if rec is None or record_digest(rec) != digest:
                return False
        return True

    def catch_up(self, appended: list[tuple[str, str]] | None = None,
                 positions: list[tuple[int, int]] | None = None) -> int:
        """Index the records appended since the last call (by anyone); return how many.

        `appended`: the (table, event id) of each event the caller appended since the last
        call, in one append (`positions`: where the append put them, in the same order). When
        the log grew by exactly that many records, and in each
        partition that grew the first and the last new record are the caller's, the new records
        are exactly the caller's: one append writes each partition's records in one run (the
        embedded log, under its writer lock: `appends_in_one_run`), so a run holding the
        range's two ends and as many records as the range is the range. Their ids are then
        taken from `appended`, and only those two records a partition are read; else every new
        record is read back, and always on Kafka: a producer's records are not one run there
        (another producer's can land between them while readers see the first ones;
        tests/kafka/test_kafka_event_ids.py). Reading them back was a fifth of `pitlog
        ingest`'s CPU (issue 19)."""
        upto = {p: n for p, n in self.db.execute("SELECT log_partition, next_offset FROM upto")}
        ends = self.log.end_offsets()
        start = {p: min(upto.get(p, 0), end) for p, end in ends.items()}
        if start == ends:
            return 0
        grown = sum(ends[p] - start[p] for p in ends)
        if appended is not None and grown == len(appended) and self.log.appends_in_one_run:
            ours = {(t.encode(), e) for t, e in appended}
            where = positions if positions is not None and len(positions) == len(appended) \
                else [None] * len(appended)
            rows: list[tuple[bytes, str, int | None, int | None]] = [
                (t.encode(), e, *(at if at is not None else (None, None)))
                for (t, e), at in zip(appended, where, strict=True)]
            grew = [p for p in ends if ends[p] > start[p]]
            last = [self.log.record_at(p, ends[p] - 1) for p in grew]
            ends_ours = all(
                rec is not None and (rec.key, event_id_of(rec.value)) in ours
                for rec in [*last, *(self.log.record_at(p, start[p]) for p in grew)])
            if ends_ours:
                try:
                    self._write(rows, [rec for rec in last if rec is not None],
                                unknown={t for t, _ in ours})
                except sqlite3.Error as exc:
                    raise LogError(f"cannot update the event id index {self.path} ({exc}); "
                                   f"the lines are recorded: check the disk, then go on (the "
                                   f"index catches up from the log)") from exc
                return grown
        n = 0
        with closing(self.log.read(start)) as batches:
            for batch in batches:
                try:
                    self._add(batch)
                except sqlite3.Error as exc:
                    raise LogError(f"cannot update the event id index {self.path} ({exc}); "
                                   f"the lines are recorded: check the disk, then go on (the "
                                   f"index catches up from the log)") from exc
                n += len(batch)
        return n

    def _add(self, batch: list[LogRecord]) -> None:
        rows = [(rec.key, eid, rec.partition, rec.offset) for rec in batch
                if (eid := event_id_of(rec.value)) is not None]
        last: dict[int, LogRecord] = {}
        newest: dict[bytes, LogRecord] = {}
        for rec in batch:
            last[rec.partition] = rec
            newest[rec.key] = rec
        self._write(rows, list(last.values()), newest=list(newest.values()))

    def _write(self, rows: Sequence[tuple[bytes, str, int | None, int | None]],
               last: list[LogRecord], *,
               newest: Sequence[LogRecord] = (), unknown: Collection[bytes] = ()) -> None:
        """Add the ids, and move each partition's mark past its last record indexed; keep the
        heads of the tables whose `newest` records were read, and forget those of `unknown`.
        A head moves only forward in its partition: two ingests catching up at once may write
        an older batch after a newer one (as `upto` moves only forward)."""
        heads = [(rec.key, rec.partition, rec.offset, head and head.seq, head and head.hash)
                 for rec in newest for head in [head_of(rec.value)]]
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.executemany("INSERT OR IGNORE INTO ids VALUES (?, ?, ?, ?)", rows)
            self.db.executemany(
                "INSERT INTO heads VALUES (?, ?, ?, ?, ?) ON CONFLICT (table_id) DO UPDATE SET "
                "log_partition = excluded.log_partition, log_offset = excluded.log_offset, "
                "seq = excluded.seq, hash = excluded.hash WHERE excluded.log_partition != "
                "heads.log_partition OR excluded.log_offset > heads.log_offset", heads)
            self.db.executemany("UPDATE heads SET seq = NULL, hash = NULL WHERE table_id = ?",
                                [(t,) for t in unknown])
            for rec in last:
                p = rec.partition
                self.db.execute(
                    "INSERT INTO upto VALUES (?, ?, ?, ?, ?) ON CONFLICT (log_partition) DO "
                    "UPDATE SET next_offset = excluded.next_offset, last_offset = "
                    "excluded.last_offset, last_digest = excluded.last_digest, log_id = "
                    "excluded.log_id WHERE excluded.next_offset > upto.next_offset",
                    (p, rec.offset + 1, rec.offset, record_digest(rec), self.log.log_id))

    def recorded_many(self, keys: list[tuple[str, str]]
                      ) -> dict[tuple[str, str], tuple[int, int] | None]:
        """Those of the (table, event id) pairs the log holds, each with where the event
        recorded under it is (partition, offset; None if not known): one query per 400
        pairs."""
        found: dict[tuple[str, str], tuple[int, int] | None] = {}
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 400):
            chunk = unique[i:i + 400]
            # The pairs drive the join and each is one primary-key search (CROSS JOIN keeps
            # that order): `(table_id, event_id) IN (VALUES ...)` scanned the whole index for
            # every chunk, so ingesting into a large log grew with the log (issue 19).
            rows = self.db.execute(
                "SELECT i.table_id, i.event_id, i.log_partition, i.log_offset FROM (VALUES "
                + ", ".join(["(?, ?)"] * len(chunk)) + ") AS v CROSS JOIN ids AS i "
                "ON i.table_id = v.column1 AND i.event_id = v.column2",
                [v for t, e in chunk for v in (t.encode(), e)]).fetchall()
            found.update(((t.decode(), e), None if o is None else (int(p), int(o)))
                         for t, e, p, o in rows)
        return found

    def heads(self) -> dict[str, TableHead] | None:
        """Each table's head as of the records indexed; None when a table's is not known (the
        caller then reads the log, as scan_heads does)."""
        found: dict[str, TableHead] = {}
        for table, seq, digest in self.db.execute("SELECT table_id, seq, hash FROM heads"):
            if seq is None:
                return None
            found[table.decode()] = TableHead(seq, digest)
        return found

    def contents_at(self, positions: Iterable[tuple[int, int]]
                    ) -> dict[tuple[int, int], tuple[object, ...] | None]:
        """event_content of the events at positions recorded_many gave (None: no pitlog event
        there), read in runs of consecutive offsets, one read per run: a whole file sent again
        is a few runs a partition, not a look-up a line."""
        asked = set(positions)
        if not asked:  # a batch of new lines (the usual one): no read of the log's ends
            return {}
        ends = self.log.end_offsets()
        found: dict[tuple[int, int], tuple[object, ...] | None] = {}
        wanted = sorted((p, o) for p, o in asked if 0 <= o < ends.get(p, 0))
        runs: list[tuple[int, int, int]] = []  # (partition, first, last)
        for p, o in wanted:
            if runs and runs[-1][0] == p and runs[-1][2] == o - 1:
                runs[-1] = (p, runs[-1][1], o)
            else:
                runs.append((p, o, o))
        for p, first, last in runs:
            try:
                self._read_run(ends, p, first, last, found)
            except LogCorruptError:
                # A run holding a record damaged on disk since it was recorded: read it a
                # record at a time (a record read alone is its bytes), so the damaged one has
                # no content (its line counts as sent again, as before positions were kept)
                # and the rest are compared; `pitlog verify` is where the damage is reported.
                for o in range(first, last + 1):
                    try:
                        self._read_run(ends, p, o, o, found)
                    except LogCorruptError:
                        found[(p, o)] = None
        return found

    def _read_run(self, ends: dict[int, int], p: int, first: int, last: int,
                  found: dict[tuple[int, int], tuple[object, ...] | None]) -> None:
        with closing(self.log.read({**ends, p: first},
                                   max_batch=min(5000, last - first + 1))) as batches:
            for batch in batches:
                mine = [rec for rec in batch if rec.partition == p and rec.offset <= last]
                for rec in mine:
                    found[(p, rec.offset)] = record_content(rec.value)
                if not mine or mine[-1].offset >= last:
                    break

    def recorded(self, table: str, event_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM ids WHERE table_id = ? AND event_id = ?",
                               (table.encode(), event_id)).fetchone() is not None

    def close(self) -> None:
        self.db.close()

    def discard(self) -> None:
        """Close, and remove the file unless another connection has it open (another ingest
        of the log, which would go on in a file no longer there): for an index made by a run
        that appended nothing, so the log is left as it was. Leaving WAL needs every other
        connection closed, so it tells; the exclusive lock, held while the file goes, keeps a
        newcomer out until then. Quiet: a file kept is only a cache."""
        try:
            self.db.execute("PRAGMA busy_timeout = 0")  # another connection: keep it, at once
            if self.db.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete":
                self.db.execute("BEGIN EXCLUSIVE")
                self.path.unlink(missing_ok=True)
        except (OSError, sqlite3.Error):
            pass
        finally:
            self.db.close()

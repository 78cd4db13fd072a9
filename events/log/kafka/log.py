"""The Kafka log backend: one topic, keyed by table id, through kafka-python only.

Address ``kafka://HOST:PORT[,...]/TOPIC[?partitions=N&replication_factor=R&timeout_s=S
&client_id=C&assign=0-3,8&fencing=true]``; its parameters, the topic's settings and the
PITLOG_KAFKA_* TLS/SASL variables are in docs/operating.md ("Kafka").

Writes: an idempotent producer (``acks=all``, at most 5 in flight) keyed by table id, so a
table lives in one partition, in order, and a retried batch is neither duplicated nor
reordered; with ``fencing=true`` one transaction per table (fencing.py, docs/integrity.md).
Reads: manual ``assign`` + ``seek``, no consumer group, ``read_committed``: the position lives
in DuckDB, committed with the projected rows (docs/architecture.md, principle 3), so offsets
committed to Kafka would be a second, disagreeing truth.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError, TopicAlreadyExistsError

from events.errors import LogError
from events.log.alerts import AlertSink
from events.log.base import ConditionalAppend, EventLog, LogRecord
from events.log.kafka.alerts import ALERT_TIMEOUT_S, KafkaAlertTopic
from events.log.kafka.fencing import TableFencing
from events.log.kafka.settings import (
    DEFAULT_TIMEOUT_S,
    consumer_settings,
    producer_settings,
    reconnect_settings,
    security_settings,
    topic_config,
)
from events.log.kafka.tails import SHORT_FETCH_WAIT_MS, VisibleEnds, partition_of

DEFAULT_PARTITIONS = 4  # the embedded log's default too
# A read that gets nothing this long while partitions still have records seeks them again
# (_drain), and again each RESEEK_AFTER_S more it waits, until timeout_s gives up.
RESEEK_AFTER_S = 15.0
# ... and after this long, read() goes on with a new consumer (the stall outlived the seeks).
RESTART_AFTER_S = 40.0
_LOG = logging.getLogger("pitlog.kafka")


class _Stalled(Exception):  # noqa: N818 - a signal between _drain and read, never raised out
    """A consumer returned nothing for RESTART_AFTER_S: where each pending partition got."""

    def __init__(self, at: dict[int, int], since: float) -> None:
        super().__init__(at)
        self.at, self.since = at, since


def _close_quietly(consumer: KafkaConsumer) -> None:
    try:
        consumer.close()
    except KafkaError as exc:  # a consumer given up on: closing it must not stop the read
        _LOG.warning("closing a stalled consumer: %s", exc)


_BOOLEANS = {"true": True, "1": True, "yes": True, "on": True,
             "false": False, "0": False, "no": False, "off": False}


def _partition_list(text: str) -> list[int]:
    """"0-3,8" -> [0, 1, 2, 3, 8]."""
    out: list[int] = []
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        out.extend(range(int(first), int(last or first) + 1))
    return out


def share_name(partitions: Sequence[int]) -> str:
    """[0, 1, 2, 3, 8] -> "0-3_8": a share of partitions as a topic name may spell it (no
    commas in Kafka's names)."""
    runs: list[list[int]] = []
    for p in sorted(set(partitions)):
        if runs and p == runs[-1][-1] + 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    return "_".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)


def _ms_left(deadline: float, at_most: int | None = None) -> int:
    """Milliseconds until `deadline` (at least 1: kafka-python treats 0 as "no wait" in places
    and "forever" in none), capped at `at_most`."""
    left = max(1, int((deadline - time.monotonic()) * 1000))
    return left if at_most is None else min(left, at_most)


class KafkaLog(EventLog):
    """One Kafka topic as an EventLog; see the module docstring."""

    def __init__(self, bootstrap: str, topic: str, *, partitions: int | None = None,
                 replication_factor: int = 1, timeout_s: float = DEFAULT_TIMEOUT_S,
                 client_id: str = "pitlog", settings: Mapping[str, Any] | None = None,
                 assign: Sequence[int] | None = None, create: bool = True) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.uri = f"kafka://{bootstrap}/{topic}"
        self.timeout_s = timeout_s
        self.client_id = client_id
        self._settings = dict(security_settings() if settings is None else settings)
        self._producer: KafkaProducer | None = None
        self._consumer: KafkaConsumer | None = None
        self._fencing: TableFencing | None = None
        self._partition_of_key: dict[bytes, int] = {}
        self._visible = VisibleEnds(
            lambda: self._new_consumer("peek", fetch_max_wait_ms=SHORT_FETCH_WAIT_MS),
            self._read_ranges)
        # The topic's replicas as the broker describes it (set by _ensure_topic): the alert
        # topic is made with as many, whatever this address's replication_factor says.
        self.replicas = 0
        self.n_partitions = self._ensure_topic(partitions, replication_factor, create)
        # Reading only some partitions: one projector (and one DuckDB file) per share of the
        # tables, assigned statically (docs/operating.md). Appends still go to any partition.
        self.assigned = sorted(set(assign)) if assign is not None else list(
            range(self.n_partitions))
        outside = [p for p in self.assigned if not 0 <= p < self.n_partitions]
        if outside or not self.assigned:
            raise LogError(f"topic {topic} has partitions 0..{self.n_partitions - 1}; cannot "
                           f"assign {list(assign or [])}: fix the assign= parameter")

    @classmethod
    def from_uri(cls, uri: str, *, partitions: int | None = None,
                 create: bool = True) -> KafkaLog:
        """`kafka://host:port[,host:port]/topic?partitions=N&replication_factor=R&timeout_s=S`;
        the `partitions` argument wins over the query. `fencing=true` opens a FencedKafkaLog."""
        _check_kafka_address(uri)
        parts = urlsplit(uri)
        topic = parts.path.lstrip("/")
        if parts.scheme != "kafka" or not parts.netloc or not topic or "/" in topic:
            raise LogError(f"bad Kafka log address {uri!r}: write kafka://HOST:PORT/TOPIC, "
                           f"e.g. kafka://127.0.0.1:9092/pitlog.reddog.events")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = set(query) - {"partitions", "replication_factor", "timeout_s", "client_id",
                                "assign", "fencing"}
        if unknown:
            raise LogError(f"{uri}: unknown parameter(s) {sorted(unknown)}; known are "
                           f"partitions, replication_factor, timeout_s, client_id, assign, "
                           f"fencing")
        fencing = query.get("fencing", "false").lower()
        if fencing not in _BOOLEANS:
            raise LogError(f"{uri}: fencing={fencing!r}; write fencing=true or fencing=false")
        try:  # parse everything first: the constructor's own errors must not read as these
            n = partitions if partitions is not None else (
                int(query["partitions"]) if "partitions" in query else None)
            replication_factor = int(query.get("replication_factor", 1))
            timeout_s = float(query.get("timeout_s", DEFAULT_TIMEOUT_S))
            assign = _partition_list(query["assign"]) if "assign" in query else None
        except ValueError as exc:
            raise LogError(f"{uri}: {exc}; partitions and replication_factor are whole "
                           f"numbers, timeout_s is seconds, assign is like 0-3,8") from exc
        # A plain KafkaLog asked to fence becomes its fenced subclass (a subclass asked not to,
        # stays what it is: it was chosen on purpose).
        chosen = FencedKafkaLog if _BOOLEANS[fencing] and not issubclass(cls, FencedKafkaLog) \
            else cls
        return chosen(parts.netloc, topic, partitions=n, replication_factor=replication_factor,
                      timeout_s=timeout_s, client_id=query.get("client_id", "pitlog"),
                      assign=assign, create=create)

    def alert_sink(self) -> AlertSink:
        """`<topic>.alerts`, created when missing (events/log/kafka/alerts.py). A projector of
        a share of the partitions (`assign=`) numbers its alerts in its own file, so it
        publishes them to a topic of its own, `<topic>.alerts.<share>` (`.alerts.0-11`): two
        shares on one topic would interleave two alert_seq sequences, and each, restarting,
        would take the other's last alert for its own and skip alerts."""
        name = f"{self.topic}.alerts"
        if self.assigned != list(range(self.n_partitions)):
            name += "." + share_name(self.assigned)
        # The log's connection settings, client id, replicas and, when shorter, its
        # `?timeout_s=` (they were left out: a sink on a secured cluster, or asked to give up
        # sooner, used the defaults; its clients were `pitlog-alerts` whatever `?client_id=`
        # said; and the alert topic had one replica on a cluster whose events had three).
        return KafkaAlertTopic(self.bootstrap, name, min(self.timeout_s, ALERT_TIMEOUT_S),
                               self._settings, client_id=self.client_id,
                               replication_factor=max(1, self.replicas))

    # --- topic ----------------------------------------------------------------------------------

    def _ensure_topic(self, partitions: int | None, replication_factor: int,
                      create: bool = True) -> int:
        """Create the topic if missing (LogError instead when not `create`); return its
        partition count."""
        timeout_ms = int(self.timeout_s * 1000)
        try:
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap.split(","),
                                     client_id=f"{self.client_id}-admin",
                                     bootstrap_timeout_ms=min(timeout_ms, 30_000),
                                     request_timeout_ms=30_000, **reconnect_settings(),
                                     **self._settings)
        except KafkaError as exc:
            raise LogError(f"cannot reach Kafka at {self.bootstrap} for topic {self.topic}: "
                           f"{exc}; is the broker running and the address right?") from exc
        try:
            found = self._partition_count(admin)
            if found is None and not create:
                raise LogError(f"no topic {self.topic} on {self.bootstrap}: check --log / "
                               f"PITLOG_LOG; a writer creates it with --create-topic")
            if found is None:
                try:
                    admin.create_topics(
                        {self.topic: {"num_partitions": partitions or DEFAULT_PARTITIONS,
                                      "replication_factor": replication_factor,
                                      "configs": topic_config(replication_factor)}},
                        timeout_ms=30_000)
                except TopicAlreadyExistsError:
                    pass  # another process created it first: use theirs, checked below
                admin.wait_for_topics([self.topic], timeout_ms=timeout_ms)
                found = self._partition_count(admin)
        except KafkaError as exc:
            raise LogError(f"cannot create or describe topic {self.topic} on {self.bootstrap}: "
                           f"{exc}; check the broker log and the client's ACLs") from exc
        finally:
            admin.close()
        if found is None:
            raise LogError(f"topic {self.topic} on {self.bootstrap} did not appear after "
                           f"creation; check the broker log")
        if partitions is not None and partitions != found:
            raise LogError(f"topic {self.topic} has {found} partitions, not {partitions}: "
                           f"partitions are fixed when a log is created (adding some would "
                           f"move tables to other partitions); drop the partitions setting")
        return found

    def _partition_count(self, admin: KafkaAdminClient) -> int | None:
        for t in admin.describe_topics([self.topic]):
            if t.get("name") == self.topic and t.get("error_code", 0) == 0 and t["partitions"]:
                self.replicas = min(len(p.get("replica_nodes") or ()) for p in t["partitions"])
                return len(t["partitions"])
        return None

    # --- writing --------------------------------------------------------------------------------

    def _get_producer(self, deadline: float) -> KafkaProducer:
        if self._producer is None:
            try:
                self._producer = KafkaProducer(
                    bootstrap_servers=self.bootstrap.split(","),
                    client_id=f"{self.client_id}-producer",
                    max_block_ms=int(self.timeout_s * 1000),
                    bootstrap_timeout_ms=_ms_left(deadline, 30_000),
                    **producer_settings(self.timeout_s), **self._settings)
            except KafkaError as exc:
                raise LogError(f"cannot start a producer for topic {self.topic} on "
                               f"{self.bootstrap}: {exc}; is the broker running?") from exc
        return self._producer

    def append(self, items: Sequence[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        """Send all, flush, then check every acknowledgement (durable on return).

        On failure LogError is raised. Records of *other* partitions than the failed one may
        have been written, so re-read each table's head (`scan_heads`) before recording more.
        """
        if not items:
            return []
        # One deadline for the whole append (issue 14: with the broker gone, connecting, the
        # metadata wait, the flush and the close each took their own timeout, 396 s in all):
        # connecting, each send's wait and the flush get what is left of timeout_s.
        deadline = time.monotonic() + self.timeout_s
        producer = self._get_producer(deadline)
        try:
            futures = []
            for key, value in items:
                # send() blocks up to the producer's max_block_ms (for metadata, or buffer room):
                # kafka-python reads it from its config at each call.
                producer.config["max_block_ms"] = _ms_left(deadline)
                futures.append(producer.send(self.topic, key=key, value=value,
                                             partition=self._partition(key)))
            producer.flush(timeout=_ms_left(deadline) / 1000)
        except KafkaError as exc:
            if self._fencing is not None:
                self._fencing.forget(key for key, _ in items)
            self._abandon_producer()
            raise LogError(f"append to topic {self.topic} on {self.bootstrap} failed within "
                           f"{self.timeout_s:.0f}s ({exc}); nothing is confirmed: check the "
                           f"broker, then re-read the table heads and retry") from exc
        result: list[tuple[int, int]] = []
        failed: list[tuple[int, Exception]] = []
        for i, future in enumerate(futures):
            try:
                meta = future.get(timeout=0)  # flush() returned: every future is done
            except KafkaError as exc:
                failed.append((i, exc))
                continue
            result.append((meta.partition, meta.offset))
        if failed:
            if self._fencing is not None:
                self._fencing.forget(key for key, _ in items)
            self._abandon_producer()
            first, error = failed[0]
            raise LogError(
                f"append to topic {self.topic}: {len(failed)} of {len(items)} records were not "
                f"acknowledged (first: record {first}, key {items[first][0]!r}: {error}); the "
                f"others are on the topic. Re-read the table heads (scan_heads) before "
                f"recording again") from error
        if self._fencing is not None:  # our own appends: the tables' last records now
            self._fencing.appended(items, result)
        return result

    def _abandon_producer(self) -> None:
        """After a failed append: drop the producer without waiting (its close would flush
        what the broker never took, for timeout_s more); the next append starts a new one."""
        producer, self._producer = self._producer, None
        if producer is None:
            return
        try:
            producer.close(timeout=0)
        except KafkaError:
            # close(0) stops at its flush when records are still queued: stop the I/O thread
            # ourselves, so nothing is left to retry or to log after the Error line.
            sender = getattr(producer, "_sender", None)
            if sender is not None and sender.is_alive():
                sender.force_close()

    def _partition(self, key: bytes) -> int:
        """The default partitioner's choice, remembered per table: murmur2 in pure Python was a
        fifth of send()'s cost, and a casino has a few hundred keys."""
        p = self._partition_of_key.get(key)
        if p is None:
            p = self._partition_of_key[key] = partition_of(key, self.n_partitions)
        return p

    # --- reading --------------------------------------------------------------------------------

    def _get_consumer(self) -> KafkaConsumer:
        if self._consumer is None:
            self._consumer = self._new_consumer("reader")
        return self._consumer

    def _new_consumer(self, role: str, **extra: Any) -> KafkaConsumer:
        try:
            return KafkaConsumer(
                bootstrap_servers=self.bootstrap.split(","), client_id=f"{self.client_id}-{role}",
                bootstrap_timeout_ms=min(int(self.timeout_s * 1000), 30_000),
                **{**consumer_settings(), **self._settings, **extra})
        except KafkaError as exc:
            raise LogError(f"cannot start a consumer for topic {self.topic} on "
                           f"{self.bootstrap}: {exc}; is the broker running?") from exc

    def _partitions(self) -> list[TopicPartition]:
        return [TopicPartition(self.topic, p) for p in self.assigned]

    def end_offsets(self) -> dict[int, int]:
        """Per partition, the offset after its last record a reader can see: not after a
        trailing transaction marker or aborted transaction (events/kafka_tails.VisibleEnds)."""
        try:
            ends = self._get_consumer().end_offsets(self._partitions(),
                                                    timeout_ms=int(self.timeout_s * 1000))
        except KafkaError as exc:
            raise LogError(f"cannot read the end offsets of topic {self.topic} on "
                           f"{self.bootstrap}: {exc}; is the broker up?") from exc
        return {tp.partition: self._visible.end(tp.partition, int(offset))
                for tp, offset in ends.items()}

    def read(self, start: Mapping[int, int] | None = None, *,
             max_batch: int = 5000) -> Generator[list[LogRecord], None, None]:
        start = start or {}
        ends = self.end_offsets()  # the end as of the call: later appends wait for next time
        for p, offset in start.items():
            if p in ends and offset > ends[p]:
                raise LogError(
                    f"topic {self.topic} partition {p} ends at offset {ends[p]} but reading "
                    f"was asked to start at {offset}: the topic was deleted and recreated; "
                    f"project into a fresh database")
        todo = {p: (start.get(p, 0), end) for p, end in ends.items() if start.get(p, 0) < end}
        since = time.monotonic()  # of the last record read, across consumers
        while todo:
            try:
                yield from self._read_ranges(self._get_consumer(), todo, max_batch,
                                             restart_after_s=RESTART_AFTER_S, since=since)
                return
            except _Stalled as stalled:
                # kafka-python 3.0.x can stop fetching a partition for good (a seek does not
                # help; dpkp/kafka-python#3131, #3106; CI saw one starve 300 s): a new consumer
                # goes on from where this one got.
                _LOG.warning("no records from %s for %.0fs; partitions %s read on with a new "
                             "consumer from %s", self.topic, time.monotonic() - stalled.since,
                             sorted(stalled.at), stalled.at)
                todo = {p: (first, todo[p][1]) for p, first in stalled.at.items()}
                since = stalled.since
                consumer, self._consumer = self._consumer, None
                if consumer is not None:
                    _close_quietly(consumer)

    def _read_ranges(self, consumer: KafkaConsumer, todo: dict[int, tuple[int, int]],
                     max_batch: int = 5000, *, restart_after_s: float | None = None,
                     since: float | None = None) -> Iterator[list[LogRecord]]:
        """Batches of each partition's records in [first, end) of `todo`."""
        tps = {p: TopicPartition(self.topic, p) for p in todo}
        try:
            consumer.assign(list(tps.values()))
            consumer.resume(*tps.values())  # pause() of an earlier read outlives assign()
            for p, tp in tps.items():
                consumer.seek(tp, todo[p][0])
        except KafkaError as exc:
            raise LogError(f"cannot seek topic {self.topic}: {exc}") from exc
        yield from self._drain(consumer, tps, todo, max_batch, restart_after_s, since)

    def _drain(self, consumer: KafkaConsumer, tps: dict[int, TopicPartition],
               todo: dict[int, tuple[int, int]], max_batch: int,
               restart_after_s: float | None = None,
               since: float | None = None) -> Iterator[list[LogRecord]]:
        """Each partition's records in [first, end) of `todo`. With `restart_after_s`, a
        consumer that returns nothing that long (since its start, or the last record) yields
        what it holds and raises _Stalled, so the caller goes on with a new one; `since` is
        when the caller last got a record, for timeout_s."""
        nxt = {p: first for p, (first, _) in todo.items()}
        buffers: dict[int, list[LogRecord]] = {p: [] for p in todo}
        pending = set(todo)
        last_progress = time.monotonic() if since is None else since
        started = time.monotonic()
        reseeks = 0
        while pending:
            try:
                polled = consumer.poll(timeout_ms=100, max_records=max_batch)
            except KafkaError as exc:
                raise LogError(f"reading topic {self.topic} failed near offsets "
                               f"{ {p: nxt[p] for p in sorted(pending)} }: {exc}") from exc
            if not polled:
                idle = time.monotonic() - last_progress
                if idle > RESEEK_AFTER_S * (reseeks + 1):
                    # kafka-python 3.0.x can stop fetching one partition while others flow
                    # (dpkp/kafka-python#3131, #3106; CI saw one starve 120 s): a seek to where
                    # it stands resets its fetch state. Records a raced fetch returns again are
                    # skipped below.
                    reseeks += 1
                    for p in pending:
                        consumer.seek(tps[p], nxt[p])
                    _LOG.warning("no records from %s for %.0fs; partitions %s sought again at "
                                 "%s", self.topic, idle, sorted(pending),
                                 {p: nxt[p] for p in sorted(pending)})
                if restart_after_s is not None and idle <= self.timeout_s and \
                        time.monotonic() - max(started, last_progress) > restart_after_s:
                    for p in sorted(pending):
                        if buffers[p]:
                            yield buffers[p]
                            buffers[p] = []
                    consumer.assign([])
                    raise _Stalled({p: nxt[p] for p in pending}, last_progress)
                if idle > self.timeout_s:
                    raise LogError(
                        f"no records from topic {self.topic} on {self.bootstrap} for "
                        f"{self.timeout_s:.0f}s while partitions {sorted(pending)} still had "
                        f"some before offsets { {p: todo[p][1] for p in sorted(pending)} }; "
                        f"is the broker up? Rerun to continue from the checkpoint")
            for tp, records in polled.items():
                p = tp.partition
                if p not in pending:
                    continue
                end, buf = todo[p][1], buffers[p]
                for r in records:
                    if r.offset < nxt[p]:
                        continue  # already returned (a fetch raced a seek)
                    if r.offset >= end:
                        break
                    buf.append(LogRecord(p, r.offset, r.key or b"", r.value or b""))
                    nxt[p] = r.offset + 1
                    if len(buf) >= max_batch:
                        yield buf
                        buf = buffers[p] = []
                last_progress = time.monotonic()
                reseeks = 0
            # Transaction markers and aborted records are never returned: see how far the fetch
            # position got, so a partition that ends with a marker ends without an idle poll.
            self._skip_unreturned_offsets(consumer, tps, todo, nxt, pending)
            for p in [p for p in pending if nxt[p] >= todo[p][1]]:
                pending.discard(p)
                consumer.pause(tps[p])  # stop fetching past the end as of the call
                if buffers[p]:
                    yield buffers[p]
                    buffers[p] = []
        consumer.assign([])

    def _skip_unreturned_offsets(self, consumer: KafkaConsumer, tps: dict[int, TopicPartition],
                                 todo: dict[int, tuple[int, int]], nxt: dict[int, int],
                                 pending: set[int]) -> None:
        """Offsets that hold no record (transaction markers, aborted transactions) never come
        back from poll: trust the fetch position for those."""
        for p in pending:
            try:
                position = consumer.position(tps[p], timeout_ms=1000)
            except KafkaError:
                continue
            if position is not None and position > nxt[p]:
                nxt[p] = min(position, todo[p][1])

    def close(self) -> None:
        if self._fencing is not None:
            fencing, self._fencing = self._fencing, None
            fencing.close()
        if self._producer is not None:
            producer = self._producer
            try:
                producer.close(timeout=self.timeout_s)  # every append flushed: nothing waits
                self._producer = None
            except KafkaError as exc:
                self._abandon_producer()
                raise LogError(f"closing the producer of topic {self.topic}: {exc}") from exc
        self._visible.close()
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            consumer.close(autocommit=False)


class FencedKafkaLog(KafkaLog, ConditionalAppend):
    """A Kafka log whose writers are fenced (``fencing=true``): each append checks the tables'
    heads, one transaction per table, so two writers of a table never both take a seq
    (events/log/kafka/fencing.py, docs/integrity.md)."""

    def _get_fencing(self) -> TableFencing:
        if self._fencing is None:
            self._fencing = TableFencing(
                bootstrap=self.bootstrap, topic=self.topic, partitions=self.n_partitions,
                timeout_s=self.timeout_s, client_id=self.client_id,
                producer_config={**producer_settings(self.timeout_s), **self._settings},
                consumer_config={**consumer_settings(), **self._settings},
                read_ranges=self._read_ranges)
        return self._fencing

    def append_expecting(self, items: Sequence[tuple[bytes, bytes]],
                         expected: Mapping[bytes, bytes | None] | None
                         ) -> list[tuple[int, int]]:
        """`append`, if each key's last event still ends
        with `expected[key]` (None: none yet), else ConcurrencyError (events/log/kafka/fencing.py).
        The recorder calls it: two recorders of a table never both take a seq."""
        if not items:
            return []
        return self._get_fencing().append_expecting(items, expected)

    def last_values(self) -> dict[bytes, bytes]:
        """Each key's last event in the assigned partitions,
        for the recorder's heads; the same cache `append_expecting` checks against."""
        return self._get_fencing().tails.last_values(self.assigned)


def _check_kafka_address(uri: str) -> None:
    """Every HOST:PORT of a kafka:// address has a port number, before any client starts."""
    netloc = uri.removeprefix("kafka://").split("/", 1)[0]
    for server in filter(None, netloc.split(",")):
        host, sep, port = server.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise LogError(f"bad Kafka address {uri!r}: {server!r} is not HOST:PORT with a port "
                           f"from 1 to 65535; write kafka://HOST:PORT/TOPIC, e.g. "
                           f"kafka://127.0.0.1:9092/pitlog.reddog.events")

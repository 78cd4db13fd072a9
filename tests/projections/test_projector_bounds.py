"""The projector enforces events/recording/limits.py's bounds on what it reads (docs/integrity.md,
"Confidentiality and input limits"): a record the Recorder would have refused, written around it
(well-formed Avro of pitlog's schemas from a foreign producer, or older code), is quarantined with
the field and the bound in its reason; the good records are projected, and the read side works."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from kafka_support import produce_raw
from repo_paths import REPO
from store_template import new_store

from events.log.embedded.log import EmbeddedLog
from events.log.registry import open_log
from events.recording import limits
from events.recording.ingest import ingest
from events.recording.recorder import Recorder
from events.reddog import model, rules
from events.wire import chain, codec
from projections import frames
from projections.projector import ProjectionReport, project

AT = datetime(2026, 11, 28, 21, 30, tzinfo=UTC)
GOOD = model.CardsLoaded(decks=6)
_SHOE = f"at most {rules.MAX_SHOE_CARDS}: {rules.MAX_DECKS} decks of {rules.CARDS_PER_DECK}"


def _wager(**over: object) -> model.WagerPlaced:
    fields = {"seat": rules.FIRST_SEAT, "area": rules.FIRST_SEAT, "player_id": "P-1",
              "amount_cents": 500, "instrument": model.Instrument.CHIPS, **over}
    return model.WagerPlaced(**fields)  # type: ignore[arg-type]


def _card(shoe_position: int) -> model.CardDrawn:
    return model.CardDrawn(rank=9, suit=model.Suit.CLUBS, face_up=True, destination=model.Box.LEFT,
                           shoe_position=shoe_position)


# (table key, what the record holds, what its quarantine reason must say): one value outside
# each kind of bound, written with the codec only (no Recorder, so no check_event).
BAD = [
    ("X01", {"event": model.CardsLoaded(decks=1_000_000)},
     f"field 'decks' is 1000000, outside {limits.MIN_DECKS}..{limits.MAX_DECKS}"),
    ("X02", {"event": model.CardsLoaded(decks=0)},
     f"field 'decks' is 0, outside {limits.MIN_DECKS}..{limits.MAX_DECKS}"),
    ("X03", {"event": model.WagerPlaced(seat=1, area=1, player_id="P-1", amount_cents=2**62,
                                        instrument=model.Instrument.CHIPS)},
     f"field 'amount_cents' is {2**62} cents, outside 0..{limits.MAX_AMOUNT_CENTS}"),
    ("X04", {"event": model.WagerSettled(seat=1, area=1, wager_kind=model.WagerKind.ORIGINAL,
                                         outcome=model.SettledAs.WON, amount_cents=500,
                                         odds=limits.MAX_ODDS + 1)},
     f"field 'odds' is {limits.MAX_ODDS + 1}, outside 0..{limits.MAX_ODDS}"),
    ("X05", {"event": model.DealerTappedIn(dealer_id="D" * (limits.MAX_TEXT_CHARS + 1))},
     f"field 'dealer_id' has {limits.MAX_TEXT_CHARS + 1} characters, more than "
     f"{limits.MAX_TEXT_CHARS}"),
    ("X06", {"event": GOOD, "occurred_at": datetime(2150, 1, 1, tzinfo=UTC)},
     "field 'occurred_at' is 2150-01-01T00:00:00+00:00, outside 2000-01-01 to 2100-01-01"),
    ("X07", {"event": GOOD, "actor": "A" * (limits.MAX_ID_CHARS + 1)},
     f"field 'actor' has {limits.MAX_ID_CHARS + 1} characters, more than {limits.MAX_ID_CHARS}"),
    # the escape once: visible()'s, not repr()'s of it as well
    ("X08", {"event": GOOD, "actor": "SHOE\x1b[2J"}, r"the actor id 'SHOE\x1b[2J' holds a control "
     "character; send ids as printable text"),
    # The bounds `pitlog ingest` refuses (limits.NUMBER_BOUNDS, ROUND_BOUNDS, PAYLOAD_IDS): a
    # wager at seat 0 landed in the ledger, where no `pitlog dispute --seat` (from 1) finds it.
    ("X09", {"event": _wager(seat=0)}, "field 'seat' is 0, below 1 (seats are numbered from 1)"),
    ("X10", {"event": _wager(area=-2)},
     "field 'area' is -2, below 1 (betting areas are numbered from 1)"),
    ("X11", {"event": model.BurnDisclosed(rank=5, suit=model.Suit.SPADES, requested_by_seat=0)},
     "field 'requested_by_seat' is 0, below 1 (seats are numbered from 1)"),
    ("X12", {"event": _card(0)},
     "field 'shoe_position' is 0, below 1 (the first card dealt after the cut is 1)"),
    ("X13", {"event": model.CardsCut(position=-1)},
     f"field 'position' is -1, below 0 (a cut is made among a shoe's cards, {_SHOE})"),
    ("X14", {"event": model.CardsCut(position=rules.MAX_SHOE_CARDS + 1)},
     f"field 'position' is 417, above 416 (a cut is made among a shoe's cards, {_SHOE})"),
    ("X15", {"event": model.CuttingCardPlaced(cards_behind=rules.MAX_SHOE_CARDS + 1)},
     f"field 'cards_behind' is 417, above 416 (a count of a shoe's cards, {_SHOE})"),
    ("X16", {"event": model.ShoeClosed(cards_remaining=-1)},
     f"field 'cards_remaining' is -1, below 0 (a count of a shoe's cards, {_SHOE})"),
    ("X17", {"event": _wager(), "round_no": -1},
     "field 'round_no' is -1, below 0 (a round number is never negative)"),
    ("X18", {"event": GOOD, "actor": " "}, "the actor id ' ' is blank; a blank id names no actor"),
    ("X19", {"event": GOOD, "table_id": ""}, "the table id '' is blank; a blank id names no table"),
    ("X20", {"event": GOOD, "shoe_id": "\t"},
     "the shoe id '\\t' is blank; a blank id names no shoe"),
    ("X21", {"event": _wager(player_id="  ")}, "field 'player_id' is empty"),
    ("X22", {"event": model.DealerTappedIn(dealer_id="")}, "field 'dealer_id' is empty"),
    ("X23", {"event": model.ShuffleStarted(method=model.ShuffleMethod.HAND, device_id=" ")},
     "field 'device_id' is empty"),
    ("X24", {"event": model.EventCorrected(corrects_seq=0, reason="typo")},
     "field 'corrects_seq' is 0, below 1 (a table's events are numbered from seq 1)"),
]
INGEST_ONLY_BEFORE = BAD[8:]  # the bounds only `pitlog ingest` held until session 16
# At the bounds: accepted, as the Recorder accepts them (a seat and area 1, round 0, the first
# card after the cut, a cut or count of 0 and of a full 8-deck shoe).
EDGE = [("Y01", {"event": model.CardsLoaded(decks=limits.MAX_DECKS)}),
        ("Y02", {"event": _wager(amount_cents=limits.MAX_AMOUNT_CENTS), "round_no": 0}),
        ("Y03", {"event": model.BurnDisclosed(rank=5, suit=model.Suit.SPADES,
                                              requested_by_seat=rules.FIRST_SEAT)}),
        ("Y04", {"event": _card(1)}),
        ("Y05", {"event": model.CardsCut(position=0)}),
        ("Y06", {"event": model.CardsCut(position=rules.MAX_SHOE_CARDS)}),
        ("Y07", {"event": model.CuttingCardPlaced(cards_behind=0)}),
        ("Y08", {"event": model.CuttingCardPlaced(cards_behind=rules.MAX_SHOE_CARDS)}),
        ("Y09", {"event": model.ShoeClosed(cards_remaining=0)}),
        ("Y10", {"event": model.ShoeClosed(cards_remaining=rules.MAX_SHOE_CARDS)}),
        # A blank event id: the writers refuse a new one (session 17), but one an older pitlog
        # recorded is projected as it is; quarantined, its table's next event would raise a
        # SEQUENCE_GAP no dealer made.
        ("Y11", {"event": GOOD, "event_id": "  "}),
        ("Y12", {"event": model.EventCorrected(corrects_seq=1, reason="typo")})]
# Each edge record's (column, value) as projected: the value at the bound, as written.
EDGE_VALUES = {"Y01": ("decks", limits.MAX_DECKS), "Y02": ("round_no", 0),
               "Y03": ("requested_by_seat", 1), "Y04": ("shoe_position", 1),
               "Y05": ("position", 0), "Y06": ("position", 416), "Y07": ("cards_behind", 0),
               "Y08": ("cards_behind", 416), "Y09": ("cards_remaining", 0),
               "Y10": ("cards_remaining", 416), "Y11": ("event_id", "  "),
               "Y12": ("corrects_seq", 1)}


def _raw(table: str, fields: dict[str, object]) -> bytes:
    """One table's first record, encoded and sealed around the Recorder."""
    env = model.Envelope(**{"event_id": f"{table}-1", "table_id": table,
                            "shoe_id": f"{table}-S1", "round_no": None, "seq": 1,
                            "occurred_at": AT, "recorded_at": AT, "actor": "SHOE-X",
                            "prev_hash": model.GENESIS_HASH, **fields})  # type: ignore[arg-type]
    return chain.seal(codec.encode(env), model.GENESIS_HASH)


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[int, int]]]:
    """A log of examples/devices.jsonl recorded for real, the bad and edge records among it."""
    folder = tmp_path_factory.mktemp("bounds")
    log = EmbeddedLog(folder / "log", partitions=2)
    with (REPO / "examples" / "devices.jsonl").open("rb") as feed:
        assert ingest(feed, log, source="devices", quarantine=folder / "q.jsonl").rejected == 0
    items = [(t.encode(), _raw(t, f)) for t, f in [*((t, f) for t, f, _ in BAD), *EDGE]]
    positions = log.append(items)
    return folder, {t.decode(): pos for (t, _), pos in zip(items, positions, strict=True)}


@pytest.fixture(scope="module")
def stores(logged: tuple[Path, dict[str, tuple[int, int]]]) -> dict[bool, Path]:
    """The log projected by each decode path (native: projections/frames.py; reference: the
    record path, PITLOG_NATIVE_DECODE=0)."""
    return {native: _project(logged[0], f"store-{native}", native) for native in (True, False)}


def _project(folder: Path, name: str, native: bool) -> Path:
    db = new_store(folder / f"{name}.duckdb")
    before = os.environ.get(frames.ENV)
    os.environ[frames.ENV] = "1" if native else "0"
    try:
        project(EmbeddedLog(folder / "log"), db)
    finally:
        if before is None:
            del os.environ[frames.ENV]
        else:
            os.environ[frames.ENV] = before
    return db


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("native", [True, False], ids=["native", "reference"])
def test_out_of_bounds_records_are_quarantined_with_field_and_bound(
        logged: tuple[Path, dict[str, tuple[int, int]]], stores: dict[bool, Path],
        native: bool) -> None:
    where, db = logged[1], stores[native]
    quarantined = {(p, o): reason for p, o, reason in _rows(
        db, "SELECT log_partition, log_offset, reason FROM quarantine")}
    assert set(quarantined) == {where[t] for t, _, _ in BAD}
    for table, _, says in BAD:
        p, o = where[table]
        reason = quarantined[p, o]
        # The position is the row's own columns, not repeated in its reason (the Warning
        # line of `pitlog project` said it twice).
        assert " of table '" in reason and "record p" not in reason, reason
        assert says in reason, reason
        assert "not written by pitlog's recorder" in reason and "fix the producer" in reason
        assert "docs/integrity.md" in reason
    # Nothing dropped: every other record projected, the edge values as written.
    ((events,),) = _rows(db, "SELECT count(*) FROM events")
    assert events == 21 + len(EDGE)
    for table, (column, value) in EDGE_VALUES.items():
        assert _rows(db, f"SELECT {column} FROM events WHERE table_id = '{table}'") == [(value,)]
    assert _rows(db, "SELECT seat, area, amount_cents FROM events WHERE table_id = 'Y02'") == [
        (1, 1, limits.MAX_AMOUNT_CENTS)]
    # The seat-0 wager is in no view: not in events, not in the ledger.
    assert _rows(db, "SELECT count(*) FROM events WHERE table_id LIKE 'X%'") == [(0,)]
    assert _rows(db, "SELECT count(*) FROM ledger WHERE seat < 1 OR table_id LIKE 'X%'") == [
        (0,)]
    assert _rows(db, "SELECT count(*) FROM ledger WHERE table_id = 'Y02'") == [(1,)]
    # The quarantine keeps the record's bytes, to replay once the producer is fixed.
    (value,) = _rows(db, f"SELECT value FROM quarantine WHERE log_offset = {where['X01'][1]} "
                         f"AND log_partition = {where['X01'][0]}")[0]
    assert codec.decode(bytes(value)).event == model.CardsLoaded(decks=1_000_000)


@pytest.mark.parametrize(("table", "fields", "says"), INGEST_ONLY_BEFORE,
                         ids=[t for t, _, _ in INGEST_ONLY_BEFORE])
def test_the_recorder_refuses_with_the_reason_the_projector_quarantines_with(
        table: str, fields: dict[str, object], says: str, tmp_path: Path) -> None:
    """One definition (limits.py): the Python API refuses, before stamping, what the projector
    would quarantine, in the same words."""
    recorder = Recorder(EmbeddedLog(tmp_path / "log", partitions=1))
    stamp = {"shoe_id": f"{table}-S1", "round_no": None, "actor": "SHOE-X", "occurred_at": AT,
             **{k: v for k, v in fields.items() if k not in ("event", "table_id")}}
    with pytest.raises(limits.ValueLimitError) as refused:
        recorder.record(str(fields.get("table_id", table)), fields["event"],  # type: ignore[arg-type]
                        **stamp)  # type: ignore[arg-type]
    assert refused.value.reason == says
    assert recorder.heads.get(str(fields.get("table_id", table))) is None  # nothing stamped


def test_the_recorder_records_the_values_at_the_bounds(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    recorder = Recorder(log)
    for edge, over in EDGE:
        recorder.record(edge, over["event"], shoe_id=f"{edge}-S1",  # type: ignore[arg-type]
                        round_no=over.get("round_no"), actor="SHOE-X",  # type: ignore[arg-type]
                        occurred_at=AT)
    recorder.flush()
    assert sum(len(b) for b in log.read()) == len(EDGE)


def test_both_decode_paths_quarantine_the_same_rows_with_the_same_reasons(
        stores: dict[bool, Path]) -> None:
    sql = "SELECT log_partition, log_offset, reason FROM quarantine ORDER BY ALL"
    native, reference = stores[True], stores[False]
    assert _rows(native, sql) == _rows(reference, sql)
    events = "SELECT * FROM events ORDER BY log_partition, log_offset"
    assert _rows(native, events) == _rows(reference, events)


def test_the_read_side_answers_after_out_of_bounds_records(
        logged: tuple[Path, dict[str, tuple[int, int]]], stores: dict[bool, Path]) -> None:
    """Projected as is, the million decks and 2**62 cents made these commands fail."""
    folder, db = logged[0], stores[True]

    def pitlog(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cli.app", *args], capture_output=True,
                              text=True, cwd=REPO, timeout=300, check=False,
                              env={**os.environ, "PYTHONPATH": str(REPO)})

    for command in (["anomalies"], ["reconcile"]):
        proc = pitlog(*command, "--db", str(db), "--format", "json")
        assert proc.returncode in (0, 1) and "rror" not in proc.stderr, proc.stderr
        json.loads(proc.stdout)
    report = pitlog("report", "--db", str(db), "--out", str(folder / "r.html"))
    assert report.returncode == 0, report.stderr


def _on_kafka(kafka_uri: str, kafka_broker: str, recorded: int,
              foreign: list[tuple[bytes, bytes]], db: Path
              ) -> tuple[ProjectionReport, list[tuple[int, int]]]:
    """`recorded` events through the Recorder, then `foreign` from a bare kafka-python
    producer, all projected into `db`: the report and the foreign records' positions."""
    topic = kafka_uri.rsplit("/", 1)[1]
    with open_log(kafka_uri, partitions=2) as log:
        recorder = Recorder(log)
        for i in range(recorded):
            recorder.record("T01", model.DealerTappedIn(dealer_id=f"D{i}"), shoe_id=None,
                            round_no=None, actor="pit", occurred_at=AT)
        recorder.flush()
        positions = produce_raw(kafka_broker, topic, foreign)
        return project(log, db), positions


@pytest.mark.kafka
def test_a_foreign_kafka_producer_s_out_of_bounds_records_are_quarantined(
        kafka_uri: str, kafka_broker: str, tmp_path: Path) -> None:
    """Well-formed Avro of pitlog's schemas from a bare kafka-python producer: the bounds hold
    on a Kafka log as on an embedded one, and the projection goes on past them."""
    report, bad = _on_kafka(kafka_uri, kafka_broker, 6,
                            [(t.encode(), _raw(t, f)) for t, f, _ in BAD],
                            new_store(tmp_path / "views.duckdb"))
    assert (report.events, report.quarantined) == (6, len(BAD))
    reasons = dict(((p, o), r) for p, o, r in _rows(
        tmp_path / "views.duckdb", "SELECT log_partition, log_offset, reason FROM quarantine"))
    assert set(reasons) == set(bad)
    for (p, o), (_, _, says) in zip(bad, BAD, strict=True):
        assert "record p" not in reasons[p, o] and says in reasons[p, o]


def _foreign_wager(table: str, seq: int, seat: int) -> bytes:
    """A WagerPlaced as a foreign producer writes it, from schemas/WagerPlaced.v1.avsc alone:
    fastavro's body after the single-object header (C3 01, the schema's CRC-64-AVRO
    fingerprint), the last 32 bytes SHA-256(prev_hash || the bytes before them)."""
    import hashlib
    import io

    import fastavro
    from fastavro.schema import fingerprint, to_parsing_canonical_form

    schema = fastavro.parse_schema(json.loads((REPO / "schemas" / "WagerPlaced.v1.avsc")
                                              .read_text()))
    header = b"\xc3\x01" + bytes.fromhex(fingerprint(to_parsing_canonical_form(schema),
                                                     "CRC-64-AVRO"))
    micros = int(AT.timestamp() * 1_000_000)
    prev = bytes(32)
    buf = io.BytesIO(header)
    buf.seek(0, io.SEEK_END)
    fastavro.schemaless_writer(buf, schema, {
        "event_id": f"{table}-{seq}", "table_id": table, "shoe_id": f"{table}-S1",
        "round_no": 1, "seq": seq, "occurred_at": micros, "recorded_at": micros,
        "actor": "FOREIGN-1", "prev_hash": prev, "seat": seat, "area": 1, "player_id": "P-9",
        "amount_cents": 2500, "instrument": "CHIPS", "hash": bytes(32)})
    body = buf.getvalue()[:-32]
    return body + hashlib.sha256(prev + body).digest()


@pytest.mark.kafka
def test_a_seat_0_wager_from_a_bare_kafka_producer_is_quarantined_seat_1_projected(
        kafka_uri: str, kafka_broker: str, tmp_path: Path) -> None:
    """Kafka-python and fastavro, no pitlog code, write a wager at seat 0 and one at seat 1
    (the bound) among recorded events: the first is quarantined naming the field, its value
    and the bound, and is in no view; the second and the rest are projected."""
    db = new_store(tmp_path / "views.duckdb")
    report, (at_0, at_1) = _on_kafka(kafka_uri, kafka_broker, 3,
                                     [(b"F01", _foreign_wager("F01", 1, 0)),
                                      (b"F02", _foreign_wager("F02", 1, 1))], db)
    assert (report.events, report.quarantined) == (4, 1)
    ((p, o, reason),) = _rows(db, "SELECT log_partition, log_offset, reason FROM quarantine")
    assert (p, o) == at_0
    assert reason.startswith("WagerPlaced of table 'F01': field 'seat' is 0, "
                             "below 1 (seats are numbered from 1); "), reason
    assert _rows(db, "SELECT table_id, seat FROM events WHERE event_type = 'WagerPlaced'") == [
        ("F02", 1)]
    assert _rows(db, "SELECT table_id, seat FROM ledger") == [("F02", 1)]
    assert _rows(db, "SELECT log_partition, log_offset FROM events WHERE table_id = 'F02'") == [
        at_1]


_KILLABLE = """
import sys, time
from pathlib import Path
from events.log.embedded.log import EmbeddedLog
from projections.projector import project
def committed(done):
    print(done, flush=True)
    if done >= int(sys.argv[3]):
        time.sleep(300)  # after this commit: where the SIGKILL lands
project(EmbeddedLog(Path(sys.argv[1])), sys.argv[2], batch_size=6, progress=committed)
"""


def test_a_projector_killed_mid_run_restarts_to_the_same_quarantine_and_views(
        logged: tuple[Path, dict[str, tuple[int, int]]], stores: dict[bool, Path]) -> None:
    """The out-of-bounds records are quarantined in their batch's transaction: SIGKILL after
    five batches of six, then a restart, gives the uninterrupted run's quarantine and events."""
    folder = logged[0]
    db = new_store(folder / "killed.duckdb")
    env = {**os.environ, "PYTHONPATH": str(REPO), frames.ENV: "1"}
    run = [sys.executable, "-c", _KILLABLE, str(folder / "log"), str(db)]
    proc = subprocess.Popen([*run, "30"], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    for _ in range(5):
        assert proc.stdout.readline().strip()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    ((events, quarantined, covered),) = _rows(
        db, "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM quarantine), "
            "(SELECT sum(next_offset) FROM checkpoints)")
    total = 21 + len(BAD) + len(EDGE)
    assert (events + quarantined, covered) == (30, 30) and 0 < quarantined < len(BAD) < total
    subprocess.run([*run, str(10**9)], env=env, check=True, capture_output=True, timeout=300)
    for sql in ("SELECT log_partition, log_offset, reason FROM quarantine ORDER BY ALL",
                "SELECT * FROM events ORDER BY log_partition, log_offset"):
        assert _rows(db, sql) == _rows(stores[True], sql)

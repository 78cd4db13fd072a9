"""`pitlog ingest` and `pitlog verify` as a user runs them: exit codes, `Error:` lines, output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run
from repo_paths import REPO

from events.log.embedded.log import EmbeddedLog

EXAMPLES = REPO / "examples"


def test_ingest_of_the_example_records_every_line_and_exits_0(tmp_path: Path) -> None:
    log = tmp_path / "data" / "log"
    proc = run("ingest", str(EXAMPLES / "devices.jsonl"), "--log", str(log), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    assert (row["lines"], row["recorded"], row["rejected"], row["tables"]) == (21, 21, 0, 1)
    assert row["quarantine"] == str(tmp_path / "data" / "log-quarantine.jsonl")
    assert proc.stderr == ""


def test_ingest_reports_each_bad_line_quarantines_it_and_exits_1(tmp_path: Path) -> None:
    log = tmp_path / "data" / "log"
    proc = run("ingest", str(EXAMPLES / "bad-devices.jsonl"), "--log", str(log),
               "--format", "json")
    assert proc.returncode == 1
    errors = proc.stderr.splitlines()
    src = EXAMPLES / "bad-devices.jsonl"
    assert [e.split(";")[0] for e in errors[:6]] == [
        f"Error: {src} line 2: malformed JSON (Expecting ',' delimiter at column 125)",
        f'Error: {src} line 3: unknown event type "CardTeleported"',
        f"Error: {src} line 4: invalid card: rank 15 is not 2..14",
        f'Error: {src} line 5: invalid card: suit "X" is not one of S, H, D, C',
        f"Error: {src} line 6: missing field 'suit' for CardDrawn",
        f"Error: {src} line 8: sequence out of order: SHOE-9 seq 6 for table T09 after seq 7",
    ]
    quarantine = tmp_path / "data" / "log-quarantine.jsonl"
    assert errors[6] == (f"Error: 6 of 9 lines rejected; they are in {quarantine} with their "
                         f"reasons: fix and resend them")
    assert "Traceback" not in proc.stderr
    assert [json.loads(x)["line"] for x in quarantine.read_text().splitlines()] == [2, 3, 4, 5,
                                                                                   6, 8]
    (row,) = json.loads(proc.stdout)
    assert (row["recorded"], row["rejected"]) == (3, 6)


def test_ingest_refuses_seat_and_area_0_so_every_recorded_seat_can_be_disputed(
        tmp_path: Path) -> None:
    """Seat 0 was ingested, while `pitlog dispute --seat` starts at 1: a wager recorded that no
    dispute could ask for by seat. Seats and areas are numbered from 1 (rules.FIRST_SEAT): the
    lines are refused as malformed, `Error: FILE line N: ...`, and each seat that is recorded
    can be disputed."""
    lines = [json.loads(x) for x in (EXAMPLES / "devices.jsonl").read_text().splitlines()]
    seat_5 = [i for i, x in enumerate(lines) if x.get("seat") == 5]  # its wager, its payment
    for i in seat_5:
        lines[i]["seat"] = 0
    raise_at = next(i for i, x in enumerate(lines) if x["type"] == "RaisePlaced")
    lines[raise_at]["area"] = 0
    src = tmp_path / "seat0.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    log, db = tmp_path / "data" / "log", tmp_path / "data" / "p.duckdb"
    proc = run("ingest", str(src), "--log", str(log), "--format", "json")
    assert proc.returncode == 1
    seat = "below 1 (seats are numbered from 1); send the seat's number as the table's layout "
    assert proc.stderr.splitlines()[:3] == [
        f"Error: {src} line {seat_5[0] + 1}: field 'seat' is 0, {seat}shows it",
        f"Error: {src} line {raise_at + 1}: field 'area' is 0, below 1 (betting areas are "
        f"numbered from 1); send the betting area's number as the table's layout shows it",
        f"Error: {src} line {seat_5[1] + 1}: field 'seat' is 0, {seat}shows it"]
    (row,) = json.loads(proc.stdout)
    assert (row["recorded"], row["rejected"]) == (18, 3)
    assert run("project", "--log", str(log), "--db", str(db)).returncode == 0
    hand = run("dispute", "--db", str(db), "--table", "T07", "--round", "T07-S0003:1",
               "--format", "json")
    assert hand.returncode == 0, hand.stderr
    seats = {r["seat"] for r in json.loads(hand.stdout) if r["section"] in ("wager",
                                                                            "settlement")}
    assert seats == {3}
    for n in seats:
        one = run("dispute", "--db", str(db), "--table", "T07", "--round", "T07-S0003:1",
                  "--seat", str(n), "--format", "json")
        assert one.returncode == 0, one.stderr
        assert {r["seat"] for r in json.loads(one.stdout) if r["section"] == "wager"} == {n}


def test_ingest_reads_standard_input_with_a_dash(tmp_path: Path) -> None:
    lines = (EXAMPLES / "devices.jsonl").read_text().splitlines()[:4]
    proc = run("ingest", "-", "--log", str(tmp_path / "log"), "--format", "csv",
               stdin="\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    header, row = proc.stdout.splitlines()
    assert header.startswith("source,lines,recorded,rejected")
    assert row.startswith("<stdin>,4,4,0")


def test_ingest_of_a_missing_file_is_one_error_line(tmp_path: Path) -> None:
    proc = run("ingest", str(tmp_path / "nope.jsonl"), "--log", str(tmp_path / "log"))
    assert proc.returncode == 1
    assert proc.stderr == (f"Error: no file {tmp_path / 'nope.jsonl'}: pass a JSON lines file, "
                           f"or - for stdin\n")


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_ingest_of_refused_lines_only_leaves_no_new_log(tmp_path: Path) -> None:
    """Every line refused into a log not there before: an empty log was left, with its id
    index, which `project` and `verify` read as a log written. Now none, nor the folders made
    for it; the refused lines are quarantined, as ever."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"nope": 1}\n{"nope": 2}\n')
    log = tmp_path / "data" / "new" / "log"
    proc = run("ingest", str(bad), "--log", str(log), "--format", "json")
    assert proc.returncode == 1
    quarantine = tmp_path / "data" / "new" / "log-quarantine.jsonl"
    assert proc.stderr.splitlines()[-1] == (f"Error: 2 of 2 lines rejected; they are in "
                                            f"{quarantine} with their reasons: fix and resend "
                                            f"them")
    assert [json.loads(x)["raw"] for x in quarantine.read_text().splitlines()] == [
        '{"nope": 1}', '{"nope": 2}']
    assert not log.exists() and list(tmp_path.glob("data/new/*")) == [quarantine]
    # with nothing to quarantine either, no folder is left at all
    empty = run("ingest", "/dev/null", "--log", str(tmp_path / "other" / "log"))
    assert empty.returncode == 0, empty.stderr
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize("made_by", ["simulate", "ingest"])
def test_ingest_of_refused_lines_only_leaves_an_existing_log_byte_for_byte(
        tmp_path: Path, made_by: str) -> None:
    """A log there before stays as it was, file for file. One `simulate` made has no id
    index: the run reads the log's records to make one, and keeps it (a cache of the log; a
    second read, session 41: discarded, every later run read the whole log again)."""
    log = tmp_path / "log"
    made = run("simulate", "--log", str(log), "--tables", "1", "--rounds", "3") \
        if made_by == "simulate" else run("ingest", str(EXAMPLES / "devices.jsonl"), "--log",
                                          str(log))
    assert made.returncode == 0, made.stderr
    before = _files(log)
    assert ("event-ids.sqlite" in before) == (made_by == "ingest")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"nope": 1}\n')
    proc = run("ingest", str(bad), "--log", str(log))
    assert proc.returncode == 1
    after = _files(log)
    kept = after.pop("event-ids.sqlite", None)
    assert after == {k: v for k, v in before.items() if k != "event-ids.sqlite"}
    assert (kept is not None) == (made_by == "simulate" or "event-ids.sqlite" in before)
    assert len((tmp_path / "log-quarantine.jsonl").read_text().splitlines()) == 1
    if made_by == "simulate":  # the index made is the log's: a line sent again is found in it
        from events.recording.event_ids import EventIdIndex

        ids = EventIdIndex(EmbeddedLog(log))
        try:
            assert ids.catch_up() == 0  # it holds every record already
        finally:
            ids.close()


def test_verify_of_a_clean_log_exits_0_with_a_row_per_table(tmp_path: Path) -> None:
    log = tmp_path / "log"
    assert run("ingest", str(EXAMPLES / "devices.jsonl"), "--log", str(log)).returncode == 0
    proc = run("verify", "--log", str(log), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    assert (row["kind_of_row"], row["table"], row["events"], row["first_seq"], row["last_seq"],
            row["status"]) == ("table", "T07", 21, 1, 21, "ok")


def test_verify_of_a_tampered_log_locates_it_and_exits_1(tmp_path: Path) -> None:
    log = tmp_path / "log"
    run("ingest", str(EXAMPLES / "devices.jsonl"), "--log", str(log))
    embedded = EmbeddedLog(log)
    (partition,) = [p for p, n in embedded.end_offsets().items() if n]
    path, _ = embedded.segment_position(partition, 10)  # seq 11: a CardDrawn
    _, end = embedded.segment_position(partition, 11)
    data = bytearray(path.read_bytes())
    data[end - 33] ^= 0x20  # its last byte before the hash: shoe_position 2 becomes 18
    path.write_bytes(bytes(data))
    proc = run("verify", "--log", str(log), "--format", "json")
    assert proc.returncode == 1
    rows = json.loads(proc.stdout)
    anomalies = [r for r in rows if r["kind_of_row"] == "anomaly"]
    assert [(a["code"], a["kind"], a["partition"], a["offset"], a["expected_seq"])
            for a in anomalies] == [("CHAIN_BROKEN", "altered", partition, 10, 11)]
    assert [r["status"] for r in rows if r["kind_of_row"] == "table"] == ["broken"]


def test_verify_limit_0_shows_every_anomaly_and_a_limit_says_what_it_left_out(
        tmp_path: Path) -> None:
    """README: the listing commands, verify among them, take --limit N, say "N of M shown" on
    stderr when rows are left out, and --limit 0 shows all. verify refused --limit 0, and in
    json, jsonl and csv left anomalies out without a word."""
    log = tmp_path / "log"
    run("ingest", str(EXAMPLES / "devices.jsonl"), "--log", str(log))
    embedded = EmbeddedLog(log)
    (partition,) = [p for p, n in embedded.end_offsets().items() if n]
    for offset in (10, 14):  # two records altered: two CHAIN_BROKEN
        path, _ = embedded.segment_position(partition, offset)
        _, end = embedded.segment_position(partition, offset + 1)
        data = bytearray(path.read_bytes())
        data[end - 33] ^= 0x20
        path.write_bytes(bytes(data))

    def anomalies(*args: str) -> tuple[list[tuple[object, object]], str]:
        proc = run("verify", "--log", str(log), "--format", "json", *args)
        assert proc.returncode == 1, proc.stderr
        rows = json.loads(proc.stdout)
        return [(r["code"], r["offset"]) for r in rows if r["kind_of_row"] == "anomaly"], \
            proc.stderr

    assert anomalies("--limit", "0") == ([("CHAIN_BROKEN", 10), ("CHAIN_BROKEN", 14)], "")
    assert anomalies("--limit", "1") == (
        [("CHAIN_BROKEN", 10)], "1 of 2 anomalies shown: --limit N for more, --limit 0 for all\n")


def test_verify_of_a_missing_log_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    proc = run("verify", "--log", str(tmp_path / "absent"))
    assert proc.returncode == 1
    assert proc.stderr == (f"Error: no event log at {tmp_path / 'absent'}: pass --log or set "
                           f"PITLOG_LOG\n")
    assert not (tmp_path / "absent").exists()


def test_project_names_each_record_it_quarantines_on_stderr(tmp_path: Path) -> None:
    """docs/operating.md: a record that is not a pitlog event goes to the quarantine with its
    partition, offset and reason, and projection goes on. `pitlog project` said only
    "quarantined 1" in its summary: which record, and why, took a query nobody was told of."""
    log = tmp_path / "log"
    run("ingest", str(EXAMPLES / "devices.jsonl"), "--log", str(log))
    embedded = EmbeddedLog(log)
    (partition,) = [p for p, n in embedded.end_offsets().items() if n]
    path, _ = embedded.segment_position(partition, 1)  # seq 2: DealerTappedIn "D-1042"
    _, end = embedded.segment_position(partition, 2)
    data = bytearray(path.read_bytes())
    data[end - 36:end - 33] = b"\xff\xff\xff"  # inside the dealer id: no UTF-8 any more
    path.write_bytes(bytes(data))
    proc = run("project", "--log", str(log), "--db", str(tmp_path / "p.duckdb"), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["quarantined"] == 1
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("Warning:")]
    assert warnings[0].startswith(
        f"Warning: record p{partition}@1 of file://{log} was quarantined, not projected: "
        f"DealerTappedIn v1: corrupt body (UnicodeDecodeError")
    assert warnings[1].startswith('Warning: 1 record quarantined: pitlog sql "SELECT * FROM '
                                  'quarantine" lists them')


def test_project_quarantines_a_seat_0_wager_appended_around_ingest_and_names_it(
        tmp_path: Path) -> None:
    """`pitlog ingest` refuses seat 0 (limits.NUMBER_BOUNDS), but a record appended straight
    onto the log (the embedded log's append API, as older code or a foreign writer may) was
    projected: a wager in the ledger no `pitlog dispute --seat` (from 1) could ask for. The
    projector holds the same bound: the record is quarantined, named on stderr with its field,
    value and bound, and the rest of the log is projected."""
    from dataclasses import replace

    import duckdb

    from events.wire import chain, codec

    log, db = tmp_path / "log", tmp_path / "p.duckdb"
    assert run("ingest", str(EXAMPLES / "devices.jsonl"), "--log", str(log)).returncode == 0
    embedded = EmbeddedLog(log)
    wager = next(e for e in (codec.decode(r.value) for b in embedded.read() for r in b)
                 if e.event_type == "WagerPlaced")
    seat_0 = replace(wager, seq=1000, event_id="seat-0", event=replace(wager.event, seat=0))
    [(partition, offset)] = embedded.append(
        [(wager.table_id.encode(), chain.seal(codec.encode(seat_0), wager.prev_hash))])
    proc = run("project", "--log", str(log), "--db", str(db), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    assert (row["events"], row["quarantined"]) == (21, 1)
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("Warning:")]
    assert warnings[0].startswith(
        f"Warning: record p{partition}@{offset} of file://{log} was quarantined, not "
        f"projected: WagerPlaced of table '{wager.table_id}': "
        f"field 'seat' is 0, below 1 (seats are numbered from 1); the record was not "
        f"written by pitlog's recorder"), warnings
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM events WHERE event_id = 'seat-0' OR seat < 1"
                           ).fetchall() == [(0,)]
        assert con.execute("SELECT count(*) FROM ledger WHERE seat < 1").fetchall() == [(0,)]
        assert con.execute("SELECT log_partition, log_offset FROM quarantine").fetchall() == [
            (partition, offset)]


def test_a_quarantine_in_no_folder_or_not_writable_says_what_would_help(tmp_path: Path) -> None:
    """The errors told an operator to `mkdir -p` a path holding a file (which fails) and to
    free some space when the write was refused (an outside review, session 41). Nothing is
    recorded in either case."""
    lines = tmp_path / "bad.jsonl"
    lines.write_text('{"nope": 1}\n')
    a_file = tmp_path / "q1.jsonl"
    a_file.write_text("")
    log = tmp_path / "log"
    in_a_file = run("ingest", str(lines), "--log", str(log), "--quarantine",
                    str(a_file / "x.jsonl"))
    assert in_a_file.returncode == 1 and "mkdir" not in in_a_file.stderr
    assert (f"{a_file} is a file, not a folder, so the folder {a_file} cannot be made there: "
            f"name a file in a folder") in in_a_file.stderr
    deeper = run("ingest", str(lines), "--log", str(log), "--quarantine",
                 str(a_file / "sub" / "x.jsonl"))
    assert deeper.returncode == 1 and "mkdir" not in deeper.stderr
    assert (f"{a_file} is a file, not a folder, so the folder {a_file / 'sub'} cannot be "
            f"made there") in deeper.stderr  # the file in the way is named
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    linked = run("ingest", str(lines), "--log", str(log), "--quarantine",
                 str(dangling / "x.jsonl"))
    assert linked.returncode == 1 and "mkdir" not in linked.stderr
    assert f"{dangling} is a link to no folder" in linked.stderr
    missing = run("ingest", str(lines), "--log", str(log), "--quarantine",
                  str(tmp_path / "no" / "x.jsonl"))
    assert f"create it first (mkdir -p {tmp_path / 'no'})" in missing.stderr
    if Path("/sys/kernel").is_dir():  # Linux: sysfs refuses a new file, to root too
        refused = run("ingest", str(lines), "--log", str(log), "--quarantine",
                      "/sys/pitlog-quarantine.jsonl")
        assert refused.returncode == 1, refused.stderr
        assert refused.stderr.splitlines()[-1].startswith(
            "Error: cannot write the quarantine file /sys/pitlog-quarantine.jsonl (")
        assert "pass --quarantine a file you may write" in refused.stderr
        assert "free some space" not in refused.stderr
    assert not log.exists()

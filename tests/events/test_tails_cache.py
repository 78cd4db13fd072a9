"""The writers' heads saved beside the embedded log (events/log/embedded/tails.py).

What must hold: a new writer's heads equal a full read of the log's last record per key,
whatever the saved file says (stale, damaged, another log's, a log restored from a backup, a
copy that went another way where a table's saved last record differs: docs/integrity.md says
what the check cannot see); and when the file checks out, the writer reads only the records
after it, plus each table's saved record to check it.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from events.log.embedded import tails
from events.log.embedded.log import EmbeddedLog, partition_for
from events.log.embedded.segment import Partition


class CountingLog(EmbeddedLog):
    """The embedded log, counting the records it reads from its segments."""

    records_read = 0

    def _read_range(self, part: Partition, seg: object, start: int, stop: int):  # type: ignore[no-untyped-def]
        out = super()._read_range(part, seg, start, stop)
        self.records_read += len(out)
        return out


def _full_read(folder: Path) -> dict[bytes, bytes]:
    last: dict[bytes, bytes] = {}
    for batch in EmbeddedLog(folder, create=False).read():
        for rec in batch:
            last[rec.key] = rec.value
    return last


def _batch(rng: random.Random, n: int, tables: int = 6) -> list[tuple[bytes, bytes]]:
    return [(f"T{rng.randrange(tables):02d}".encode(), rng.randbytes(rng.randrange(1, 40)))
            for _ in range(n)]


def _write(folder: Path, items: list[tuple[bytes, bytes]], *, close: bool = True) -> None:
    """A writer as the recorder is one: read the heads, append, close (or be killed)."""
    log = EmbeddedLog(folder, partitions=3)
    log.last_values()
    log.append(items)
    if close:
        log.close()


def test_a_new_writer_reads_only_the_records_after_the_saved_heads(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    rng = random.Random(1)
    _write(folder, _batch(rng, 400))
    _write(folder, _batch(rng, 300))
    saved = json.loads((folder / tails.TAILS_FILE).read_text())["body"]
    assert sum(saved["upto"].values()) == 700
    checked = len(saved["values"])  # each table's own last record is read to check the file
    assert checked == 6
    other = EmbeddedLog(folder)  # a writer that never reads the heads saves nothing
    other.append(_batch(rng, 25))
    other.close()
    writer = CountingLog(folder)
    assert writer.last_values() == _full_read(folder)
    # 25 new records, and each table's saved last record (the check)
    assert writer.records_read == 25 + checked
    assert CountingLog(folder).last_values() == _full_read(folder)
    without = CountingLog(folder)
    (folder / tails.TAILS_FILE).unlink()
    assert without.last_values() == _full_read(folder)
    assert without.records_read == 725  # the whole log, as before the cache


def test_a_writer_that_appends_nothing_writes_no_file(tmp_path: Path) -> None:
    """A rerun of an evening already recorded, an ingest whose every line is refused: they read
    the heads and append nothing, and leave the folder as it was (`pitlog demo --replace`
    compares its files: a file written there refused the replace)."""
    folder = tmp_path / "log"
    EmbeddedLog(folder, partitions=3).last_values()  # an empty log: nothing to save
    assert not (folder / tails.TAILS_FILE).exists()
    _write(folder, _batch(random.Random(2), 50))
    (folder / tails.TAILS_FILE).unlink()  # as a log written before the file was
    for _ in range(2):
        with EmbeddedLog(folder) as rerun:
            rerun.last_values()
        assert not (folder / tails.TAILS_FILE).exists()
    _write(folder, _batch(random.Random(3), 50))  # a writer that appends saves the heads
    before = (folder / tails.TAILS_FILE).read_bytes()
    with EmbeddedLog(folder) as other:  # a stale file: another writer appended since
        other.append(_batch(random.Random(4), 5))
    with EmbeddedLog(folder) as rerun:
        assert rerun.last_values() == _full_read(folder)
    assert (folder / tails.TAILS_FILE).read_bytes() == before


def test_a_writer_killed_before_closing_has_saved_every_so_many_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tails, "SAVE_EVERY_RECORDS", 100)
    folder = tmp_path / "log"
    rng = random.Random(3)
    log = EmbeddedLog(folder, partitions=3)
    log.last_values()
    for _ in range(7):
        log.append(_batch(rng, 40))
    # never closed: the last save came after 240 records (the first 40-record append at or
    # past each 100 since the one before)
    saved = tails.load(folder, log.log_id, 3)
    assert saved is not None and sum(saved.upto.values()) == 240
    writer = CountingLog(folder)
    assert writer.last_values() == _full_read(folder)
    assert writer.records_read == 280 - 240 + len(saved.values)


@pytest.mark.parametrize("damage", ["flip a byte", "cut short", "not json", "other log id",
                                    "empty", "a partition missing"])
def test_a_damaged_or_foreign_file_is_ignored_and_the_log_read(tmp_path: Path,
                                                                damage: str) -> None:
    folder = tmp_path / "log"
    rng = random.Random(4)
    _write(folder, _batch(rng, 120))
    _write(folder, _batch(rng, 30), close=False)
    path = folder / tails.TAILS_FILE
    text = path.read_text()
    doc = json.loads(text)
    if damage == "flip a byte":
        i = text.index('"upto": {"0": ') + 14  # a digit of partition 0's count
        path.write_text(text[:i] + ("1" if text[i] != "1" else "2") + text[i + 1:])
    elif damage == "cut short":
        path.write_text(text[: len(text) // 2])
    elif damage == "not json":
        path.write_bytes(b"\xff\x00garbage")
    elif damage == "other log id":
        doc["body"]["log_id"] = "0" * 32
        doc["sha256"] = tails._digest(doc["body"])
        path.write_text(json.dumps(doc))
    elif damage == "a partition missing":
        del doc["body"]["upto"]["2"]
        doc["sha256"] = tails._digest(doc["body"])
        path.write_text(json.dumps(doc))
    else:
        path.write_text("")
    assert tails.load(folder, EmbeddedLog(folder).log_id, 3) is None
    writer = CountingLog(folder)
    assert writer.last_values() == _full_read(folder)
    assert writer.records_read == 150


def test_a_log_restored_from_an_older_backup_is_read_whole(tmp_path: Path) -> None:
    folder, backup = tmp_path / "log", tmp_path / "backup"
    rng = random.Random(5)
    _write(folder, _batch(rng, 100))
    shutil.copytree(folder, backup)
    _write(folder, _batch(rng, 100))
    newer = (folder / tails.TAILS_FILE).read_bytes()
    shutil.rmtree(folder)
    shutil.copytree(backup, folder)
    (folder / tails.TAILS_FILE).write_bytes(newer)  # the cache of a later state of the log
    writer = CountingLog(folder)
    assert writer.last_values() == _full_read(folder)
    assert writer.records_read == 100


def test_a_copy_that_went_another_way_is_not_given_the_others_heads(tmp_path: Path) -> None:
    """Two copies of one log share its id; each went on with other records. The one's saved
    heads put beside the other fail the check of each table's saved record."""
    a, b = tmp_path / "a", tmp_path / "b"
    rng = random.Random(6)
    _write(a, _batch(rng, 90))
    shutil.copytree(a, b)
    _write(a, [(f"T{i:02d}".encode(), b"in a") for i in range(6)] * 5)
    _write(b, [(f"T{i:02d}".encode(), b"in b") for i in range(6)] * 5)
    shutil.copy(a / tails.TAILS_FILE, b / tails.TAILS_FILE)
    writer = CountingLog(b)
    heads = writer.last_values()
    assert heads == _full_read(b) and set(heads.values()) == {b"in b"}
    # the check read one to three records (it stops at the first that differs), then the log
    assert 120 < writer.records_read <= 123


def test_a_copy_whose_partitions_end_alike_is_still_not_given_the_others_heads(
        tmp_path: Path) -> None:
    """The outside review's case: two copies of one log went on with T06 differing and the same
    last record in its partition (T04's, which shares it). Checking each partition's last
    record alone gave the copy the other's T06, and the next append continued the wrong chain;
    each table's own saved record is checked now."""
    a, b = tmp_path / "a", tmp_path / "b"
    _write(a, _batch(random.Random(8), 60))
    shutil.copytree(a, b)
    assert partition_for(b"T06", 3) == partition_for(b"T04", 3)
    _write(a, [(b"T06", b"k2 in a"), (b"T04", b"k1-1")])
    _write(b, [(b"T06", b"k2 in b"), (b"T04", b"k1-1")])
    shutil.copy(a / tails.TAILS_FILE, b / tails.TAILS_FILE)
    writer = EmbeddedLog(b)
    heads = writer.last_values()
    assert heads == _full_read(b) and heads[b"T06"] == b"k2 in b"
    writer.append_expecting([(b"T06", b"next")], {b"T06": b"k2 in b"})  # no ConcurrencyError


@pytest.mark.parametrize("seed", range(12))
def test_heads_equal_a_full_read_after_any_sequence_of_writers(tmp_path: Path,
                                                                seed: int) -> None:
    """Writers that close or are killed, appends with and without reading the heads, a crashed
    append's journal rolled back, a cache deleted or replaced by an older one: every writer's
    heads, and every conditional append's check, equal a full read."""
    folder = tmp_path / "log"
    rng = random.Random(seed)
    older: list[bytes] = []
    for _ in range(14):
        step = rng.choice(["writer", "writer", "plain", "killed", "old cache", "no cache",
                           "crashed append"])
        if step == "plain":
            EmbeddedLog(folder, partitions=3).append(_batch(rng, rng.randrange(1, 60)))
        elif step in ("writer", "killed"):
            log = EmbeddedLog(folder, partitions=3)
            heads = log.last_values()
            assert heads == (_full_read(folder) if (folder / "meta.json").exists() else {})
            table = f"T{rng.randrange(6):02d}".encode()
            log.append_expecting([(table, rng.randbytes(9))], {table: heads.get(table)})
            log.append(_batch(rng, rng.randrange(1, 200)))
            if step == "writer":
                log.close()
        elif step == "old cache" and older:
            (folder / tails.TAILS_FILE).write_bytes(rng.choice(older))
        elif step == "no cache":
            (folder / tails.TAILS_FILE).unlink(missing_ok=True)
        elif step == "crashed append" and (folder / "meta.json").exists():
            log = EmbeddedLog(folder)
            log.last_values()
            before = {p.number: (p.seg_size(), p.count()) for p in log._parts}
            from events.log.embedded.segment import write_journal
            write_journal(folder, before)  # as if the next append died after its journal
            with (folder / "p0000.seg").open("ab") as f:
                f.write(b"\x00" * 7)
        if (folder / tails.TAILS_FILE).exists():
            older.append((folder / tails.TAILS_FILE).read_bytes())
    final = EmbeddedLog(folder, partitions=3)
    assert final.last_values() == _full_read(folder)

"""The simulator: seeded and deterministic, and its evening follows the rules."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from simulated import records_by_table

from events.errors import ConcurrencyError
from events.log.embedded.log import EmbeddedLog
from events.recording.recorder import Recorder, last_records
from events.reddog import rules
from events.reddog.model import CardDrawn, CardsRacked, DealerTappedIn, WagerSettled
from events.simulation.rerun import held_tables
from events.simulation.simulator import SimConfig, simulate, uuid4_text
from events.wire import chain, codec


def _segments(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.seg"))}


def test_same_seed_gives_a_byte_identical_log(tmp_path: Path) -> None:
    config = SimConfig(seed=11, tables=3, rounds=60)
    simulate(EmbeddedLog(tmp_path / "a"), config)
    simulate(EmbeddedLog(tmp_path / "b"), config)
    a, b = _segments(tmp_path / "a"), _segments(tmp_path / "b")
    assert a == b and sum(map(len, a.values())) > 100_000


def test_another_seed_gives_another_log(tmp_path: Path) -> None:
    simulate(EmbeddedLog(tmp_path / "a"), SimConfig(seed=1, tables=1, rounds=20))
    simulate(EmbeddedLog(tmp_path / "b"), SimConfig(seed=2, tables=1, rounds=20))
    assert _segments(tmp_path / "a") != _segments(tmp_path / "b")


def test_each_table_stream_is_gapless_and_hash_chained(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log")
    report = simulate(log, SimConfig(seed=3, tables=4, rounds=40))
    last: dict[bytes, tuple[int, bytes]] = {}
    count = 0
    for batch in log.read():
        for rec in batch:
            env = codec.decode(rec.value)
            seq, prev = last.get(rec.key, (0, bytes(32)))
            assert env.seq == seq + 1
            assert env.prev_hash == prev and chain.verifies(prev, rec.value)
            last[rec.key] = (env.seq, rec.value[-32:])
            count += 1
    assert count == report.events and len(last) == 4


def test_clean_evening_settles_every_wager_as_the_rules_require(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    simulate(log, SimConfig(seed=5, tables=1, rounds=300, decks=2))
    rounds: dict[tuple[str | None, int | None], list] = {}
    for batch in log.read():
        for rec in batch:
            env = codec.decode(rec.value)
            if env.round_no is not None:
                rounds.setdefault((env.shoe_id, env.round_no), []).append(env.event)
    kinds: Counter[str] = Counter()
    for events in rounds.values():
        cards = [e for e in events if isinstance(e, CardDrawn)]
        racked = [e for e in events if isinstance(e, CardsRacked)]
        assert len(racked) == 1 and [(c.rank, c.suit) for c in racked[0].cards] == \
            [(c.rank, c.suit) for c in cards]
        left, right = cards[0].rank, cards[1].rank
        third = cards[2].rank if len(cards) > 2 else None
        kind = rules.classify(left, right).kind
        kinds[kind] += 1
        assert len(cards) == (2 if kind is rules.HandKind.CONSECUTIVE else 3)
        for s in (e for e in events if isinstance(e, WagerSettled)):
            expected = rules.settle_wager(rules.STANDARD_PAYTABLE, left, right, third, 1)
            assert s.outcome.value == expected.outcome.value.upper()
    assert set(kinds) == set(rules.HandKind) and sum(kinds.values()) == 300


def test_shoe_is_reshuffled_after_the_cutting_card(tmp_path: Path) -> None:
    log = EmbeddedLog(tmp_path / "log", partitions=1)
    report = simulate(log, SimConfig(seed=9, tables=1, rounds=200, decks=1))
    types = [codec.decode(r.value).event_type for b in log.read() for r in b]
    reached = [i for i, t in enumerate(types) if t == "CuttingCardReached"]
    assert report.shoes >= 10 and len(reached) >= report.shoes - 1
    for i in reached:
        # the round in progress is completed (13:47-20.31(d)16): racked before the shoe closes
        after = types[i:]
        assert after.index("CardsRacked") < after.index("ShoeClosed")


def test_a_recorder_continues_past_a_foreign_record_at_a_tables_tail(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from events.recording.recorder import Recorder, scan_heads
    from events.reddog.model import DealerTappedIn

    log = EmbeddedLog(tmp_path / "log", partitions=1)
    simulate(log, SimConfig(seed=4, tables=1, rounds=3))
    good = scan_heads(log)["T01"]
    good_seq, good_hash = good.seq, good.hash
    log.append([(b"T01", b"not a pitlog event")])
    head = scan_heads(log)["T01"]
    assert (head.seq, head.hash) == (good_seq, good_hash)
    recorder = Recorder(log, heads={"T01": head})
    seq = recorder.record("T01", DealerTappedIn(dealer_id="D9"), shoe_id=None, round_no=None,
                          actor="D9", occurred_at=datetime(2026, 11, 29, tzinfo=UTC))
    assert seq == good_seq + 1


def test_uuid4_text_is_the_text_of_uuid4_for_the_same_bits() -> None:
    """The simulator's event ids: uuid4_text(bits) is str(uuid.UUID(int=bits, version=4)),
    so a seeded evening keeps its ids (issue 19, item 3), edges of the 128 bits included."""
    rng = random.Random(19)
    cases = [0, 2**128 - 1, 1 << 127, 1 << 76, 1 << 62,
             *(rng.getrandbits(128) for _ in range(2000))]
    for bits in cases:
        assert uuid4_text(bits) == str(uuid.UUID(int=bits, version=4))


def test_simulate_given_the_heads_reads_no_record_of_a_log_without_its_own_heads(
        tmp_path: Path) -> None:
    """On a log that keeps no heads (a Kafka topic without fencing: `last_records` reads the
    whole topic), `pitlog simulate` read the log twice, for the rerun check and again for the
    recorder; given the first read's heads, the recorder reads none, and the evening recorded
    is the one it records after reading them itself."""
    from plain_log import PlainLog

    from events.recording.recorder import last_records

    first = SimConfig(seed=5, tables=2, rounds=4)
    then = SimConfig(seed=5, tables=2, rounds=4, first_table=2)
    logs = {}
    for given in (True, False):
        log = PlainLog(EmbeddedLog(tmp_path / f"log-{given}", partitions=2))
        simulate(log, first)
        before = sum(log.end_offsets().values())
        last = last_records(log)
        assert log.records_read == before  # the first run's own read, of an empty log: none
        simulate(log, then, last=last if given else None)
        assert log.records_read == (1 if given else 2) * before
        logs[given] = _segments(tmp_path / f"log-{given}")
    assert logs[True] == logs[False]


def _part_way(tmp_path: Path, config: SimConfig, keep: dict[bytes, int]
              ) -> tuple[EmbeddedLog, dict[bytes, list[bytes]]]:
    """A log holding the first `keep[table]` records of each table of one run of `config` (what
    a run stopped part way leaves), and that run's records by table."""
    whole = EmbeddedLog(tmp_path / "whole")
    simulate(whole, config)
    expected = records_by_table(whole)
    log = EmbeddedLog(tmp_path / "log")
    log.append([(key, value) for key, n in keep.items() for value in expected[key][:n]])
    return log, expected


def test_a_run_continued_from_four_kinds_of_cut_writes_what_one_run_does(
        tmp_path: Path) -> None:
    """simulate(resume=): from a cut of T01 after its first record, one record before its end,
    inside a duplicate's pair of records and right after a broken link (T02 cut after its
    third), the continued run's records equal one uninterrupted run's, and it reports the
    ones it added. (Every cut of one table, 179-201 cuts for each of three seeds with broken
    links, duplicates and gaps injected at 0.3, was checked the same way by hand on this code,
    also the truth and the count reported: not part of the suite.)"""
    config = SimConfig(seed=9, tables=2, rounds=6, per_code={"DUPLICATE_EVENT": 0.3,
                                                           "CHAIN_BROKEN": 0.3})
    whole = EmbeddedLog(tmp_path / "whole")
    simulate(whole, config)
    expected = records_by_table(whole)
    n01 = len(expected[b"T01"])
    ids = [codec.decode(v).event_id for v in expected[b"T01"]]
    inside_pair = next(i + 1 for i in range(n01 - 1) if ids[i] == ids[i + 1])
    links = [chain.stored_hash(v) for v in expected[b"T01"]]
    after_break = next(i + 1 for i in range(1, n01) if codec.decode(expected[b"T01"][i]).prev_hash
                       != links[i - 1])
    for cut in sorted({1, inside_pair, after_break, n01 - 1}):
        log, _ = _part_way(tmp_path / str(cut), config, {b"T01": cut, b"T02": 3})
        heads = last_records(log)
        held = {h.table: h.held for h in held_tables(heads, config)}
        assert held == {"T01": cut, "T02": 3}
        report = simulate(log, config, last=heads, resume=held)
        assert records_by_table(log) == expected, cut
        assert report.events == n01 - cut + len(expected[b"T02"]) - 3


@pytest.mark.parametrize("next_record", ["recorded", "a broken link"])
def test_a_writer_that_appended_to_a_table_since_the_check_stops_the_continued_run(
        tmp_path: Path, next_record: str) -> None:
    """The rest of a stopped run is appended with the recorder's check of each table's head:
    another writer's record at T01 after the run read its heads is a conflict, and nothing
    of T01 is recorded after it (docs/operating.md, "Simulating into a log that has events").
    Also when the run's next record is an injected broken link, which the simulator appends
    itself (irregularities.record_tampered): it was appended unchecked, after the other
    writer's record (found by an outside review)."""
    config = SimConfig(seed=7, tables=1, rounds=60, per_code={"CHAIN_BROKEN": 0.3})
    whole = EmbeddedLog(tmp_path / "whole")
    simulate(whole, config)
    values = records_by_table(whole)[b"T01"]
    broken = [i for i in range(1, len(values)) if codec.decode(values[i]).prev_hash
              != chain.stored_hash(values[i - 1])]
    cut = broken[0] if next_record == "a broken link" else next(
        i for i in range(5, len(values)) if i not in broken)
    log, expected = _part_way(tmp_path / "part", config, {b"T01": cut})
    heads = last_records(log)
    held = {h.table: h.held for h in held_tables(heads, config)}
    assert held == {"T01": cut}
    other = Recorder(EmbeddedLog(tmp_path / "part" / "log"))
    other.record("T01", DealerTappedIn(dealer_id="D9"), shoe_id=None, round_no=None,
                 actor="pit", occurred_at=datetime(2026, 11, 29, tzinfo=UTC))
    other.flush()
    with pytest.raises(ConcurrencyError):
        simulate(log, config, last=heads, resume=held)
    values = records_by_table(EmbeddedLog(tmp_path / "part" / "log"))[b"T01"]
    assert values[:cut] == expected[b"T01"][:cut]
    assert len(values) == cut + 1  # the other writer's record, and nothing of the run after it

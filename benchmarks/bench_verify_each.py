"""chain.verify_each (the projector's own-hash check, both read paths) against the two copies it
replaced (log_checks.hash_ok over LogRecord values, frames.hash_ok over one buffer), on the same
synthetic chain, interleaved, CPU time, medians.

    .venv/bin/python benchmarks/bench_verify_each.py --events 200000 --repeats 15
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import time

import numpy as np

from events.wire.chain import HASH_LEN, verify_each


def old_records(prevs: list[bytes], values: list[bytes]) -> list[bool]:
    """log_checks.hash_ok before (main e35a766)."""
    sha256, n = hashlib.sha256, HASH_LEN
    return [sha256(p + v[:-n]).digest() == v[-n:] for p, v in zip(prevs, values, strict=True)]


def old_frames(buf: bytes, start: np.ndarray, end: np.ndarray, prevs: list[bytes]) -> list[bool]:
    """frames.hash_ok before (main e35a766)."""
    sha256, mv = hashlib.sha256, memoryview(buf)
    return [sha256(p + mv[a:z - HASH_LEN]).digest() == mv[z - HASH_LEN:z]
            for p, a, z in zip(prevs, start.tolist(), end.tolist(), strict=True)]


def mv_frames(buf: bytes, start: np.ndarray, end: np.ndarray, prevs: list[bytes]) -> list[bool]:
    """The alternative not taken: each message a memoryview of the buffer."""
    mv = memoryview(buf)
    return verify_each(prevs, map(mv.__getitem__, map(slice, start.tolist(), end.tolist())))


def new_frames_bytes(buf: bytes, start: np.ndarray, end: np.ndarray,
                     prevs: list[bytes]) -> list[bool]:
    """frames.hash_ok now: each message sliced out of the buffer as bytes."""
    return verify_each(prevs, map(buf.__getitem__, map(slice, start.tolist(), end.tolist())))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    msgs, prevs, prev = [], [], b"\0" * HASH_LEN
    for i in range(args.events):
        body = os.urandom(150 + i % 100)  # the simulator's messages are 150-250 bytes
        msg = body + hashlib.sha256(prev + body).digest()
        msgs.append(msg)
        prevs.append(prev)
        prev = msg[-HASH_LEN:]
    buf = b"".join(msgs)
    end = np.cumsum([len(m) for m in msgs])
    start = end - np.array([len(m) for m in msgs])
    ways = {"records, old": lambda: old_records(prevs, list(msgs)),
            "records, new (verify_each)": lambda: verify_each(prevs, list(msgs)),
            "frames, old": lambda: old_frames(buf, start, end, prevs),
            "frames, new (verify_each)": lambda: new_frames_bytes(buf, start, end, prevs),
            "frames, memoryview slices": lambda: mv_frames(buf, start, end, prevs)}
    cpu: dict[str, list[float]] = {k: [] for k in ways}
    for r in range(args.repeats):
        names = list(ways)
        names = names[r % len(names):] + names[:r % len(names)]  # rotate the order
        for name in names:
            t = time.process_time()
            ok = ways[name]()
            cpu[name].append(time.process_time() - t)
            assert all(ok) and len(ok) == args.events
    for name, times in cpu.items():
        print(f"{name:28} {statistics.median(times) / args.events * 1e6:.3f} CPU µs per event")


if __name__ == "__main__":
    main()

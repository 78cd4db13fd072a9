"""Timing a method or function in place, for the benchmarks that time the projector's parts
(bench_resume.py, bench_round_money_live.py); and the best CPU time of repeated passes
(bench_device_line.py, bench_bounds_trees.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable


def best_cpu(work: Callable[[object], object], items: Iterable[object], passes: int) -> float:
    """The least CPU seconds of `passes` passes calling `work` on each of `items`."""
    items = list(items)
    best = float("inf")
    for _ in range(passes):
        cpu = time.process_time()
        for item in items:
            work(item)
        best = min(best, time.process_time() - cpu)
    return best


def time_calls(owner: object, name: str, spent: dict[str, float], key: str = "") -> None:
    """Replace `owner.name` (a class's method, a module's function) by a wrapper that adds each
    call's wall seconds to spent[key or name]."""
    f = getattr(owner, name)
    key = key or name

    def wrapper(*a, **k):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            spent[key] = spent.get(key, 0.0) + time.perf_counter() - t
    setattr(owner, name, wrapper)

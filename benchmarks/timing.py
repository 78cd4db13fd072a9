"""Timing a method or function in place, for the benchmarks that time the projector's parts
(bench_resume.py, bench_round_money_live.py)."""

from __future__ import annotations

import time


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

"""How long a follower waits before trying again after failures in a row: to read its log (a
broker restarting, a log folder moved away) and to publish alerts to a sink that refused them.

Each failure in a row doubles the wait from a second, up to RETRY_MAX_S. Short, because the
wait is time a surveillance room is blind after the broker is back: with waits up to 30 s, a
broker back 40 s after the first failure was found by the try at 61 s (tries at 0, 1, 3, 7,
15, 31 and 61 s), 21 s later, and up to 30 s in general; at 5 s, by the try at 42 s, and
within 5 s in general. Each try costs one connection attempt and one warning line.
"""

from __future__ import annotations

import logging

RETRY_MAX_S = 5.0
# A warning for every twelfth failure in a row: a minute of RETRY_MAX_S waits.
WARN_EVERY = 12


def retry_wait(failures: int) -> float:
    """Seconds to wait after `failures` failures in a row (at least 1): 1, 2, 4, then 5."""
    return min(RETRY_MAX_S, 2.0 ** (failures - 1))


def warns(failures: int, *, new_error: bool = False) -> bool:
    """Whether the `failures`-th failure in a row (from 1) is logged as a warning: the first,
    every WARN_EVERY-th, and one that says something the one before did not (`new_error`: the
    log came back as another log, say); the others at DEBUG."""
    return failures == 1 or failures % WARN_EVERY == 0 or new_error


def failure_level(failures: int, *, new_error: bool = False) -> int:
    """The logging level of the `failures`-th failure in a row (warns)."""
    return logging.WARNING if warns(failures, new_error=new_error) else logging.DEBUG

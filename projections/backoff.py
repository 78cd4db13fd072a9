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


class FailureStreak:
    """Failures in a row of one thing (the follower's reads of its log, a sink's publishes):
    their count, the last one's text, and the level each is logged at, so an hour of one
    outage is 61 warnings, not 720."""

    def __init__(self) -> None:
        self.count = 0  # in a row, since the last success
        self.error: str | None = None  # the last failure's text; None once one succeeds

    def failed(self, error: str) -> int:
        """Note a failure; the level to log it at: WARNING for the first in a row, every
        WARN_EVERY-th, and one that says something the one before did not (the log came back
        as another log, say); DEBUG for the others."""
        new_error = error != self.error
        self.count += 1
        self.error = error
        warns = self.count == 1 or self.count % WARN_EVERY == 0 or new_error
        return logging.WARNING if warns else logging.DEBUG

    def wait(self) -> float:
        """Seconds to wait before the next try (retry_wait)."""
        return retry_wait(self.count)

    def reset(self) -> None:
        """A success: the next failure starts a new streak."""
        self.count, self.error = 0, None

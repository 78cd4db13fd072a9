"""Prometheus text exposition of the follower's counters (text format 0.0.4)."""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Sequence

# Event-to-alert latency buckets, in seconds (upper bounds; +Inf is implied).
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    """Counters updated by the follower thread, read by GET /metrics."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records = 0  # log records committed (events and quarantined ones)
        self.batches = 0
        self.alerts = 0
        self.lag: dict[int, int] = {}
        self._buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self._latency_sum = 0.0
        self._latency_count = 0

    def batch(self, records: int, lag: dict[int, int], latencies: Sequence[float] = (),
              raised: int | None = None) -> None:
        """One committed batch: its records, the lag after it, and the alerts it raised
        (`raised`, default one per latency; `latencies` in seconds), all under one lock."""
        with self._lock:
            self.batches += 1
            self.records += records
            self.lag = dict(lag)
            self.alerts += len(latencies) if raised is None else raised
            for s in latencies:
                self._buckets[bisect_left(LATENCY_BUCKETS, s)] += 1
                self._latency_sum += s
                self._latency_count += 1

    def set_lag(self, lag: dict[int, int]) -> None:
        with self._lock:
            self.lag = dict(lag)

    def render(self) -> str:
        with self._lock:
            out = [
                "# HELP pitlog_events_projected_total Log records committed by this process "
                "(events and quarantined records).",
                "# TYPE pitlog_events_projected_total counter",
                f"pitlog_events_projected_total {self.records}",
                "# HELP pitlog_batches_total Batches committed.",
                "# TYPE pitlog_batches_total counter",
                f"pitlog_batches_total {self.batches}",
                "# HELP pitlog_lag_records Records in the log not yet committed, per partition.",
                "# TYPE pitlog_lag_records gauge",
                *(f'pitlog_lag_records{{partition="{p}"}} {n}'
                  for p, n in sorted(self.lag.items())),
                "# HELP pitlog_alerts_raised_total Alerts committed by this process.",
                "# TYPE pitlog_alerts_raised_total counter",
                f"pitlog_alerts_raised_total {self.alerts}",
                "# HELP pitlog_event_to_alert_seconds From an event's recorded_at to the "
                "commit of its alert.",
                "# TYPE pitlog_event_to_alert_seconds histogram",
            ]
            cumulative = 0
            for bound, n in zip((*LATENCY_BUCKETS, None), self._buckets, strict=True):
                cumulative += n
                le = "+Inf" if bound is None else repr(bound)
                out.append(f'pitlog_event_to_alert_seconds_bucket{{le="{le}"}} {cumulative}')
            out.append(f"pitlog_event_to_alert_seconds_sum {self._latency_sum}")
            out.append(f"pitlog_event_to_alert_seconds_count {self._latency_count}")
        return "\n".join(out) + "\n"

"""What an alert sink is: where published alerts go, beside the event log (docs/architecture.md,
principle 8). Each backend provides its own (`EventLog.alert_sink`): the embedded log an
`alerts.jsonl` in its folder (events/log/embedded/alerts.py), Kafka a topic `<topic>.alerts`
(events/log/kafka/alerts.py).

An alert is a dict with the fields of schemas/alerts/Alert.v1.avsc (times as aware datetimes).
A sink appends alerts durably, in alert_seq order, and tells the last alert it holds (`last`:
its alert_seq and alert_id), so a publisher killed between appending and recording its cursor
does not append the same alerts again, and a store that did not raise them does not publish
after them (projections/alerts.py, publish_pending).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

Alert = dict[str, Any]
ALERT_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "alerts" / "Alert.v1.avsc"


class AlertSink(Protocol):
    name: str

    def append(self, alerts: Sequence[Alert]) -> None: ...
    def last(self) -> tuple[int, str | None]: ...  # (alert_seq, alert_id); (0, None) if empty
    def close(self) -> None: ...

"""What an alert sink is: where published alerts go, beside the event log (docs/architecture.md,
principle 8). Each backend provides its own (`EventLog.alert_sink`): the embedded log an
`alerts.jsonl` in its folder (events/log/embedded/alerts.py), Kafka a topic `<topic>.alerts`
(events/log/kafka/alerts.py).

An alert is a dict with the fields of schemas/alerts/Alert.v1.avsc (times as aware datetimes).
A sink appends alerts durably, in the order given, and tells the last alert it holds (`last`:
its alert_seq and alert_id), so a publisher killed between appending and recording its cursor
does not append the same alerts again. When that last alert is not the publishing store's own (a
store restored from a backup, or rebuilt, numbers its alerts otherwise), the publisher reads
every alert_id the sink holds (`ids`) and publishes only the ids the sink lacks
(projections/alerts.py, publish_pending): alert_seq in a sink is then the numbering of the store
that published each alert, not always rising; alert_id is what identifies an alert.
`append(alerts, after)` refuses (LogError) when the sink's last alert is no longer `after`
(another publisher appended since this one read the tail); the Kafka topic gets the same from
fencing its transactional producer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

Alert = dict[str, Any]
ALERT_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "alerts" / "Alert.v1.avsc"


class AlertSink(Protocol):
    name: str

    def append(self, alerts: Sequence[Alert],
               after: tuple[int, str | None] | None = None) -> None: ...
    def last(self) -> tuple[int, str | None]: ...  # (alert_seq, alert_id); (0, None) if empty
    def ids(self) -> set[str]: ...  # every alert_id it holds (a read of the whole sink)
    def close(self) -> None: ...

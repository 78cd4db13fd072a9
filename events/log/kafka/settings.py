"""kafka-python settings pitlog uses wherever it talks to a broker: the topics it creates, the
producer's delivery guarantees, the reader's isolation, and the PITLOG_KAFKA_* security variables
(listed in events/log/kafka/log.py). The event log and the alert topic share them; the benchmark
gives bare kafka-python the same ones.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kafka.errors import KafkaConnectionError
from kafka.net.compat import KafkaNetClient

DEFAULT_TIMEOUT_S = 120.0
# The longest wait between two attempts to reach a broker that refused or dropped a connection.
# kafka-python 3.0.12's default (30 s) doubles the wait per failure, so a broker back after a
# restart of half a minute or more was reached up to 30 s later: each producer, the alert
# topic's too, then sent nothing meanwhile (benchmarks/bench_alert_restart.py). The Java
# client's default; a refused connect costs the broker nothing.
RECONNECT_BACKOFF_MAX_MS = 1000
# Topic settings of an audit log: keep everything forever, never compact.
TOPIC_CONFIG = {"retention.ms": "-1", "cleanup.policy": "delete"}


def topic_config(replication_factor: int) -> dict[str, str]:
    """Settings of a topic pitlog creates. With 3 or more replicas an append needs 2 in-sync
    copies (acks=all counts only in-sync replicas), so one broker may fail without losing an
    acknowledged event or stopping the tables."""
    config = {**TOPIC_CONFIG, "unclean.leader.election.enable": "false"}
    if replication_factor >= 3:
        config["min.insync.replicas"] = "2"
    return config


_ENV_SETTINGS: dict[str, str] = {
    "PITLOG_KAFKA_SECURITY_PROTOCOL": "security_protocol",
    "PITLOG_KAFKA_SSL_CAFILE": "ssl_cafile",
    "PITLOG_KAFKA_SSL_CERTFILE": "ssl_certfile",
    "PITLOG_KAFKA_SSL_KEYFILE": "ssl_keyfile",
    "PITLOG_KAFKA_SSL_PASSWORD": "ssl_password",
    "PITLOG_KAFKA_SSL_CRLFILE": "ssl_crlfile",
    "PITLOG_KAFKA_SSL_CHECK_HOSTNAME": "ssl_check_hostname",
    "PITLOG_KAFKA_SASL_MECHANISM": "sasl_mechanism",
    "PITLOG_KAFKA_SASL_PLAIN_USERNAME": "sasl_plain_username",
    "PITLOG_KAFKA_SASL_PLAIN_PASSWORD": "sasl_plain_password",
    "PITLOG_KAFKA_SASL_KERBEROS_SERVICE_NAME": "sasl_kerberos_service_name",
}


def security_settings(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """kafka-python connection settings from the PITLOG_KAFKA_* variables that are set."""
    env = os.environ if env is None else env
    settings: dict[str, Any] = {}
    for var, name in _ENV_SETTINGS.items():
        value = env.get(var)
        if value:
            settings[name] = value.lower() not in ("0", "false", "no") \
                if name == "ssl_check_hostname" else value
    return settings


class ReconnectingClient(KafkaNetClient):
    """kafka-python's network client, except that `await_ready` answers False for a broker it
    cannot reach, as the producer's sender expects (kafka/producer/sender.py,
    _maybe_send_pending_request), instead of raising. Raised, the sender's handler of the error
    looks the transaction coordinator up again but drops the request it was sending: after a
    broker restart, a transaction's AddPartitionsToTxn was never sent again, its records never
    became sendable, and each publish or fenced append begun while the broker was down waited
    out delivery_timeout_ms (60 s for the alert topic) although the broker was back in
    seconds. Answered False, the sender looks the coordinator up and re-queues the request (the
    Java client's Sender does both). Only the producers are given it (producer_settings): the
    client's own send_and_receive, which nothing in a producer calls, relies on the raise."""

    def await_ready(self, node_id: Any, timeout_ms: int = 30000) -> bool:
        try:
            return bool(super().await_ready(node_id, timeout_ms=timeout_ms))
        except KafkaConnectionError:
            return False


def reconnect_settings() -> dict[str, Any]:
    """How every producer and reader reconnects to a broker that went away."""
    return {"reconnect_backoff_max_ms": RECONNECT_BACKOFF_MAX_MS}


def producer_settings(timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """The producer's delivery settings; the benchmark gives bare kafka-python the same ones."""
    linger_ms = 100  # flush() at the end of append sends at once anyway
    # kafka-python (as the Java client) refuses delivery_timeout_ms <= linger_ms +
    # request_timeout_ms: a short timeout_s (`?timeout_s=10`) shortens the request timeout
    # with it rather than making every producer fail to start.
    request_timeout_ms = max(1_000, min(30_000, int(timeout_s * 1000) - linger_ms - 1))
    return {
        "enable_idempotence": True,
        "acks": "all",
        "retries": 2**31 - 1,  # bounded by delivery_timeout_ms, as in the Java client
        # Idempotence keeps order with up to 5 in-flight requests per connection (KIP-98).
        "max_in_flight_requests_per_connection": 5,
        "delivery_timeout_ms": max(int(timeout_s * 1000), request_timeout_ms + linger_ms + 1),
        "request_timeout_ms": request_timeout_ms,
        # Appends come in batches of thousands: big batches and a linger wake the sender thread
        # less often, which doubled send() throughput here (it contends for the GIL).
        "batch_size": 256 * 1024,
        "linger_ms": linger_ms,
        **reconnect_settings(),
        # The sender re-sends a transaction's request after a broker restart (ReconnectingClient).
        "kafka_client": ReconnectingClient,
    }


def consumer_settings() -> dict[str, Any]:
    """The reader's settings; the benchmark gives bare kafka-python the same ones."""
    return {
        "group_id": None,  # manual assign + seek: the checkpoint lives in DuckDB
        "enable_auto_commit": False,
        # A checkpoint outside the topic is an error to report, not to paper over.
        "auto_offset_reset": "none",
        "max_partition_fetch_bytes": 4 * 1024 * 1024,
        # kafka-python 3.0.12 never fetches again a partition that was paused and resumed in
        # an incremental fetch session (read() pauses each partition at its end): full fetch
        # requests instead, which cost a little more per request with many partitions.
        "enable_incremental_fetch_sessions": False,
        "request_timeout_ms": 30_000,
        # Records of aborted transactions (a writer fenced by another writer of its table,
        # events/log/kafka/fencing.py) are never read; reading stops at the last stable offset.
        "isolation_level": "read_committed",
        **reconnect_settings(),
    }

"""Opening a log by its address: each scheme names the module and class of its backend.

A backend is imported by name when its scheme is used, so kafka-python is loaded only for a
kafka:// address, and the contract (events/log/base.py) imports no backend. A scheme with no
backend, or a backend that cannot be loaded, is a LogError naming it, never a silent fallback.
"""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path

from events.errors import LogError
from events.log.base import DEFAULT_DATA_DIR, EventLog

# scheme -> (module, class): the backends pitlog ships. tests/events/test_import_contract.py checks
# that each one loads, is an EventLog, and that nothing else imports a backend's module.
BACKENDS: dict[str, tuple[str, str]] = {
    "file": ("events.log.embedded.log", "EmbeddedLog"),
    "kafka": ("events.log.kafka.log", "KafkaLog"),
}


def default_log_uri(data_dir: Path = DEFAULT_DATA_DIR) -> str:
    return os.environ.get("PITLOG_LOG") or f"file://{(data_dir / 'log').resolve()}"


def scheme_of(uri: str) -> str:
    """`kafka://...` -> kafka; a bare path is the embedded log's `file`."""
    return uri.split("://", 1)[0] if "://" in uri else "file"


def backend(scheme: str) -> type[EventLog]:
    """The EventLog class registered for `scheme`, imported now."""
    if scheme not in BACKENDS:
        raise LogError(f"unknown log address scheme {scheme!r}: use file:///path/to/log or "
                       f"kafka://host:port/topic")
    module_name, class_name = BACKENDS[scheme]
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise LogError(f"the {scheme}:// log backend ({module_name}.{class_name}) cannot be "
                       f"loaded: {exc}; reinstall pitlog with its dependencies") from exc
    if not (isinstance(cls, type) and issubclass(cls, EventLog)):
        raise LogError(f"the {scheme}:// log backend {module_name}.{class_name} is not an "
                       f"EventLog")
    return cls


# A scheme and a colon not followed by '//' (RFC 3986's scheme characters).
_HALF_URI = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(?!//)")


def check_address(uri: str) -> None:
    """LogError for an address that starts with a backend's scheme but no '//': `file:rel/log`
    is a folder of that name to the OS (a log was made there, then its id index failed; an
    outside review, session 39)."""
    half = _HALF_URI.match(uri)
    if half and half.group(1).lower() in BACKENDS:
        raise LogError(f"the log address {uri!r} has a scheme but no '//': use "
                       f"file:///absolute/path/to/log, kafka://host:port/topic, or ./{uri} "
                       f"for a folder of that name")


def open_log(uri: str | None = None, *, partitions: int | None = None,
             create: bool = True) -> EventLog:
    """`file:///path` or a bare path: the embedded log; `kafka://host:port/topic`: Kafka.

    `create=False` (readers: project, verify): a missing log folder or Kafka topic is a
    LogError naming it, never an empty log made on the spot."""
    uri = uri or default_log_uri()
    check_address(uri)
    scheme = scheme_of(uri)
    if scheme not in BACKENDS:
        raise LogError(f"unknown log address {uri!r}: use file:///path/to/log or "
                       f"kafka://host:port/topic")
    return backend(scheme).from_uri(uri, partitions=partitions, create=create)

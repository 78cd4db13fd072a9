"""--log-level and --log-format for the long-running commands (`serve`, `project --follow`):
one line per event to stderr, as text for people or as one JSON object per line for a log
shipper."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

import typer


class LogFormat(StrEnum):
    text = "text"
    json = "json"


class LogLevel(StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


LogLevelOpt = Annotated[LogLevel, typer.Option(
    "--log-level", envvar="PITLOG_LOG_LEVEL",
    help="Least severe log line written to stderr (info: one line per committed batch).")]
LogFormatOpt = Annotated[LogFormat, typer.Option(
    "--log-format", envvar="PITLOG_LOG_FORMAT",
    help="text for people, json for one object per line (time, level, logger, message and "
         "fields such as records and lag).")]

# The attributes every LogRecord has: anything else on a record came from `extra=`.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {"time": datetime.fromtimestamp(record.created, UTC).isoformat(),
                "level": record.levelname.lower(), "logger": record.name,
                "message": record.getMessage()}
        line.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def setup_logging(level: LogLevel, fmt: LogFormat) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt is LogFormat.json else logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.value.upper())
    # uvicorn's own loggers propagate here, formatted the same way.
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    # kafka-python logs each connection, metadata refresh and coordinator change at INFO: a
    # night's serve log was 1,598 lines of it beside 50 of pitlog's (an outside review, session
    # 38). Its warnings and errors still show; --log-level debug shows all of it.
    if root.level > logging.DEBUG:
        logging.getLogger("kafka").setLevel(max(root.level, logging.WARNING))

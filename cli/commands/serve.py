"""`pitlog serve`: follow the log into the database and serve it read-only over HTTP (the JSON
API, the console's pages and the alerts stream: projections/serve/)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from cli.logs import LogFormat, LogFormatOpt, LogLevel, LogLevelOpt, setup_logging
from cli.options import DbOpt, LogOpt, TzOpt, db_path, log_uri
from events.log.registry import open_log
from projections.localtime import casino_zone
from projections.serve.runner import check_bind, serve


def serve_cmd(
    host: Annotated[str, typer.Option(
        "--host", envvar="PITLOG_HOST",
        help="Address to listen on. Anything but loopback needs PITLOG_TOKEN.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(
        "--port", envvar="PITLOG_PORT", min=0, max=65535,
        help="TCP port (0: any free port; the chosen URL is written to <db>.serve.json).")]
    = 8750,
    log: LogOpt = None,
    db: DbOpt = None,
    tz: TzOpt = None,
    poll_interval: Annotated[float, typer.Option(
        "--poll-interval", min=0.01,
        help="Seconds between looks at the log when nothing is new.")] = 0.1,
    snapshot_every: Annotated[float, typer.Option(
        "--snapshot-every", min=0.0,
        help="Also publish a read-only copy <db>.snapshot.duckdb for stock DuckDB clients at "
             "most this often, in seconds (0: never; a copy costs a read of the whole file).")]
    = 0.0,
    sql_timeout: Annotated[float, typer.Option(
        "--sql-timeout", min=0.1, help="Seconds an /api/sql query may run.")] = 10.0,
    sql_max_rows: Annotated[int, typer.Option(
        "--sql-max-rows", min=1, help="Rows an /api/sql query may return.")] = 10_000,
    memory_limit: Annotated[str | None, typer.Option(
        "--memory-limit", envvar="PITLOG_MEMORY_LIMIT",
        help="DuckDB's memory, e.g. 2GB (default 512MB).")] = None,
    log_level: LogLevelOpt = LogLevel.info,
    log_format: LogFormatOpt = LogFormat.text,
) -> None:
    """Follow the log into the database (as `project --follow` does) and serve it read-only over
    HTTP: the JSON API (/api/...), alerts as Server-Sent Events (/alerts), /health and
    /metrics. The query commands (shoes, anomalies, ...) use it automatically. Stop with
    Ctrl-C or SIGTERM. Binding beyond loopback needs PITLOG_TOKEN (sent as a bearer token).

    Example: pitlog serve --port 8750 --tz America/New_York
    """
    token = os.environ.get("PITLOG_TOKEN") or None
    check_bind(host, token)  # before opening anything
    zone = casino_zone(tz)  # the API's times carry its offset; a wrong name is an Error: line
    setup_logging(log_level, log_format)
    with open_log(log_uri(log)) as event_log:
        serve(event_log, db_path(db), host=host, port=port, token=token, tz=zone,
              poll_interval=poll_interval, snapshot_every=snapshot_every,
              memory_limit=memory_limit, sql_timeout=sql_timeout, sql_max_rows=sql_max_rows)

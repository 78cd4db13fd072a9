"""`pitlog project`: bring the DuckDB views up to date with the log, once or following it."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from cli.logs import LogFormat, LogFormatOpt, LogLevel, LogLevelOpt, setup_logging
from cli.options import DbOpt, LogOpt, SummaryOpt, db_path, log_uri
from cli.output import Summary, plain, render
from cli.progress import phase, progress_tasks
from cli.reading import reading
from events.errors import PitlogError
from events.log.registry import open_log
from events.text import visible
from projections.follow import follow as follow_log
from projections.projector import project, quarantined_since
from projections.serve.discovery import read as serving


def project_cmd(
    log: LogOpt = None,
    db: DbOpt = None,
    follow: Annotated[
        bool, typer.Option("--follow", help="Keep following the log until Ctrl-C or SIGTERM.")
    ] = False,
    memory_limit: Annotated[
        str | None,
        typer.Option(envvar="PITLOG_MEMORY_LIMIT",
                     help="DuckDB's memory while projecting, e.g. 2GB (default 512MB); "
                          "beyond it DuckDB spills to <db>.tmp."),
    ] = None,
    # Single flags, not --follow/--no-follow and --alerts/--no-alerts pairs: typer gives a
    # pair's second name a column of its own, which cut the options' help at 80 columns. The
    # defaults' names are still accepted, hidden.
    no_alerts: Annotated[
        bool, typer.Option("--no-alerts",
                           help="Do not publish new alerts to the sink beside the log "
                                "(alerts.jsonl, or the Kafka alert topic). One store per log "
                                "publishes: rebuild into a second store with --no-alerts.")
    ] = False,
    _alerts: Annotated[bool, typer.Option("--alerts", hidden=True)] = False,
    _no_follow: Annotated[bool, typer.Option("--no-follow", hidden=True)] = False,
    format: SummaryOpt = Summary.table,
    log_level: LogLevelOpt = LogLevel.warning,
    log_format: LogFormatOpt = LogFormat.text,
) -> None:
    """Bring the DuckDB views up to date with the log (only new events are read). With
    --follow, --log-level info logs one line per committed batch (records and lag).

    Example: pitlog project --db pitlog-data/pitlog.duckdb --memory-limit 2GB

    Example (a second store of the same log, which must not publish): pitlog project --db
    rebuild.duckdb --no-alerts
    """
    path = db_path(db)
    alerts = not no_alerts

    if (server := serving(path)) is not None:
        raise PitlogError(f"{path} is held by `pitlog serve` at {server['url']} (pid "
                          f"{server['pid']}), which already keeps it up to date with its log; "
                          f"stop it first to project here")
    started = time.perf_counter()
    since = datetime.now(UTC)
    with open_log(log_uri(log), create=False) as event_log:  # a reader never creates a log
        total = sum(event_log.end_offsets().values())
        with progress_tasks() as task:
            update = task("projecting events", total)
            if follow:
                setup_logging(log_level, log_format)
                report = follow_log(event_log, path, progress=update,
                                    memory_limit=memory_limit, publish_alerts=alerts)
            else:
                report = project(event_log, path, progress=update, memory_limit=memory_limit,
                                 anomaly_progress=phase(task, "storing anomaly rows"),
                                 money_progress=phase(task, "storing round money rows"),
                                 publish_alerts=alerts)
    if report.quarantined:
        _tell_quarantined(path, event_log.uri, since, report.quarantined)
    row = report.as_row()
    # The whole command, its start included (`seconds` is project()'s own: the events, the
    # anomaly rows and the round money).
    whole = time.perf_counter() - started
    row.update(total_seconds=round(whole, 3),
               events_per_second_overall=round(report.events / whole) if whole > 0 else None)
    render([{k: plain(v) for k, v in row.items()}], format)


def _tell_quarantined(db: Path, source: str, since: datetime, count: int) -> None:
    """Each record this run refused, by partition and offset with its reason, on stderr: the
    summary's count alone left a user to find them (principle 1: never silently dropped)."""
    with reading(db) as con:
        shown = quarantined_since(con, source, since)
    for partition, offset, reason in shown:
        typer.echo(f"Warning: record p{partition}@{offset} of {source} was quarantined, not "
                   f"projected: {visible(reason)}", err=True)
    more = f" ({count - len(shown):,} more not shown)" if count > len(shown) else ""
    typer.echo(f"Warning: {count:,} record{'s' if count != 1 else ''} quarantined{more}: "
               f"pitlog sql \"SELECT * FROM quarantine\" lists them with their bytes; fix "
               f"the producer and send the events again", err=True)

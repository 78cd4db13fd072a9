"""`pitlog ingest`: device JSON lines recorded as events; bad lines quarantined with their
reasons (events/recording/ingest.py, docs/ingest.md)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Annotated

import typer

from cli import verdict
from cli.options import (
    CreateTopicOpt,
    LogOpt,
    SummaryOpt,
    log_uri,
    new_file,
    open_for_writing,
)
from cli.output import Summary, render
from cli.progress import progress_bar
from events.errors import NotFoundError
from events.recording.defaults import BATCH_LINES
from events.recording.ingest import (
    BadLine,
    IngestReport,
    default_quarantine,
    ingest,
    refuse_reading_the_quarantine,
)
from events.text import visible


def ingest_cmd(
    file: Annotated[str, typer.Argument(help="JSON lines file from the devices, or - for "
                                             "standard input (format: docs/ingest.md).")],
    log: LogOpt = None,
    create_topic: CreateTopicOpt = False,
    quarantine: Annotated[Path | None, typer.Option(
        callback=new_file,
        help="Where refused lines go (appended, JSON lines). Default: next to the log, "
             "e.g. log-quarantine.jsonl in ./pitlog-data.")] = None,
    batch: Annotated[int, typer.Option(
        min=1, help="Lines per append (one fsync each). Use 1 for a live feed on standard input, "
                    "so each line is durable as soon as it arrives.")] = BATCH_LINES,
    format: SummaryOpt = Summary.table,
) -> None:
    """Record device JSON lines (card-reading shoes, shufflers, dealer terminals) as events.
    Each bad line is reported with its line number and reason and quarantined; every good
    line is recorded. Exit code 0 if every line was recorded, 1 if any was rejected.

    Example: pitlog ingest examples/devices.jsonl --log pitlog-data/log
    """
    uri = log_uri(log)
    target = quarantine or default_quarantine(uri)

    def report_bad(bad: BadLine) -> None:
        # sys.stderr, not typer.echo: on a terminal the bar below replaces sys.stderr with a
        # writer that prints above it, which click's echo would go around (garbling the bar).
        print(f"Error: {visible(bad.message)}", file=sys.stderr, flush=True)

    if file == "-":  # a feed's length is not known: lines read so far, no ETA
        with progress_bar("ingesting lines", None) as update:
            report = _ingest(sys.stdin.buffer, "<stdin>", uri, target, report_bad, batch,
                             create_topic, update)
    else:
        path = Path(file)
        if path.is_dir():
            raise NotFoundError(f"{file} is a folder: pass a JSON lines file, or - for stdin")
        if not path.exists():
            raise NotFoundError(f"no file {file}: pass a JSON lines file, or - for stdin")
        # A file's total is its size: the bar counts the bytes read, lines of any length. A
        # pipe (`pitlog ingest <(zcat feed.gz)` passes /dev/fd/63), a FIFO or a device was "no
        # file" (an outside review, session 39): read like standard input, lines read so far
        # and no total, a pipe's length being unknown.
        regular = path.is_file()
        with path.open("rb") as stream, \
                progress_bar("ingesting (bytes read)" if regular else "ingesting lines",
                             path.stat().st_size if regular else None) as update:
            report = _ingest(stream, str(path), uri, target, report_bad, batch, create_topic,
                             (lambda _lines: update(stream.tell())) if regular else update)
    if report.exit_code:
        # said and kept before the summary is written, which a closed pipe would cut short
        verdict.found(report.exit_code)
        typer.echo(f"Error: {report.rejected} of {report.lines} lines rejected; they are in "
                   f"{target} with their reasons: fix and resend them", err=True)
    render([report.as_row()], format, title="ingest")
    if report.exit_code:
        raise typer.Exit(code=report.exit_code)


def _ingest(stream: IO[bytes], source: str, uri: str, target: Path,
            on_reject: Callable[[BadLine], None], batch: int,
            create_topic: bool, progress: Callable[[int], None]) -> IngestReport:
    refuse_reading_the_quarantine(stream, source, target)  # before the log is opened (or made)
    with open_for_writing(uri, create_topic) as event_log:
        try:
            return ingest(stream, event_log, source=source, quarantine=target,
                          on_reject=on_reject, batch_lines=batch, progress=progress)
        finally:
            # Nothing recorded into a log made for it (every line refused): no empty log
            # left, which `project` and `verify` would read as one written.
            event_log.remove_if_made_and_empty()

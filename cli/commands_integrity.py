"""Integrity commands: verify (sequence and hash chain per table) and ingest (device JSON lines)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer

from cli.options import (
    CreateTopicOpt,
    FormatOpt,
    LogOpt,
    OutOpt,
    SummaryOpt,
    log_uri,
    open_for_writing,
)
from cli.output import Format, Summary, render
from cli.progress import progress_bar
from events.errors import NotFoundError
from events.log.registry import open_log
from events.recording.defaults import BATCH_LINES
from events.text import visible

if TYPE_CHECKING:  # imported where used: `pitlog --help` must not load the event model
    from events.recording.ingest import BadLine, IngestReport

ANOMALY_COLUMNS = ["code", "kind", "table", "partition", "offset", "seq", "expected_seq",
                   "shoe", "round", "severity", "explanation", "rule"]


def verify(
    log: LogOpt = None,
    limit: Annotated[int, typer.Option(
        "--limit", "-n", min=1, help="Show at most this many anomalies (all are counted).")
    ] = 10_000,
    format: FormatOpt = Format.table,
    out: OutOpt = None,
) -> None:
    """Check every table stream on the log: gapless sequence numbers (SEQUENCE_GAP) and the
    hash chain (CHAIN_BROKEN), each located by partition, offset and seq; then a summary per
    table. Exit code 1 if anything is broken.

    Example: pitlog verify --log pitlog-data/log --format json
    """
    from events.integrity.verify import verify_log

    uri = log_uri(log)
    if "://" not in uri or uri.startswith("file://"):  # verify must not create an empty log
        folder = Path(uri.removeprefix("file://"))
        if not (folder / "meta.json").exists():
            raise NotFoundError(f"no event log at {folder}: pass --log or set PITLOG_LOG")
    with open_log(uri, create=False) as event_log, progress_bar("verifying", None) as update:
        report = verify_log(event_log, limit=limit, progress=update)
    anomalies = [{c: getattr(a, c) for c in ANOMALY_COLUMNS} for a in report.anomalies]
    tables = [t.as_row() for t in report.tables]
    if format is Format.table and out is None:
        render(anomalies, format, title="integrity anomalies", columns=ANOMALY_COLUMNS)
        render(tables, format, title=f"tables ({report.records} records)")
        if report.anomalies_total > len(report.anomalies):
            typer.echo(f"{len(report.anomalies):,} of {report.anomalies_total:,} anomalies "
                       f"shown: raise --limit for more", err=True)
    else:
        rows = [{"kind_of_row": "anomaly", **a} for a in anomalies] + \
               [{"kind_of_row": "table", **t} for t in tables]
        columns = list(dict.fromkeys(k for r in rows for k in r)) or ["kind_of_row"]
        render(rows, format, out=out, columns=columns)
    if not report.ok:
        raise typer.Exit(code=1)


def ingest_cmd(
    file: Annotated[str, typer.Argument(help="JSON lines file from the devices, or - for "
                                             "standard input (format: docs/ingest.md).")],
    log: LogOpt = None,
    create_topic: CreateTopicOpt = False,
    quarantine: Annotated[Path | None, typer.Option(
        help="Where refused lines go (appended, JSON lines). Default: next to the log, "
             "e.g. pitlog-data/log-quarantine.jsonl.")] = None,
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
    from events.recording.ingest import default_quarantine

    uri = log_uri(log)
    target = quarantine or default_quarantine(uri)

    def report_bad(bad: BadLine) -> None:
        typer.echo(f"Error: {visible(bad.message)}", err=True)

    if file == "-":
        report = _ingest(sys.stdin.buffer, "<stdin>", uri, target, report_bad, batch,
                         create_topic)
    else:
        path = Path(file)
        if not path.is_file():
            raise NotFoundError(f"no file {file}: pass a JSON lines file, or - for stdin")
        with path.open("rb") as stream:
            report = _ingest(stream, str(path), uri, target, report_bad, batch,
                             create_topic)
    render([report.as_row()], format, title="ingest")
    if report.exit_code:
        typer.echo(f"Error: {report.rejected} of {report.lines} lines rejected; they are in "
                   f"{target} with their reasons: fix and resend them", err=True)
        raise typer.Exit(code=report.exit_code)


def _ingest(stream: IO[bytes], source: str, uri: str, target: Path,
            on_reject: Callable[[BadLine], None], batch: int,
            create_topic: bool) -> IngestReport:
    from events.recording.ingest import ingest

    with open_for_writing(uri, create_topic) as event_log:
        return ingest(stream, event_log, source=source, quarantine=target, on_reject=on_reject,
                      batch_lines=batch)

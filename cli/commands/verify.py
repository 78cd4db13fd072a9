"""`pitlog verify`: gapless sequence numbers and the hash chain of every table stream on the log
(events/integrity/verify.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cli import verdict
from cli.options import FormatOpt, LogOpt, OutOpt, log_uri
from cli.output import Format, render
from cli.progress import progress_bar
from events.errors import NotFoundError
from events.integrity.verify import verify_log
from events.log.registry import check_address, open_log

ANOMALY_COLUMNS = ["code", "kind", "table", "partition", "offset", "seq", "expected_seq",
                   "shoe", "round", "severity", "explanation", "rule"]


def verify(
    log: LogOpt = None,
    limit: Annotated[int, typer.Option(
        "--limit", "-n", min=0, help="Show at most this many anomalies (all are counted); 0 "
                                     "for all. Says 'N of M shown' when some are left out.")
    ] = 10_000,
    format: FormatOpt = Format.table,
    out: OutOpt = None,
) -> None:
    """Check every table stream on the log: gapless sequence numbers (SEQUENCE_GAP) and the
    hash chain (CHAIN_BROKEN), each located by partition, offset and seq; then a summary per
    table. Exit code 1 if anything is broken.

    Example: pitlog verify --log pitlog-data/log --format json
    """
    uri = log_uri(log)
    check_address(uri)
    if "://" not in uri or uri.startswith("file://"):  # verify must not create an empty log
        folder = Path(uri.removeprefix("file://"))
        if not (folder / "meta.json").exists():
            raise NotFoundError(f"no event log at {folder}: pass --log or set PITLOG_LOG")
    with open_log(uri, create=False) as event_log, \
            progress_bar("verifying", sum(event_log.end_offsets().values())) as update:
        # --limit 0 shows all, as in every listing command (README, cli/listing.py).
        report = verify_log(event_log, limit=limit or sys.maxsize, progress=update)
    if not report.ok:
        verdict.found()  # exit 1 even if the reader closes the pipe before the rows end
    anomalies = [{c: getattr(a, c) for c in ANOMALY_COLUMNS} for a in report.anomalies]
    tables = [t.as_row() for t in report.tables]
    if format is Format.table and out is None:
        render(anomalies, format, title="integrity anomalies", columns=ANOMALY_COLUMNS)
        render(tables, format, title=f"tables ({report.records} records)")
    else:
        rows = [{"kind_of_row": "anomaly", **a} for a in anomalies] + \
               [{"kind_of_row": "table", **t} for t in tables]
        columns = list(dict.fromkeys(k for r in rows for k in r)) or ["kind_of_row"]
        render(rows, format, out=out, columns=columns)
    if report.anomalies_total > len(report.anomalies):  # on stderr: stdout stays the rows
        typer.echo(f"{len(report.anomalies):,} of {report.anomalies_total:,} anomalies shown: "
                   f"--limit N for more, --limit 0 for all", err=True)
    if not report.ok:
        raise typer.Exit(code=1)

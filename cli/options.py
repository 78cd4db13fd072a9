"""Options shared by several commands, defined once (STYLE: sqlite-utils' shared options)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from cli.output import Format
from events.log import DEFAULT_DATA_DIR, default_log_uri

LogOpt = Annotated[str | None, typer.Option(
    "--log", envvar="PITLOG_LOG", show_default=False,
    help="Event log: a folder / file:///path (embedded, default ./pitlog-data/log) or "
         "kafka://HOST:PORT/TOPIC.")]
DbOpt = Annotated[Path | None, typer.Option(
    "--db", envvar="PITLOG_DB", show_default=False,
    help="DuckDB file of the views (default ./pitlog-data/pitlog.duckdb).")]
FormatOpt = Annotated[Format, typer.Option(
    "--format", "-f", help="Output: table for people; json (an array of objects) or csv for "
                           "machines; parquet needs --out.")]
OutOpt = Annotated[Path | None, typer.Option(
    "--out", "-o", help="Write the rows to this file instead of the screen.")]


def log_uri(value: str | None) -> str:
    return value or default_log_uri()


def db_path(value: Path | None) -> Path:
    return value or Path(os.environ.get("PITLOG_DB") or DEFAULT_DATA_DIR / "pitlog.duckdb")
TzOpt = Annotated[str | None, typer.Option(
    "--tz", envvar="PITLOG_TZ", show_default=False,
    help="The casino's time zone (default UTC): times given without a zone are read on its "
         "clock and the table format shows every time in it. An IANA name (America/New_York) "
         "or an offset (-05:00).")]

"""Options shared by several commands, defined once (STYLE: sqlite-utils' shared options)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from cli.output import Format, Summary
from events.log import DEFAULT_DATA_DIR, default_log_uri

LogOpt = Annotated[str | None, typer.Option(
    "--log", envvar="PITLOG_LOG", show_default=False,
    help="Event log: a folder / file:///path (embedded, default ./pitlog-data/log) or "
         "kafka://HOST:PORT/TOPIC.")]
DbOpt = Annotated[Path | None, typer.Option(
    "--db", envvar="PITLOG_DB", show_default=False,
    help="DuckDB file of the views (default ./pitlog-data/pitlog.duckdb).")]
FormatOpt = Annotated[Format, typer.Option(
    "--format", "-f", help="Output: table for people; json (an array of objects), jsonl (one "
                           "object a line), csv or parquet (needs --out) for machines, written "
                           "by DuckDB with the columns' own types.")]
SummaryOpt = Annotated[Summary, typer.Option(
    "--format", "-f", help="Output: table for people; json, jsonl or csv for machines.")]
OutOpt = Annotated[Path | None, typer.Option(
    "--out", "-o", help="Write the rows to this file instead of the screen.")]


def log_uri(value: str | None) -> str:
    return value or default_log_uri()


def db_path(value: Path | None) -> Path:
    return value or Path(os.environ.get("PITLOG_DB") or DEFAULT_DATA_DIR / "pitlog.duckdb")

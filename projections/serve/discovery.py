"""`<db>.serve.json`: how the CLI finds the server that holds a database.

`pitlog serve` writes it (URL and pid) once it listens, and removes it on exit. A file whose
pid is no longer running (a SIGKILL left it behind) is stale and ignored, and so is one that
names another database (copied along with this one) or an address not of this machine.
Standard library only: the CLI imports this on every query command.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# Sent with every answer of a server whose follower has stopped on an error (serve/api.py
# reply): the answers are those of its last commit, and the CLI says so on stderr
# (cli/client.py), never passing them off as current. Its value says why and since when.
STALE_HEADER = "X-Pitlog-Stale"
# The keys of an answer whose strings are exact decimals, and those that are wall-clock times
# (a TIMESTAMP without a zone): serve/api.py reply names them, cli/client.py revive reads them.
DECIMALS_HEADER = "X-Pitlog-Decimals"
WALL_CLOCKS_HEADER = "X-Pitlog-Wall-Clocks"
# The paths (lists of the object keys from the answer's top; a list's items share its path)
# whose strings NON_FINITE names are floats JSON cannot carry (NaN, infinity): sent as DuckDB's
# text of them, read back as the floats, so a table or CSV of a served answer prints `nan` as
# the file's does (it printed an empty cell, or None); a string elsewhere stays a string.
FLOATS_HEADER = "X-Pitlog-Floats"
NON_FINITE = ("nan", "inf", "-inf")  # Python's str() of them, and DuckDB's VARCHAR
# The DuckDB type of each column of an answer that is a query's rows (export.Rows), as a JSON
# list of [column, type]: the CLI's exports of a served answer then have the file's types.
TYPES_HEADER = "X-Pitlog-Types"


def discovery_path(db_path: str | Path) -> Path:
    p = Path(db_path)
    return p.with_name(f"{p.name}.serve.json")


def write(db_path: str | Path, url: str) -> Path:
    path = discovery_path(db_path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"url": url, "pid": os.getpid(),
                               "db": str(Path(db_path).resolve())}) + "\n")
    os.replace(tmp, path)  # a reader sees the old file or the new one, never half
    return path


def remove(db_path: str | Path) -> None:
    """Remove the file if it is this process's (a newer server may have replaced it)."""
    found = read(db_path)
    if found is not None and found.get("pid") == os.getpid():
        discovery_path(db_path).unlink(missing_ok=True)


def read(db_path: str | Path) -> dict[str, Any] | None:
    """The live server's {"url", "pid", "db"}, or None when there is none, it is stale, or it
    is not this database's server on this machine."""
    try:
        found = json.loads(discovery_path(db_path).read_text())
        pid, url, db = int(found["pid"]), str(found["url"]), str(found["db"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    # The writer of this very file, so on this machine: a file copied along with the database
    # names the original, and one planted beside it may name any host, which the query
    # commands would send PITLOG_TOKEN and whose rows they would print as this database's.
    if db != str(Path(db_path).resolve()) or not _this_machine(url) or not _alive(pid):
        return None
    return {**found, "pid": pid, "url": url}


def _this_machine(url: str) -> bool:
    """True for http://ADDRESS:PORT where ADDRESS is one of this machine's (url_of writes the
    address the server's socket is bound to; one that can be bound here is local)."""
    try:
        parts = urlsplit(url)
        address = ipaddress.ip_address(parts.hostname or "")
        parts.port  # noqa: B018 -- raises ValueError on a port that is not a number
    except ValueError:
        return False
    if parts.scheme != "http":
        return False
    if address.is_loopback:
        return True
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((str(address), 0))
        except OSError:
            return False
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True

"""The embedded log's alert sink: `alerts.jsonl` in the log's folder (events/log/alerts.py says
what a sink is). One JSON object per line, times in ISO 8601 with offset, fsynced per append. A
line cut short by a crash is cut off by the next append, under the file's lock (it was never
reported as published), and is not read before then.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from events.errors import LogError
from events.log.alerts import Alert

FILE_NAME = "alerts.jsonl"


def _jsonable(alert: Alert) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in alert.items()}


class EmbeddedAlertLog:
    """alerts.jsonl in an embedded log's folder."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / FILE_NAME
        self.name = f"file://{self.path}"

    @staticmethod
    def _cut_torn(f: Any) -> None:
        """Cut a torn last line (no newline: its append never finished) of `f`, open for
        reading and appending, while its holder has the file's lock: every append writes under
        that lock, so a line without its newline then is one whose writer died, whichever
        publisher that was (another store's publisher may die after this one opened)."""
        data_end = f.seek(0, os.SEEK_END)
        pos = data_end
        while pos > 0:
            step = min(4096, pos)
            f.seek(pos - step)
            chunk = f.read(step)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                pos = pos - step + nl + 1
                break
            pos -= step
        if pos != data_end:
            f.truncate(pos)
            os.fsync(f.fileno())

    def append(self, alerts: Sequence[Alert],
               after: tuple[int, str | None] | None = None) -> None:
        """Append the alerts under an exclusive lock; LogError, writing nothing, when `after` is
        given and the file's last alert is no longer it: another store appended since this
        publisher read the tail (it reads the tail again and publishes only what is missing)."""
        if not alerts:
            return
        with self.path.open("a+b") as f:  # appends go to the end; a torn tail can be cut
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)  # released when the file closes
            self._cut_torn(f)
            if after is not None and (last := self.last()) != after:
                raise LogError(f"{self.path} ends with alert {last[0]} ({last[1]}), not "
                               f"{after[0]} ({after[1]}): another publisher appended since; "
                               f"the tail is read again before the next publish")
            body = "".join(json.dumps(_jsonable(a), sort_keys=True) + "\n" for a in alerts)
            f.write(body.encode())
            f.flush()
            os.fsync(f.fileno())

    def read(self) -> Iterator[Alert]:
        """Every whole alert line, in order (a torn last line is skipped)."""
        if not self.path.exists():
            return
        with self.path.open("rb") as f:
            for line in f:
                if line.endswith(b"\n"):
                    yield json.loads(line)

    def last(self) -> tuple[int, str | None]:
        """The last alert's (alert_seq, alert_id); LogError when the last line is not an
        alert (written by something else: publishing after it could skip or repeat). A torn
        last line (an append that never finished, cut by the next append) is not read: it
        was never reported as published, and it may be a live append's, not yet whole."""
        if not self.path.exists():
            return 0, None
        with self.path.open("rb") as f:
            end = f.seek(0, os.SEEK_END)
            window = 65536
            while True:  # widen until the last line is whole (an alert of many seqs is long)
                start = max(0, end - window)
                f.seek(start)
                lines = f.read().split(b"\n")[:-1]  # the last: empty, or a torn line
                whole = [ln for ln in (lines if start == 0 else lines[1:]) if ln.strip()]
                if whole or start == 0:
                    break
                window *= 8
        if not whole:
            return 0, None
        try:
            alert = json.loads(whole[-1])
            return int(alert["alert_seq"]), str(alert["alert_id"])
        except (ValueError, KeyError, TypeError) as exc:
            raise LogError(f"{self.path}: the last line is not an alert ({exc}); move the file "
                           f"aside or remove that line, then publishing resumes") from exc

    def ids(self) -> set[str]:
        """Every alert_id in the file (lines that are not alerts hold none)."""
        found: set[str] = set()
        if not self.path.exists():
            return found
        with self.path.open("rb") as f:
            for line in f:
                if not line.endswith(b"\n"):
                    break  # a torn last line: not published (last)
                try:
                    found.add(str(json.loads(line)["alert_id"]))
                except (ValueError, KeyError, TypeError):
                    pass  # a torn or foreign line: no alert of this store's numbering
        return found

    def close(self) -> None:
        pass


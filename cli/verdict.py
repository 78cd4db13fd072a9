"""A command's verdict, kept for when its reader closes the pipe early.

`pitlog verify | head` and `pitlog conservation | head`: the reader stops reading, the command's
next write fails, and a closed pipe otherwise ends a command with exit code 0 (cli/app.py: the
reader had all it wanted). A command whose exit code is its finding (a broken log, a group that
does not balance) says so here before it writes, so the code still says it: a script piping the
findings into `head` must not read a broken log as a sound one.
"""

from __future__ import annotations

_code = 0


def found(code: int = 1) -> None:
    """The command's exit code is already decided: `code` (its findings), pipe closed or not."""
    global _code
    _code = code


def closed_pipe_code() -> int:
    """The exit code when the reader closed the pipe: the verdict, or 0 when there is none."""
    return _code

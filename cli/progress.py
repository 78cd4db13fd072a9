"""Progress bars on stderr for long work, with the total and an ETA when the total is known;
silent when stderr is not a terminal.

`progress_bar(label, total)` is one bar; `progress_tasks()` holds several phases (projecting the
events, then storing the anomaly rows), each added when it starts and given its total then.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

Update = Callable[..., None]  # update(done) or update(done, total)


def _progress() -> Progress:
    console = Console(stderr=True)
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn()]
    return Progress(*columns, console=console, transient=True, disable=not console.is_terminal)


@contextmanager
def progress_tasks() -> Iterator[Callable[[str, int | None], Update]]:
    """Yields `task(label, total)`, which adds a bar and returns its `update(done, total=None)`."""
    with _progress() as bar:
        def task(label: str, total: int | None) -> Update:
            handle = bar.add_task(label, total=total)

            def update(done: int, total: int | None = None) -> None:
                if total is not None:
                    bar.update(handle, total=total)
                bar.update(handle, completed=done)

            return update

        yield task


@contextmanager
def progress_bar(label: str, total: int | None) -> Iterator[Update]:
    """Yields `update(done)`; the bar shows done of total (or a counter when total is None)."""
    with progress_tasks() as task:
        yield task(label, total)


def phase(task: Callable[[str, int | None], Update], label: str) -> Callable[[int, int], None]:
    """`update(done, total)` for a phase whose total is known only when it starts: its bar is
    added at the first report."""
    bar: list[Update] = []

    def update(done: int, total: int) -> None:
        if not bar:
            bar.append(task(label, total))
        bar[0](done, total)

    return update

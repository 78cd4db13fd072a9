"""A progress bar on stderr for long work; silent when stderr is not a terminal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@contextmanager
def progress_bar(label: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """Yields `update(done)`; the bar shows done of total (or a counter when total is None)."""
    console = Console(stderr=True)
    columns = [TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True,
                  disable=not console.is_terminal) as bar:
        task = bar.add_task(label, total=total)

        def update(done: int) -> None:
            bar.update(task, completed=done)

        yield update

"""Long work shown as it happens: on a terminal a rich spinner (or bar) with the time
spent, else one line when the work starts (the command's own result line ends it).

Two ways in. Library code deep in a start (the embedding model's preparation, see
``model_file.once_per_machine``) announces its start and end on the
``spade_memory.progress`` logger, and ``shown_on`` shows them: no store or model knows
about terminals. A command that drives the work itself (backup, migrate) calls the
``steps`` it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

PROGRESS_LOGGER = "spade_memory.progress"
STEP = "long_step"
"""The attribute of a progress record: "start" or "end" (as ``model_file`` sets it)."""


class StepDisplay(logging.Handler):
    """Shows the steps announced on the progress logger on ``console``."""

    def __init__(self, console: Console) -> None:
        super().__init__(logging.INFO)
        self.console = console
        self._live: Progress | None = None

    def emit(self, record: logging.LogRecord) -> None:
        step = getattr(record, STEP, None)
        if step is None:
            return
        text = record.getMessage()
        if step == "start" and self.console.is_terminal:
            self._stop()
            self._live = Progress(
                SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                console=self.console, transient=True,
            )  # fmt: skip
            self._live.add_task(text, total=None)
            self._live.start()
            return
        if step == "end":
            self._stop()
        self.console.print(text, highlight=False, soft_wrap=True)

    def _stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def close(self) -> None:
        """Stop a spinner still running (its terminal cursor is given back)."""
        self._stop()
        super().close()


@contextmanager
def shown_on(console: Console) -> Iterator[None]:
    """Show the long steps of the code run inside on ``console`` (and not also in the
    logs); the display is removed on the way out."""
    logger = logging.getLogger(PROGRESS_LOGGER)
    display = StepDisplay(console)
    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.INFO)
    logger.addHandler(display)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(display)
        display.close()
        logger.setLevel(level)
        logger.propagate = propagate


@contextmanager
def steps(console: Console, what: str, total: int | None = None) -> Iterator[Callable[[str], None]]:
    """Show work of ``total`` steps (None: not known) on ``console``; yields the function
    to call as each step begins, with what it does. Off a terminal: one line, now."""
    if not console.is_terminal:
        console.print(f"{what} ...", highlight=False, soft_wrap=True)
        yield lambda _: None
        return
    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), TextColumn("{task.completed}/{task.total}")]
    with Progress(*columns, TimeElapsedColumn(), console=console, transient=True) as shown:
        task = shown.add_task(what, total=total)
        begun = 0

        def step(doing: str) -> None:
            nonlocal begun
            shown.update(task, description=f"{what}: {doing}", completed=begun)
            begun += 1

        yield step


@contextmanager
def counting(console: Console, what: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """Show ``total`` items (None: not known) being worked through on ``console`` when it
    is a terminal, and nothing elsewhere (the command's result line says what was done,
    and a pipe or a ``--json`` reader wants nothing else); yields the function to call
    with each number of items done."""
    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    with Progress(
        *columns, TimeElapsedColumn(), console=console, transient=True,
        disable=not console.is_terminal,
    ) as shown:  # fmt: skip
        task = shown.add_task(what, total=total)
        yield lambda done: shown.advance(task, done)

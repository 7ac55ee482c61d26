"""No task outlives the test that started it (a pytest plugin of the suite).

A test fails when, once its fixtures are torn down, a task of this project's code that
it (or a fixture of its own) started is still running on the event loop, or lost an
exception no one retrieved: what a test starts it stops and awaits, as the service
must stop and await its background work. Tasks a module's or the session's fixtures
start live as long as those and are not counted against the test that set them up.
The tasks of libraries (SPADE's behaviours, slixmpp's keepalive) that outlive an
agent's stop, and the bare futures whose exception no one retrieved (they name no
code), are cancelled and counted in one line at the end of the run: not a failure of
the test.

A lost exception is told when its task is collected: the collector runs once a module's
tests are done, and what it finds fails that module's last test.
"""

from __future__ import annotations

import asyncio
import gc
from collections import Counter
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

import spade_memory

ENDED_WITHIN = 5.0
"""Seconds a test's tasks may take to end after its teardown (a stopped agent's last
reads end a moment after it)."""
LOST_FAILURES = (
    "exception was never retrieved",
    "Task was destroyed but it is pending",
)
"""What asyncio says of a task or future whose failure no one saw."""

OURS = (str(Path(spade_memory.__file__).parent), str(Path(__file__).parent.parent))
"""Where this project's code lives: the package and the tests."""

_loop: asyncio.AbstractEventLoop | None = None
_kept: set[asyncio.Task[Any]] = set()
"""Tasks of fixtures wider than a test, for as long as they run."""
_lost: list[str] = []
_theirs: Counter[str] = Counter()
"""Libraries' tasks that outlived their tests, by coroutine."""


@pytest.fixture(autouse=True)
async def _the_loop() -> None:
    """Learn the tests' event loop (one for the session) and hear what it loses."""
    global _loop
    loop = asyncio.get_running_loop()
    if _loop is not loop:
        _loop = loop
        loop.set_exception_handler(_heard)


def _heard(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    message = str(context.get("message", ""))
    lost = context.get("task") or context.get("future")
    if not any(known in message for known in LOST_FAILURES):
        loop.default_exception_handler(context)
    elif isinstance(lost, asyncio.Task) and _ours(lost):
        _lost.append(f"{message}: {lost!r}"[:500])
        loop.default_exception_handler(context)
    elif isinstance(lost, asyncio.Task):
        _theirs[_where(lost)] += 1
    else:  # a bare future names no code: slixmpp's, for an IQ no one waited for
        failure = lost.exception() if isinstance(lost, asyncio.Future) else None
        _theirs[f"a future's {type(failure).__name__}"] += 1


def _ours(task: asyncio.Task[Any]) -> bool:
    """Whether ``task`` runs this project's code (not a library's)."""
    return _where(task).startswith(OURS)


def _where(task: asyncio.Task[Any]) -> str:
    code = getattr(task.get_coro(), "cr_code", None)
    return f"{code.co_filename}:{code.co_name}" if code is not None else repr(task.get_coro())


def _running() -> set[asyncio.Task[Any]]:
    if _loop is None or _loop.is_closed():
        return set()
    return {task for task in asyncio.all_tasks(_loop) if not task.done()}


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Generator[None, None, None]:
    """The tasks a module's or the session's fixture starts are that fixture's (a test's
    own fixtures are not looked at: they are set up for every test)."""
    if fixturedef.scope == "function":
        yield
        return
    before = _running()
    yield
    _kept.update(_running() - before)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A test's own tasks still running once it is torn down, or its lost exceptions,
    fail it."""
    before = _running()
    yield
    left = _ended_or_left(_running() - before - _kept)
    if nextitem is None or nextitem.module is not getattr(item, "module", None):
        gc.collect()  # lost exceptions are told as their tasks are collected
    problems = [f"still running after the test: {task!r}"[:500] for task in left]
    problems += _lost
    del _lost[:]
    if problems:
        _report(item, problems)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker of pytest-xdist hands its count to the controller, which prints it."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["libraries_tasks_left"] = dict(_theirs)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """The controller adds up what each worker counted."""
    _theirs.update(getattr(node, "workeroutput", {}).get("libraries_tasks_left", {}))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line for the libraries' tasks that outlived their tests (cancelled then)."""
    if _theirs:
        common = ", ".join(
            f"{where.rsplit('/', 1)[-1]}: {n}" for where, n in _theirs.most_common(3)
        )
        total = sum(_theirs.values())
        if total == 1:
            what = "task of a library outlived its test and was"
        else:
            what = "tasks of libraries outlived their tests and were"
        terminalreporter.write_line(f"{total} {what} cancelled ({common})", yellow=True)


def _ended_or_left(tasks: set[asyncio.Task[Any]]) -> list[asyncio.Task[Any]]:
    """Those of ``tasks`` running this project's code still ``ENDED_WITHIN`` seconds on.
    Every task left is cancelled then, so that the next test starts clean; a library's
    is cancelled at once, and counted in ``_theirs``."""
    _kept.difference_update({task for task in _kept if task.done()})
    if not tasks or _loop is None or _loop.is_running():
        return []
    ours = {task for task in tasks if _ours(task)}
    if ours:
        _loop.run_until_complete(asyncio.wait(ours, timeout=ENDED_WITHIN))
    left = [task for task in tasks if not task.done()]
    for task in left:
        task.cancel()
        if task not in ours:
            _theirs[_where(task)] += 1
    if left:
        _loop.run_until_complete(asyncio.wait(left, timeout=ENDED_WITHIN))
    return [task for task in left if task in ours]


def _report(item: pytest.Item, problems: list[str]) -> None:
    """Fail ``item`` after the fact: a report of its own, as a teardown error."""
    report = pytest.TestReport(
        item.nodeid, item.location, {}, "failed", "\n".join(problems), "teardown"
    )
    item.ihook.pytest_runtest_logreport(report=report)

"""No task outlives the test that started it (a pytest plugin of the suite).

A test fails when, once its fixtures are torn down, a task it (or a fixture of its own)
started is still running on the event loop, this project's or a library's (a SPADE
behaviour, a slixmpp handler or keepalive ping of an agent not stopped with
``stop_agent``), or when a task or future lost an exception no one retrieved: what a
test starts it stops and awaits, as the service must stop and await its background
work. Tasks a module's or the session's fixtures start live as long as those and are
not counted against the test that set them up.

A lost exception is told when its task is collected: the collector runs once a module's
tests are done, and what it finds fails that module's last test. What survives that
collection is then frozen (``gc.freeze``) and never looked at again: a full collection
of all the run has loaded (litellm alone is 235,000 objects) took half a second each
time, and the next module's tasks are all younger.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Generator, Iterator
from typing import Any

import pytest

ENDED_WITHIN = 5.0
"""Seconds a test's tasks may take to end after its teardown (a stopped agent's last
reads end a moment after it)."""
LOST_FAILURES = (
    "exception was never retrieved",
    "Task was destroyed but it is pending",
)
"""What asyncio says of a task or future whose failure no one saw."""

_loop: asyncio.AbstractEventLoop | None = None
_kept: set[asyncio.Task[Any]] = set()
"""Tasks of fixtures wider than a test, for as long as they run."""
_lost: list[str] = []


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
    if any(known in message for known in LOST_FAILURES):
        lost = context.get("task") or context.get("future")
        failure = context.get("exception")
        _lost.append(f"{message}: {lost!r} ({failure!r})"[:500])
    loop.default_exception_handler(context)


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
        if nextitem is not None:
            gc.freeze()  # what is left is older than the next module's tasks: not looked at again
        else:
            gc.unfreeze()  # what runs after the tests (hypothesis's import) sees the whole heap
    problems = [f"still running after the test: {task!r}"[:500] for task in left]
    problems += _lost
    del _lost[:]
    if problems:
        _report(item, problems)


def _ended_or_left(tasks: set[asyncio.Task[Any]]) -> list[asyncio.Task[Any]]:
    """Those of ``tasks`` still running ``ENDED_WITHIN`` seconds on; they are cancelled
    then, so that the next test starts clean."""
    _kept.difference_update({task for task in _kept if task.done()})
    if not tasks or _loop is None or _loop.is_running():
        return []
    _loop.run_until_complete(asyncio.wait(tasks, timeout=ENDED_WITHIN))
    left = [task for task in tasks if not task.done()]
    for task in left:
        task.cancel()
    if left:
        _loop.run_until_complete(asyncio.wait(left, timeout=ENDED_WITHIN))
    return left


def _report(item: pytest.Item, problems: list[str]) -> None:
    """Fail ``item`` after the fact: a report of its own, as a teardown error."""
    report = pytest.TestReport(
        item.nodeid, item.location, {}, "failed", "\n".join(problems), "teardown"
    )
    item.ihook.pytest_runtest_logreport(report=report)

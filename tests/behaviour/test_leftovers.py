"""The suite's own guard (``support/leftovers.py``): a test that leaves a task running
(its own or a library's), or an exception no one retrieved (of a task or a bare
future), fails at its teardown; a test that stops what it started passes. Run on five
probe tests in a pytest session of their own."""

from __future__ import annotations

import pytest

from tests.support import leftovers

pytest_plugins = ["pytester"]

PROBES = """
import asyncio


async def test_leaves_a_task():
    async def forever():
        await asyncio.sleep(3600)

    asyncio.ensure_future(forever())


async def test_a_library_leaves_a_task():
    asyncio.ensure_future(asyncio.sleep(3600))


async def test_loses_an_exception():
    async def boom():
        raise ValueError("lost")

    asyncio.ensure_future(boom())
    await asyncio.sleep(0.01)


async def test_loses_a_futures_exception():
    lost = asyncio.get_running_loop().create_future()
    lost.set_exception(TimeoutError("no answer"))


async def test_stops_what_it_started():
    task = asyncio.ensure_future(asyncio.sleep(3600))
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
"""
SETTINGS = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = session
asyncio_default_test_loop_scope = session
"""


def test_a_task_left_running_or_an_exception_lost_fails_its_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(leftovers, "ENDED_WITHIN", 0.2)
    pytester.makeini(SETTINGS)
    pytester.makepyfile(test_probes=PROBES)
    ran = pytester.runpytest_inprocess("-p", "tests.support.leftovers", "-p", "no:xdist")
    ran.assert_outcomes(passed=5, errors=4)
    said = ran.stdout.str()
    assert "ERROR at teardown of test_leaves_a_task" in said
    assert "still running after the test" in said and "forever()" in said
    assert "ERROR at teardown of test_a_library_leaves_a_task" in said and "sleep()" in said
    assert "ERROR at teardown of test_loses_an_exception" in said
    assert "Task exception was never retrieved" in said and "ValueError('lost')" in said
    assert "ERROR at teardown of test_loses_a_futures_exception" in said
    assert "Future exception was never retrieved" in said and "TimeoutError('no answer')" in said
    assert "test_stops_what_it_started" not in said.split("short test summary")[-1]

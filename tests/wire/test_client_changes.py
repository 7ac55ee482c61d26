"""A subscription is in place when the call that makes it returns: ``on_change`` and a
stream's ``start`` (or ``async with``) wait for the base memory agent's acknowledgement,
so a store made right after them, with no pause, is heard."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from spade_memory import Change, ItemNotFound
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import ClientAgent, start_client, unique_jid

ROUNDS = 5
HEARD_WITHIN = 60.0
"""Generous: a loaded machine delays a notice, it does not lose it."""


async def shared_space(owner: ClientAgent, member: ClientAgent) -> str:
    """A new space of ``owner`` in which ``member`` is a reader."""
    space = f"heard-{uuid.uuid4().hex[:8]}"
    await owner.memory.create_space(space)
    await owner.memory.grant(space, str(member.jid.bare), "reader")
    return space


async def test_on_change_hears_a_store_made_right_after_it(
    alice: ClientAgent, bob: ClientAgent
) -> None:
    for round_ in range(ROUNDS):
        space = await shared_space(alice, bob)
        heard: asyncio.Queue[Change] = asyncio.Queue()
        follower = await bob.memory.on_change(space, heard.put_nowait)
        try:
            team = alice.memory.space(space)
            stored = [
                await team.store_memory("fact", f"round {round_} finding {n}") for n in range(2)
            ]
            got = [await asyncio.wait_for(heard.get(), HEARD_WITHIN) for _ in stored]
            assert [change.memory_id for change in got] == stored, f"round {round_}"
        finally:
            follower.cancel()  # it unsubscribes as it ends
            await asyncio.gather(follower, return_exceptions=True)


async def test_a_stream_entered_hears_a_store_made_right_after(
    alice: ClientAgent, bob: ClientAgent
) -> None:
    for round_ in range(ROUNDS):
        space = await shared_space(alice, bob)
        async with bob.memory.changes(space) as changes:
            stored = await alice.memory.space(space).store_memory("fact", f"round {round_}")
            change = await asyncio.wait_for(anext(changes), HEARD_WITHIN)
            assert change.memory_id == stored, f"round {round_}"


async def test_on_change_for_a_space_not_joined_raises_at_once(
    alice: ClientAgent, bob: ClientAgent
) -> None:
    space = f"private-{uuid.uuid4().hex[:8]}"
    await alice.memory.create_space(space)
    with pytest.raises(ItemNotFound):
        await bob.memory.on_change(space, print)


async def subscribers_become(owner: ClientAgent, space: str, count: int) -> None:
    """Wait until the base memory agent counts ``count`` subscribers of ``space``."""
    deadline = asyncio.get_running_loop().time() + HEARD_WITHIN
    while (info := await owner.memory.space_info(space)) is None or info.subscribers != count:
        assert asyncio.get_running_loop().time() < deadline, f"{info} after {HEARD_WITHIN} s"
        await asyncio.sleep(0.05)


async def test_a_follower_cancelled_without_waiting_unsubscribes(
    alice: ClientAgent, bob: ClientAgent
) -> None:
    """Cancelled at once (before it ran) or after its first notice, never awaited: the
    subscription ends all the same."""
    space = await shared_space(alice, bob)
    at_once = await bob.memory.on_change(space, print)
    at_once.cancel()  # before the task ran at all
    await subscribers_become(alice, space, 0)
    heard: asyncio.Queue[Change] = asyncio.Queue()
    later = await bob.memory.on_change(space, heard.put_nowait)
    await alice.memory.space(space).store_memory("fact", "one notice first")
    await asyncio.wait_for(heard.get(), HEARD_WITHIN)
    later.cancel()
    await subscribers_become(alice, space, 0)
    await asyncio.gather(at_once, later, return_exceptions=True)


async def test_a_follower_unsubscribes_when_its_agent_stops(
    alice: ClientAgent, memory_service: MemoryServiceProcess
) -> None:
    carol = await start_client(unique_jid("carol"), memory_service.port)
    try:
        space = await shared_space(alice, carol)
        follower = await carol.memory.on_change(space, print)
        await subscribers_become(alice, space, 1)
    finally:
        await stop_agent(carol)
    assert follower.done()  # the agent's stop ended it, and it unsubscribed first
    await subscribers_become(alice, space, 0)

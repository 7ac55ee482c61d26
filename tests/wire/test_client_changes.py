"""A subscription is in place when the call that makes it returns: ``on_change`` and a
stream's ``start`` (or ``async with``) wait for the base memory agent's acknowledgement,
so a store made right after them, with no pause, is heard."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from spade_memory import Change, ItemNotFound
from tests.support.harness import ClientAgent

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

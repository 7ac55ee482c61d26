"""MemoryClient against peers that misbehave (real agents on the embedded XMPP server)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from spade.agent import Agent
from spade.behaviour import CyclicBehaviour, OneShotBehaviour
from spade.message import Message

from spade_memory import InternalServerError, Stored, StoreMemory
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp import wire
from spade_memory.xmpp.lifecycle import start_agent, stop_agent
from tests.support.harness import ClientAgent, start_client, unique_jid


class SendOnce(OneShotBehaviour):  # type: ignore[misc]
    def __init__(self, message: Message) -> None:
        super().__init__()
        self.message = message

    async def run(self) -> None:
        await self.send(self.message)


class AnswerGarbage(CyclicBehaviour):  # type: ignore[misc]
    async def run(self) -> None:
        request = await self.receive(timeout=1.0)
        if request is not None:
            reply = wire.inform(request, Stored(id="x"))
            reply.body = "{not json"
            await self.send(reply)


@pytest.fixture
async def peer(memory_service: MemoryServiceProcess) -> AsyncIterator[Agent]:
    agent = Agent(unique_jid("peer"), "peer-secret", port=memory_service.port)
    await start_agent(agent)
    yield agent
    await stop_agent(agent)


@pytest.fixture
async def alice(memory_service: MemoryServiceProcess, peer: Agent) -> AsyncIterator[ClientAgent]:
    agent = await start_client(
        unique_jid("alice"), memory_service.port, memory_jid=str(peer.jid), memory_timeout=0.5
    )
    yield agent
    await stop_agent(agent)


async def test_a_reply_from_another_sender_is_ignored(alice: ClientAgent, peer: Agent) -> None:
    target = unique_jid("absent")  # nobody answers for it
    request = wire.request_message(target, StoreMemory(category="fact", content="x"), "t-1")
    waiting = asyncio.create_task(alice.memory.transport.round_trip(request))
    await asyncio.sleep(0.1)
    spoof = wire.inform(request, Stored(id="forged"))
    spoof.to, spoof.sender = alice.jid, peer.jid  # right thread, wrong replier
    peer.add_behaviour(SendOnce(spoof))
    assert await waiting is None


async def test_a_malformed_reply_is_a_typed_error(alice: ClientAgent, peer: Agent) -> None:
    peer.add_behaviour(AnswerGarbage(), wire.request_template())
    with pytest.raises(InternalServerError, match="malformed reply"):
        await alice.memory.store_memory("fact", "anything")


async def test_an_agent_restarted_with_the_same_jid_gets_its_answers(
    memory_service: MemoryServiceProcess,
) -> None:
    """Replies go to the asking connection: SPADE's embedded server routed replies to
    a bare JID to the agent's previous, closed connection, so a restarted agent got none."""
    jid = unique_jid("restarted")
    for attempt in range(3):
        agent = await start_client(jid, memory_service.port, memory_timeout=10.0)
        try:
            await agent.memory.store_memory("fact", f"attempt {attempt}")
            stats = await agent.memory.get_memory_stats()
            assert stats is not None and stats.total_memories == attempt + 1
        finally:
            await stop_agent(agent)

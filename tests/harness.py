"""Client agents for the end-to-end tests (the service runs in its own process)."""

from __future__ import annotations

import asyncio
import uuid

from spade.agent import Agent

from spade_memory import MemoryMixin


class ClientAgent(MemoryMixin, Agent):  # type: ignore[misc]
    """A plain SPADE agent with ``self.memory``."""


def unique_jid(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}@localhost"


async def start_client(jid: str, port: int, **memory_options: object) -> ClientAgent:
    agent = ClientAgent(jid, "client-secret", port=port, **memory_options)
    await asyncio.wait_for(agent.start(auto_register=True), 20)
    return agent

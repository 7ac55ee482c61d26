"""Client agents for the end-to-end tests (the service runs in its own process)."""

from __future__ import annotations

import uuid

from spade.agent import Agent

from spade_memory import MemoryMixin
from spade_memory.lifecycle import start_agent


class ClientAgent(MemoryMixin, Agent):  # type: ignore[misc]
    """A plain SPADE agent with ``self.memory``."""


def unique_jid(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}@localhost"


async def start_client(jid: str, port: int, **memory_options: object) -> ClientAgent:
    agent = ClientAgent(jid, "client-secret", port=port, **memory_options)
    await start_agent(agent)
    return agent

"""Spaces for the wire tests: fresh names, and an agent's inbox of proposals."""

from __future__ import annotations

import asyncio
import uuid

from spade.behaviour import CyclicBehaviour
from spade.template import Template

from spade_memory.xmpp.notices import PROPOSALS_ONTOLOGY
from tests.support.harness import ClientAgent


def space_name(prefix: str = "team") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


TOLD_WITHIN = 30.0
"""Seconds a chat message may take to arrive on a loaded machine (a wait, not a timing)."""


class Inbox(CyclicBehaviour):  # type: ignore[misc]
    """The proposal messages an agent receives, as their text."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: asyncio.Queue[str] = asyncio.Queue()

    async def run(self) -> None:
        message = await self.receive(timeout=1.0)
        if message is not None:
            self.texts.put_nowait(str(message.body))

    async def next(self) -> str:
        return await asyncio.wait_for(self.texts.get(), TOLD_WITHIN)


def inbox(agent: ClientAgent) -> Inbox:
    behaviour = Inbox()
    template = Template(metadata={"performative": "inform", "ontology": PROPOSALS_ONTOLOGY})
    agent.add_behaviour(behaviour, template)
    return behaviour

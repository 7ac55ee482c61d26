"""Client agents for the end-to-end tests (the service runs in its own process)."""

from __future__ import annotations

import json
import uuid

from spade.agent import Agent
from spade.message import Message

from spade_memory import MemoryClient, MemoryMixin
from spade_memory.xmpp.lifecycle import start_agent
from spade_memory.xmpp.wire import LANGUAGE, ONTOLOGY
from tests.support.prosody import register_on


class ClientAgent(MemoryMixin, Agent):  # type: ignore[misc]
    """A plain SPADE agent with ``self.memory``."""


def unique_jid(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}@localhost"


def jid(agent: Agent) -> str:
    """The bare address ``agent`` is known by."""
    return str(agent.jid.bare)


async def start(agent: Agent) -> None:
    """Start ``agent``, creating its account first on a test Prosody (whose in-band
    registration is closed, as shipped)."""
    register_on(agent.xmpp_port, str(agent.jid.bare), agent.password)
    await start_agent(agent)


async def start_client(jid: str, port: int, **memory_options: object) -> ClientAgent:
    agent = ClientAgent(jid, "client-secret", port=port, **memory_options)
    await start(agent)
    return agent


async def send_raw(
    client: MemoryClient, to: str, body: str, *, thread: str | None = None,
    sender: str | None = None,
) -> Message:  # fmt: skip
    """A request with a hand-made body, as a buggy or hostile peer would send it:
    ``thread`` to repeat a request id, ``sender`` to forge ``from``. It bypasses the
    client's own in-flight limiter."""
    request = Message(
        to=to,
        body=body,
        thread=thread or uuid.uuid4().hex,
        metadata={"performative": "request", "ontology": ONTOLOGY, "language": LANGUAGE},
    )
    if sender is not None:
        request.sender = sender
    reply = await client.transport.round_trip(request)
    assert reply is not None, f"{to} did not answer {body[:200]!r} (from: {sender})"
    return reply


async def condition_of(client: MemoryClient, to: str, body: str) -> str:
    """The condition of the failure a hand-made request gets back."""
    return str(json.loads((await send_raw(client, to, body)).body)["condition"])

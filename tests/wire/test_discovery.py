"""Any XMPP peer can ask a memory agent what it is: disco#info names its protocol and the
service, XEP-0092 the package's version. Asked over the wire (the memory agents run in
their own process), on SPADE's embedded server and on Prosody."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from spade_memory.protocol.memories import MemoryStatsOp
from spade_memory.protocol.notes import GetAllConversations
from spade_memory.protocol.ops import Op
from spade_memory.protocol.version import package_version
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp import wire
from spade_memory.xmpp.discovery import protocol_feature
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import ClientAgent, start_client, unique_jid


@pytest.fixture
async def peer(any_memory_service: MemoryServiceProcess) -> AsyncIterator[ClientAgent]:
    agent = await start_client(unique_jid("peer"), any_memory_service.port)
    agent.client.register_plugin("xep_0092")
    yield agent
    await stop_agent(agent)


@pytest.mark.parametrize(
    ("service", "op"),
    [("base-memory", MemoryStatsOp()), ("interaction-memory", GetAllConversations())],
)
async def test_a_memory_agent_says_what_it_serves_and_its_version(
    peer: ClientAgent, service: str, op: Op[Any]
) -> None:
    to = peer.memory.jids[service]
    reply = await peer.memory.transport.round_trip(wire.request_message(to, op, "whoami-1"))
    assert reply is not None
    agent = reply.sender  # its full JID: a client's bare JID is answered by its server

    info = await peer.client["xep_0030"].get_info(jid=agent, timeout=10)
    features = set(info["disco_info"]["features"])
    assert protocol_feature(service) in features
    assert "jabber:iq:version" in features
    identities = {(c, t, name) for c, t, _lang, name in info["disco_info"]["identities"]}
    assert identities == {("client", "bot", f"spade-memory {service}")}

    version = await peer.client["xep_0092"].get_version(agent, timeout=10)
    assert version["software_version"]["name"] == "spade-memory"
    assert version["software_version"]["version"] == package_version() != "unknown"

"""The shell's transport: a bare slixmpp login (``client.stanza_login``) carrying the
requests a SPADE agent would send, against `spade-memory run` in its own process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from spade.agent import Agent

from spade_memory import MemoryClient, Stored, StoreMemory
from spade_memory.client import stanza_login
from spade_memory.client.memory_client import service_jids
from spade_memory.client.stanza_login import StanzaClient
from spade_memory.client.stanza_transport import StanzaTransport
from spade_memory.testing import MemoryServiceProcess, free_ports
from spade_memory.xmpp import wire
from spade_memory.xmpp.connect_errors import ConnectionRefused, WrongPassword
from spade_memory.xmpp.lifecycle import start_agent, stop_agent
from tests.support.harness import unique_jid

PASSWORD = "stanza-secret"


@pytest.fixture
async def connection(memory_service: MemoryServiceProcess) -> AsyncIterator[StanzaClient]:
    client = await stanza_login.connect(unique_jid("stanza"), PASSWORD, port=memory_service.port)
    yield client
    await stanza_login.disconnect(client)


def client_of(connection: StanzaClient, **jids: str) -> MemoryClient:
    transport = StanzaTransport(connection, {**service_jids("localhost"), **jids}, timeout=0.5)
    return MemoryClient(transport=transport)


async def test_it_stores_and_finds_as_the_account_it_logged_in_as(
    connection: StanzaClient,
) -> None:
    memory = client_of(connection)
    memory_id = await memory.store_memory("fact", "The stanza path stores like any agent")
    found = await memory.search_memories("stanza path", mode="keyword")
    assert [m.id for m in found] == [memory_id]
    assert found[0].owner == str(connection.boundjid.bare)  # as XMPP authenticated it
    outcomes = await memory.transport.batch(
        memory.base_memory_jid, [StoreMemory(category="fact", content="batched")]
    )
    assert isinstance(outcomes[0], Stored)


async def test_a_reply_from_another_sender_is_ignored(
    memory_service: MemoryServiceProcess, connection: StanzaClient
) -> None:
    peer = Agent(unique_jid("peer"), "peer-secret", port=memory_service.port)
    await start_agent(peer)
    try:
        absent = unique_jid("absent")  # nobody answers for it
        transport = client_of(connection).transport
        assert isinstance(transport, StanzaTransport)
        op = StoreMemory(category="fact", content="x")
        waiting = asyncio.create_task(transport.exchange(absent, op, "t-1", asyncio.Semaphore()))
        await asyncio.sleep(0.1)
        spoof = wire.inform(wire.request_message(absent, op, "t-1"), Stored(id="forged"))
        spoof.to, spoof.sender = str(connection.boundjid), str(peer.jid)  # right id, wrong replier
        peer.client.send_raw(spoof.text(peer.client))
        assert await waiting is None
    finally:
        await stop_agent(peer)


async def test_a_refused_password_and_a_missing_server_are_named(
    memory_service: MemoryServiceProcess,
) -> None:
    jid = unique_jid("stanza")
    made = await stanza_login.connect(jid, PASSWORD, port=memory_service.port)
    await stanza_login.disconnect(made)
    with pytest.raises(WrongPassword, match=f"refused the password of {jid}"):
        await stanza_login.connect(jid, "not-it", port=memory_service.port, register=False)
    (nothing_there,) = free_ports(1)
    with pytest.raises(ConnectionRefused):
        await stanza_login.connect(jid, PASSWORD, port=nothing_there)

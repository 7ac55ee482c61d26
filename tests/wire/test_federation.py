"""Grants across servers: three Prosodys federated over server-to-server links (s2s,
dialback over TLS), each in its own process on its own loopback address, the memory
agents on the first (another process), the agents of all three in this one; every
request and answer crosses two servers and the link between them.

Domains are the servers' addresses (``127.0.0.3`` …): with no DNS to name them, Prosody
finds a server whose domain is an address at that address, on the standard port 5269.
The second server carries a module of the tests (``fixtures/prosody/mod_forge_from.lua``)
that rewrites a sender as a hostile server would.
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
from slixmpp.xmlstream import ET

from spade_memory import ItemNotFound, NotAuthorized, PendingApproval
from spade_memory.protocol.memories import ForgetAllMemories, StoreMemory
from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support import prosody
from tests.support.harness import ClientAgent, jid, start_client
from tests.support.identity_matrix import Alice, no_cross_owner_attempt_succeeds
from tests.support.paths import FIXTURES
from tests.support.spaces import inbox, space_name

pytestmark = pytest.mark.federation

HOME, GRANTED, OTHER = "127.0.0.3", "127.0.0.4", "127.0.0.5"
"""The memory's server, a server whose agents are granted, and one whose are not."""
S2S_PORT = 5269
"""Where Prosody connects to a server whose domain is an address."""
MEMORY_PASSWORD = prosody.MEMORY_PASSWORD
FORGE = "urn:spade-memory:test:forge"
PLUGINS = FIXTURES / "prosody"
STARTED_WITHIN = 120.0
"""Seconds a server or the memory service may take to start on a busy machine."""
HEARD_WITHIN = 30.0
"""Seconds within which a change notice reaches an agent of another server."""
REFUSED_WITHIN = 30.0
"""Seconds within which the memory's server logs that it refused a forged sender."""


def _s2s_port_taken(address: str) -> bool:
    """Whether ``address``:5269 cannot be listened on (in use, or no such address)."""
    with socket.socket() as probe:
        try:
            probe.bind((address, S2S_PORT))
        except OSError:
            return True
    return False


@dataclass
class Federation:
    servers: dict[str, prosody.ProsodyProcess]

    def port(self, domain: str) -> int:
        return self.servers[domain].port

    async def agent(self, name: str, domain: str) -> ClientAgent:
        """A new agent of ``domain`` whose memory is the memory agents of ``HOME``."""
        return await start_client(
            f"{name}-{uuid.uuid4().hex[:8]}@{domain}", self.port(domain),
            memory_jid=f"base-memory@{HOME}",
            interaction_memory_jid=f"interaction-memory@{HOME}",
            memory_timeout=20.0,
        )  # fmt: skip


@pytest.fixture(scope="module")
def federation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Federation]:
    if not prosody.installed():
        pytest.skip(prosody.MISSING)
    taken = [address for address in (HOME, GRANTED, OTHER) if _s2s_port_taken(address)]
    if taken:
        pytest.skip(f"cannot listen on port {S2S_PORT} of {', '.join(taken)}: federation needs it")
    servers: dict[str, prosody.ProsodyProcess] = {}
    memory: MemoryServiceProcess | None = None
    try:
        for domain in (HOME, GRANTED, OTHER):
            settings = {
                "PROSODY_DOMAIN": domain, "PROSODY_INTERFACE": domain, "PROSODY_S2S": "true",
                "PROSODY_LOG_LEVEL": "info",
            }  # fmt: skip
            if domain == HOME:
                settings.update(prosody.memory_agent_accounts(MEMORY_PASSWORD))
            if domain == GRANTED:
                settings.update({"PROSODY_PLUGINS": str(PLUGINS), "PROSODY_MODULES": "forge_from"})
            servers[domain] = prosody.ProsodyProcess(tmp_path_factory.mktemp("prosody"), settings)
            servers[domain].start(timeout=STARTED_WITHIN)
        memory = MemoryServiceProcess(
            tmp_path_factory.mktemp("memory"), "--external-server", "--domain", HOME,
            port=servers[HOME].port, env={PASSWORD_ENV: MEMORY_PASSWORD},
        )  # fmt: skip
        memory.start(timeout=STARTED_WITHIN)
        yield Federation(servers)
    finally:
        if memory is not None:
            memory.stop()
        for server in servers.values():
            server.stop()


@pytest.fixture
async def agents(federation: Federation) -> AsyncIterator[dict[str, ClientAgent]]:
    """An owner of a space at home, a stranger at home, two agents of the granted
    server, and one of the other."""
    made = {
        "owner": await federation.agent("owner", HOME),
        "neighbour": await federation.agent("neighbour", HOME),
        "agent": await federation.agent("agent", GRANTED),
        "colleague": await federation.agent("colleague", GRANTED),
        "outsider": await federation.agent("outsider", OTHER),
    }
    yield made
    for agent in made.values():
        await stop_agent(agent)


async def test_an_agent_of_another_server_granted_a_space_reads_writes_and_hears_it_over_the_link(
    agents: dict[str, ClientAgent],
) -> None:
    owner, agent = agents["owner"], agents["agent"]
    space = space_name("shared")
    await owner.memory.create_space(space)
    await owner.memory.grant(space, jid(agent), "writer")

    stored = await agent.memory.space(space).store_memory(
        "fact", "The staging cluster is drained every Friday at six"
    )
    assert stored is not None
    found = await owner.memory.space(space).search_memories("staging cluster drained")
    assert [(m.id, m.owner) for m in found] == [(stored, jid(agent))]
    read_back = await agent.memory.space(space).search_memories("Friday drained")
    assert [m.id for m in read_back] == [stored]
    details = await agent.memory.list_spaces()
    assert [(s.name, s.role) for s in details if s.name == space] == [(space, "writer")]

    async with agent.memory.changes(space) as changes:  # change notices cross the link too
        told = await owner.memory.space(space).store_memory("fact", "Staging moves to eu-2")
        change = await asyncio.wait_for(anext(changes), HEARD_WITHIN)
    assert (change.memory_id, change.owner) == (told, jid(owner))


async def test_a_domain_grant_admits_the_agents_of_that_domain_and_no_others(
    agents: dict[str, ClientAgent],
) -> None:
    owner = agents["owner"]
    space = space_name("domain")
    await owner.memory.create_space(space)
    await owner.memory.grant(space, f"*@{GRANTED}", "reader")
    kept = await owner.memory.space(space).store_memory("fact", "Deploys freeze on the 20th")

    named_by_no_one = await agents["colleague"].memory.space(space).search_memories("freeze")
    assert [m.id for m in named_by_no_one] == [kept]
    with pytest.raises(NotAuthorized):  # a reader writes nothing
        await agents["colleague"].memory.space(space).store_memory("fact", "no freeze")
    for stranger in (agents["outsider"], agents["neighbour"]):  # as if there were no space
        with pytest.raises(ItemNotFound):
            await stranger.memory.space(space).search_memories("freeze")
        with pytest.raises(ItemNotFound):
            await stranger.memory.space(space).store_memory("fact", "Deploys never freeze")
    everything = await owner.memory.space(space).get_recent_memories(10)
    assert [m.content for m in everything] == ["Deploys freeze on the 20th"]


async def test_an_account_of_another_server_keeps_nothing_of_its_own_here(
    agents: dict[str, ClientAgent],
) -> None:
    outsider, neighbour = agents["outsider"], agents["neighbour"]
    with pytest.raises(NotAuthorized, match="another server"):
        await outsider.memory.store_memory("fact", "free storage on someone else's server")
    with pytest.raises(NotAuthorized, match="another server"):
        await outsider.memory.create_space(space_name("mine"))
    with pytest.raises(NotAuthorized, match="another server"):
        await outsider.memory.add_information("talk-1", "a note of its own")
    assert await outsider.memory.search_memories("storage") == []
    forgotten = await outsider.memory.request(outsider.memory.base_memory_jid, ForgetAllMemories())
    assert forgotten is not None and forgotten.memories == 0
    # an account of the memory's own server keeps memories of its own, as ever
    assert await neighbour.memory.store_memory("fact", "my own note") is not None


async def test_a_write_from_another_server_in_a_governed_space_waits_and_its_writer_hears(
    agents: dict[str, ClientAgent],
) -> None:
    """Proposals and their outcome cross the link: the writer of the other server hears
    the decision in a chat message its own server delivers."""
    owner, agent = agents["owner"], agents["agent"]
    told = inbox(agent)
    space = space_name("vetted")
    await owner.memory.create_space(space, governed=True)
    await owner.memory.grant(space, jid(agent), "writer")
    with pytest.raises(PendingApproval) as waiting:
        await agent.memory.space(space).store_memory("fact", "Partners get the API on the 1st")
    assert await owner.memory.space(space).get_recent_memories(10) == []
    decided = await owner.memory.decide_proposal(space, waiting.value.proposal, approve=True)
    assert decided is not None
    heard = await asyncio.wait_for(told.next(), HEARD_WITHIN)
    assert waiting.value.proposal in heard and "approved" in heard
    kept = await owner.memory.space(space).get_recent_memories(10)
    assert [(m.content, m.author) for m in kept] == [
        ("Partners get the API on the 1st", jid(agent))
    ]


async def test_a_server_that_forges_a_sender_is_refused_by_the_memorys_server(
    federation: Federation, agents: dict[str, ClientAgent]
) -> None:
    """The granted server's module rewrites a sender to an owner at home, then to an
    agent of the other server: the memory's server proves only the granted domain on
    that link, so it refuses both (and closes the link); nothing reaches the memory."""
    owner, agent = agents["owner"], agents["agent"]
    space = space_name("forged")
    await owner.memory.create_space(space)
    await owner.memory.grant(space, jid(agent), "reader")
    await owner.memory.grant(space, f"*@{OTHER}", "writer")
    home_log = federation.servers[HOME].output
    for claimed in (f"{jid(owner)}/laptop", f"someone@{OTHER}/desk"):
        logged = sum("claiming to be from" in line for line in home_log)
        body = StoreMemory(category="fact", content=f"forged as {claimed}", space=space)
        stanza = agent.client.make_message(
            mto=f"base-memory@{HOME}", mbody=body.model_dump_json(exclude_none=True)
        )
        stanza.append(ET.Element(f"{{{FORGE}}}forge", {"from": claimed}))
        stanza.send()
        deadline = time.monotonic() + REFUSED_WITHIN
        while sum("claiming to be from" in line for line in home_log) == logged:
            assert time.monotonic() < deadline, "the memory's server did not refuse it"
            await asyncio.sleep(0.2)
    recent = await owner.memory.space(space).get_recent_memories(10)
    assert recent == []
    # the link is made again for honest stanzas
    assert await agent.memory.space(space).search_memories("forged") is not None


async def test_no_attempt_of_an_agent_of_another_server_on_anothers_memories_succeeds(
    federation: Federation,
) -> None:
    """The identity matrix (``test_identity``) across the link: every op of every agent,
    sent from the granted server at an owner's things at home."""
    alice = Alice(await federation.agent("alice", HOME))
    mallory = await federation.agent("mallory", GRANTED)
    try:
        await alice.seed()
        await no_cross_owner_attempt_succeeds(alice, mallory)
    finally:
        await stop_agent(alice.agent)
        await stop_agent(mallory)

"""A memory agent's messages are built without slixmpp's form objects (``wire.Envelope``),
byte for byte as SPADE builds them with its additions, written as text exactly as
slixmpp writes them, and SPADE reads them back; a message it receives goes to the
behaviours whose template it matches, and to none without one."""

from __future__ import annotations

import asyncio

import pytest
from slixmpp import ClientXMPP
from slixmpp.stanza import Message as Stanza
from slixmpp.xmlstream.tostring import tostring
from spade.behaviour import CyclicBehaviour
from spade.message import Message

from spade_memory.protocol.errors import NotAuthorized
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import MemoryStatsOp, SearchMemories, base_memory_ops
from spade_memory.serving.agent import MemoryAgent, OutOfService, ServeRequests
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp import wire
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import ClientAgent, start, unique_jid


@pytest.fixture
async def client() -> ClientXMPP:
    """A client as SPADE's agents have (never connected: building stanzas needs none; on
    the tests' loop, which it takes as its own)."""
    made = ClientXMPP("memory@localhost/agent", "secret")
    for plugin in ("xep_0030", "xep_0004", "xep_0199"):
        made.register_plugin(plugin)
    return made


def as_spade_builds_it(envelope: wire.Envelope, client: ClientXMPP) -> Stanza:
    """SPADE's own ``Message.prepare`` (slixmpp's form objects), with the envelope's
    additions: the stanza type, ``<thread>``, and the form typed ``result``."""
    stanza: Stanza = Message.prepare(envelope, client)
    if envelope.stanza_type != "chat":
        stanza["type"] = envelope.stanza_type
    if envelope.thread:
        stanza["thread"] = envelope.thread
    form = stanza.xml.find("{jabber:x:data}x")
    if form is not None:
        form.set("type", "result")
    return stanza


def request() -> Message:
    made = wire.request_message("memory@localhost", SearchMemories(query="a <b> & 'c'"), "r-1")
    made.sender = "alice@localhost/phone"
    return made


def envelopes() -> list[wire.Envelope]:
    normal = request()
    normal.stanza_type = "normal"  # a plain peer's message: answered in its own type
    return [
        request(),
        wire.inform(request(), SearchMemories(query='"quoted" ünïcode ✓ \n new line')),
        wire.failure(request(), NotAuthorized("not yours <at all>")),
        wire.inform(normal, SearchMemories(query="x")),
        wire.notice("bob@localhost", "spade-memory-changes", '{"seq": 1}'),  # no thread
        wire.Envelope(to="bob@localhost", body="no metadata", thread="t-2"),
        wire.Envelope(to="bob@localhost", body="", metadata={"a": ""}, thread=""),
    ]


def text(stanza: Stanza) -> str:
    """The stanza as sent, but for its id (new for every stanza)."""
    stanza["id"] = "same"
    return str(stanza)


@pytest.mark.parametrize("envelope", envelopes())
async def test_the_stanza_is_the_one_spade_builds(
    envelope: wire.Envelope, client: ClientXMPP
) -> None:
    assert text(envelope.prepare(client)) == text(as_spade_builds_it(envelope, client))


@pytest.mark.parametrize("envelope", envelopes())
async def test_the_text_is_what_slixmpp_writes_to_the_stream(
    envelope: wire.Envelope, client: ClientXMPP, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client, "new_id", lambda: "same")
    if envelope.empty_sender():
        envelope.sender = "memory@localhost"
    stanza = envelope.prepare(client)
    written = tostring(stanza.xml, xmlns=client.default_ns, stream=client, top_level=True)
    assert envelope.text(client) == written
    # and a JID is written as slixmpp writes it, whatever case it was given in
    envelope.to, envelope.sender = "Bob@LocalHost/Phone", "Memory@LOCALHOST"
    written = tostring(
        envelope.prepare(client).xml, xmlns=client.default_ns, stream=client, top_level=True
    )
    assert envelope.text(client) == written


async def test_spade_reads_back_the_metadata_thread_and_body(client: ClientXMPP) -> None:
    sent = wire.failure(request(), NotAuthorized("not yours"))
    received = Message.from_node(sent.prepare(client))
    assert received.thread == "r-1" and received.body == sent.body
    assert received.get_metadata("performative") == "refuse"
    assert received.get_metadata("ontology") == wire.ONTOLOGY
    assert received.get_metadata("language") == wire.LANGUAGE
    assert wire.reply_template().match(received)


class Sends(CyclicBehaviour):  # type: ignore[misc]
    """A behaviour added without a template, as the memory agents' notifiers are."""

    async def run(self) -> None:
        await asyncio.sleep(1)


async def test_a_request_reaches_serving_and_no_behaviour_without_a_template() -> None:
    service = OutOfService("base-memory", base_memory_ops, Limits(), "closed for the test")
    agent = MemoryAgent("memory@localhost", "secret", service)
    serving, sender = ServeRequests(service, "localhost"), Sends()
    agent.add_behaviour(serving, wire.request_template())  # the agent is not started
    agent.add_behaviour(sender)
    for _ in range(3):
        agent.dispatch(wire.inform(request(), SearchMemories(query="not a request")))
        agent.dispatch(request())
    # SPADE's own dispatch would have put all six in the sender's mailbox, for ever
    assert serving.mailbox_size() == 3 and sender.mailbox_size() == 0
    assert (await serving.receive()).thread == "r-1"


class Asks(CyclicBehaviour):  # type: ignore[misc]
    """Sends one request as SPADE sends it (from the agent's bare JID), keeps the reply."""

    def __init__(self, to: str) -> None:
        super().__init__()
        self.to, self.asked = to, False
        self.reply = asyncio.get_running_loop().create_future()

    async def run(self) -> None:
        if not self.asked:
            self.asked = True
            await self.send(wire.request_message(self.to, MemoryStatsOp(), "r-local"))
        if (received := await self.receive(timeout=0.2)) is not None and not self.reply.done():
            self.reply.set_result(received)


async def test_a_reply_to_an_agent_of_the_same_process_goes_through_spade(
    memory_service: MemoryServiceProcess,
) -> None:
    service = OutOfService("base-memory", base_memory_ops, Limits(), "closed for the test")
    memory = MemoryAgent(unique_jid("local-memory"), "secret", service, port=memory_service.port)
    asker = ClientAgent(unique_jid("local-asker"), "secret", port=memory_service.port)
    await start(memory)
    await start(asker)
    try:
        asks = Asks(str(memory.jid))
        asker.add_behaviour(asks, wire.reply_template())
        reply = await asyncio.wait_for(asks.reply, timeout=30)
        assert reply.thread == "r-local" and reply.get_metadata("performative") == "failure"
        # SPADE handed over the reply object itself: it never went out as XMPP text
        assert isinstance(reply, wire.Envelope)
    finally:
        await stop_agent(asker)
        await stop_agent(memory)

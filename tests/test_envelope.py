"""A memory agent's messages are built without slixmpp's form objects (``wire.Envelope``),
byte for byte as SPADE builds them with its additions, and SPADE reads them back."""

from __future__ import annotations

import pytest
from slixmpp import ClientXMPP
from slixmpp.stanza import Message as Stanza
from spade.message import Message

from spade_memory import wire
from spade_memory.base_memory.ops import SearchMemories
from spade_memory.errors import NotAuthorized


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


async def test_spade_reads_back_the_metadata_thread_and_body(client: ClientXMPP) -> None:
    sent = wire.failure(request(), NotAuthorized("not yours"))
    received = Message.from_node(sent.prepare(client))
    assert received.thread == "r-1" and received.body == sent.body
    assert received.get_metadata("performative") == "refuse"
    assert received.get_metadata("ontology") == wire.ONTOLOGY
    assert received.get_metadata("language") == wire.LANGUAGE
    assert wire.reply_template().match(received)

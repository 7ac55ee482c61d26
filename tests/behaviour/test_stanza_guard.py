"""A stanza whose address does not parse is dropped alone, before slixmpp's handlers read
it (issue 47, item 4: a ``from`` with two ``@`` raised in a handler, slixmpp's error
reply read it again, and the exception dropped the agent's whole stream). Driven
through slixmpp's own entry for a parsed stanza, on SPADE's client."""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET

import pytest
from slixmpp import JID
from slixmpp.jid import InvalidJID
from spade.xmpp_client import XMPPClient

from spade_memory.xmpp import stanza_guard

UNREADABLE = ("a@b@localhost/x", "@localhost", "alice@/r", "alice@localhost/")


def _message(sender: str) -> ET.Element:
    return ET.fromstring(
        f'<message xmlns="jabber:client" from="{sender}" to="probe@localhost/r" type="chat">'
        "<body>hi</body></message>"
    )


def _client(heard: list[str]) -> XMPPClient:
    client = XMPPClient(JID("probe@localhost"), "pw", False, False)
    client.add_event_handler("message", lambda message: heard.append(str(message["from"])))
    return client


async def test_without_the_guard_one_such_stanza_raises_out_of_the_stream() -> None:
    client = _client([])
    with pytest.raises(InvalidJID):
        client._spawn_event(_message(UNREADABLE[0]))


async def test_with_the_guard_it_is_dropped_and_logged_and_the_next_one_is_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    heard: list[str] = []
    client = _client(heard)
    stanza_guard.install(client)
    stanza_guard.install(client)  # once per client, however often asked
    with caplog.at_level(logging.WARNING, logger="spade_memory.xmpp"):
        for sender in UNREADABLE:
            client._spawn_event(_message(sender))
        client._spawn_event(_message("ok@localhost/r"))
    assert heard == ["ok@localhost/r"]
    assert caplog.text.count("whose address does not parse") == len(UNREADABLE)

"""What the embedded server does with a client's stanzas once its stream is bound.

pyjabber's handler, with these differences, each for a fault seen:

- ``from`` is stamped with the stream's authenticated JID (RFC 6120 §8.1.2.1);
  pyjabber only filled in a missing one, so anyone could send as anyone.
- No one stanza can stop a connection. pyjabber read ``to`` with its own
  splitter inside the one task that feeds a connection's stanzas: an address
  with two ``@`` (or none) raised there, and that connection's outgoing path
  died silently with TCP still up. Here an address is read by slixmpp's JID (as
  every client reads it), a message that cannot be routed goes back to its
  sender as an error, and anything else that fails drops that stanza alone,
  with a log line.
- Messages to an account with no available session are kept within bounds
  (``offline``) and delivered, oldest first, when a session says it is
  available; pyjabber kept them without bound and delivered newest first.
- An iq addressed to a connected client's full JID is delivered to it (pyjabber
  answered every iq itself, so a peer's disco#info or ping never reached the
  agent it named).
- A stanza is written in the stream's default namespace, as clients write them
  (``<message>``, slixmpp's serializer); pyjabber's ``ET.tostring`` wrote
  ``<ns0:message xmlns:ns0="jabber:client">``, which xmpp.js does not read.
- A message to a bare JID goes to the account's available sessions of the highest
  priority, an absent priority being 0 and a negative one taking no such message
  (RFC 6121 §8.5.2.1); pyjabber ranked priorities as text and kept an ended
  session's, which outranked a new session that stated none: the message waited
  for the account's next login.
"""

from __future__ import annotations

import asyncio
import logging
import xml.etree.ElementTree as ET
from typing import Any, ClassVar

from pyjabber import AppConfig
from pyjabber.stream.handlers.StanzaHandler import StanzaHandler
from pyjabber.stream.JID import JID as RoutedJID
from slixmpp.jid import JID, InvalidJID
from slixmpp.xmlstream.tostring import tostring

from spade_memory.server.embedded.accounts import account_exists
from spade_memory.server.embedded.names import speaker_refusal
from spade_memory.server.embedded.offline import OfflineMessages

logger = logging.getLogger("spade_memory.xmpp_server")
_CLIENT_STANZAS = frozenset("{jabber:client}" + kind for kind in ("message", "presence", "iq"))
_STANZAS = "urn:ietf:params:xml:ns:xmpp-stanzas"
_KEPT_TYPES = frozenset(("chat", "normal"))
"""Message types kept for an absent account (RFC 6121 §8.5.2: not errors, headlines or
groupchat)."""


class StampingStanzaHandler(StanzaHandler):  # type: ignore[misc]
    """pyjabber's handler of a bound client stream, with the differences above."""

    offline: ClassVar[OfflineMessages] = OfflineMessages()
    """Messages waiting for their account (set by the server when it starts)."""
    federates: ClassVar[bool] = True
    """Whether messages to other domains go to other servers (pyjabber's s2s); when not,
    they are answered remote-server-not-found (set by the server when it starts)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stamp: str | None = None
        """The address stamped on every stanza of this stream, once checked."""

    async def feed(self, element: ET.Element) -> None:
        speaker = self._jid or self._connections.get_jid(self._peername)
        try:
            if element.tag in _CLIENT_STANZAS:
                if self._stamp is None or self._stamp != str(speaker):
                    why = "no authenticated address" if speaker is None else _unstampable(speaker)
                    if why is not None:
                        logger.warning("dropped a stanza of %s: %s", self._peername, why)
                        return
                    self._stamp = str(speaker)
                element.attrib["from"] = self._stamp  # a forged from is replaced, not trusted
            await super().feed(element)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # one stanza, never the connection
            logger.warning("dropped a %s from %s: %r", _kind(element), speaker, error)

    async def handle_msg(self, element: ET.Element) -> None:
        to = self._destination(element)
        if to is None:
            return
        host = AppConfig.app_config.host
        if to.domain != host and to.domain not in self._ip:
            if not self.federates:
                why = f"this server ({host}) takes no server-to-server connections"
                self._bounce(element, "cancel", "remote-server-not-found", why)
                return
            await super().handle_msg(element)  # another server's: pyjabber's s2s
            return
        routed = RoutedJID(user=to.user, domain=host, resource=to.resource or None)
        stanza = written(element)
        sessions = self._connections.get_transport_online(routed) if to.resource else []
        kind = element.attrib.get("type", "normal")
        if not sessions and (kind in _KEPT_TYPES or kind == "headline"):
            sessions = self._available(routed)  # RFC 6121 §8.5.3.2.1: as to the bare JID
            if not sessions and kind in _KEPT_TYPES:  # a headline: dropped (§8.5.2.2.1)
                await self._keep(element, to.bare, stanza)
                return
        for session in sessions:
            session.transport.write(stanza)

    async def handle_iq(self, element: ET.Element) -> None:
        """An iq to a local client's full JID goes to that client (RFC 6120 §10.5.4); any
        other iq is pyjabber's, as before."""
        address = element.attrib.get("to")
        if address and "/" in address:
            try:
                to = JID(address)
            except InvalidJID:
                self._bounce(element, "modify", "jid-malformed", "the address does not parse")
                return
            if to.domain == AppConfig.app_config.host and to.user:
                routed = RoutedJID(user=to.user, domain=to.domain, resource=to.resource)
                for session in self._connections.get_transport(routed):
                    session.transport.write(written(element))
                return
        await super().handle_iq(element)

    async def handle_pre(self, element: ET.Element) -> None:
        """pyjabber's presence handling; once a session says it is available, the messages
        kept for its account are delivered to it, oldest first."""
        await super().handle_pre(element)
        if "to" not in element.attrib and element.attrib.get("type", "available") == "available":
            for stanza in self.offline.take(self._jid.bare()):
                self._transport.write(stanza)

    def _destination(self, element: ET.Element) -> JID | None:
        """Where a message goes, as slixmpp reads its ``to`` (also written back, prepared);
        None when it cannot be routed, after telling the sender so."""
        address = element.attrib.get("to")
        why = None
        try:
            to = JID(address) if address else None
        except InvalidJID as error:
            to, why = None, f"the address {address!a} does not parse ({error})"
        if to is not None and not to.user:
            to, why = None, "the server itself takes no messages"
        elif to is None and why is None:
            why = "a message needs an address"
        if to is None:
            self._bounce(element, "modify", "jid-malformed", why or "")
            return None
        element.attrib["to"] = str(to)
        return to

    def _available(self, account: RoutedJID) -> list[Any]:
        """The sessions of ``account`` that take messages to its bare JID: its connected,
        available ones of the highest priority, if that is not negative."""
        ranked: dict[int, tuple[int, Any]] = {}  # each session once, by its identity
        for resource, *_, priority in self._presenceManager.priority_by_jid(account):
            full = RoutedJID(user=account.user, domain=account.domain, resource=resource)
            for session in self._connections.get_transport_online(full):
                ranked[id(session)] = (_priority(priority), session)
        ranked_sessions = list(ranked.values())
        best = max((rank for rank, _ in ranked_sessions), default=-1)
        return [session for rank, session in ranked_sessions if rank == best] if best >= 0 else []

    async def _keep(self, element: ET.Element, account: str, stanza: bytes) -> None:
        """Keep a message for an absent account, or tell the sender why not."""
        if not await account_exists(JID(account).user):
            self._bounce(element, "cancel", "service-unavailable", f"no account {account}", account)
            return
        refused = self.offline.keep(account, stanza)
        if refused is not None:
            self._bounce(element, "wait", "resource-constraint", refused, account)

    def _bounce(
        self, element: ET.Element, kind: str, condition: str, text: str, origin: str = ""
    ) -> None:
        """Send ``element`` back to its sender as an error from ``origin`` (the intended
        recipient; the server when it has none), never an error for an error."""
        if element.attrib.get("type") == "error":
            return
        bounced = ET.Element(element.tag, {
            "type": "error", "to": element.attrib.get("from", ""),
            "from": origin or AppConfig.app_config.host, "id": element.attrib.get("id", ""),
        })  # fmt: skip
        error = ET.SubElement(bounced, "error", {"type": kind})
        ET.SubElement(error, condition, {"xmlns": _STANZAS})
        ET.SubElement(error, "text", {"xmlns": _STANZAS}).text = text
        self._transport.write(written(bounced))
        logger.debug("bounced a %s of %s: %s", _kind(element), element.attrib.get("from"), text)


def written(element: ET.Element) -> bytes:
    """``element`` as a client stream carries it: in the stream's default namespace
    (``jabber:client``), each other namespace declared where it starts, no prefixes."""
    text: str = tostring(element, xmlns="jabber:client")
    return text.encode()


def _priority(stated: str | None) -> int:
    """A presence's priority as a number (RFC 6121 §4.7.2.3: -128 to 127; absent or
    unreadable, 0)."""
    try:
        return max(-128, min(127, int(stated or 0)))
    except ValueError:
        return 0


def _unstampable(speaker: RoutedJID) -> str | None:
    return speaker_refusal(speaker.user, speaker.domain, speaker.resource or "")


def _kind(element: ET.Element) -> str:
    return element.tag.rpartition("}")[2]

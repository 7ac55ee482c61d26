"""A stanza whose address does not parse is dropped alone, before slixmpp reads it.

slixmpp reads ``from`` and ``to`` lazily. A ``from`` with two ``@`` raises in
the first handler that reads it; slixmpp then answers the stanza with an
error, which reads ``from`` again, and that second exception leaves its
parser and drops the whole stream: a trickle of such messages kept every
agent off XMPP. An incoming filter reads both addresses first and drops the
stanza, with a log line, when either does not parse.
"""

from __future__ import annotations

import logging
from typing import Any

from slixmpp import ClientXMPP
from slixmpp.jid import InvalidJID

logger = logging.getLogger("spade_memory.xmpp")


def readable(stanza: Any) -> Any:
    """``stanza`` when its addresses parse, else None (it is dropped, and logged)."""
    try:
        stanza["from"]
        stanza["to"]
    except InvalidJID as error:
        attrib = stanza.xml.attrib
        logger.warning(
            "dropped a %s whose address does not parse (from %s to %s): %s",
            stanza.name, ascii(attrib.get("from")), ascii(attrib.get("to")), error,
        )  # fmt: skip
        return None
    return stanza


def install(client: ClientXMPP) -> None:
    """Drop unreadable stanzas on ``client``'s stream from now on (once per client)."""
    if not getattr(client, "_spade_memory_guarded", False):
        client.add_filter("in", readable)
        client._spade_memory_guarded = True

"""A client connection of the embedded server: pyjabber's, with its text joined once,
its XML declarations left out, its login checked (``accounts``) and its stanzas handled
by ``stanzas``."""

from __future__ import annotations

import re
from typing import Any

from pyjabber.network.parsers.XMLParser import XMLParser
from pyjabber.network.protocols.XMLProtocol import XMLProtocol

from spade_memory.server.embedded.accounts import CheckedStreamNegotiator
from spade_memory.server.embedded.stanzas import StampingStanzaHandler


class TextJoiningParser(XMLParser):  # type: ignore[misc]
    """pyjabber's stream parser, with each run of text joined once.

    expat hands a text over in pieces, one more at every entity (a JSON body's
    ``&quot;``: thousands in a batch of a hundred ops), and pyjabber added each
    piece to the text so far, copying it: a body cost the server the square of its
    length. The pieces are kept here and given to pyjabber as one, before the next
    tag, so its elements are the same. White space between one stream and the next
    header (``<?xml version='1.0'?>`` and a line break, as go-sendxmpp writes them) is
    no text of any element, and pyjabber refused it: it is left out.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pieces: list[str] = []

    def characters(self, content: str) -> None:
        self._pieces.append(content)

    def startElementNS(self, name: Any, qname: Any, attrs: Any) -> None:
        self._join()
        super().startElementNS(name, qname, attrs)

    def endElementNS(self, name: Any, qname: Any) -> None:
        self._join()
        super().endElementNS(name, qname)

    def _join(self) -> None:
        if self._pieces:
            text = "".join(self._pieces)
            self._pieces.clear()
            if self._stack or text.strip():  # a line break before a new stream's header
                super().characters(text)


_DECLARATION = re.compile(rb"<\?xml\s[^>]*?\?>")
_PARTS = tuple(b"<?xml"[:n] for n in range(5, 0, -1))
HELD_AT_MOST = 512
"""Bytes of an unfinished declaration held for the next read; a longer one is no
declaration and goes to the parser as it is (which refuses it)."""


class DeclarationFilter:
    """Leaves out the XML declarations of a connection's streams.

    pyjabber feeds a whole connection to one XML parser, each new stream header
    (after STARTTLS and after login) read as an element inside the first. A client
    may begin every stream with ``<?xml version='1.0'?>`` (RFC 6120 §4.3.1;
    xmpp.js, go-sendxmpp and Prosody do), and a declaration anywhere but at the
    start of a document is a fatal error to the parser: those clients were cut
    off right after ``<proceed/>``. A stream is UTF-8 with or without one, so every
    declaration is dropped; a declaration split between two reads is held until
    it is whole. Other processing instructions are left to the parser."""

    def __init__(self) -> None:
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        """``data`` without declarations, less any unfinished one at its end (kept)."""
        text = _DECLARATION.sub(b"", self._held + data)
        self._held = b""
        start = text.rfind(b"<?xml")
        if start != -1 and len(text) - start <= HELD_AT_MOST and b"?>" not in text[start:]:
            text, self._held = text[:start], text[start:]
        else:
            for part in _PARTS:  # "<?xm" at the end may be a declaration's beginning
                if text.endswith(part):
                    text, self._held = text[: -len(part)], part
                    break
        return text


class ClientConnection(XMLProtocol):  # type: ignore[misc]
    """A client connection negotiated by ``CheckedStreamNegotiator``, parsed by
    ``TextJoiningParser``, its declarations left out by ``DeclarationFilter``, its
    stanzas handled by ``StampingStanzaHandler``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._declarations = DeclarationFilter()

    def data_received(self, data: bytes) -> None:
        if kept := self._declarations.feed(data):
            super().data_received(kept)

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._xml_parser.getContentHandler().cancel_queue_bridge()  # not started yet
        parser = TextJoiningParser(
            self._transport, self, CheckedStreamNegotiator, StampingStanzaHandler
        )
        self._xml_parser.setContentHandler(parser)

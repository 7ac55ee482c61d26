"""A client connection of the embedded server: pyjabber's, with its text joined once,
its login checked (``accounts``) and its stanzas handled by ``stanzas``."""

from __future__ import annotations

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
    tag, so its elements are the same.
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
            super().characters(text)


class ClientConnection(XMLProtocol):  # type: ignore[misc]
    """A client connection negotiated by ``CheckedStreamNegotiator``, parsed by
    ``TextJoiningParser``, its stanzas handled by ``StampingStanzaHandler``."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._xml_parser.getContentHandler().cancel_queue_bridge()  # not started yet
        parser = TextJoiningParser(
            self._transport, self, CheckedStreamNegotiator, StampingStanzaHandler
        )
        self._xml_parser.setContentHandler(parser)

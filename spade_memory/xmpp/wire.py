"""The wire: how requests and replies look as SPADE/XMPP messages (the envelope only).

A request is a ``<message type="chat">`` whose SPADE metadata (an XEP-0004
form titled ``spade:x:metadata``) carries ``performative=request``,
``ontology=spade-memory`` and ``language=json``; its ``thread`` is the request
id and its body is one op as JSON. The reply keeps the thread and ontology;
its performative is ``inform`` (body: the op's result as JSON), ``failure``
or ``refuse`` (body: ``{"condition", "text"}``; ``refuse`` is used for
``not-authorized``). SPADE only sends the thread when metadata is present,
which it always is here.

Peers that are not SPADE agents are served too (see ``plain_peers``): a plain
``chat`` or ``normal`` message whose body is an op, its request id in the
standard ``<thread>``. So every message a memory agent sends (a ``Envelope``)
carries the request id in ``<thread>`` as well as in the form, answers in the
request's own stanza type, and types its form ``result``: a person's client
shows it rather than offering it as a form to fill in.

The parts that need no SPADE (names, a failure's body, the form as XML) are in
``envelope``, for a client that speaks slixmpp alone. Nothing here knows which services
exist: that is the registry's business.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from slixmpp import JID, ClientXMPP
from slixmpp.stanza import Message as Stanza
from spade.message import Message
from spade.template import Template

from spade_memory.protocol.errors import Busy, Condition, MemoryServiceError, PendingApproval
from spade_memory.protocol.ops import Record
from spade_memory.xmpp.envelope import (
    LANGUAGE,
    ONTOLOGY,
    Failure,
    bare,
    metadata_form,
    metadata_form_text,
    request_metadata,
)
from spade_memory.xmpp.xml_escape import escape

__all__ = [
    "LANGUAGE",
    "ONTOLOGY",
    "Envelope",
    "Failure",
    "bare",
    "envelope_schema",
    "failure",
    "inform",
    "metadata_form",
    "metadata_form_text",
    "notice",
    "notice_template",
    "reply_template",
    "reply_to",
    "request_message",
    "request_template",
]
"""Its own calls, and the envelope's names that callers find here."""


class Envelope(Message):  # type: ignore[misc]
    """A SPADE message with the request id also in ``<thread>``, its form typed
    ``result``, and sent as ``stanza_type`` (``chat``, or ``normal`` to answer a
    ``normal`` message)."""

    def __init__(self, *args: Any, stanza_type: str = "chat", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stanza_type = stanza_type

    def prepare(self, client: ClientXMPP) -> Stanza:
        """The stanza to send: SPADE's, with the additions above.

        Built as SPADE builds it, to the byte (tested), but its metadata form as plain
        XML: slixmpp's form objects cost most of the time a reply took to build, on
        every message a memory agent or its client sends."""
        stanza: Stanza = client.Message()
        stanza["to"] = self.to
        stanza["from"] = self.sender
        stanza["body"] = self.body
        stanza["type"] = self.stanza_type
        if self._metadata:
            stanza.xml.append(metadata_form(self._metadata, self.thread))
        if self.thread:
            stanza["thread"] = self.thread
        return stanza

    def text(self, client: ClientXMPP) -> str:
        """The stanza ``prepare`` builds, as slixmpp writes it to the stream, to the byte
        (tested), without building it: the stanza's objects and slixmpp's serialiser cost
        many times what this string does. ``to`` and ``sender`` must be set."""
        head = f'<message id="{client.new_id()}"' if client.use_message_ids else "<message"
        if client.default_lang:
            head += f' xml:lang="{escape(client.default_lang)}"'
        head += f' to="{escape(str(JID(self.to)))}" from="{escape(str(JID(self.sender)))}"'
        if self.stanza_type in Stanza.types:
            head += f' type="{self.stanza_type}"'
        parts = [head, ">"]
        if self.body:
            parts += ["<body>", escape(self.body), "</body>"]
        if self._metadata:
            parts.append(metadata_form_text(self._metadata, self.thread))
        if self.thread:
            parts += ["<thread>", escape(self.thread), "</thread>"]
        parts.append("</message>")
        return "".join(parts)


def request_message(to: str, op: BaseModel, request_id: str) -> Message:
    """The request carrying ``op`` to the memory agent ``to``."""
    return Envelope(
        to=to,
        body=op.model_dump_json(exclude_none=True, by_alias=True),
        thread=request_id,
        metadata=request_metadata(),
    )


def inform(request: Message, result: Record) -> Message:
    """The reply carrying ``result``."""
    return _reply(request, "inform", result.model_dump_json())


def failure(request: Message, error: MemoryServiceError) -> Message:
    """The reply saying why ``request`` was not served (``refuse`` for not-authorized)."""
    performative = "refuse" if error.condition is Condition.NOT_AUTHORIZED else "failure"
    retry_after = error.retry_after if isinstance(error, Busy) else None
    proposal = error.proposal if isinstance(error, PendingApproval) else None
    body = Failure(
        condition=error.condition.value, text=error.text, retry_after=retry_after,
        proposal=proposal,
    ).model_dump_json(exclude_none=True)  # fmt: skip
    return _reply(request, performative, body)


def reply_to(request: Message, outcome: Record | MemoryServiceError) -> Message:
    """``inform`` with a result, ``failure``/``refuse`` with an error."""
    if isinstance(outcome, MemoryServiceError):
        return failure(request, outcome)
    return inform(request, outcome)


def _reply(request: Message, performative: str, body: str) -> Message:
    return Envelope(
        to=str(request.sender),
        sender=str(request.to),
        body=body,
        thread=request.thread,
        metadata={"performative": performative, "ontology": ONTOLOGY, "language": LANGUAGE},
        stanza_type=getattr(request, "stanza_type", "chat"),
    )


def notice(to: str, ontology: str, body: str = "{}") -> Message:
    """A one-way notice (``inform`` without a thread) under its own ontology."""
    return Envelope(
        to=to,
        body=body,
        metadata={"performative": "inform", "ontology": ontology, "language": LANGUAGE},
    )


def notice_template(ontology: str) -> Template:
    """Matches the notices of ``ontology``."""
    return Template(metadata={"performative": "inform", "ontology": ontology})


def request_template() -> Template:
    """Matches memory requests (what a memory agent serves)."""
    return Template(metadata={"performative": "request", "ontology": ONTOLOGY})


def reply_template() -> Template:
    """Matches memory replies (what a client's reply router takes)."""
    templates = [
        Template(metadata={"performative": performative, "ontology": ONTOLOGY})
        for performative in ("inform", "failure", "refuse")
    ]
    return templates[0] | templates[1] | templates[2]


def envelope_schema() -> dict[str, object]:
    """The envelope, described for peers in any language."""
    return {
        "message_type": "chat",
        "metadata_form_title": "spade:x:metadata",
        "metadata": {
            "performative": ["request", "inform", "failure", "refuse"],
            "ontology": ONTOLOGY,
            "language": LANGUAGE,
        },
        "thread": "request id: the standard <thread> element, and the form field "
        "_thread_node for SPADE peers (a peer without the form sends <thread> alone)",
        "plain_peers": "a chat or normal message whose body is one op as JSON is served "
        "without the form; the reply carries <thread> and the body",
        "conditions": [condition.value for condition in Condition],
    }

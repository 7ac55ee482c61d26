"""Requests from XMPP peers that do not speak SPADE: any client or library that can send
a message.

A ``chat`` or ``normal`` message without SPADE's metadata form whose body is a JSON
object naming an ``op`` is served like a SPADE request; its request id is the
standard ``<thread>`` (none: the request is served, but a retry is not recognised).
The reply goes back in the same stanza type with ``<thread>`` (``wire.Envelope``).

A body that is not an op gets a ``type="error"`` message (``bad-request``) that says
what to send. An error is never answered (RFC 6120), so two agents that each take the
other's replies for requests cannot loop. Messages without a body (chat states,
receipts), errors, headlines and groupchat messages ask nothing and get nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_core import from_json
from slixmpp.stanza import Message as Stanza

from spade_memory.xmpp import wire

SERVED_TYPES = ("chat", "normal")
"""Stanza types a memory agent answers without SPADE's form."""
EXAMPLES = ("memory_stats", "get_all_conversations", "get_session_context")
"""Ops that change nothing, named as an example of what to send."""


def as_request(stanza: Stanza) -> wire.Envelope | None:
    """The SPADE request a plain ``stanza`` carries, or None when it asks nothing (no
    body, or a stanza type never answered)."""
    body = stanza["body"]
    if stanza["type"] not in SERVED_TYPES or not body:
        return None
    return wire.Envelope(
        to=str(stanza["to"]),
        sender=str(stanza["from"]),
        body=body,
        thread=stanza["thread"] or None,
        metadata={
            "performative": "request",
            "ontology": wire.ONTOLOGY,
            "language": wire.LANGUAGE,
        },
        stanza_type=stanza["type"],
    )


def names_an_op(body: str) -> bool:
    """Whether ``body`` is a JSON object with a string ``op`` (whether that op exists is
    the service's to say, with the ops it knows)."""
    try:
        parsed = from_json(body)
    except ValueError:
        return False
    return isinstance(parsed, dict) and isinstance(parsed.get("op"), str)


def what_to_send(service: str, ops: Sequence[str]) -> str:
    """The one-paragraph answer to a message that is not a request."""
    readers = [op for op in EXAMPLES if op in ops]
    example = f'{{"op": "{readers[0] if readers else ops[0]}"}}'
    return (
        f"This is the spade-memory {service} agent: send one op as a JSON object, "
        f"e.g. {example}, optionally with a <thread> as its request id. "
        f"Ops: {', '.join(ops)}. `spade-memory schema` describes each one."
    )


def refusal(stanza: Stanza, text: str) -> Stanza:
    """The ``bad-request`` error answering ``stanza``, with ``text`` as its error text
    and as its body (a client that shows only bodies shows it too)."""
    error: Stanza = stanza.reply(clear=True)
    error["type"] = "error"
    error["body"] = text
    if stanza["thread"]:
        error["thread"] = stanza["thread"]
    error["error"]["type"] = "modify"
    error["error"]["condition"] = "bad-request"
    error["error"]["text"] = text
    return error

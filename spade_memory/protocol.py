"""The wire: how requests and replies look as SPADE/XMPP messages.

A request is a ``<message type="chat">`` whose SPADE metadata (an XEP-0004
form titled ``spade:x:metadata``) carries ``performative=request``,
``ontology=spade-memory`` and ``language=json``; its ``thread`` is the request
id and its body is one op as JSON. The reply keeps the thread and ontology;
its performative is ``inform`` (body: the op's result as JSON), ``failure``
or ``refuse`` (body: ``{"condition", "text"}``; ``refuse`` is used for
``not-authorized``). SPADE only sends the thread when metadata is present,
which it always is here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, TypeAdapter
from slixmpp import JID
from spade.message import Message
from spade.template import Template

from . import xml_escape
from .beads_ops import BEADS_SYNC_RESULTS, beads_sync_ops
from .errors import Condition, MemoryServiceError
from .interaction_ops import INTERACTION_RESULTS, interaction_ops
from .ops import BaseMemoryOp
from .records import ChangeList, Deleted, Failure, Memory, MemoryList, MemoryStats, Record, Stored

xml_escape.install()

ONTOLOGY = "spade-memory"
LANGUAGE = "json"
BASE_MEMORY_NODE = "base-memory"
"""Default local part of the base memory agent's JID."""
INTERACTION_MEMORY_NODE = "interaction-memory"
"""Default local part of the interaction memory agent's JID."""

BEADS_SYNC_NODE = "beads-sync"
"""Default local part of the beads sync agent's JID."""
EVENTS_ONTOLOGY = "spade-memory-events"
"""Ontology of the base memory agent's "memory changed" notices to its mirror."""

BASE_MEMORY_RESULTS: dict[str, type[Record]] = {
    "store_memory": Stored,
    "get_memory": Memory,
    "search_memories": MemoryList,
    "list_memories": MemoryList,
    "recent_memories": MemoryList,
    "update_memory": Memory,
    "delete_memory": Deleted,
    "memory_stats": MemoryStats,
    "changes_since": ChangeList,
}
"""The result model each base memory op answers with."""


def bare(jid: JID | str) -> str:
    """The bare JID (``name@domain``) of a full or bare JID."""
    return str(JID(str(jid)).bare)


def request_message(to: str, op: BaseModel, request_id: str) -> Message:
    return Message(
        to=to,
        body=op.model_dump_json(exclude_none=True, by_alias=True),
        thread=request_id,
        metadata={"performative": "request", "ontology": ONTOLOGY, "language": LANGUAGE},
    )


def inform(request: Message, result: Record) -> Message:
    return _reply(request, "inform", result.model_dump_json())


def failure(request: Message, error: MemoryServiceError) -> Message:
    performative = "refuse" if error.condition is Condition.NOT_AUTHORIZED else "failure"
    body = Failure(condition=error.condition.value, text=error.text).model_dump_json()
    return _reply(request, performative, body)


def _reply(request: Message, performative: str, body: str) -> Message:
    return Message(
        to=str(request.sender),
        sender=str(request.to),
        body=body,
        thread=request.thread,
        metadata={"performative": performative, "ontology": ONTOLOGY, "language": LANGUAGE},
    )


def change_notice(to: str) -> Message:
    """Tells the mirror that changes were committed; it fetches them with ``changes_since``."""
    return Message(
        to=to,
        body="{}",
        metadata={"performative": "inform", "ontology": EVENTS_ONTOLOGY, "language": LANGUAGE},
    )


def change_notice_template() -> Template:
    return Template(metadata={"performative": "inform", "ontology": EVENTS_ONTOLOGY})


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


def json_schemas() -> dict[str, Any]:
    """JSON Schema of every request and reply, for peers in any language."""
    return {
        "envelope": {
            "message_type": "chat",
            "metadata_form_title": "spade:x:metadata",
            "metadata": {
                "performative": ["request", "inform", "failure", "refuse"],
                "ontology": ONTOLOGY,
                "language": LANGUAGE,
            },
            "thread": "request id; the form field _thread_node carries it on the wire",
            "conditions": [condition.value for condition in Condition],
        },
        "services": {
            BASE_MEMORY_NODE: _service_schema(TypeAdapter(BaseMemoryOp), BASE_MEMORY_RESULTS),
            INTERACTION_MEMORY_NODE: _service_schema(interaction_ops, INTERACTION_RESULTS),
            BEADS_SYNC_NODE: _service_schema(beads_sync_ops, BEADS_SYNC_RESULTS),
        },
        "failure": Failure.model_json_schema(),
    }


def _service_schema(ops: TypeAdapter[Any], results: dict[str, type[Record]]) -> dict[str, Any]:
    return {
        "request": ops.json_schema(),
        "replies": {op: model.model_json_schema() for op, model in results.items()},
    }

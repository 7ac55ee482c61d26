"""Recall: what the memory agents know, put in front of the model before each turn.

Before the model answers a message, the conversation's notes (interaction
memory) and the few long-term memories most relevant to the message (base
memory) are fetched concurrently, each bounded by a short timeout; whatever
does not arrive in time is left out and the turn goes on.

What is recalled is data, never instructions: other members of a shared space wrote
some of it, and a note holds whatever was said. It reaches the model as two messages:
one ``system`` line of this module's own (``RECALL_NOTICE``) saying so, then a ``user``
message holding the memories as JSON between delimiters no memory can contain, each
with its author and space (``spade_memory.tools.provenance``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.memories import Memory
from spade_memory.tools.provenance import RECALL_NOTICE, as_data, author_of

log = logging.getLogger("spade_memory.recall")

MAX_QUERY_CHARS = 1_000


@dataclass(frozen=True)
class Recall:
    """How much to recall before each turn, and how long to wait for it."""

    enabled: bool = True
    memories: int = 3
    """Long-term memories most relevant to the incoming message."""
    max_chars: int = 2_000
    """Bound on the recall block added to the model's context."""
    timeout: float = 1.5
    """Seconds to wait for the memory agents; the turn goes on without them after."""


def recall_messages(block: str) -> list[dict[str, str]]:
    """The two messages a recall block is given to the model as: the system line saying
    that what follows is information, not instructions, then the block as ``user``."""
    return [{"role": "system", "content": RECALL_NOTICE}, {"role": "user", "content": block}]


async def recall_text(
    client: MemoryClient,
    settings: Recall,
    conversation_id: str,
    incoming: str,
    *,
    notes: bool,
    long_term: bool,
    me: str,
    space: list[str] | None = None,
) -> str | None:
    """The recall block for one turn (``provenance.as_data``: JSON of ``{"conversation_notes":
    [{"author", "text"}], "memories": [{"category", "content", "space", "author"}]}``,
    at most ``settings.max_chars`` long), or None when there is nothing to add.

    ``me``: the agent's bare JID, the author of its conversation's notes; ``space``: where
    long-term memories are searched, the agent's own by default. Raises nothing: a memory
    agent that fails or is late is left out."""
    notes_call = client.get_information(conversation_id) if notes else _nothing()
    search_call = (
        client.search_memories(incoming[:MAX_QUERY_CHARS], limit=settings.memories, space=space)
        if long_term and incoming.strip()
        else _nothing()
    )
    noted, memories = await asyncio.gather(
        _bounded(notes_call, settings.timeout), _bounded(search_call, settings.timeout)
    )
    return _fitted(
        [{"author": me, "text": str(text)} for text in noted or []],
        [_recalled(memory) for memory in memories or []],
        settings.max_chars,
    )


def _recalled(memory: Memory) -> dict[str, str]:
    return {
        "category": memory.category, "content": memory.content,
        "space": memory.space, "author": author_of(memory),
    }  # fmt: skip


def _fitted(
    notes: list[dict[str, str]], memories: list[dict[str, str]], max_chars: int
) -> str | None:
    """The block of ``notes`` and ``memories`` within ``max_chars``: the least relevant
    memories left out first, then the oldest notes, then the last one's text shortened."""
    notes, memories = [dict(n) for n in notes], [dict(m) for m in memories]
    while notes or memories:
        block = _block(notes, memories)
        if len(block) <= max_chars:
            return block
        if len(notes) + len(memories) > 1:
            if memories:
                memories.pop()
            else:
                notes.pop(0)
            continue
        (item,) = notes or memories
        field = "text" if notes else "content"
        over = len(block) - max_chars
        if over >= len(item[field]):
            return None  # not even an empty text fits
        item[field] = item[field][: len(item[field]) - over - 1] + "…"
    return None


def _block(notes: list[dict[str, str]], memories: list[dict[str, str]]) -> str:
    value: dict[str, Any] = {}
    if notes:
        value["conversation_notes"] = notes
    if memories:
        value["memories"] = memories
    return as_data(value)


async def _nothing() -> None:
    return None


async def _bounded(call: Any, timeout: float) -> Any:
    """The call's result, or None if it failed or took longer than ``timeout``."""
    try:
        return await asyncio.wait_for(call, timeout)
    except asyncio.TimeoutError:
        log.warning("recall: no answer from memory within %.1fs; going on without it", timeout)
    except Exception as error:  # a memory problem must never stop the turn
        log.warning("recall: memory failed (%s); going on without it", error)
    return None

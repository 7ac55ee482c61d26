"""Recall: what the memory agents know, put in front of the model before each turn.

Before the model answers a message, the conversation's notes (interaction
memory) and the few long-term memories most relevant to the message (base
memory) are fetched concurrently, each bounded by a short timeout; whatever
does not arrive in time is left out and the turn goes on.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.ops import PERSONAL

log = logging.getLogger("spade_memory.recall")

RECALL_HEADER = "Memory recall (from the memory agents):"
LONG_TERM_HEADER = "Relevant long-term memories:"
MAX_QUERY_CHARS = 1_000


@dataclass(frozen=True)
class Recall:
    """How much to recall before each turn, and how long to wait for it."""

    enabled: bool = True
    memories: int = 3
    """Long-term memories most relevant to the incoming message."""
    max_chars: int = 2_000
    """Bound on the recalled text added to the model's context."""
    timeout: float = 1.5
    """Seconds to wait for the memory agents; the turn goes on without them after."""


async def recall_text(
    client: MemoryClient,
    settings: Recall,
    conversation_id: str,
    incoming: str,
    *,
    notes: bool,
    long_term: bool,
    space: list[str] | None = None,
) -> str | None:
    """The recall block for one turn, or None when there is nothing to add (``space``:
    where long-term memories are searched, the agent's own by default)."""
    summary_call = client.get_context_summary(conversation_id) if notes else _nothing()
    search_call = (
        client.search_memories(incoming[:MAX_QUERY_CHARS], limit=settings.memories, space=space)
        if long_term and incoming.strip()
        else _nothing()
    )
    summary, memories = await asyncio.gather(
        _bounded(summary_call, settings.timeout), _bounded(search_call, settings.timeout)
    )
    parts = []
    if summary:
        parts.append(str(summary))
    if memories:
        lines = [
            f"- [{memory.category}] {memory.content}"
            + ("" if memory.space == PERSONAL else f" (space {memory.space}, by {memory.author})")
            for memory in memories
        ]
        parts.append("\n".join([LONG_TERM_HEADER, *lines]))
    if not parts:
        return None
    return _bounded_text("\n".join([RECALL_HEADER, *parts]), settings.max_chars)


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


def _bounded_text(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[: max(0, max_chars - 1)] + "…"

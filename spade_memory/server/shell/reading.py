"""The shell's reads: an operator's look, not an agent's use.

Every read the shell sends sets ``count_access`` false, so listing, searching or showing
memories leaves their access counts and last use as they were, and with them the ranking
the agents see.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.memories import Memory, MemoryList, RecentMemories

PAGE = 1000
"""Memories per request when a command reads them all (the service's default
``max_results``)."""


async def every_memory(client: MemoryClient, space: str | None = None) -> AsyncIterator[Memory]:
    """Every memory of ``space`` (default: the client's own; ``*``: every space it reads),
    a page of ``PAGE`` at a time, none of them counted as used."""
    offset: int | None = 0
    while offset is not None:
        op = RecentMemories(limit=PAGE, offset=offset, space=space, count_access=False)
        page = await read(client, op)
        for memory in page.memories:
            yield memory
        offset = page.next_offset


async def read(client: MemoryClient, op: RecentMemories) -> MemoryList:
    """The reply to ``op`` at the base memory agent (a timeout raises ``MemoryTimeout``:
    the shell's client is not degraded)."""
    page = await client.request(client.base_memory_jid, op)
    assert page is not None
    return page

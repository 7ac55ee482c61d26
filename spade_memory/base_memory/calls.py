"""The client's calls to the base memory agent; they mirror spade_llm's ``AgentBaseMemory``."""

from __future__ import annotations

from typing import Any

from ..errors import ItemNotFound
from ..transport import Transport
from . import NAME
from .ops import (
    Category,
    DeleteMemory,
    GetMemory,
    ListMemories,
    Memory,
    MemoryStats,
    MemoryStatsOp,
    RecentMemories,
    SearchMemories,
    StoreMemory,
    UpdateMemory,
)


class Memories(list[Memory]):
    """A list of memories that says whether it is a degraded (empty) answer."""

    def __init__(
        self,
        memories: list[Memory] | None = None,
        *,
        degraded: bool = False,
        next_offset: int | None = None,
    ) -> None:
        super().__init__(memories or [])
        self.degraded = degraded
        """True when memory did not answer and the client is in degraded mode."""
        self.next_offset = next_offset
        """The ``offset`` of the next page of a list, when there may be one."""


class BaseMemoryCalls(Transport):
    """Long-term memories of the sender, at the base memory agent.

    Every call raises the reply's typed error (``MemoryServiceError``) or
    ``MemoryTimeout``; a degraded client returns None or an empty, degraded
    ``Memories`` instead of raising a timeout.
    """

    @property
    def base_memory_jid(self) -> str:
        """The base memory agent's JID."""
        return self.jids[NAME]

    async def _memories(self, op: SearchMemories | ListMemories | RecentMemories) -> Memories:
        result = await self.request(self.base_memory_jid, op)
        if result is None:
            return Memories(degraded=True)
        return Memories(result.memories, next_offset=result.next_offset)

    async def store_memory(
        self,
        category: Category,
        content: str,
        context: str | None = None,
        confidence: float = 1.0,
        *,
        space: str | None = None,
    ) -> str | None:
        """Store a memory in the sender's personal space, or in a shared ``space`` where it
        is a writer (the same content in the same category is reinforced, not added
        twice). Returns its id; raises ``ResourceConstraint`` over a quota."""
        op = StoreMemory(
            category=category, content=content, context=context, confidence=confidence,
            space=space,
        )  # fmt: skip
        result = await self.request(self.base_memory_jid, op)
        return None if result is None else result.id

    async def search_memories(
        self,
        query: str,
        limit: int = 10,
        category: Category | None = None,
        mode: str = "semantic",
        *,
        space: str | list[str] | None = None,
    ) -> Memories:
        """Memories ranked by relevance to ``query``, best first (see ``SearchMemories.mode``).

        ``space``: a space's name, several (``personal`` is the sender's own), or ``*``
        for every space it reads; each memory says its ``space`` and ``author``.
        """
        op = SearchMemories(query=query, limit=limit, category=category, mode=mode, space=space)
        return await self._memories(op)

    async def get_memories_by_category(
        self,
        category: Category,
        limit: int = 50,
        *,
        offset: int = 0,
        space: str | list[str] | None = None,
    ) -> Memories:
        """Memories of one category, most recently used first (``space`` as in search),
        ``offset`` skipped: the answer's ``next_offset`` is the next page's."""
        return await self._memories(
            ListMemories(category=category, limit=limit, offset=offset, space=space)
        )

    async def get_recent_memories(
        self, limit: int = 10, *, offset: int = 0, space: str | list[str] | None = None
    ) -> Memories:
        """Memories of any category, most recently used first (``space`` as in search),
        ``offset`` skipped: the answer's ``next_offset`` is the next page's."""
        return await self._memories(RecentMemories(limit=limit, offset=offset, space=space))

    async def get_memory(self, memory_id: str, *, space: str | None = None) -> Memory | None:
        """One memory; raises ``ItemNotFound`` if the space (personal by default) has none
        with this id."""
        return await self.request(self.base_memory_jid, GetMemory(id=memory_id, space=space))

    async def update_memory(
        self, memory_id: str, *, space: str | None = None, **changes: Any
    ) -> Memory | None:
        """Change any of ``content``, ``category``, ``context``, ``confidence`` of a memory
        the sender stored (or anyone's, in a space it administers).

        Returns the memory as updated; raises ``ItemNotFound``, ``NotAuthorized`` (another
        member's memory) or ``BadRequest``.
        """
        op = UpdateMemory(id=memory_id, space=space, **changes)
        return await self.request(self.base_memory_jid, op)

    async def delete_memory(self, memory_id: str, *, space: str | None = None) -> bool:
        """True if deleted; False if there was no such memory (or degraded). Raises
        ``NotAuthorized`` for another member's memory where the sender is no admin."""
        try:
            op = DeleteMemory(id=memory_id, space=space)
            result = await self.request(self.base_memory_jid, op)
        except ItemNotFound:
            return False
        return result is not None

    async def get_memory_stats(self, *, space: str | None = None) -> MemoryStats | None:
        """Counts by category, average confidence, oldest and newest, the ranking used, and
        the usage against the quota (the sender's own, or a shared ``space``'s)."""
        return await self.request(self.base_memory_jid, MemoryStatsOp(space=space))

"""Typed calls to the beads sync agent, over the same ``MemoryClient`` connection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .beads.mapping import MemoryType
from .beads_ops import (
    BeadsMemories,
    BeadsMemory,
    BeadsStored,
    BeadsStoreMemory,
    DeleteBeadsMemory,
    Done,
    GetSessionContext,
    LinkMemories,
    MarkMemoryAccessed,
    Relationship,
    RestoreSession,
    RetrieveMemories,
    SearchBeadsMemories,
    SessionContext,
)

if TYPE_CHECKING:
    from .client import MemoryClient


class BeadsClient:
    """The beads sync agent's ops; results are None only for a degraded client."""

    def __init__(self, client: MemoryClient, jid: str) -> None:
        self.client = client
        self.jid = jid

    async def store_memory(
        self,
        content: str,
        memory_type: MemoryType = "context",
        *,
        title: str | None = None,
        tags: Sequence[str] = (),
        importance: int | None = None,
        session: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> BeadsStored | None:
        op = BeadsStoreMemory(
            content=content, memory_type=memory_type, title=title, tags=list(tags),
            importance=importance, session=session, metadata=metadata or {},
        )  # fmt: skip
        return await self.client.request(self.jid, op, BeadsStored)

    async def retrieve_memories(
        self,
        memory_type: MemoryType | None = None,
        tags: Sequence[str] = (),
        session: str | None = None,
        limit: int = 20,
        all_sessions: bool = False,
        agent: str | None = None,
    ) -> list[BeadsMemory]:
        op = RetrieveMemories(
            memory_type=memory_type, tags=list(tags), session=session, limit=limit,
            all_sessions=all_sessions, agent=agent,
        )  # fmt: skip
        result = await self.client.request(self.jid, op, BeadsMemories)
        return [] if result is None else result.memories

    async def restore_session(self, session_id: str) -> list[BeadsMemory]:
        result = await self.client.request(
            self.jid, RestoreSession(session_id=session_id), BeadsMemories
        )
        return [] if result is None else result.memories

    async def get_session_context(self, session_id: str | None = None) -> SessionContext | None:
        op = GetSessionContext(session_id=session_id)
        return await self.client.request(self.jid, op, SessionContext)

    async def mark_memory_accessed(self, memory_id: str) -> BeadsMemory | None:
        op = MarkMemoryAccessed(memory_id=memory_id)
        return await self.client.request(self.jid, op, BeadsMemory)

    async def link_memories(
        self, child: str, parent: str, relationship: Relationship = "related"
    ) -> bool:
        op = LinkMemories(child=child, parent=parent, relationship=relationship)
        return await self.client.request(self.jid, op, Done) is not None

    async def delete_memory(self, memory_id: str, reason: str | None = None) -> bool:
        op = DeleteBeadsMemory(memory_id=memory_id, reason=reason)
        return await self.client.request(self.jid, op, Done) is not None

    async def search_memories(self, query: str, limit: int = 10) -> list[BeadsMemory]:
        op = SearchBeadsMemories(query=query, limit=limit)
        result = await self.client.request(self.jid, op, BeadsMemories)
        return [] if result is None else result.memories

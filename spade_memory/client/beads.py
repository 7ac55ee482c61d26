"""Typed calls to the beads sync agent (``client.beads``), over the client's transport."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spade_memory.client.calls import every_page
from spade_memory.client.transport import Transport
from spade_memory.protocol.beads import (
    BeadsMemories,
    BeadsMemory,
    BeadsMemoryStats,
    BeadsStats,
    BeadsStored,
    BeadsStoreMemory,
    DeleteBeadsMemory,
    GetSessionContext,
    LinkMemories,
    MarkMemoryAccessed,
    MirroredMemory,
    Relationship,
    RestoreSession,
    RetrieveMemories,
    SearchBeadsMemories,
    SessionContext,
    SessionShared,
    ShareSession,
    UnshareSession,
)
from spade_memory.protocol.beads_labels import MemoryType
from spade_memory.protocol.space_names import Role


class BeadsClient:
    """The beads sync agent's ops, for the sender's memories.

    Results are None (or empty) only from a degraded client; calls raise the
    reply's typed error (``MemoryServiceError``) or ``MemoryTimeout``.
    """

    def __init__(self, client: Transport, jid: str) -> None:
        self.client = client
        self.jid = jid
        """The beads sync agent's JID."""

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
        """Store a memory as a new issue in ``session`` (default: the agent's current one).

        Returns its issue id and session; raises ``BadRequest`` for reserved tags or metadata.
        """
        op = BeadsStoreMemory(
            content=content, memory_type=memory_type, title=title, tags=list(tags),
            importance=importance, session=session, metadata=metadata or {},
        )  # fmt: skip
        return await self.client.request(self.jid, op)

    async def retrieve_memories(
        self,
        memory_type: MemoryType | None = None,
        tags: Sequence[str] = (),
        session: str | None = None,
        limit: int = 20,
        all_sessions: bool = False,
        agent: str | None = None,
    ) -> list[BeadsMemory]:
        """Open memories, newest first: the sender's, or ``agent``'s where the sender may
        read them; the current session unless ``session`` or ``all_sessions`` says otherwise."""
        op = RetrieveMemories(
            memory_type=memory_type, tags=list(tags), session=session, limit=limit,
            all_sessions=all_sessions, agent=agent,
        )  # fmt: skip
        result = await self.client.request(self.jid, op)
        return [] if result is None else result.memories

    async def mirrored_memory(self, memory_id: str) -> BeadsMemory | None:
        """The beads issue mirroring the base memory agent's memory ``memory_id`` (its id,
        labels, priority and links); raises ``ItemNotFound`` when the sender may not
        read it or the mirror has not written it yet."""
        return await self.client.request(self.jid, MirroredMemory(base_memory_id=memory_id))

    async def restore_session(self, session_id: str) -> list[BeadsMemory]:
        """Every memory of a session the sender may read (its own, and those of agents
        that shared the session with it), oldest first, with their links.

        Raises ``ItemNotFound`` for a session it neither took part in nor had shared."""

        async def page(offset: int) -> BeadsMemories | None:
            op = RestoreSession(session_id=session_id, offset=offset)
            return await self.client.request(self.jid, op)

        return await every_page(page, lambda answer: answer.memories)  # a long session: pages

    async def get_session_context(self, session_id: str | None = None) -> SessionContext | None:
        """A session's memories, active agents, open issues and ready work."""
        op = GetSessionContext(session_id=session_id)
        return await self.client.request(self.jid, op)

    async def mark_memory_accessed(self, memory_id: str) -> BeadsMemory | None:
        """Count one access; the memory after it. Raises ``ItemNotFound``/``NotAuthorized``."""
        op = MarkMemoryAccessed(memory_id=memory_id)
        return await self.client.request(self.jid, op)

    async def link_memories(
        self, child: str, parent: str, relationship: Relationship = "related"
    ) -> bool:
        """``child`` depends on ``parent``; True once linked. The child's owner may, or a
        ``writer`` of its shared session."""
        op = LinkMemories(child=child, parent=parent, relationship=relationship)
        return await self.client.request(self.jid, op) is not None

    async def delete_memory(self, memory_id: str, reason: str | None = None) -> bool:
        """Close the memory's issue (it stays as an audit trail); True once closed. Its
        owner may, or an ``admin`` of its shared session."""
        op = DeleteBeadsMemory(memory_id=memory_id, reason=reason)
        return await self.client.request(self.jid, op) is not None

    async def search_memories(self, query: str, limit: int = 10) -> list[BeadsMemory]:
        """The memories the sender may read matching ``query``."""
        op = SearchBeadsMemories(query=query, limit=limit)
        result = await self.client.request(self.jid, op)
        return [] if result is None else result.memories

    async def share_session(
        self, session: str, member: str, role: Role = "reader"
    ) -> SessionShared | None:
        """Let ``member`` (a bare JID or ``*@domain``) read the sender's memories of
        ``session`` (``writer``: also mark and link them; ``admin``: also close them).

        Returns the share; raises ``BadRequest`` for an invalid member or role."""
        op = ShareSession(session=session, member=member, role=role)
        return await self.client.request(self.jid, op)

    async def unshare_session(self, session: str, member: str) -> SessionShared | None:
        """Take a share back (done if there was none); ``member`` reads nothing more of it."""
        op = UnshareSession(session=session, member=member)
        return await self.client.request(self.jid, op)

    async def memory_stats(self) -> BeadsStats | None:
        """How many memories the sender stored here, and the bytes they hold against its
        byte budget."""
        return await self.client.request(self.jid, BeadsMemoryStats())

"""spade_llm 0.3's memory classes, backed by the memory agents: porting is one import.

``AgentBaseMemory`` and ``AgentInteractionMemory`` have spade_llm's method names,
signatures and return shapes (``MemoryEntry`` objects, stats as a dict, the
confirmation sentence, the context texts), so code written for spade_llm's classes runs
unchanged against memory that many agents share. What differs, and why:

- Every method is a coroutine. spade_llm's interaction memory is synchronous (a JSON
  file on the same disk); here each call is a round trip, so ``await`` it.
- The owner is the JID the connection logged in as (the agent's own, or ``agent_id``
  with a password), never a value in the call: ``agent_id`` names who logs in.
- Empty content (and an empty note) is refused (``ValueError``): spade_llm stores it,
  and nothing can ever find it again.
- Search ranks with BM25 (and meaning search when on) over words; spade_llm matches the
  query as one substring (``LIKE``), so a query of several words finds more here. A query
  none of whose words a memory holds finds nothing, as spade_llm's (meaning search alone
  would answer the closest memories).
- Storing the same text again returns the first memory's id (the service keeps one);
  spade_llm keeps a second row.
- A limit of the service (content too long, a quota) raises ``LimitExceeded``, and a value
  it refuses ``InvalidRequest``: both are ``ValueError`` s, as spade_llm's callers catch,
  and spade_memory's typed failures.

``limit=0`` answers ``[]`` as spade_llm's does (the service refuses a limit below 1); a
limit given as text (``"5"``, as models send it) is read as a number. Several first calls
at once share one login, and ``cleanup()`` closes it. Times are naive local times, as
spade_llm's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from spade.agent import Agent
from spade_llm.memory.backends.base import MemoryEntry

from spade_memory.client.login import LoginAgent, log_in
from spade_memory.client.memory_client import MemoryClient
from spade_memory.llm.compat import (
    InvalidRequest,
    LimitExceeded,
    as_value_errors,
    local_naive,
    local_naive_text,
    whole_number,
)
from spade_memory.protocol.memories import CATEGORIES, Memory
from spade_memory.xmpp.lifecycle import stop_agent

__all__ = ["AgentBaseMemory", "AgentInteractionMemory", "InvalidRequest", "LimitExceeded"]

T = TypeVar("T")

TITLES = {
    "fact": "Facts I remember",
    "pattern": "Patterns I remember",
    "preference": "Preferences I remember",
    "capability": "Capabilities I remember",
}
"""spade_llm's headings in ``format_for_context``, in its order."""


class _Connected:
    """A memory client: an agent's (``agent``) or one logged in as ``agent_id``."""

    def __init__(
        self,
        agent_id: str,
        *,
        agent: Agent | None = None,
        password: str | None = None,
        port: int = 5222,
        timeout: float = 5.0,
    ) -> None:
        self.agent_id = agent_id
        self._agent = agent
        self._password = password
        self._port = port
        self._timeout = timeout
        self._own: LoginAgent | None = None
        self._client: MemoryClient | None = None
        self._connecting = asyncio.Lock()
        """Held while connecting or closing: concurrent first calls share one login."""

    async def initialize(self) -> None:
        """Connect (once): use the agent given, or log in as ``agent_id``.

        Raises ``ValueError`` when there is neither an agent nor a password, and
        ``WrongPassword`` / ``AgentStartError`` when the login fails.
        """
        if self._client is not None:
            return
        async with self._connecting:
            if self._client is None:
                await self._connect()

    async def _connect(self) -> None:
        if self._agent is not None:
            memory = getattr(self._agent, "memory", None)  # a MemoryMixin agent's own client
            self._client = (
                memory
                if isinstance(memory, MemoryClient)
                else MemoryClient(self._agent, timeout=self._timeout)
            )
            return
        if self._password is None:
            raise ValueError(
                "give the memory an agent (agent=...) or the password of agent_id (password=...)"
            )
        self._own = await log_in(
            self.agent_id, self._password, port=self._port, timeout=self._timeout
        )
        self._client = self._own.memory

    async def cleanup(self) -> None:
        """Close the connection this object opened (an agent given stays connected)."""
        async with self._connecting:
            own, self._own, self._client = self._own, None, None
            if own is not None:
                await stop_agent(own)

    async def client(self) -> MemoryClient:
        """The connected client (connecting first if needed); raises as ``initialize``."""
        await self.initialize()
        assert self._client is not None
        return self._client

    async def _run(self, call: Callable[[MemoryClient], Awaitable[T]]) -> T:
        """``call`` on the connected client; refusals raise as ``ValueError`` s too."""
        client = await self.client()
        with as_value_errors():
            return await call(client)


class AgentBaseMemory(_Connected):
    """spade_llm's ``AgentBaseMemory``: long-term memories at the base memory agent.

    ``backend`` and ``memory_path`` are accepted for spade_llm's signature and unused:
    the memories live in the service. Give ``agent`` (a started SPADE agent: its
    connection is used) or ``password`` (``agent_id`` logs in on ``port``).
    """

    def __init__(
        self,
        agent_id: str,
        backend: Any = None,
        memory_path: str | None = None,
        *,
        agent: Agent | None = None,
        password: str | None = None,
        port: int = 5222,
        timeout: float = 5.0,
    ) -> None:
        super().__init__(agent_id, agent=agent, password=password, port=port, timeout=timeout)

    async def store_memory(
        self, category: str, content: str, context: str | None = None, confidence: float = 1.0
    ) -> str:
        """Store a memory; returns its id. Raises ``ValueError`` for an unknown category,
        a confidence outside 0-1 or empty content."""
        if category not in CATEGORIES:
            raise ValueError(f"Invalid category '{category}'. Must be one of: {list(CATEGORIES)}")
        if not 0.0 <= confidence <= 1.0:
            raise ValueError(f"Confidence must be between 0.0 and 1.0, got {confidence}")
        if not content.strip():
            raise ValueError("empty content is not stored: nothing could ever find it")
        stored = await self._run(lambda c: c.store_memory(category, content, context, confidence))
        assert stored is not None
        return stored

    async def search_memories(self, query: str, limit: int | str = 10) -> list[MemoryEntry]:
        """The memories best matching ``query``, best first; none when no memory holds a
        word of it. Raises ``ValueError`` for a limit that is not a whole number."""
        count = whole_number(limit)
        if count <= 0:
            return []
        if not query.strip():  # spade_llm's LIKE '%%' matches every memory
            return await self.get_recent_memories(count)
        found = await self._run(lambda c: c.search_memories(query, count))
        if found.reasoning is not None and found.reasoning.word_candidates == 0:
            return []  # found by meaning alone: spade_llm's search finds nothing here
        return _entries(found)

    async def get_memories_by_category(
        self, category: str, limit: int | str = 50
    ) -> list[MemoryEntry]:
        """Memories of ``category``, most recently used first."""
        count = whole_number(limit)
        if count <= 0 or category not in CATEGORIES:
            return []
        return _entries(await self._run(lambda c: c.get_memories_by_category(category, count)))

    async def get_recent_memories(self, limit: int | str = 10) -> list[MemoryEntry]:
        """The most recently used memories."""
        count = whole_number(limit)
        if count <= 0:
            return []
        return _entries(await self._run(lambda c: c.get_recent_memories(count)))

    async def get_relevant_memories(
        self, context: str | None = None, limit: int | str = 10
    ) -> list[MemoryEntry]:
        """A search for ``context``, or the recent memories when there is none."""
        if context and context.strip():
            return await self.search_memories(context, limit)
        return await self.get_recent_memories(limit)

    async def format_for_context(self, memories: list[MemoryEntry]) -> str:
        """spade_llm's text for a system message: memories grouped under a heading per
        category ("" for none)."""
        lines: list[str] = []
        for category, title in TITLES.items():
            contents = [m.content for m in memories if m.category == category]
            if contents:
                lines += [f"{title}:", *(f"- {content}" for content in contents)]
        return "\n".join(lines)

    def get_context_summary(self, memories: list[MemoryEntry]) -> str | None:
        """spade_llm's short form: "My memories:" and a line each (None for none)."""
        if not memories:
            return None
        return "My memories:\n" + "\n".join(f"- {memory.content}" for memory in memories)

    async def delete_memory(self, memory_id: str) -> bool:
        """True if deleted, False if there was no such memory."""
        return await self._run(lambda c: c.delete_memory(memory_id))

    async def get_memory_stats(self) -> dict[str, Any]:
        """``total_memories``, ``category_counts``, ``oldest_memory``, ``newest_memory`` (as
        spade_llm's ISO texts, local time), as spade_llm's dict."""
        stats = await self._run(lambda c: c.get_memory_stats())
        assert stats is not None
        return {
            "total_memories": stats.total_memories,
            "category_counts": dict(stats.category_counts),
            "oldest_memory": _local_text(stats.oldest_memory),
            "newest_memory": _local_text(stats.newest_memory),
        }


class AgentInteractionMemory(_Connected):
    """spade_llm's ``AgentInteractionMemory``: notes per conversation at the interaction
    memory agent (its methods are coroutines here). ``memory_path`` is accepted for
    spade_llm's signature and unused."""

    def __init__(
        self,
        agent_id: str,
        memory_path: str | None = None,
        *,
        agent: Agent | None = None,
        password: str | None = None,
        port: int = 5222,
        timeout: float = 5.0,
    ) -> None:
        super().__init__(agent_id, agent=agent, password=password, port=port, timeout=timeout)

    async def add_information(self, conversation_id: str, information: str) -> str:
        """Note ``information``; spade_llm's confirmation sentence. Raises ``ValueError``
        for empty information (as ``store_memory`` does for empty content)."""
        if not information.strip():
            raise ValueError("empty information is not noted: nothing could ever find it")
        said = await self._run(lambda c: c.add_information(conversation_id, information))
        assert said is not None
        return said

    async def get_information(self, conversation_id: str) -> list[str]:
        """The conversation's notes, oldest first."""
        return await self._run(lambda c: c.get_information(conversation_id))

    async def get_all_interactions(self) -> dict[str, list[dict[str, str]]]:
        """Every conversation's notes as spade_llm keeps them: ``{conversation: [{"content",
        "timestamp"}]}``, timestamps in naive local time as spade_llm writes them."""
        client = await self.client()
        every: dict[str, list[dict[str, str]]] = {}
        for conversation in await client.get_all_conversations():
            exported = await client.export_conversation(conversation.conversation_id)
            assert exported is not None
            for name, entries in exported.interactions.items():
                every[name] = [
                    {"content": entry.content, "timestamp": local_naive_text(entry.timestamp)}
                    for entry in entries
                ]
        return every

    async def clear_conversation(self, conversation_id: str) -> bool:
        """True if the conversation had notes."""
        return await self._run(lambda c: c.clear_conversation(conversation_id))

    async def get_context_summary(self, conversation_id: str) -> str | None:
        """spade_llm's summary: "Previous interaction notes:" and a line per note (None
        for none)."""
        notes = await self.get_information(conversation_id)
        if not notes:
            return None
        return "Previous interaction notes:\n" + "\n".join(f"- {note}" for note in notes)


def _entries(memories: list[Memory]) -> list[MemoryEntry]:
    return [
        MemoryEntry(
            agent_id=memory.owner,
            category=memory.category,
            content=memory.content,
            context=memory.context,
            confidence=memory.confidence,
            id=memory.id,
            created_at=local_naive(memory.created_at),
            last_accessed=local_naive(memory.last_accessed),
            access_count=memory.access_count,
        )
        for memory in memories
    ]


def _local_text(moment: datetime | None) -> str | None:
    return None if moment is None else local_naive(moment).isoformat()

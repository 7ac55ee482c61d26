"""spade_llm 0.3's memory classes, backed by the memory agents: porting is one import.

``AgentBaseMemory`` and ``AgentInteractionMemory`` have spade_llm's method names,
signatures and return shapes (``MemoryEntry`` objects, stats as a dict, the
confirmation sentence, the context texts), so code written for spade_llm's classes runs
unchanged against memory that many agents share. What differs, and why:

- Every method is a coroutine. spade_llm's interaction memory is synchronous (a JSON
  file on the same disk); here each call is a round trip, so ``await`` it.
- The owner is the JID the connection logged in as (the agent's own, or ``agent_id``
  with a password), never a value in the call: ``agent_id`` names who logs in.
- Empty content is refused (``ValueError``): spade_llm stores it, and nothing can ever
  find it again.
- Search ranks with BM25 (and meaning search when on) over words; spade_llm matches the
  query as one substring (``LIKE``), so a query of several words finds more here.

``limit=0`` answers ``[]`` as spade_llm's does (the service refuses a limit below 1).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from spade.agent import Agent
from spade_llm.memory.backends.base import MemoryEntry

from spade_memory.client.login import LoginAgent, log_in
from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.memories import CATEGORIES, Memory
from spade_memory.xmpp.lifecycle import stop_agent

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

    async def initialize(self) -> None:
        """Connect (once): use the agent given, or log in as ``agent_id``.

        Raises ``ValueError`` when there is neither an agent nor a password, and
        ``WrongPassword`` / ``AgentStartError`` when the login fails.
        """
        if self._client is not None:
            return
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
        if self._own is not None:
            await stop_agent(self._own)
        self._own = None
        self._client = None

    async def client(self) -> MemoryClient:
        """The connected client (connecting first if needed); raises as ``initialize``."""
        await self.initialize()
        assert self._client is not None
        return self._client


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
        client = await self.client()
        stored = await client.store_memory(category, content, context, confidence)
        assert stored is not None
        return stored

    async def search_memories(self, query: str, limit: int = 10) -> list[MemoryEntry]:
        """The memories best matching ``query``, best first."""
        if limit <= 0:
            return []
        if not query.strip():  # spade_llm's LIKE '%%' matches every memory
            return await self.get_recent_memories(limit)
        return _entries(await (await self.client()).search_memories(query, limit))

    async def get_memories_by_category(self, category: str, limit: int = 50) -> list[MemoryEntry]:
        """Memories of ``category``, most recently used first."""
        if limit <= 0 or category not in CATEGORIES:
            return []
        client = await self.client()
        return _entries(await client.get_memories_by_category(category, limit))

    async def get_recent_memories(self, limit: int = 10) -> list[MemoryEntry]:
        """The most recently used memories."""
        if limit <= 0:
            return []
        return _entries(await (await self.client()).get_recent_memories(limit))

    async def get_relevant_memories(
        self, context: str | None = None, limit: int = 10
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
        return await (await self.client()).delete_memory(memory_id)

    async def get_memory_stats(self) -> dict[str, Any]:
        """``total_memories``, ``category_counts``, ``oldest_memory``, ``newest_memory`` (as
        spade_llm's ISO texts, local time), as spade_llm's dict."""
        stats = await (await self.client()).get_memory_stats()
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
        """Note ``information``; spade_llm's confirmation sentence."""
        said = await (await self.client()).add_information(conversation_id, information)
        assert said is not None
        return said

    async def get_information(self, conversation_id: str) -> list[str]:
        """The conversation's notes, oldest first."""
        return await (await self.client()).get_information(conversation_id)

    async def get_all_interactions(self) -> dict[str, list[dict[str, str]]]:
        """Every conversation's notes as spade_llm keeps them: ``{conversation: [{"content",
        "timestamp"}]}``."""
        client = await self.client()
        every: dict[str, list[dict[str, str]]] = {}
        for conversation in await client.get_all_conversations():
            exported = await client.export_conversation(conversation.conversation_id)
            assert exported is not None
            for name, entries in exported.interactions.items():
                every[name] = [entry.model_dump() for entry in entries]
        return every

    async def clear_conversation(self, conversation_id: str) -> bool:
        """True if the conversation had notes."""
        return await (await self.client()).clear_conversation(conversation_id)

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
            created_at=_local(memory.created_at),
            last_accessed=_local(memory.last_accessed),
            access_count=memory.access_count,
        )
        for memory in memories
    ]


def _local(moment: datetime) -> datetime:
    """spade_llm's times are naive local times."""
    return moment.astimezone().replace(tzinfo=None)


def _local_text(moment: datetime | None) -> str | None:
    return None if moment is None else _local(moment).isoformat()

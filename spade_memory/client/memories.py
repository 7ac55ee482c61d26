"""The client's calls to the base memory agent; they mirror spade_llm's ``AgentBaseMemory``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from spade_memory.client.calls import Calls
from spade_memory.protocol.consolidation import Consolidated, ConsolidateMemories
from spade_memory.protocol.errors import ItemNotFound
from spade_memory.protocol.graph import Entity, EntityKind
from spade_memory.protocol.memories import (
    Category,
    DeleteMemory,
    ForgetMemories,
    GetMemory,
    ListEntities,
    ListMemories,
    MemoriesAbout,
    MemoriesForgotten,
    Memory,
    MemoryHistory,
    MemoryHistoryOp,
    MemoryRefs,
    MemoryStats,
    MemoryStatsOp,
    Reasoning,
    RecentMemories,
    RelatedMemories,
    RestoreMemory,
    SearchMemories,
    Stored,
    StoreMemory,
    SupersedeMemory,
    UpdateMemory,
)
from spade_memory.protocol.services import BASE_MEMORY as NAME


class FetchedMemories(list[Memory]):
    """A list of memories that says whether it is a degraded (empty) answer."""

    def __init__(
        self,
        memories: list[Memory] | None = None,
        *,
        degraded: bool = False,
        next_offset: int | None = None,
        reasoning: Reasoning | None = None,
        entities: list[str] | None = None,
    ) -> None:
        super().__init__(memories or [])
        self.degraded = degraded
        """True when memory did not answer and the client is in degraded mode."""
        self.next_offset = next_offset
        """The ``offset`` of the next page of a list, when there may be one."""
        self.reasoning = reasoning
        """For a search: how the answer was made (strategy, candidates, mode)."""
        self.entities = entities or []
        """For ``related_memories``: what the memory asked about names (each memory's
        ``shares`` says which of them lead to it)."""


class BaseMemoryCalls(Calls):
    """Long-term memories of the sender, at the base memory agent.

    Every call raises the reply's typed error (``MemoryServiceError``) or
    ``MemoryTimeout``; a degraded client returns None or an empty, degraded
    ``FetchedMemories`` instead of raising a timeout.
    """

    @property
    def base_memory_jid(self) -> str:
        """The base memory agent's JID."""
        return self.jids[NAME]

    async def _memories(
        self,
        op: SearchMemories
        | ListMemories
        | RecentMemories
        | MemoryRefs
        | MemoriesAbout
        | RelatedMemories,
    ) -> FetchedMemories:
        result = await self.request(self.base_memory_jid, op)
        if result is None:
            return FetchedMemories(degraded=True)
        return FetchedMemories(
            result.memories, next_offset=result.next_offset, reasoning=result.reasoning,
            entities=result.entities,
        )  # fmt: skip

    async def store_memory(
        self,
        category: Category | None,
        content: str,
        context: str | None = None,
        confidence: float = 1.0,
        *,
        space: str | None = None,
        **described: Any,
    ) -> str | None:
        """Store a memory in the sender's personal space, or in a shared ``space`` where it
        is a writer (the same content in the same category is reinforced, not added
        twice); ``category`` None has the agent classify it. ``described`` takes any of
        ``tags``, ``metadata``, ``source``, ``ttl_seconds``, ``expires_at``, ``valid_from``,
        ``valid_to``, ``supersedes`` (the id of a memory it replaces) and ``conflicts``
        (``auto``, ``report``, ``off``: see ``store``).

        Returns its id (``store`` returns what the store did besides: the memory it
        superseded and the possible conflicts it only reported); raises
        ``ResourceConstraint`` over a quota, ``BadRequest`` for a bad field."""
        result = await self.store(category, content, context, confidence, space=space, **described)
        return None if result is None else result.id

    async def store(
        self,
        category: Category | None,
        content: str,
        context: str | None = None,
        confidence: float = 1.0,
        *,
        space: str | None = None,
        **described: Any,
    ) -> Stored | None:
        """As ``store_memory``; returns the whole reply: the id, the category (and
        whether it was classified, how surely), the work items linked, the memory it
        superseded (``supersedes``: named, or found stating another value for the same
        thing) and the likely ``conflicts`` it left for the caller to decide."""
        op = StoreMemory(
            category=category, content=content, context=context, confidence=confidence,
            space=space, **described,
        )  # fmt: skip
        return await self.request(self.base_memory_jid, op)

    async def search_memories(
        self,
        query: str,
        limit: int = 10,
        category: Category | None = None,
        mode: str = "semantic",
        *,
        space: str | list[str] | None = None,
        **filters: Any,
    ) -> FetchedMemories:
        """Memories ranked by relevance to ``query``, best first (see ``SearchMemories.mode``);
        each has its ``score``, and the answer its ``reasoning``.

        ``space``: a space's name, several (``personal`` is the sender's own), or ``*``
        for every space it reads; each memory says its ``space`` and ``author``.
        ``filters``: any of ``tags_any``, ``tags_all``, ``metadata_equals``,
        ``created_after``, ``created_before``, ``accessed_after``, ``accessed_before``,
        ``authors`` (bare JIDs of who stored them), ``as_of`` (what was valid at that
        time; default: now, so a superseded memory is not found) and ``known_at`` (what
        the store held at that time).
        """
        op = SearchMemories(
            query=query, limit=limit, category=category, mode=mode, space=space, **filters
        )
        return await self._memories(op)

    async def get_memories_by_category(
        self,
        category: Category,
        limit: int = 50,
        *,
        offset: int = 0,
        space: str | list[str] | None = None,
        **filters: Any,
    ) -> FetchedMemories:
        """Memories of one category, most recently used first (``space`` and ``filters``
        as in search), ``offset`` skipped: the answer's ``next_offset`` is the next page's."""
        return await self._memories(
            ListMemories(category=category, limit=limit, offset=offset, space=space, **filters)
        )

    async def get_recent_memories(
        self,
        limit: int = 10,
        *,
        offset: int = 0,
        space: str | list[str] | None = None,
        **filters: Any,
    ) -> FetchedMemories:
        """Memories of any category, most recently used first (``space`` and ``filters`` as
        in search), ``offset`` skipped: the answer's ``next_offset`` is the next page's."""
        return await self._memories(
            RecentMemories(limit=limit, offset=offset, space=space, **filters)
        )

    async def memory_history(
        self, memory_id: str, *, space: str | None = None
    ) -> MemoryHistory | None:
        """Every version kept of a memory, oldest first, with who made each and when; for
        a deleted one, who deleted it and when. Raises ``ItemNotFound``."""
        return await self.request(self.base_memory_jid, MemoryHistoryOp(id=memory_id, space=space))

    async def memory_refs(
        self, work_id: str, limit: int = 50, *, space: str | list[str] | None = None
    ) -> FetchedMemories:
        """The memories linked to the work item ``work_id`` through their source, newest
        first (``space`` as in search)."""
        return await self._memories(MemoryRefs(work_id=work_id, limit=limit, space=space))

    async def entities(
        self,
        prefix: str | None = None,
        *,
        kind: EntityKind | None = None,
        limit: int = 50,
        space: str | list[str] | None = None,
    ) -> list[Entity] | None:
        """The entities the memories name (people, places, titles, days; words two
        memories share), the most named first, optionally those starting with ``prefix``
        or of one ``kind`` (``space`` as in search). None when degraded."""
        op = ListEntities(prefix=prefix, kind=kind, limit=limit, space=space)
        result = await self.request(self.base_memory_jid, op)
        return None if result is None else result.entities

    async def memories_about(
        self, entity: str, limit: int = 20, *, space: str | list[str] | None = None
    ) -> FetchedMemories:
        """The current memories naming ``entity`` (any case, possessive or not, or a
        longer name it starts), those it is the subject of first (``space`` as in
        search)."""
        return await self._memories(MemoriesAbout(entity=entity, limit=limit, space=space))

    async def related_memories(
        self, memory_id: str, limit: int = 10, *, space: str | list[str] | None = None
    ) -> FetchedMemories:
        """The current memories naming what the memory ``memory_id`` names, the most
        shared first, each with its ``score`` and the entities it ``shares`` with it (the
        answer's ``entities``: all it names). Raises ``ItemNotFound``."""
        return await self._memories(RelatedMemories(id=memory_id, limit=limit, space=space))

    async def forget_memories(
        self,
        *,
        dry_run: bool = True,
        category: Category | None = None,
        older_than: datetime | None = None,
        not_accessed_since: datetime | None = None,
        space: str | None = None,
        **filters: Any,
    ) -> MemoriesForgotten | None:
        """Count (``dry_run``, the default) or delete the memories of one space matching
        every filter given: ``category``, stored before ``older_than``, last used before
        ``not_accessed_since``, and ``filters`` as in search. Only memories the sender may
        delete are counted. Returns the count and ids; raises ``BadRequest`` without any
        filter."""
        op = ForgetMemories(
            dry_run=dry_run, category=category, created_before=older_than,
            accessed_before=not_accessed_since, space=space, **filters,
        )  # fmt: skip
        return await self.request(self.base_memory_jid, op)

    async def get_memory(
        self,
        memory_id: str,
        *,
        space: str | None = None,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
    ) -> Memory | None:
        """One memory, as valid now (or ``as_of`` a time, as the store knew it
        ``known_at`` a time); raises ``ItemNotFound`` if the space (personal by default)
        has none with this id valid then (a superseded one: the message names its
        successor)."""
        op = GetMemory(id=memory_id, space=space, as_of=as_of, known_at=known_at)
        return await self.request(self.base_memory_jid, op)

    async def supersede_memory(
        self,
        memory_id: str,
        content: str | None = None,
        *,
        space: str | None = None,
        by: str | None = None,
        **fields: Any,
    ) -> Stored | None:
        """Replace a memory with a new one stating what is true now (``content``), or
        with a memory of the space already stating it (``by``: the id a store reported a
        conflict with): the old one stops being valid where the new one starts (now, or
        ``valid_from``), stays readable through ``as_of`` and history, and each names
        the other. ``fields``: any of ``category`` (default: the old one's), ``context``,
        ``confidence``, ``tags``, ``metadata``, ``source``, ``valid_from``.

        Returns the new memory's ``Stored``; raises ``ItemNotFound``, ``NotAuthorized``
        (another member's memory, where the sender is no admin) or ``Conflict`` (already
        superseded: supersede its successor)."""
        op = SupersedeMemory(id=memory_id, content=content, by=by, space=space, **fields)
        return await self.request(self.base_memory_jid, op)

    async def update_memory(
        self, memory_id: str, *, space: str | None = None, **changes: Any
    ) -> Memory | None:
        """Change any of ``content``, ``category``, ``context``, ``confidence``, ``tags``,
        ``metadata``, ``source``, ``ttl_seconds``, ``expires_at``, ``valid_from``,
        ``valid_to`` (it stops being true then) of a memory the sender
        stored (or anyone's, in a space it administers); the version replaced is kept.

        Returns the memory as updated; raises ``ItemNotFound``, ``NotAuthorized`` (another
        member's memory) or ``BadRequest``.
        """
        op = UpdateMemory(id=memory_id, space=space, **changes)
        return await self.request(self.base_memory_jid, op)

    async def restore_memory(self, memory_id: str, *, space: str | None = None) -> Memory | None:
        """Make a memory that was superseded (or merged) current again, when that was
        wrong: its validity reopens, its successor stays current but no longer names it.
        The memory's author or an admin of its space may.

        Returns the memory, current again; raises ``ItemNotFound``, ``NotAuthorized``
        (another member's memory) or ``Conflict`` (it was not superseded)."""
        return await self.request(self.base_memory_jid, RestoreMemory(id=memory_id, space=space))

    async def consolidate_memories(
        self, *, space: str | None = None, dry_run: bool = True
    ) -> Consolidated | None:
        """Merge the near-duplicates of the sender's space (or of a shared ``space`` it
        administers): the same author and category, the same fact in other words. With
        ``dry_run`` (the default) only says what it would merge.

        Returns what was (or would be) merged; raises ``NotAuthorized`` in a shared space
        where the sender is no admin."""
        op = ConsolidateMemories(space=space, dry_run=dry_run)
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

    async def get_memory_stats(
        self, *, space: str | None = None, days: int = 0
    ) -> MemoryStats | None:
        """Counts by category, average confidence, oldest and newest, the ranking used, and
        the usage against the quota (the sender's own, or a shared ``space``'s); with
        ``days`` (up to 90), also what was stored on each of the last days and by whom.
        Raises ``BadRequest`` for ``days`` out of range."""
        return await self.request(self.base_memory_jid, MemoryStatsOp(space=space, days=days))

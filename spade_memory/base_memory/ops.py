"""The base memory agent's ops and replies: long-term memories of four categories.

The same op objects are built by the client, travel as JSON over XMPP, are
parsed by one discriminated union on the agent, and reach the store (as in
langgraph's ``BaseStore``: ``GetOp``, ``PutOp``, ``SearchOp``). Each op names
its reply through its base class (``Op[Stored]``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, model_validator

from ..ops import PERSONAL, Limit, MemoryId, Op, Record
from ..spaces.names import SpaceName, SpaceSelection
from ..spaces.ops import SpaceOp

Category = Literal["fact", "pattern", "preference", "capability"]
"""What kind of thing a memory is (spade_llm's four categories)."""
CATEGORIES: tuple[Category, ...] = ("fact", "pattern", "preference", "capability")

# -- replies ----------------------------------------------------------------------


class Memory(Record):
    """One long-term memory: where it lives and who stored it.

    ``space`` is ``personal`` (the reader's own space) or the shared space's name;
    ``author`` (and, as spade_llm's readers expect, ``owner``) is the bare JID that
    stored it, as XMPP authenticated it.
    """

    id: str
    owner: str
    space: str = PERSONAL
    author: str | None = None
    # str, not Category: rows imported from spade_llm are kept as they are.
    category: str
    content: str
    context: str | None = None
    confidence: float
    created_at: datetime
    last_accessed: datetime
    access_count: int


class Stored(Record):
    """Result of ``store_memory``: the id of the memory.

    ``deduplicated`` is true when the same content (whitespace and case folded)
    was already stored by the owner in that category: its id is returned and
    its confidence and access count raised instead of adding a memory.
    """

    id: str
    deduplicated: bool = False


class Deleted(Record):
    """Result of ``delete_memory``."""

    id: str
    deleted: bool = True


Offset = Annotated[
    int,
    Field(
        ge=0,
        description="Memories to skip, to page through the list: the reply's next_offset",
    ),
]


class MemoryList(Record):
    """Result of every operation that returns memories, best or newest first."""

    memories: list[Memory] = Field(default_factory=list)
    mode: str | None = None
    """For ``search_memories``: the query mode that was used."""
    note: str | None = None
    """Anything the caller should know about how the answer was made."""
    next_offset: int | None = None
    """For ``list_memories`` and ``recent_memories``: the ``offset`` of the next page, when
    there may be one."""


class MemoryStats(Record):
    """Result of ``memory_stats``: the memories of one space (the sender's own by default),
    and what counts against a quota there: for the personal space, everything the sender
    stored in any space against its own quota; for a shared space, the space's."""

    total_memories: int
    category_counts: dict[str, int]
    avg_confidence: float | None
    oldest_memory: datetime | None
    newest_memory: datetime | None
    search: str = "bm25"
    """How ``search_memories`` ranks: ``hybrid`` (BM25 + dense) or ``bm25`` alone."""
    free_disk_bytes: int | None = None
    """Free space on the disk holding the store (None when it cannot be told)."""
    space: str = PERSONAL
    used_memories: int = 0
    used_bytes: int = 0
    max_memories: int | None = None
    max_bytes: int | None = None
    waiting_vectors: int = 0
    """Memories of this space stored or changed but not embedded yet (found by words
    meanwhile); they are embedded in the background, in batches."""
    vector_index: Literal["none", "exact", "approximate"] = "none"
    """How this space's vectors are searched now: ``exact`` (every vector scored),
    ``approximate`` (a large space's IVF index), ``none`` (not loaded yet, or BM25 alone)."""


ChangeKind = Literal["stored", "updated", "deleted"]


class Change(Record):
    """One committed write; ``memory`` is the memory as it is now (None once deleted).

    ``owner`` is who made the change, ``author`` who stored the memory, ``space`` the
    shared space it is in (None for a personal memory)."""

    seq: int
    kind: ChangeKind
    memory_id: str
    owner: str
    memory: Memory | None = None
    space: str | None = None
    author: str | None = None


class ChangeList(Record):
    """Result of ``changes_since``; ``last_seq`` is the newest change recorded.

    ``complete`` is False when changes after the cursor were already forgotten (a space
    keeps them 30 days): read the space again (``recent_memories``) instead."""

    changes: list[Change] = Field(default_factory=list)
    last_seq: int = 0
    complete: bool = True


# -- ops --------------------------------------------------------------------------


_ONE_SPACE = "Optional: a shared space to act in (default: the sender's personal space)"
_READ_SPACES = (
    "Optional: where to look: a space's name, a list of names (personal is the sender's"
    " own space), or * for every space the sender can read (default: personal)"
)


class StoreMemory(Op[Stored]):
    """Keep a memory (the same content in the same category of a space is reinforced,
    not added)."""

    need = "write"
    op: Literal["store_memory"] = "store_memory"
    category: Category = Field(
        description="Type of memory: fact (concrete info), pattern (observed behavior), "
        "preference (learned preference), capability (my ability/limitation)"
    )
    content: str = Field(
        min_length=1, description="The information to remember. Be specific and concise."
    )
    context: str | None = Field(
        default=None, description="Optional context about when/why this is important"
    )
    confidence: float = Field(
        default=1.0, ge=0.0, le=1.0, description="Confidence level in this memory (0.0 to 1.0)"
    )
    space: SpaceName | None = Field(default=None, description=_ONE_SPACE)


class GetMemory(Op[Memory]):
    """One memory of a space the sender reads, by id (``item-not-found`` for anyone else's)."""

    need = "read"
    op: Literal["get_memory"] = "get_memory"
    id: MemoryId
    space: SpaceName | None = Field(default=None, description=_ONE_SPACE)


class SearchMemories(Op[MemoryList]):
    """Ranked search over content and context: BM25, fused with dense similarity when on."""

    need = "read"
    op: Literal["search_memories"] = "search_memories"
    query: str = Field(
        description="Search query to find relevant memories. "
        "Use keywords related to what you're looking for."
    )
    limit: Limit = Field(default=10, description="Maximum number of memories to retrieve")
    category: Category | None = Field(
        default=None, description="Optional: only memories of this category"
    )
    mode: str = Field(
        default="semantic",
        max_length=50,
        description="semantic (best match, the default), session_recovery (newest first), "
        "knowledge_lookup (facts, patterns and capabilities only); "
        "any other value is answered as semantic, and the reply says so",
    )
    space: SpaceSelection | None = Field(default=None, description=_READ_SPACES)


class ListMemories(Op[MemoryList]):
    """Memories of one category, most recently accessed first."""

    need = "read"
    op: Literal["list_memories"] = "list_memories"
    category: Category = Field(description="Category of memories to list")
    limit: Limit = Field(default=50, description="Maximum number of memories to retrieve")
    offset: Offset = 0
    space: SpaceSelection | None = Field(default=None, description=_READ_SPACES)


class RecentMemories(Op[MemoryList]):
    """Memories of any category, most recently accessed first."""

    need = "read"
    op: Literal["recent_memories"] = "recent_memories"
    limit: Limit = 10
    offset: Offset = 0
    space: SpaceSelection | None = Field(default=None, description=_READ_SPACES)


class UpdateMemory(Op[Memory]):
    """Change any of content, category, context and confidence (of a memory the sender
    stored, or of anyone's in a space it administers)."""

    need = "write"
    op: Literal["update_memory"] = "update_memory"
    id: MemoryId
    space: SpaceName | None = Field(default=None, description=_ONE_SPACE)
    content: str | None = Field(default=None, min_length=1)
    category: Category | None = None
    context: str | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _changes_something(self) -> UpdateMemory:
        if self.changes() == {}:
            raise ValueError("give at least one of content, category, context, confidence")
        return self

    def changes(self) -> dict[str, object]:
        """The fields this update sets."""
        fields = ("content", "category", "context", "confidence")
        return {name: getattr(self, name) for name in fields if getattr(self, name) is not None}


class DeleteMemory(Op[Deleted]):
    """Forget a memory the sender stored (or anyone's, in a space it administers)."""

    need = "write"
    op: Literal["delete_memory"] = "delete_memory"
    id: MemoryId
    space: SpaceName | None = Field(default=None, description=_ONE_SPACE)


class MemoryStatsOp(Op[MemoryStats]):
    """Counts of a space's memories (the sender's own by default), by category, its usage
    against its quota, and how search ranks."""

    need = "read"
    op: Literal["memory_stats"] = "memory_stats"
    space: SpaceName | None = Field(default=None, description=_ONE_SPACE)


class ChangesSince(Op[ChangeList]):
    """Committed changes after ``after``, oldest first: a shared space's (for its members,
    to catch up after being offline), or the whole base memory agent's (for its mirror).

    Every store, update and delete appends a change in its own transaction, so
    nothing acknowledged is missing from this feed. Only the configured mirror
    (the beads sync agent) may read it; asking for the changes after N confirms
    that everything up to N is mirrored, and the agent forgets those.
    """

    need = "read"
    op: Literal["changes_since"] = "changes_since"
    after: int = Field(default=0, ge=0, description="The last change already mirrored")
    limit: Limit = 500
    space: SpaceName | None = Field(
        default=None,
        description="A shared space: its changes after the cursor ``after``, for any of its"
        " members (without it: the whole feed, for the mirror only)",
    )


BaseMemoryOp = Annotated[
    StoreMemory
    | GetMemory
    | SearchMemories
    | ListMemories
    | RecentMemories
    | UpdateMemory
    | DeleteMemory
    | MemoryStatsOp
    | ChangesSince
    | SpaceOp,
    Field(discriminator="op"),
]
"""Any request the base memory agent serves, tagged by ``op``: its memories' and the
spaces' (see ``spaces.ops``)."""

WRITE_OPS: tuple[type[Op[Any]], ...] = (StoreMemory, UpdateMemory, DeleteMemory)
"""Ops whose effect must happen once per request id, however often it is sent."""

base_memory_ops: TypeAdapter[BaseMemoryOp] = TypeAdapter(BaseMemoryOp)

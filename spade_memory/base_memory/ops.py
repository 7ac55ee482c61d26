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

from ..ops import Limit, MemoryId, Op, Record

Category = Literal["fact", "pattern", "preference", "capability"]
"""What kind of thing a memory is (spade_llm's four categories)."""
CATEGORIES: tuple[Category, ...] = ("fact", "pattern", "preference", "capability")

# -- replies ----------------------------------------------------------------------


class Memory(Record):
    """One long-term memory, owned by the bare JID that stored it."""

    id: str
    owner: str
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


class MemoryList(Record):
    """Result of every operation that returns memories, best or newest first."""

    memories: list[Memory] = Field(default_factory=list)
    mode: str | None = None
    """For ``search_memories``: the query mode that was used."""
    note: str | None = None
    """Anything the caller should know about how the answer was made."""


class MemoryStats(Record):
    """Result of ``memory_stats`` for the sender's memories."""

    total_memories: int
    category_counts: dict[str, int]
    avg_confidence: float | None
    oldest_memory: datetime | None
    newest_memory: datetime | None
    search: str = "bm25"
    """How ``search_memories`` ranks: ``hybrid`` (BM25 + dense) or ``bm25`` alone."""
    free_disk_bytes: int | None = None
    """Free space on the disk holding the store (None when it cannot be told)."""


ChangeKind = Literal["stored", "updated", "deleted"]


class Change(Record):
    """One committed write; ``memory`` is the memory as it is now (None once deleted)."""

    seq: int
    kind: ChangeKind
    memory_id: str
    owner: str
    memory: Memory | None = None


class ChangeList(Record):
    """Result of ``changes_since``; ``last_seq`` is the newest change recorded."""

    changes: list[Change] = Field(default_factory=list)
    last_seq: int = 0


# -- ops --------------------------------------------------------------------------


class StoreMemory(Op[Stored]):
    """Keep a memory (the same content in the same category is reinforced, not added)."""

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


class GetMemory(Op[Memory]):
    """One of the sender's memories by id (``item-not-found`` for anyone else's)."""

    op: Literal["get_memory"] = "get_memory"
    id: MemoryId


class SearchMemories(Op[MemoryList]):
    """Ranked search over content and context: BM25, fused with dense similarity when on."""

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


class ListMemories(Op[MemoryList]):
    """Memories of one category, most recently accessed first."""

    op: Literal["list_memories"] = "list_memories"
    category: Category = Field(description="Category of memories to list")
    limit: Limit = Field(default=50, description="Maximum number of memories to retrieve")


class RecentMemories(Op[MemoryList]):
    """Memories of any category, most recently accessed first."""

    op: Literal["recent_memories"] = "recent_memories"
    limit: Limit = 10


class UpdateMemory(Op[Memory]):
    """Change any of content, category, context and confidence."""

    op: Literal["update_memory"] = "update_memory"
    id: MemoryId
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
    """Forget one of the sender's memories."""

    op: Literal["delete_memory"] = "delete_memory"
    id: MemoryId


class MemoryStatsOp(Op[MemoryStats]):
    """Counts of the sender's memories, by category, and how search ranks."""

    op: Literal["memory_stats"] = "memory_stats"


class ChangesSince(Op[ChangeList]):
    """The base memory agent's committed changes after ``after``, oldest first.

    Every store, update and delete appends a change in its own transaction, so
    nothing acknowledged is missing from this feed. Only the configured mirror
    (the beads sync agent) may read it; asking for the changes after N confirms
    that everything up to N is mirrored, and the agent forgets those.
    """

    op: Literal["changes_since"] = "changes_since"
    after: int = Field(default=0, ge=0, description="The last change already mirrored")
    limit: Limit = 500


BaseMemoryOp = Annotated[
    StoreMemory
    | GetMemory
    | SearchMemories
    | ListMemories
    | RecentMemories
    | UpdateMemory
    | DeleteMemory
    | MemoryStatsOp
    | ChangesSince,
    Field(discriminator="op"),
]
"""Any request the base memory agent serves, tagged by ``op``."""

WRITE_OPS: tuple[type[Op[Any]], ...] = (StoreMemory, UpdateMemory, DeleteMemory)
"""Ops whose effect must happen once per request id, however often it is sent."""

base_memory_ops: TypeAdapter[BaseMemoryOp] = TypeAdapter(BaseMemoryOp)

"""What the long-term memory returns: memories, stats and small results.

These are the reply payloads of the base memory agent; they are pydantic
models so the same classes validate replies in the client and publish their
JSON Schema for peers in other languages.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Category = Literal["fact", "pattern", "preference", "capability"]
CATEGORIES: tuple[Category, ...] = ("fact", "pattern", "preference", "capability")


class Record(BaseModel):
    """Base of every reply payload: frozen and strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


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


class Failure(Record):
    """Body of a ``failure`` or ``refuse`` reply."""

    condition: str
    text: str


Result = Stored | Deleted | Memory | MemoryList | MemoryStats | ChangeList
Performative = Literal["request", "inform", "failure", "refuse"]

"""The base memory agent's ops and replies: long-term memories of four categories.

The same op objects are built by the client, travel as JSON over XMPP, are
parsed by one discriminated union on the agent, and reach the store (as in
langgraph's ``BaseStore``: ``GetOp``, ``PutOp``, ``SearchOp``). Each op names
its reply through its base class (``Op[Stored]``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Generic, Literal

from pydantic import AwareDatetime, Field, TypeAdapter, model_validator

from spade_memory.protocol.consolidation import ConsolidateMemories
from spade_memory.protocol.expiry import ExpiresAt, TtlSeconds
from spade_memory.protocol.graph import EntityKind, EntityList, EntityName
from spade_memory.protocol.ops import (
    DEFERRED,
    PERSONAL,
    Limit,
    MemoryId,
    Op,
    R,
    Record,
    SenderForgotten,
)
from spade_memory.protocol.space_names import SpaceName, SpaceSelection
from spade_memory.protocol.spaces import SpaceOp
from spade_memory.protocol.tags import Metadata, MetadataFilter, Tags
from spade_memory.protocol.validity import (
    AsOf,
    ConflictPolicy,
    KnownAt,
    PossibleConflict,
    ValidFrom,
    ValidTo,
)

Category = Literal["fact", "pattern", "preference", "capability"]
"""What kind of thing a memory is (spade_llm's four categories)."""
CATEGORIES: tuple[Category, ...] = ("fact", "pattern", "preference", "capability")

# -- replies ----------------------------------------------------------------------


def _empty(value: object) -> bool:
    return value is None or value == [] or value == {}


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
    # the details below are left out of the JSON while empty (a reader takes the default):
    # most memories have none, and a batch of searches carries a thousand memories
    tags: list[str] = Field(default_factory=list, exclude_if=_empty)
    metadata: dict[str, Any] = Field(default_factory=dict, exclude_if=_empty)
    source: str | None = Field(default=None, exclude_if=_empty)
    """Where it came from (a path, a beads issue id, a URL), as the caller said."""
    work_items: list[str] = Field(default_factory=list, exclude_if=_empty)
    """The work-item ids found in ``source``: the memory is linked to each."""
    expires_at: datetime | None = Field(default=None, exclude_if=_empty)
    """When it is forgotten (None: never)."""
    version: int = Field(default=1, exclude_if=lambda version: version == 1)
    """1 when stored; each update adds one (see ``memory_history``)."""
    score: float | None = Field(default=None, exclude_if=_empty)
    """For ``search_memories``: how relevant it is to the query (higher first)."""
    shares: list[str] = Field(default_factory=list, exclude_if=_empty)
    """For ``related_memories``: the entities it names that the memory asked about names
    too (as that memory writes them), what leads from one to the other."""
    valid_from: datetime | None = Field(default=None, exclude_if=_empty)
    """Since when it is true in the world (None: always)."""
    valid_to: datetime | None = Field(default=None, exclude_if=_empty)
    """Until when it is true in the world (None: until replaced)."""
    supersedes: str | None = Field(default=None, exclude_if=_empty)
    """The memory this one replaced."""
    superseded_by: str | None = Field(default=None, exclude_if=_empty)
    """The memory that replaced this one (read through ``as_of`` or history)."""


class Stored(Record):
    """Result of ``store_memory``: the id of the memory, and its category.

    ``deduplicated`` is true when the same content (whitespace and case folded)
    was already stored by the owner in that category: its id is returned and
    its confidence and access count raised instead of adding a memory.
    ``classified`` is true when the caller gave no category and the agent chose it,
    with ``category_confidence`` (0-1) saying how sure it was.
    """

    id: str
    deduplicated: bool = False
    category: str | None = None
    classified: bool = False
    category_confidence: float | None = None
    work_items: list[str] = Field(default_factory=list)
    """Work-item ids found in the memory's ``source``, which it was linked to."""
    supersedes: str | None = Field(default=None, exclude_if=_empty)
    """The memory this one superseded: the one named, or the one the detector was sure of."""
    conflicts: list[PossibleConflict] = Field(default_factory=list, exclude_if=_empty)
    """Memories this one seems to replace and did not: the caller decides."""


class Deleted(Record):
    """Result of ``delete_memory``."""

    id: str
    deleted: bool = True


SQL_INTEGER = 2**63 - 1
"""The largest integer both engines hold: what a number reaching SQL may be at most (the
agent's ``Limits`` bound the ones peers send far lower)."""
Offset = Annotated[
    int,
    Field(
        ge=0,
        le=SQL_INTEGER,
        description="Memories to skip, to page through the list: the reply's next_offset",
    ),
]


class Reasoning(Record):
    """Why a search answered what it did (the memory bridge's trace)."""

    strategy: Literal["hybrid", "bm25", "recency"]
    """How it ranked: words and meaning fused, words alone, or newest first."""
    dense_available: bool
    """Whether meaning search was on and the searched spaces' vectors were loaded."""
    mode: str
    """The query mode used."""
    word_candidates: int = 0
    """Memories the words of the query matched (up to the candidates ranked)."""
    meaning_candidates: int = 0
    """Memories similar in meaning that entered the fusion."""
    filtered: bool = False
    """Whether filters (category, tags, metadata, dates) narrowed the search."""
    returned: int = 0
    expansion: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """Why a second round followed the entities of the first round's best memories (None:
    the question did not call for one)."""
    expanded: list[str] = Field(default_factory=list, exclude_if=lambda value: not value)
    """The entities that second round followed, the weightiest first."""


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
    reasoning: Reasoning | None = None
    """For ``search_memories``: how the answer was made."""
    entities: list[str] = Field(default_factory=list, exclude_if=_empty)
    """For ``related_memories``: every entity the memory asked about names, as it writes
    them, those that lead to no other memory too."""


class MemoryVersion(Record):
    """One version of a memory: what it said, who made it so, and when."""

    version: int
    category: str
    content: str
    context: str | None = None
    confidence: float
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    source: str | None = None
    changed_by: str
    changed_at: datetime


class Deletion(Record):
    """What is kept of a deleted memory: who deleted it, and when (never its content)."""

    deleted_by: str
    deleted_at: datetime
    reason: str | None = None
    """``expired`` when its time ran out; otherwise None (a delete or ``forget``)."""


class MemoryHistory(Record):
    """Result of ``memory_history``: every version kept, oldest first, or the audit entry
    of a deleted memory."""

    id: str
    versions: list[MemoryVersion] = Field(default_factory=list)
    deleted: Deletion | None = None
    dropped: int = 0
    """Older versions no longer kept (history is bounded per memory)."""
    supersedes: list[str] = Field(default_factory=list, exclude_if=_empty)
    """The memories it replaced, the one it replaced first (a supersede chain)."""
    superseded_by: list[str] = Field(default_factory=list, exclude_if=_empty)
    """The memories that replaced it, the one that replaced it first."""
    merged: list[str] = Field(default_factory=list, exclude_if=_empty)
    """Memories consolidation merged into it (each readable through ``as_of``)."""
    valid_from: datetime | None = Field(default=None, exclude_if=_empty)
    valid_to: datetime | None = Field(default=None, exclude_if=_empty)


class MemoriesForgotten(Record):
    """Result of ``forget_memories``: how many memories the filter matched, and whether
    they were deleted (``dry_run`` false) or only counted."""

    count: int
    dry_run: bool
    ids: list[str] = Field(default_factory=list)
    """The ids matched (the first 1,000)."""


class AllForgotten(SenderForgotten):
    """Result of ``forget_all_memories``: the memories of the sender's own space deleted
    (or, on a dry run, counted), with the answers kept for its retries (``replies``)."""

    memories: int
    mirror: str | None = None
    """The beads sync agent mirroring these memories (None: none): their issues there,
    and the sender's own beads memories, are forgotten by its ``forget_all_memories``."""


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
    superseded_memories: int = 0
    """Memories of this space replaced by a newer one (not found now; see ``as_of``)."""
    merged_memories: int = 0
    """Of those, the ones merged into another by consolidation."""
    vector_index: Literal["none", "exact", "approximate", "pgvector"] = "none"
    """How this space's vectors are searched now: ``exact`` (every vector scored),
    ``approximate`` (a large space's IVF index), ``pgvector`` (PostgreSQL's HNSW index),
    ``none`` (not loaded yet, or BM25 alone)."""
    stored_per_day: dict[str, int] = Field(default_factory=dict)
    """With ``days``: the live memories of the space stored on each of those days, by
    UTC date (``YYYY-MM-DD``), oldest first, every day listed; counted, not read."""
    stored_by_author: dict[str, int] = Field(default_factory=dict)
    """With ``days``: the ``STATS_AUTHORS`` authors who stored the most of those, with
    how many each (the most first)."""
    stored_by_others: int = 0
    """With ``days``: how many of those the other authors stored."""


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
    reason: str | None = None
    """Why, when not by a delete or an update: a memory deleted ``expired`` or
    ``forgotten``, or updated ``merged`` into another by consolidation."""
    entities: list[str] = Field(default_factory=list, exclude_if=lambda value: not value)
    """The names, titles and days the memory names now (``entities``; none once
    deleted)."""
    space_key: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """For the beads mirror: the id of ``space``, which a space given the same name after
    this one was deleted does not share."""


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


CountAccess = Annotated[
    bool,
    Field(
        description="Optional: false reads without counting it as a use: the memories'"
        " access_count and last_accessed stay as they are, so an operator's look does not"
        " change the ranking agents see (default: true)",
        exclude_if=lambda counted: counted is True,  # the default is not sent
    ),
]
"""Whether a read counts as a use of what it returns (``spade-memory memories`` sets it
false: an admin's look is not an agent's use)."""


Source = Annotated[
    str,
    Field(
        min_length=1,
        max_length=2048,
        description="Optional: where this came from: a path such as"
        " docs/work/active/E2-241/plans/PLAN.md, a beads issue id such as bd-42, or a URL;"
        " a work-item id in it links the memory to that work item",
    ),
]


class StoreMemory(Op[Stored]):
    """Keep a memory (the same content in the same category of a space is reinforced,
    not added); without a category, the agent classifies it."""

    need = "write"
    op: Literal["store_memory"] = "store_memory"
    category: Category | None = Field(
        default=None,
        description="Type of memory: fact (concrete info), pattern (observed behavior), "
        "preference (learned preference), capability (my ability/limitation)",
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
    tags: Tags = Field(
        default_factory=list, description="Optional: labels to find this memory by later"
    )
    metadata: Metadata = Field(
        default_factory=dict, description="Optional: a small JSON object kept with the memory"
    )
    source: Source | None = None
    ttl_seconds: TtlSeconds | None = None
    expires_at: ExpiresAt | None = None
    valid_from: ValidFrom | None = None
    valid_to: ValidTo | None = None
    supersedes: MemoryId | None = Field(
        default=None,
        description="Optional: the id of a memory this one replaces (it stays readable"
        " through history and as_of, and is no longer found now)",
    )
    conflicts: ConflictPolicy = Field(
        default="auto",
        description="auto (default): a memory of the space stating another value for the"
        " same thing is superseded when that is clear, reported otherwise; report: only"
        " reported; off: not looked for",
        exclude_if=lambda policy: policy == "auto",
    )

    @model_validator(mode="after")
    def _valid_in_order(self) -> StoreMemory:
        _in_order(self.valid_from, self.valid_to)
        return self


def _in_order(start: datetime | None, end: datetime | None) -> None:
    if start is not None and end is not None and end <= start:
        raise ValueError("valid_to must come after valid_from")


_NEW_MEMORY_FIELDS = frozenset(
    {"category", "context", "confidence", "tags", "metadata", "source", "valid_from"}
)
"""What only a supersede with new content takes."""


class SupersedeMemory(Op[Stored]):
    """Replace a memory with a new one (``content``) or with one already stored (``by``):
    the old one stops being valid where the new one starts (now by default), and each
    names the other. Who may update the old one may supersede it."""

    need = "write"
    op: Literal["supersede_memory"] = "supersede_memory"
    id: MemoryId = Field(description="The memory being replaced")
    content: str | None = Field(
        default=None, min_length=1, description="What is true now (a new memory)"
    )
    by: MemoryId | None = Field(
        default=None,
        description="Or: the id of a memory of the same space already saying what is true"
        " now (a likely conflict a store reported)",
    )
    category: Category | None = Field(
        default=None, description="Optional: its category (default: the old memory's)"
    )
    context: str | None = Field(default=None, description="Optional: why it changed")
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    space: SpaceName | None = Field(default=None, description=_ONE_SPACE)
    tags: Tags = Field(default_factory=list)
    metadata: Metadata = Field(default_factory=dict)
    source: Source | None = None
    valid_from: ValidFrom | None = None

    @model_validator(mode="after")
    def _one_successor(self) -> SupersedeMemory:
        if (self.content is None) == (self.by is None):
            raise ValueError("give the new content, or by: the id of the memory replacing it")
        if self.by == self.id:
            raise ValueError("a memory cannot supersede itself")
        given = {
            name
            for name in _NEW_MEMORY_FIELDS
            if getattr(self, name)
            != type(self).model_fields[name].get_default(call_default_factory=True)
        }
        if self.by is not None and given:
            left_out = ", ".join(sorted(given))
            raise ValueError(
                f"with by, the memory it names says what is true: leave out {left_out}"
            )
        return self

    def as_store(self, category: str) -> StoreMemory:
        """The store this supersede amounts to, in the old memory's ``category`` unless
        it names one (an imported memory's unknown category: classified)."""
        fields = self.model_dump(exclude={"op", "id", "category", "by"})
        kept = next((known for known in CATEGORIES if known == category), None)
        return StoreMemory(
            **fields, category=self.category or kept, supersedes=self.id, conflicts="off"
        )


class GetMemory(Op[Memory]):
    """One memory of a space the sender reads, by id (``item-not-found`` for anyone else's)."""

    need = "read"
    op: Literal["get_memory"] = "get_memory"
    reads_only: ClassVar[bool] = True
    id: MemoryId
    space: SpaceName | None = Field(default=None, description=_ONE_SPACE)
    count_access: CountAccess = True
    as_of: AsOf | None = None
    known_at: KnownAt | None = None


Authors = Annotated[
    list[Annotated[str, Field(min_length=3, max_length=3071)]], Field(min_length=1, max_length=32)
]
"""Bare JIDs of agents that stored memories (a filter)."""


class Filtered(Op[R], Generic[R]):
    """An op that selects memories: each filter given narrows the selection."""

    tags_any: Tags | None = Field(
        default=None, description="Optional: only memories with at least one of these tags"
    )
    tags_all: Tags | None = Field(
        default=None, description="Optional: only memories with every one of these tags"
    )
    metadata_equals: MetadataFilter | None = Field(
        default=None,
        description="Optional: only memories whose metadata has exactly these values"
        " (keys to strings, numbers, booleans or null)",
    )
    created_after: AwareDatetime | None = None
    created_before: AwareDatetime | None = None
    accessed_after: AwareDatetime | None = None
    accessed_before: AwareDatetime | None = None
    authors: Authors | None = Field(
        default=None,
        description="Optional: only memories stored by one of these agents (bare JIDs)",
    )
    as_of: AsOf | None = None
    known_at: KnownAt | None = None

    def narrowed(self) -> bool:
        """Whether any of the shared filters is given."""
        return any(getattr(self, name) is not None for name in FILTERS)


FILTERS = (
    "tags_any", "tags_all", "metadata_equals",
    "created_after", "created_before", "accessed_after", "accessed_before", "authors",
)  # fmt: skip
"""The filters every ``Filtered`` op takes."""


class SearchMemories(Filtered[MemoryList]):
    """Ranked search over content and context: BM25, fused with dense similarity when on."""

    need = "read"
    op: Literal["search_memories"] = "search_memories"
    reads_only: ClassVar[bool] = True
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
    count_access: CountAccess = True


class ListMemories(Filtered[MemoryList]):
    """Memories of one category, most recently accessed first."""

    need = "read"
    op: Literal["list_memories"] = "list_memories"
    reads_only: ClassVar[bool] = True
    category: Category = Field(description="Category of memories to list")
    limit: Limit = Field(default=50, description="Maximum number of memories to retrieve")
    offset: Offset = 0
    space: SpaceSelection | None = Field(default=None, description=_READ_SPACES)
    count_access: CountAccess = True


class RecentMemories(Filtered[MemoryList]):
    """Memories of any category, most recently accessed first."""

    need = "read"
    op: Literal["recent_memories"] = "recent_memories"
    reads_only: ClassVar[bool] = True
    limit: Limit = 10
    offset: Offset = 0
    space: SpaceSelection | None = Field(default=None, description=_READ_SPACES)
    count_access: CountAccess = True


class ForgetMemories(Filtered[MemoriesForgotten]):
    """Delete every memory of one space that the filters match (and that the sender may
    delete: its own, or anyone's where it is an admin); ``dry_run`` (the default) only
    counts them."""

    need = "write"
    op: Literal["forget_memories"] = "forget_memories"
    category: Category | None = None
    dry_run: bool = Field(
        default=True, description="Count only (the default); false deletes what is counted"
    )
    space: SpaceName | None = Field(default=None, description=_ONE_SPACE)

    @model_validator(mode="after")
    def _narrowed(self) -> ForgetMemories:
        if not self.narrowed() and self.category is None:
            raise ValueError(
                "give at least one filter (category, tags, metadata or dates); to delete"
                " everything use the shell's forget"
            )
        return self


class ForgetAllMemories(Op[AllForgotten]):
    """Delete every memory of the sender's own space (expired ones too) and every answer
    kept for its requests: what ``spade-memory forget`` asks; ``dry_run`` only counts.
    What the sender stored in a shared space stays: it is the space's."""

    op: Literal["forget_all_memories"] = "forget_all_memories"
    dry_run: bool = Field(default=False, description="Count only; delete nothing")


class MemoryHistoryOp(Op[MemoryHistory]):
    """Every version kept of a memory of a space the sender reads, who made each and when;
    for a deleted memory, who deleted it and when."""

    need = "read"
    op: Literal["memory_history"] = "memory_history"
    reads_only: ClassVar[bool] = True
    id: MemoryId
    space: SpaceName | None = Field(default=None, description=_ONE_SPACE)


WorkId = Annotated[str, Field(min_length=1, max_length=200)]


class MemoryRefs(Op[MemoryList]):
    """The memories linked to a work item (through their ``source``), newest first, in the
    spaces the sender reads."""

    need = "read"
    op: Literal["memory_refs"] = "memory_refs"
    reads_only: ClassVar[bool] = True
    work_id: WorkId
    limit: Limit = 50
    space: SpaceSelection | None = Field(default=None, description=_READ_SPACES)
    count_access: CountAccess = True


class UpdateMemory(Op[Memory]):
    """Change any of content, category, context and confidence (of a memory the sender
    stored, or of anyone's in a space it administers)."""

    need = "write"
    op: Literal["update_memory"] = "update_memory"
    id: MemoryId
    space: SpaceName | None = Field(default=None, description=_ONE_SPACE)
    content: str | None = Field(default=None, min_length=1, description="Optional: the new text")
    category: Category | None = Field(default=None, description="Optional: the new category")
    context: str | None = Field(default=None, description="Optional: the new context")
    confidence: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Optional: the new confidence (0.0 to 1.0)"
    )
    tags: Tags | None = Field(default=None, description="Optional: the new tags (all of them)")
    metadata: Metadata | None = None
    source: Source | None = None
    ttl_seconds: TtlSeconds | None = None
    expires_at: ExpiresAt | None = None
    valid_from: ValidFrom | None = None
    valid_to: ValidTo | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> UpdateMemory:
        if self.changes() == {}:
            raise ValueError(f"give at least one of {', '.join(UPDATABLE)}")
        _in_order(self.valid_from, self.valid_to)
        return self

    def changes(self) -> dict[str, object]:
        """The fields this update sets."""
        return {name: getattr(self, name) for name in UPDATABLE if getattr(self, name) is not None}


UPDATABLE = (
    "content", "category", "context", "confidence", "tags", "metadata", "source",
    "ttl_seconds", "expires_at", "valid_from", "valid_to",
)  # fmt: skip


class RestoreMemory(Op[Memory]):
    """Make a memory that was superseded (or merged by a consolidation) current again,
    when the supersede was wrong: its validity reopens where the supersede closed it,
    and its successor stays current but no longer names it. Its author's, or an admin's
    of its space."""

    need = "write"
    op: Literal["restore_memory"] = "restore_memory"
    id: MemoryId
    space: SpaceName | None = Field(default=None, description=_ONE_SPACE)


class DeleteMemory(Op[Deleted]):
    """Forget a memory the sender stored (or anyone's, in a space it administers)."""

    need = "write"
    op: Literal["delete_memory"] = "delete_memory"
    id: MemoryId
    space: SpaceName | None = Field(default=None, description=_ONE_SPACE)


STATS_DAYS = 90
"""The most days ``memory_stats`` counts day by day."""
STATS_AUTHORS = 8
"""The authors ``memory_stats`` names with their counts; the rest are summed."""


class MemoryStatsOp(Op[MemoryStats]):
    """Counts of a space's memories (the sender's own by default), by category, its usage
    against its quota, and how search ranks; with ``days``, also how many were stored on
    each of the last days and by whom (what a chart draws, without reading a memory)."""

    need = "read"
    op: Literal["memory_stats"] = "memory_stats"
    reads_only: ClassVar[bool] = True
    space: SpaceName | None = Field(default=None, description=_ONE_SPACE)
    days: int = Field(
        default=0, ge=0, le=STATS_DAYS,
        description="Also count the memories stored on each of the last this many days"
        " (UTC, today included) and by their authors (0: not)",
    )  # fmt: skip


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
    reads_only: ClassVar[bool] = True
    after: int = Field(
        default=0, ge=0, le=SQL_INTEGER, description="The last change already mirrored"
    )
    limit: Limit = 500
    space: SpaceName | None = Field(
        default=None,
        description="A shared space: its changes after the cursor ``after``, for any of its"
        " members (without it: the whole feed, for the mirror only)",
    )


# -- the entity graph's reads (``protocol.graph``) --


class ListEntities(Op[EntityList]):
    """The entities the memories of the spaces name, the most named first: people,
    places, titles and days always; words only once two memories share them."""

    need = "read"
    op: Literal["entities"] = "entities"
    reads_only: ClassVar[bool] = True
    prefix: str | None = Field(
        default=None, max_length=200, description="Optional: only entities starting so"
    )
    kind: EntityKind | None = Field(default=None, description="Optional: only of this kind")
    limit: Limit = Field(default=50, le=500, description="Most entities returned")
    space: SpaceSelection | None = Field(default=None, description=_READ_SPACES)


class MemoriesAbout(Op[MemoryList]):
    """The current memories naming an entity (by name, any case, possessive or not; a
    short name seen in the space as the start of one to three longer names counts as
    them), those
    it is the subject of first, then the newest."""

    need = "read"
    op: Literal["memories_about"] = "memories_about"
    reads_only: ClassVar[bool] = True
    entity: EntityName = Field(description="Who or what, e.g. Melanie, pottery, New York")
    limit: Limit = Field(default=20, le=500, description="Most memories returned")
    space: SpaceSelection | None = Field(default=None, description=_READ_SPACES)
    count_access: CountAccess = True


class RelatedMemories(Op[MemoryList]):
    """The current memories that name what a memory names, ranked by how much they share
    (a rare entity counts more than a common one); each carries its ``score``."""

    need = "read"
    op: Literal["related_memories"] = "related_memories"
    reads_only: ClassVar[bool] = True
    id: MemoryId
    limit: Limit = Field(default=10, le=500, description="Most memories returned")
    space: SpaceSelection | None = Field(default=None, description=_READ_SPACES)
    count_access: CountAccess = True


BaseMemoryOp = Annotated[
    StoreMemory
    | SupersedeMemory
    | GetMemory
    | SearchMemories
    | ListMemories
    | RecentMemories
    | UpdateMemory
    | RestoreMemory
    | DeleteMemory
    | MemoryStatsOp
    | ChangesSince
    | ForgetMemories
    | ForgetAllMemories
    | MemoryHistoryOp
    | MemoryRefs
    | ConsolidateMemories
    | ListEntities
    | MemoriesAbout
    | RelatedMemories
    | SpaceOp,
    Field(discriminator="op"),
]
"""Any request the base memory agent serves, tagged by ``op``: its memories' and the
spaces' (see ``spaces.ops``)."""

WRITE_OPS: tuple[type[Op[Any]], ...] = (
    StoreMemory,
    SupersedeMemory,
    UpdateMemory,
    RestoreMemory,
    DeleteMemory,
    ForgetMemories,
    ForgetAllMemories,
)
"""Ops whose effect must happen once per request id, however often it is sent."""

base_memory_ops: TypeAdapter[BaseMemoryOp] = TypeAdapter(BaseMemoryOp, config=DEFERRED)
RECORDED: TypeAdapter[Stored | Deleted | Memory | MemoriesForgotten] = TypeAdapter(
    Stored | Deleted | Memory | MemoriesForgotten, config=DEFERRED
)
"""A write's result as its request id recorded it (JSON), read back as the answer to a
retry of the same request."""

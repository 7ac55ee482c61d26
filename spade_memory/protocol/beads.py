"""What the beads sync agent serves, as tagged pydantic ops, and what it answers.

A beads memory is one issue in the project's beads tracker (see
``beads/mapping.py``). As everywhere, the owner is the sender's bare JID: an
``agent`` (or ``owner``) field is accepted only so that a body naming another
agent can be refused.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Generic, Literal

from pydantic import AliasChoices, BaseModel, Field, TypeAdapter, field_validator

from spade_memory.protocol.beads_labels import OUR_METADATA, RESERVED_LABEL_PREFIXES, MemoryType
from spade_memory.protocol.json_object import JsonObject
from spade_memory.protocol.ops import (
    DEFERRED,
    Limit,
    MemoryId,
    NextOffset,
    Op,
    PageOffset,
    R,
    Record,
    SenderForgotten,
)
from spade_memory.protocol.space_names import Member, Role

Relationship = Literal["related", "blocks", "discovered-from"]
SessionId = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\s,]+$")]
Importance = Annotated[int, Field(ge=1, le=10)]


class BeadsForgotten(SenderForgotten):
    """Result of ``forget_all_memories``: the issues redacted (a dry run: to redact)."""

    issues: int


class ForgetBeadsMemories(Op[BeadsForgotten]):
    """Redact every beads memory of the sender - those it stored here and those mirrored
    from its own space of the base memory - and forget the answers kept for its
    requests: what ``spade-memory forget`` asks; ``dry_run`` only counts. Memories
    mirrored from a shared space stay: they are the space's."""

    op: Literal["forget_all_memories"] = "forget_all_memories"
    dry_run: bool = Field(default=False, description="Count only; redact nothing")


class Link(BaseModel):
    memory_id: str
    relationship: str


class BeadsMemory(Record):
    """One memory as kept in beads (``id`` is the issue id)."""

    id: str
    title: str
    content: str
    memory_type: MemoryType
    agent: str | None
    session: str | None
    tags: list[str]
    metadata: dict[str, Any]
    importance: int
    status: str
    created_at: str
    updated_at: str
    parent: str | None = None
    links: list[Link] = Field(default_factory=list)
    access_count: int = 0
    last_accessed: str | None = None
    category: str | None = None
    base_memory_id: str | None = None
    """Set when the memory mirrors one of the base memory agent's memories."""
    space: str | None = None
    """The shared space of the base memory it mirrors (None: a personal memory)."""
    labels: list[str] = Field(default_factory=list)
    """Every label of the issue, as ``bd`` shows them."""
    priority: int | None = None
    """The issue's priority (0 highest to 4), from the importance."""


class BeadsMemories(Record):
    memories: list[BeadsMemory] = Field(default_factory=list)
    session: str | None = None
    note: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """Said when the memories stopped at the bytes one answer may carry."""
    next_offset: NextOffset = None
    """For ``restore_session``: the ``offset`` of the rest, when it stopped there."""


class BeadsStored(Record):
    id: str
    session: str


class IssueSummary(Record):
    id: str
    title: str
    status: str
    priority: int
    issue_type: str


class SessionContext(Record):
    session_id: str
    memories: list[BeadsMemory]
    active_agents: list[str]
    open_issues: list[IssueSummary]
    ready_work: list[IssueSummary]
    metadata: dict[str, Any]
    note: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """Said when ``memories`` stopped at the bytes one answer may carry (the rest:
    ``restore_session`` with an offset)."""


class Done(Record):
    id: str
    done: bool = True


class BeadsStats(Record):
    """Result of ``memory_stats``: the sender's memories stored here, and the bytes they
    hold against its byte budget (closed ones too: their issues stay in the file)."""

    open_memories: int = 0
    closed_memories: int = 0
    used_bytes: int = 0
    max_bytes: int = 0


class BeadsOp(Op[R], Generic[R]):
    """A beads op: ``agent`` may name the owner too (and is refused if it is not the sender)."""

    owner: str | None = Field(
        default=None,
        validation_alias=AliasChoices("agent", "owner", "agent_id"),
        description="Optional. If given it must equal the sender's bare JID, "
        "otherwise the request is refused with not-authorized.",
    )


class BeadsStoreMemory(BeadsOp[BeadsStored]):
    """Store a memory as a new issue (written before the reply)."""

    op: Literal["store_memory"] = "store_memory"
    content: str = Field(min_length=1, description="What to remember (the issue description)")
    title: str | None = Field(
        default=None, max_length=200, description="Issue title; the content's first line if omitted"
    )
    memory_type: MemoryType = "context"
    metadata: JsonObject = Field(default_factory=dict)
    tags: list[Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[^\s,]+$")]] = Field(
        default_factory=list, max_length=20
    )
    importance: Importance | None = None
    session: SessionId | None = Field(default=None, description="Default: the current session")

    @field_validator("metadata")
    @classmethod
    def _no_reserved_metadata(cls, metadata: dict[str, Any]) -> dict[str, Any]:
        if OUR_METADATA in metadata:
            raise ValueError(f"metadata may not use the reserved key {OUR_METADATA!r}")
        return metadata

    @field_validator("tags")
    @classmethod
    def _no_reserved_tags(cls, tags: list[str]) -> list[str]:
        for tag in tags:
            if tag.startswith(RESERVED_LABEL_PREFIXES):
                raise ValueError(f"tags may not start with {', '.join(RESERVED_LABEL_PREFIXES)}")
        return tags


class RetrieveMemories(Op[BeadsMemories]):
    """Open memories of one agent (the sender unless ``agent`` names another), newest first.

    Another agent's memories are returned only where the sender may read them
    (sessions both have written to). The session is the current one unless
    ``session`` or ``all_sessions`` says otherwise.
    """

    op: Literal["retrieve_memories"] = "retrieve_memories"
    reads_only: ClassVar[bool] = True
    agent: str | None = Field(default=None, max_length=300, description="Whose memories")
    memory_type: MemoryType | None = None
    tags: list[str] = Field(default_factory=list, max_length=20, description="Any of these")
    session: SessionId | None = None
    all_sessions: bool = False
    limit: Limit = 20


class RestoreSession(BeadsOp[BeadsMemories]):
    """Every memory of a session, oldest first, with their links."""

    op: Literal["restore_session"] = "restore_session"
    reads_only: ClassVar[bool] = True
    session_id: SessionId
    offset: PageOffset = 0
    """Memories to skip: the reply's ``next_offset``."""


class GetSessionContext(BeadsOp[SessionContext]):
    op: Literal["get_session_context"] = "get_session_context"
    reads_only: ClassVar[bool] = True
    session_id: SessionId | None = None


class MarkMemoryAccessed(BeadsOp[BeadsMemory]):
    op: Literal["mark_memory_accessed"] = "mark_memory_accessed"
    memory_id: MemoryId


class LinkMemories(BeadsOp[Done]):
    """``child`` depends on ``parent`` (stored on the child, as bd does)."""

    op: Literal["link_memories"] = "link_memories"
    child: MemoryId
    parent: MemoryId
    relationship: Relationship = "related"


class DeleteBeadsMemory(BeadsOp[Done]):
    """Close the memory's issue; it stays in the file as an audit trail."""

    op: Literal["delete_memory"] = "delete_memory"
    memory_id: MemoryId
    reason: str | None = Field(default=None, max_length=500)


class SearchBeadsMemories(BeadsOp[BeadsMemories]):
    """Memories the sender may read whose text matches ``query``."""

    op: Literal["search_memories"] = "search_memories"
    reads_only: ClassVar[bool] = True
    query: str = Field(min_length=1)
    limit: Limit = 10


class MirroredMemory(BeadsOp[BeadsMemory]):
    """The beads issue that mirrors one of the base memory agent's memories (found by its
    ``external_ref``), where the sender may read it; ``item-not-found`` otherwise, or
    while the mirror has not written it yet."""

    op: Literal["mirrored_memory"] = "mirrored_memory"
    reads_only: ClassVar[bool] = True
    base_memory_id: MemoryId


class BeadsMemoryStats(BeadsOp[BeadsStats]):
    """How many memories the sender stored here, and the bytes they hold against its
    budget (``--max-bytes-per-owner``)."""

    op: Literal["memory_stats"] = "memory_stats"
    reads_only: ClassVar[bool] = True


class SessionShared(Record):
    """Result of ``share_session`` and ``unshare_session``: the share as it now is
    (``role`` None once unshared)."""

    session: str
    member: str
    role: Role | None


class ShareSession(Op[SessionShared]):
    """Let ``member`` (a bare JID or ``*@domain``) read the sender's memories of
    ``session`` (``writer``: also mark and link them; ``admin``: also close them)."""

    op: Literal["share_session"] = "share_session"
    session: SessionId
    member: Member
    role: Role = "reader"


class UnshareSession(Op[SessionShared]):
    """Take back a share of the sender's memories of ``session`` (done if there was none)."""

    op: Literal["unshare_session"] = "unshare_session"
    session: SessionId
    member: Member


BeadsSyncOp = Annotated[
    BeadsStoreMemory
    | RetrieveMemories
    | RestoreSession
    | GetSessionContext
    | MarkMemoryAccessed
    | LinkMemories
    | DeleteBeadsMemory
    | ForgetBeadsMemories
    | SearchBeadsMemories
    | ShareSession
    | UnshareSession
    | BeadsMemoryStats
    | MirroredMemory,
    Field(discriminator="op"),
]
beads_sync_ops: TypeAdapter[BeadsSyncOp] = TypeAdapter(BeadsSyncOp, config=DEFERRED)

WRITES: tuple[type[Op[Any]], ...] = (
    BeadsStoreMemory,
    MarkMemoryAccessed,
    LinkMemories,
    DeleteBeadsMemory,
    ForgetBeadsMemories,
)
"""Ops that change the beads file (a retry of one is answered, not applied again)."""

"""Every operation of the base memory agent as a frozen, tagged pydantic model.

The same op objects are built by the client, travel as JSON over XMPP, are
parsed by one discriminated union on the agent, and reach the store (as in
langgraph's ``BaseStore``: ``GetOp``, ``PutOp``, ``SearchOp``). Ops never carry
the owner's identity as a trusted value: the owner is the sender's bare JID.
An ``owner`` (or spade_llm's ``agent_id``) field is accepted only so that a
body claiming someone else can be refused explicitly.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from .errors import BadRequest
from .records import Category

T = TypeVar("T")

MemoryId = Annotated[str, Field(min_length=1, max_length=200)]
Limit = Annotated[int, Field(ge=1)]


class Op(BaseModel):
    """Base of every request body: frozen, strict types, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    owner: str | None = Field(
        default=None,
        validation_alias=AliasChoices("owner", "agent_id"),
        description="Optional. If given it must equal the sender's bare JID, "
        "otherwise the request is refused with not-authorized.",
    )


class StoreMemory(Op):
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


class GetMemory(Op):
    op: Literal["get_memory"] = "get_memory"
    id: MemoryId


class SearchMemories(Op):
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


class ListMemories(Op):
    """Memories of one category, most recently accessed first."""

    op: Literal["list_memories"] = "list_memories"
    category: Category = Field(description="Category of memories to list")
    limit: Limit = Field(default=50, description="Maximum number of memories to retrieve")


class RecentMemories(Op):
    """Memories of any category, most recently accessed first."""

    op: Literal["recent_memories"] = "recent_memories"
    limit: Limit = 10


class UpdateMemory(Op):
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


class DeleteMemory(Op):
    op: Literal["delete_memory"] = "delete_memory"
    id: MemoryId


class MemoryStatsOp(Op):
    op: Literal["memory_stats"] = "memory_stats"


class ChangesSince(Op):
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

WRITE_OPS: tuple[type[Op], ...] = (StoreMemory, UpdateMemory, DeleteMemory)
"""Ops whose effect must happen once per request id, however often it is sent."""

base_memory_ops: TypeAdapter[BaseMemoryOp] = TypeAdapter(BaseMemoryOp)


def parse_op(adapter: TypeAdapter[T], body: str) -> T:
    """Parse a JSON request body, turning any problem into a readable BadRequest."""
    try:
        return adapter.validate_json(body)
    except ValidationError as exc:
        raise BadRequest(describe(exc)) from None


def describe(exc: ValidationError, most: int = 3) -> str:
    """A short human text for a validation error, without echoing huge inputs."""
    parts = []
    for error in exc.errors(include_url=False, include_input=False)[:most]:
        where = ".".join(str(p) for p in error["loc"]) or "body"
        parts.append(f"{where}: {error['msg']}")
    more = exc.error_count() - most
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)

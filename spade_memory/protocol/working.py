"""Working-memory operations, served by the interaction memory agent.

Each names a session of the sender, or of a shared ``space`` (one state that
its members read and its writers change); changes to a session that does not
exist yet create it (with ``user_id`` = the sender), reads of one answer
``item-not-found``. An entity or finding added with ``ttl_seconds`` or
``expires_at`` expires at the soonest of those and its own ``expires_at``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from spade_memory.protocol.expiry import ExpiresAt, TtlSeconds
from spade_memory.protocol.json_object import JsonObject
from spade_memory.protocol.ops import PERSONAL, Limit, NextOffset, Op, PageOffset, Record
from spade_memory.protocol.space_names import SpaceName
from spade_memory.protocol.working_memory import (
    Clarification,
    EntityRef,
    Finding,
    Focus,
    WorkingMemory,
)

SessionId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=512,
        description="The working session: any id the caller chooses (one state per id, per"
        " owner or space)",
    ),
]
SESSION_SPACE = "Optional: the shared space keeping the session (default: the sender's own)"


class WorkingMemoryState(Record):
    """A session's working memory, and its clarification if still pending."""

    working_memory: WorkingMemory
    pending_clarification: Clarification | None
    space: str = PERSONAL


class WorkingSession(Record):
    """One session as ``list_working_memories`` lists it: what tells it apart."""

    session_id: str
    user_id: str
    created_at: datetime
    focus: str | None = None
    """The name of what it focuses on now (None: nothing)."""
    entities: int = 0
    findings: int = 0
    """How many entities and findings it holds now (expired ones left out)."""


class WorkingSessions(Record):
    """Result of ``list_working_memories``: a page of sessions, by id."""

    sessions: list[WorkingSession]
    space: str = PERSONAL
    next_offset: NextOffset = None


class SessionChanged(Record):
    """The interaction memory agent's notice that a working session kept in a shared
    space changed: sent after the commit to each subscriber of the space (``subscribe``,
    at the base memory agent), who reads the session again to see what changed."""

    space: str
    session_id: str
    author: str
    """Who changed it."""
    op: str
    """The op that changed it (``set_focus``, ``add_finding``, ...)."""


class Entities(Record):
    """Result of ``recent_entities``, newest first."""

    entities: list[EntityRef]


class CreateWorkingMemory(Op[WorkingMemoryState]):
    """Create the session's working memory, or return it if it exists."""

    need = "write"
    op: Literal["create_working_memory"] = "create_working_memory"
    session_id: SessionId
    space: SpaceName | None = Field(default=None, description=SESSION_SPACE)
    user_id: str | None = None


class GetWorkingMemory(Op[WorkingMemoryState]):
    need = "read"
    op: Literal["get_working_memory"] = "get_working_memory"
    reads_only: ClassVar[bool] = True
    session_id: SessionId
    space: SpaceName | None = Field(default=None, description=SESSION_SPACE)


SESSIONS_PER_PAGE = 50
"""Most sessions one ``list_working_memories`` answers (each read whole to describe it)."""


class ListWorkingMemories(Op[WorkingSessions]):
    """The sessions of the sender, or of a shared ``space``, by id, a page at a time."""

    need = "read"
    op: Literal["list_working_memories"] = "list_working_memories"
    reads_only: ClassVar[bool] = True
    space: SpaceName | None = Field(default=None, description=SESSION_SPACE)
    limit: int = Field(default=25, ge=1, le=SESSIONS_PER_PAGE)
    offset: PageOffset = 0


class SetFocus(Op[WorkingMemoryState]):
    need = "write"
    op: Literal["set_focus"] = "set_focus"
    session_id: SessionId
    space: SpaceName | None = Field(default=None, description=SESSION_SPACE)
    focus: Focus


class ClearFocus(Op[WorkingMemoryState]):
    need = "write"
    op: Literal["clear_focus"] = "clear_focus"
    session_id: SessionId
    space: SpaceName | None = Field(default=None, description=SESSION_SPACE)


class AddEntity(Op[WorkingMemoryState]):
    """Note an entity, for good or until ``ttl_seconds`` or ``expires_at`` has passed."""

    need = "write"
    op: Literal["add_entity"] = "add_entity"
    session_id: SessionId
    space: SpaceName | None = Field(default=None, description=SESSION_SPACE)
    entity: EntityRef
    ttl_seconds: TtlSeconds | None = None
    expires_at: ExpiresAt | None = None


class RecentEntities(Op[Entities]):
    need = "read"
    op: Literal["recent_entities"] = "recent_entities"
    reads_only: ClassVar[bool] = True
    session_id: SessionId
    space: SpaceName | None = Field(default=None, description=SESSION_SPACE)
    limit: Limit = 10


class AddFinding(Op[WorkingMemoryState]):
    """Note a finding, for good or until ``ttl_seconds`` or ``expires_at`` has passed."""

    need = "write"
    op: Literal["add_finding"] = "add_finding"
    session_id: SessionId
    space: SpaceName | None = Field(default=None, description=SESSION_SPACE)
    finding: Finding
    ttl_seconds: TtlSeconds | None = None
    expires_at: ExpiresAt | None = None


class SetClarification(Op[WorkingMemoryState]):
    need = "write"
    op: Literal["set_clarification"] = "set_clarification"
    session_id: SessionId
    space: SpaceName | None = Field(default=None, description=SESSION_SPACE)
    clarification: Clarification


class ClearClarification(Op[WorkingMemoryState]):
    need = "write"
    op: Literal["clear_clarification"] = "clear_clarification"
    session_id: SessionId
    space: SpaceName | None = Field(default=None, description=SESSION_SPACE)


class UpdateContext(Op[WorkingMemoryState]):
    """Merge ``values`` into the session's free context (given keys win)."""

    need = "write"
    op: Literal["update_context"] = "update_context"
    session_id: SessionId
    space: SpaceName | None = Field(default=None, description=SESSION_SPACE)
    values: JsonObject


class MergeWorkingMemory(Op[WorkingMemoryState]):
    """Apply ``update`` on top of the session's working memory (see ``WorkingMemory.merged``)."""

    need = "write"
    op: Literal["merge_working_memory"] = "merge_working_memory"
    session_id: SessionId
    space: SpaceName | None = Field(default=None, description=SESSION_SPACE)
    update: WorkingMemory


WorkingMemoryChange = (
    SetFocus
    | ClearFocus
    | AddEntity
    | AddFinding
    | SetClarification
    | ClearClarification
    | UpdateContext
    | MergeWorkingMemory
)
WorkingMemoryOp = (
    CreateWorkingMemory | GetWorkingMemory | RecentEntities | ListWorkingMemories
    | WorkingMemoryChange
)  # fmt: skip

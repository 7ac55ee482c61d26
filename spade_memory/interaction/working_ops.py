"""Working-memory operations, served by the interaction memory agent.

Each names a session of the sender; changes to a session that does not exist
yet create it (with ``user_id`` = the sender), reads of one answer
``item-not-found``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ..ops import Limit, Op, Record
from .working_memory import Clarification, EntityRef, Finding, Focus, WorkingMemory

SessionId = Annotated[str, Field(min_length=1, max_length=512)]


class WorkingMemoryState(Record):
    """A session's working memory, and its clarification if still pending."""

    working_memory: WorkingMemory
    pending_clarification: Clarification | None


class Entities(Record):
    """Result of ``recent_entities``, newest first."""

    entities: list[EntityRef]


class CreateWorkingMemory(Op[WorkingMemoryState]):
    """Create the session's working memory, or return it if it exists."""

    op: Literal["create_working_memory"] = "create_working_memory"
    session_id: SessionId
    user_id: str | None = None


class GetWorkingMemory(Op[WorkingMemoryState]):
    op: Literal["get_working_memory"] = "get_working_memory"
    session_id: SessionId


class SetFocus(Op[WorkingMemoryState]):
    op: Literal["set_focus"] = "set_focus"
    session_id: SessionId
    focus: Focus


class ClearFocus(Op[WorkingMemoryState]):
    op: Literal["clear_focus"] = "clear_focus"
    session_id: SessionId


class AddEntity(Op[WorkingMemoryState]):
    op: Literal["add_entity"] = "add_entity"
    session_id: SessionId
    entity: EntityRef


class RecentEntities(Op[Entities]):
    op: Literal["recent_entities"] = "recent_entities"
    session_id: SessionId
    limit: Limit = 10


class AddFinding(Op[WorkingMemoryState]):
    op: Literal["add_finding"] = "add_finding"
    session_id: SessionId
    finding: Finding


class SetClarification(Op[WorkingMemoryState]):
    op: Literal["set_clarification"] = "set_clarification"
    session_id: SessionId
    clarification: Clarification


class ClearClarification(Op[WorkingMemoryState]):
    op: Literal["clear_clarification"] = "clear_clarification"
    session_id: SessionId


class UpdateContext(Op[WorkingMemoryState]):
    """Merge ``values`` into the session's free context (given keys win)."""

    op: Literal["update_context"] = "update_context"
    session_id: SessionId
    values: dict[str, Any]


class MergeWorkingMemory(Op[WorkingMemoryState]):
    """Apply ``update`` on top of the session's working memory (see ``WorkingMemory.merged``)."""

    op: Literal["merge_working_memory"] = "merge_working_memory"
    session_id: SessionId
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
WorkingMemoryOp = CreateWorkingMemory | GetWorkingMemory | RecentEntities | WorkingMemoryChange

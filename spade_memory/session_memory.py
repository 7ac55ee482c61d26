"""SessionMemory: the working memory of one session, through the interaction memory agent.

Get one from ``MemoryClient.session(session_id)``. Every change returns the
session's new state (``None`` only from a degraded client that got no reply).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ops import Op
from .working_memory import Clarification, EntityRef, Finding, Focus, WorkingMemory
from .working_memory_ops import (
    AddEntity,
    AddFinding,
    ClearClarification,
    ClearFocus,
    CreateWorkingMemory,
    Entities,
    GetWorkingMemory,
    MergeWorkingMemory,
    RecentEntities,
    SetClarification,
    SetFocus,
    UpdateContext,
    WorkingMemoryState,
)

if TYPE_CHECKING:
    from .client import MemoryClient

State = WorkingMemoryState | None


class SessionMemory:
    def __init__(self, client: MemoryClient, session_id: str) -> None:
        self.client = client
        self.session_id = session_id

    async def _state(self, op: Op) -> State:
        return await self.client.request(self.client.interaction_memory_jid, op, WorkingMemoryState)

    async def create(self, user_id: str | None = None) -> State:
        return await self._state(CreateWorkingMemory(session_id=self.session_id, user_id=user_id))

    async def get(self) -> State:
        return await self._state(GetWorkingMemory(session_id=self.session_id))

    async def set_focus(self, focus: Focus) -> State:
        return await self._state(SetFocus(session_id=self.session_id, focus=focus))

    async def clear_focus(self) -> State:
        return await self._state(ClearFocus(session_id=self.session_id))

    async def add_entity(self, entity: EntityRef) -> State:
        return await self._state(AddEntity(session_id=self.session_id, entity=entity))

    async def recent_entities(self, limit: int = 10) -> list[EntityRef]:
        op = RecentEntities(session_id=self.session_id, limit=limit)
        result = await self.client.request(self.client.interaction_memory_jid, op, Entities)
        return [] if result is None else result.entities

    async def add_finding(self, finding: Finding) -> State:
        return await self._state(AddFinding(session_id=self.session_id, finding=finding))

    async def set_clarification(self, clarification: Clarification) -> State:
        op = SetClarification(session_id=self.session_id, clarification=clarification)
        return await self._state(op)

    async def clear_clarification(self) -> State:
        return await self._state(ClearClarification(session_id=self.session_id))

    async def update_context(self, values: dict[str, Any]) -> State:
        return await self._state(UpdateContext(session_id=self.session_id, values=values))

    async def merge(self, update: WorkingMemory) -> State:
        return await self._state(MergeWorkingMemory(session_id=self.session_id, update=update))

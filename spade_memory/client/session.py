"""SessionMemory: the working memory of one session, through the interaction memory agent.

Get one from ``MemoryClient.session(session_id)``. Every change returns the
session's new state (``None`` only from a degraded client that got no reply).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from spade_memory.protocol.ops import Op
from spade_memory.protocol.working import (
    AddEntity,
    AddFinding,
    ClearClarification,
    ClearFocus,
    CreateWorkingMemory,
    GetWorkingMemory,
    MergeWorkingMemory,
    RecentEntities,
    SetClarification,
    SetFocus,
    UpdateContext,
    WorkingMemoryState,
)
from spade_memory.protocol.working_memory import (
    Clarification,
    EntityRef,
    Finding,
    Focus,
    WorkingMemory,
)

if TYPE_CHECKING:
    from spade_memory.client.transport import Transport

State = WorkingMemoryState | None


class SessionMemory:
    """Typed calls on one session's working memory.

    Each change returns the session's new ``WorkingMemoryState`` (a change to
    a session that does not exist creates it); ``get`` of a session that does
    not exist raises ``ItemNotFound``. Calls raise the reply's typed error
    (``MemoryServiceError``) or ``MemoryTimeout``.
    """

    def __init__(
        self, client: Transport, jid: str, session_id: str, space: str | None = None
    ) -> None:
        self.client = client
        self.jid = jid
        """The interaction memory agent keeping this session."""
        self.session_id = session_id
        self.space = space
        """The shared space keeping it (None: the sender's own)."""
        self._at: dict[str, Any] = {"session_id": session_id, "space": space}

    async def _state(self, op: Op[WorkingMemoryState]) -> State:
        return await self.client.request(self.jid, op)

    async def create(self, user_id: str | None = None) -> State:
        """Create the session (``user_id`` defaults to the sender), or get it if it exists."""
        return await self._state(CreateWorkingMemory(**self._at, user_id=user_id))

    async def get(self) -> State:
        """The session's state; raises ``ItemNotFound`` if it was never created."""
        return await self._state(GetWorkingMemory(**self._at))

    async def set_focus(self, focus: Focus) -> State:
        """Focus on something new; the previous focus moves to the history."""
        return await self._state(SetFocus(**self._at, focus=focus))

    async def clear_focus(self) -> State:
        """No focus; the previous one moves to the history."""
        return await self._state(ClearFocus(**self._at))

    async def add_entity(
        self, entity: EntityRef, *, ttl_seconds: float | None = None,
        expires_at: datetime | None = None,
    ) -> State:  # fmt: skip
        """Note something the session referred to, for good or until ``ttl_seconds`` or
        ``expires_at`` (timezone-aware) has passed, or its own ``expires_at``: the
        soonest wins, and from then on no read shows it."""
        op = AddEntity(**self._at, entity=entity, ttl_seconds=ttl_seconds, expires_at=expires_at)
        return await self._state(op)

    async def recent_entities(self, limit: int = 10) -> list[EntityRef]:
        """The ``limit`` most recently referred entities, newest first."""
        op = RecentEntities(**self._at, limit=limit)
        result = await self.client.request(self.jid, op)
        return [] if result is None else result.entities

    async def add_finding(
        self, finding: Finding, *, ttl_seconds: float | None = None,
        expires_at: datetime | None = None,
    ) -> State:  # fmt: skip
        """Note something the session found out, for good or until ``ttl_seconds`` or
        ``expires_at`` (timezone-aware) has passed, or its own ``expires_at``: the
        soonest wins, and from then on no read shows it."""
        op = AddFinding(**self._at, finding=finding, ttl_seconds=ttl_seconds, expires_at=expires_at)
        return await self._state(op)

    async def set_clarification(self, clarification: Clarification) -> State:
        """Ask a question; it is pending until cleared or its timeout passes."""
        op = SetClarification(**self._at, clarification=clarification)
        return await self._state(op)

    async def clear_clarification(self) -> State:
        """The question was answered."""
        return await self._state(ClearClarification(**self._at))

    async def update_context(self, values: dict[str, Any]) -> State:
        """Merge ``values`` into the session's free context (given keys win)."""
        return await self._state(UpdateContext(**self._at, values=values))

    async def merge(self, update: WorkingMemory) -> State:
        """Apply ``update`` on top (see ``WorkingMemory.merged``)."""
        return await self._state(MergeWorkingMemory(**self._at, update=update))

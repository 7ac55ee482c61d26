"""Working memories on SQLite: one JSON document per (owner, session).

Every change is read, applied and written back in one transaction, so two
changes to a session never lose each other; a change carrying a request id
is applied once.
"""

from __future__ import annotations

from typing import Any

import aiosqlite

from ..errors import ItemNotFound
from ..records import Record
from ..working_memory import WorkingMemory
from ..working_memory_ops import (
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
    WorkingMemoryOp,
    WorkingMemoryState,
)
from . import requests
from .connection import Transactions

CREATE_TABLE = """CREATE TABLE working_memories (
    owner TEXT NOT NULL,
    session_id TEXT NOT NULL,
    document TEXT NOT NULL,
    PRIMARY KEY (owner, session_id)
) WITHOUT ROWID"""


class WorkingMemories:
    """The working-memory half of the interaction store (same connection)."""

    def __init__(self, tx: Transactions, request_log: requests.RequestLog) -> None:
        self._tx = tx
        self._requests = request_log

    async def apply(self, owner: str, op: WorkingMemoryOp, request_id: str | None) -> Record:
        if isinstance(op, GetWorkingMemory | RecentEntities):
            async with self._tx.read() as db:
                memory = await _load(db, owner, op.session_id)
            if memory is None:
                raise ItemNotFound(f"no working memory for session {op.session_id!r}")
            if isinstance(op, RecentEntities):
                return Entities(entities=memory.recent_entities(op.limit))
            return _state(memory)
        async with self._tx.write() as db:
            if request_id is not None:
                earlier = await requests.earlier_result(db, owner, request_id)
                if earlier is not None:
                    return WorkingMemoryState.model_validate_json(earlier)
            memory = await _load(db, owner, op.session_id)
            if memory is None:
                user_id = op.user_id if isinstance(op, CreateWorkingMemory) else None
                memory = WorkingMemory(session_id=op.session_id, user_id=user_id or owner)
            if not isinstance(op, CreateWorkingMemory):
                memory = _changed(memory, op)
            await db.execute(
                "INSERT INTO working_memories VALUES (?, ?, ?) ON CONFLICT DO UPDATE"
                " SET document = excluded.document",
                (owner, op.session_id, memory.model_dump_json()),
            )
            result = _state(memory)
            if request_id is not None:
                await self._requests.claim(db, owner, request_id, result.model_dump_json())
        return result


def _changed(memory: WorkingMemory, op: Any) -> WorkingMemory:
    if isinstance(op, MergeWorkingMemory):
        return memory.merged(op.update)
    if isinstance(op, SetFocus):
        memory.set_focus(op.focus)
    elif isinstance(op, ClearFocus):
        memory.clear_focus()
    elif isinstance(op, AddEntity):
        memory.add_entity(op.entity)
    elif isinstance(op, AddFinding):
        memory.add_finding(op.finding)
    elif isinstance(op, SetClarification):
        memory.clarification = op.clarification
    elif isinstance(op, ClearClarification):
        memory.clarification = None
    else:
        assert isinstance(op, UpdateContext)
        memory.context.update(op.values)
    return memory


def _state(memory: WorkingMemory) -> WorkingMemoryState:
    return WorkingMemoryState(
        working_memory=memory, pending_clarification=memory.pending_clarification()
    )


async def _load(db: aiosqlite.Connection, owner: str, session_id: str) -> WorkingMemory | None:
    rows = await db.execute_fetchall(
        "SELECT document FROM working_memories WHERE owner = ? AND session_id = ?",
        (owner, session_id),
    )
    for (document,) in rows:
        return WorkingMemory.model_validate_json(document)
    return None

"""Working memories on SQLite: one JSON document per (space, session).

A session lives in the sender's personal space (its key is the sender's bare
JID) or in a shared space (its id), as the request's place says.

Every change is read, applied and written back inside the store's
transaction, so two changes to a session never lose each other; a change
carrying a request id is applied once. Each op has its entry in a dispatch
table: reads, the create, and the changes (each a small function on the
``WorkingMemory`` model).

Expired entities and findings are left out of every read, and dropped from the
stored document by the next change to the session or by ``purge``; a session's
``next_expiry`` column (its soonest item's) lets the purge read only the
sessions holding something expired.

A change that makes the session's document larger counts the growth against the
byte budget of the session's place (``usage``), and is refused before anything is
written when it would cross it.

On PostgreSQL, where several agents (and one agent's several connections) write at
once, a change reads the session ``FOR UPDATE``, and a new session is inserted only
if no other transaction made it meanwhile (else the change applies to that one), so
no change is lost to another written over it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from spade_memory.interaction import usage
from spade_memory.protocol.errors import ItemNotFound, ResourceConstraint
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.ops import Op, Record, Request
from spade_memory.protocol.working import (
    AddEntity,
    AddFinding,
    ClearClarification,
    ClearFocus,
    CreateWorkingMemory,
    Entities,
    GetWorkingMemory,
    ListWorkingMemories,
    MergeWorkingMemory,
    RecentEntities,
    SetClarification,
    SetFocus,
    UpdateContext,
    WorkingMemoryState,
    WorkingSession,
    WorkingSessions,
)
from spade_memory.protocol.working_memory import WorkingMemory, expiring, expiry_moment
from spade_memory.storage import requests
from spade_memory.storage.connection import Database
from spade_memory.storage.postgres import dialect

Handler = Callable[[Database, str, Request], Awaitable[Record]]
"""Applies one request of one owner inside the store's open transaction."""

# owner: the key of the session's space (its owner's bare JID for a personal session)
CREATE_TABLE = """CREATE TABLE working_memories (
    owner TEXT NOT NULL,
    session_id TEXT NOT NULL,
    document TEXT NOT NULL,
    PRIMARY KEY (owner, session_id)
) WITHOUT ROWID"""
ADD_EXPIRY = (
    "ALTER TABLE working_memories ADD COLUMN next_expiry REAL",  # epoch; NULL: nothing expires
    "CREATE INDEX working_memories_by_expiry ON working_memories(next_expiry)"
    " WHERE next_expiry IS NOT NULL",
)


def _merge(memory: WorkingMemory, op: MergeWorkingMemory) -> WorkingMemory:
    return memory.merged(op.update)


def _set_focus(memory: WorkingMemory, op: SetFocus) -> WorkingMemory:
    memory.set_focus(op.focus)
    return memory


def _clear_focus(memory: WorkingMemory, _op: ClearFocus) -> WorkingMemory:
    memory.clear_focus()
    return memory


def _add_entity(memory: WorkingMemory, op: AddEntity) -> WorkingMemory:
    memory.add_entity(expiring(op.entity, expiry_moment(op.ttl_seconds, op.expires_at)))
    return memory


def _add_finding(memory: WorkingMemory, op: AddFinding) -> WorkingMemory:
    memory.add_finding(expiring(op.finding, expiry_moment(op.ttl_seconds, op.expires_at)))
    return memory


def _set_clarification(memory: WorkingMemory, op: SetClarification) -> WorkingMemory:
    memory.clarification = op.clarification
    return memory


def _clear_clarification(memory: WorkingMemory, _op: ClearClarification) -> WorkingMemory:
    memory.clarification = None
    return memory


def _update_context(memory: WorkingMemory, op: UpdateContext) -> WorkingMemory:
    memory.context.update(op.values)
    return memory


def _created(memory: WorkingMemory, _op: CreateWorkingMemory) -> WorkingMemory:
    return memory


CHANGES: dict[type[Op[Any]], Callable[[WorkingMemory, Any], WorkingMemory]] = {
    CreateWorkingMemory: _created,
    SetFocus: _set_focus,
    ClearFocus: _clear_focus,
    AddEntity: _add_entity,
    AddFinding: _add_finding,
    SetClarification: _set_clarification,
    ClearClarification: _clear_clarification,
    UpdateContext: _update_context,
    MergeWorkingMemory: _merge,
}
"""How each change applies to a session's working memory (a new session is created first)."""


class WorkingMemories:
    """The working-memory half of the interaction store (same connection, same transaction)."""

    def __init__(self, request_log: requests.RequestLog, limits: Limits) -> None:
        self._requests = request_log
        self._limits = limits

    def handlers(self) -> dict[type[Op[Any]], Handler]:
        """The store's dispatch table entries for working-memory ops."""
        reads: dict[type[Op[Any]], Handler] = {
            GetWorkingMemory: self._read,
            RecentEntities: self._read,
            ListWorkingMemories: self._list,
        }
        return {**reads, **dict.fromkeys(CHANGES, self._change)}

    async def _read(self, db: Database, owner: str, request: Request) -> Record:
        op = request.op
        assert isinstance(op, GetWorkingMemory | RecentEntities)
        (place,) = request.places_of(owner)
        memory = await _load(db, place.key, op.session_id)
        if memory is None:
            raise ItemNotFound(f"no working memory for session {op.session_id!r}")
        if isinstance(op, RecentEntities):
            return Entities(entities=memory.recent_entities(op.limit))
        return _state(memory, place.name)

    async def _list(self, db: Database, owner: str, request: Request) -> Record:
        op = request.op
        assert isinstance(op, ListWorkingMemories)
        (place,) = request.places_of(owner)
        rows = list(await db.execute_fetchall(  # the primary key's order: no sort
            "SELECT document FROM working_memories WHERE owner = ?"
            " ORDER BY session_id LIMIT ? OFFSET ?",
            (place.key, op.limit + 1, op.offset),
        ))  # fmt: skip
        sessions = []
        for (document,) in rows[: op.limit]:
            memory = WorkingMemory.model_validate_json(document)
            memory.drop_expired()
            focus = None if memory.current_focus is None else memory.current_focus.name
            sessions.append(WorkingSession(
                session_id=memory.session_id, user_id=memory.user_id,
                created_at=memory.created_at, focus=focus, entities=len(memory.entities),
                findings=len(memory.findings),
            ))  # fmt: skip
        more = op.offset + op.limit if len(rows) > op.limit else None
        return WorkingSessions(sessions=sessions, space=place.name, next_offset=more)

    async def _change(self, db: Database, owner: str, request: Request) -> Record:
        op: Any = request.op
        parse = WorkingMemoryState.model_validate_json
        if earlier := await self._requests.earlier(db, owner, request.id, parse):
            live = earlier.working_memory.live()  # the first answer, less what expired since
            return earlier.model_copy(update={"working_memory": live})
        (place,) = request.places_of(owner)

        def changed(memory: WorkingMemory) -> WorkingMemory:
            memory = CHANGES[type(op)](memory, op)
            memory.drop_expired()  # an item given an expiry already past is never seen
            return memory

        while True:  # again only if another agent made the session since we looked
            loaded = await _load_sized(db, place.key, op.session_id, for_update=True)
            if loaded is not None:
                memory = changed(loaded[0])
                document = memory.model_dump_json()
                grown = usage.size_of(document) - loaded[1]
                self._readable(op.session_id, document, grown)
                await usage.check(db, self._limits, place, grown)
                await _save(db, place.key, op.session_id, memory, document)
                break
            user_id = op.user_id if isinstance(op, CreateWorkingMemory) else None
            memory = changed(WorkingMemory(session_id=op.session_id, user_id=user_id or owner))
            document = memory.model_dump_json()
            grown = usage.size_of(document)
            self._readable(op.session_id, document, grown)
            await usage.check(db, self._limits, place, grown)
            if await _insert(db, place.key, op.session_id, memory, document):
                break
        await usage.add(db, {place.key: grown})
        result = _state(memory, place.name)
        await self._requests.claim(db, owner, request.id, result)
        return result

    def _readable(self, session_id: str, document: str, grown: int) -> None:
        """Refuse a change that grows a session past what one answer carries: every
        change answers the whole state, and a state no answer can carry could no longer
        be read. A change that shrinks it is always let through.

        Raises ``ResourceConstraint`` naming the limit."""
        most = self._limits.max_answer_bytes
        if grown > 0 and usage.size_of(document) > most:
            raise ResourceConstraint(
                f"session {session_id!r} would pass {most:,} bytes, what one answer carries"
                " (run --max-answer-bytes): clear what it no longer needs, or start another"
            )


async def purge(db: Database, now: float) -> int:
    """Drop the entities and findings expired at ``now`` from the sessions holding any;
    how many went. Call in a write transaction."""
    skip_locked = " FOR UPDATE SKIP LOCKED" if dialect(db) == "postgresql" else ""
    rows = await db.execute_fetchall(  # sessions being changed: the change drops theirs
        "SELECT owner, session_id, document FROM working_memories WHERE next_expiry <= ?"
        + skip_locked,
        (now,),
    )
    dropped = 0
    freed: dict[str, int] = {}
    for space, session_id, document in rows:
        memory = WorkingMemory.model_validate_json(document)
        dropped += memory.drop_expired(now)
        kept = memory.model_dump_json()
        freed[space] = freed.get(space, 0) + usage.size_of(kept) - usage.size_of(document)
        await _save(db, space, session_id, memory, kept)
    await usage.add(db, freed)
    return dropped


async def _save(
    db: Database, space: str, session_id: str, memory: WorkingMemory, document: str
) -> None:
    """Write ``document`` (``memory`` as JSON) over the session's."""
    await db.execute(
        "UPDATE working_memories SET document = ?, next_expiry = ?"
        " WHERE owner = ? AND session_id = ?",
        (document, memory.next_expiry(), space, session_id),
    )


async def _insert(
    db: Database, space: str, session_id: str, memory: WorkingMemory, document: str
) -> bool:
    """Write a new session (``document``: ``memory`` as JSON); False (nothing written) if
    it exists by now."""
    cursor = await db.execute(
        "INSERT INTO working_memories (owner, session_id, document, next_expiry)"
        " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (space, session_id, document, memory.next_expiry()),
    )
    return bool(cursor.rowcount)


def _state(memory: WorkingMemory, space: str) -> WorkingMemoryState:
    return WorkingMemoryState(
        working_memory=memory, pending_clarification=memory.pending_clarification(), space=space
    )


async def _load(db: Database, space: str, session_id: str) -> WorkingMemory | None:
    """The session's working memory without what has expired (None: no such session)."""
    loaded = await _load_sized(db, space, session_id)
    return None if loaded is None else loaded[0]


async def _load_sized(
    db: Database, space: str, session_id: str, *, for_update: bool = False
) -> tuple[WorkingMemory, int] | None:
    """The session's working memory without what has expired, and the bytes its document
    holds as stored (None: no such session); ``for_update`` holds its row until the
    transaction ends (PostgreSQL)."""
    lock = " FOR UPDATE" if for_update and dialect(db) == "postgresql" else ""
    rows = await db.execute_fetchall(
        "SELECT document FROM working_memories WHERE owner = ? AND session_id = ?" + lock,
        (space, session_id),
    )
    for (document,) in rows:
        memory = WorkingMemory.model_validate_json(document)
        memory.drop_expired()
        return memory, usage.size_of(document)
    return None

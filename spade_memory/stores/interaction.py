"""Conversation notes on SQLite, one row per note (and working memories, see ``working``).

spade_llm keeps every note of an agent in one JSON file and rewrites all of
it on each append. Here an append is one INSERT, so its cost does not grow
with the conversation and concurrent appends cannot overwrite each other.
Notes keep spade_llm's timestamp strings, so its files import and export
unchanged.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import aiosqlite

from ..interaction_ops import (
    AddInformation,
    ClearConversation,
    Cleared,
    Confirmation,
    ContextSummary,
    ConversationInfo,
    Conversations,
    ExportConversation,
    GetAllConversations,
    GetContextSummary,
    GetInformation,
    InteractionsFile,
    NoteEntry,
    NoteOp,
    Notes,
    context_summary,
)
from ..protocol import bare
from ..records import Record
from ..working_memory_ops import WORKING_MEMORY_OPS, WorkingMemoryOp
from . import requests, working
from .connection import Migration, Synchronous, Transactions, open_migrated

StoredOp = NoteOp | WorkingMemoryOp
"""The ops this store executes (context-directory ops are the service's)."""

_V1 = (
    """CREATE TABLE notes (
        seq INTEGER PRIMARY KEY,
        owner TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        content TEXT NOT NULL,
        timestamp TEXT NOT NULL
    )""",
    "CREATE INDEX notes_by_conversation ON notes(owner, conversation_id, seq)",
    *requests.CREATE_TABLE,
)


async def _create_v1(db: aiosqlite.Connection) -> None:
    for statement in _V1:
        await db.execute(statement)


async def _create_v2(db: aiosqlite.Connection) -> None:
    await db.execute(working.CREATE_TABLE)


MIGRATIONS: list[Migration] = [_create_v1, _create_v2]


class InteractionStore:
    """Conversation notes of many owners in one SQLite file."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._tx = Transactions(db)
        self._requests = requests.RequestLog()
        self._working = working.WorkingMemories(self._tx, self._requests)

    @classmethod
    async def open(cls, path: str | Path, synchronous: Synchronous = "NORMAL") -> InteractionStore:
        store = cls(await open_migrated(path, MIGRATIONS, synchronous))
        async with store._tx.write() as tx:
            await requests.forget_old(tx)
        return store

    async def close(self) -> None:
        await self._tx.db.close()

    async def apply(self, owner: str, op: StoredOp, request_id: str | None = None) -> Record:
        """Execute ``op`` on ``owner``'s notes or working memories; its result."""
        if isinstance(op, WORKING_MEMORY_OPS):
            return await self._working.apply(owner, op, request_id)
        if isinstance(op, AddInformation):
            return await self._add(owner, op, request_id)
        if isinstance(op, ClearConversation):
            return await self._clear(owner, op, request_id)
        async with self._tx.read() as db:
            if isinstance(op, GetAllConversations):
                return await _conversations(db, owner)
            entries = await _entries(db, owner, op.conversation_id)
        notes = [entry.content for entry in entries]
        if isinstance(op, GetInformation):
            return Notes(conversation_id=op.conversation_id, notes=notes)
        if isinstance(op, GetContextSummary):
            return ContextSummary(summary=context_summary(notes))
        assert isinstance(op, ExportConversation)
        exported = {op.conversation_id: entries} if entries else {}
        return InteractionsFile(agent_id=owner, interactions=exported)

    async def _add(self, owner: str, op: AddInformation, request_id: str | None) -> Record:
        confirmation = Confirmation(
            text=f"Remembered information about this interaction: {op.information}"
        )
        async with self._tx.write() as db:
            if request_id is not None and not await self._requests.claim(
                db, owner, request_id, confirmation.model_dump_json()
            ):
                return confirmation  # applied before; the confirmation is the same
            await db.execute(
                "INSERT INTO notes (owner, conversation_id, content, timestamp)"
                " VALUES (?, ?, ?, ?)",
                (owner, op.conversation_id, op.information, _now()),
            )
        return confirmation

    async def _clear(self, owner: str, op: ClearConversation, request_id: str | None) -> Record:
        async with self._tx.write() as db:
            if request_id is not None:
                earlier = await requests.earlier_result(db, owner, request_id)
                if earlier is not None:
                    return Cleared.model_validate_json(earlier)
            cursor = await db.execute(
                "DELETE FROM notes WHERE owner = ? AND conversation_id = ?",
                (owner, op.conversation_id),
            )
            result = Cleared(cleared=cursor.rowcount > 0)
            if request_id is not None:
                await self._requests.claim(db, owner, request_id, result.model_dump_json())
        return result

    async def import_spade_llm(self, path: str | Path, owner: str | None = None) -> int:
        """Append the notes of a spade_llm ``{agent}_interactions.json`` file; their count.

        The owner is the file's ``agent_id`` (as a bare JID) unless given.
        """
        data = InteractionsFile.model_validate_json(Path(path).read_bytes())
        owner = bare(owner or data.agent_id)
        rows = [
            (owner, conversation_id, entry.content, entry.timestamp)
            for conversation_id, entries in data.interactions.items()
            for entry in entries
        ]
        async with self._tx.write() as db:
            await db.executemany(
                "INSERT INTO notes (owner, conversation_id, content, timestamp)"
                " VALUES (?, ?, ?, ?)",
                rows,
            )
        return len(rows)


async def _entries(db: aiosqlite.Connection, owner: str, conversation_id: str) -> list[NoteEntry]:
    rows = await db.execute_fetchall(
        "SELECT content, timestamp FROM notes WHERE owner = ? AND conversation_id = ? ORDER BY seq",
        (owner, conversation_id),
    )
    return [NoteEntry(content=content, timestamp=timestamp) for content, timestamp in rows]


async def _conversations(db: aiosqlite.Connection, owner: str) -> Conversations:
    # with MAX(), SQLite takes the bare column (timestamp) from the row holding the maximum
    rows = await db.execute_fetchall(
        "SELECT conversation_id, COUNT(*), MAX(seq), timestamp FROM notes WHERE owner = ?"
        " GROUP BY conversation_id ORDER BY MAX(seq) DESC",
        (owner,),
    )
    return Conversations(
        conversations=[
            ConversationInfo(conversation_id=cid, notes=int(count), last_note_at=str(stamp))
            for cid, count, _seq, stamp in rows
        ]
    )


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()

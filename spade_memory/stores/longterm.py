"""The long-term ("base") memory store on SQLite, with FTS5 BM25 search.

Like a langgraph ``BaseStore`` backend it has one entry point, ``apply``,
that executes an op for an owner. Writes carrying a request id are applied
once: the id and the result are recorded in the same transaction as the
change, so a retried request (even after a crash) gets the first answer back
instead of a second memory.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite
from pydantic import TypeAdapter

from ..errors import ItemNotFound
from ..ops import (
    WRITE_OPS,
    BaseMemoryOp,
    ChangesSince,
    DeleteMemory,
    GetMemory,
    ListMemories,
    MemoryStatsOp,
    RecentMemories,
    SearchMemories,
    StoreMemory,
    UpdateMemory,
)
from ..records import (
    Change,
    ChangeKind,
    ChangeList,
    Deleted,
    Memory,
    MemoryList,
    MemoryStats,
    Result,
    Stored,
)
from . import requests
from .access import AccessLog
from .connection import Synchronous, Transactions, open_migrated
from .longterm_schema import MIGRATIONS, content_key
from .ranking import Moved, Ranking

if TYPE_CHECKING:
    from ..embeddings import Embedder

_COLUMNS = (
    "m.id, m.owner, m.category, m.content, m.context, m.confidence,"
    " m.created_at, m.last_accessed, m.access_count, m.seq"
)
_results: TypeAdapter[Result] = TypeAdapter(Result)
SEARCH_MODES = ("semantic", "session_recovery", "knowledge_lookup")
KNOWLEDGE = ("fact", "pattern", "capability")
"""The categories ``knowledge_lookup`` searches (preferences are not knowledge)."""


class LongTermStore:
    """Long-term memories of many owners in one SQLite file."""

    def __init__(self, db: aiosqlite.Connection, embedder: Embedder | None = None) -> None:
        self._tx = Transactions(db)
        self.ranking = Ranking(embedder)
        self._requests = requests.RequestLog()
        self._accesses = AccessLog()
        self._flush_timer: asyncio.TimerHandle | None = None
        self._flush_task: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls, path: str | Path, synchronous: Synchronous = "NORMAL", embedder: Embedder | None = None
    ) -> LongTermStore:
        """Open (creating or migrating) the store at ``path``; an embedder adds dense search."""
        store = cls(await open_migrated(path, MIGRATIONS, synchronous), embedder)
        async with store._tx.write() as tx:
            await requests.forget_old(tx)
        return store

    async def close(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if self._flush_task is not None:
            await self._flush_task
        await self.flush_accesses()
        await self._tx.db.close()

    async def apply(self, owner: str, op: BaseMemoryOp, request_id: str | None = None) -> Result:
        """Execute ``op`` on ``owner``'s memories and return its result."""
        if isinstance(op, WRITE_OPS):
            return await self._write(owner, op, request_id)
        if isinstance(op, ChangesSince):
            return await self.changes_since(op.after, op.limit)
        if isinstance(op, SearchMemories):
            return await self._search(owner, op)
        if self._accesses:
            await self.flush_accesses()  # the reads below order by last access
        async with self._tx.read() as db:
            if isinstance(op, MemoryStatsOp):
                return await self._stats(db, owner)
            found = await self._find(db, owner, op)
        memories = self._count_access(found)
        return memories[0] if isinstance(op, GetMemory) else MemoryList(memories=memories)

    async def _search(self, owner: str, op: SearchMemories) -> MemoryList:
        mode, note = op.mode, None
        if mode not in SEARCH_MODES:
            mode, note = "semantic", f"unknown mode {op.mode!r}; answered as semantic"
        if mode == "session_recovery":
            found = await self._newest(owner, op)
        else:
            categories: list[str] | None = None if op.category is None else [op.category]
            if mode == "knowledge_lookup":
                categories = [c for c in KNOWLEDGE if op.category in (None, c)]
            seqs = await self.ranking.rank(self._tx, owner, op.query, categories, op.limit)
            async with self._tx.read() as db:
                rows = await _select(db, f"WHERE m.seq IN ({', '.join('?' * len(seqs))})", seqs)
            by_seq = {row.seq: row for row in rows}
            found = [by_seq[seq] for seq in seqs if seq in by_seq]
        return MemoryList(memories=self._count_access(found), mode=mode, note=note)

    async def _newest(self, owner: str, op: SearchMemories) -> list[_Row]:
        """``session_recovery``: what the owner stored most recently, newest first."""
        where, params = "WHERE m.owner = ?", [owner]
        if op.category is not None:
            where += " AND m.category = ?"
            params.append(op.category)
        order = " ORDER BY m.created_at DESC, m.seq DESC LIMIT ?"
        async with self._tx.read() as db:
            return await _select(db, where + order, (*params, op.limit))

    async def _find(self, db: aiosqlite.Connection, owner: str, op: BaseMemoryOp) -> list[_Row]:
        if isinstance(op, GetMemory):
            found = await _select(db, "WHERE m.id = ? AND m.owner = ?", (op.id, owner))
            if not found:
                raise ItemNotFound(f"no memory {op.id!r}")
            return found
        assert isinstance(op, ListMemories | RecentMemories)
        return await self._list(db, owner, op)

    async def flush_accesses(self) -> None:
        """Write the access counts noted by reads (see ``AccessLog``)."""
        async with self._tx.write() as db:
            await self._accesses.flush(db)

    def _count_access(self, found: Sequence[_Row]) -> list[Memory]:
        now, pending = self._accesses.note([row.seq for row in found])
        if len(self._accesses) >= 1000:
            self._start_flush()
        elif self._flush_timer is None and found:
            loop = asyncio.get_running_loop()
            self._flush_timer = loop.call_later(AccessLog.FLUSH_AFTER_SECONDS, self._start_flush)
        return [row.memory(accessed_at=now, extra_accesses=pending[row.seq]) for row in found]

    def _start_flush(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.create_task(self.flush_accesses())

    async def _write(self, owner: str, op: BaseMemoryOp, request_id: str | None) -> Result:
        vector = None
        if isinstance(op, StoreMemory):  # embedded before taking the lock, off the event loop
            vector = await self.ranking.vector(op.content, op.context)
        moved: Moved = {}
        async with self._tx.write() as db:
            if isinstance(op, StoreMemory):
                result = await self._store(db, owner, op, request_id, vector, moved)
            else:
                result = await self._change(db, owner, op, request_id, moved)
        self.ranking.moved(owner, moved)  # committed: the cached vectors follow
        return result

    async def _change(
        self,
        db: aiosqlite.Connection,
        owner: str,
        op: BaseMemoryOp,
        request_id: str | None,
        moved: Moved,
    ) -> Result:
        """An update or delete, applied once per request id."""
        if request_id is not None and (earlier := await _earlier(db, owner, request_id)):
            return earlier
        result: Result
        if isinstance(op, UpdateMemory):
            result = await self._update(db, owner, op, moved)
            await _record_change(db, "updated", op.id, owner)
        else:
            assert isinstance(op, DeleteMemory)
            result = await self._delete(db, owner, op, moved)
            await _record_change(db, "deleted", op.id, owner)
        if request_id is not None:
            await self._requests.claim(db, owner, request_id, result.model_dump_json())
        return result

    async def changes_since(self, after: int, limit: int = 500) -> ChangeList:
        """The committed changes after ``after``, oldest first; forgets those up to it."""
        async with self._tx.write() as db:
            await db.execute("DELETE FROM changes WHERE seq <= ?", (after,))
        async with self._tx.read() as db:
            rows = await db.execute_fetchall(
                f"SELECT c.seq, c.kind, c.memory_id, c.owner, {_COLUMNS} FROM changes c"
                " LEFT JOIN memories m ON m.id = c.memory_id"
                " WHERE c.seq > ? ORDER BY c.seq LIMIT ?",
                (after, limit),
            )
            newest = await db.execute_fetchall(
                "SELECT seq FROM sqlite_sequence WHERE name = 'changes'"
            )
        changes = [
            Change(
                seq=row[0],
                kind=row[1],
                memory_id=row[2],
                owner=row[3],
                memory=None if row[4] is None else _Row(tuple(row[4:])).memory(),
            )
            for row in rows
        ]
        last_seq = int(next(iter(newest))[0]) if newest else 0
        return ChangeList(changes=changes, last_seq=last_seq)

    async def _store(
        self,
        db: aiosqlite.Connection,
        owner: str,
        op: StoreMemory,
        request_id: str | None,
        vector: bytes | None,
        moved: Moved,
    ) -> Result:
        """A new memory, or the owner's same memory (same category and content) reinforced."""
        key, now = content_key(op.content), time.time()
        same = await db.execute_fetchall(
            "SELECT id FROM memories WHERE owner = ? AND category = ? AND content_key = ? LIMIT 1",
            (owner, op.category, key),
        )
        memory_id = str(next(iter(same))[0]) if same else str(uuid.uuid4())
        stored = Stored(id=memory_id, deduplicated=bool(same))
        # the result is known before any change: claim the request id with it
        if request_id is not None and not await self._requests.claim(
            db, owner, request_id, stored.model_dump_json()
        ):
            earlier = await _earlier(db, owner, request_id)
            assert earlier is not None  # the claim just collided with it
            return earlier
        if same:
            await db.execute(
                "UPDATE memories SET confidence = MAX(confidence, ?),"
                " access_count = access_count + 1, last_accessed = ? WHERE id = ?",
                (op.confidence, now, memory_id),
            )
            await _record_change(db, "updated", memory_id, owner)
            return stored
        cursor = await db.execute(
            "INSERT INTO memories (id, owner, category, content, context, confidence,"
            " created_at, last_accessed, access_count, content_key)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
            (memory_id, owner, op.category, op.content, op.context, op.confidence, now, now, key),
        )
        assert cursor.lastrowid is not None
        await self._keep_vector(db, cursor.lastrowid, vector, moved)
        await _record_change(db, "stored", memory_id, owner)
        return stored

    async def _keep_vector(
        self, db: aiosqlite.Connection, seq: int, vector: bytes | None, moved: Moved
    ) -> None:
        """Store (or, with None, drop) a memory's vector, and note it in ``moved``."""
        await db.execute("DELETE FROM embeddings WHERE seq = ?", (seq,))
        if vector is not None and self.ranking.embedder is not None:
            await db.execute(
                "INSERT INTO embeddings (seq, model, vector) VALUES (?, ?, ?)",
                (seq, self.ranking.embedder.name, vector),
            )
        moved[seq] = vector

    async def _update(
        self, db: aiosqlite.Connection, owner: str, op: UpdateMemory, moved: Moved
    ) -> Memory:
        changes = op.changes()
        if op.content is not None:
            changes["content_key"] = content_key(op.content)
        assignments = ", ".join(f"{name} = ?" for name in changes)
        cursor = await db.execute(
            f"UPDATE memories SET {assignments} WHERE id = ? AND owner = ?",
            (*changes.values(), op.id, owner),
        )
        if cursor.rowcount == 0:
            raise ItemNotFound(f"no memory {op.id!r}")
        (row,) = await _select(db, "WHERE m.id = ? AND m.owner = ?", (op.id, owner))
        memory = row.memory()
        if op.content is not None or op.context is not None:  # its vector follows its text
            vector = await self.ranking.vector(memory.content, memory.context)
            await self._keep_vector(db, row.seq, vector, moved)
        return memory

    async def _delete(
        self, db: aiosqlite.Connection, owner: str, op: DeleteMemory, moved: Moved
    ) -> Deleted:
        gone = await db.execute_fetchall(
            "DELETE FROM memories WHERE id = ? AND owner = ? RETURNING seq", (op.id, owner)
        )
        if not gone:
            raise ItemNotFound(f"no memory {op.id!r}")
        moved[int(next(iter(gone))[0])] = None  # its vector went with it (ON DELETE CASCADE)
        return Deleted(id=op.id)

    async def _list(
        self, db: aiosqlite.Connection, owner: str, op: ListMemories | RecentMemories
    ) -> list[_Row]:
        where, params = "WHERE m.owner = ?", [owner]
        if isinstance(op, ListMemories):
            where += " AND m.category = ?"
            params.append(op.category)
        order = " ORDER BY m.last_accessed DESC, m.seq DESC LIMIT ?"
        return await _select(db, where + order, (*params, op.limit))

    async def _stats(self, db: aiosqlite.Connection, owner: str) -> MemoryStats:
        (row,) = await db.execute_fetchall(
            "SELECT COUNT(*), AVG(confidence), MIN(created_at), MAX(created_at)"
            " FROM memories WHERE owner = ?",
            (owner,),
        )
        by_category = await db.execute_fetchall(
            "SELECT category, COUNT(*) FROM memories WHERE owner = ? GROUP BY category",
            (owner,),
        )
        counts = {str(category): int(n) for category, n in by_category}
        total, average, oldest, newest = row
        return MemoryStats(
            total_memories=int(total),
            category_counts=counts,
            avg_confidence=None if average is None else float(average),
            oldest_memory=None if oldest is None else _datetime(oldest),
            newest_memory=None if newest is None else _datetime(newest),
            search=self.ranking.kind,
        )


async def _record_change(
    db: aiosqlite.Connection, kind: ChangeKind, memory_id: str, owner: str
) -> None:
    await db.execute(
        "INSERT INTO changes (kind, memory_id, owner) VALUES (?, ?, ?)", (kind, memory_id, owner)
    )


async def _earlier(db: aiosqlite.Connection, owner: str, request_id: str) -> Result | None:
    recorded = await requests.earlier_result(db, owner, request_id)
    return None if recorded is None else _results.validate_json(recorded)


class _Row:
    """A selected memory row before it becomes a ``Memory`` (knows its ``seq``)."""

    __slots__ = ("seq", "values")

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = values
        self.seq = int(values[9])

    def memory(self, accessed_at: float | None = None, extra_accesses: int = 0) -> Memory:
        memory_id, owner, category, content, context, confidence, created, accessed, count = (
            self.values[:9]
        )
        return Memory(
            id=memory_id,
            owner=owner,
            category=category,
            content=content,
            context=context,
            confidence=confidence,
            created_at=_datetime(created),
            last_accessed=_datetime(accessed if accessed_at is None else accessed_at),
            access_count=count + extra_accesses,
        )


async def _rows(db: aiosqlite.Connection, sql: str, params: Sequence[Any]) -> list[_Row]:
    # one round trip to aiosqlite's thread, not three (execute, fetch, close)
    return [_Row(tuple(values)) for values in await db.execute_fetchall(sql, tuple(params))]


async def _select(db: aiosqlite.Connection, clause: str, params: Sequence[Any]) -> list[_Row]:
    return await _rows(db, f"SELECT {_COLUMNS} FROM memories m {clause}", params)


def _datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)

"""The long-term ("base") memory store on SQLite, with FTS5 BM25 search.

Like a langgraph ``BaseStore`` backend it has one entry point, ``apply``,
that executes an op for an owner. Writes carrying a request id are applied
once: the id and the result are recorded in the same transaction as the
change, so a retried request (even after a crash) gets the first answer back
instead of a second memory.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import aiosqlite
from pydantic import TypeAdapter

from ..errors import ItemNotFound
from ..ops import (
    WRITE_OPS,
    BaseMemoryOp,
    DeleteMemory,
    GetMemory,
    ListMemories,
    MemoryStatsOp,
    RecentMemories,
    SearchMemories,
    StoreMemory,
    UpdateMemory,
)
from ..records import Deleted, Memory, MemoryList, MemoryStats, Result, Stored
from .connection import Synchronous, Transactions, connect, migrate
from .fts import match_expression
from .longterm_schema import MIGRATIONS

_COLUMNS = (
    "m.id, m.owner, m.category, m.content, m.context, m.confidence,"
    " m.created_at, m.last_accessed, m.access_count, m.seq"
)
_results: TypeAdapter[Result] = TypeAdapter(Result)

REQUEST_MEMORY_SECONDS = 24 * 3600
"""How long a write's request id is remembered for de-duplicating retries."""


class LongTermStore:
    """Long-term memories of many owners in one SQLite file."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._tx = Transactions(db)
        self._writes = 0

    @classmethod
    async def open(cls, path: str | Path, synchronous: Synchronous = "NORMAL") -> LongTermStore:
        """Open (creating or migrating) the store at ``path``."""
        db = await connect(path, synchronous)
        try:
            await migrate(db, MIGRATIONS)
        except BaseException:
            await db.close()
            raise
        store = cls(db)
        await store._forget_old_requests()
        return store

    async def close(self) -> None:
        await self._tx.db.close()

    async def apply(self, owner: str, op: BaseMemoryOp, request_id: str | None = None) -> Result:
        """Execute ``op`` on ``owner``'s memories and return its result."""
        if isinstance(op, WRITE_OPS):
            return await self._write(owner, op, request_id)
        if isinstance(op, MemoryStatsOp):
            async with self._tx.read() as db:
                return await self._stats(db, owner)
        return await self._read_and_touch(owner, op)

    async def _write(self, owner: str, op: BaseMemoryOp, request_id: str | None) -> Result:
        async with self._tx.write() as db:
            if request_id is not None:
                earlier = await self._earlier_result(db, owner, request_id)
                if earlier is not None:
                    return earlier
            if isinstance(op, StoreMemory):
                result: Result = await self._store(db, owner, op)
            elif isinstance(op, UpdateMemory):
                result = await self._update(db, owner, op)
            else:
                assert isinstance(op, DeleteMemory)
                result = await self._delete(db, owner, op)
            if request_id is not None:
                await db.execute(
                    "INSERT INTO applied_requests VALUES (?, ?, ?, ?)",
                    (owner, request_id, result.model_dump_json(), time.time()),
                )
        self._writes += 1
        if self._writes % 1000 == 0:
            await self._forget_old_requests()
        return result

    async def _earlier_result(
        self, db: aiosqlite.Connection, owner: str, request_id: str
    ) -> Result | None:
        async with db.execute(
            "SELECT result FROM applied_requests WHERE owner = ? AND request_id = ?",
            (owner, request_id),
        ) as cursor:
            row = await cursor.fetchone()
        return None if row is None else _results.validate_json(row[0])

    async def _forget_old_requests(self) -> None:
        async with self._tx.write() as db:
            await db.execute(
                "DELETE FROM applied_requests WHERE applied_at < ?",
                (time.time() - REQUEST_MEMORY_SECONDS,),
            )

    async def _store(self, db: aiosqlite.Connection, owner: str, op: StoreMemory) -> Stored:
        memory_id = str(uuid.uuid4())
        now = time.time()
        await db.execute(
            "INSERT INTO memories (id, owner, category, content, context, confidence,"
            " created_at, last_accessed, access_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)",
            (memory_id, owner, op.category, op.content, op.context, op.confidence, now, now),
        )
        return Stored(id=memory_id)

    async def _update(self, db: aiosqlite.Connection, owner: str, op: UpdateMemory) -> Memory:
        changes = op.changes()
        assignments = ", ".join(f"{name} = ?" for name in changes)
        cursor = await db.execute(
            f"UPDATE memories SET {assignments} WHERE id = ? AND owner = ?",
            (*changes.values(), op.id, owner),
        )
        if cursor.rowcount == 0:
            raise ItemNotFound(f"no memory {op.id!r}")
        rows = await _select(db, "WHERE m.id = ? AND m.owner = ?", (op.id, owner))
        return rows[0].memory()

    async def _delete(self, db: aiosqlite.Connection, owner: str, op: DeleteMemory) -> Deleted:
        cursor = await db.execute("DELETE FROM memories WHERE id = ? AND owner = ?", (op.id, owner))
        if cursor.rowcount == 0:
            raise ItemNotFound(f"no memory {op.id!r}")
        return Deleted(id=op.id)

    async def _search(self, db: aiosqlite.Connection, owner: str, op: SearchMemories) -> MemoryList:
        expression = match_expression(op.query)
        if expression is None:
            return MemoryList()
        where = "memories_fts MATCH ? AND m.owner = ?"
        params: list[Any] = [expression, owner]
        if op.category is not None:
            where += " AND m.category = ?"
            params.append(op.category)
        sql = (
            f"SELECT {_COLUMNS} FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid"
            f" WHERE {where}"
            " ORDER BY bm25(memories_fts, 1.0, 0.5), m.confidence DESC, m.last_accessed DESC"
            " LIMIT ?"
        )
        memories = await _rows(db, sql, (*params, op.limit))
        return MemoryList(memories=await self._touch(memories))

    async def _read_and_touch(self, owner: str, op: BaseMemoryOp) -> Memory | MemoryList:
        """Reads that return memories also count an access, in one transaction."""
        async with self._tx.write() as db:
            if isinstance(op, SearchMemories):
                return await self._search(db, owner, op)
            if isinstance(op, GetMemory):
                found = await _select(db, "WHERE m.id = ? AND m.owner = ?", (op.id, owner))
                if not found:
                    raise ItemNotFound(f"no memory {op.id!r}")
                return (await self._touch(found))[0]
            params: tuple[Any, ...]
            if isinstance(op, ListMemories):
                where, params = "WHERE m.owner = ? AND m.category = ?", (owner, op.category)
            else:
                assert isinstance(op, RecentMemories)
                where, params = "WHERE m.owner = ?", (owner,)
            order = " ORDER BY m.last_accessed DESC, m.seq DESC LIMIT ?"
            memories = await _select(db, where + order, (*params, op.limit))
            return MemoryList(memories=await self._touch(memories))

    async def _touch(self, found: Sequence[_Row]) -> list[Memory]:
        """Count an access of each memory returned, as spade_llm does."""
        if not found:
            return []
        now = time.time()
        marks = ",".join("?" * len(found))
        await self._tx.db.execute(
            "UPDATE memories SET access_count = access_count + 1, last_accessed = ?"
            f" WHERE seq IN ({marks})",
            (now, *(row.seq for row in found)),
        )
        return [row.memory(accessed_at=now) for row in found]

    async def _stats(self, db: aiosqlite.Connection, owner: str) -> MemoryStats:
        async with db.execute(
            "SELECT COUNT(*), AVG(confidence), MIN(created_at), MAX(created_at)"
            " FROM memories WHERE owner = ?",
            (owner,),
        ) as cursor:
            row = await cursor.fetchone()
        assert row is not None
        async with db.execute(
            "SELECT category, COUNT(*) FROM memories WHERE owner = ? GROUP BY category",
            (owner,),
        ) as cursor:
            counts = {str(category): int(n) for category, n in await cursor.fetchall()}
        total, average, oldest, newest = row
        return MemoryStats(
            total_memories=int(total),
            category_counts=counts,
            avg_confidence=None if average is None else float(average),
            oldest_memory=None if oldest is None else _datetime(oldest),
            newest_memory=None if newest is None else _datetime(newest),
        )


class _Row:
    """A selected memory row before it becomes a ``Memory`` (knows its ``seq``)."""

    __slots__ = ("seq", "values")

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = values
        self.seq = int(values[9])

    def memory(self, accessed_at: float | None = None) -> Memory:
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
            access_count=count if accessed_at is None else count + 1,
        )


async def _rows(db: aiosqlite.Connection, sql: str, params: Sequence[Any]) -> list[_Row]:
    async with db.execute(sql, tuple(params)) as cursor:
        return [_Row(tuple(values)) for values in await cursor.fetchall()]


async def _select(db: aiosqlite.Connection, clause: str, params: Sequence[Any]) -> list[_Row]:
    return await _rows(db, f"SELECT {_COLUMNS} FROM memories m {clause}", params)


def _datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)

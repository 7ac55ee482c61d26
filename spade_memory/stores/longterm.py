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
from typing import Any

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
from .fts import match_expression
from .longterm_schema import MIGRATIONS

_COLUMNS = (
    "m.id, m.owner, m.category, m.content, m.context, m.confidence,"
    " m.created_at, m.last_accessed, m.access_count, m.seq"
)
_results: TypeAdapter[Result] = TypeAdapter(Result)


class LongTermStore:
    """Long-term memories of many owners in one SQLite file."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._tx = Transactions(db)
        self._requests = requests.RequestLog()
        self._accesses = AccessLog()
        self._flush_timer: asyncio.TimerHandle | None = None
        self._flush_task: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, path: str | Path, synchronous: Synchronous = "NORMAL") -> LongTermStore:
        """Open (creating or migrating) the store at ``path``."""
        store = cls(await open_migrated(path, MIGRATIONS, synchronous))
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
        if not isinstance(op, SearchMemories) and self._accesses:
            await self.flush_accesses()  # the reads below order by last access
        async with self._tx.read() as db:
            if isinstance(op, MemoryStatsOp):
                return await self._stats(db, owner)
            found = await self._find(db, owner, op)
        memories = self._count_access(found)
        return memories[0] if isinstance(op, GetMemory) else MemoryList(memories=memories)

    async def _find(self, db: aiosqlite.Connection, owner: str, op: BaseMemoryOp) -> list[_Row]:
        if isinstance(op, SearchMemories):
            return await self._search(db, owner, op)
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
        async with self._tx.write() as db:
            if isinstance(op, StoreMemory):
                # its result is known before the insert: claim the request id with it
                stored = Stored(id=str(uuid.uuid4()))
                if request_id is not None and not await self._requests.claim(
                    db, owner, request_id, stored.model_dump_json()
                ):
                    earlier = await _earlier(db, owner, request_id)
                    assert earlier is not None  # the claim just collided with it
                    return earlier
                await self._store(db, owner, op, stored.id)
                await _record_change(db, "stored", stored.id, owner)
                result: Result = stored
            else:
                if request_id is not None and (earlier := await _earlier(db, owner, request_id)):
                    return earlier
                if isinstance(op, UpdateMemory):
                    result = await self._update(db, owner, op)
                    await _record_change(db, "updated", op.id, owner)
                else:
                    assert isinstance(op, DeleteMemory)
                    result = await self._delete(db, owner, op)
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
        self, db: aiosqlite.Connection, owner: str, op: StoreMemory, memory_id: str
    ) -> None:
        now = time.time()
        await db.execute(
            "INSERT INTO memories (id, owner, category, content, context, confidence,"
            " created_at, last_accessed, access_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)",
            (memory_id, owner, op.category, op.content, op.context, op.confidence, now, now),
        )

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

    async def _search(self, db: aiosqlite.Connection, owner: str, op: SearchMemories) -> list[_Row]:
        expression = match_expression(op.query)
        if expression is None:
            return []
        where = "memories_fts MATCH ? AND m.owner = ?"
        params: list[Any] = [expression, owner]
        if op.category is not None:
            where += " AND m.category = ?"
            params.append(op.category)
        # ORDER BY rank alone keeps FTS5's fast path (rank is bm25 with column weights)
        sql = (
            f"SELECT {_COLUMNS} FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid"
            f" WHERE {where} ORDER BY rank LIMIT ?"
        )
        return await _rows(db, sql, (*params, op.limit))

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

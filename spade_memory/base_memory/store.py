"""The long-term ("base") memory store on SQLite, with FTS5 BM25 search.

Like a langgraph ``BaseStore`` backend it has one entry point, ``batch``,
that applies a list of ops for an owner in one transaction, each op through
its handler in a dispatch table. Before the transaction, every text the
batch needs embedded (stored contents, search queries) goes to the model in
one call, off the event loop. Writes carrying a request id are applied once:
the id and the result are recorded in the same transaction as the change, so
a retried request (even after a crash) gets the first answer back instead of
a second memory.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite
from pydantic import TypeAdapter

from ..errors import ItemNotFound
from ..ops import AppliesOps, Op, Outcome, Record, Request
from ..storage import requests
from ..storage.batches import apply_all
from ..storage.connection import Synchronous, Transactions, open_migrated
from ..storage.faults import free_bytes
from ..storage.manifest import Manifest
from .access import AccessLog
from .ops import (
    Change,
    ChangeKind,
    ChangeList,
    ChangesSince,
    Deleted,
    DeleteMemory,
    GetMemory,
    ListMemories,
    Memory,
    MemoryList,
    MemoryStats,
    MemoryStatsOp,
    RecentMemories,
    SearchMemories,
    Stored,
    StoreMemory,
    UpdateMemory,
)
from .ranking import Moved, Ranking, embedding_text
from .schema import MIGRATIONS, content_key

if TYPE_CHECKING:
    from .embeddings import Embedder

logger = logging.getLogger("spade_memory.base_memory")
_COLUMNS = (
    "m.id, m.owner, m.category, m.content, m.context, m.confidence,"
    " m.created_at, m.last_accessed, m.access_count, m.seq"
)
_results: TypeAdapter[Stored | Deleted | Memory] = TypeAdapter(Stored | Deleted | Memory)
SEARCH_MODES = ("semantic", "session_recovery", "knowledge_lookup")
KNOWLEDGE = ("fact", "pattern", "capability")
"""The categories ``knowledge_lookup`` searches (preferences are not knowledge)."""


@dataclass
class _Work:
    """What one batch carries through its handlers."""

    owner: str
    vectors: dict[int, Any] = field(default_factory=dict)
    """Embeddings computed before the transaction, by ``id(request)``."""
    moved: Moved = field(default_factory=dict)
    """Vector changes of the ops that succeeded so far (committed with the batch)."""
    current: Moved = field(default_factory=dict)
    """Vector changes of the op being applied (kept only if it succeeds)."""


Handler = Callable[[aiosqlite.Connection, Request, _Work], Awaitable[Record]]


class LongTermStore(AppliesOps):
    """Long-term memories of many owners in one SQLite file."""

    def __init__(
        self,
        db: aiosqlite.Connection,
        embedder: Embedder | None = None,
        *,
        path: Path | None = None,
        manifest: Manifest | None = None,
    ) -> None:
        self._tx = Transactions(db, path, manifest)
        self.ranking = Ranking(embedder)
        self._requests = requests.RequestLog()
        self._accesses = AccessLog()
        self._flush_timer: asyncio.TimerHandle | None = None
        self._flush_task: asyncio.Task[None] | None = None
        self._handlers: dict[type[Op[Any]], Handler] = {
            StoreMemory: self._store,
            GetMemory: self._get,
            SearchMemories: self._search,
            ListMemories: self._list,
            RecentMemories: self._list,
            UpdateMemory: self._update,
            DeleteMemory: self._delete,
            MemoryStatsOp: self._stats,
            ChangesSince: self._changes_since,
        }

    @classmethod
    async def open(
        cls,
        path: str | Path,
        synchronous: Synchronous = "NORMAL",
        embedder: Embedder | None = None,
        manifest: Manifest | None = None,
    ) -> LongTermStore:
        """Open (creating or migrating) the store at ``path``; an embedder adds dense search.

        Returns the open store; raises ``StoreFault`` naming the file when it is
        damaged, lost (held more, says ``manifest``) or cannot be opened.
        """
        db = await open_migrated(path, MIGRATIONS, synchronous, manifest, requests.forget_old)
        return cls(db, embedder, path=Path(path), manifest=manifest)

    async def close(self) -> None:
        """Write pending access counts (if the disk lets it) and close the file, always."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        try:
            if self._flush_task is not None:
                await self._flush_task
            await self.flush_accesses()
        finally:
            await self._tx.close()

    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """Apply the ops of ``requests`` to ``owner``'s memories, in one transaction."""
        work = _Work(owner, vectors=await self._embed(requests))
        if self._accesses and any(
            isinstance(r.op, ListMemories | RecentMemories) for r in requests
        ):
            await self.flush_accesses()  # they order by last access
        outcomes = await apply_all(self._tx, requests, lambda db, r: self._apply_one(db, r, work))
        self.ranking.moved(owner, work.moved)  # committed: the cached vectors follow
        return outcomes

    async def changes_since(self, after: int, limit: int = 500) -> ChangeList:
        """The committed changes after ``after``, oldest first; forgets those up to it."""
        return await self.apply("", ChangesSince(after=after, limit=limit))

    async def flush_accesses(self) -> None:
        """Write the access counts noted by reads (see ``AccessLog``); kept for a later
        try when the file cannot take them (a full disk, a damaged file)."""
        if self._tx.out_of_service is not None:
            return
        try:
            async with self._tx.write() as db:
                await self._accesses.flush(db)
        except (sqlite3.Error, OSError) as error:
            logger.warning("%s: access counts not written yet (%s)", self._tx.path, error)

    async def _apply_one(self, db: aiosqlite.Connection, request: Request, work: _Work) -> Record:
        work.current = {}
        result = await self._handlers[type(request.op)](db, request, work)
        work.moved.update(work.current)
        return result

    async def _embed(self, requests: Sequence[Request]) -> dict[int, Any]:
        """One model call for every text the batch needs embedded, by ``id(request)``."""
        texts: dict[int, str] = {}
        for request in requests:
            op = request.op
            if isinstance(op, StoreMemory):
                texts[id(request)] = embedding_text(op.content, op.context)
            elif isinstance(op, SearchMemories) and op.mode != "session_recovery":
                texts[id(request)] = op.query
        vectors = await self.ranking.embed(list(texts.values()))
        return dict(zip(texts, vectors, strict=True))

    # -- reads ------------------------------------------------------------------------

    async def _get(self, db: aiosqlite.Connection, request: Request, work: _Work) -> Memory:
        assert isinstance(request.op, GetMemory)
        found = await _select(db, "WHERE m.id = ? AND m.owner = ?", (request.op.id, work.owner))
        if not found:
            raise ItemNotFound(f"no memory {request.op.id!r}")
        return self._count_access(found)[0]

    async def _list(self, db: aiosqlite.Connection, request: Request, work: _Work) -> MemoryList:
        op = request.op
        assert isinstance(op, ListMemories | RecentMemories)
        where, params = "WHERE m.owner = ?", [work.owner]
        if isinstance(op, ListMemories):
            where += " AND m.category = ?"
            params.append(op.category)
        order = " ORDER BY m.last_accessed DESC, m.seq DESC LIMIT ?"
        found = await _select(db, where + order, (*params, op.limit))
        return MemoryList(memories=self._count_access(found))

    async def _search(self, db: aiosqlite.Connection, request: Request, work: _Work) -> MemoryList:
        op = request.op
        assert isinstance(op, SearchMemories)
        mode, note = op.mode, None
        if mode not in SEARCH_MODES:
            mode, note = "semantic", f"unknown mode {op.mode!r}; answered as semantic"
        if mode == "session_recovery":
            found = await _newest(db, work.owner, op)
        else:
            categories: list[str] | None = None if op.category is None else [op.category]
            if mode == "knowledge_lookup":
                categories = [c for c in KNOWLEDGE if op.category in (None, c)]
            seqs = await self.ranking.rank(
                db, work.owner, op.query, categories, op.limit,
                work.vectors.get(id(request)), work.moved,
            )  # fmt: skip
            rows = await _select(db, f"WHERE m.seq IN ({', '.join('?' * len(seqs))})", seqs)
            by_seq = {row.seq: row for row in rows}
            found = [by_seq[seq] for seq in seqs if seq in by_seq]
        return MemoryList(memories=self._count_access(found), mode=mode, note=note)

    async def _stats(self, db: aiosqlite.Connection, _request: Request, work: _Work) -> MemoryStats:
        (row,) = await db.execute_fetchall(
            "SELECT COUNT(*), AVG(confidence), MIN(created_at), MAX(created_at)"
            " FROM memories WHERE owner = ?",
            (work.owner,),
        )
        by_category = await db.execute_fetchall(
            "SELECT category, COUNT(*) FROM memories WHERE owner = ? GROUP BY category",
            (work.owner,),
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
            free_disk_bytes=free_bytes(self._tx.path),
        )

    async def _changes_since(
        self, db: aiosqlite.Connection, request: Request, _work: _Work
    ) -> ChangeList:
        op = request.op
        assert isinstance(op, ChangesSince)
        await db.execute("DELETE FROM changes WHERE seq <= ?", (op.after,))
        rows = await db.execute_fetchall(
            f"SELECT c.seq, c.kind, c.memory_id, c.owner, {_COLUMNS} FROM changes c"
            " LEFT JOIN memories m ON m.id = c.memory_id"
            " WHERE c.seq > ? ORDER BY c.seq LIMIT ?",
            (op.after, op.limit),
        )
        newest = await db.execute_fetchall("SELECT seq FROM sqlite_sequence WHERE name = 'changes'")
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

    # -- writes -----------------------------------------------------------------------

    async def _store(self, db: aiosqlite.Connection, request: Request, work: _Work) -> Record:
        """A new memory, or the owner's same memory (same category and content) reinforced."""
        op, owner = request.op, work.owner
        assert isinstance(op, StoreMemory)
        key, now = content_key(op.content), time.time()
        same = await db.execute_fetchall(
            "SELECT id FROM memories WHERE owner = ? AND category = ? AND content_key = ? LIMIT 1",
            (owner, op.category, key),
        )
        memory_id = str(next(iter(same))[0]) if same else str(uuid.uuid4())
        stored = Stored(id=memory_id, deduplicated=bool(same))
        # the result is known before any change: claim the request id with it
        if not await self._requests.claim(db, owner, request.id, stored):
            earlier = await requests.earlier(db, owner, request.id, _results.validate_json)
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
        await self._keep_vector(db, cursor.lastrowid, work.vectors.get(id(request)), work)
        await _record_change(db, "stored", memory_id, owner)
        return stored

    async def _update(self, db: aiosqlite.Connection, request: Request, work: _Work) -> Record:
        op, owner = request.op, work.owner
        assert isinstance(op, UpdateMemory)
        if earlier := await requests.earlier(db, owner, request.id, _results.validate_json):
            return earlier
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
            (vector,) = await self.ranking.embed([embedding_text(memory.content, memory.context)])
            await self._keep_vector(db, row.seq, vector, work)
        await _record_change(db, "updated", op.id, owner)
        await self._requests.claim(db, owner, request.id, memory)
        return memory

    async def _delete(self, db: aiosqlite.Connection, request: Request, work: _Work) -> Record:
        op, owner = request.op, work.owner
        assert isinstance(op, DeleteMemory)
        if earlier := await requests.earlier(db, owner, request.id, _results.validate_json):
            return earlier
        gone = await db.execute_fetchall(
            "DELETE FROM memories WHERE id = ? AND owner = ? RETURNING seq", (op.id, owner)
        )
        if not gone:
            raise ItemNotFound(f"no memory {op.id!r}")
        work.current[int(next(iter(gone))[0])] = None  # its vector went with it (CASCADE)
        await _record_change(db, "deleted", op.id, owner)
        deleted = Deleted(id=op.id)
        await self._requests.claim(db, owner, request.id, deleted)
        return deleted

    async def _keep_vector(
        self, db: aiosqlite.Connection, seq: int, vector: Any, work: _Work
    ) -> None:
        """Store (or, with None, drop) a memory's vector, and note it in ``work.current``."""
        await db.execute("DELETE FROM embeddings WHERE seq = ?", (seq,))
        blob = None
        if vector is not None and self.ranking.embedder is not None:
            blob = self.ranking.blob(vector)
            await db.execute(
                "INSERT INTO embeddings (seq, model, vector) VALUES (?, ?, ?)",
                (seq, self.ranking.embedder.name, blob),
            )
        work.current[seq] = blob


async def _record_change(
    db: aiosqlite.Connection, kind: ChangeKind, memory_id: str, owner: str
) -> None:
    await db.execute(
        "INSERT INTO changes (kind, memory_id, owner) VALUES (?, ?, ?)", (kind, memory_id, owner)
    )


async def _newest(db: aiosqlite.Connection, owner: str, op: SearchMemories) -> list[_Row]:
    """``session_recovery``: what the owner stored most recently, newest first."""
    where, params = "WHERE m.owner = ?", [owner]
    if op.category is not None:
        where += " AND m.category = ?"
        params.append(op.category)
    order = " ORDER BY m.created_at DESC, m.seq DESC LIMIT ?"
    return await _select(db, where + order, (*params, op.limit))


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


async def _select(db: aiosqlite.Connection, clause: str, params: Sequence[Any]) -> list[_Row]:
    # one round trip to aiosqlite's thread, not three (execute, fetch, close)
    rows = await db.execute_fetchall(f"SELECT {_COLUMNS} FROM memories m {clause}", tuple(params))
    return [_Row(tuple(values)) for values in rows]


def _datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)

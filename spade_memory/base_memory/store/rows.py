"""Memory rows as the long-term store reads them: the columns it selects, a row
before it becomes a ``Memory``, and the reads shared by several handlers."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from spade_memory.base_memory.store.filters import Selection
from spade_memory.protocol.memories import Memory
from spade_memory.protocol.ops import PERSONAL
from spade_memory.storage.connection import Database

COLUMNS = (
    "m.id, m.owner, m.category, m.content, m.context, m.confidence,"
    " m.created_at, m.last_accessed, m.access_count, m.seq, m.space,"
    " m.tags, m.metadata, m.source, m.work_items, m.expires_at, m.version"
)


async def newest(db: Database, keys: Sequence[str], selection: Selection, limit: int) -> list[Row]:
    """``session_recovery``: what was stored most recently in the spaces, newest first."""
    where = f"WHERE m.space IN ({', '.join('?' * len(keys))}) AND {selection.sql}"
    order = " ORDER BY m.created_at DESC, m.seq DESC LIMIT ?"
    return await select(db, where + order, (*keys, *selection.params, limit))


class Row:
    """A selected memory row before it becomes a ``Memory`` (knows its ``seq``)."""

    __slots__ = ("seq", "values")

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = values
        self.seq = int(values[9])

    def memory(
        self,
        names: Mapping[str, str] | None = None,
        accessed_at: float | None = None,
        extra_accesses: int = 0,
        score: float | None = None,
    ) -> Memory:
        """The memory, its space named by ``names`` (space key → name; a personal
        space's key, its author's JID, is ``personal``; anything else stays the key)."""
        memory_id, owner, category, content, context, confidence, created, accessed, count = (
            self.values[:9]
        )
        key, tags, metadata, source, work_items, expires_at, version = self.values[10:17]
        space = (names or {}).get(key) or (PERSONAL if key == owner else str(key))
        return Memory(
            id=memory_id,
            owner=owner,
            space=space,
            author=owner,
            category=category,
            content=content,
            context=context,
            confidence=confidence,
            created_at=as_datetime(created),
            last_accessed=as_datetime(accessed if accessed_at is None else accessed_at),
            access_count=count + extra_accesses,
            tags=json.loads(tags) if tags else [],
            metadata=json.loads(metadata) if metadata else {},
            source=source,
            work_items=json.loads(work_items) if work_items else [],
            expires_at=None if expires_at is None else as_datetime(expires_at),
            version=version,
            score=score,
        )


async def select(db: Database, clause: str, params: Sequence[Any]) -> list[Row]:
    # one round trip to the database's thread, not three (execute, fetch, close)
    rows = await db.execute_fetchall(f"SELECT {COLUMNS} FROM memories m {clause}", tuple(params))
    return [Row(tuple(values)) for values in rows]


def as_datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)

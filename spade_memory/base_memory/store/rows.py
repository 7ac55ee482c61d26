"""Memory rows as the long-term store reads them: the columns it selects, a row
before it becomes a ``Memory``, and the reads shared by several handlers."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple

from spade_memory.base_memory.store.filters import Selection
from spade_memory.protocol.memories import Memory
from spade_memory.protocol.ops import PERSONAL
from spade_memory.storage.connection import Database
from spade_memory.storage.statements import placeholders

COLUMNS = (
    "m.id, m.owner, m.category, m.content, m.context, m.confidence,"
    " m.created_at, m.last_accessed, m.access_count, m.seq, m.space,"
    " m.tags, m.metadata, m.source, m.work_items, m.expires_at, m.version,"
    " m.valid_from, m.valid_to, m.supersedes, m.superseded_by"
)


async def newest(
    db: Database, keys: Sequence[str], selection: Selection, limit: int, offset: int = 0
) -> list[Row]:
    """``session_recovery``: what was stored most recently in the spaces, newest first."""
    where = f"WHERE m.space IN ({placeholders(keys)}) AND {selection.sql}"
    order = " ORDER BY m.created_at DESC, m.seq DESC LIMIT ? OFFSET ?"
    return await select(db, where + order, (*keys, *selection.params, limit, offset))


class Row(NamedTuple):
    """A selected memory row (``COLUMNS``, in order) before it becomes a ``Memory``."""

    id: str
    owner: str
    """Its author."""
    category: str
    content: str
    context: str | None
    confidence: float
    created_at: float
    last_accessed: float
    access_count: int
    seq: int
    space: str
    """Its space's key."""
    tags: str | None
    metadata: str | None
    source: str | None
    work_items: str | None
    expires_at: float | None
    version: int
    valid_from: float | None
    valid_to: float | None
    supersedes: str | None
    superseded_by: str | None

    def memory(
        self,
        names: Mapping[str, str] | None = None,
        accessed_at: float | None = None,
        extra_accesses: int = 0,
        score: float | None = None,
    ) -> Memory:
        """The memory, its space named by ``names`` (space key → name; a personal
        space's key, its author's JID, is ``personal``; anything else stays the key)."""
        key, owner = self.space, self.owner
        space = (names or {}).get(key) or (PERSONAL if key == owner else str(key))
        accessed = self.last_accessed if accessed_at is None else accessed_at
        return Memory(
            id=self.id,
            owner=owner,
            space=space,
            author=owner,
            category=self.category,
            content=self.content,
            context=self.context,
            confidence=self.confidence,
            created_at=as_datetime(self.created_at),
            last_accessed=as_datetime(accessed),
            access_count=self.access_count + extra_accesses,
            tags=json.loads(self.tags) if self.tags else [],
            metadata=json.loads(self.metadata) if self.metadata else {},
            source=self.source,
            work_items=json.loads(self.work_items) if self.work_items else [],
            expires_at=None if self.expires_at is None else as_datetime(self.expires_at),
            version=self.version,
            score=score,
            valid_from=None if self.valid_from is None else as_datetime(self.valid_from),
            valid_to=None if self.valid_to is None else as_datetime(self.valid_to),
            supersedes=self.supersedes,
            superseded_by=self.superseded_by,
        )


async def select(db: Database, clause: str, params: Sequence[Any]) -> list[Row]:
    # one round trip to the database's thread, not three (execute, fetch, close)
    rows = await db.execute_fetchall(f"SELECT {COLUMNS} FROM memories m {clause}", tuple(params))
    return [Row._make(values) for values in rows]


def as_datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)

"""A memory's earlier versions, and what is kept of a deleted one.

An update copies the version it replaces into ``memory_versions`` (with who made that
version and when), in the update's own transaction; at most ``Limits.max_versions``
versions of a memory are kept, the oldest dropped first. A delete removes the memory and
every version of it, and leaves one ``memory_audit`` row: who deleted it, when, and why
— never what it said (beads' "close, do not delete", without keeping what was meant to
be forgotten).
"""

from __future__ import annotations

import json
import time

from spade_memory.base_memory.store import supersede
from spade_memory.base_memory.store.rows import as_datetime
from spade_memory.protocol.memories import Deletion, MemoryHistory, MemoryVersion
from spade_memory.storage.connection import Database

CREATE = (
    """CREATE TABLE memory_versions (
        memory_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        category TEXT NOT NULL,
        content TEXT NOT NULL,
        context TEXT,
        confidence REAL NOT NULL,
        tags TEXT,
        metadata TEXT,
        source TEXT,
        changed_by TEXT NOT NULL,
        changed_at REAL NOT NULL,
        PRIMARY KEY (memory_id, version)
    ) WITHOUT ROWID""",
    """CREATE TABLE memory_audit (
        memory_id TEXT PRIMARY KEY,
        space TEXT NOT NULL,
        deleted_by TEXT NOT NULL,
        deleted_at REAL NOT NULL,
        reason TEXT
    ) WITHOUT ROWID""",
)

_FIELDS = "category, content, context, confidence, tags, metadata, source"
_REPLACED = ", ".join(
    f"{name} = excluded.{name}" for name in (*_FIELDS.split(", "), "changed_by", "changed_at")
)


async def keep_version(db: Database, seq: int, most: int) -> None:
    """Copy the current version of memory ``seq`` before an update replaces it, and drop
    the versions beyond the ``most`` kept (the current one counted)."""
    await db.execute(
        f"INSERT INTO memory_versions (memory_id, version, {_FIELDS},"
        " changed_by, changed_at)"
        f" SELECT id, version, {_FIELDS}, COALESCE(changed_by, owner),"
        " COALESCE(changed_at, created_at) FROM memories WHERE seq = ?"
        f" ON CONFLICT (memory_id, version) DO UPDATE SET {_REPLACED}",
        (seq,),
    )
    await db.execute(
        "DELETE FROM memory_versions WHERE memory_id = (SELECT id FROM memories WHERE seq = ?)"
        " AND version <= (SELECT version FROM memories WHERE seq = ?) + 1 - ?",
        (seq, seq, most),
    )


async def audit_deletion(
    db: Database, memory_id: str, space: str, deleted_by: str, reason: str | None = None
) -> None:
    """Forget every version of a memory being deleted, keeping who deleted it and when."""
    await db.execute("DELETE FROM memory_versions WHERE memory_id = ?", (memory_id,))
    await db.execute(
        "INSERT INTO memory_audit (memory_id, space, deleted_by, deleted_at, reason)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (memory_id) DO UPDATE SET space = excluded.space,"
        " deleted_by = excluded.deleted_by, deleted_at = excluded.deleted_at,"
        " reason = excluded.reason",
        (memory_id, space, deleted_by, time.time(), reason),
    )


async def history_of(db: Database, memory_id: str, space: str) -> MemoryHistory | None:
    """The versions of memory ``memory_id`` of ``space``, oldest first (the current one
    last), or its audit entry once deleted; None when the space never had it."""
    current = await db.execute_fetchall(
        f"SELECT version, {_FIELDS}, COALESCE(changed_by, owner),"
        " COALESCE(changed_at, created_at), valid_from, valid_to FROM memories"
        " WHERE id = ? AND space = ?",
        (memory_id, space),
    )
    if not current:
        audit = await db.execute_fetchall(
            "SELECT deleted_by, deleted_at, reason FROM memory_audit"
            " WHERE memory_id = ? AND space = ?",
            (memory_id, space),
        )
        if not audit:
            return None
        ((by, at, reason),) = audit
        deleted = Deletion(deleted_by=by, deleted_at=as_datetime(at), reason=reason)
        return MemoryHistory(id=memory_id, deleted=deleted)
    earlier = await db.execute_fetchall(
        f"SELECT version, {_FIELDS}, changed_by, changed_at FROM memory_versions"
        " WHERE memory_id = ? ORDER BY version",
        (memory_id,),
    )
    ((*now, valid_from, valid_to),) = current
    versions = [_version(tuple(row)) for row in [*earlier, now]]
    return MemoryHistory(
        id=memory_id, versions=versions, dropped=versions[-1].version - len(versions),
        supersedes=await supersede.chain(db, memory_id, space, "supersedes"),
        superseded_by=await supersede.chain(db, memory_id, space, "superseded_by"),
        merged=[
            str(merged_id)
            for (merged_id,) in await db.execute_fetchall(
                "SELECT id FROM memories WHERE superseded_by = ? AND retired_reason = 'merged'"
                " ORDER BY created_at",
                (memory_id,),
            )
        ],
        valid_from=None if valid_from is None else as_datetime(float(valid_from)),
        valid_to=None if valid_to is None else as_datetime(float(valid_to)),
    )  # fmt: skip


def _version(row: tuple[object, ...]) -> MemoryVersion:
    version, category, content, context, confidence, tags, metadata, source, by, at = row
    return MemoryVersion(
        version=int(str(version)),
        category=str(category),
        content=str(content),
        context=None if context is None else str(context),
        confidence=float(str(confidence)),
        tags=json.loads(str(tags)) if tags else [],
        metadata=json.loads(str(metadata)) if metadata else {},
        source=None if source is None else str(source),
        changed_by=str(by),
        changed_at=as_datetime(float(str(at))),
    )

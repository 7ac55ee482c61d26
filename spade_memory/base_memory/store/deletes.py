"""The long-term store's deletions: one memory, the memories a filter matches, or all
of the sender's; and ``remove``, which every deletion (an expired memory's too) goes
through, so each leaves its audit entry and its change in the feed.
"""

from __future__ import annotations

from typing import Any

from spade_memory.base_memory.store import history, journal, sizes, supersede
from spade_memory.base_memory.store.context import StoreContext
from spade_memory.base_memory.store.effects import Effects
from spade_memory.base_memory.store.rows import Row, select
from spade_memory.base_memory.store.writes import changeable, changed
from spade_memory.protocol.memories import (
    RECORDED,
    AllForgotten,
    Deleted,
    DeleteMemory,
    ForgetAllMemories,
    ForgetMemories,
    MemoriesForgotten,
)
from spade_memory.protocol.ops import Place, Record, Request
from spade_memory.storage import requests
from spade_memory.storage.connection import Database


class Deletes:
    """The delete and forget handlers of one store."""

    def __init__(self, ctx: StoreContext) -> None:
        self.ctx = ctx

    async def delete(self, db: Database, request: Request, work: Effects) -> Record:
        """Returns ``Deleted`` (a request id already applied: its first answer); raises
        as ``writes.changeable``."""
        op, owner = request.op, work.owner
        assert isinstance(op, DeleteMemory)
        log = self.ctx.requests
        if earlier := await log.earlier(db, owner, request.id, RECORDED.validate_json):
            return earlier
        (place,) = request.places_of(owner)
        row = await changeable(db, self.ctx.engine, op.id, place, owner)
        await remove(db, request, work, row, place, graph=self.ctx.graph)
        deleted = Deleted(id=op.id)
        await log.claim(db, owner, request.id, deleted)
        return deleted

    async def forget(self, db: Database, request: Request, work: Effects) -> Record:
        """Count, or delete, the memories of one space that the filters match and that the
        sender may delete. Returns ``MemoriesForgotten`` (a request id already applied:
        its first answer)."""
        op, owner = request.op, work.owner
        assert isinstance(op, ForgetMemories)
        log = self.ctx.requests
        if earlier := await log.earlier(db, owner, request.id, RECORDED.validate_json):
            return earlier
        (place,) = request.places_of(owner)
        chosen = self.ctx.selection(
            op, None if op.category is None else [op.category], current=False
        )
        where = f"WHERE m.space = ? AND {chosen.sql}"
        params: list[Any] = [place.key, *chosen.params]
        if not place.may_change_any:
            where += " AND m.owner = ?"
            params.append(owner)
        rows = await select(db, where + " ORDER BY m.seq", params)
        if not op.dry_run:
            for row in rows:
                await remove(
                    db, request, work, row, place, reason="forgotten", graph=self.ctx.graph
                )
        ids = [str(row.id) for row in rows]
        forgotten = MemoriesForgotten(count=len(rows), dry_run=op.dry_run, ids=ids[:1000])
        if not op.dry_run:
            await log.claim(db, owner, request.id, forgotten)
        return forgotten

    async def forget_all(self, db: Database, request: Request, work: Effects) -> Record:
        """Every memory of the sender's own space, and the answers the ledger keeps for
        the sender (they may carry a memory's text); a dry run counts them. Each
        deletion reaches the feed as ``forgotten``: the beads mirror redacts its issue.
        Returns ``AllForgotten``."""
        op, owner = request.op, work.owner
        assert isinstance(op, ForgetAllMemories)
        (place,) = request.places_of(owner)  # its own: the op names no space
        rows = await select(
            db, "WHERE m.space = ? AND m.owner = ? ORDER BY m.seq", (place.key, owner)
        )
        if not op.dry_run:
            for row in rows:
                await remove(
                    db, request, work, row, place, reason="forgotten", graph=self.ctx.graph
                )
        table = self.ctx.requests.table
        replies = await requests.forget_owner(db, owner, table, dry_run=op.dry_run)
        return AllForgotten(memories=len(rows), replies=replies, dry_run=op.dry_run)


async def remove(
    db: Database,
    request: Request,
    work: Effects,
    row: Row,
    place: Place,
    reason: str | None = None,
    graph: bool = True,
) -> None:
    """Delete the memory of ``row``: its vector, words, versions and links go, its
    usage is given back, its audit entry and its change stay; what it replaced is
    current again (linked in the ``graph``, if the store keeps it) or replaced by its
    successor."""
    gone, size = row.memory(), await sizes.held(db, row.seq)
    await db.execute("DELETE FROM memories WHERE seq = ?", (row.seq,))
    reopened = await supersede.reopen(db, row, graph)
    await db.execute("DELETE FROM memory_links WHERE memory_id = ?", (gone.id,))
    await history.audit_deletion(db, gone.id, place.key, work.owner, reason)
    work.current.gone[row.seq] = place.key  # its vector went (CASCADE)
    await journal.use(db, gone.owner, place, -1, -size)
    await changed(db, request, work, "deleted", gone.id, gone.owner, place, reason)
    for memory_id, author in reopened:
        await changed(db, request, work, "updated", memory_id, author, place)

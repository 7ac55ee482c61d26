"""The long-term store's write handlers: store, import and update (deletions are in
``deletes``), and what every write shares: the memory it may change, its links to
work items, its change recorded.

Each runs inside its batch's transaction. A write carrying a request id claims it
with its result in the same transaction, so a retried request gets its first answer.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from spade_memory.base_memory.facts.frames import subject_key_of
from spade_memory.base_memory.graph import links as graph_links
from spade_memory.base_memory.retrieval.ranking import embedding_text
from spade_memory.base_memory.store import history, journal, sizes, supersede
from spade_memory.base_memory.store import runs as store_runs
from spade_memory.base_memory.store.context import StoreContext
from spade_memory.base_memory.store.effects import Effects
from spade_memory.base_memory.store.engine import Engine
from spade_memory.base_memory.store.imports import ImportMemory
from spade_memory.base_memory.store.rows import Row, select
from spade_memory.base_memory.store.tables import content_key, folded, text_key
from spade_memory.base_memory.work_items import WorkLink
from spade_memory.protocol.errors import Conflict, ItemNotFound, NotAuthorized
from spade_memory.protocol.expiry import expiry_of
from spade_memory.protocol.memories import (
    RECORDED,
    ChangeKind,
    RestoreMemory,
    Stored,
    StoreMemory,
    SupersedeMemory,
    UpdateMemory,
)
from spade_memory.protocol.ops import Place, Record, Request
from spade_memory.protocol.tags import dumps
from spade_memory.protocol.validity import PossibleConflict
from spade_memory.storage.connection import Database


class Writes:
    """The store, import and update handlers of one store."""

    def __init__(self, ctx: StoreContext) -> None:
        self.ctx = ctx

    async def store(
        self, db: Database, request: Request, work: Effects, carried: StoreMemory | None = None
    ) -> Record:
        """A new memory, or the sender's same memory in the space (same category and
        content) reinforced; without a category, the memory is classified first. Another
        member's same memory is left as it is: a store never changes what it did not
        write (the sender's copy is its own memory, which it may change and delete).
        ``carried``: what to store, when the request's op is another that stores (a
        supersede with new text): what the store notes is still the request's.

        Returns ``Stored`` (a request id already applied: its first answer); raises
        ``ResourceConstraint`` over a quota."""
        op, owner = request.op if carried is None else carried, work.owner
        assert isinstance(op, StoreMemory)
        (place,) = request.places_of(owner)
        category, chosen = store_runs.category_of(op)
        now, text = time.time(), folded(op.content)
        dated = op.supersedes is not None or op.valid_from is not None or op.valid_to is not None
        same = None if dated else await self._same(db, place, category, owner, text, now)
        old: Row | None = None
        conflicts: list[PossibleConflict] = []
        if op.supersedes is not None:
            named = await changeable(db, self.ctx.engine, op.supersedes, place, owner)
            old = supersede.named(named)
        elif same is None:
            old, conflicts = await supersede.detect(db, op, place, owner, now)
        memory_id = store_runs.new_id() if same is None else same.id
        work_ids = self.ctx.work_items.ids_in(op.source)
        stored = store_runs.answer(memory_id, same is not None, category, chosen, work_ids)
        if old is not None or conflicts:
            supersedes = None if old is None else old.id
            stored = stored.model_copy(update={"supersedes": supersedes, "conflicts": conflicts})
        # the result is known before any change: claim the request id with it
        log = self.ctx.requests
        if (ledger := work.ledger) is not None:
            if answered := await ledger.earlier(db, owner, request.id, work.store_ids):
                return RECORDED.validate_json(answered)
            ledger.claim(owner, request.id, stored)
        elif not await log.claim(db, owner, request.id, stored):
            earlier = await log.earlier(db, owner, request.id, RECORDED.validate_json)
            assert earlier is not None  # the claim just collided with it
            return earlier
        if same is not None:
            await db.execute(store_runs.REINFORCE, (op.confidence, op.confidence, now, memory_id))
            await changed(db, request, work, "updated", memory_id, same.author, place)
            return stored
        size = sizes.new_memory_bytes(op)
        held = journal.usage_of if work.ledger is None else work.ledger.held
        await journal.check_quota(db, self.ctx.limits, owner, place, 1, size, held)
        start = None if op.valid_from is None else op.valid_from.timestamp()
        if old is not None:
            start = supersede.starts(old, start, now)
        validity = store_runs.Validity(
            start,
            None if op.valid_to is None else op.valid_to.timestamp(),
            None if old is None else old.id,
        )
        await self._insert(
            db, request, work, place, memory_id, category, (now, now, 0), validity, op
        )
        if old is not None:
            await supersede.close(db, old, memory_id, start or now, now)
            await changed(db, request, work, "updated", old.id, old.owner, place)
        return stored

    async def _same(
        self, db: Database, place: Place, category: str, owner: str, text: str, now: float
    ) -> store_runs.Same | None:
        """The sender's current memory of ``place`` a store of ``text`` reinforces (not
        one superseded, past its validity or expired: the same words again are a new
        memory)."""
        return next(
            (
                store_runs.Same(str(memory_id), str(author))
                for memory_id, author, content in await db.execute_fetchall(
                    "SELECT id, owner, content FROM memories"
                    " WHERE space = ? AND category = ? AND content_key = ? AND owner = ?"
                    " AND superseded_by IS NULL AND (valid_to IS NULL OR valid_to > ?)"
                    " AND (expires_at IS NULL OR expires_at > ?)",
                    (place.key, category, text_key(text), owner, now, now),
                )
                if folded(content) == text
            ),
            None,
        )

    async def supersede(self, db: Database, request: Request, work: Effects) -> Record:
        """A new memory replacing the one ``SupersedeMemory`` names (in its category
        unless it names one), or the current memory it names ``by``. Returns ``Stored``
        (the successor's id); raises as ``changeable``, ``ItemNotFound`` for a ``by`` that
        is no current memory of the space, ``NotAuthorized`` for one the sender may not
        change, ``Conflict`` when the old memory was
        superseded already, and ``ResourceConstraint`` over a quota."""
        op, owner = request.op, work.owner
        assert isinstance(op, SupersedeMemory)
        log = self.ctx.requests
        if earlier := await log.earlier(db, owner, request.id, RECORDED.validate_json):
            return earlier
        (place,) = request.places_of(owner)
        old = await changeable(db, self.ctx.engine, op.id, place, owner)
        if op.by is None:
            return await self.store(db, request, work, op.as_store(old.category))
        supersede.named(old)
        now = time.time()
        newer = await supersede.successor(db, op.by, place, owner, now)
        start = supersede.starts(old, newer.valid_from, now)
        self.ctx.dated = True
        await supersede.close(db, old, newer.id, start, now)
        await db.execute(  # the newer starts where the older ends, unless it says when
            "UPDATE memories SET supersedes = COALESCE(supersedes, ?),"
            " valid_from = COALESCE(valid_from, ?) WHERE seq = ?",
            (old.id, start, newer.seq),
        )
        await changed(db, request, work, "updated", newer.id, newer.owner, place)
        await changed(db, request, work, "updated", old.id, old.owner, place)
        stored = Stored(id=newer.id, category=newer.category, supersedes=old.id)
        await log.claim(db, owner, request.id, stored)
        return stored

    async def restore(self, db: Database, request: Request, work: Effects) -> Record:
        """Undo the supersede (or merge) of the memory ``RestoreMemory`` names. Returns
        the ``Memory``, current again (a request id already applied: its first answer);
        raises as ``changeable``, and ``Conflict`` when the memory is current already."""
        op, owner = request.op, work.owner
        assert isinstance(op, RestoreMemory)
        log = self.ctx.requests
        if earlier := await log.earlier(db, owner, request.id, RECORDED.validate_json):
            return earlier
        (place,) = request.places_of(owner)
        old = await changeable(db, self.ctx.engine, op.id, place, owner)
        if old.superseded_by is None:
            raise Conflict(f"memory {op.id!r} was not superseded: there is nothing to restore")
        await history.keep_version(db, old.seq, self.ctx.limits.max_versions)
        newer = await supersede.reinstate(db, old, graph=self.ctx.graph)
        await db.execute(  # its history shows who made it current again, and when
            "UPDATE memories SET version = version + 1, changed_by = ?, changed_at = ?"
            " WHERE seq = ?",
            (owner, time.time(), old.seq),
        )
        await changed(db, request, work, "updated", old.id, old.owner, place)
        if newer is not None:
            (row,) = await select(db, "WHERE m.id = ?", (newer,))
            await changed(db, request, work, "updated", row.id, row.owner, place)
        (row,) = await select(db, "WHERE m.seq = ?", (old.seq,))
        memory = row.memory({place.key: place.name})
        await log.claim(db, owner, request.id, memory)
        return memory

    async def import_memory(self, db: Database, request: Request, work: Effects) -> Record:
        """A memory from a spade_llm file, with its id and times. Returns ``Stored``
        (``deduplicated``: an id already here, left alone)."""
        op, owner = request.op, work.owner
        assert isinstance(op, ImportMemory)
        there = await db.execute_fetchall("SELECT 1 FROM memories WHERE id = ?", (op.id,))
        if there:
            return Stored(id=op.id, deduplicated=True, category=op.category)
        (place,) = request.places_of(owner)
        times = (op.created_at, op.last_accessed, op.access_count)
        await self._insert(db, request, work, place, op.id, op.category, times)
        return Stored(id=op.id, category=op.category)

    async def _insert(
        self,
        db: Database,
        request: Request,
        work: Effects,
        place: Place,
        memory_id: str,
        category: str,
        times: tuple[float, float, int],
        validity: store_runs.Validity = store_runs.OPEN,
        carried: StoreMemory | ImportMemory | None = None,
    ) -> None:
        """Add the memory the op (``StoreMemory`` or ``ImportMemory``; the request's
        unless given) carries, with its category, created and accessed times and access
        count, its validity, and what every new memory needs: its usage counted, its
        words and vector to come, its links to work items, its change recorded."""
        op, owner = request.op if carried is None else carried, work.owner
        assert isinstance(op, StoreMemory | ImportMemory)
        created, accessed, count = times
        described = store_runs.Described()
        work_ids: list[str] = []
        if isinstance(op, StoreMemory):
            work_ids = self.ctx.work_items.ids_in(op.source)
            expires_at = expiry_of(op.ttl_seconds, op.expires_at)
            described = store_runs.described(op, work_ids, expires_at)
            self.ctx.expiring = self.ctx.expiring or expires_at is not None
        if validity != store_runs.OPEN:
            self.ctx.dated = True
        ((seq,),) = await db.execute_fetchall(
            store_runs.INSERT + store_runs.ROW + " RETURNING seq",
            (memory_id, owner, category, op.content, op.context, op.confidence, created,
             accessed, count, content_key(op.content), place.key, *described, *validity,
             subject_key_of(op.content)),
        )  # fmt: skip
        size = sizes.new_memory_bytes(op)
        if work.ledger is not None:
            work.ledger.use(owner, place, 1, size)
        else:
            await journal.use(db, owner, place, 1, size)
        work.current.need[seq] = place.key  # embedded once committed
        work.current.texts[seq] = embedding_text(op.content, op.context)
        work.adding.append((seq, op.content, op.context, place.key))
        if work_ids:
            await link(db, request, work, memory_id, work_ids, place)
        await changed(db, request, work, "stored", memory_id, owner, place)

    async def update(self, db: Database, request: Request, work: Effects) -> Record:
        """Returns the ``Memory`` as ``UpdateMemory`` left it, one version newer (its
        former version kept; a request id already applied: its first answer); raises as
        ``changeable``, and ``ResourceConstraint`` over a quota."""
        op, owner = request.op, work.owner
        assert isinstance(op, UpdateMemory)
        log = self.ctx.requests
        if earlier := await log.earlier(db, owner, request.id, RECORDED.validate_json):
            return earlier
        (place,) = request.places_of(owner)
        row = await changeable(db, self.ctx.engine, op.id, place, owner)
        before = row.memory()
        changes = op.changes()
        if op.content is not None:
            changes["content_key"] = content_key(op.content)
        for name in ("tags", "metadata"):
            if name in changes:
                changes[name] = dumps(changes[name]) if changes[name] else None
        if op.source is not None:
            work_ids = self.ctx.work_items.ids_in(op.source)
            changes["work_items"] = dumps(work_ids) if work_ids else None
            await link(db, request, work, op.id, work_ids, place)
        for name in ("valid_from", "valid_to"):
            if name in changes:
                changes[name] = changes[name].timestamp()  # type: ignore[attr-defined]
                self.ctx.dated = True
        if "valid_to" in changes:
            changes["retired_at"] = time.time()  # learned now that it stops (known_at)
            changes["retired_reason"] = "ended"
        if op.content is not None:
            changes["subject_key"] = subject_key_of(op.content)
        ttl, until = changes.pop("ttl_seconds", None), changes.pop("expires_at", None)
        if ttl is not None or until is not None:
            changes["expires_at"] = expiry_of(ttl, until)  # type: ignore[arg-type]
            self.ctx.expiring = True
        held = await sizes.held(db, row.seq)
        await history.keep_version(db, row.seq, self.ctx.limits.max_versions)
        changes.update(version=before.version + 1, changed_by=owner, changed_at=time.time())
        assignments = ", ".join(f"{name} = ?" for name in changes)
        await db.execute(
            f"UPDATE memories SET {assignments} WHERE seq = ?", (*changes.values(), row.seq)
        )
        # the new texts and the version kept, less the versions dropped: measured once
        # written (an update over the quota raises, and its writes are rolled back)
        grown = await sizes.held(db, row.seq) - held
        await journal.check_quota(db, self.ctx.limits, before.owner, place, 0, grown)
        await journal.use(db, before.owner, place, 0, grown)
        (row,) = await select(db, "WHERE m.seq = ?", (row.seq,))
        memory = row.memory({place.key: place.name})
        if op.content is not None or op.context is not None:  # its vector follows its text
            await db.execute("DELETE FROM embeddings WHERE seq = ?", (row.seq,))
            await graph_links.relink(  # one superseded or merged names nothing (``unlink``)
                db, (row.seq, place.key, memory.content, memory.context),
                self.ctx.graph and row.superseded_by is None,
            )  # fmt: skip
            work.current.need[row.seq] = place.key
            work.current.texts[row.seq] = embedding_text(memory.content, memory.context)
        await changed(db, request, work, "updated", op.id, memory.owner, place)
        await log.claim(db, owner, request.id, memory)
        return memory


async def changeable(
    db: Database, engine: Engine, memory_id: str, place: Place, sender: str
) -> Row:
    """Returns the memory ``sender`` may change: its own, or anyone's where it is an admin.

    On PostgreSQL the row is locked to the commit: another agent changing the same
    memory waits, then sees it as this write left it (gone, or a version newer).

    Raises ``ItemNotFound`` when the place has no such memory and
    ``NotAuthorized`` when another member stored it.
    """
    locked = engine.lock_row
    found = await select(db, f"WHERE m.id = ? AND m.space = ?{locked}", (memory_id, place.key))
    if not found:
        raise ItemNotFound(f"no memory {memory_id!r}")
    if found[0].owner != sender and not place.may_change_any:
        raise NotAuthorized(
            f"memory {memory_id!r} was stored by {found[0].owner}; only its author"
            f" or an admin of {place.name!r} may change it"
        )
    return found[0]


async def link(
    db: Database,
    request: Request,
    work: Effects,
    memory_id: str,
    work_ids: Sequence[str],
    place: Place,
) -> None:
    """Link the memory to the work items ``work_ids`` (its links so far replaced)."""
    await db.execute("DELETE FROM memory_links WHERE memory_id = ?", (memory_id,))
    if not work_ids:
        return
    await db.executemany(
        "INSERT INTO memory_links (work_id, memory_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(work_id, memory_id) for work_id in work_ids],
    )
    work.links.setdefault(id(request), []).extend(
        WorkLink(work_id, memory_id, work.owner, place.key) for work_id in work_ids
    )


async def changed(
    db: Database,
    request: Request,
    work: Effects,
    kind: ChangeKind,
    memory_id: str,
    author: str,
    place: Place,
    reason: str | None = None,
) -> None:
    """Record a committed write; in a shared space, keep its event (with the memory as
    it is now) for the subscribers, should the request succeed."""
    if work.ledger is not None and place.personal and reason is None:
        work.ledger.change(kind, memory_id, work.owner, author)
        return
    event = await journal.record(
        db, kind, memory_id, actor=work.owner, author=author, place=place, reason=reason
    )
    if event is None:
        return
    memory = None
    if kind != "deleted":
        (row,) = await select(db, "WHERE m.id = ?", (memory_id,))
        memory = row.memory({place.key: place.name})
    event = dataclasses.replace(event, name=place.name, memory=memory)
    work.events.setdefault(id(request), []).append(event)

"""The long-term ("base") memory store on SQLite, with FTS5 BM25 search.

Like a langgraph ``BaseStore`` backend it has one entry point, ``batch``,
that applies a list of ops for an owner in one transaction, each op through
its handler in a dispatch table. Before the transaction, the batch's search
queries go to the model in one call, off the event loop; a stored or changed
text is embedded after its commit (``backfill``), so a write never waits for
the model. Writes carrying a request id are applied once:
the id and the result are recorded in the same transaction as the change, so
a retried request (even after a crash) gets the first answer back instead of
a second memory.

The store runs on a SQLite file (the default: ``open(path)``) or on a PostgreSQL
database (``open("postgresql://…")``, see ``pg_schema``) with the same statements;
the few that differ are its ``engine``'s.

Each request acts on the places its service checked (``Request.places``: the
sender's personal space when none are given). A memory's row carries its
space's key and its author; every write leaves its trace in the ``journal``
(change feed, a shared space's journal, usage against the quotas) in the same
transaction, and a shared space's committed writes reach its ``listeners``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade_memory.base_memory.classify.classifier import classify
from spade_memory.base_memory.retrieval import pgvector
from spade_memory.base_memory.retrieval.backfill import VectorBackfill
from spade_memory.base_memory.retrieval.ranking import QueryVector, Ranking, embedding_text
from spade_memory.base_memory.retrieval.vector_notices import VectorNotices
from spade_memory.base_memory.store import filters, history, journal, sizes, words
from spade_memory.base_memory.store import pg_tables as pg_schema
from spade_memory.base_memory.store import runs as store_runs
from spade_memory.base_memory.store.access_counts import AccessLog
from spade_memory.base_memory.store.effects import BatchWork
from spade_memory.base_memory.store.engine import engine_of
from spade_memory.base_memory.store.imports import ImportMemory
from spade_memory.base_memory.store.ledger import Ledger
from spade_memory.base_memory.store.listeners import Listeners
from spade_memory.base_memory.store.rows import COLUMNS, Row, as_datetime, newest, select
from spade_memory.base_memory.store.tables import MIGRATIONS, content_key, folded, text_key
from spade_memory.base_memory.work_items import WorkItems, WorkLink
from spade_memory.protocol.errors import ItemNotFound, MemoryServiceError, NotAuthorized
from spade_memory.protocol.expiry import PURGE_EVERY_SECONDS, expiry_of
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import (
    RECORDED,
    AllForgotten,
    Change,
    ChangeKind,
    ChangeList,
    ChangesSince,
    Deleted,
    DeleteMemory,
    Filtered,
    ForgetAllMemories,
    ForgetMemories,
    GetMemory,
    ListMemories,
    MemoriesForgotten,
    Memory,
    MemoryHistory,
    MemoryHistoryOp,
    MemoryList,
    MemoryRefs,
    MemoryStats,
    MemoryStatsOp,
    Reasoning,
    RecentMemories,
    SearchMemories,
    Stored,
    StoreMemory,
    UpdateMemory,
)
from spade_memory.protocol.ops import PERSONAL, AppliesOps, Op, Outcome, Place, Record, Request
from spade_memory.protocol.tags import dumps
from spade_memory.storage import requests
from spade_memory.storage.batches import Together, apply_all
from spade_memory.storage.connection import Database, Synchronous, Transacting, Transactions
from spade_memory.storage.engines import open_transactions
from spade_memory.storage.faults import free_bytes, store_errors
from spade_memory.storage.manifest import Manifest
from spade_memory.storage.postgres import PgTransactions
from spade_memory.storage.purging import purge_now_and_then

if TYPE_CHECKING:
    from spade_memory.base_memory.retrieval.embeddings import Embedder

logger = logging.getLogger("spade_memory.base_memory")
EXPIRY = "expiry"
"""Who the audit and the change feed name as deleting an expired memory."""
SEARCH_MODES = ("semantic", "session_recovery", "knowledge_lookup")
KNOWLEDGE = ("fact", "pattern", "capability")
"""The categories ``knowledge_lookup`` searches (preferences are not knowledge)."""


Handler = Callable[[Database, Request, BatchWork], Awaitable[Record]]


async def _settle(db: Database, work: BatchWork, following: Request | None) -> None:
    """The batch's new memories into the word index, and its stores' bookkeeping rows,
    before the commit (``following`` None) and before an op other than a store into
    the sender's personal space: it may read or change them, or (a store into a shared
    space) record a change that must come after theirs in the feed."""
    if (
        following is not None
        and isinstance(following.op, StoreMemory)
        and all(place.personal for place in following.places_of(work.owner))
    ):
        return
    await words.index(db, work.unindexed)
    if work.ledger is not None:
        await work.ledger.write(db)


class LongTermStore(AppliesOps):
    """Long-term memories of many owners and spaces in one SQLite file or one
    PostgreSQL database."""

    def __init__(
        self,
        tx: Transactions | PgTransactions,
        embedder: Embedder | None = None,
        *,
        limits: Limits | None = None,
        work_items: WorkItems | None = None,
        listeners: Listeners | None = None,
        purge_every: float = PURGE_EVERY_SECONDS,
    ) -> None:
        self._tx: Transacting = tx
        self.engine = engine_of(tx)
        """Which engine holds the store, and its few differing SQL fragments."""
        self.path: Path | None = None if isinstance(tx, PgTransactions) else tx.path
        """The SQLite file (None on PostgreSQL)."""
        # a large space's vectors are read in the background from the SQLite file
        self.ranking = Ranking(embedder, self.path)
        self._backfill = None if embedder is None else VectorBackfill(self._tx, self.ranking)
        self._notices: VectorNotices | None = None
        """Other agents' vectors, on a shared database searched by the agents themselves
        (None: this agent writes alone, or the database searches them; set at open)."""
        self.limits = limits or Limits()
        """Its quotas (memories and bytes per author and per shared space)."""
        self.work_items = work_items or WorkItems()
        """How work-item ids are found in a memory's ``source``, and who hears of links."""
        listeners = listeners or Listeners()
        if listeners.links is None:
            listeners = dataclasses.replace(listeners, links=self.work_items.notify)
        self._listeners = listeners
        self.expiring = True
        """Whether some memory may have an expiry (reads then check it; set at open)."""
        self.purge_every = purge_every
        """Seconds between two purges of expired memories."""
        self._purge_task: asyncio.Task[None] | None = None
        self._warm: asyncio.Future[Any] | None = None
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
            ImportMemory: self._import,
            ForgetMemories: self._forget,
            ForgetAllMemories: self._forget_all,
            MemoryHistoryOp: self._history,
            MemoryRefs: self._refs,
        }

    @classmethod
    async def open(
        cls,
        path: str | Path,
        synchronous: Synchronous = "NORMAL",
        embedder: Embedder | None = None,
        manifest: Manifest | None = None,
        limits: Limits | None = None,
        work_items: WorkItems | None = None,
        *,
        listeners: Listeners | None = None,
        purge_every: float = PURGE_EVERY_SECONDS,
    ) -> LongTermStore:
        """Open (creating or migrating) the store at ``path``: a SQLite file, or a
        ``postgresql://`` URL (``synchronous`` and ``manifest`` are then the server's
        business). An embedder adds dense search; ``listeners`` are told of what it
        commits; expired memories are purged every ``purge_every`` seconds.

        Returns the open store; raises ``StoreFault`` naming the file (or the server)
        when it is damaged, lost (held more, says ``manifest``), unreachable or cannot
        be opened.
        """
        tx = await open_transactions(
            path, MIGRATIONS, pg_schema.STORE, pg_schema.MIGRATIONS, synchronous, manifest,
            _forget_old,
        )  # fmt: skip
        store = cls(
            tx, embedder, limits=limits, work_items=work_items, listeners=listeners,
            purge_every=purge_every,
        )  # fmt: skip
        try:
            async with tx.write() as db:
                expiring = await db.execute_fetchall(
                    "SELECT 1 FROM memories WHERE expires_at IS NOT NULL LIMIT 1"
                )
            # on a shared database another agent may store an expiring memory at any time
            store.expiring = bool(expiring) or not store.engine.single_writer
            if isinstance(tx, PgTransactions) and embedder is not None:
                store.ranking.in_database = await pgvector.prepare(tx, embedder)
                if store.ranking.in_database is None:
                    store._notices = VectorNotices(tx.url, store.ranking)
                    await store._notices.start()  # before the first index is read
            if store._backfill is not None:
                await store._backfill.start()
        except BaseException:
            await store.close()
            raise
        store._purge_task = asyncio.create_task(
            purge_now_and_then(store._purge_all, lambda: store.purge_every, store._tx.path)
        )
        # the classifier trains once: in a thread now, not in a first store
        store._warm = asyncio.get_running_loop().run_in_executor(None, classify, "warm up")
        return store

    async def embedded(self) -> None:
        """Return once every committed memory has its vector (at once without a model)."""
        if self._backfill is not None:
            await self._backfill.drained()

    async def close(self) -> None:
        """Write pending access counts (if the disk lets it) and close the file, always."""
        if self._purge_task is not None:
            self._purge_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._purge_task
            self._purge_task = None
        if self._backfill is not None:
            await self._backfill.close()
        if self._notices is not None:
            await self._notices.close()
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
        """Apply the ops of ``requests`` for ``owner`` (the sender), in one transaction."""
        work = BatchWork(owner, queries=await self._embed_queries(owner, requests))
        if self.engine.single_writer and len(requests) > 1:
            work.ledger = Ledger(self._requests)
            work.store_ids = [
                r.id for r in requests if isinstance(r.op, StoreMemory) and r.id is not None
            ]
        if self._accesses and any(
            isinstance(r.op, ListMemories | RecentMemories) for r in requests
        ):
            await self.flush_accesses()  # they order by last access
        outcomes = await apply_all(
            self._tx,
            requests,
            lambda db, r: self._apply_one(db, r, work),
            inline=True,
            settle=lambda db, following: _settle(db, work, following),
            together=None if work.ledger is None else self._stores_together(work),
        )
        # no await from here to the notes below: the next batch cannot start before them
        self._schedule_flush()
        if all(isinstance(outcome, MemoryServiceError) for outcome in outcomes):
            return outcomes  # nothing was committed (the transaction itself may have failed)
        for seq, space in work.vectors.gone.items():  # committed: the cached vectors follow
            self.ranking.removed(space, [seq])
        for seq, space in work.vectors.need.items():
            self.ranking.removed(space, [seq])  # a changed text's vector went
        if self._backfill is not None:
            self._backfill.note(work.vectors.need, work.vectors.texts)
        events = [
            event
            for request, outcome in zip(requests, outcomes, strict=True)
            if not isinstance(outcome, MemoryServiceError)
            for event in work.events.get(id(request), [])
        ]
        if events and self._listeners.events is not None:
            self._listeners.events(events)
        links = [
            link
            for request, outcome in zip(requests, outcomes, strict=True)
            if not isinstance(outcome, MemoryServiceError)
            for link in work.links.get(id(request), [])
        ]
        if links and self._listeners.links is not None:
            self._listeners.links(links)
        return outcomes

    async def purge_expired(self) -> int:
        """Delete every memory whose time ran out (reads hid it already): each deletion
        reaches the change feed with the reason ``expired`` (the beads mirror closes its
        issue) and leaves its audit entry. Returns how many went."""
        if not self.expiring or self._tx.out_of_service is not None:
            return 0
        work = BatchWork(EXPIRY)
        async with self._tx.write() as db:
            rows = await select(
                db, "WHERE m.expires_at IS NOT NULL AND m.expires_at <= ? LIMIT 1000"
                + self.engine.skip_locked,  # another agent's purge takes the others
                (time.time(),),
            )  # fmt: skip
            for row in rows:
                key, author = str(row.space), str(row.owner)
                place = Place(key, name=PERSONAL if key == author else key)
                request = Request(DeleteMemory(id=str(row.id)))
                await self._remove(db, request, work, row, place, reason="expired")
        for seq, space in work.current.gone.items():
            self.ranking.removed(space, [seq])
        events = [event for events in work.events.values() for event in events]
        if events and self._listeners.events is not None:
            self._listeners.events(events)
        if rows and self._listeners.purged is not None:
            self._listeners.purged()
        return len(rows)

    async def _purge_all(self) -> None:
        """Purge what expired, a thousand memories per transaction."""
        while await self.purge_expired() >= 1000:
            pass

    async def changes_since(self, after: int, limit: int = 500) -> ChangeList:
        """The committed changes after ``after``, oldest first; forgets those up to it."""
        return await self.apply("", ChangesSince(after=after, limit=limit))

    async def purge_space(self, key: str) -> int:
        """Delete every memory of the shared space ``key`` (the space is being deleted):
        each deletion reaches the change feed, the space's usage, journal and kept versions
        go, and its authors' usage gives back what it held. Returns how many memories went."""
        async with self._tx.write() as db:
            authors = await sizes.held_in_space(db, key)
            await db.execute(
                "DELETE FROM memory_versions WHERE memory_id IN"
                " (SELECT id FROM memories WHERE space = ?)",
                (key,),
            )
            gone = list(
                await db.execute_fetchall(
                    "DELETE FROM memories WHERE space = ? RETURNING id, owner", (key,)
                )
            )
            place = Place(key, name=key)  # its journal goes below: the mirror's feed stays
            for memory_id, author in gone:
                await journal.record(
                    db, "deleted", str(memory_id), actor=str(author), author=str(author),
                    place=place,
                )  # fmt: skip
            await journal.forget_space(db, key, authors)
        self.ranking.forget(key)
        return len(gone)

    async def newest_event(self, key: str) -> int:
        """The newest seq of the shared space ``key``'s journal (0 when it has none)."""
        async with self._tx.write() as db:  # between transactions, never inside one
            return await journal.newest_event(db, key)

    async def usage(self, subject: str) -> tuple[int, int]:
        """(memories, bytes) held by ``owner:JID`` or ``space:KEY``."""
        async with self._tx.write() as db:
            return await journal.usage_of(db, subject)

    async def flush_accesses(self) -> None:
        """Write the access counts noted by reads (see ``AccessLog``); kept for a later
        try when the file cannot take them (a full disk, a damaged file)."""
        if self._tx.out_of_service is not None:
            return
        try:
            async with self._tx.write() as db:
                await self._accesses.flush(db)
        except store_errors() as error:
            logger.warning("%s: access counts not written yet (%s)", self._tx.path, error)

    def _stores_together(self, work: BatchWork) -> Together:
        """Runs of plain stores in one pass (``store_runs``)."""

        async def apply(db: Database, run: Sequence[Request]) -> list[Record]:
            work.begin()
            answers = await store_runs.store_run(db, run, work, self.limits)
            work.succeeded()
            self.expiring = self.expiring or any(
                r.op.ttl_seconds is not None or r.op.expires_at is not None  # type: ignore[attr-defined]
                for r in run
            )
            return answers

        return Together(lambda r: store_runs.plain(r, work.owner, self.work_items), apply)

    async def _apply_one(self, db: Database, request: Request, work: BatchWork) -> Record:
        work.begin()
        result = await self._handlers[type(request.op)](db, request, work)
        work.succeeded()
        return result

    async def _embed_queries(
        self, owner: str, requests: Sequence[Request]
    ) -> dict[int, QueryVector | None]:
        """One encoder call for the batch's search queries, by ``id(request)``; meanwhile the
        few memories of the searched spaces still waiting for a vector get theirs."""
        searches = {
            id(request): request
            for request in requests
            if isinstance(request.op, SearchMemories) and request.op.mode != "session_recovery"
        }
        if not searches or self._backfill is None:
            return {}
        spaces = {place.key for r in searches.values() for place in r.places_of(owner)}
        queries = [r.op.query for r in searches.values()]  # type: ignore[attr-defined]
        vectors, _ = await asyncio.gather(
            self.ranking.embed_queries(queries), self._backfill.embed_now(spaces)
        )
        return dict(zip(searches, vectors, strict=True))

    # -- reads ------------------------------------------------------------------------

    def _selection(self, op: Any, categories: Sequence[str] | None = None) -> filters.Selection:
        """What ``op`` selects: live memories, of ``categories``, through its filters."""
        narrowing = op if isinstance(op, Filtered) else None
        return filters.select(
            narrowing, categories, expiring=self.expiring, dialect=self.engine.name
        )

    async def _get(self, db: Database, request: Request, work: BatchWork) -> Memory:
        assert isinstance(request.op, GetMemory)
        (place,) = request.places_of(work.owner)
        live = self._selection(None)
        found = await select(
            db, f"WHERE m.id = ? AND m.space = ? AND {live.sql}",
            (request.op.id, place.key, *live.params),
        )  # fmt: skip
        if not found:
            raise ItemNotFound(f"no memory {request.op.id!r}")
        return self._count_access(found, _names(request, work))[0]

    async def _list(self, db: Database, request: Request, work: BatchWork) -> MemoryList:
        op = request.op
        assert isinstance(op, ListMemories | RecentMemories)
        keys = [place.key for place in request.places_of(work.owner)]
        chosen = self._selection(op, [op.category] if isinstance(op, ListMemories) else None)
        where = f"WHERE m.space IN ({', '.join('?' * len(keys))}) AND {chosen.sql}"
        order = " ORDER BY m.last_accessed DESC, m.seq DESC LIMIT ? OFFSET ?"
        found = await select(db, where + order, (*keys, *chosen.params, op.limit + 1, op.offset))
        more = len(found) > op.limit  # one row past the page says there is another
        return MemoryList(
            memories=self._count_access(found[: op.limit], _names(request, work)),
            next_offset=op.offset + op.limit if more else None,
        )

    async def _search(self, db: Database, request: Request, work: BatchWork) -> MemoryList:
        op = request.op
        assert isinstance(op, SearchMemories)
        keys = [place.key for place in request.places_of(work.owner)]
        mode, note = op.mode, None
        if mode not in SEARCH_MODES:
            mode, note = "semantic", f"unknown mode {op.mode!r}; answered as semantic"
        categories: list[str] | None = None if op.category is None else [op.category]
        if mode == "knowledge_lookup":
            categories = [c for c in KNOWLEDGE if op.category in (None, c)]
        chosen = self._selection(op, categories)
        filtered = op.narrowed() or categories is not None
        if mode == "session_recovery":
            found = await newest(db, keys, chosen, op.limit)
            memories = self._count_access(found, _names(request, work))
            reasoning = Reasoning(
                strategy="recency", dense_available=self.ranking.embedder is not None,
                mode=mode, filtered=filtered, returned=len(memories),
            )  # fmt: skip
            return MemoryList(memories=memories, mode=mode, note=note, reasoning=reasoning)
        ranked = await self.ranking.rank(
            db, keys, op.query, chosen, op.limit,
            work.queries.get(id(request)), work.vectors.stale(),
        )  # fmt: skip
        rows = await _by_seq(db, ranked.seqs)
        by_seq = {row.seq: row for row in rows}
        found = [by_seq[seq] for seq in ranked.seqs if seq in by_seq]
        memories = self._count_access(found, _names(request, work), ranked.scores)
        reasoning = Reasoning(
            strategy="hybrid" if ranked.dense else "bm25",
            dense_available=ranked.dense, mode=mode, word_candidates=ranked.words,
            meaning_candidates=ranked.meanings, filtered=filtered, returned=len(memories),
        )  # fmt: skip
        return MemoryList(memories=memories, mode=mode, note=note, reasoning=reasoning)

    async def _stats(self, db: Database, request: Request, work: BatchWork) -> MemoryStats:
        (place,) = request.places_of(work.owner)
        live = self._selection(None)
        (row,) = await db.execute_fetchall(
            "SELECT COUNT(*), AVG(confidence), MIN(created_at), MAX(created_at)"
            f" FROM memories m WHERE space = ? AND {live.sql}",
            (place.key, *live.params),
        )
        by_category = await db.execute_fetchall(
            f"SELECT category, COUNT(*) FROM memories m WHERE space = ? AND {live.sql}"
            " GROUP BY category",
            (place.key, *live.params),
        )
        counts = {str(category): int(n) for category, n in by_category}
        total, average, oldest, newest = row
        if place.personal:  # what the sender stored anywhere, against its own quota
            subject = f"owner:{work.owner}"
            most, most_bytes = self.limits.max_memories_per_owner, self.limits.max_bytes_per_owner
        else:
            subject = f"space:{place.key}"
            most = place.max_memories or self.limits.max_memories_per_space
            most_bytes = place.max_bytes or self.limits.max_bytes_per_space
        used, used_bytes = await journal.usage_of(db, subject)
        return MemoryStats(
            total_memories=int(total),
            category_counts=counts,
            avg_confidence=None if average is None else float(average),
            oldest_memory=None if oldest is None else as_datetime(oldest),
            newest_memory=None if newest is None else as_datetime(newest),
            search=self.ranking.kind,
            free_disk_bytes=None if self.path is None else free_bytes(self.path),
            space=place.name,
            used_memories=used,
            used_bytes=used_bytes,
            max_memories=most,
            max_bytes=most_bytes,
            waiting_vectors=0 if self._backfill is None else self._backfill.waiting_in(place.key),
            vector_index=self.ranking.kind_of(place.key),
        )

    async def _changes_since(self, db: Database, request: Request, work: BatchWork) -> ChangeList:
        op = request.op
        assert isinstance(op, ChangesSince)
        if op.space is not None:
            (place,) = request.places_of(work.owner)
            return await self._journal(db, place, op.after, op.limit)
        await db.execute("DELETE FROM changes WHERE seq <= ?", (op.after,))
        rows = await db.execute_fetchall(
            f"SELECT c.seq, c.kind, c.memory_id, c.owner, c.space, c.author, c.reason,"
            f" {COLUMNS} FROM changes c LEFT JOIN memories m ON m.id = c.memory_id"
            " WHERE c.seq > ? ORDER BY c.seq LIMIT ?",
            (op.after, op.limit),
        )
        newest = await db.execute_fetchall(self.engine.newest_change)
        changes = []
        for seq, kind, memory_id, owner, space, author, reason, *columns in rows:
            now = Row._make(columns)  # all None: the memory is gone
            memory = None if now.id is None else now.memory()
            change = Change(
                seq=seq, kind=kind, memory_id=memory_id, owner=owner, space=space,
                author=author, reason=reason, memory=memory,
            )  # fmt: skip
            changes.append(change)
        last_seq = int(next((seq for (seq,) in newest), None) or 0)
        return ChangeList(changes=changes, last_seq=last_seq)

    async def _journal(self, db: Database, place: Place, after: int, limit: int) -> ChangeList:
        """A shared space's changes after ``after``, with each memory as it is now."""
        entries, last, complete = await journal.journal(db, place.key, after, limit)
        ids = [entry.memory_id for entry in entries]
        rows = await select(db, f"WHERE m.id IN ({', '.join('?' * len(ids))})", ids) if ids else []
        now = {row.id: row.memory({place.key: place.name}) for row in rows}
        changes = [
            Change(
                seq=entry.seq,
                kind=entry.kind,
                memory_id=entry.memory_id,
                owner=entry.actor,
                space=place.name,
                author=entry.author,
                memory=None if entry.kind == "deleted" else now.get(entry.memory_id),
            )
            for entry in entries
        ]
        return ChangeList(changes=changes, last_seq=last, complete=complete)

    def _count_access(
        self,
        found: Sequence[Row],
        names: Mapping[str, str],
        scores: Mapping[int, float] | None = None,
    ) -> list[Memory]:
        now, pending = self._accesses.note([row.seq for row in found])
        return [
            row.memory(
                names,
                accessed_at=now,
                extra_accesses=pending[row.seq],
                score=None if scores is None else scores[row.seq],
            )
            for row in found
        ]

    def _schedule_flush(self) -> None:
        """Write the noted access counts soon, or at once when many are noted."""
        if len(self._accesses) >= 1000:
            self._start_flush()
        elif self._flush_timer is None and self._accesses:
            loop = asyncio.get_running_loop()
            self._flush_timer = loop.call_later(AccessLog.FLUSH_AFTER_SECONDS, self._start_flush)

    def _start_flush(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.create_task(self.flush_accesses())

    # -- writes -----------------------------------------------------------------------

    async def _store(self, db: Database, request: Request, work: BatchWork) -> Record:
        """A new memory, or the sender's same memory in the space (same category and
        content) reinforced; without a category, the memory is classified first. Another
        member's same memory is left as it is: a store never changes what it did not
        write (the sender's copy is its own memory, which it may change and delete)."""
        op, owner = request.op, work.owner
        assert isinstance(op, StoreMemory)
        (place,) = request.places_of(owner)
        category, chosen = store_runs.category_of(op)
        now, text = time.time(), folded(op.content)
        same = next(
            (
                store_runs.Same(str(memory_id), str(author))
                for memory_id, author, content in await db.execute_fetchall(
                    "SELECT id, owner, content FROM memories"
                    " WHERE space = ? AND category = ? AND content_key = ? AND owner = ?",
                    (place.key, category, text_key(text), owner),
                )
                if folded(content) == text
            ),
            None,
        )
        memory_id = store_runs.new_id() if same is None else same.id
        work_ids = self.work_items.ids_in(op.source)
        stored = store_runs.answer(memory_id, same is not None, category, chosen, work_ids)
        # the result is known before any change: claim the request id with it
        if (ledger := work.ledger) is not None:
            if answered := await ledger.earlier(db, owner, request.id, work.store_ids):
                return RECORDED.validate_json(answered)
            ledger.claim(owner, request.id, stored)
        elif not await self._requests.claim(db, owner, request.id, stored):
            earlier = await self._requests.earlier(db, owner, request.id, RECORDED.validate_json)
            assert earlier is not None  # the claim just collided with it
            return earlier
        if same is not None:
            await db.execute(store_runs.REINFORCE, (op.confidence, op.confidence, now, memory_id))
            await self._changed(db, request, work, "updated", memory_id, same.author, place)
            return stored
        size = sizes.new_memory_bytes(op)
        held = journal.usage_of if work.ledger is None else work.ledger.held
        await journal.check_quota(db, self.limits, owner, place, 1, size, held)
        await self._insert(db, request, work, place, memory_id, category, (now, now, 0))
        return stored

    async def _insert(
        self,
        db: Database,
        request: Request,
        work: BatchWork,
        place: Place,
        memory_id: str,
        category: str,
        times: tuple[float, float, int],
    ) -> None:
        """Add the memory the op (``StoreMemory`` or ``ImportMemory``) carries, with its
        category, created and accessed times and access count, and what every new memory
        needs: its usage counted, its words and vector to come, its links to work items,
        its change recorded."""
        op, owner = request.op, work.owner
        assert isinstance(op, StoreMemory | ImportMemory)
        created, accessed, count = times
        described = store_runs.Described()
        work_ids: list[str] = []
        if isinstance(op, StoreMemory):
            work_ids = self.work_items.ids_in(op.source)
            expires_at = expiry_of(op.ttl_seconds, op.expires_at)
            described = store_runs.described(op, work_ids, expires_at)
            self.expiring = self.expiring or expires_at is not None
        ((seq,),) = await db.execute_fetchall(
            store_runs.INSERT + store_runs.ROW + " RETURNING seq",
            (memory_id, owner, category, op.content, op.context, op.confidence, created,
             accessed, count, content_key(op.content), place.key, *described),
        )  # fmt: skip
        size = sizes.new_memory_bytes(op)
        if work.ledger is not None:
            work.ledger.use(owner, place, 1, size)
        else:
            await journal.use(db, owner, place, 1, size)
        work.current.need[seq] = place.key  # embedded once committed
        work.current.texts[seq] = embedding_text(op.content, op.context)
        work.adding.append((seq, op.content, op.context))
        if work_ids:
            await self._link(db, request, work, memory_id, work_ids, place)
        await self._changed(db, request, work, "stored", memory_id, owner, place)

    async def _link(
        self,
        db: Database,
        request: Request,
        work: BatchWork,
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

    async def _import(self, db: Database, request: Request, work: BatchWork) -> Record:
        """A memory from a spade_llm file, with its id and times; an id already here is
        left alone (``deduplicated``)."""
        op, owner = request.op, work.owner
        assert isinstance(op, ImportMemory)
        there = await db.execute_fetchall("SELECT 1 FROM memories WHERE id = ?", (op.id,))
        if there:
            return Stored(id=op.id, deduplicated=True, category=op.category)
        (place,) = request.places_of(owner)
        times = (op.created_at, op.last_accessed, op.access_count)
        await self._insert(db, request, work, place, op.id, op.category, times)
        return Stored(id=op.id, category=op.category)

    async def _update(self, db: Database, request: Request, work: BatchWork) -> Record:
        op, owner = request.op, work.owner
        assert isinstance(op, UpdateMemory)
        if earlier := await self._requests.earlier(db, owner, request.id, RECORDED.validate_json):
            return earlier
        (place,) = request.places_of(owner)
        row = await self._changeable(db, op.id, place, owner)
        before = row.memory()
        changes = op.changes()
        if op.content is not None:
            changes["content_key"] = content_key(op.content)
        for name in ("tags", "metadata"):
            if name in changes:
                changes[name] = dumps(changes[name]) if changes[name] else None
        if op.source is not None:
            work_ids = self.work_items.ids_in(op.source)
            changes["work_items"] = dumps(work_ids) if work_ids else None
            await self._link(db, request, work, op.id, work_ids, place)
        ttl, until = changes.pop("ttl_seconds", None), changes.pop("expires_at", None)
        if ttl is not None or until is not None:
            changes["expires_at"] = expiry_of(ttl, until)  # type: ignore[arg-type]
            self.expiring = True
        held = await sizes.held(db, row.seq)
        await history.keep_version(db, row.seq, self.limits.max_versions)
        changes.update(version=before.version + 1, changed_by=owner, changed_at=time.time())
        assignments = ", ".join(f"{name} = ?" for name in changes)
        await db.execute(
            f"UPDATE memories SET {assignments} WHERE seq = ?", (*changes.values(), row.seq)
        )
        # the new texts and the version kept, less the versions dropped: measured once
        # written (an update over the quota raises, and its writes are rolled back)
        grown = await sizes.held(db, row.seq) - held
        await journal.check_quota(db, self.limits, before.owner, place, 0, grown)
        await journal.use(db, before.owner, place, 0, grown)
        (row,) = await select(db, "WHERE m.seq = ?", (row.seq,))
        memory = row.memory({place.key: place.name})
        if op.content is not None or op.context is not None:  # its vector follows its text
            await db.execute("DELETE FROM embeddings WHERE seq = ?", (row.seq,))
            work.current.need[row.seq] = place.key
            work.current.texts[row.seq] = embedding_text(memory.content, memory.context)
        await self._changed(db, request, work, "updated", op.id, memory.owner, place)
        await self._requests.claim(db, owner, request.id, memory)
        return memory

    async def _delete(self, db: Database, request: Request, work: BatchWork) -> Record:
        op, owner = request.op, work.owner
        assert isinstance(op, DeleteMemory)
        if earlier := await self._requests.earlier(db, owner, request.id, RECORDED.validate_json):
            return earlier
        (place,) = request.places_of(owner)
        row = await self._changeable(db, op.id, place, owner)
        await self._remove(db, request, work, row, place)
        deleted = Deleted(id=op.id)
        await self._requests.claim(db, owner, request.id, deleted)
        return deleted

    async def _remove(
        self,
        db: Database,
        request: Request,
        work: BatchWork,
        row: Row,
        place: Place,
        reason: str | None = None,
    ) -> None:
        """Delete the memory of ``row``: its vector, words, versions and links go, its
        usage is given back, its audit entry and its change stay."""
        gone, size = row.memory(), await sizes.held(db, row.seq)
        await db.execute("DELETE FROM memories WHERE seq = ?", (row.seq,))
        await db.execute("DELETE FROM memory_links WHERE memory_id = ?", (gone.id,))
        await history.audit_deletion(db, gone.id, place.key, work.owner, reason)
        work.current.gone[row.seq] = place.key  # its vector went (CASCADE)
        await journal.use(db, gone.owner, place, -1, -size)
        await self._changed(db, request, work, "deleted", gone.id, gone.owner, place, reason)

    async def _forget(self, db: Database, request: Request, work: BatchWork) -> Record:
        """Count, or delete, the memories of one space that the filters match and that the
        sender may delete."""
        op, owner = request.op, work.owner
        assert isinstance(op, ForgetMemories)
        if earlier := await self._requests.earlier(db, owner, request.id, RECORDED.validate_json):
            return earlier
        (place,) = request.places_of(owner)
        chosen = self._selection(op, None if op.category is None else [op.category])
        where = f"WHERE m.space = ? AND {chosen.sql}"
        params: list[Any] = [place.key, *chosen.params]
        if not place.may_change_any:
            where += " AND m.owner = ?"
            params.append(owner)
        rows = await select(db, where + " ORDER BY m.seq", params)
        if not op.dry_run:
            for row in rows:
                await self._remove(db, request, work, row, place, reason="forgotten")
        ids = [str(row.id) for row in rows]
        forgotten = MemoriesForgotten(count=len(rows), dry_run=op.dry_run, ids=ids[:1000])
        if not op.dry_run:
            await self._requests.claim(db, owner, request.id, forgotten)
        return forgotten

    async def _forget_all(self, db: Database, request: Request, work: BatchWork) -> Record:
        """Every memory of the sender's own space, and the answers the ledger keeps for
        the sender (they may carry a memory's text); a dry run counts them. Each
        deletion reaches the feed as ``forgotten``: the beads mirror redacts its issue."""
        op, owner = request.op, work.owner
        assert isinstance(op, ForgetAllMemories)
        (place,) = request.places_of(owner)  # its own: the op names no space
        rows = await select(
            db, "WHERE m.space = ? AND m.owner = ? ORDER BY m.seq", (place.key, owner)
        )
        if not op.dry_run:
            for row in rows:
                await self._remove(db, request, work, row, place, reason="forgotten")
        table = self._requests.table
        replies = await requests.forget_owner(db, owner, table, dry_run=op.dry_run)
        return AllForgotten(memories=len(rows), replies=replies, dry_run=op.dry_run)

    async def _history(self, db: Database, request: Request, work: BatchWork) -> MemoryHistory:
        op = request.op
        assert isinstance(op, MemoryHistoryOp)
        (place,) = request.places_of(work.owner)
        found = await history.history_of(db, op.id, place.key)
        if found is None:
            raise ItemNotFound(f"no memory {op.id!r}")
        return found

    async def _refs(self, db: Database, request: Request, work: BatchWork) -> MemoryList:
        op = request.op
        assert isinstance(op, MemoryRefs)
        keys = [place.key for place in request.places_of(work.owner)]
        live = self._selection(None)
        found = await select(
            db,
            "JOIN memory_links l ON l.memory_id = m.id WHERE l.work_id = ?"
            f" AND m.space IN ({', '.join('?' * len(keys))}) AND {live.sql}"
            " ORDER BY m.created_at DESC, m.seq DESC LIMIT ?",
            (op.work_id, *keys, *live.params, op.limit),
        )
        return MemoryList(memories=self._count_access(found, _names(request, work)))

    async def _changeable(self, db: Database, memory_id: str, place: Place, sender: str) -> Row:
        """The memory ``sender`` may change: its own, or anyone's where it is an admin.

        On PostgreSQL the row is locked to the commit: another agent changing the same
        memory waits, then sees it as this write left it (gone, or a version newer).

        Raises ``ItemNotFound`` when the place has no such memory and
        ``NotAuthorized`` when another member stored it.
        """
        locked = self.engine.lock_row
        found = await select(db, f"WHERE m.id = ? AND m.space = ?{locked}", (memory_id, place.key))
        if not found:
            raise ItemNotFound(f"no memory {memory_id!r}")
        if found[0].owner != sender and not place.may_change_any:
            raise NotAuthorized(
                f"memory {memory_id!r} was stored by {found[0].owner}; only its author"
                f" or an admin of {place.name!r} may change it"
            )
        return found[0]

    async def _changed(
        self,
        db: Database,
        request: Request,
        work: BatchWork,
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


async def _forget_old(db: Database) -> None:
    """At open: applied request ids and journal entries past their time."""
    await requests.forget_old(db)
    await journal.forget_old_events(db)


async def _by_seq(db: Database, seqs: Sequence[int]) -> list[Row]:
    """The memories of ``seqs``, in no order."""
    if not seqs:
        return []
    return await select(db, f"WHERE m.seq IN ({', '.join('?' * len(seqs))})", seqs)


def _names(request: Request, work: BatchWork) -> dict[str, str]:
    """Space key → the name replies give, for the places of ``request``."""
    return {place.key: place.name for place in request.places_of(work.owner)}

"""The long-term ("base") memory store on SQLite, with FTS5 BM25 search.

Like a langgraph ``BaseStore`` backend it has one entry point, ``batch``,
that applies a list of ops for an owner in one transaction, each op through
its handler in one dispatch table (``reads``, ``writes``, ``deletes``; ``batch``
applies them). Before the transaction, the batch's search queries go to the
model in one call, off the event loop; a stored or changed text is embedded
after its commit (``backfill``), so a write never waits for the model. Writes
carrying a request id are applied once: the id and the result are recorded in the
same transaction as the change, so a retried request (even after a crash) gets
the first answer back instead of a second memory.

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
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade_memory.base_memory.classify.classifier import classify
from spade_memory.base_memory.graph import links as graph_links
from spade_memory.base_memory.graph.reads import GraphReads
from spade_memory.base_memory.retrieval import pgvector
from spade_memory.base_memory.retrieval.backfill import VectorBackfill
from spade_memory.base_memory.retrieval.ranking import Ranking
from spade_memory.base_memory.retrieval.vector_notices import VectorNotices
from spade_memory.base_memory.store import consolidation, journal, sizes
from spade_memory.base_memory.store import pg_tables as pg_schema
from spade_memory.base_memory.store.access_counts import AccessLog
from spade_memory.base_memory.store.consolidation import Consolidation
from spade_memory.base_memory.store.context import Handler, StoreContext
from spade_memory.base_memory.store.deletes import Deletes, remove
from spade_memory.base_memory.store.dispatch import Dispatch, embed_queries
from spade_memory.base_memory.store.effects import Effects
from spade_memory.base_memory.store.engine import engine_of
from spade_memory.base_memory.store.imports import ImportMemory
from spade_memory.base_memory.store.ledger import Ledger
from spade_memory.base_memory.store.listeners import Listeners
from spade_memory.base_memory.store.reads import Reads
from spade_memory.base_memory.store.rows import select
from spade_memory.base_memory.store.tables import DATED, MIGRATIONS
from spade_memory.base_memory.store.writes import Writes
from spade_memory.base_memory.work_items import WorkItems
from spade_memory.protocol.consolidation import ConsolidateMemories
from spade_memory.protocol.errors import Busy, MemoryServiceError
from spade_memory.protocol.expiry import PURGE_EVERY_SECONDS
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import (
    ChangeList,
    ChangesSince,
    DeleteMemory,
    ForgetAllMemories,
    ForgetMemories,
    GetMemory,
    ListEntities,
    ListMemories,
    MemoriesAbout,
    MemoryHistoryOp,
    MemoryRefs,
    MemoryStatsOp,
    RecentMemories,
    RelatedMemories,
    RestoreMemory,
    SearchMemories,
    StoreMemory,
    SupersedeMemory,
    UpdateMemory,
)
from spade_memory.protocol.ops import PERSONAL, AppliesOps, Op, Outcome, Place, Request
from spade_memory.storage import requests
from spade_memory.storage.batches import apply_all
from spade_memory.storage.connection import Database, Synchronous, Transacting, Transactions
from spade_memory.storage.engines import open_transactions
from spade_memory.storage.faults import store_errors
from spade_memory.storage.manifest import Manifest
from spade_memory.storage.postgres import PgTransactions
from spade_memory.storage.purging import purge_now_and_then

if TYPE_CHECKING:
    from spade_memory.base_memory.retrieval.embeddings import Embedder

logger = logging.getLogger("spade_memory.base_memory")
EXPIRY = "expiry"
"""Who the audit and the change feed name as deleting an expired memory."""
CONSOLIDATION = "consolidation"
"""Who the change feed names as merging memories in the background."""
CONSOLIDATE_AFTER_SECONDS = 300.0
"""How long a space rests from writes before the background consolidates it."""
CONSOLIDATED_AFTER = (StoreMemory, SupersedeMemory, UpdateMemory)
"""The writes after which a space is consolidated again."""
MOST_CONSOLIDATING = 2
"""``consolidate_memories`` requests under way at once, all senders together (one pass
compares at a time, on one thread): the others, and a sender's second while its first
is under way, are answered ``Busy``, so that passes never hold more of the serving slots
than this, whoever asks."""
CONSOLIDATING_RETRY_AFTER = 1.0
"""Seconds after which a consolidation answered ``Busy`` may ask again."""


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
        consolidate_after: float | None = CONSOLIDATE_AFTER_SECONDS,
        entity_graph: bool = True,
    ) -> None:
        self._tx: Transacting = tx
        self.engine = engine_of(tx)
        """Which engine holds the store, and its few differing SQL fragments."""
        self.path: Path | None = None if isinstance(tx, PgTransactions) else tx.path
        """The SQLite file (None on PostgreSQL)."""
        # a large space's vectors are read in the background from the SQLite file
        self.ranking = Ranking(embedder, self.path, self.engine.name)
        self._backfill = (
            None
            if embedder is None
            else VectorBackfill(self._tx, self.ranking, self.engine.share_row)
        )
        self.limits = limits or Limits()
        """Its quotas (memories and bytes per author and per shared space)."""
        self.work_items = work_items or WorkItems()
        """How work-item ids are found in a memory's ``source``, and who hears of links."""
        self._ctx = StoreContext(
            self.engine,
            self.limits,
            self.work_items,
            self.ranking,
            self._backfill,
            self.path,
            graph=entity_graph,
        )
        self._notices: VectorNotices | None = None
        """Other agents' vectors, on a shared database searched by the agents themselves
        (None: this agent writes alone, or the database searches them; set at open)."""
        listeners = listeners or Listeners()
        if listeners.links is None:
            listeners = dataclasses.replace(listeners, links=self.work_items.notify)
        self._listeners = listeners
        self.purge_every = purge_every
        """Seconds between two purges of expired memories."""
        self.consolidate_after = consolidate_after
        """Seconds without a write to a space before the background consolidates it (None:
        never on its own; ``consolidate_memories`` still does when asked)."""
        self._written: dict[str, tuple[Place, float]] = {}
        """Spaces written since they were last consolidated: key → (place, last write)."""
        self._consolidating: asyncio.Task[None] | None = None
        self._consolidations: set[str] = set()
        """The senders with a ``consolidate_memories`` under way (``MOST_CONSOLIDATING``)."""
        self._stopping = threading.Event()
        """Set when the store starts closing: no pass starts, and one comparing stops."""
        self._planner = consolidation.planner()
        self._merging = False
        """Whether the background is inside a consolidation's transaction (close waits)."""
        self._purge_task: asyncio.Task[None] | None = None
        self._warm: asyncio.Future[Any] | None = None
        self._flush_timer: asyncio.TimerHandle | None = None
        self._flush_task: asyncio.Task[None] | None = None
        reads, writes, deletes = Reads(self._ctx), Writes(self._ctx), Deletes(self._ctx)
        graph = GraphReads(self._ctx)
        self._handlers: dict[type[Op[Any]], Handler] = {
            StoreMemory: writes.store,
            SupersedeMemory: writes.supersede,
            RestoreMemory: writes.restore,
            GetMemory: reads.get,
            SearchMemories: reads.search,
            ListMemories: reads.list_memories,
            RecentMemories: reads.list_memories,
            UpdateMemory: writes.update,
            DeleteMemory: deletes.delete,
            MemoryStatsOp: reads.stats,
            ChangesSince: reads.changes,
            ImportMemory: writes.import_memory,
            ForgetMemories: deletes.forget,
            ForgetAllMemories: deletes.forget_all,
            MemoryHistoryOp: reads.history,
            MemoryRefs: reads.refs,
            ConsolidateMemories: Consolidation(self._ctx).consolidate,
            ListEntities: graph.entities,
            MemoriesAbout: graph.about,
            RelatedMemories: graph.related,
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
        consolidate_after: float | None = CONSOLIDATE_AFTER_SECONDS,
        entity_graph: bool = True,
    ) -> LongTermStore:
        """Open (creating or migrating) the store at ``path``: a SQLite file, or a
        ``postgresql://`` URL (``synchronous`` and ``manifest`` are then the server's
        business). An embedder adds dense search; ``listeners`` are told of what it
        commits; expired memories are purged every ``purge_every`` seconds, and a space
        is consolidated once no write has reached it for ``consolidate_after`` seconds.
        Without ``entity_graph`` it writes no links, search has no second round and the
        graph's reads raise ``FeatureNotImplemented``; opened with it again, it links
        what was written meanwhile.

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
            purge_every=purge_every, consolidate_after=consolidate_after,
            entity_graph=entity_graph,
        )  # fmt: skip
        try:
            async with tx.write() as db:
                await graph_links.open_with(db, entity_graph)
                expiring = await db.execute_fetchall(
                    "SELECT 1 FROM memories WHERE expires_at IS NOT NULL LIMIT 1"
                )
                dated = await db.execute_fetchall(f"SELECT 1 FROM memories WHERE {DATED} LIMIT 1")
            # on a shared database another agent may store an expiring memory at any time
            store._ctx.expiring = bool(expiring) or not store.engine.single_writer
            store._ctx.dated = bool(dated) or not store.engine.single_writer
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
        self._stopping.set()
        if self._consolidating is not None:
            self._written.clear()  # a pass under way ends with its space; a wait is cut
            if not self._merging:
                self._consolidating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._consolidating
            self._consolidating = None
        await asyncio.to_thread(self._planner.shutdown)  # a comparing under way stops
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
        """Apply the ops of ``requests`` for ``owner`` (the sender), in one transaction.

        Returns one outcome per request, its result or its typed error (all the same
        failure when the transaction itself failed); raises ``Busy`` for a batch with a
        ``consolidate_memories`` while the sender has one under way, or while
        ``MOST_CONSOLIDATING`` are."""
        if not any(isinstance(request.op, ConsolidateMemories) for request in requests):
            return await self._batch(owner, requests)
        if owner in self._consolidations or len(self._consolidations) >= MOST_CONSOLIDATING:
            why = (
                "a consolidation of yours is under way: one at a time"
                if owner in self._consolidations
                else f"{MOST_CONSOLIDATING} consolidations are under way"
            )
            raise Busy(f"{why}; ask again shortly", CONSOLIDATING_RETRY_AFTER)
        self._consolidations.add(owner)
        try:
            return await self._batch(owner, requests)
        finally:
            self._consolidations.discard(owner)

    async def _batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        work = Effects(
            owner,
            queries=await embed_queries(self._ctx, owner, requests),
            answer_left=self.limits.max_answer_bytes,
        )
        for request in requests:
            if isinstance(request.op, ConsolidateMemories):
                work.plans[id(request)] = await consolidation.plan(
                    self._tx, request, owner, self._stopping, self._planner
                )
        if self.engine.single_writer and len(requests) > 1:
            work.ledger = Ledger(self._ctx.requests)
            work.store_ids = [
                r.id for r in requests if isinstance(r.op, StoreMemory) and r.id is not None
            ]
        if self._ctx.accesses and any(
            isinstance(r.op, ListMemories | RecentMemories) for r in requests
        ):
            await self.flush_accesses()  # they order by last access
        applying = Dispatch(self._ctx, self._handlers, work)
        outcomes = await apply_all(
            self._tx,
            requests,
            applying.apply_one,
            inline=True,
            settle=applying.settle,
            together=applying.together(),
        )
        # no await from here to the notes below: the next batch cannot start before them
        self._schedule_flush()
        self._note_written(requests, outcomes, owner)
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

    def _note_written(
        self, requests: Sequence[Request], outcomes: Sequence[Outcome], owner: str
    ) -> None:
        """Note the spaces stores and updates reached, for the background consolidation."""
        if self.consolidate_after is None or self._stopping.is_set():
            return  # a batch that ends while the store closes starts no pass
        now = time.monotonic()
        for request, outcome in zip(requests, outcomes, strict=True):
            if isinstance(request.op, CONSOLIDATED_AFTER) and not isinstance(
                outcome, MemoryServiceError
            ):
                for place in request.places_of(owner):
                    self._written[place.key] = (place, now)
        if self._written and (self._consolidating is None or self._consolidating.done()):
            self._consolidating = asyncio.create_task(self._consolidate_quiet_spaces())

    async def _consolidate_quiet_spaces(self) -> None:
        """Consolidate each written space once no write has reached it for
        ``consolidate_after`` seconds, one space at a time (the comparing runs in a thread
        of the lowest CPU priority); a space that fails is left for its next write."""
        assert self.consolidate_after is not None
        while self._written:
            now = time.monotonic()
            key, (place, last) = min(self._written.items(), key=lambda item: item[1][1])
            if now - last < self.consolidate_after:
                await asyncio.sleep(self.consolidate_after - (now - last))
                continue
            del self._written[key]
            if self._tx.out_of_service is not None:
                continue
            acting = dataclasses.replace(
                place, name=place.name if place.personal else key, role="owner"
            )
            request = Request(ConsolidateMemories(dry_run=False), places=(acting,))
            self._merging = True
            try:
                (outcome,) = await self._batch(CONSOLIDATION, [request])  # not a sender's
            except MemoryServiceError as failure:  # the store is closing, or out of service
                outcome = failure
            finally:
                self._merging = False
            if isinstance(outcome, MemoryServiceError):
                if not self._stopping.is_set():
                    logger.warning("consolidating %s failed: %s", key, outcome)
            elif outcome.merged:  # type: ignore[attr-defined]
                logger.info("consolidated %s: %d merged", key, outcome.merged)  # type: ignore[attr-defined]

    async def purge_expired(self) -> int:
        """Delete every memory whose time ran out (reads hid it already): each deletion
        reaches the change feed with the reason ``expired`` (the beads mirror closes its
        issue) and leaves its audit entry. Returns how many went."""
        if not self._ctx.expiring or self._tx.out_of_service is not None:
            return 0
        work = Effects(EXPIRY)
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
                await remove(db, request, work, row, place, "expired", self._ctx.graph)
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

    async def fullest(self, prefix: str) -> tuple[int, int]:
        """The most memories and the most bytes any one subject of ``prefix`` holds
        (``owner:`` or ``space:``), for the figures of quota use."""
        rows = await self._tx.read(
            "SELECT MAX(memories), MAX(bytes) FROM usage WHERE subject LIKE ?", (prefix + "%",)
        )
        memories, size = rows[0] if rows else (None, None)
        return int(memories or 0), int(size or 0)

    async def flush_accesses(self) -> None:
        """Write the access counts noted by reads (see ``AccessLog``); kept for a later
        try when the file cannot take them (a full disk, a damaged file)."""
        if self._tx.out_of_service is not None:
            return
        try:
            async with self._tx.write() as db:
                await self._ctx.accesses.flush(db)
        except store_errors() as error:
            logger.warning("%s: access counts not written yet (%s)", self._tx.path, error)

    def _schedule_flush(self) -> None:
        """Write the noted access counts soon, or at once when many are noted."""
        if len(self._ctx.accesses) >= 1000:
            self._start_flush()
        elif self._flush_timer is None and self._ctx.accesses:
            loop = asyncio.get_running_loop()
            self._flush_timer = loop.call_later(AccessLog.FLUSH_AFTER_SECONDS, self._start_flush)

    def _start_flush(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.create_task(self.flush_accesses())


async def _forget_old(db: Database) -> None:
    """At open: applied request ids and journal entries past their time."""
    await requests.forget_old(db)
    await journal.forget_old_events(db)

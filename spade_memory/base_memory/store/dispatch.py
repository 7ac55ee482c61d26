"""One batch of a long-term store dispatched, as ``storage.batches.apply_all`` applies
it: each op through its handler, a run of plain stores in one pass (``runs``), and the writes
deferred to the batch (the word index, the stores' bookkeeping rows) between them.

Before the transaction, the batch's search queries go to the model in one call
(``embed_queries``), off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from spade_memory.base_memory.retrieval.ranking import QueryVector
from spade_memory.base_memory.store import runs as store_runs
from spade_memory.base_memory.store import words
from spade_memory.base_memory.store.context import Handler, StoreContext
from spade_memory.base_memory.store.effects import Effects
from spade_memory.protocol.memories import SearchMemories, StoreMemory
from spade_memory.protocol.ops import Op, Record, Request
from spade_memory.storage.batches import Together
from spade_memory.storage.connection import Database


class Dispatch:
    """The ops of one batch applied through ``handlers``, their effects noted in ``work``."""

    def __init__(
        self, ctx: StoreContext, handlers: Mapping[type[Op[Any]], Handler], work: Effects
    ) -> None:
        self.ctx, self.handlers, self.work = ctx, handlers, work

    async def apply_one(self, db: Database, request: Request) -> Record:
        """Returns the result of ``request``'s handler; raises what it raises (its effects
        are then dropped)."""
        self.work.begin()
        result = await self.handlers[type(request.op)](db, request, self.work)
        self.work.succeeded()
        return result

    async def settle(self, db: Database, following: Request | None) -> None:
        """The batch's new memories into the word index, and its stores' bookkeeping rows,
        before the commit (``following`` None) and before an op other than a store into
        the sender's personal space: it may read or change them, or (a store into a shared
        space) record a change that must come after theirs in the feed."""
        work = self.work
        if (
            following is not None
            and isinstance(following.op, StoreMemory)
            and all(place.personal for place in following.places_of(work.owner))
        ):
            return
        await words.index(db, work.unindexed, self.ctx.graph)
        if work.ledger is not None:
            await work.ledger.write(db)

    def together(self) -> Together | None:
        """Returns how runs of plain stores go in one pass (None: each op alone, as when
        the batch has no ledger)."""
        return None if self.work.ledger is None else Together(self._joins, self._apply_run)

    def _joins(self, request: Request) -> bool:
        return store_runs.plain(request, self.work.owner, self.ctx.work_items)

    async def _apply_run(self, db: Database, run: Sequence[Request]) -> list[Record]:
        self.work.begin()
        answers = await store_runs.store_run(db, run, self.work, self.ctx.limits)
        self.work.succeeded()
        self.ctx.expiring = self.ctx.expiring or any(
            r.op.ttl_seconds is not None or r.op.expires_at is not None  # type: ignore[attr-defined]
            for r in run
        )
        return answers


async def embed_queries(
    ctx: StoreContext, owner: str, requests: Sequence[Request]
) -> dict[int, QueryVector | None]:
    """Returns the embeddings of the batch's search queries, by ``id(request)``, from one
    encoder call; meanwhile the few memories of the searched spaces still waiting for a
    vector get theirs."""
    searches = {
        id(request): request
        for request in requests
        if isinstance(request.op, SearchMemories) and request.op.mode != "session_recovery"
    }
    if not searches or ctx.backfill is None:
        return {}
    spaces = {place.key for r in searches.values() for place in r.places_of(owner)}
    queries = [r.op.query for r in searches.values()]  # type: ignore[attr-defined]
    vectors, _ = await asyncio.gather(
        ctx.ranking.embed_queries(queries), ctx.backfill.embed_now(spaces)
    )
    return dict(zip(searches, vectors, strict=True))

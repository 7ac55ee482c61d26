"""Consolidation in the store: a space's near-duplicates found (``facts.duplicates``) and
merged, in the op's transaction.

The newest ``MOST_COMPARED`` current memories of the space are compared before the
transaction (``plan``, like a search's query embedded before it), off the event loop, in
a thread of the lowest CPU priority; the transaction merges what is still current. A
merge adds the merged memories' access counts to the kept one, raises its confidence to
theirs, gives it a source it lacked and its newest use, and closes each merged memory as
a supersede would (reason ``merged``): it stays readable through ``as_of`` and the kept
memory's history. Each merged memory's change carries the reason ``merged``, so a shared
space's subscribers and the beads mirror hear of it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass

from spade_memory.base_memory.facts.duplicates import Candidate, Merge, Stopped, merges
from spade_memory.base_memory.graph import links as graph_links
from spade_memory.base_memory.retrieval.threads import give_back_freed_memory, lowest_priority
from spade_memory.base_memory.store import journal, sizes
from spade_memory.base_memory.store.context import StoreContext
from spade_memory.base_memory.store.effects import Effects
from spade_memory.base_memory.store.rows import COLUMNS, Row
from spade_memory.base_memory.store.supersede import CURRENT
from spade_memory.base_memory.store.writes import changed
from spade_memory.protocol.consolidation import Consolidated, ConsolidateMemories, MergedMemories
from spade_memory.protocol.errors import NotAuthorized, ServiceUnavailable
from spade_memory.protocol.ops import Place, Request
from spade_memory.storage.connection import Database, Transacting
from spade_memory.storage.statements import MOST_VALUES, parts, placeholders

MOST_COMPARED = 10_000
"""Current memories of a space one pass compares (the newest)."""


def planner() -> ThreadPoolExecutor:
    """Where a store's passes compare memories: one thread, at the lowest CPU priority.
    The store shuts it down as it closes (an idle thread would keep the process alive)."""
    return ThreadPoolExecutor(1, "consolidation", initializer=lowest_priority)


@dataclass(frozen=True)
class Plan:
    """What one ``consolidate_memories`` request would merge, found before its
    transaction."""

    compared: int
    merges: list[Merge]


def _allowed(place: Place) -> None:
    if not place.personal and not place.may_change_any:
        raise NotAuthorized(f"consolidating {place.name!r} takes an admin of it")


async def plan(
    tx: Transacting, request: Request, owner: str, stop: threading.Event, comparing: Executor
) -> Plan | None:
    """The merges ``request`` (a ``ConsolidateMemories``) would make, read outside any
    write transaction and compared on ``comparing`` (the store's ``planner``) (None: the
    sender may not consolidate there; its op says so).

    Raises ``ServiceUnavailable`` when ``stop`` is set (the store is closing) before the
    comparing is done; the thread ends then too."""
    (place,) = request.places_of(owner)
    try:
        _allowed(place)
    except NotAuthorized:
        return None
    now = time.time()
    rows = await tx.read(
        f"SELECT {COLUMNS} FROM memories m WHERE m.space = ? AND {CURRENT}"
        " ORDER BY m.created_at DESC LIMIT ?",
        (place.key, now, now, MOST_COMPARED),
    )
    candidates = [
        Candidate(row.id, row.owner, row.category, row.content, row.access_count,
                  row.created_at)
        for row in map(Row._make, rows)
    ]  # fmt: skip
    loop = asyncio.get_running_loop()
    try:
        if stop.is_set():  # set before ``comparing`` is shut down, which takes no more work
            raise Stopped
        found = await loop.run_in_executor(comparing, _compared, candidates, stop)
    except Stopped:
        raise ServiceUnavailable("the memory service is stopping; ask again") from None
    return Plan(len(candidates), found)


def _compared(candidates: list[Candidate], stop: threading.Event) -> list[Merge]:
    """``merges`` of ``candidates``, then the memory its comparing freed handed back to
    the system (a flood of consolidations left the agent a quarter larger)."""
    try:
        return merges(candidates, stop)
    finally:
        give_back_freed_memory()


class Consolidation:
    """The ``consolidate_memories`` handler of one store."""

    def __init__(self, ctx: StoreContext) -> None:
        self.ctx = ctx

    async def consolidate(self, db: Database, request: Request, work: Effects) -> Consolidated:
        """Returns what was merged (on a dry run, what would be) of the plan made before
        the transaction (``plan``), each memory still current; raises ``NotAuthorized``
        in a shared space where the sender is no admin."""
        op = request.op
        assert isinstance(op, ConsolidateMemories)
        (place,) = request.places_of(work.owner)
        _allowed(place)
        planned = work.plans.get(id(request))
        assert isinstance(planned, Plan), "consolidation is planned before its transaction"
        found = await _still_current(db, place.key, planned.merges)
        if not op.dry_run and found:
            self.ctx.dated = True  # reads now check validity: the merged ones closed
            now = time.time()
            for merge in found:
                await _merge(db, request, work, merge, place, now)
        superseded, longest = await _chains(db, place.key)
        return Consolidated(
            dry_run=op.dry_run, compared=planned.compared,
            merges=[
                MergedMemories(kept=m.kept.id, content=m.kept.content,
                               merged=[other.id for other in m.merged])
                for m in found
            ],
            merged=sum(len(m.merged) for m in found), superseded=superseded,
            longest_chain=longest,
        )  # fmt: skip


async def _still_current(db: Database, key: str, planned: list[Merge]) -> list[Merge]:
    """The planned merges whose memories are all still current and as planned (a write
    between the plan and the transaction, or before it in the same batch, leaves its
    memories as they are: a changed text may no longer state the same)."""
    ids = [memory.id for merge in planned for memory in (merge.kept, *merge.merged)]
    current: dict[str, tuple[str, str]] = {}
    for chunk in parts(ids, MOST_VALUES - 1):
        rows = await db.execute_fetchall(
            "SELECT id, category, content FROM memories"
            f" WHERE id IN ({placeholders(chunk)}) AND space = ? AND superseded_by IS NULL",
            (*chunk, key),
        )
        current.update((str(id_), (str(category), str(text))) for id_, category, text in rows)
    return [
        merge
        for merge in planned
        if all(
            current.get(memory.id) == (memory.category, memory.content)
            for memory in (merge.kept, *merge.merged)
        )
    ]


async def _merge(
    db: Database, request: Request, work: Effects, merge: Merge, place: Place, now: float
) -> None:
    ids = [other.id for other in merge.merged]
    marks = placeholders(ids)
    ((count, confidence, accessed, source, own_source),) = await db.execute_fetchall(
        "SELECT SUM(access_count), MAX(confidence), MAX(last_accessed), MIN(source),"
        f" (SELECT source FROM memories WHERE id = ?) FROM memories WHERE id IN ({marks})",
        (merge.kept.id, *ids),
    )
    await db.execute(
        "UPDATE memories SET access_count = access_count + ?,"
        " confidence = CASE WHEN confidence < ? THEN ? ELSE confidence END,"
        " last_accessed = CASE WHEN last_accessed < ? THEN ? ELSE last_accessed END,"
        " source = COALESCE(source, ?) WHERE id = ?",
        (count, confidence, confidence, accessed, accessed, source, merge.kept.id),
    )
    if own_source is None and source is not None:  # the kept memory holds it now
        await journal.use(db, merge.kept.author, place, 0, sizes.size_of(str(source)))
    closed = await db.execute_fetchall(
        "UPDATE memories SET superseded_by = ?, retired_at = ?, retired_reason = 'merged',"
        " valid_to = CASE WHEN valid_to IS NULL OR valid_to > ? THEN ? ELSE valid_to END"
        f" WHERE id IN ({marks}) RETURNING seq",
        (merge.kept.id, now, now, now, *ids),
    )
    await graph_links.unlink(db, [int(seq) for (seq,) in closed])  # they name nothing now
    for other in merge.merged:
        await changed(db, request, work, "updated", other.id, other.author, place, "merged")
    await changed(db, request, work, "updated", merge.kept.id, merge.kept.author, place)


async def _chains(db: Database, key: str) -> tuple[int, int]:
    """How many memories of the space were replaced, and the longest supersede chain
    (in memories: 1 when none was replaced)."""
    ((superseded,),) = await db.execute_fetchall(
        "SELECT COUNT(*) FROM memories WHERE space = ? AND superseded_by IS NOT NULL", (key,)
    )
    rows = await db.execute_fetchall(
        "WITH RECURSIVE chain(id, length) AS ("
        " SELECT id, 1 FROM memories WHERE space = ? AND supersedes IS NULL"
        " AND superseded_by IS NOT NULL"
        " UNION ALL SELECT m.superseded_by, c.length + 1 FROM chain c"
        " JOIN memories m ON m.id = c.id WHERE m.superseded_by IS NOT NULL AND c.length < 1000"
        ") SELECT MAX(length) FROM chain",
        (key,),
    )
    longest = next((int(n) for (n,) in rows if n is not None), 1)
    return int(superseded), longest

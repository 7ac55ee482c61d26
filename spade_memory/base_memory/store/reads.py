"""The long-term store's read handlers: get, list, search, stats, the change feed, a
memory's history, and the memories linked to a work item.

Each runs inside its batch's transaction on the places its service checked
(``Request.places_of``); those returning memories note their accesses (written later,
see ``AccessLog``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta, timezone
from datetime import time as datetime_time

from spade_memory.base_memory.graph import expansion
from spade_memory.base_memory.graph.extract import names_in
from spade_memory.base_memory.store import history, journal
from spade_memory.base_memory.store.context import StoreContext
from spade_memory.base_memory.store.effects import Effects
from spade_memory.base_memory.store.filters import Selection
from spade_memory.base_memory.store.rows import COLUMNS, Row, as_datetime, newest, select
from spade_memory.base_memory.store.sizes import size_of
from spade_memory.protocol.errors import ItemNotFound
from spade_memory.protocol.memories import (
    STATS_AUTHORS,
    Change,
    ChangeList,
    ChangesSince,
    GetMemory,
    ListMemories,
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
)
from spade_memory.protocol.ops import Place, Request
from spade_memory.storage.answer_budget import over_budget
from spade_memory.storage.connection import Database
from spade_memory.storage.faults import free_bytes
from spade_memory.storage.statements import placeholders

SEARCH_MODES = ("semantic", "session_recovery", "knowledge_lookup")
KNOWLEDGE = ("fact", "pattern", "capability")
"""The categories ``knowledge_lookup`` searches (preferences are not knowledge)."""


class Reads:
    """The read handlers of one store."""

    def __init__(self, ctx: StoreContext) -> None:
        self.ctx = ctx

    async def get(self, db: Database, request: Request, work: Effects) -> Memory:
        """Returns the memory ``GetMemory`` names; raises ``ItemNotFound`` when its place
        has no such live memory."""
        assert isinstance(request.op, GetMemory)
        (place,) = request.places_of(work.owner)
        live = self.ctx.selection(request.op)
        found = await select(
            db, f"WHERE m.id = ? AND m.space = ? AND {live.sql}",
            (request.op.id, place.key, *live.params),
        )  # fmt: skip
        if not found:
            raise ItemNotFound(await _missing(db, request.op.id, place))
        memories = self.ctx.count_access(
            found, names(request, work), counted=request.op.count_access
        )
        return memories[0]

    async def list_memories(self, db: Database, request: Request, work: Effects) -> MemoryList:
        """Returns a page of the places' memories (``ListMemories``, ``RecentMemories``),
        most recently read first, with the next page's offset if there is one."""
        op = request.op
        assert isinstance(op, ListMemories | RecentMemories)
        keys = [place.key for place in request.places_of(work.owner)]
        chosen = self.ctx.selection(op, [op.category] if isinstance(op, ListMemories) else None)
        where = f"WHERE m.space IN ({placeholders(keys)}) AND {chosen.sql}"
        order = " ORDER BY m.last_accessed DESC, m.seq DESC LIMIT ? OFFSET ?"

        async def load(start: int, count: int) -> list[Row]:
            values = (*keys, *chosen.params, count, op.offset + start)
            return await select(db, where + order, values)

        page, cut, more = await read_fitting(load, op.limit, work)
        return MemoryList(
            memories=self.ctx.count_access(page, names(request, work), counted=op.count_access),
            next_offset=op.offset + len(page) if more else None,
            note=_cut(page) if cut else None,
        )

    async def search(self, db: Database, request: Request, work: Effects) -> MemoryList:
        """Returns the best matches of ``SearchMemories`` (BM25, fused with meaning when
        there is a model; the newest for ``session_recovery``), with how they were found.
        An unknown mode is answered as ``semantic``, with a note."""
        op = request.op
        assert isinstance(op, SearchMemories)
        keys = [place.key for place in request.places_of(work.owner)]
        mode, note = op.mode, None
        if mode not in SEARCH_MODES:
            mode, note = "semantic", f"unknown mode {op.mode!r}; answered as semantic"
        categories: list[str] | None = None if op.category is None else [op.category]
        if mode == "knowledge_lookup":
            categories = [c for c in KNOWLEDGE if op.category in (None, c)]
        chosen = self.ctx.selection(op, categories)
        filtered = op.narrowed() or categories is not None
        ranking = self.ctx.ranking
        if mode == "session_recovery":

            async def newer(start: int, count: int) -> list[Row]:
                return await newest(db, keys, chosen, count, start)

            found, cut, _more = await read_fitting(newer, op.limit, work)
            if cut:
                note = "; ".join(filter(None, (note, _cut(found))))
            memories = self.ctx.count_access(found, names(request, work), counted=op.count_access)
            reasoning = Reasoning(
                strategy="recency", dense_available=ranking.embedder is not None,
                mode=mode, filtered=filtered, returned=len(memories),
            )  # fmt: skip
            return MemoryList(memories=memories, mode=mode, note=note, reasoning=reasoning)
        ranked = await ranking.rank(
            db, keys, op.query, chosen, op.limit,
            work.queries.get(id(request)), work.vectors.stale(),
        )  # fmt: skip
        if self.ctx.graph:
            ranked = await expansion.expand(db, keys, op.query, ranked, chosen, op.limit)
        found, cut = await best_fitting(db, ranked.seqs, work)
        if cut:
            note = "; ".join(filter(None, (note, _cut(found))))
        memories = self.ctx.count_access(
            found, names(request, work), ranked.scores, counted=op.count_access
        )
        reasoning = Reasoning(
            strategy="hybrid" if ranked.dense else "bm25",
            dense_available=ranked.dense, mode=mode, word_candidates=ranked.words,
            meaning_candidates=ranked.meanings, filtered=filtered, returned=len(memories),
            expansion=ranked.expansion, expanded=ranked.expanded,
        )  # fmt: skip
        return MemoryList(memories=memories, mode=mode, note=note, reasoning=reasoning)

    async def stats(self, db: Database, request: Request, work: Effects) -> MemoryStats:
        """Returns the counts of the place's live memories, its usage against its quota,
        and the state of its search."""
        ctx, (place,) = self.ctx, request.places_of(work.owner)
        live = ctx.selection(None)
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
        ((superseded, merged),) = await db.execute_fetchall(
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE retired_reason = 'merged')"
            " FROM memories WHERE space = ? AND superseded_by IS NOT NULL",
            (place.key,),
        )
        total, average, oldest, newest = row
        limits = ctx.limits
        if place.personal:  # what the sender stored anywhere, against its own quota
            subject = f"owner:{work.owner}"
            most, most_bytes = limits.max_memories_per_owner, limits.max_bytes_per_owner
        else:
            subject = f"space:{place.key}"
            most = place.max_memories or limits.max_memories_per_space
            most_bytes = place.max_bytes or limits.max_bytes_per_space
        used, used_bytes = await journal.usage_of(db, subject)
        assert isinstance(request.op, MemoryStatsOp)
        days = request.op.days
        per_day, by_author, by_others = await _stored_lately(db, place.key, live, days)
        return MemoryStats(
            total_memories=int(total),
            category_counts=counts,
            avg_confidence=None if average is None else float(average),
            oldest_memory=None if oldest is None else as_datetime(oldest),
            newest_memory=None if newest is None else as_datetime(newest),
            search=ctx.ranking.kind,
            free_disk_bytes=None if ctx.path is None else free_bytes(ctx.path),
            space=place.name,
            used_memories=used,
            used_bytes=used_bytes,
            max_memories=most,
            max_bytes=most_bytes,
            waiting_vectors=0 if ctx.backfill is None else ctx.backfill.waiting_in(place.key),
            vector_index=ctx.ranking.kind_of(place.key),
            superseded_memories=int(superseded),
            merged_memories=int(merged),
            stored_per_day=per_day,
            stored_by_author=by_author,
            stored_by_others=by_others,
        )

    async def changes(self, db: Database, request: Request, work: Effects) -> ChangeList:
        """Returns the changes after ``ChangesSince.after``, oldest first: a shared
        space's journal, or the whole feed (its entries up to ``after`` are forgotten)."""
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
        newest = await db.execute_fetchall(self.ctx.engine.newest_change)
        changes = []
        for seq, kind, memory_id, owner, space, author, reason, *columns in rows:
            now = Row._make(columns)  # all None: the memory is gone
            memory = None if now.id is None else now.memory()
            change = Change(
                seq=seq, kind=kind, memory_id=memory_id, owner=owner, space=space,
                author=author, reason=reason, memory=memory, entities=names_in(memory),
            )  # fmt: skip
            changes.append(change)
        last_seq = int(next((seq for (seq,) in newest), None) or 0)
        return ChangeList(changes=changes, last_seq=last_seq)

    async def _journal(self, db: Database, place: Place, after: int, limit: int) -> ChangeList:
        """A shared space's changes after ``after``, with each memory as it is now."""
        entries, last, complete = await journal.journal(db, place.key, after, limit)
        ids = [entry.memory_id for entry in entries]
        rows = await select(db, f"WHERE m.id IN ({placeholders(ids)})", ids) if ids else []
        now = {row.id: row.memory({place.key: place.name}) for row in rows}
        changes = [
            Change(
                seq=entry.seq,
                kind=entry.kind,
                memory_id=entry.memory_id,
                owner=entry.actor,
                space=place.name,
                author=entry.author,
                memory=(memory := None if entry.kind == "deleted" else now.get(entry.memory_id)),
                entities=names_in(memory),
            )
            for entry in entries
        ]
        return ChangeList(changes=changes, last_seq=last, complete=complete)

    async def history(self, db: Database, request: Request, work: Effects) -> MemoryHistory:
        """Returns the memory's earlier versions; raises ``ItemNotFound`` when its place
        has no such memory."""
        op = request.op
        assert isinstance(op, MemoryHistoryOp)
        (place,) = request.places_of(work.owner)
        found = await history.history_of(db, op.id, place.key)
        if found is None:
            raise ItemNotFound(f"no memory {op.id!r}")
        return found

    async def refs(self, db: Database, request: Request, work: Effects) -> MemoryList:
        """Returns the places' live memories linked to the work item, newest first."""
        op = request.op
        assert isinstance(op, MemoryRefs)
        keys = [place.key for place in request.places_of(work.owner)]
        live = self.ctx.selection(None)

        async def linked(start: int, count: int) -> list[Row]:
            return await select(
                db,
                "JOIN memory_links l ON l.memory_id = m.id WHERE l.work_id = ?"
                f" AND m.space IN ({placeholders(keys)}) AND {live.sql}"
                " ORDER BY m.created_at DESC, m.seq DESC LIMIT ? OFFSET ?",
                (op.work_id, *keys, *live.params, count, start),
            )

        found, cut, _more = await read_fitting(linked, op.limit, work)
        memories = self.ctx.count_access(found, names(request, work), counted=op.count_access)
        return MemoryList(memories=memories, note=_cut(found) if cut else None)


async def _missing(db: Database, memory_id: str, place: Place) -> str:
    """Why ``get_memory`` found nothing: no such memory, or none valid at that moment
    (superseded: by which one)."""
    rows = await db.execute_fetchall(
        "SELECT superseded_by FROM memories WHERE id = ? AND space = ?"
        " AND (expires_at IS NULL OR expires_at > ?)",
        (memory_id, place.key, time.time()),
    )
    if not rows:
        return f"no memory {memory_id!r}"
    ((newer,),) = rows
    if newer is not None:
        return (
            f"memory {memory_id!r} was superseded by {newer!r}; read it with as_of, or its history"
        )
    return f"memory {memory_id!r} is not valid at that time (see its valid_from, valid_to)"


async def by_seq(db: Database, seqs: Sequence[int]) -> list[Row]:
    """Returns the memories of ``seqs``, in no order."""
    if not seqs:
        return []
    return await select(db, f"WHERE m.seq IN ({placeholders(seqs)})", seqs)


def names(request: Request, work: Effects) -> dict[str, str]:
    """Returns space key → the name replies give, for the places of ``request``."""
    return {place.key: place.name for place in request.places_of(work.owner)}


READ_CHUNK = 32
"""Memories an answer reads from the database at a time: what a read holds before the
batch's budget stops it is at most this many rows, however many it asked for."""


async def read_fitting(
    load: Callable[[int, int], Awaitable[list[Row]]], wanted: int, work: Effects
) -> tuple[list[Row], bool, bool]:
    """The first ``wanted`` rows that ``load(start, count)`` gives, read ``READ_CHUNK``
    at a time and kept while their bytes fit what the batch's answers may still carry
    (``Effects.answer_left``), which they spend.

    Returns the rows kept, whether the budget cut them short, and whether rows are left
    past them. Raises ``ResourceConstraint`` naming the budget when not even the first
    fits."""
    kept: list[Row] = []
    while True:
        count = min(READ_CHUNK, wanted - len(kept), _could_fit(work))
        chunk = await load(len(kept), count + 1)  # one row past says whether any are left
        for row in chunk[:count]:
            if not _taken(row, kept, work):
                return kept, True, True
        if len(chunk) <= count:
            return kept, False, False
        if len(kept) == wanted:
            return kept, False, True


async def best_fitting(db: Database, seqs: Sequence[int], work: Effects) -> tuple[list[Row], bool]:
    """The memories of ``seqs`` (best first) that are still there, read ``READ_CHUNK`` at a
    time and kept, in that order, while their bytes fit what the batch's answers may still
    carry, which they spend.

    Returns the rows kept, and whether the budget cut them short. Raises
    ``ResourceConstraint`` naming the budget when not even the first fits."""
    kept: list[Row] = []
    first = 0
    while first < len(seqs):
        part = seqs[first : first + min(READ_CHUNK, _could_fit(work))]
        first += len(part)
        of_seq = {row.seq: row for row in await by_seq(db, part)}
        for seq in part:
            if seq in of_seq and not _taken(of_seq[seq], kept, work):
                return kept, True
    return kept, False


def _could_fit(work: Effects) -> int:
    """The most memories what is left of the budget could still hold (at least one, to
    find out): a batch whose budget is spent reads a row per read, not a chunk."""
    return max(1, work.answer_left // _FIELDS_BYTES)


def _taken(row: Row, kept: list[Row], work: Effects) -> bool:
    """Add ``row`` to ``kept`` and spend its bytes if they fit what is left; False if
    they do not. Raises ``ResourceConstraint`` when nothing is kept yet."""
    size = answer_bytes(row)
    if size > work.answer_left:
        if not kept:
            raise over_budget()
        return False
    work.answer_left -= size
    kept.append(row)
    return True


def answer_bytes(row: Row) -> int:
    """What ``row`` weighs in an answer: its texts, and a little for its other fields."""
    texts = (row.content, row.context, row.tags, row.metadata, row.source, row.work_items)
    return size_of(*texts) + _FIELDS_BYTES


_FIELDS_BYTES = 512
"""A memory's ids, times and figures in an answer, roughly (JSON)."""


def _cut(kept: Sequence[Row]) -> str:
    """The note of an answer that ``read_fitting`` cut short."""
    return (
        f"{len(kept)} memories fit the bytes one answer may carry (run --max-answer-bytes);"
        " ask for the rest with the next offset, fewer at a time, or in a batch of its own"
    )


async def _stored_lately(
    db: Database, key: str, live: Selection, days: int
) -> tuple[dict[str, int], dict[str, int], int]:
    """The memories of the space ``key`` that ``live`` selects stored on each of the last
    ``days`` UTC days, today included (every day listed), the ``STATS_AUTHORS`` authors
    who stored the most of them, and what the others stored: counted in the database,
    no memory read (nothing when ``days`` is 0)."""
    if not days:
        return {}, {}, 0
    first = datetime.now(timezone.utc).date() - timedelta(days=days - 1)
    dates = [first + timedelta(days=n) for n in range(days + 1)]
    starts = [datetime.combine(d, datetime_time.min, timezone.utc).timestamp() for d in dates]
    window = f"space = ? AND created_at >= ? AND created_at < ? AND {live.sql}"
    params = (key, starts[0], starts[-1], *live.params)
    each_day = ", ".join(["COUNT(*) FILTER (WHERE created_at >= ? AND created_at < ?)"] * days)
    (counts,) = await db.execute_fetchall(
        f"SELECT {each_day} FROM memories m WHERE {window}",
        (*(bound for n in range(days) for bound in starts[n : n + 2]), *params),
    )
    per_day = {dates[n].isoformat(): int(counts[n]) for n in range(days)}
    authors = await db.execute_fetchall(
        f"SELECT owner, COUNT(*) FROM memories m WHERE {window}"
        " GROUP BY owner ORDER BY COUNT(*) DESC, owner LIMIT ?",
        (*params, STATS_AUTHORS),
    )
    by_author = {str(owner): int(n) for owner, n in authors}
    return per_day, by_author, sum(per_day.values()) - sum(by_author.values())

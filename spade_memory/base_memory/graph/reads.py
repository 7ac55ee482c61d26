"""The graph's read handlers: ``entities``, ``memories_about`` and ``related_memories``.

Each runs, as every read, on the places its service checked the sender may read
(``Request.places_of``), and only current memories count: a superseded, expired or
deleted memory names nothing any more.
"""

from __future__ import annotations

from spade_memory.base_memory.graph.extract import fold
from spade_memory.base_memory.graph.follow import (
    LAST_CHARACTER,
    current,
    keys_named,
    linked,
    reached,
)
from spade_memory.base_memory.graph.links import space_ids
from spade_memory.base_memory.store.context import StoreContext
from spade_memory.base_memory.store.effects import Effects
from spade_memory.base_memory.store.reads import by_seq, names
from spade_memory.base_memory.store.rows import select
from spade_memory.protocol.errors import FeatureNotImplemented, ItemNotFound
from spade_memory.protocol.graph import Entity, EntityList
from spade_memory.protocol.memories import ListEntities, MemoriesAbout, MemoryList, RelatedMemories
from spade_memory.protocol.ops import Request
from spade_memory.storage.connection import Database
from spade_memory.storage.statements import placeholders


class GraphReads:
    """The graph's read handlers of one store. Each raises ``FeatureNotImplemented``
    when the store keeps no graph (``entity_graph=False``)."""

    def __init__(self, ctx: StoreContext) -> None:
        self.ctx = ctx

    def _kept(self) -> None:
        """Raises ``FeatureNotImplemented`` when the store keeps no graph."""
        if not self.ctx.graph:
            raise FeatureNotImplemented("this agent runs without the entity graph")

    async def entities(self, db: Database, request: Request, work: Effects) -> EntityList:
        """Returns the entities the places' current memories name, the most named first
        (a term only once two memories name it)."""
        op = request.op
        assert isinstance(op, ListEntities)
        self._kept()
        places = request.places_of(work.owner)
        keys = [place.key for place in places]
        live = self.ctx.selection(None)
        where, params = f"s.space IN ({placeholders(keys)}) AND {live.sql}", [*keys, *live.params]
        if op.prefix:
            start = " ".join(fold(op.prefix).split())
            where += " AND e.key >= ? AND e.key < ?"
            params += [start, start + LAST_CHARACTER]
        if op.kind is not None:
            where += " AND e.kind = ?"
            params.append(op.kind)
        rows = await db.execute_fetchall(
            "SELECT s.space, e.key, COALESCE(MIN(e.name), e.key), e.kind, COUNT(*), SUM(e.subject)"
            " FROM memory_entities e JOIN entity_spaces s ON s.id = e.space_id"
            " JOIN memories m ON m.seq = e.seq"
            f" WHERE {where} GROUP BY s.space, e.key, e.kind"
            " HAVING e.kind <> 'term' OR COUNT(*) >= 2"
            " ORDER BY COUNT(*) DESC, e.key LIMIT ?",
            (*params, op.limit),
        )
        shown = {place.key: None if place.personal else place.name for place in places}
        return EntityList(
            entities=[
                Entity(
                    key=str(key),
                    name=str(name),
                    kind=kind,
                    memories=int(count),
                    subject_of=int(subjects or 0),
                    space=shown.get(str(space)),
                )
                for space, key, name, kind, count, subjects in rows
            ]
        )

    async def about(self, db: Database, request: Request, work: Effects) -> MemoryList:
        """Returns the places' current memories naming ``MemoriesAbout.entity`` (under
        any key it goes by there), those it is the subject of first, then the newest."""
        op = request.op
        assert isinstance(op, MemoriesAbout)
        self._kept()
        keys = [place.key for place in request.places_of(work.owner)]
        numbers = await space_ids(db, keys)
        filed = await keys_named(db, numbers, op.entity)
        if not filed or not numbers:
            return MemoryList()
        live = self.ctx.selection(None)
        links = (
            f"FROM memory_entities e WHERE e.space_id IN ({placeholders(numbers)})"
            f" AND e.key IN ({placeholders(filed)})"
        )
        found = await select(
            db,
            f"WHERE m.seq IN (SELECT e.seq {links}) AND {live.sql}"
            f" ORDER BY (SELECT MAX(e.subject) {links} AND e.seq = m.seq) DESC,"
            " m.created_at DESC, m.seq DESC LIMIT ?",
            (*numbers, *filed, *live.params, *numbers, *filed, op.limit),
        )
        memories = self.ctx.count_access(found, names(request, work), counted=op.count_access)
        return MemoryList(memories=memories)

    async def related(self, db: Database, request: Request, work: Effects) -> MemoryList:
        """Returns the current memories of the memory's space that name what it names,
        the most shared (rare entities weighing more) first, each with its score;
        raises ``ItemNotFound`` when the places hold no such current memory."""
        op = request.op
        assert isinstance(op, RelatedMemories)
        self._kept()
        keys = [place.key for place in request.places_of(work.owner)]
        live = self.ctx.selection(None)
        rows = await db.execute_fetchall(
            f"SELECT m.seq, m.space FROM memories m WHERE m.id = ?"
            f" AND m.space IN ({placeholders(keys)}) AND {live.sql}",
            (op.id, *keys, *live.params),
        )
        if not rows:
            raise ItemNotFound(f"no memory {op.id!r}")
        ((seq, space),) = rows
        numbers = await space_ids(db, [str(space)])
        written = {  # each key as this memory writes it (a term has no name: its key)
            str(key): str(name or key)
            for key, name in await db.execute_fetchall(
                "SELECT key, name FROM memory_entities WHERE seq = ?", (seq,)
            )
        }
        named = sorted(written)  # one order on either engine: scores are summed in it
        links = await linked(db, numbers, named)
        weights = {key: worth for key in named if (worth := links.weight(key))}
        scores = reached(links, weights, leaving={int(seq)})
        allowed = await current(db, {str(space)}, live, list(scores))
        best = sorted((s for s in scores if s in allowed), key=lambda s: (-scores[s], -s))[
            : op.limit
        ]
        of_seq = {row.seq: row for row in await by_seq(db, best)}
        found = [of_seq[s] for s in best if s in of_seq]
        memories = self.ctx.count_access(
            found, names(request, work), scores, counted=op.count_access
        )
        reach = {key: set(links.memories.get(key, ())) for key in weights}
        shared = [[written[key] for key in weights if row.seq in reach[key]] for row in found]
        memories = [m.model_copy(update={"shares": names}) for m, names in
                    zip(memories, shared, strict=True)]  # fmt: skip
        return MemoryList(memories=memories, entities=[written[key] for key in named])

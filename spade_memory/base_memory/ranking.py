"""How the long-term store ranks: BM25 alone, or BM25 fused with dense similarity.

``Ranking`` owns the optional embedder and, per space (an owner's personal
space or a shared one), a cached index of memory vectors that follows every
committed vector. A search over several spaces fuses over all of them. Vectors
are stored with the memories (table ``embeddings``, deleted with them) and
computed off the event loop, after the write that needed them (see
``backfill``). Ranking runs inside the store's transaction, on its
connection, so no write can slip in while a space's index is built.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..storage.connection import Database
from ..storage.fts import match_expression
from .threads import one_thread_per_library

if TYPE_CHECKING:
    from .ann import IndexBuild
    from .dense import Similar, VectorIndex
    from .embeddings import Embedder

BM25_CANDIDATES = 200
"""How many BM25 matches enter the fusion (dense similarity covers every memory)."""


CACHED_SPACES = 64
"""Spaces whose vector index stays in memory between searches (least recent dropped)."""
MIN_SIMILARITY = 0.25
"""Cosine a memory needs to be returned on meaning alone (unrelated text scores near 0)."""


def embedding_text(content: str, context: str | None) -> str:
    """What is embedded: the context (when, why, what came before), then the content."""
    return f"{context}\n{content}" if context else content


class Ranking:
    """BM25, plus dense similarity when an embedder is loaded."""

    def __init__(self, embedder: Embedder | None) -> None:
        self.embedder = embedder
        if embedder is not None:
            one_thread_per_library()
        self._indexes: OrderedDict[str, VectorIndex] = OrderedDict()
        self._builds: dict[str, IndexBuild] = {}
        """Approximate indexes being built, by space (see ``ann``)."""
        self._unbuildable: set[str] = set()
        """Spaces whose build failed: they stay exact until the next start."""

    @property
    def kind(self) -> str:
        """``hybrid`` with an embedder, ``bm25`` without."""
        return "bm25" if self.embedder is None else "hybrid"

    def added(self, space: str, vectors: Mapping[int, Any]) -> None:
        """Committed vectors of a space's memories reach its cached index."""
        index = self._indexes.get(space)
        if vectors and index is not None:
            index.put(vectors)
            if build := self._builds.get(space):
                build.put(vectors)
            self._build_if_large(space, index)

    def removed(self, space: str, seqs: Collection[int]) -> None:
        """Committed removals (a memory deleted, or its text changed) reach the cache."""
        index = self._indexes.get(space)
        if seqs and index is not None:
            index.remove(seqs)
            if build := self._builds.get(space):
                build.remove(seqs)

    @property
    def building(self) -> bool:
        """Whether an approximate index is being built (it takes over at the next search)."""
        return any(not build.done for build in self._builds.values())

    def kind_of(self, space: str) -> Literal["none", "exact", "approximate"]:
        """``exact`` or ``approximate``: how the cached index of ``space`` scores (``none``
        when it is not cached)."""
        from .ann import ApproximateIndex

        index = self._indexes.get(space)
        if index is None:
            return "none"
        return "approximate" if isinstance(index, ApproximateIndex) else "exact"

    def forget(self, space: str) -> None:
        """Drop a space's cached index (the space is gone)."""
        self._indexes.pop(space, None)
        self._builds.pop(space, None)  # its thread ends by itself; its result is dropped

    async def embed(self, texts: Sequence[str]) -> list[Any]:
        """One vector per text, in one model call off the event loop (None without a model)."""
        if self.embedder is None or not texts:
            return [None] * len(texts)
        return list(await asyncio.to_thread(self.embedder.embed, list(texts)))

    @staticmethod
    def blob(vector: Any) -> bytes:
        """The stored form of a vector."""
        from .dense import to_blob

        return to_blob(vector)

    async def rank(
        self,
        db: Database,
        spaces: Sequence[str],
        query: str,
        categories: Sequence[str] | None,
        limit: int,
        query_vector: Any,
        removed: Collection[int] = (),
    ) -> list[int]:
        """The seqs of the best memories of ``spaces`` for ``query``, best first.

        ``removed`` are memories whose vectors this transaction dropped (not committed yet).
        """
        expression = match_expression(query)
        bm25 = await _bm25(db, spaces, expression, categories, max(limit, BM25_CANDIDATES))
        if self.embedder is None or query_vector is None:
            return _best(bm25, limit)
        from .dense import fuse

        indexes = [await self._index(db, space) for space in spaces]
        similar = await self._similar(db, indexes, spaces, query_vector, limit, removed, categories)
        cosines: dict[int, float] = {}
        for index in indexes:
            cosines.update(index.cosines(query_vector, bm25.keys() - set(removed)))
        fused = fuse(bm25, similar, cosines)
        # a memory no word of the query matched must at least be similar in meaning
        relevant = {
            seq: score
            for seq, score in fused.items()
            if seq in bm25 or similar.best.get(seq, 0.0) >= MIN_SIMILARITY
        }
        return _best(relevant, limit)

    async def _similar(
        self,
        db: Database,
        indexes: Sequence[VectorIndex],
        spaces: Sequence[str],
        query_vector: Any,
        limit: int,
        removed: Collection[int],
        categories: Sequence[str] | None,
    ) -> Similar:
        """The ``limit`` most similar memories of the categories asked, over every index."""
        from .dense import Similar, merge

        wanted = limit if categories is None else 4 * limit
        total = sum(len(index) for index in indexes)
        while True:
            similar = merge(
                (index.similar(query_vector, wanted, removed) for index in indexes), wanted
            )
            if categories is None:
                return similar
            allowed = await _seqs_in(db, spaces, categories, list(similar.best))
            best = {seq: score for seq, score in similar.best.items() if seq in allowed}
            if len(best) >= limit or wanted >= total:
                return Similar(dict(list(best.items())[:limit]), similar.low, similar.high)
            wanted *= 4

    async def _index(self, db: Database, space: str) -> VectorIndex:
        index = self._indexes.get(space)
        if index is not None:
            self._indexes.move_to_end(space)
            return self._promoted(space, index)
        from .dense import ExactIndex, from_blob

        assert self.embedder is not None
        rows = await db.execute_fetchall(
            "SELECT e.seq, e.vector FROM embeddings e JOIN memories m ON m.seq = e.seq"
            " WHERE m.space = ? AND e.model = ?",
            (space, self.embedder.name),
        )
        rows = list(rows)
        index = ExactIndex(self.embedder.dimensions, capacity=max(256, len(rows)))
        index.put({int(seq): from_blob(bytes(blob)) for seq, blob in rows})
        self._indexes[space] = index
        while len(self._indexes) > CACHED_SPACES:
            dropped, _ = self._indexes.popitem(last=False)
            self._builds.pop(dropped, None)
        self._build_if_large(space, index)
        return index

    def _build_if_large(self, space: str, index: VectorIndex) -> None:
        """Start building an approximate index for a space that has grown large."""
        from . import ann
        from .dense import ExactIndex

        if (
            isinstance(index, ExactIndex)
            and len(index) >= ann.ANN_FROM
            and space not in self._builds
            and space not in self._unbuildable
            and ann.available()
        ):
            self._builds[space] = ann.IndexBuild(index)

    def _promoted(self, space: str, index: VectorIndex) -> VectorIndex:
        """The space's approximate index once its build is done (the exact one until)."""
        build = self._builds.get(space)
        if build is None or not build.done:
            return index
        del self._builds[space]
        approximate = build.finished()
        if approximate is None:
            self._unbuildable.add(space)
            index.frozen = False  # type: ignore[attr-defined]
            return index
        self._indexes[space] = approximate
        return approximate


def _best(scores: dict[int, float], limit: int) -> list[int]:
    """Highest score first; among equal scores the newer memory (higher seq) first."""
    return sorted(scores, key=lambda seq: (-scores[seq], -seq))[:limit]


async def _bm25(
    db: Database,
    spaces: Sequence[str],
    expression: str | None,
    categories: Sequence[str] | None,
    limit: int,
) -> dict[int, float]:
    if expression is None:
        return {}
    where = f"memories_fts MATCH ? AND m.space IN ({', '.join('?' * len(spaces))})"
    params = [expression, *spaces]
    if categories is not None:
        where += f" AND m.category IN ({', '.join('?' * len(categories))})"
        params.extend(categories)
    # ORDER BY rank keeps FTS5's fast path (rank is bm25 with column weights; lower is better)
    rows = await db.execute_fetchall(
        "SELECT m.seq, rank FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid"
        f" WHERE {where} ORDER BY rank LIMIT ?",
        (*params, limit),
    )
    return {int(seq): -float(rank) for seq, rank in rows}


async def _seqs_in(
    db: Database,
    spaces: Sequence[str],
    categories: Sequence[str],
    seqs: Sequence[int],
) -> set[int]:
    """Which of ``seqs`` are memories of ``spaces`` in ``categories``."""
    if not seqs:
        return set()
    rows = await db.execute_fetchall(
        f"SELECT seq FROM memories WHERE seq IN ({', '.join('?' * len(seqs))})"
        f" AND space IN ({', '.join('?' * len(spaces))})"
        f" AND category IN ({', '.join('?' * len(categories))})",
        (*seqs, *spaces, *categories),
    )
    return {int(row[0]) for row in rows}

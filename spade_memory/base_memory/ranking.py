"""How the long-term store ranks: BM25 alone, or BM25 fused with dense similarity.

``Ranking`` owns the optional embedder and, per space (an owner's personal
space or a shared one), a cached matrix of memory vectors that follows every
committed write. A search over several spaces fuses over all of them. Vectors are stored with
the memories (table ``embeddings``, deleted with them), computed off the
event loop, and filled in for memories stored before dense search was on.
Ranking runs inside the store's transaction, on its connection, so no write
can slip in while an owner's matrix is built.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import aiosqlite

from ..storage.fts import match_expression

if TYPE_CHECKING:
    from .dense import DenseIndex
    from .embeddings import Embedder

Moved = dict[int, bytes | None]
"""Memory seq → its new stored vector, or None when it has none any more."""

BM25_CANDIDATES = 200
"""How many BM25 matches enter the fusion (dense similarity covers every memory)."""


CACHED_SPACES = 64
"""Spaces whose vector matrix stays in memory between searches (least recent dropped)."""
MIN_SIMILARITY = 0.25
"""Cosine a memory needs to be returned on meaning alone (unrelated text scores near 0)."""


def embedding_text(content: str, context: str | None) -> str:
    """What is embedded: the context (when, why, what came before), then the content."""
    return f"{context}\n{content}" if context else content


class Ranking:
    """BM25, plus dense similarity when an embedder is loaded."""

    def __init__(self, embedder: Embedder | None) -> None:
        self.embedder = embedder
        self._indexes: OrderedDict[str, DenseIndex] = OrderedDict()

    @property
    def kind(self) -> str:
        """``hybrid`` with an embedder, ``bm25`` without."""
        return "bm25" if self.embedder is None else "hybrid"

    def moved(self, space: str, moved: Moved) -> None:
        """Committed vector changes of a space's memories reach its cached matrix."""
        index = self._indexes.get(space)
        if moved and index is not None:
            self._indexes[space] = index.changed(moved)

    def forget(self, space: str) -> None:
        """Drop a space's cached matrix (the space is gone)."""
        self._indexes.pop(space, None)

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
        db: aiosqlite.Connection,
        spaces: Sequence[str],
        query: str,
        categories: Sequence[str] | None,
        limit: int,
        query_vector: Any,
        pending: dict[str, Moved],
    ) -> list[int]:
        """The seqs of the best memories of ``spaces`` for ``query``, best first.

        ``pending`` are vector changes of this transaction, not committed yet, by space.
        """
        expression = match_expression(query)
        bm25 = await _bm25(db, spaces, expression, categories, max(limit, BM25_CANDIDATES))
        if self.embedder is None or query_vector is None:
            return _best(bm25, limit)
        from .dense import fuse

        dense: dict[int, float] = {}
        for space in spaces:
            index = await self._index(db, space, pending.get(space, {}))
            dense.update(index.similarities(query_vector))
        if categories is not None:
            allowed = await _seqs_in(db, spaces, categories)
            dense = {seq: score for seq, score in dense.items() if seq in allowed}
        fused = fuse(bm25, dense)
        # a memory no word of the query matched must at least be similar in meaning
        relevant = {
            seq: score
            for seq, score in fused.items()
            if seq in bm25 or dense.get(seq, 0.0) >= MIN_SIMILARITY
        }
        return _best(relevant, limit)

    async def _index(self, db: aiosqlite.Connection, space: str, pending: Moved) -> DenseIndex:
        index = self._indexes.get(space)
        if index is not None:
            self._indexes.move_to_end(space)
            return index.changed(pending) if pending else index
        await self._fill_missing(db, space)
        from .dense import DenseIndex

        rows = await db.execute_fetchall(
            "SELECT e.seq, e.vector FROM embeddings e JOIN memories m ON m.seq = e.seq"
            " WHERE m.space = ?",
            (space,),
        )
        assert self.embedder is not None
        index = DenseIndex.from_rows(
            [(int(r[0]), bytes(r[1])) for r in rows], self.embedder.dimensions
        )
        if not pending:  # built from committed rows only: it may be kept
            self._indexes[space] = index
            while len(self._indexes) > CACHED_SPACES:
                self._indexes.popitem(last=False)
        return index

    async def _fill_missing(self, db: aiosqlite.Connection, space: str) -> None:
        """Embed the space's memories that have no vector yet (stored without the extra)."""
        assert self.embedder is not None
        missing = await db.execute_fetchall(
            "SELECT m.seq, m.content, m.context FROM memories m"
            " LEFT JOIN embeddings e ON e.seq = m.seq WHERE m.space = ? AND e.seq IS NULL",
            (space,),
        )
        if not missing:
            return
        vectors = await self.embed([embedding_text(str(row[1]), row[2]) for row in missing])
        await db.executemany(
            "INSERT OR REPLACE INTO embeddings (seq, model, vector) VALUES (?, ?, ?)",
            [
                (int(row[0]), self.embedder.name, self.blob(vector))
                for row, vector in zip(missing, vectors, strict=True)
            ],
        )


def _best(scores: dict[int, float], limit: int) -> list[int]:
    """Highest score first; among equal scores the newer memory (higher seq) first."""
    return sorted(scores, key=lambda seq: (-scores[seq], -seq))[:limit]


async def _bm25(
    db: aiosqlite.Connection,
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
    db: aiosqlite.Connection, spaces: Sequence[str], categories: Sequence[str]
) -> set[int]:
    rows = await db.execute_fetchall(
        f"SELECT seq FROM memories WHERE space IN ({', '.join('?' * len(spaces))})"
        f" AND category IN ({', '.join('?' * len(categories))})",
        (*spaces, *categories),
    )
    return {int(row[0]) for row in rows}

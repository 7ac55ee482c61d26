"""How the long-term store ranks: BM25 alone, or BM25 fused with dense similarity.

``Ranking`` owns the optional embedder and, per owner, a cached matrix of
memory vectors (rebuilt after that owner's next write). Vectors are stored
with the memories (table ``embeddings``, deleted with them), computed off the
event loop, and filled in for memories stored before dense search was on.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import aiosqlite

from .connection import Transactions
from .fts import match_expression

if TYPE_CHECKING:
    from ..embeddings import Embedder
    from .dense import DenseIndex

Moved = dict[int, bytes | None]
"""Memory seq → its new stored vector, or None when it has none any more."""

BM25_CANDIDATES = 200
"""How many BM25 matches enter the fusion (dense similarity covers every memory)."""


CACHED_OWNERS = 64
"""Owners whose vector matrix stays in memory between searches (least recent dropped)."""
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
        self._writes: dict[str, int] = {}
        """Writes per owner: an index built while one happened is not kept."""

    @property
    def kind(self) -> str:
        return "bm25" if self.embedder is None else "hybrid"

    def moved(self, owner: str, moved: Moved) -> None:
        """Committed vector changes of the owner's memories reach the cached matrix."""
        if not moved:
            return
        self._writes[owner] = self._writes.get(owner, 0) + 1
        index = self._indexes.get(owner)
        if index is not None:
            self._indexes[owner] = index.changed(moved)

    async def vector(self, content: str, context: str | None) -> bytes | None:
        """The stored form of a memory's vector (None without an embedder)."""
        if self.embedder is None:
            return None
        from .dense import to_blob

        vectors = await asyncio.to_thread(self.embedder.embed, [embedding_text(content, context)])
        return to_blob(vectors[0])

    async def rank(
        self,
        tx: Transactions,
        owner: str,
        query: str,
        categories: Sequence[str] | None,
        limit: int,
    ) -> list[int]:
        """The seqs of the owner's best memories for ``query``, best first."""
        expression = match_expression(query)
        async with tx.read() as db:
            bm25 = await _bm25(db, owner, expression, categories, max(limit, BM25_CANDIDATES))
        if self.embedder is None:
            return _best(bm25, limit)
        from .dense import fuse

        index = await self._index(tx, owner)
        query_vector = (await asyncio.to_thread(self.embedder.embed, [query]))[0]
        dense = index.similarities(query_vector)
        if categories is not None:
            allowed = await _seqs_in(tx, owner, categories)
            dense = {seq: score for seq, score in dense.items() if seq in allowed}
        fused = fuse(bm25, dense)
        # a memory no word of the query matched must at least be similar in meaning
        relevant = {
            seq: score
            for seq, score in fused.items()
            if seq in bm25 or dense.get(seq, 0.0) >= MIN_SIMILARITY
        }
        return _best(relevant, limit)

    async def _index(self, tx: Transactions, owner: str) -> DenseIndex:
        index = self._indexes.get(owner)
        if index is not None:
            self._indexes.move_to_end(owner)
        else:
            writes = self._writes.get(owner, 0)
            await self._fill_missing(tx, owner)
            from .dense import DenseIndex

            async with tx.read() as db:
                rows = await db.execute_fetchall(
                    "SELECT e.seq, e.vector FROM embeddings e JOIN memories m ON m.seq = e.seq"
                    " WHERE m.owner = ?",
                    (owner,),
                )
            assert self.embedder is not None
            index = DenseIndex.from_rows(
                [(int(r[0]), bytes(r[1])) for r in rows], self.embedder.dimensions
            )
            if self._writes.get(owner, 0) == writes:
                self._indexes[owner] = index
                while len(self._indexes) > CACHED_OWNERS:
                    self._indexes.popitem(last=False)
        return index

    async def _fill_missing(self, tx: Transactions, owner: str) -> None:
        """Embed the owner's memories that have no vector yet (stored without the extra)."""
        assert self.embedder is not None
        async with tx.read() as db:
            missing = await db.execute_fetchall(
                "SELECT m.seq, m.content, m.context FROM memories m"
                " LEFT JOIN embeddings e ON e.seq = m.seq WHERE m.owner = ? AND e.seq IS NULL",
                (owner,),
            )
        if not missing:
            return
        from .dense import to_blob

        texts = [embedding_text(str(row[1]), row[2]) for row in missing]
        vectors = await asyncio.to_thread(self.embedder.embed, texts)
        async with tx.write() as db:
            await db.executemany(
                "INSERT OR REPLACE INTO embeddings (seq, model, vector) SELECT ?, ?, ?"
                " WHERE EXISTS (SELECT 1 FROM memories WHERE seq = ?)",
                [
                    (int(row[0]), self.embedder.name, to_blob(vector), int(row[0]))
                    for row, vector in zip(missing, vectors, strict=True)
                ],
            )


def _best(scores: dict[int, float], limit: int) -> list[int]:
    """Highest score first; among equal scores the newer memory (higher seq) first."""
    return sorted(scores, key=lambda seq: (-scores[seq], -seq))[:limit]


async def _bm25(
    db: aiosqlite.Connection,
    owner: str,
    expression: str | None,
    categories: Sequence[str] | None,
    limit: int,
) -> dict[int, float]:
    if expression is None:
        return {}
    where, params = "memories_fts MATCH ? AND m.owner = ?", [expression, owner]
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


async def _seqs_in(tx: Transactions, owner: str, categories: Sequence[str]) -> set[int]:
    async with tx.read() as db:
        rows = await db.execute_fetchall(
            "SELECT seq FROM memories WHERE owner = ?"
            f" AND category IN ({', '.join('?' * len(categories))})",
            (owner, *categories),
        )
    return {int(row[0]) for row in rows}

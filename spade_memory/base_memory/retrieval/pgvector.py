"""Vectors searched by PostgreSQL itself, with pgvector's HNSW index, when the server has it.

Without pgvector, each agent keeps the vectors of the spaces it searches in its own
memory (``ranking``), and on a shared database follows the others' commits
(``vector_notices``). With it, the database holds the only index: no agent reads
vectors into memory, a memory committed by any agent is found by meaning by all at
once, and the index grows with the database, not with each agent.

At open (``prepare``), under an advisory lock so agents starting together do it once:
the extension is created if the server has it and the role may (``CREATE EXTENSION``
needs a superuser: an administrator can run it once instead); ``embeddings`` gains a
``dense`` column of type ``vector``; the model's vectors stored before (by a
migration, or while the extension was missing) are copied into it; and an HNSW index
for cosine distance covers the model's rows (an expression index on
``dense::vector(N)``, partial on the model's name, so another model's vectors,
of another size, never meet it). Statements name the model and the size as literals:
a partial index serves only a query whose condition the planner can prove at plan time.

A search asks the index for the nearest memories of its spaces (with pgvector's
iterative scan, so filters that leave some out still fill the answer) and, from up to
``SAMPLE`` of the spaces' vectors, the span of cosines the fusion normalises over
(exact for a space that small, as the agent's own index is).
"""

from __future__ import annotations

import logging
import zlib
from array import array
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from spade_memory.storage.postgres import PgTransactions, shown
from spade_memory.storage.statements import placeholders

if TYPE_CHECKING:
    from spade_memory.base_memory.retrieval.dense import Similar
    from spade_memory.base_memory.retrieval.embeddings import Embedder
    from spade_memory.base_memory.store.filters import Selection
    from spade_memory.storage.connection import Database

logger = logging.getLogger("spade_memory.base_memory")

EXTENSION = "vector"
SAMPLE = 1024
"""Vectors of the searched spaces whose cosines give the low end of the span (the
agent's approximate index samples 4,096, in memory; here each is read from the
database)."""
EF_SEARCH = 100
"""Candidates the HNSW graph search keeps (pgvector's default, 40, agreed less often
with exact search on the top 10; see ``docs/performance.md``)."""
FILL_CHUNK = 1000
"""Stored vectors read at a time when they are copied into ``dense``."""
BUILD_MEMORY = "256MB"
"""``maintenance_work_mem`` while the index is built (pgvector builds far faster when
the graph fits in it: some 150,000 vectors of 384 dimensions)."""


def as_vector(vector: Any) -> list[float]:
    """A vector as the statements here pass it: a list of floats, sent as ``real[]`` in
    asyncpg's binary form and cast to ``vector`` by the server (cheaper than
    pgvector's text form, which Python would have to format)."""
    return list(vector.tolist())


_QUERY = "(SELECT ?::real[]::vector)"
"""The query's vector in a statement: a subquery, so the server converts it once, not
once per row it compares (which cost more than the comparison)."""


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class DatabaseVectors:
    """One model's vectors in the database's HNSW index: the SQL that writes and
    searches them."""

    def __init__(self, model: str, dimensions: int) -> None:
        self.model, self.dimensions = model, dimensions
        self._dense = f"e.dense::vector({int(dimensions)})"
        self._of_model = f"e.model = {_literal(model)} AND e.dense IS NOT NULL"

    @property
    def index_name(self) -> str:
        """The index's name: one per model and size."""
        return f"embeddings_hnsw_{zlib.crc32(self.model.encode()):08x}_{self.dimensions}"

    WRITE = (
        "INSERT INTO embeddings (seq, model, vector, dense) VALUES (?, ?, ?, ?::real[]::vector)"
        " ON CONFLICT (seq) DO UPDATE SET model = excluded.model, vector = excluded.vector,"
        " dense = excluded.dense"
    )
    """Stores a vector (seq, model, blob, ``as_vector``) in both forms."""

    def nearest(self, spaces: int, selection: Selection) -> str:
        """The statement that asks the index for the memories of ``spaces`` spaces nearest
        a vector, that ``selection`` lets through: parameters are the vector, the spaces,
        the selection's, and how many."""
        where = f"{self._of_model} AND m.space IN ({', '.join('?' * spaces)})"
        if selection.narrows:
            where += f" AND {selection.sql}"
        return (
            f"SELECT e.seq, {self._dense} <=> {_QUERY} AS distance"
            " FROM embeddings e JOIN memories m ON m.seq = e.seq"
            f" WHERE {where} ORDER BY distance LIMIT ?"
        )

    async def similar(
        self,
        db: Database,
        spaces: Sequence[str],
        query: Any,
        limit: int,
        selection: Selection,
        seqs: Collection[int],
    ) -> tuple[Similar, dict[int, float]]:
        """The ``limit`` memories of ``spaces`` nearest ``query`` that ``selection`` lets
        through, with the span of cosines, and the cosines of ``seqs`` (BM25's
        candidates)."""
        from spade_memory.base_memory.retrieval.dense import Similar

        text = as_vector(query)
        in_spaces = f"m.space IN ({placeholders(spaces)})"
        await db.execute(
            "SELECT set_config('hnsw.ef_search', ?, true),"
            " set_config('hnsw.iterative_scan', 'strict_order', true)",
            (str(min(1000, max(EF_SEARCH, 4 * limit))),),
        )
        nearest = await db.execute_fetchall(
            self.nearest(len(spaces), selection), (text, *spaces, *selection.params, limit)
        )
        best = {int(seq): 1.0 - float(distance) for seq, distance in nearest}
        (span,) = await db.execute_fetchall(
            "SELECT MIN(cosine), MAX(cosine) FROM"
            f" (SELECT 1 - ({self._dense} <=> {_QUERY}) AS cosine"
            " FROM embeddings e JOIN memories m ON m.seq = e.seq"
            f" WHERE {self._of_model} AND {in_spaces} LIMIT {SAMPLE}) AS sample",
            (text, *spaces),
        )
        low, high = span
        cosines: dict[int, float] = {}
        if seqs:
            rows = await db.execute_fetchall(
                f"SELECT e.seq, 1 - ({self._dense} <=> {_QUERY}) FROM embeddings e"
                f" WHERE {self._of_model} AND e.seq IN ({placeholders(seqs)})",
                (text, *seqs),
            )
            cosines = {int(seq): float(cosine) for seq, cosine in rows}
        if low is None:
            return Similar(best, 0.0, 0.0), cosines
        top = max(best.values(), default=float(high))
        return Similar(best, float(low), max(float(high), top)), cosines


async def prepare(tx: PgTransactions, embedder: Embedder) -> DatabaseVectors | None:
    """Make the database search ``embedder``'s vectors (see the module's text).

    Returns how to write and search them, or None when the server has no pgvector, or
    the extension is missing and this role may not create it (the agent's own index
    then serves, and the log says why)."""
    import asyncpg

    vectors = DatabaseVectors(embedder.name, embedder.dimensions)
    lock = zlib.crc32(b"spade-memory:base_memory:pgvector")
    async with tx.pool.acquire() as conn:
        await conn.execute("SELECT pg_advisory_lock($1)", lock)
        try:
            if not await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = $1)", EXTENSION
            ):
                if not await conn.fetchval(
                    "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = $1)",
                    EXTENSION,
                ):
                    logger.info(
                        "%s has no pgvector: each agent searches vectors itself", shown(tx.url)
                    )
                    return None
                try:
                    await conn.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")
                except asyncpg.InsufficientPrivilegeError:
                    logger.warning(
                        "%s: pgvector is installed but this role may not create it; each"
                        " agent searches vectors itself (a superuser can run"
                        " CREATE EXTENSION vector in the database once)", shown(tx.url),
                    )  # fmt: skip
                    return None
            if not await conn.fetchval(  # altered once: ALTER TABLE locks out every reader
                "SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema"
                " = current_schema() AND table_name = 'embeddings' AND column_name = 'dense')"
            ):
                # kept in the row, not in TOAST (the blob goes there): a search reads it
                await conn.execute(
                    "ALTER TABLE embeddings ADD COLUMN dense vector,"
                    " ALTER COLUMN dense SET STORAGE PLAIN"
                )
            copied = await _fill(conn, vectors)
            built = not await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = $1)", vectors.index_name
            )
            if built:
                async with conn.transaction():
                    await conn.execute(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'")
                    await conn.execute(
                        f"CREATE INDEX {vectors.index_name} ON embeddings USING hnsw"
                        f" ((dense::vector({vectors.dimensions})) vector_cosine_ops)"
                        f" WHERE model = {_literal(vectors.model)}"
                    )
            if copied or built:  # the planner must know the index pays (autovacuum is slow)
                await conn.execute("ANALYZE embeddings, memories")
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", lock)
    return vectors


async def fill_all(conn: Any) -> int:
    """Copy into ``dense`` every model's vectors stored without it (a migration into a
    database whose agents already search with pgvector); returns how many."""
    models = await conn.fetch(
        "SELECT DISTINCT model, octet_length(vector) / 4 FROM embeddings WHERE dense IS NULL"
    )
    copied = 0
    for model, dimensions in models:
        copied += await _fill(conn, DatabaseVectors(str(model), int(dimensions)))
    return copied


async def _fill(conn: Any, vectors: DatabaseVectors) -> int:
    """Copy into ``dense`` the model's vectors stored without it; returns how many."""
    copied, after = 0, -1
    while rows := await conn.fetch(  # in the order of the key, from where the last chunk ended
        "SELECT seq, vector FROM embeddings WHERE seq > $1 AND model = $2 AND dense IS NULL"
        " ORDER BY seq LIMIT $3",
        after,
        vectors.model,
        FILL_CHUNK,
    ):
        await conn.executemany(
            "UPDATE embeddings SET dense = $2::real[]::vector WHERE seq = $1",
            [(seq, array("f", bytes(blob)).tolist()) for seq, blob in rows],
        )
        copied += len(rows)
        after = rows[-1][0]
    if copied:
        logger.info("%d stored vectors copied into the database's index", copied)
    return copied

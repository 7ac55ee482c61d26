"""PostgreSQL searching the vectors itself (pgvector's HNSW index), on a real server with
the extension, beside the agent's own index that serves where the extension is missing.

The hybrid search tests run on this engine too (``vector_location``); these check what
is particular to it: the index and its use, the answers agreeing with exact search, a
role that may not create the extension, vectors stored before it existed, and two
agents finding each other's memories with no cache to keep current.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path

import pytest

from spade_memory.base_memory.retrieval.embeddings import Embedder
from spade_memory.base_memory.service import DATABASE
from spade_memory.base_memory.store.filters import Selection
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import MemoryList, MemoryStats, MemoryStatsOp, SearchMemories
from spade_memory.server.migrate import migrate
from spade_memory.storage.postgres import numbered
from spade_memory.testing import PostgresServer
from tests.support.stores import PETS, QUESTION, put, query, search

ALICE = "alice@localhost"


@pytest.fixture
def url(pgvector_server: PostgresServer, request: pytest.FixtureRequest) -> str:
    return pgvector_server.database(f"vec_{request.node.name[5:40]}")


def labelled() -> list[str]:
    """About 400 short memories of every category (the classifier's own examples)."""
    text = resources.files("spade_memory.base_memory.classify").joinpath("labelled_memories.jsonl")
    return [json.loads(line)["text"] for line in text.read_text().splitlines() if line]


async def stats(store: LongTermStore) -> MemoryStats:
    result = await store.apply(ALICE, MemoryStatsOp())
    assert isinstance(result, MemoryStats)
    return result


async def test_the_database_searches_with_an_hnsw_index_it_really_uses(
    url: str, embedder: Embedder
) -> None:
    """The index exists and holds every vector; once a space is past a few thousand
    memories (here 3,000 random vectors, written as the agent writes them), PostgreSQL
    answers the search's statement from it (smaller spaces are scored whole: cheaper)."""
    import asyncpg
    import numpy as np

    from spade_memory.base_memory.retrieval.pgvector import as_vector

    store = await LongTermStore.open(url, embedder=embedder)
    try:
        for text in PETS:
            await put(store, text)
        await store.embedded()
        assert (await stats(store)).vector_index == "pgvector"
        assert store.ranking.cached_spaces == 0  # no vector read into the agent
        vectors = store.ranking.in_database
        assert vectors is not None
    finally:
        await store.close()
    ((definition,),) = await query(
        url, "SELECT indexdef FROM pg_indexes WHERE indexname = ?", vectors.index_name
    )
    assert "USING hnsw" in str(definition) and "vector_cosine_ops" in str(definition)
    rng = np.random.default_rng(7)
    many = rng.standard_normal((3000, embedder.dimensions)).astype(np.float32)
    many /= np.linalg.norm(many, axis=1, keepdims=True)
    conn = await asyncpg.connect(url)
    try:
        await conn.executemany(
            "INSERT INTO memories (seq, id, owner, category, content, created_at,"
            " last_accessed, space) VALUES ($1, $2, $3, 'fact', $4, 0, 0, $3)",
            [(1000 + n, f"random-{n}", ALICE, f"random {n}") for n in range(len(many))],
        )
        await conn.executemany(
            numbered(vectors.WRITE),
            [
                (1000 + n, vectors.model, vector.tobytes(), as_vector(vector))
                for n, vector in enumerate(many)
            ],
        )
        ((filled, total),) = await conn.fetch("SELECT COUNT(dense), COUNT(*) FROM embeddings")
        assert filled == total == len(PETS) + len(many)
        await conn.execute("ANALYZE")  # as autovacuum does after a while
        plan = await conn.fetch(
            "EXPLAIN " + numbered(vectors.nearest(1, Selection())),
            as_vector(many[0]), ALICE, 10,
        )  # fmt: skip
    finally:
        await conn.close()
    assert f"Index Scan using {vectors.index_name}" in "\n".join(row[0] for row in plan)


def agree(one: MemoryList, other: MemoryList) -> None:
    """``one``'s memories are ``other``'s, in the same order, with the same scores but
    for float rounding (pgvector computes its distances in its own code)."""
    assert [m.content for m in one.memories] == [m.content for m in other.memories]
    for ours, theirs in zip(one.memories, other.memories, strict=True):
        assert ours.score == pytest.approx(theirs.score, abs=1e-4)


async def test_its_answers_are_those_of_exact_search(
    url: str, embedder: Embedder, postgres_server: PostgresServer
) -> None:
    """The same memories on Debian's PostgreSQL (every vector scored by the agent) and
    on one with pgvector (its index): the same queries return the same memories, with
    the same scores but for rounding (words are ranked by PostgreSQL on both)."""
    exact = await LongTermStore.open(postgres_server.database("exact"), embedder=embedder)
    indexed = await LongTermStore.open(url, embedder=embedder)
    try:
        texts = labelled()
        for text in texts:
            await put(exact, text)
            await put(indexed, text)
        await asyncio.gather(exact.embedded(), indexed.embedded())
        queries = [QUESTION, "who likes tea", "what breaks on Mondays", *texts[::20]]
        for asked in queries:
            ours, theirs = await search(indexed, asked), await search(exact, asked)
            agree(ours, theirs)
            assert ours.reasoning is not None and ours.reasoning.strategy == "hybrid"
    finally:
        await exact.close()
        await indexed.close()


async def test_without_the_right_to_create_it_the_agent_searches_until_it_exists(
    pgvector_server: PostgresServer, embedder: Embedder
) -> None:
    """A role that may not create the extension gets the agent's own index (and a
    warning); once a superuser has created it, the next start copies the vectors
    stored meanwhile into the database's index and searches there."""
    admin = pgvector_server.database("vec_later")
    await query(admin, "CREATE ROLE agent LOGIN")
    await query(admin, "ALTER DATABASE vec_later OWNER TO agent")
    url = admin.replace("postgres@", "agent@")
    store = await LongTermStore.open(url, embedder=embedder)
    try:
        for text in PETS:
            await put(store, text)
        await store.embedded()
        assert [m.content for m in (await search(store, QUESTION, limit=1)).memories] == [PETS[0]]
        assert (await stats(store)).vector_index == "exact"
        assert store.ranking.in_database is None
    finally:
        await store.close()
    await query(admin, "CREATE EXTENSION vector")
    store = await LongTermStore.open(url, embedder=embedder)
    try:
        assert (await stats(store)).vector_index == "pgvector"
        ((filled,),) = await query(admin, "SELECT COUNT(dense) FROM embeddings")
        assert filled == len(PETS)
        found = await search(store, QUESTION, limit=1)
        assert [m.content for m in found.memories] == [PETS[0]]
    finally:
        await store.close()


async def test_two_agents_find_each_others_memories_with_nothing_to_listen_for(
    url: str, embedder: Embedder
) -> None:
    first, second = await asyncio.gather(
        LongTermStore.open(url, embedder=embedder), LongTermStore.open(url, embedder=embedder)
    )
    try:
        await search(second, QUESTION)
        dog = await put(first, PETS[0])
        await first.embedded()
        found = await search(second, QUESTION)
        assert [m.id for m in found.memories] == [dog.id]  # at once: the index is shared
        listening = await query(
            url, "SELECT COUNT(*) FROM pg_stat_activity"
            " WHERE application_name = 'spade-memory vector notices'",
        )  # fmt: skip
        assert listening == [(0,)]
    finally:
        await first.close()
        await second.close()


@pytest.fixture
async def agent_indexed(
    postgres_server: PostgresServer, embedder: Embedder
) -> AsyncIterator[LongTermStore]:
    """A store on Debian's PostgreSQL, which has no pgvector."""
    store = await LongTermStore.open(postgres_server.database("no_vec"), embedder=embedder)
    yield store
    await store.close()


async def test_a_server_without_pgvector_leaves_the_vectors_to_the_agent(
    agent_indexed: LongTermStore,
) -> None:
    for text in PETS:
        await put(agent_indexed, text)
    await agent_indexed.embedded()
    found = await agent_indexed.apply(ALICE, SearchMemories(query=QUESTION, limit=1))
    assert isinstance(found, MemoryList) and [m.content for m in found.memories] == [PETS[0]]
    assert agent_indexed.ranking.in_database is None
    assert (await stats(agent_indexed)).vector_index == "exact"


async def test_a_migration_into_a_database_searched_with_pgvector_fills_its_index(
    pgvector_server: PostgresServer, embedder: Embedder, tmp_path: Path
) -> None:
    """An agent already serves the (empty) database when the memories of a data
    directory are moved in: their vectors reach the index, and that agent finds them
    by meaning without a restart."""
    local = await LongTermStore.open(tmp_path / DATABASE, embedder=embedder)
    for text in PETS:
        await put(local, text)
    await local.embedded()
    await local.close()
    url = pgvector_server.database("vec_migrated")
    serving = await LongTermStore.open(url, embedder=embedder)
    try:
        moved = await migrate(tmp_path, url)
        assert moved.rows["embeddings"] == len(PETS)
        assert await query(url, "SELECT COUNT(dense) FROM embeddings") == [(len(PETS),)]
        found = await search(serving, QUESTION, limit=1)
        assert [m.content for m in found.memories] == [PETS[0]]
    finally:
        await serving.close()

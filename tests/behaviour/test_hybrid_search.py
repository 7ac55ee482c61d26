"""Hybrid search (BM25 + MiniLM), query modes and de-duplication, on every engine: SQLite,
PostgreSQL with the agent searching vectors, PostgreSQL with pgvector searching them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_memory.base_memory.retrieval.embeddings import Embedder
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import (
    DeleteMemory,
    MemoryStats,
    MemoryStatsOp,
    UpdateMemory,
)
from tests.support.stores import PETS, QUESTION, Location, put, query, search

ALICE, BOB = "alice@localhost", "bob@localhost"


@pytest.fixture
async def hybrid(vector_location: Location, embedder: Embedder) -> AsyncIterator[LongTermStore]:
    store = await LongTermStore.open(vector_location("hybrid.db"), embedder=embedder)
    yield store
    await store.close()


@pytest.fixture
async def bm25(location: Location) -> AsyncIterator[LongTermStore]:
    store = await LongTermStore.open(location("bm25.db"))
    yield store
    await store.close()


async def vectors(where: str | Path) -> int:
    ((count,),) = await query(where, "SELECT COUNT(*) FROM embeddings")
    return int(str(count))


def test_a_text_has_one_vector_whatever_is_embedded_with_it(embedder: Embedder) -> None:
    """The model quantises its activations per call: a text's vector must not depend on
    the texts beside it (two stores of the same memories rank them alike)."""
    import numpy as np

    alone = embedder.embed([PETS[0]])
    beside_others = embedder.embed([PETS[1], PETS[0], " ".join(PETS) * 3])
    assert np.array_equal(alone[0], beside_others[1])


async def test_a_paraphrase_bm25_misses_is_found_by_the_hybrid(
    hybrid: LongTermStore, vector_location: Location
) -> None:
    bm25 = await LongTermStore.open(vector_location("bm25.db"))
    try:
        for text in PETS:
            await put(hybrid, text)
            await put(bm25, text)
        assert (await search(bm25, QUESTION)).memories == []
    finally:
        await bm25.close()
    found = await search(hybrid, QUESTION, limit=1)
    assert [m.content for m in found.memories] == [PETS[0]]
    assert found.mode == "semantic" and found.note is None
    # where BM25 already knows, the hybrid agrees
    exact = await search(hybrid, "quarterly taxes")
    assert [m.content for m in exact.memories] == [PETS[1]]  # unrelated ones stay out
    assert [m.content for m in (await search(hybrid, QUESTION)).memories] == [PETS[0]]
    assert (await search(hybrid, QUESTION, owner=BOB)).memories == []  # owners stay apart


async def test_vectors_follow_updates_and_deletes(
    hybrid: LongTermStore, vector_location: Location
) -> None:
    dog = await put(hybrid, PETS[0])
    for text in PETS[1:]:
        await put(hybrid, text)
    await search(hybrid, QUESTION)  # builds the owner's matrix
    await hybrid.apply(ALICE, UpdateMemory(id=dog.id, content="The family cat is called Tom"))
    found = await search(hybrid, "which kitten do we have", limit=1)
    assert [m.id for m in found.memories] == [dog.id]
    assert await vectors(vector_location("hybrid.db")) == 4
    await hybrid.apply(ALICE, DeleteMemory(id=dog.id))
    assert await vectors(vector_location("hybrid.db")) == 3
    found = await search(hybrid, "which kitten do we have")
    assert dog.id not in [m.id for m in found.memories]


async def test_memories_stored_without_vectors_get_them(
    vector_location: Location, embedder: Embedder
) -> None:
    path = vector_location("later.db")
    plain = await LongTermStore.open(path)
    for text in PETS:
        await put(plain, text)
    assert (await plain.apply(ALICE, MemoryStatsOp())).search == "bm25"  # type: ignore[union-attr]
    await plain.close()
    assert await vectors(path) == 0
    upgraded = await LongTermStore.open(path, embedder=embedder)
    try:
        found = await search(upgraded, QUESTION, limit=1)
        assert [m.content for m in found.memories] == [PETS[0]]
        stats = await upgraded.apply(ALICE, MemoryStatsOp())
        assert isinstance(stats, MemoryStats) and stats.search == "hybrid"
    finally:
        await upgraded.close()
    assert await vectors(path) == 4


async def test_query_modes(hybrid: LongTermStore) -> None:
    first = await put(hybrid, "The deploy key lives in the vault", "fact")
    liked = await put(hybrid, "Alice likes the deploy dashboard dark", "preference")
    newest = await put(hybrid, "Deploys run from the CI runner", "capability")
    recovered = await search(hybrid, "anything", mode="session_recovery")
    assert [m.id for m in recovered.memories] == [newest.id, liked.id, first.id]
    assert recovered.mode == "session_recovery"
    knowledge = await search(hybrid, "deploy", mode="knowledge_lookup")
    assert {m.id for m in knowledge.memories} == {first.id, newest.id}
    unknown = await search(hybrid, "deploy", mode="telepathy")
    assert unknown.mode == "semantic" and unknown.note is not None and "telepathy" in unknown.note
    assert {m.id for m in unknown.memories} == {first.id, liked.id, newest.id}


@pytest.fixture(params=["hybrid", "bm25"])
async def either(
    request: pytest.FixtureRequest, vector_location: Location, embedder: Embedder
) -> AsyncIterator[LongTermStore]:
    dense = embedder if request.param == "hybrid" else None
    store = await LongTermStore.open(vector_location("either.db"), embedder=dense)
    yield store
    await store.close()


async def test_the_same_memory_twice_is_reinforced_not_added(either: LongTermStore) -> None:
    store = either
    original = await put(store, "The API lives at /v2", confidence=0.6)
    again = await put(store, "  the api   LIVES at /v2 ", confidence=0.9)
    assert again.deduplicated and again.id == original.id and not original.deduplicated
    assert not (await put(store, "The API lives at /v2", "pattern")).deduplicated
    assert not (await put(store, "The API lives at /v2", owner=BOB)).deduplicated
    found = await search(store, "API")
    ours = [m for m in found.memories if m.id == original.id]
    assert ours[0].confidence == 0.9 and ours[0].access_count >= 1
    assert len(found.memories) == 2  # alice's fact and pattern, not a third copy
    feed = await store.changes_since(0)
    assert [c.kind for c in feed.changes if c.memory_id == original.id] == ["stored", "updated"]


async def test_a_memory_stored_after_a_search_is_found_by_meaning(hybrid: LongTermStore) -> None:
    for text in PETS[1:]:
        await put(hybrid, text)
    assert (await search(hybrid, QUESTION)).memories == []  # the owner's matrix is built
    dog = await put(hybrid, PETS[0])
    assert [m.id for m in (await search(hybrid, QUESTION)).memories] == [dog.id]


async def test_equal_scores_put_the_newer_memory_first(bm25: LongTermStore) -> None:
    older = await put(bm25, "alpha beta", "fact")
    newer = await put(bm25, "alpha beta", "pattern")  # the same text: the same BM25 score
    assert [m.id for m in (await search(bm25, "alpha")).memories] == [newer.id, older.id]

"""The approximate index of large spaces answers what exact search answers, and takes
over from it without losing a change made while it was built (real faiss, real MiniLM)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from spade_memory.base_memory.retrieval import ann, ranking
from spade_memory.base_memory.retrieval.dense import ExactIndex
from spade_memory.base_memory.retrieval.embeddings import MiniLMEmbedder
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import (
    DeleteMemory,
    MemoryList,
    SearchMemories,
    Stored,
    StoreMemory,
)

ALICE = "alice@localhost"


def clustered(rng: np.random.Generator, count: int, centres: np.ndarray) -> np.ndarray:
    """Unit vectors around random centres (cosine to their centre about 0.6), like
    sentence embeddings, which are far from uniform."""
    near = centres[rng.integers(0, len(centres), count)]
    vectors = near + rng.normal(scale=0.045, size=(count, centres.shape[1]))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_the_approximate_index_agrees_with_exact_search() -> None:
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(100, 384))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vectors = clustered(rng, 6000, centres)
    exact = ExactIndex(384)
    exact.put({seq: vectors[seq] for seq in range(6000)})
    approximate = ann.ApproximateIndex.build(*exact.rows())
    gone = set(range(0, 6000, 7))  # the same changes on both
    exact.remove(gone)
    approximate.remove(gone)
    moved = {seq: clustered(rng, 1, centres)[0] for seq in range(1, 600, 7)}
    exact.put(moved)
    approximate.put(moved)
    assert len(approximate) == len(exact)
    recalls, spans = [], []
    for query in clustered(rng, 50, centres):
        truth, found = exact.similar(query, 10, ()), approximate.similar(query, 10, ())
        assert not gone & found.best.keys()
        recalls.append(len(truth.best.keys() & found.best.keys()) / 10)
        spans.append((found.low - truth.low, found.high - truth.high))
        cosines = approximate.cosines(query, truth.best)
        assert all(abs(cosines[seq] - truth.best[seq]) < 0.02 for seq in truth.best)
    assert float(np.mean(recalls)) >= 0.95, recalls
    assert all(low >= -0.02 and abs(high) < 0.02 for low, high in spans)


DOG = "The family dog is called Rex and loves the beach"
QUESTION = "what is the name of our puppy"


async def test_a_large_space_moves_to_the_approximate_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "ANN_FROM", 60)
    monkeypatch.setattr(ann, "PROBED_SHARE", 1.0)  # every cell: this checks the takeover
    store = await LongTermStore.open(tmp_path / "large.db", embedder=MiniLMEmbedder())
    try:
        for n in range(80):
            await store.apply(ALICE, StoreMemory(category="fact", content=f"note {n} on item {n}"))
        await store.embedded()

        async def search(query: str) -> list[str]:
            found = await store.apply(ALICE, SearchMemories(query=query, limit=3))
            assert isinstance(found, MemoryList)
            return [memory.content for memory in found.memories]

        assert await search("note 5 item 5") != []  # builds the exact index, starts the build
        assert store.ranking.kind_of(ALICE) == "exact"
        dog = await store.apply(ALICE, StoreMemory(category="fact", content=DOG))
        assert isinstance(dog, Stored)
        await store.embedded()  # its vector reaches the exact index and the build's log
        while store.ranking.building:
            await asyncio.sleep(0.05)
        assert (await search(QUESTION))[0] == DOG  # replayed onto the new index
        assert store.ranking.kind_of(ALICE) == "approximate"
        await store.apply(ALICE, DeleteMemory(id=dog.id))
        assert DOG not in await search(QUESTION)
    finally:
        await store.close()


async def test_a_large_space_is_read_in_the_background_after_a_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its first search is answered by words at once; meaning joins once its vectors are
    read, including a memory stored while they were being read."""
    monkeypatch.setattr(ranking, "LOAD_IN_BACKGROUND_FROM", 50)
    path, model = tmp_path / "restart.db", MiniLMEmbedder()
    store = await LongTermStore.open(path, embedder=model)
    for n in range(60):
        await store.apply(ALICE, StoreMemory(category="fact", content=f"note {n} on item {n}"))
    await store.apply(ALICE, StoreMemory(category="fact", content=DOG))
    await store.embedded()
    await store.close()

    store = await LongTermStore.open(path, embedder=model)  # nothing cached: a start
    try:

        async def search(query: str) -> list[str]:
            found = await store.apply(ALICE, SearchMemories(query=query, limit=3))
            assert isinstance(found, MemoryList)
            return [memory.content for memory in found.memories]

        assert await search("Rex beach") == [DOG]  # by words, while the vectors are read
        assert store.ranking.kind_of(ALICE) == "none"
        cat = "Our cat Tom sleeps on the sofa all day"
        await store.apply(ALICE, StoreMemory(category="fact", content=cat))
        await store.embedded()  # its vector reaches the read's log
        while store.ranking.building:
            await asyncio.sleep(0.05)
        assert (await search(QUESTION))[0] == DOG
        assert (await search("which kitten lives with us"))[0] == cat
        assert store.ranking.kind_of(ALICE) == "exact"
    finally:
        await store.close()

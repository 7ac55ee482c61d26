"""Vectors computed after the write: what a store acknowledged before its vector exists
can be found by, a burst of stores served before the model, a crash before the
embedding, and the dense side's candidates.

Real SQLite files and the real MiniLM model; the only thing added is a gate
that holds the background embedding thread, so the test knows it has not run.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest

from spade_memory.base_memory.retrieval import backfill, model_file
from spade_memory.base_memory.retrieval.dense import ExactIndex, fuse
from spade_memory.base_memory.retrieval.embeddings import Embedder, MiniLMEmbedder
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import (
    MemoryList,
    SearchMemories,
    Stored,
    StoreMemory,
    UpdateMemory,
)
from spade_memory.storage.connection import Transacting
from tests.support.stores import HeldInBackground

T = TypeVar("T")
ALICE = "alice@localhost"
DOG = "The family dog is called Rex and loves the beach"
QUESTION = "what is the name of our puppy"  # no word in common with DOG


@pytest.fixture(scope="module")
def model() -> Embedder:
    return MiniLMEmbedder()


@pytest.fixture
async def held(
    tmp_path: Path, model: Embedder, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[LongTermStore, HeldInBackground]]:
    monkeypatch.setattr(backfill, "ON_DEMAND", 0)  # a search never embeds first
    embedder = HeldInBackground(model)
    store = await LongTermStore.open(tmp_path / "held.db", embedder=embedder)
    yield store, embedder
    embedder.release()
    await store.close()


async def put(store: LongTermStore, content: str) -> str:
    stored = await store.apply(ALICE, StoreMemory(category="fact", content=content))
    assert isinstance(stored, Stored)
    return stored.id


async def found(store: LongTermStore, query: str) -> list[str]:
    result = await store.apply(ALICE, SearchMemories(query=query))
    assert isinstance(result, MemoryList)
    return [memory.content for memory in result.memories]


def vectors_in(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])


async def test_a_store_is_found_by_words_at_once_and_by_meaning_once_embedded(
    held: tuple[LongTermStore, HeldInBackground], tmp_path: Path
) -> None:
    store, embedder = held
    await put(store, DOG)
    await put(store, "Quarterly taxes are due on the fifteenth")
    await asyncio.to_thread(embedder.entered.wait, 30)  # the background holds them
    assert vectors_in(tmp_path / "held.db") == 0
    assert await found(store, "Rex beach") == [DOG]  # by words, at once
    assert await found(store, QUESTION) == []  # no vector yet, no word in common
    embedder.release()
    await store.embedded()
    assert vectors_in(tmp_path / "held.db") == 2
    assert await found(store, QUESTION) == [DOG]


def test_the_background_waits_for_a_pause_in_the_stores_but_not_for_ever() -> None:
    quiet, most = backfill.QUIET_SECONDS, backfill.MOST_DEFERRED_SECONDS
    assert backfill.pause_left(100.0, 100.0, 90.0) == pytest.approx(quiet)  # one just came
    assert backfill.pause_left(100.0 + quiet, 100.0, 90.0) == 0.0  # a pause: it starts
    # stores that never pause: it starts once the memories have waited long enough
    assert backfill.pause_left(200.0, 200.0, 200.0 - most) == 0.0
    assert backfill.pause_left(200.0, 200.0, 200.0 - most + 0.01) == pytest.approx(0.01)


async def test_stores_that_never_pause_hold_the_background_off_only_so_long(
    tmp_path: Path, model: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backfill, "QUIET_SECONDS", 3600.0)  # as if the stores never paused
    monkeypatch.setattr(backfill, "MOST_DEFERRED_SECONDS", 1.0)
    store = await LongTermStore.open(tmp_path / "busy.db", embedder=model)
    try:
        began = time.monotonic()
        await put(store, DOG)
        await asyncio.wait_for(store.embedded(), timeout=60)  # not an hour
        assert time.monotonic() - began >= 1.0  # not before its time either
        assert vectors_in(tmp_path / "busy.db") == 1
    finally:
        await store.close()


async def test_a_text_changed_while_it_was_embedded_gets_the_new_vector(
    held: tuple[LongTermStore, HeldInBackground],
) -> None:
    store, embedder = held
    memory_id = await put(store, "Quarterly taxes are due on the fifteenth")
    await asyncio.to_thread(embedder.entered.wait, 30)  # the old text is being embedded
    await store.apply(ALICE, UpdateMemory(id=memory_id, content=DOG))
    embedder.release()
    await store.embedded()
    assert await found(store, QUESTION) == [DOG]
    assert await found(store, "when do we pay the tax office") == []


class ChangedOnceCommitted:
    """The store's transactions as the background sees them, but the first one it commits
    is followed at once by a change of the memory's text: committed, and noted, before
    the background is back from its own commit."""

    def __init__(self, tx: Transacting, change: Callable[[], Awaitable[object]]) -> None:
        self._tx, self._change = tx, change
        self.changed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    async def inline(self, body: Callable[[Any], Coroutine[Any, Any, T]]) -> T:
        result = await self._tx.inline(body)
        if not self.changed:
            self.changed = True
            await self._change()
        return result


async def test_a_text_changed_just_after_its_vector_was_committed_gets_a_new_one(
    held: tuple[LongTermStore, HeldInBackground],
) -> None:
    store, embedder = held
    memory_id = await put(store, "Quarterly taxes are due on the fifteenth")
    changing = ChangedOnceCommitted(
        store._backfill._tx,  # type: ignore[union-attr]
        lambda: store.apply(ALICE, UpdateMemory(id=memory_id, content=DOG)),
    )
    store._backfill._tx = changing  # type: ignore[union-attr]
    embedder.release()
    await store.embedded()
    assert changing.changed
    assert await found(store, QUESTION) == [DOG]
    assert await found(store, "when do we pay the tax office") == []


async def test_a_search_embeds_the_few_memories_still_waiting(
    tmp_path: Path, model: Embedder
) -> None:
    embedder = HeldInBackground(model)  # the background never runs: the search does it
    store = await LongTermStore.open(tmp_path / "demand.db", embedder=embedder)
    try:
        await put(store, DOG)
        assert await found(store, QUESTION) == [DOG]
    finally:
        embedder.release()
        await store.close()


CRASHING_WRITER = """
import asyncio, os, sys, threading
from spade_memory.base_memory.retrieval.embeddings import MiniLMEmbedder
from spade_memory.protocol.memories import StoreMemory
from spade_memory.base_memory.store.long_term import LongTermStore

class Never(MiniLMEmbedder):
    def embed(self, texts):
        if threading.current_thread().name.startswith("spade-memory-embed"):
            threading.Event().wait()  # the background never gets to write a vector
        return super().embed(texts)

async def main():
    store = await LongTermStore.open(sys.argv[1], embedder=Never())
    for text in sys.argv[2:]:
        await store.apply("alice@localhost", StoreMemory(category="fact", content=text))
    print("stored", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_a_crash_before_the_embedding_loses_nothing(tmp_path: Path, model: Embedder) -> None:
    path = tmp_path / "crashed.db"
    texts = [DOG, "Quarterly taxes are due on the fifteenth", "Carol prefers green tea"]
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CRASHING_WRITER), str(path), *texts],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(writer.stdout.readline), 120)
        assert line.strip() == "stored"
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        if writer.stdout is not None:
            writer.stdout.close()
    assert vectors_in(path) == 0  # acknowledged, never embedded
    store = await LongTermStore.open(path, embedder=model)
    try:
        await store.embedded()  # found missing at start, embedded in the background
        assert vectors_in(path) == 3
        assert (await found(store, QUESTION))[0] == DOG
        assert sorted(await found(store, "quarterly taxes green tea Rex")) == sorted(texts)
    finally:
        await store.close()


def full_fusion(bm25: dict[int, float], dense: dict[int, float], limit: int) -> list[int]:
    """The fusion as first written: every memory's cosine normalised over all of them."""
    low, high = min(dense.values()), max(dense.values())
    b_low, b_high = min(bm25.values()), max(bm25.values())
    fused = {
        seq: 0.7 * ((bm25[seq] - b_low) / (b_high - b_low) if seq in bm25 else 0.0)
        + 0.3 * (dense[seq] - low) / (high - low)
        for seq in dense
    }
    return sorted(fused, key=lambda seq: (-fused[seq], -seq))[:limit]


@pytest.mark.parametrize("seed", range(20))
def test_the_candidates_give_the_fused_top_of_every_memory(seed: int) -> None:
    """Only BM25's candidates and the ``limit`` most similar are fused; the top is that of
    fusing every memory (holes left by removed vectors included)."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(500, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = ExactIndex(16, capacity=8)  # it grows
    index.put({seq: vectors[seq] for seq in range(500)})
    removed = set(rng.choice(500, size=150, replace=False).tolist())
    index.remove(removed)
    kept = [seq for seq in range(500) if seq not in removed]
    query = rng.normal(size=16).astype(np.float32)
    query /= np.linalg.norm(query)
    bm25 = {int(seq): float(rng.uniform(1, 9)) for seq in rng.choice(kept, 40, replace=False)}
    similar = index.similar(query, 10, exclude=())
    fused = fuse(bm25, similar, index.cosines(query, bm25))
    ours = sorted(fused, key=lambda seq: (-fused[seq], -seq))[:10]
    everything = {seq: float(vectors[seq] @ query) for seq in kept}
    assert ours == full_fusion(bm25, everything, 10)
    assert list(similar.best) == sorted(everything, key=lambda s: -everything[s])[:10]


def test_the_prepared_model_is_made_once_and_agrees_with_the_shipped_one(
    tmp_path: Path, model: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPADE_MEMORY_CACHE", str(tmp_path / "cache"))
    path, name = model_file.prepared_model()
    assert name == model_file.PREPARED_NAME and path.parent == tmp_path / "cache"
    made = path.stat().st_mtime_ns
    abandoned, at_work = (path.parent / f"{model_file.SCRATCH}{n}" for n in ("old", "new"))
    for scratch in (abandoned, at_work):  # a Ctrl-C'd preparation's, and a rival's
        scratch.mkdir()
        (scratch / "float32.onnx").write_bytes(b"half made")
    os.utime(abandoned, (0, 0))
    assert model_file.prepared_model() == (path, name)  # kept, not made again
    assert path.stat().st_mtime_ns == made
    assert not abandoned.exists() and at_work.exists()  # left over: gone at a later start
    prepared = MiniLMEmbedder(path, name)
    texts = [DOG, QUESTION, "Quarterly taxes are due on the fifteenth", "Carol prefers tea"]
    ours, shipped = prepared.embed(texts), model.embed(texts)
    assert float((ours * shipped).sum(axis=1).min()) > 0.97
    similar = ours @ ours[1]  # the question is nearest the dog, as with the shipped model
    assert int(np.argsort(-similar)[1]) == 0

"""Two shortcuts of a search answer what the plain way answers: the word search without
its join when the file holds only the spaces searched (which orders by the word score
named in full, where the join orders by ``rank``), and the dense half searched in a
thread of its own beside the word search (on SQLite, where a search runs in the
database's thread, and on PostgreSQL, where it runs on the event loop)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from spade_memory.base_memory.retrieval import ranking
from spade_memory.base_memory.retrieval.dense import ExactIndex, Similar
from spade_memory.base_memory.retrieval.embeddings import Embedder
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import MemoryList, SearchMemories, Stored, StoreMemory
from spade_memory.storage.connection import InlineConnection, connect, run_to_completion
from tests.support.stores import Location

ALICE, BOB = "alice@localhost", "bob@localhost"
NOTES = [
    "The family dog is called Rex and loves the beach",
    "We walked the dog along the beach at sunset",
    "Quarterly taxes are due on the fifteenth",
    "The build server runs out of disk every Monday",
    "Carol prefers green tea over coffee",
    "The beach house needs a new roof before winter",
    "Coffee with Dan on Friday about the roof repair",
    "Rex chewed the garden hose again",
    "Taxes for the beach house are paid by Carol",
    "Monday standup moved to ten",
]
QUERIES = ["dog beach", "roof", "taxes Carol", "coffee Friday", "what is the name of our puppy"]
Answer = list[tuple[str, float | None]]


async def answers(store: LongTermStore, owner: str = ALICE, **more: Any) -> list[Answer]:
    """Each query's memories and their scores, best first."""
    found = []
    for text in QUERIES:
        result = await store.apply(owner, SearchMemories(query=text, limit=5, **more))
        assert isinstance(result, MemoryList)
        found.append([(memory.content, memory.score) for memory in result.memories])
    return found


async def store_all(store: LongTermStore, owner: str, notes: Sequence[str]) -> None:
    for note in notes:
        stored = await store.apply(owner, StoreMemory(category="fact", content=note))
        assert isinstance(stored, Stored)


async def test_the_word_search_without_its_join_ranks_as_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await LongTermStore.open(tmp_path / "words.db")
    checked: list[bool] = []
    real = ranking._holds_only

    async def holds_only(db: Any, spaces: Sequence[str]) -> bool:
        checked.append(await real(db, spaces))
        return checked[-1]

    try:
        await store_all(store, ALICE, NOTES)
        with monkeypatch.context() as spied:
            spied.setattr(ranking, "_holds_only", holds_only)
            alone = await answers(store)
        assert checked and all(checked), "the join was not left out: nothing is compared"
        assert any(alone), "the queries find nothing: the comparison below would be empty"
        with monkeypatch.context() as patched:
            patched.setattr(ranking, "_holds_only", _never)
            joined = await answers(store)
        assert alone == joined
    finally:
        await store.close()


async def test_another_space_in_the_file_brings_the_join_back(tmp_path: Path) -> None:
    store = await LongTermStore.open(tmp_path / "two.db")
    try:
        await store_all(store, ALICE, NOTES[:3])
        await store_all(store, BOB, ["Bob's dog sleeps on the beach all day"])
        for owner, other in ((ALICE, "Bob's"), (BOB, "The family dog")):
            found = await store.apply(owner, SearchMemories(query="dog beach", limit=10))
            assert isinstance(found, MemoryList)
            assert found.memories, owner
            assert not [m for m in found.memories if m.content.startswith(other)], owner
    finally:
        await store.close()


async def test_the_file_holds_only_the_spaces_named(tmp_path: Path) -> None:
    path = tmp_path / "spaces.db"
    store = await LongTermStore.open(path)
    try:
        await store_all(store, "a@x", ["one"])
        await store_all(store, "c@x", ["two"])
    finally:
        await store.close()
    db = await connect(path)
    try:
        assert await ranking._holds_only(db, ["a@x", "c@x"])
        assert await ranking._holds_only(db, ["c@x", "a@x", "b@x", "z@x"])
        assert not await ranking._holds_only(db, ["a@x"])
        assert not await ranking._holds_only(db, ["c@x"])
        assert not await ranking._holds_only(db, ["b@x", "c@x"])
        assert not await ranking._holds_only(db, [])
        await db.execute("UPDATE memories SET space = 'b@x' WHERE space = 'c@x'")
        assert not await ranking._holds_only(db, ["a@x", "c@x"])  # b@x lies between them
        assert await ranking._holds_only(db, ["a@x", "b@x"])
        await db.execute("UPDATE memories SET space = NULL WHERE space = 'b@x'")
        assert not await ranking._holds_only(db, ["a@x", "b@x"])
    finally:
        await db.close()


async def _never(db: object, spaces: object) -> bool:
    return False


@pytest.fixture
def searched_in() -> list[str]:
    """The name of the thread each exact dense search ran in."""
    return []


@pytest.fixture
def spied(monkeypatch: pytest.MonkeyPatch, searched_in: list[str]) -> None:
    real = ExactIndex.similar

    def similar(self: ExactIndex, query: Any, k: int, exclude: Any) -> Similar:
        searched_in.append(threading.current_thread().name)
        return real(self, query, k, exclude)

    monkeypatch.setattr(ExactIndex, "similar", similar)


@pytest.mark.usefixtures("spied")
async def test_the_dense_half_beside_the_word_search_answers_the_same(
    location: Location,
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
    searched_in: list[str],
) -> None:
    store = await LongTermStore.open(location("beside.db"), embedder=embedder)
    try:
        await store_all(store, ALICE, NOTES)
        for n in range(12):  # few enough that the first round's 20 may miss some
            stored = await store.apply(
                ALICE, StoreMemory(category="preference", content=f"likes item {n} near the beach")
            )
            assert isinstance(stored, Stored)
        await store.embedded()
        in_turn = await answers(store), await answers(store, category="preference")
        assert searched_in and not [n for n in searched_in if n.startswith("spade-memory-dense")]
        searched_in.clear()
        monkeypatch.setattr(ranking, "AHEAD_FROM", 1)
        beside = await answers(store), await answers(store, category="preference")
        # each search's first round; the puppy's query matches no word, so it is searched
        # again with the model's vector, in turn, as is any later round of a filtered one
        assert sum(n.startswith("spade-memory-dense") for n in searched_in) == 2 * len(QUERIES)
        assert beside == in_turn
    finally:
        await store.close()


async def test_the_answer_of_the_dense_thread_is_waited_for_where_the_search_runs(
    tmp_path: Path,
) -> None:
    future = ranking._dense_thread().submit(lambda: threading.current_thread().name)
    db = await connect(tmp_path / "wait.db")  # awaited on the event loop
    try:
        assert (await ranking._outcome(db, future)).startswith("spade-memory-dense")
    finally:
        await db.close()
    future = ranking._dense_thread().submit(lambda: 7)
    inline = InlineConnection(sqlite3.connect(":memory:"))  # in the database's thread
    assert run_to_completion(ranking._outcome(inline, future)) == 7

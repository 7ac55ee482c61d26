"""One store shape: a batch of ops is one transaction, and a failing op is rolled back alone.

Commits are counted with SQLite's statement trace on the store's own connection.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from spade.message import Message

from spade_memory import InternalServerError, ItemNotFound, Request, StoreMemory
from spade_memory.base_memory.service import BaseMemoryService
from spade_memory.base_memory.store import runs as store_runs
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.base_memory.store.tables import MIGRATIONS
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.batch import BatchResults
from spade_memory.protocol.memories import (
    Deleted,
    DeleteMemory,
    Memory,
    MemoryList,
    MemoryStatsOp,
    SearchMemories,
    Stored,
    UpdateMemory,
)
from spade_memory.protocol.notes import AddInformation, GetInformation
from spade_memory.serving.agent import ServeRequests
from spade_memory.storage.connection import open_migrated, run_to_completion
from tests.support.stores import Location, Statements

ALICE = "alice@localhost"


@pytest.fixture
async def memories(location: Location) -> AsyncIterator[LongTermStore]:
    store = await LongTermStore.open(location("memory.db"))
    yield store
    await store.close()


def stores(count: int, prefix: str = "memory") -> list[Request]:
    return [
        Request(StoreMemory(category="fact", content=f"{prefix} {n}"), f"{prefix}-{n}")
        for n in range(count)
    ]


async def test_a_batch_of_100_stores_is_one_commit(memories: LongTermStore) -> None:
    statements = Statements()
    await statements.watch(memories)
    outcomes = await memories.batch(ALICE, stores(100))
    assert all(isinstance(outcome, Stored) for outcome in outcomes)
    assert statements.commits == 1
    for request in stores(3, "alone"):  # the counter counts: one op alone, one commit
        await memories.apply(ALICE, request.op, request.id)
    assert statements.commits == 4
    stats = await memories.apply(ALICE, MemoryStatsOp())
    assert stats.total_memories == 103


async def test_a_batch_request_reaches_the_store_as_one_transaction(
    memories: LongTermStore,
) -> None:
    """Through the serving behaviour, as a peer's ``batch`` request arrives."""
    statements = Statements()
    await statements.watch(memories)
    serving = ServeRequests(BaseMemoryService(memories), "localhost")
    ops = [request.op.model_dump(exclude_none=True) for request in stores(100)]
    request = Message(
        to="base-memory@localhost", sender=f"{ALICE}/laptop", thread="t-1",
        body=json.dumps({"op": "batch", "ops": ops}),
    )  # fmt: skip
    reply = await serving.outcome(request)
    assert isinstance(reply, BatchResults)
    assert [item.ok for item in reply.results] == [True] * 100
    assert statements.commits == 1


async def test_a_failing_op_is_rolled_back_alone(
    memories: LongTermStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = memories._handlers[StoreMemory]

    async def store_then_fail(db: Any, request: Request, work: Any) -> Any:
        result = await stored(db, request, work)  # the memory is written ...
        if isinstance(request.op, StoreMemory) and request.op.content == "boom":
            raise RuntimeError("... and then something breaks")
        return result

    monkeypatch.setitem(memories._handlers, StoreMemory, store_then_fail)
    statements = Statements()
    await statements.watch(memories)
    boom = Request(StoreMemory(category="fact", content="boom"), "r-boom")
    outcomes = await memories.batch(
        ALICE,
        [
            *stores(1, "before"),
            Request(UpdateMemory(id="missing", content="x")),
            boom,
            Request(DeleteMemory(id="missing")),
            *stores(1, "after"),
        ],
    )
    kinds = [type(outcome) for outcome in outcomes]
    assert kinds == [Stored, ItemNotFound, InternalServerError, ItemNotFound, Stored]
    assert statements.commits == 1
    feed = await memories.changes_since(0)
    contents = [change.memory.content for change in feed.changes if change.memory]
    assert contents == ["before 0", "after 0"]  # "boom" and its change went with its savepoint
    monkeypatch.undo()
    again = await memories.apply(ALICE, boom.op, boom.id)  # its request id was not kept either
    assert again.deduplicated is False


async def word_index_holds(store: LongTermStore) -> None:
    """FTS5's own check that its index matches the memories table (raises if not)."""
    db = store._tx.db
    await db.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")


async def test_a_batch_indexes_its_words_once_and_its_own_ops_see_them(
    memories: LongTermStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New memories reach the word index in one statement per batch, yet a search, an
    update or a deletion later in the same batch acts on them, and a store rolled back
    alone (its run of stores rolled back whole first) leaves nothing in the index."""
    stored, run = memories._handlers[StoreMemory], store_runs.store_run

    async def store_then_fail(db: Any, request: Request, work: Any) -> Any:
        result = await stored(db, request, work)
        if isinstance(request.op, StoreMemory) and "boom" in request.op.content:
            raise RuntimeError("after the insert")
        return result

    async def run_then_fail(db: Any, requests: Any, work: Any, limits: Any) -> Any:
        results = await run(db, requests, work, limits)
        if any("boom" in request.op.content for request in requests):
            raise RuntimeError("after the inserts")
        return results

    monkeypatch.setitem(memories._handlers, StoreMemory, store_then_fail)
    monkeypatch.setattr(store_runs, "store_run", run_then_fail)
    statements = Statements()
    await statements.watch(memories)
    first = await memories.batch(ALICE, stores(3, "walrus"))
    ids = [outcome.id for outcome in first if isinstance(outcome, Stored)]
    outcomes = await memories.batch(
        ALICE,
        [
            Request(StoreMemory(category="fact", content="narwhal tusk")),
            Request(StoreMemory(category="fact", content="narwhal boom")),
            Request(SearchMemories(query="narwhal")),
            Request(UpdateMemory(id=ids[0], content="a beluga now")),
            Request(DeleteMemory(id=ids[1])),
            Request(StoreMemory(category="fact", content="narwhal pod")),
        ],
    )
    assert [type(outcome) for outcome in outcomes] == [
        Stored, InternalServerError, MemoryList, Memory, Deleted, Stored,
    ]  # fmt: skip
    found = outcomes[2]
    assert isinstance(found, MemoryList)
    assert [memory.content for memory in found.memories] == ["narwhal tusk"]
    if memories.engine.name == "sqlite":  # PostgreSQL's word index is a column of the row
        indexed = [s for s in statements.seen if s.startswith("INSERT INTO memories_fts (rowid")]
        assert [s.split("'")[1] for s in indexed] == [
            "walrus 0", "walrus 1", "walrus 2", "narwhal tusk", "narwhal pod",
        ]  # fmt: skip  # each new memory once, and never the store rolled back
        await word_index_holds(memories)
    monkeypatch.undo()
    for query, expected in [
        ("narwhal", {"narwhal tusk", "narwhal pod"}),
        ("beluga", {"a beluga now"}),
        ("walrus", {"walrus 2"}),
        ("boom", set()),
    ]:
        hits = await memories.apply(ALICE, SearchMemories(query=query))
        assert {memory.content for memory in hits.memories} == expected, query


async def test_a_batch_of_notes_is_one_commit(tmp_path: Path) -> None:
    notes = await InteractionStore.open(tmp_path / "notes.db")
    try:
        statements = Statements()
        await statements.watch(notes)
        requests = [
            Request(AddInformation(conversation_id="c1", information=f"note {n}"), f"n-{n}")
            for n in range(100)
        ]
        outcomes = await notes.batch(
            ALICE, [*requests, Request(GetInformation(conversation_id="c1"))]
        )
        assert statements.commits == 1
        assert outcomes[-1].notes == [f"note {n}" for n in range(100)]  # type: ignore[union-attr]
        await notes.batch(ALICE, requests)  # a retried batch: every note applied once
        listed = await notes.apply(ALICE, GetInformation(conversation_id="c1"))
        assert len(listed.notes) == 100
    finally:
        await notes.close()


def test_code_run_in_the_database_thread_may_not_wait_for_the_event_loop() -> None:
    """A batch runs in the connection's thread as a coroutine that must never suspend:
    one that does (here, on the event loop's sleep) is refused by name, not hung."""

    async def waits_for_the_loop() -> None:
        await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="waited for the event loop"):
        run_to_completion(waits_for_the_loop())


async def test_a_store_from_before_the_batched_word_index_is_searched_whole(
    tmp_path: Path,
) -> None:
    """A file whose insert trigger indexed each memory keeps those words, loses the
    trigger, and indexes new memories itself."""
    path = tmp_path / "old.db"
    db = await open_migrated(path, MIGRATIONS[:4])  # the version with the insert trigger
    await db.execute(
        "INSERT INTO memories (id, owner, category, content, created_at, last_accessed, space)"
        " VALUES ('old-1', ?, 'fact', 'an old walrus', 0, 0, ?)",
        (ALICE, ALICE),
    )
    await db.commit()
    await db.close()
    store = await LongTermStore.open(path)
    try:
        await store.apply(ALICE, StoreMemory(category="fact", content="a new walrus"))
        triggers = await store._tx.db.execute_fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        )
        assert "memories_ai" not in {str(row[0]) for row in triggers}
        hits = await store.apply(ALICE, SearchMemories(query="walrus"))
        assert {memory.content for memory in hits.memories} == {"an old walrus", "a new walrus"}
        await word_index_holds(store)
    finally:
        await store.close()

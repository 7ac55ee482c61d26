"""A batch's stores write their bookkeeping once per batch, and it means the same.

On SQLite the request ids, personal changes and usage of a batch's stores are
written in one statement per table before the commit (``base_memory/store/ledger.py``);
on PostgreSQL each store writes its own. Either way: a retried batch applies
nothing twice, a request id repeated inside a batch is applied once, quotas count
what the batch stored so far, a failed op leaves no bookkeeping, and the change
feed lists the batch's changes in the order of its ops. Each test runs on both
engines (the ``location`` fixture).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_memory import ItemNotFound, Limits, Request, ResourceConstraint, StoreMemory
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import DeleteMemory, Memory, MemoryStatsOp, Stored, UpdateMemory
from spade_memory.protocol.ops import Place
from tests.support.stores import Location, Statements

ALICE = "alice@localhost"


@pytest.fixture
async def memories(location: Location) -> AsyncIterator[LongTermStore]:
    store = await LongTermStore.open(
        location("memory.db"), limits=Limits(max_memories_per_owner=8, max_bytes_per_owner=4000)
    )
    yield store
    await store.close()


def store(content: str, request_id: str | None = None, *places: Place) -> Request:
    return Request(StoreMemory(category="fact", content=content), request_id, places)


async def total(memories: LongTermStore) -> int:
    return (await memories.apply(ALICE, MemoryStatsOp())).total_memories


async def test_a_retried_batch_applies_nothing_twice(memories: LongTermStore) -> None:
    batch = [store(f"memory {n}", f"r-{n}") for n in range(5)]
    first = await memories.batch(ALICE, batch)
    again = await memories.batch(ALICE, [*batch, store("memory 5", "r-5")])
    assert again[:5] == first
    assert isinstance(again[5], Stored) and not again[5].deduplicated
    assert await total(memories) == 6
    alone = await memories.apply(ALICE, batch[2].op, "r-2")  # and a lone retry, too
    assert alone == first[2]


async def test_a_request_id_repeated_in_a_batch_is_applied_once(memories: LongTermStore) -> None:
    outcomes = await memories.batch(
        ALICE, [store("the first", "same-id"), store("a second text", "same-id")]
    )
    assert outcomes[1] == outcomes[0]
    assert await total(memories) == 1


async def test_quotas_count_what_the_batch_stored_so_far(memories: LongTermStore) -> None:
    outcomes = await memories.batch(ALICE, [store(f"memory {n}", f"q-{n}") for n in range(10)])
    kinds = [type(outcome) for outcome in outcomes]
    assert kinds == [Stored] * 8 + [ResourceConstraint] * 2
    assert "holds 8 of 8 memories" in outcomes[8].text  # type: ignore[union-attr]
    stats = await memories.apply(ALICE, MemoryStatsOp())
    assert (stats.total_memories, stats.used_memories) == (8, 8)
    # a deletion in the same batch frees one place for the stores after it
    gone = outcomes[0].id  # type: ignore[union-attr]
    later = await memories.batch(
        ALICE,
        [store("one more", "q-10"), Request(DeleteMemory(id=gone)), store("now fits", "q-11")],
    )
    assert [type(outcome).__name__ for outcome in later] == [
        "ResourceConstraint", "Deleted", "Stored",
    ]  # fmt: skip
    assert (await memories.apply(ALICE, MemoryStatsOp())).used_memories == 8


async def test_bytes_count_across_the_batch(memories: LongTermStore) -> None:
    outcomes = await memories.batch(ALICE, [store("x" * 1500 + str(n), f"b-{n}") for n in range(3)])
    assert [type(outcome) for outcome in outcomes] == [Stored, Stored, ResourceConstraint]
    assert "of 4,000 bytes" in outcomes[2].text  # type: ignore[union-attr]


async def test_a_failed_op_leaves_no_bookkeeping(memories: LongTermStore) -> None:
    outcomes = await memories.batch(
        ALICE,
        [
            store("kept", "f-1"),
            Request(DeleteMemory(id="missing"), "f-2"),
            store("kept too", "f-3"),
        ],
    )
    assert isinstance(outcomes[1], ItemNotFound)
    assert (await memories.apply(ALICE, MemoryStatsOp())).used_memories == 2
    feed = await memories.changes_since(0)
    assert [change.kind for change in feed.changes] == ["stored", "stored"]


async def test_the_feed_lists_a_batchs_changes_in_the_order_of_its_ops(
    memories: LongTermStore,
) -> None:
    team = Place("team-space-key", "team", "owner")
    first = await memories.apply(ALICE, StoreMemory(category="fact", content="to delete"))
    outcomes = await memories.batch(
        ALICE,
        [
            store("personal one", "o-1"),
            store("shared one", "o-2", team),
            store("personal two", "o-3"),
            Request(DeleteMemory(id=first.id), "o-4"),
            store("personal one", "o-5"),  # the same memory again: reinforced
            store("personal three", "o-6"),
        ],
    )
    ids = [getattr(outcome, "id", first.id) for outcome in outcomes]
    feed = await memories.changes_since(0)
    changes = [(change.kind, change.memory_id) for change in feed.changes[1:]]
    assert changes == [
        ("stored", ids[0]), ("stored", ids[1]), ("stored", ids[2]), ("deleted", first.id),
        ("updated", ids[0]), ("stored", ids[5]),
    ]  # fmt: skip
    assert [change.seq for change in feed.changes] == sorted(c.seq for c in feed.changes)


async def test_on_sqlite_a_batch_reads_and_writes_its_usage_once(tmp_path: Path) -> None:
    """What the ledger is for: a hundred stores, one usage read and one usage write (and
    one read of their request ids), where each store wrote its own before."""
    memories = await LongTermStore.open(tmp_path / "memory.db")
    try:
        statements = Statements()
        await statements.watch(memories)
        outcomes = await memories.batch(ALICE, [store(f"m {n}", f"u-{n}") for n in range(100)])
        assert all(isinstance(outcome, Stored) for outcome in outcomes)
        usage = [s for s in statements.seen if " usage" in s]
        assert [s.split()[0] for s in usage] == ["SELECT", "INSERT"]
        read_ids = [s for s in statements.seen if s.startswith("SELECT request_id")]
        assert len(read_ids) == 1
        assert (await memories.apply(ALICE, MemoryStatsOp())).used_memories == 100
    finally:
        await memories.close()


async def test_a_store_after_another_op_sees_the_ids_that_op_claimed(
    memories: LongTermStore,
) -> None:
    """An id an update of the batch claimed is applied, for a store after it, as alone."""
    (first,) = await memories.batch(ALICE, [store("to change", "c-1")])
    outcomes = await memories.batch(
        ALICE,
        [
            store("before", "c-2"),
            Request(UpdateMemory(id=first.id, content="changed"), "c-3"),  # type: ignore[union-attr]
            store("a store sent with the update's id", "c-3"),
        ],
    )
    assert isinstance(outcomes[1], Memory)
    assert outcomes[2] == outcomes[1]
    assert await total(memories) == 2

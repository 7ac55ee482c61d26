"""A run of plain stores in a batch is applied in one pass and answers as one by one.

On SQLite a batch's consecutive stores into the sender's personal space are one
read and one insert (``base_memory/store/runs.py``); on PostgreSQL each store is
applied alone. Either way each store answers what it would alone, and the rows
end up the same.
"""

from __future__ import annotations

from pathlib import Path

from spade_memory import Request, StoreMemory
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import MemoryList, RecentMemories, Stored
from tests.support.stores import Location, Statements, query

ALICE = "alice@localhost"


def _ops() -> list[StoreMemory]:
    return [
        StoreMemory(category="fact", content="the walrus sings", confidence=0.9),  # there
        StoreMemory(category="fact", content="the seal sleeps", confidence=0.4),
        StoreMemory(category="fact", content="The  SEAL sleeps", confidence=0.7),  # repeat
        StoreMemory(category="pattern", content="the seal sleeps"),  # another category
        StoreMemory(content="Alice prefers her tea without sugar"),  # classified
        StoreMemory(category="fact", content="the tide turns", tags=["sea"], ttl_seconds=3600),
        StoreMemory(category="fact", content="the walrus sings", confidence=0.2),  # again
    ]


def _shape(answers: list[object]) -> list[tuple[object, ...]]:
    """The answers without their ids' values: which are the same memory, and the rest."""
    ids: dict[str, int] = {}
    shape = []
    for answer in answers:
        assert isinstance(answer, Stored)
        number = ids.setdefault(answer.id, len(ids))
        shape.append((number, answer.deduplicated, answer.category, answer.classified))
    return shape


async def _held(store: LongTermStore) -> list[tuple[object, ...]]:
    listed = await store.apply(ALICE, RecentMemories(limit=50))
    assert isinstance(listed, MemoryList)
    return sorted(
        (m.category, m.content, m.confidence, m.access_count, tuple(m.tags), m.expires_at is None)
        for m in listed.memories
    )


async def test_a_run_answers_and_stores_as_its_stores_would_one_by_one(
    location: Location,
) -> None:
    together = await LongTermStore.open(location("together.db"))
    alone = await LongTermStore.open(location("alone.db"))
    try:
        first = StoreMemory(category="fact", content="the walrus sings", confidence=0.5)
        for store in (together, alone):
            await store.apply(ALICE, first)
        batched = await together.batch(ALICE, [Request(op) for op in _ops()])
        one_by_one = [await alone.apply(ALICE, op) for op in _ops()]

        assert _shape(batched) == _shape(one_by_one)
        assert _shape(batched)[2][1] is True  # the repeat in the run is the memory before
        held = await _held(together)
        assert held == await _held(alone)
        walrus = [row for row in held if row[1] == "the walrus sings"]
        # two reinforcements and the listing itself
        assert walrus == [("fact", "the walrus sings", 0.9, 3, (), True)]
    finally:
        await together.close()
        await alone.close()


async def test_on_sqlite_a_run_of_stores_is_one_insert_and_one_read(tmp_path: Path) -> None:
    memories = await LongTermStore.open(tmp_path / "memory.db")
    try:
        statements = Statements()
        await statements.watch(memories)
        outcomes = await memories.batch(
            ALICE,
            [Request(StoreMemory(category="fact", content=f"m {n}"), f"r-{n}") for n in range(100)],
        )
        assert all(isinstance(o, Stored) and not o.deduplicated for o in outcomes)
        inserts = [s for s in statements.seen if s.startswith("INSERT INTO memories (")]
        reads = [s for s in statements.seen if s.startswith("SELECT id, owner, content")]
        assert (len(inserts), len(reads)) == (1, 1)
        assert statements.commits == 1
        rows = await query(tmp_path / "memory.db", "SELECT id FROM memories ORDER BY seq")
        assert [row[0] for row in rows] == [o.id for o in outcomes]  # type: ignore[union-attr]
        assert [row[0] for row in rows] == sorted(row[0] for row in rows)  # ids grow in time
    finally:
        await memories.close()

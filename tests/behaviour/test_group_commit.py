"""Group commit: writes that arrive while a SQLite transaction runs share the next one.

Each joins the group in a savepoint of its own, so what one write's failure rolls
back is its own; a fault of the file fails the whole group, and a write is
acknowledged only once its group is committed. Commits are counted with SQLite's
statement trace on the store's own connection; faults are SQLite's own (a size
limit gives the real SQLITE_FULL a full disk gives).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from spade_memory import ItemNotFound, Request, ResourceConstraint, StoreMemory
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.memories import MemoryStatsOp, Stored
from spade_memory.protocol.notes import AddInformation, GetInformation
from spade_memory.storage.connection import Transactions, connect
from tests.support.stores import Statements

ALICE = "alice@localhost"


@pytest.fixture
async def memories(tmp_path: Path) -> AsyncIterator[LongTermStore]:
    store = await LongTermStore.open(tmp_path / "memory.db")
    yield store
    await store.close()


def store(content: str) -> StoreMemory:
    return StoreMemory(category="fact", content=content)


async def stored_contents(path: Path) -> set[str]:
    """What the file holds, read by a connection of its own."""
    with sqlite3.connect(path) as db:
        return {str(row[0]) for row in db.execute("SELECT content FROM memories")}


async def test_writes_arriving_together_share_one_commit(memories: LongTermStore) -> None:
    statements = Statements()
    await statements.watch(memories)
    outcomes = await asyncio.gather(
        *(memories.apply(ALICE, store(f"memory {n}"), f"r-{n}") for n in range(20))
    )
    assert all(isinstance(outcome, Stored) for outcome in outcomes)
    # the first runs alone; the nineteen that arrive meanwhile are one group
    assert statements.commits == 2
    stats = await memories.apply(ALICE, MemoryStatsOp())
    assert stats.total_memories == 20
    again = await memories.apply(ALICE, store("memory 7"), "r-7")  # their ids were kept
    assert again == outcomes[7]


async def test_a_failing_write_in_a_group_is_rolled_back_alone(
    memories: LongTermStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One write fails with a typed error after writing (its caller rolls back), one
    breaks after writing; both are undone, and the rest of their group is committed."""
    stored = memories._handlers[StoreMemory]

    async def store_then_fail(db: Any, request: Request, work: Any) -> Any:
        result = await stored(db, request, work)  # the memory is written ...
        if request.op.content == "typed":  # type: ignore[attr-defined]
            raise ItemNotFound("... and then the op finds it cannot go on")
        if request.op.content == "boom":  # type: ignore[attr-defined]
            raise RuntimeError("... and then something breaks")
        return result

    monkeypatch.setitem(memories._handlers, StoreMemory, store_then_fail)
    statements = Statements()
    await statements.watch(memories)
    contents = ["first", "before", "typed", "between", "boom", "after"]
    outcomes = await asyncio.gather(
        *(memories.apply(ALICE, store(c), f"r-{c}") for c in contents), return_exceptions=True
    )
    kinds = [type(outcome) for outcome in outcomes]
    assert kinds == [Stored, Stored, ItemNotFound, Stored, RuntimeError, Stored]
    assert statements.commits == 2
    assert await stored_contents(tmp_path / "memory.db") == {"first", "before", "between", "after"}
    feed = await memories.changes_since(0)
    assert [change.memory_id for change in feed.changes] == [
        outcome.id for outcome in outcomes if isinstance(outcome, Stored)
    ]
    monkeypatch.undo()
    for content in ("typed", "boom"):  # their request ids went with their savepoints
        again = await memories.apply(ALICE, store(content), f"r-{content}")
        assert isinstance(again, Stored) and not again.deduplicated


async def test_a_full_disk_fails_the_whole_group_and_loses_nothing_acknowledged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.db"
    memories = await LongTermStore.open(path)
    try:
        db = memories._tx.db  # type: ignore[attr-defined]
        (pages,) = await db.execute_fetchall("PRAGMA page_count")
        await db.execute(f"PRAGMA max_page_count = {pages[0] + 6}")
        refused = 0
        acknowledged: set[str] = set()
        for round_ in range(10):  # groups of 8 until the limit is reached
            contents = [f"round {round_} memory {n} " + "x" * 2000 for n in range(8)]
            outcomes = await asyncio.gather(
                *(memories.apply(ALICE, store(c)) for c in contents), return_exceptions=True
            )
            for content, outcome in zip(contents, outcomes, strict=True):
                if isinstance(outcome, Stored):
                    acknowledged.add(content)
                else:
                    assert isinstance(outcome, ResourceConstraint), outcome
                    assert "disk full" in outcome.text
                    refused += 1
        assert acknowledged and refused
        assert await stored_contents(path) == acknowledged  # nothing lost, nothing half-stored
        assert (await memories.apply(ALICE, MemoryStatsOp())).total_memories == len(acknowledged)
        await db.execute("PRAGMA max_page_count = 1073741823")  # space is back
        again = await asyncio.gather(
            *(memories.apply(ALICE, store(f"later {n}")) for n in range(4))
        )
        assert all(isinstance(outcome, Stored) for outcome in again)
    finally:
        await memories.close()


async def test_closing_writes_what_was_accepted_first(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    memories = await LongTermStore.open(path)
    writes = [asyncio.create_task(memories.apply(ALICE, store(f"m {n}"))) for n in range(10)]
    await asyncio.sleep(0)  # the first is in the database's thread, the others wait
    await memories.close()
    assert all(isinstance(write.result(), Stored) for write in writes)
    assert await stored_contents(path) == {f"m {n}" for n in range(10)}


async def test_closing_while_the_first_write_is_still_running_loses_no_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection is closed while the first transaction is still in its thread:
    the ones waiting behind it are written before the file is closed."""
    path = tmp_path / "rows.db"
    tx = Transactions(await connect(path), path)
    async with tx.write() as db:
        await db.execute("CREATE TABLE rows (n INTEGER)")
    run_alone = tx._run_inline

    def slowly(*args: Any) -> Any:
        time.sleep(0.2)  # in the database's thread: the close comes meanwhile
        return run_alone(*args)

    monkeypatch.setattr(tx, "_run_inline", slowly)

    def row(n: int) -> Any:
        async def insert(db: Any) -> int:
            await db.execute("INSERT INTO rows VALUES (?)", (n,))
            return n

        return insert

    writes = [asyncio.create_task(tx.inline(row(n))) for n in range(10)]
    await asyncio.sleep(0)  # all ten accepted: one running, nine waiting
    await tx.close()
    assert [write.result() for write in writes] == list(range(10))
    with sqlite3.connect(path) as db:
        assert sorted(n for (n,) in db.execute("SELECT n FROM rows")) == list(range(10))


async def test_a_cancelled_caller_leaves_its_group_intact(memories: LongTermStore) -> None:
    writes = [asyncio.create_task(memories.apply(ALICE, store(f"m {n}"))) for n in range(6)]
    await asyncio.sleep(0)
    writes[3].cancel()  # waiting in the group: it may still be written, never half
    done = await asyncio.gather(*writes, return_exceptions=True)
    assert isinstance(done[3], asyncio.CancelledError)
    assert all(isinstance(done[n], Stored) for n in (0, 1, 2, 4, 5))
    stats = await memories.apply(ALICE, MemoryStatsOp())
    assert stats.total_memories in (5, 6)


async def test_notes_arriving_together_share_one_commit(tmp_path: Path) -> None:
    """The interaction store's writes run the same way."""
    notes = await InteractionStore.open(tmp_path / "notes.db")
    try:
        statements = Statements()
        await statements.watch(notes)
        owners = [f"agent-{n}@localhost" for n in range(12)]
        confirmations = await asyncio.gather(
            *(notes.apply(o, AddInformation(conversation_id="c", information=o)) for o in owners)
        )
        assert len(confirmations) == 12
        assert statements.commits == 2
        for owner in owners:
            got = await notes.apply(owner, GetInformation(conversation_id="c"))
            assert got.notes == [owner]
    finally:
        await notes.close()

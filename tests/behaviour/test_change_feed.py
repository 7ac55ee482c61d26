"""The base memory agent's change feed: what the beads mirror catches up from."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_memory.base_memory.service import BaseMemoryService
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.base_memory.store.tables import MIGRATIONS
from spade_memory.protocol.errors import NotAuthorized
from spade_memory.protocol.memories import (
    ChangesSince,
    DeleteMemory,
    Stored,
    StoreMemory,
    UpdateMemory,
)
from spade_memory.storage.connection import open_migrated
from tests.support.stores import Location

ALICE = "alice@localhost"
MIRROR = "beads-sync@localhost"


@pytest.fixture
async def store(location: Location) -> AsyncIterator[LongTermStore]:
    opened = await LongTermStore.open(location("memory.db"))
    yield opened
    await opened.close()


async def stored_id(store: LongTermStore, content: str, request_id: str | None = None) -> str:
    result = await store.apply(ALICE, StoreMemory(category="fact", content=content), request_id)
    assert isinstance(result, Stored)
    return result.id


async def test_every_committed_write_is_in_the_feed_once(store: LongTermStore) -> None:
    first = await stored_id(store, "the sky is blue", request_id="r1")
    await stored_id(store, "the sky is blue", request_id="r1")  # a retry: applied once
    second = await stored_id(store, "grass is green")
    await store.apply(ALICE, UpdateMemory(id=first, content="the sky is grey"), "r2")
    await store.apply(ALICE, UpdateMemory(id=first, content="the sky is grey"), "r2")
    await store.apply(ALICE, DeleteMemory(id=second))
    feed = await store.changes_since(0)
    assert [(c.kind, c.memory_id) for c in feed.changes] == [
        ("stored", first),
        ("stored", second),
        ("updated", first),
        ("deleted", second),
    ]
    assert feed.changes[0].memory is not None
    assert feed.changes[0].memory.content == "the sky is grey"  # the state now
    assert feed.changes[3].memory is None
    assert {c.owner for c in feed.changes} == {ALICE}
    assert feed.last_seq == feed.changes[-1].seq


async def test_asking_after_n_forgets_up_to_n_and_numbers_are_never_reused(
    store: LongTermStore,
) -> None:
    for n in range(3):
        await stored_id(store, f"memory {n}")
    feed = await store.changes_since(0)
    confirmed = feed.changes[1].seq
    later = await store.changes_since(confirmed)
    assert [c.seq for c in later.changes] == [feed.changes[2].seq]
    assert (await store.changes_since(0)).changes == later.changes  # 1 and 2 forgotten
    await store.changes_since(later.last_seq)
    await stored_id(store, "after everything was confirmed")
    newest = await store.changes_since(later.last_seq)
    assert [c.seq for c in newest.changes] == [later.last_seq + 1]
    page = await store.changes_since(0, limit=1)
    assert len(page.changes) == 1


async def test_memories_from_before_the_feed_reach_it(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = await open_migrated(path, MIGRATIONS[:1])  # a store written by version 1
    await db.execute(
        "INSERT INTO memories (id, owner, category, content, created_at, last_accessed)"
        " VALUES ('old-1', ?, 'fact', 'from before', 0, 0)",
        (ALICE,),
    )
    await db.commit()
    await db.close()
    upgraded = await LongTermStore.open(path)
    try:
        feed = await upgraded.changes_since(0)
    finally:
        await upgraded.close()
    assert [(c.kind, c.memory_id) for c in feed.changes] == [("stored", "old-1")]


async def test_only_the_mirror_reads_the_feed_and_writes_wake_it(store: LongTermStore) -> None:
    service = BaseMemoryService(store, mirror=f"{MIRROR}/resource")
    with pytest.raises(NotAuthorized):
        await service.apply(ALICE, ChangesSince())
    assert not service.changed.is_set()
    await service.apply(ALICE, StoreMemory(category="fact", content="x"))
    assert service.changed.is_set()
    feed = await service.apply(MIRROR, ChangesSince())
    assert len(feed.changes) == 1
    with pytest.raises(NotAuthorized):
        await BaseMemoryService(store).apply(MIRROR, ChangesSince())

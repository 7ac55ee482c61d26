"""Byte quotas count what a memory holds: its content and context, its tags, metadata and
source as stored, and every version kept of it; the counters stay exact through every
way a memory changes or goes, and a store of an older version is recounted at open.

On both engines (``location``). The expected figures are measured here from what the
store answers (``memory_history``), not read from its counters.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from spade_memory import Limits, Request, ResourceConstraint, StoreMemory
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.base_memory.store.sizes import recount_usage
from spade_memory.protocol.consolidation import ConsolidateMemories
from spade_memory.protocol.memories import (
    DeleteMemory,
    ForgetMemories,
    GetMemory,
    Memory,
    MemoryHistoryOp,
    MemoryStats,
    MemoryStatsOp,
    MemoryVersion,
    Stored,
    UpdateMemory,
)
from spade_memory.protocol.ops import Op, Place, Record
from spade_memory.protocol.tags import dumps
from tests.support.stores import Location, query, set_back

ALICE = "alice@localhost"
TEAM = Place("team-key", "team", "owner")
PAST = datetime(1971, 1, 1, tzinfo=timezone.utc)


def utf8(text: str | None) -> int:
    return len((text or "").encode())


def held_by(version: Memory | MemoryVersion) -> int:
    """What one version holds, measured from the store's answer."""
    return (
        utf8(version.content) + utf8(version.context) + utf8(version.source)
        + (utf8(dumps(version.tags)) if version.tags else 0)
        + (utf8(dumps(version.metadata)) if version.metadata else 0)
    )  # fmt: skip


async def one(store: LongTermStore, op: Op[Record], *places: Place) -> Record:
    (outcome,) = await store.batch(ALICE, [Request(op, None, places)])
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


async def history_bytes(store: LongTermStore, memory_id: str, *places: Place) -> int:
    history = await one(store, MemoryHistoryOp(id=memory_id), *places)
    return sum(held_by(version) for version in history.versions)  # type: ignore[attr-defined]


async def stats(store: LongTermStore) -> MemoryStats:
    return await store.apply(ALICE, MemoryStatsOp())


def described(content: str, n: int = 0) -> StoreMemory:
    return StoreMemory(
        category="fact", content=content, context="said in the ünïcode meeting",
        tags=["quota", f"t{n}"], metadata={"blob": "é" * 200, "n": n}, source=f"notes/{n}.md",
    )  # fmt: skip


@pytest.fixture
async def store(location: Location) -> AsyncIterator[LongTermStore]:
    opened = await LongTermStore.open(location("memory.db"), limits=Limits(max_versions=3))
    yield opened
    await opened.close()


async def test_the_fullest_account_is_what_the_quota_figure_shows(store: LongTermStore) -> None:
    """``fullest``: the most memories and bytes one account holds (the figure of quota
    use at /metrics), whoever holds them."""
    assert await store.fullest("owner:") == (0, 0)
    for n in range(3):
        await store.apply(ALICE, described(f"alice's memory {n}", n))
    await store.apply("bob@localhost", described("bob's only memory, and a longer one " * 9))
    alice, bob = await store.usage(f"owner:{ALICE}"), await store.usage("owner:bob@localhost")
    assert await store.fullest("owner:") == (3, max(alice[1], bob[1]))
    assert await store.fullest("space:") == (0, 0)


async def test_a_memory_counts_its_tags_metadata_source_and_kept_versions(
    store: LongTermStore,
) -> None:
    stored = await store.apply(ALICE, described("the first wording"))
    assert (await stats(store)).used_bytes == await history_bytes(store, stored.id) > 450
    for n in range(1, 6):  # versions beyond the three kept are dropped
        update = UpdateMemory(id=stored.id, content=f"wording {n}" * n, metadata={"n": n})
        await store.apply(ALICE, update)
        assert (await stats(store)).used_bytes == await history_bytes(store, stored.id)
    history = await store.apply(ALICE, MemoryHistoryOp(id=stored.id))
    assert len(history.versions) == 3 and history.dropped == 3

    await store.apply(ALICE, DeleteMemory(id=stored.id))
    gone = await stats(store)
    assert (gone.used_memories, gone.used_bytes) == (0, 0)


async def test_a_merge_counts_the_source_its_kept_memory_takes(store: LongTermStore) -> None:
    kept = await store.apply(ALICE, StoreMemory(category="fact", content="Alice lives in Paris."))
    await store.apply(ALICE, GetMemory(id=kept.id))  # the most used is kept
    twin = await store.apply(
        ALICE,
        StoreMemory(category="fact", content="Alice resides in Paris.", source="ü/" + "n" * 300),
    )
    await store.flush_accesses()
    assert (await store.apply(ALICE, ConsolidateMemories(dry_run=False))).merged == 1
    kept_now = await store.apply(ALICE, GetMemory(id=kept.id, count_access=False))
    assert kept_now.source == "ü/" + "n" * 300
    held = await history_bytes(store, kept.id) + await history_bytes(store, twin.id)
    assert (await stats(store)).used_bytes == held
    assert await store.usage(f"owner:{ALICE}") == (2, held)


async def test_expiry_forget_and_a_deleted_space_give_back_every_byte(
    store: LongTermStore,
) -> None:
    kept = await store.apply(ALICE, described("this one stays", 1))
    expiring = await store.apply(ALICE, described("this one expires", 2))
    forgotten = await store.apply(ALICE, described("this one is forgotten", 3))
    shared = await one(store, described("this one is the team's", 4), TEAM)
    for memory in (expiring, forgotten):
        await store.apply(ALICE, UpdateMemory(id=memory.id, content="changed once"))
    await one(store, UpdateMemory(id=shared.id, content="changed in the team"), TEAM)  # type: ignore[attr-defined]
    team_bytes = await history_bytes(store, shared.id, TEAM)  # type: ignore[attr-defined]
    assert await store.usage("space:team-key") == (1, team_bytes)

    await store.apply(ALICE, UpdateMemory(id=expiring.id, expires_at=PAST))
    assert await store.purge_expired() == 1
    await store.apply(ALICE, ForgetMemories(tags_any=["t3"], dry_run=False))
    assert await store.purge_space("team-key") == 1

    assert await store.usage("space:team-key") == (0, 0)
    left = await stats(store)
    assert (left.used_memories, left.used_bytes) == (1, await history_bytes(store, kept.id))


async def test_metadata_and_versions_count_against_the_quota(location: Location) -> None:
    store = await LongTermStore.open(
        location("memory.db"), limits=Limits(max_bytes_per_owner=4_000, max_versions=20)
    )
    try:
        big = StoreMemory(category="fact", content="a", metadata={"b": "x" * 3_000})
        first = await store.apply(ALICE, big)
        with pytest.raises(ResourceConstraint, match="of 4,000 bytes"):
            await store.apply(
                ALICE, StoreMemory(category="fact", content="b", metadata={"b": "y" * 1_000})
            )
        stored = await store.apply(ALICE, StoreMemory(category="fact", content="z" * 300))
        refused = None
        for n in range(10):  # each update keeps a version of 300 bytes more
            try:
                await store.apply(ALICE, UpdateMemory(id=stored.id, content=str(n) * 300))
            except ResourceConstraint as error:
                refused = n
                assert "of 4,000 bytes" in error.text
                break
        assert refused is not None and refused > 0
        memory = await store.apply(ALICE, MemoryHistoryOp(id=stored.id))
        assert memory.versions[-1].content == str(refused - 1) * 300  # the refusal changed nothing
        assert len(memory.versions) == refused + 1
        usage = await stats(store)
        assert usage.used_memories == 2
        first_bytes = await history_bytes(store, first.id)
        assert usage.used_bytes == first_bytes + 300 * (refused + 1) <= 4_000
    finally:
        await store.close()


async def _one_migration_back(where: str | Path) -> None:
    """The store as the version before the recount left it: bytes of content and context."""
    await query(
        where,
        "UPDATE usage SET bytes = (SELECT SUM(length(content)) FROM memories)"
        " WHERE subject = 'owner:alice@localhost'",
    )
    await set_back(where, recount_usage)


async def test_an_older_store_is_recounted_at_open(location: Location) -> None:
    where = location("old.db")
    store = await LongTermStore.open(where)
    personal: Stored = await store.apply(ALICE, described("a personal memory"))
    shared = await one(store, described("a shared memory", 1), TEAM)
    await store.apply(ALICE, UpdateMemory(id=personal.id, content="reworded"))
    await store.close()
    await _one_migration_back(where)
    counted = "SELECT bytes FROM usage WHERE subject = 'owner:alice@localhost'"
    assert await query(where, counted) == [(len("reworded") + len("a shared memory"),)]

    store = await LongTermStore.open(where)
    try:
        team = await history_bytes(store, shared.id, TEAM)  # type: ignore[attr-defined]
        mine = await history_bytes(store, personal.id)
        assert await store.usage("space:team-key") == (1, team)
        assert await store.usage(f"owner:{ALICE}") == (2, team + mine)
    finally:
        await store.close()


async def test_a_batch_of_stores_counts_what_each_holds(store: LongTermStore) -> None:
    """A run of stores in one pass (``store_runs``) counts as the stores one by one."""
    outcomes = await store.batch(ALICE, [Request(described(f"batched {n}", n)) for n in range(5)])
    ids = [outcome.id for outcome in outcomes]  # type: ignore[union-attr]
    assert (await stats(store)).used_bytes == sum([await history_bytes(store, i) for i in ids])

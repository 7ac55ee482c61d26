"""The client's second transport: the same calls handed to services of this process,
with no XMPP (real services on real SQLite files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_memory import BadRequest, ItemNotFound, StoreMemory
from spade_memory.protocol.consolidation import Consolidated, ConsolidateMemories
from spade_memory.protocol.memories import MemoryStats, MemoryStatsOp
from spade_memory.protocol.services import BASE_MEMORY
from tests.support.in_process import client_of, in_process_services

ALICE, BOB = "alice@example.org", "bob@example.org"


async def test_the_calls_work_without_xmpp(services: dict[str, object]) -> None:
    alice = client_of(ALICE, services)
    stored = await alice.store_memory("preference", "Alice likes green tea in the morning")
    assert stored is not None
    found = await alice.search_memories("green tea")
    assert [m.id for m in found] == [stored]
    assert (await alice.get_memory_stats()).total_memories == 1  # type: ignore[union-attr]
    await alice.add_information("talk-1", "asked about tea")
    assert await alice.get_information("talk-1") == ["asked about tea"]


async def test_the_owner_is_the_transports_identity(services: dict[str, object]) -> None:
    alice, bob = client_of(ALICE, services), client_of(BOB, services)
    stored = await alice.store_memory("fact", "the vault code is 1234")
    assert stored is not None
    assert list(await bob.search_memories("vault code")) == []
    assert await bob.delete_memory(stored) is False  # not found: it is not bob's
    with pytest.raises(ItemNotFound):
        await bob.get_memory(stored)
    assert await alice.get_memory(stored) is not None


async def test_batches_and_refusals_come_back_typed(
    services: dict[str, object], tmp_path: Path
) -> None:
    alice = client_of(ALICE, services)
    outcomes = await alice.batch(
        alice.jids[BASE_MEMORY],
        [StoreMemory(category="fact", content="one"), StoreMemory(category="fact", content="two")],
    )
    assert [type(o).__name__ for o in outcomes] == ["Stored", "Stored"]
    with pytest.raises(ItemNotFound, match="no space 'team'"):
        await alice.grant("team", BOB, "reader")
    async with in_process_services(tmp_path / "plain", spaces=False) as plain:
        with pytest.raises(BadRequest, match="spaces are not served"):
            await client_of(ALICE, plain).grant("team", BOB, "reader")  # no directory
    with pytest.raises(ItemNotFound):
        await alice.beads.memory_stats()  # no beads sync service in this process


async def test_change_notices_need_xmpp(services: dict[str, object]) -> None:
    with pytest.raises(TypeError, match="XMPP"):
        client_of(ALICE, services).changes("team")


async def test_a_batch_consolidates_once(services: dict[str, object]) -> None:
    """Each consolidation plans over the whole space: a batch serves its first and
    refuses the others, which change nothing and may come in batches of their own."""
    alice = client_of(ALICE, services)
    for text in ("The build runs nightly", "The build runs every night"):
        await alice.store("fact", text)
    first, second, stats = await alice.batch(
        alice.jids[BASE_MEMORY],
        [ConsolidateMemories(), ConsolidateMemories(dry_run=False), MemoryStatsOp()],
    )
    assert isinstance(first, Consolidated)
    assert isinstance(second, BadRequest) and "one consolidate_memories per batch" in str(second)
    assert isinstance(stats, MemoryStats) and stats.total_memories == 2  # nothing merged
    alone = await alice.batch(alice.jids[BASE_MEMORY], [ConsolidateMemories(dry_run=False)])
    assert isinstance(alone[0], Consolidated)

"""Proposals of governed spaces in the directory, on both engines: kept across a reopen,
found again for the same request, decided once, expired when due, and applied by the
sweep when their agent stopped between the approval and the write."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from spade_memory.base_memory.governance import RESUME_AFTER, Governance
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.errors import PendingApproval, ResourceConstraint
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import GetMemory, Memory, StoreMemory
from spade_memory.protocol.ops import Request
from spade_memory.spaces.declared import apply_spaces, read_spaces_file
from spade_memory.spaces.directory import SpaceDirectory
from tests.support.stores import Location

pytestmark = pytest.mark.asyncio


async def test_a_governed_space_and_its_proposals(location: Location) -> None:
    directory = await SpaceDirectory.open(location("spaces.db"))
    try:
        space = await directory.create("policy", "ana@d", None, governed=True)
        assert space.governed
        plain = await directory.create("plain", "ana@d", None)
        assert not plain.governed
        proposals = directory.proposals
        first, new = await proposals.propose(
            space.id, "bob@d", "bob@d/x", '{"op": "store_memory"}', 60, "r1"
        )
        assert new and first.state == "pending"
        again, new = await proposals.propose(
            space.id, "bob@d", "bob@d/y", '{"op": "store_memory"}', 60, "r1"
        )
        assert not new and again == first  # a retry finds the first one
        other, new = await proposals.propose(space.id, "eve@d", "eve@d", "{}", 60, "r1")
        assert new and other.id != first.id  # another proposer's request id
        assert [p.id for p in await proposals.pending(space.id)] == [first.id, other.id]
        assert [p.id for p in await proposals.pending(space.id, "eve@d")] == [other.id]
        assert (
            await proposals.count_pending(space.id),
            await proposals.count_pending(plain.id),
        ) == (2, 0)
    finally:
        await directory.close()

    directory = await SpaceDirectory.open(location("spaces.db"))  # a restart
    try:
        proposals = directory.proposals
        found = await directory.find("policy")
        assert found is not None and found.governed
        assert [p.id for p in await proposals.pending(space.id)] == [first.id, other.id]
        decided = await proposals.decide(first.id, "rejected", "ana@d", "not sourced")
        assert decided is not None
        assert (decided.state, decided.decided_by, decided.note) == (
            "rejected",
            "ana@d",
            "not sourced",
        )
        assert await proposals.decide(first.id, "approved", "ana@d") is None  # once
        assert await proposals.expire(time.time()) == []  # none due yet
        expired = await proposals.expire(time.time() + 61)
        assert [p.id for p in expired] == [other.id] and expired[0].state == "expired"
        assert await proposals.pending(space.id) == []
        assert await proposals.count_pending(space.id) == 0
        await directory.set_governed(space.id, False)
        found = await directory.find("policy")
        assert found is not None and not found.governed
        await directory.delete(space.id)
        assert await proposals.get(other.id) is None  # gone with its space
    finally:
        await directory.close()


async def test_a_spaces_file_governs_a_space(location: Location, tmp_path: Path) -> None:
    directory = await SpaceDirectory.open(location("spaces.db"))
    declared = tmp_path / "spaces.toml"
    try:
        for line, governed in (("governed = true", True), ("", True), ("governed = false", False)):
            declared.write_text(f'[[spaces]]\nname = "rules"\nowner = "ana@d"\n{line}\n')
            await apply_spaces(read_spaces_file(declared), directory, declared)
            space = await directory.find("rules")
            assert space is not None and space.governed is governed  # unsaid: left as it is
    finally:
        await directory.close()


async def test_an_approval_whose_write_never_ran_is_applied_by_the_sweep_once(
    location: Location,
) -> None:
    directory = await SpaceDirectory.open(location("spaces.db"))
    store = await LongTermStore.open(location("base.db"))
    try:
        governance = Governance(directory, store)
        space = await directory.create("rules", "ana@d", None, governed=True)
        await directory.grant(space, "bob@d", "writer", "ana@d")
        op = StoreMemory(category="fact", content="Kept through a crash", space="rules")
        places = await governance.gate.places("bob@d", op)
        waiting = await governance.propose("bob@d", "bob@d/x", Request(op, "r1", places))
        assert isinstance(waiting, PendingApproval)
        assert governance.told.get_nowait().to == "ana@d"  # asked

        # the agent stops between the approval and the write
        approved = await directory.proposals.decide(waiting.proposal, "approved", "ana@d")
        assert approved is not None and approved.result is None
        assert await governance.sweep(time.time()) == 0  # too recent: it may be in flight
        later = time.time() + RESUME_AFTER + 1
        assert await governance.sweep(later) == 1
        assert await governance.sweep(later) == 0  # recorded: not applied twice
        told = governance.told.get_nowait()
        assert told.to == "bob@d/x" and "approved by ana@d and applied" in told.body

        recorded = await directory.proposals.get(waiting.proposal)
        assert recorded is not None and recorded.result is not None
        read = GetMemory(id=json.loads(recorded.result)["id"], space="rules")
        (memory,) = await store.batch("ana@d", [Request(read, None, places)])
        assert isinstance(memory, Memory)
        assert (memory.content, memory.author) == ("Kept through a crash", "bob@d")
    finally:
        await store.close()
        await directory.close()


async def test_pending_proposals_are_bounded_per_writer_and_per_space(
    location: Location,
) -> None:
    """A writer cannot flood a governed space's admins: past its bound (or the space's)
    a proposal is ``resource-constraint`` naming the bound, nothing kept and no admin
    asked; a retry of a kept one still finds it, and a decided one makes room."""
    directory = await SpaceDirectory.open(location("spaces.db"))
    store = await LongTermStore.open(location("base.db"))
    try:
        limits = Limits(max_pending_proposals=2, max_space_proposals=3)
        governance = Governance(directory, store, limits=limits)
        space = await directory.create("rules", "ana@d", None, governed=True)
        for writer in ("bob@d", "cy@d"):
            await directory.grant(space, writer, "writer", "ana@d")

        async def propose(writer: str, request_id: str) -> object:
            op = StoreMemory(category="fact", content=f"{writer} {request_id}", space="rules")
            places = await governance.gate.places(writer, op)
            return await governance.propose(writer, f"{writer}/x", Request(op, request_id, places))

        kept = [await propose("bob@d", f"b{n}") for n in range(2)]
        assert all(isinstance(outcome, PendingApproval) for outcome in kept)
        first = kept[0]
        assert isinstance(first, PendingApproval)
        over = await propose("bob@d", "b2")
        assert isinstance(over, ResourceConstraint)
        assert "the most one writer may have (2)" in str(over)
        again = await propose("bob@d", "b0")  # a retry of a kept one: the same proposal
        assert isinstance(again, PendingApproval) and again.proposal == first.proposal
        assert isinstance(await propose("cy@d", "c0"), PendingApproval)
        full = await propose("cy@d", "c1")
        assert isinstance(full, ResourceConstraint) and "the most it keeps (3)" in str(full)
        assert len(await directory.proposals.pending(space.id)) == 3
        asked = [governance.told.get_nowait() for _ in range(governance.told.qsize())]
        assert [told.to for told in asked] == ["ana@d"] * 3  # the refused ones asked no one

        await directory.proposals.decide(first.proposal, "rejected", "ana@d")
        assert isinstance(await propose("cy@d", "c1"), PendingApproval)
    finally:
        await store.close()
        await directory.close()

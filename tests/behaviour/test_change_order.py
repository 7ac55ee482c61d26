"""A space's change stream over a pool of two base memory agents: each agent tells its
own changes in order, but the one that committed first may tell later than the other.
The stream still yields every change once, in ``seq`` order (real service, real SQLite
file, the in-process transport; the notices are handed to the stream as its router
would hand them)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from spade_memory import MemoryClient
from spade_memory.base_memory.service import BaseMemoryService
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.client import InProcessTransport
from spade_memory.client.changes import ChangeRouter, SpaceChanges
from spade_memory.protocol.services import BASE_MEMORY
from spade_memory.spaces.directory import SpaceDirectory

ALICE = "alice@example.org"
FIRST, SECOND = "base-memory@example.org", "base-memory-2@example.org"


async def test_a_change_told_late_by_the_other_agent_is_yielded_in_order(
    tmp_path: Path,
) -> None:
    heard = await heard_in_order(tmp_path, [FIRST, SECOND, FIRST], [0, 2, 1])
    assert heard == sorted(heard)


async def test_a_change_told_late_after_two_of_the_same_agent_is_not_passed_over(
    tmp_path: Path,
) -> None:
    """The second agent tells two changes in a row while the first agent's change,
    committed between them, is told last: the stream catches up before the second."""
    heard = await heard_in_order(tmp_path, [SECOND, SECOND, FIRST], [0, 2, 1])
    assert heard == sorted(heard)


async def heard_in_order(tmp_path: Path, tellers: list[str], told: list[int]) -> list[int]:
    """Three stores in a space; their notices handed to a stream as ``tellers`` told
    them, in the order ``told`` (positions of the changes). Returns the seqs the stream
    yielded, after checking that it yielded each stored memory once, in store order."""
    memories = await LongTermStore.open(tmp_path / "base-memory.db")
    directory = await SpaceDirectory.open(tmp_path / "spaces.db")
    try:
        service = BaseMemoryService(memories, directory=directory)
        transport = InProcessTransport({BASE_MEMORY: service}, ALICE)
        alice = MemoryClient(transport=transport)  # type: ignore[arg-type]
        await alice.create_space("team")
        stream = SpaceChanges(transport, ChangeRouter([FIRST, SECOND]), "team", None)  # type: ignore[arg-type]
        await stream.start()
        team = alice.space("team")
        stored = [await team.store_memory("fact", f"finding {n}") for n in range(3)]
        changes = (await alice.changes_since("team")).changes
        for teller, position in zip(tellers, told, strict=True):
            stream.queue.put_nowait((teller, changes[position]))
        heard = [await asyncio.wait_for(anext(stream), 5.0) for _ in stored]
        assert [change.memory_id for change in heard] == stored
        await stream.aclose()
        return [change.seq for change in heard]
    finally:
        await directory.close()
        await memories.close()

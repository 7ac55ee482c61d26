"""Beads memories count against their author's byte budget: a store that would cross it
is refused with the figures and writes nothing, ``memory_stats`` reports the usage, and
mirrored memories are left to the base memory agent's count.

On a real beads file (the native engine); the expected figures are measured here from
the file's lines, not read from the agent's counts.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from spade_memory import Limits, ResourceConstraint
from spade_memory.beads.native import NativeEngine
from spade_memory.beads_sync.service import BeadsSyncService
from spade_memory.beads_sync.store import BeadsMemoryStore
from spade_memory.protocol.beads import BeadsMemoryStats, BeadsStats, BeadsStoreMemory
from spade_memory.protocol.memories import Change, Memory

ALICE, BOB = "alice@localhost", "bob@localhost"


def lines(beads: Path) -> list[dict[str, object]]:
    text = (beads / "issues.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def held_in_file(beads: Path, owner: str) -> int:
    """The bytes of what ``owner`` stored, as the file holds them."""
    size = 0
    for issue in lines(beads):
        labels = [str(label) for label in issue.get("labels", [])]  # type: ignore[attr-defined]
        if f"agent:{owner}" not in labels or issue.get("external_ref"):
            continue
        metadata = issue.get("metadata") or {}
        texts = [str(issue.get(key) or "") for key in ("title", "description", "notes")]
        texts += [*labels, json.dumps(metadata, ensure_ascii=False, separators=(",", ":"))]
        size += sum(len(text.encode()) for text in texts)
    return size


async def stats(service: BeadsSyncService, owner: str = ALICE) -> BeadsStats:
    return await service.apply(owner, BeadsMemoryStats())


def memory(content: str, **fields: object) -> BeadsStoreMemory:
    return BeadsStoreMemory(content=content, **fields)  # type: ignore[arg-type]


async def test_a_store_over_the_owners_budget_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    beads = tmp_path / ".beads"
    limits = Limits(max_bytes_per_owner=2_000)
    service = BeadsSyncService(BeadsMemoryStore(NativeEngine(beads), "s1", limits=limits))
    await service.apply(ALICE, memory("é" * 300, tags=["big"], metadata={"k": "v" * 200}))
    await service.apply(ALICE, memory("the second memory"))
    used = await stats(service)
    assert used.used_bytes == held_in_file(beads, ALICE) > 800
    assert (used.open_memories, used.max_bytes) == (2, 2_000)
    before = (beads / "issues.jsonl").read_bytes()

    with pytest.raises(ResourceConstraint, match=f"holds {used.used_bytes:,} of 2,000 bytes"):
        await service.apply(ALICE, memory("x" * (2_000 - used.used_bytes)))
    assert (beads / "issues.jsonl").read_bytes() == before
    await service.apply(BOB, memory("x" * 1_500))  # another owner's budget is its own


async def test_closed_memories_still_count_and_mirrored_ones_do_not(tmp_path: Path) -> None:
    beads = tmp_path / ".beads"
    store = BeadsMemoryStore(NativeEngine(beads), "s1", limits=Limits(max_bytes_per_owner=5_000))
    service = BeadsSyncService(store)
    stored = await store.store(ALICE, memory("a decision taken and later withdrawn"))
    now = datetime.now(timezone.utc)
    mirrored = Memory(
        id="m-1", owner=ALICE, category="fact", content="y" * 3_000, confidence=1.0,
        created_at=now, last_accessed=now, access_count=0,
    )  # fmt: skip
    await store.mirror(
        [Change(seq=1, kind="stored", memory_id="m-1", owner=ALICE, memory=mirrored)]
    )
    open_bytes = (await stats(service)).used_bytes

    await store.delete(ALICE, stored.id, "withdrawn")
    used = await stats(service)
    assert (used.open_memories, used.closed_memories) == (0, 1)
    assert used.used_bytes == held_in_file(beads, ALICE) == open_bytes > 0
    await store.store(ALICE, memory("z" * 4_000))  # the mirror's 3,000 bytes are not its

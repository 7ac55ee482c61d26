"""The interaction memory agent keeps one byte budget per owner (and per shared space)
across notes, working memory and context files: a write that would cross it is refused
with the figures and writes nothing; ``interaction_stats`` reports the usage; deleting
gives bytes back; a store of an older version is counted at open.

The service runs on real stores (``location``: a SQLite file or a PostgreSQL database)
and a real context directory. The expected figures are measured here, from what is on
disk and in the database, not read from the service's counters.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from spade_memory import Limits, ResourceConstraint
from spade_memory.interaction import pg_tables as pg_schema
from spade_memory.interaction.context_dir import ContextDirectory
from spade_memory.interaction.service import InteractionMemoryService
from spade_memory.interaction.store import MIGRATIONS, InteractionStore
from spade_memory.protocol.context import SaveKnowledge, SavePreferences
from spade_memory.protocol.conversation_stats import InteractionStats, InteractionStatsOp
from spade_memory.protocol.interaction_forget import ForgetInteractions
from spade_memory.protocol.notes import AddInformation, ClearConversation, GetInformation
from spade_memory.protocol.ops import Place, Request
from spade_memory.protocol.working import AddFinding, GetWorkingMemory
from spade_memory.protocol.working_memory import Finding
from tests.support.stores import Location, query

ALICE = "alice@localhost"
BUDGET = Limits(max_bytes_per_owner=3_000, max_bytes_per_space=1_500)
PAST = datetime(1971, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
async def service(location: Location, tmp_path: Path) -> AsyncIterator[InteractionMemoryService]:
    store = await InteractionStore.open(location("notes.db"), purge_every=None, limits=BUDGET)
    yield InteractionMemoryService(store, ContextDirectory(tmp_path / "context"), BUDGET)
    await store.close()


async def stats(service: InteractionMemoryService) -> InteractionStats:
    return await service.apply(ALICE, InteractionStatsOp())


def on_disk(service: InteractionMemoryService) -> int:
    """The bytes of the owner's files, as the file system has them."""
    assert service.context is not None
    folder = service.context.owner_dir(ALICE)
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


async def in_database(where: str | Path) -> int:
    """The bytes of the notes and working memories, as the database holds them."""
    notes = await query(where, "SELECT content, conversation_id FROM notes")
    sessions = await query(where, "SELECT document FROM working_memories")
    return sum(len(str(text).encode()) for row in [*notes, *sessions] for text in row)


def finding(text: str) -> AddFinding:
    return AddFinding(session_id="s1", finding=Finding(type="note", title=text))


async def test_notes_working_memory_and_files_share_the_owners_budget(
    service: InteractionMemoryService, location: Location
) -> None:
    await service.apply(ALICE, AddInformation(conversation_id="c1", information="é" * 400))
    await service.apply(ALICE, SaveKnowledge(name="deploys", content="deploy on fridays " * 40))
    await service.apply(ALICE, SavePreferences(user="ana", preferences={"tone": "short"}))
    await service.apply(ALICE, finding("the cache is cold " * 10))
    held = await in_database(location("notes.db")) + on_disk(service)
    usage = await stats(service)
    assert (usage.used_bytes, usage.file_bytes, usage.max_bytes) == (held, on_disk(service), 3_000)
    assert (usage.notes, usage.sessions, usage.files) == (1, 1, 2)
    left = 3_000 - held

    refusals = [
        AddInformation(conversation_id="c1", information="n" * left),
        SaveKnowledge(name="big", content="k" * left),
        SaveKnowledge(name="deploys", content="deploy on fridays " * 40 + "k" * (left + 1)),
        finding("f" * left),
    ]
    for op in refusals:
        with pytest.raises(ResourceConstraint, match=f"holds {held:,} of 3,000 bytes"):
            await service.apply(ALICE, op)
    notes = await service.apply(ALICE, GetInformation(conversation_id="c1"))
    session = await service.apply(ALICE, GetWorkingMemory(session_id="s1"))
    assert notes.notes == ["é" * 400] and len(session.working_memory.findings) == 1
    assert (
        (await stats(service)).used_bytes
        == held
        == await in_database(location("notes.db")) + on_disk(service)
    )
    fits = AddInformation(conversation_id="c1", information="n" * (left - 2 - 10))
    await service.apply(ALICE, fits)  # what is left still fits (its conversation id counted)


async def test_a_hand_edit_is_counted_before_the_next_write(
    service: InteractionMemoryService,
) -> None:
    written = await service.apply(ALICE, SaveKnowledge(name="deploys", content="small"))
    assert service.context is not None
    path = service.context.owner_dir(ALICE) / written.path
    path.write_text(path.read_text() + "grown by hand " * 200)
    assert (await stats(service)).used_bytes == on_disk(service) > 2_800
    with pytest.raises(ResourceConstraint):
        await service.apply(ALICE, AddInformation(conversation_id="c1", information="x" * 300))


async def test_clearing_expiring_and_forgetting_give_every_byte_back(
    service: InteractionMemoryService, location: Location
) -> None:
    await service.apply(ALICE, AddInformation(conversation_id="kept", information="kept"))
    await service.apply(ALICE, AddInformation(conversation_id="c2", information="x" * 500))
    await service.apply(
        ALICE, AddInformation(conversation_id="c3", information="y" * 500, expires_at=PAST)
    )
    await service.apply(ALICE, finding("z" * 300))
    await service.apply(ALICE, ClearConversation(conversation_id="c2"))
    assert await service.store.purge_expired() == 1
    assert (await stats(service)).used_bytes == await in_database(location("notes.db"))

    await service.apply(ALICE, SaveKnowledge(name="deploys", content="deploy on fridays"))
    await service.apply(ALICE, ForgetInteractions(dry_run=False))
    emptied = await stats(service)
    assert (emptied.used_bytes, emptied.notes, emptied.sessions, emptied.files) == (0, 0, 0, 0)


async def test_a_shared_session_counts_against_the_spaces_budget(location: Location) -> None:
    store = await InteractionStore.open(location("notes.db"), purge_every=None, limits=BUDGET)
    team = Place("team-key", "team", "writer", max_bytes=800)
    try:
        in_team = [Request(finding(text), None, (team,)) for text in ("a" * 100, "b" * 800)]
        ok, over = await store.batch(ALICE, in_team)
        assert not isinstance(ok, Exception)
        assert isinstance(over, ResourceConstraint) and "space 'team' holds" in over.text
        assert "of 800 bytes" in over.text
        (usage,) = await store.batch(ALICE, [Request(InteractionStatsOp(), None, (team,))])
        assert isinstance(usage, InteractionStats)
        assert (usage.space, usage.sessions, usage.max_bytes) == ("team", 1, 800)
        assert usage.used_bytes == await in_database(location("notes.db"))
        (mine,) = await store.batch(ALICE, [Request(InteractionStatsOp())])
        assert mine.used_bytes == 0  # type: ignore[union-attr]
    finally:
        await store.close()


async def test_an_older_store_is_counted_at_open(location: Location) -> None:
    where = location("old.db")
    store = await InteractionStore.open(where, purge_every=None)
    await store.apply(ALICE, AddInformation(conversation_id="c1", information="noted before"))
    await store.apply(ALICE, finding("found before"))
    await store.close()
    await query(where, "DROP TABLE interaction_usage")
    if isinstance(where, Path):
        await query(where, f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
    else:
        await query(
            where,
            "UPDATE spade_memory_schema SET version = ? WHERE store = 'interaction'",
            len(pg_schema.MIGRATIONS) - 1,
        )

    store = await InteractionStore.open(where, purge_every=None)
    try:
        usage = await store.apply(ALICE, InteractionStatsOp())
        assert usage.used_bytes == await in_database(where) > 0
    finally:
        await store.close()

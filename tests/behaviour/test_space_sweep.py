"""A deleted space leaves nothing at the interaction memory agent: the base memory agent
deletes the space from the shared directory, and the interaction memory agent's sweep
deletes the space's working-memory sessions, its byte count and its knowledge files.
Real stores, on SQLite and on PostgreSQL, and a real context directory."""

from __future__ import annotations

from pathlib import Path

from spade_memory.interaction.budgeted_files import folder_of
from spade_memory.interaction.context_dir import ContextDirectory
from spade_memory.interaction.service import InteractionMemoryService
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.context import SaveKnowledge
from spade_memory.protocol.ops import Place
from spade_memory.protocol.working import CreateWorkingMemory, SetFocus
from spade_memory.protocol.working_memory import Focus
from spade_memory.spaces.directory import SpaceDirectory
from tests.support.stores import Location, query

ANA = "ana@example.org"
OUTAGE = Focus(type="concept", id="outage-1", name="the outage")


async def test_a_deleted_spaces_sessions_and_files_are_swept(
    location: Location, tmp_path: Path
) -> None:
    directory = await SpaceDirectory.open(location("spaces.db"))
    store = await InteractionStore.open(location("interaction.db"), purge_every=None)
    context = ContextDirectory(tmp_path / "context")
    service = InteractionMemoryService(store, context, directory=directory)
    try:
        gone = await directory.create("incident-7", ANA, None)
        kept = await directory.create("team", ANA, None)
        for space in ("incident-7", "team", None):
            await service.apply(ANA, CreateWorkingMemory(session_id="s1", space=space))
            await service.apply(ANA, SetFocus(session_id="s1", focus=OUTAGE, space=space))
            await service.apply(ANA, SaveKnowledge(name="runbook", content="restart", space=space))
        folder_gone = context.owner_dir(folder_of(Place(gone.id, gone.name)))
        folder_kept = context.owner_dir(folder_of(Place(kept.id, kept.name)))
        assert folder_gone.is_dir() and folder_kept.is_dir()

        assert await service.sweep_deleted_spaces() == 0  # nothing deleted yet
        await directory.delete(gone.id)
        assert await service.sweep_deleted_spaces() == 1

        where = location("interaction.db")
        sessions = await query(where, "SELECT owner FROM working_memories")
        assert sorted(str(row[0]) for row in sessions) == sorted([ANA, kept.id])
        counted = await query(where, "SELECT subject FROM interaction_usage")
        assert gone.id not in {row[0] for row in counted}
        assert kept.id in {row[0] for row in counted}
        assert not folder_gone.exists()
        assert folder_kept.is_dir() and context.owner_dir(ANA).is_dir()
        assert await directory.deleted() == {gone.id: "incident-7"}
        assert await service.sweep_deleted_spaces() == 0  # nothing left to sweep
    finally:
        await store.close()
        await directory.close()


async def test_sessions_of_a_space_deleted_before_its_name_was_kept_are_swept(
    location: Location, tmp_path: Path
) -> None:
    """A space deleted by an older version left no name behind: its sessions and byte
    count still go (its folder cannot be named, and stays)."""
    directory = await SpaceDirectory.open(location("spaces.db"))
    store = await InteractionStore.open(location("interaction.db"), purge_every=None)
    service = InteractionMemoryService(
        store, ContextDirectory(tmp_path / "ctx"), directory=directory
    )
    try:
        old = await directory.create("old", ANA, None)
        await service.apply(ANA, CreateWorkingMemory(session_id="s1", space="old"))
        await query(location("spaces.db"), "DELETE FROM spaces WHERE id = ?", old.id)
        assert await service.sweep_deleted_spaces() == 1
        assert await query(location("interaction.db"), "SELECT owner FROM working_memories") == []
    finally:
        await store.close()
        await directory.close()


async def test_without_a_directory_there_is_nothing_to_sweep(tmp_path: Path) -> None:
    store = await InteractionStore.open(tmp_path / "interaction.db", purge_every=None)
    try:
        service = InteractionMemoryService(store, ContextDirectory(tmp_path / "context"))
        assert await service.sweep_deleted_spaces() == 0
    finally:
        await store.close()

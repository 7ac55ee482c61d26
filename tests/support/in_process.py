"""The memory services of one process, reached by the client's in-process transport:
real services on real SQLite files, with no XMPP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from spade_memory import MemoryClient
from spade_memory.base_memory.service import BaseMemoryService
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.client import InProcessTransport
from spade_memory.interaction.context_dir import ContextDirectory
from spade_memory.interaction.service import InteractionMemoryService
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.services import BASE_MEMORY, INTERACTION_MEMORY
from spade_memory.spaces.directory import SpaceDirectory


@asynccontextmanager
async def in_process_services(
    folder: Path, spaces: bool = True
) -> AsyncIterator[dict[str, object]]:
    """Yields the base and interaction memory services on files in ``folder``, by
    service name (the base one with a space directory unless ``spaces`` is False);
    closes their stores after."""
    memories = await LongTermStore.open(folder / "base-memory.db")
    notes = await InteractionStore.open(folder / "interaction-memory.db")
    directory = await SpaceDirectory.open(folder / "spaces.db") if spaces else None
    try:
        yield {
            BASE_MEMORY: BaseMemoryService(memories, directory=directory),
            INTERACTION_MEMORY: InteractionMemoryService(notes, ContextDirectory(folder / "ctx")),
        }
    finally:
        if directory is not None:
            await directory.close()
        await notes.close()
        await memories.close()


def client_of(owner: str, services: dict[str, object]) -> MemoryClient:
    """Returns a client of ``services`` whose every call is ``owner``'s."""
    return MemoryClient(transport=InProcessTransport(services, owner))  # type: ignore[arg-type]

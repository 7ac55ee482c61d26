"""``spade-memory import-base-memory`` and ``import-interactions``: spade_llm's files, by
their own names, into a data directory. Both hold the data directory (a running service
must be stopped first: its indexes would not see the rows) and both are idempotent."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from spade_memory.base_memory.service import DATABASE as BASE_DATABASE
from spade_memory.base_memory.store.imports import read_spade_llm_file
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.interaction.service import DATABASE as NOTES_DATABASE
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.protocol.memories import Stored
from spade_memory.protocol.ops import Request
from spade_memory.server.lock import lock

CHUNK = 500
"""Memories per transaction."""


@dataclass(frozen=True)
class Imported:
    """What one file gave: how many added, how many already there, for how many owners."""

    file: Path
    added: int
    already: int
    owners: int = 1

    def sentence(self, what: str) -> str:
        """One line for the person who ran the import."""
        if self.added == 0 and self.already:
            return f"{self.file}: nothing new; its {self.already} {what} were imported before"
        there = f" ({self.already} already there)" if self.already else ""
        agents = f" of {self.owners} agents" if self.owners > 1 else ""
        return f"{self.file}: imported {self.added} {what}{agents}{there}"


async def import_base_memory(
    data_dir: Path, files: Sequence[Path], advance: Callable[[int], None] = lambda _: None
) -> list[Imported]:
    """Every memory of each spade_llm ``{agent}_base_memory.db`` not in the store yet
    (``advance`` is told how many memories each stored chunk held).

    Returns one ``Imported`` per file; raises ``DataDirectoryInUse`` while a service
    runs there, ``sqlite3.Error`` or ``ValueError`` for a file that is not spade_llm's,
    ``StoreFault`` for a damaged store.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    with lock(data_dir):
        store = await LongTermStore.open(data_dir / BASE_DATABASE)
        try:
            return [await _one_file(store, file, advance) for file in files]
        finally:
            await store.close()


async def _one_file(store: LongTermStore, file: Path, advance: Callable[[int], None]) -> Imported:
    try:
        by_owner = read_spade_llm_file(file)
    except sqlite3.Error as error:
        raise ValueError(f"{file}: {error}") from None
    added = already = 0
    for owner, memories in by_owner.items():
        for start in range(0, len(memories), CHUNK):
            requests = [Request(memory) for memory in memories[start : start + CHUNK]]
            for outcome in await store.batch(owner, requests):
                if isinstance(outcome, MemoryServiceError):
                    raise outcome
                assert isinstance(outcome, Stored)
                already += outcome.deduplicated
                added += not outcome.deduplicated
            advance(len(requests))
    return Imported(file, added, already, max(len(by_owner), 1))


async def import_interactions(data_dir: Path, file: Path, owner: str | None) -> Imported:
    """The notes of a spade_llm ``{agent}_interactions.json`` not in the store yet.

    Raises ``DataDirectoryInUse`` while a service runs there, ``OSError`` or pydantic's
    ``ValidationError`` for a file that is not spade_llm's.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    with lock(data_dir):
        store = await InteractionStore.open(data_dir / NOTES_DATABASE)
        try:
            added, already = await store.import_spade_llm(file, owner)
        except ValidationError as error:
            raise ValueError(f"{file}: {error.errors()[0]['msg']}") from None
        finally:
            await store.close()
    return Imported(file, added, already)

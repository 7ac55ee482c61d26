"""Context files written within their folder's byte budget, and measured into it.

Files are not the store's, so the store cannot count them in the transaction that
writes them. A folder's bytes are therefore measured (its index brought in step with
it: ``ContextDirectory.measure``) and set in the store's usage (``usage.set_files``)
before a place's first write in this process, before each file write and after it.
A file write is prepared first (what it adds), its growth reserved in the store
(refused there with the figures, nothing written), then written; the measure after it
replaces the reservation by what is on disk, so a write that failed, or a hand edit,
leaves no error in the count.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import TypeVar

from spade_memory.interaction.context_dir import ContextDirectory, Pending
from spade_memory.interaction.context_index import Measure
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.ops import Place

T = TypeVar("T")


def folder_of(place: Place) -> str:
    """The context directory's folder key of a place: the owner's JID, or the space's name
    and id (a deleted space's files can never reach a new space of the same name)."""
    return place.key if place.personal else f"space-{place.name}-{place.key}"


class BudgetedFiles:
    """The context directory of an interaction memory agent, within its store's budgets."""

    def __init__(self, store: InteractionStore, context: ContextDirectory) -> None:
        self.store = store
        self.context = context
        self._measured: set[str] = set()
        """The places whose folder was measured since the agent started."""

    async def measure(self, place: Place) -> Measure:
        """What the folder of ``place`` holds now, as the store will count it."""
        measured = await asyncio.to_thread(self.context.measure, folder_of(place))
        await self.store.set_files(place.key, measured.bytes)
        self._measured.add(place.key)
        return measured

    async def measured(self, places: Iterable[Place]) -> None:
        """Measure the folders of ``places`` not measured since the agent started (a hand
        edit made while it was stopped is counted before their first write)."""
        for place in places:
            if place.key not in self._measured:
                await self.measure(place)

    async def write(self, place: Place, prepare: Callable[[], tuple[Pending, T]]) -> T:
        """Write the file ``prepare`` makes (in a thread) in the folder of ``place``.

        Returns what ``prepare`` returned beside the file; raises ``ResourceConstraint``
        with the figures, nothing written, when the file would take the place over its
        byte budget."""
        await self.measure(place)
        pending, result = await asyncio.to_thread(prepare)
        await self.store.reserve_files(place, pending.grown)
        try:
            await asyncio.to_thread(self.context.write, pending)
        finally:
            await self.measure(place)
        return result

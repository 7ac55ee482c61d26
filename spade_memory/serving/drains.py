"""A behaviour that acts on what its service puts in a queue: the notices a memory
agent sends after a commit (to a mirror, to a space's subscribers, to a work engine)."""

from __future__ import annotations

import asyncio
from typing import ClassVar, Generic, TypeVar

from spade.behaviour import CyclicBehaviour

from spade_memory.metrics.figures import pending

T = TypeVar("T")


class Drains(CyclicBehaviour, Generic[T]):  # type: ignore[misc]
    """Handles what the service puts in ``items``, one at a time; killing it puts None
    there, which wakes its wait so it ends at once. (Not ``queue``: that is SPADE's
    own, for the messages a behaviour receives.)

    What waits in ``items`` is exported as background work of the kind ``work``."""

    work: ClassVar[str] = "notices"

    def __init__(self, items: asyncio.Queue[T | None]) -> None:
        super().__init__()
        self.items = items
        pending(self.work, items.qsize)

    def kill(self, exit_code: object | None = None) -> None:
        """Kill it, and wake its wait."""
        super().kill(exit_code)
        self.items.put_nowait(None)

    async def run(self) -> None:
        try:
            item = await asyncio.wait_for(self.items.get(), timeout=1.0)
        except asyncio.TimeoutError:
            return
        if item is not None and not self.is_killed():
            await self.handle(item)

    async def handle(self, item: T) -> None:
        """Act on one item."""
        raise NotImplementedError

"""Behaviours of the base memory agent that tell others what committed: its mirror (a
notice carries nothing), the subscribers of a space (its changes), and a work engine
(a memory linked to a work item)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging

from slixmpp.jid import InvalidJID
from spade.behaviour import CyclicBehaviour

from spade_memory.base_memory.store.journal import SpaceEvent
from spade_memory.base_memory.store.listeners import Listeners
from spade_memory.base_memory.work_items import WorkItems, WorkLink
from spade_memory.serving.drains import Drains
from spade_memory.spaces.directory import SpaceDirectory
from spade_memory.xmpp import wire
from spade_memory.xmpp.notices import EVENTS_ONTOLOGY, change_notice

logger = logging.getLogger("spade_memory.base_memory")
WORK_ONTOLOGY = "spade-memory-work-items"
"""Ontology of the messages telling a work engine of a memory linked to a work item."""


class Committed:
    """What the store tells of its commits, kept for the agent's behaviours: the mirror's
    wake-up (``changed``), shared spaces' events and work-item links (the queues of
    ``NotifySubscribers`` and ``NotifyWorkEngine``). Made before the store, which is
    opened with its ``listeners()``."""

    def __init__(self, work_items: WorkItems | None = None) -> None:
        self.work_items = work_items or WorkItems()
        self.changed = asyncio.Event()
        """Set after a write the mirror should read."""
        self.events: asyncio.Queue[SpaceEvent | None] = asyncio.Queue()
        """Committed writes in shared spaces, for ``NotifySubscribers``."""
        self.links: asyncio.Queue[list[WorkLink] | None] = asyncio.Queue()
        """Committed links to work items, for ``NotifyWorkEngine`` (with a JID to tell)."""

    def listeners(self) -> Listeners:
        """Returns the store's listeners feeding these queues (links only when a work
        engine's JID is to be told)."""
        return Listeners(
            events=self._committed,
            links=None if self.work_items.notify_jid is None else self._linked,
            purged=self.changed.set,  # expired memories' deletions reach the mirror
        )

    def _linked(self, links: list[WorkLink]) -> None:
        if self.work_items.notify is not None:
            self.work_items.notify(links)
        self.links.put_nowait(links)

    def _committed(self, events: list[SpaceEvent]) -> None:
        for event in events:
            self.events.put_nowait(event)


class NotifyMirror(CyclicBehaviour):  # type: ignore[misc]
    """Tells the mirror when writes were committed (many writes, one notice)."""

    def __init__(self, committed: Committed, mirror: str) -> None:
        super().__init__()
        self.committed = committed
        self.mirror = mirror

    def kill(self, exit_code: object | None = None) -> None:
        """Kill it, and wake its wait for writes (so it ends at once, telling no one)."""
        super().kill(exit_code)
        self.committed.changed.set()

    async def run(self) -> None:
        try:
            await asyncio.wait_for(self.committed.changed.wait(), timeout=1.0)
        except asyncio.TimeoutError:
            return
        if self.is_killed():
            return
        self.committed.changed.clear()
        await self.send(change_notice(self.mirror))


class NotifySubscribers(Drains[SpaceEvent]):
    """Sends each committed write in a shared space to the space's subscribers that are
    still members (a subscription does not outlive the membership)."""

    work = "change_notices"

    def __init__(self, committed: Committed, directory: SpaceDirectory) -> None:
        super().__init__(committed.events)
        self.directory = directory

    async def handle(self, event: SpaceEvent) -> None:
        space = await self.directory.by_id(event.space)
        if space is None:
            return  # deleted meanwhile
        body = dataclasses.replace(event, name=space.name).change().model_dump_json()
        for subscriber, address in await self.directory.listening(space):
            try:
                notice = wire.notice(address, EVENTS_ONTOLOGY, body)
            except InvalidJID as error:  # kept by an older version, which took any name
                logger.warning(
                    "space %s: the subscription of %s is dropped: its address %s does not"
                    " parse (%s)", space.name, subscriber, ascii(address), error,
                )  # fmt: skip
                await self.directory.unsubscribe(space, subscriber)
                continue
            await self.send(notice)


class NotifyWorkEngine(Drains[list[WorkLink]]):
    """Tells a deployment's work engine (a JID) of each link of a memory to a work item:
    one message per link, its body ``{"event": "memory_linked", "work_id", "memory_id",
    "author"}``, with the ontology ``WORK_ONTOLOGY``."""

    work = "work_item_links"

    def __init__(self, committed: Committed, to: str) -> None:
        super().__init__(committed.links)
        self.to = to

    async def handle(self, links: list[WorkLink]) -> None:
        for link in links:
            body = json.dumps({
                "event": "memory_linked", "work_id": link.work_id,
                "memory_id": link.memory_id, "author": link.author,
            })  # fmt: skip
            await self.send(wire.notice(self.to, WORK_ONTOLOGY, body))

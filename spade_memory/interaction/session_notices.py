"""The interaction memory agent's notices of changed working sessions in shared spaces:
after a commit, each subscriber of the space (``subscribe``, kept in the shared
directory of spaces by the base memory agent) is told which session changed, by whom."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from slixmpp.jid import InvalidJID

from spade_memory.protocol.working import SessionChanged
from spade_memory.serving.drains import Drains
from spade_memory.spaces.directory import SpaceDirectory
from spade_memory.xmpp import wire
from spade_memory.xmpp.notices import SESSION_EVENTS_ONTOLOGY

logger = logging.getLogger("spade_memory.interaction")


@dataclass(frozen=True)
class SessionEvent:
    """A committed change of a session kept in a shared space."""

    space: str
    """The space's key (its id)."""
    session_id: str
    author: str
    op: str


class SessionEvents:
    """The committed session changes waiting to be told (filled by the service)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[SessionEvent | None] = asyncio.Queue()

    def committed(self, event: SessionEvent) -> None:
        self.queue.put_nowait(event)


class NotifySessionSubscribers(Drains[SessionEvent]):
    """Sends each committed session change to the subscribers of its space that are
    still members."""

    work = "session_notices"

    def __init__(self, events: SessionEvents, directory: SpaceDirectory) -> None:
        super().__init__(events.queue)
        self.directory = directory

    async def handle(self, event: SessionEvent) -> None:
        space = await self.directory.by_id(event.space)
        if space is None:
            return  # deleted meanwhile
        body = SessionChanged(
            space=space.name, session_id=event.session_id, author=event.author, op=event.op
        ).model_dump_json()
        for _subscriber, address in await self.directory.listening(space):
            try:
                notice = wire.notice(address, SESSION_EVENTS_ONTOLOGY, body)
            except InvalidJID:  # the base memory agent drops such a subscription
                continue
            await self.send(notice)

"""A space's changes as they happen, on the client: the blackboard.

``ChangeRouter`` (one behaviour per client agent) takes the base memory agent's
change notices (ontology ``spade-memory-events``) and hands each to the streams
of its space. ``SpaceChanges`` is such a stream, an async iterator: it subscribes,
yields every committed store, update and delete in the space, and after a
reconnection, or from a cursor given at the start, catches up with
``changes_since`` first, so nothing is missed and nothing comes twice (a change
is yielded once, in ``seq`` order).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING

from pydantic import ValidationError

from spade_memory.protocol.memories import Change, ChangesSince
from spade_memory.protocol.services import BASE_MEMORY
from spade_memory.protocol.spaces import Subscribe, Unsubscribe
from spade_memory.xmpp import wire
from spade_memory.xmpp.lifecycle import WakesWhenKilled
from spade_memory.xmpp.reconnect import keep_connected

if TYPE_CHECKING:
    from spade_memory.client.transport import Transport

logger = logging.getLogger("spade_memory.spaces")
CATCH_UP_PAGE = 500
"""Changes fetched per ``changes_since`` while catching up."""


class ChangeRouter(WakesWhenKilled):
    """Hands the base memory agent's change notices to the streams of their space."""

    def __init__(self, senders: Collection[str]) -> None:
        super().__init__()
        self.senders = frozenset(senders)
        """The base memory agents (one, or a pool): notices from anyone else are dropped."""
        self.streams: defaultdict[str, set[SpaceChanges]] = defaultdict(set)

    async def on_start(self) -> None:
        keep_connected(self.agent, self, self.reconnected)

    async def reconnected(self) -> None:
        """Notices sent while the connection was down are lost: each stream catches up."""
        for streams in self.streams.values():
            for stream in streams:
                stream.resync.set()

    async def run(self) -> None:
        notice = await self.receive(timeout=1.0)
        if notice is None or wire.bare(notice.sender) not in self.senders:
            return
        try:
            change = Change.model_validate_json(notice.body or "")
        except ValidationError:
            logger.warning("a malformed change notice from %s was dropped", notice.sender)
            return
        for stream in self.streams.get(change.space or "", ()):
            stream.queue.put_nowait((wire.bare(notice.sender), change))


class SpaceChanges:
    """Every committed change of one space, as an async iterator of ``Change``.

    ``after``: a cursor (a ``Change.seq``, or ``Subscribed.cursor``) to catch up
    from; without it, the stream starts with the changes after it subscribed.
    ``incomplete`` turns True when a catch-up found changes already forgotten (a
    space keeps 30 days): read the space again then. Closing it (``aclose``)
    unsubscribes. ``async with`` subscribes on entry (so a change committed inside the
    block is yielded) and unsubscribes on exit.
    """

    def __init__(self, client: Transport, router: ChangeRouter, space: str, after: int | None):
        self.client = client
        self.router = router
        self.space = space
        self.cursor = after
        """The newest change yielded (or caught up to)."""
        self.incomplete = False
        self.queue: asyncio.Queue[tuple[str, Change]] = asyncio.Queue()
        """Each notice with the base memory agent that sent it."""
        self.resync = asyncio.Event()
        self._started = False
        self._ready: list[Change] = []

    def __aiter__(self) -> SpaceChanges:
        return self

    async def __aenter__(self) -> SpaceChanges:
        """Subscribed (see ``start``); raises what ``start`` raises."""
        try:
            await self.start()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def __anext__(self) -> Change:
        await self.start()
        while True:
            if self.resync.is_set():
                self.resync.clear()
                await self._subscribe()
                await self._catch_up()
            change = self._ready.pop(0) if self._ready else await self._next_notice()
            if change is None:
                continue
            if self.cursor is not None and change.seq <= self.cursor:
                continue  # already yielded (or caught up)
            self.cursor = change.seq
            return change

    async def _next_notice(self) -> Change | None:
        """The next notice, or None when a resync interrupts the wait. One agent tells
        its changes in their order, two agents of a pool may not (the one that committed
        first may tell later): from a pool, a notice newer than the cursor is read after
        a catch-up from the cursor, or a change another agent committed before it but
        had not told yet would be passed over (and skipped when told, as older than the
        cursor), whichever agent told the last one."""
        waiting = asyncio.ensure_future(self.queue.get())
        resync = asyncio.ensure_future(self.resync.wait())
        try:
            done, _ = await asyncio.wait({waiting, resync}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the follower ends: so do its two waits
            waiting.cancel()
            resync.cancel()
            raise
        resync.cancel()
        if waiting in done:
            _, change = waiting.result()
            pooled = len(self.router.senders) > 1
            if pooled and self.cursor is not None and change.seq > self.cursor:
                await self._catch_up()
                self._ready.append(change)  # yielded in seq order with what came before
                self._ready.sort(key=lambda ready: ready.seq)
                return None
            return change
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        return None

    async def start(self) -> None:
        """Subscribe (and catch up from the cursor given); iterating does it first anyway.
        It returns once the base memory agent has acknowledged the subscription: every
        change committed after that is yielded (one committed before, only from a
        cursor). Call it before the stores to hear, since iteration starts lazily.

        Raises the subscription's typed error (``ItemNotFound`` for a space the sender
        is not a member of).
        """
        if self._started:
            return
        self._started = True
        self.router.streams[self.space].add(self)
        cursor = await self._subscribe()
        if self.cursor is None:
            self.cursor = cursor
        else:
            await self._catch_up()

    async def _subscribe(self) -> int:
        op = Subscribe(space=self.space)
        subscribed = await self.client.request(self.client.jids[BASE_MEMORY], op)
        return 0 if subscribed is None else subscribed.cursor

    async def _catch_up(self) -> None:
        """Every change after the cursor, from the space's journal."""
        after = max(self.cursor or 0, self._ready[-1].seq if self._ready else 0)
        while True:
            op = ChangesSince(space=self.space, after=after, limit=CATCH_UP_PAGE)
            found = await self.client.request(self.client.jids[BASE_MEMORY], op)
            if found is None:
                return
            self.incomplete |= not found.complete
            self._ready.extend(change for change in found.changes if change.seq > after)
            if len(found.changes) < CATCH_UP_PAGE:
                return
            after = found.changes[-1].seq

    async def aclose(self) -> None:
        """Stop the stream and unsubscribe (if no other stream of this client reads it)."""
        streams = self.router.streams.get(self.space, set())
        streams.discard(self)
        if self._started and not streams:
            with contextlib.suppress(Exception):
                op = Unsubscribe(space=self.space)
                await self.client.request(self.client.jids[BASE_MEMORY], op)


async def follow(
    changes: SpaceChanges, callback: Callable[[Change], Awaitable[None] | None]
) -> None:
    """Call ``callback`` with every change of the stream until cancelled."""
    try:
        async for change in changes:
            result = callback(change)
            if asyncio.iscoroutine(result):
                await result
    finally:
        await changes.aclose()

"""Who watches which resource, and telling them when it changes.

MCP has two ways to watch a resource: ``resources/subscribe`` on a session (protocol
versions up to 2025-11-25, which desktop clients speak) and ``subscriptions/listen``
streams (2026-07-28). Both count here, by URI. While a resource of a shared space is
watched, the space is followed: its change notices (``client.changes``, which catches
up after a reconnection) tell of its memories, the interaction memory agent's session
notices of its working sessions, and each tells every watcher of what changed. What no
notice tells of (the account's own memories and sessions) is told when this server's
own tool calls change it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable

from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated

from spade_memory.mcp_bridge.link import MemoryLink
from spade_memory.mcp_bridge.resources import Resource, parse
from spade_memory.mcp_bridge.tools import Done
from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.protocol.memories import DeleteMemory, StoreMemory, UpdateMemory
from spade_memory.protocol.ops import PERSONAL
from spade_memory.protocol.working import SessionChanged

logger = logging.getLogger("spade_memory.mcp")

FOLLOW_WAIT = 10.0
"""Seconds a subscription waits for its space's changes to be followed."""
RETRY_SECONDS = 5.0
"""Seconds between two tries to follow a space's changes."""

Notify = Callable[[str], Awaitable[None]]
"""Sends ``notifications/resources/updated`` for a URI on one MCP session."""


def touched(done: Done) -> list[Resource]:
    """The resources a successful tool call changed that no notice tells of: the
    account's own memories and sessions."""
    op = done.op
    if op.reads_only or (getattr(op, "space", None) or PERSONAL) != PERSONAL:
        return []
    session = getattr(op, "session_id", None)
    if session is not None:
        return [Resource(PERSONAL, session)]
    if isinstance(op, StoreMemory | UpdateMemory | DeleteMemory):
        return [Resource(PERSONAL)]
    return []


class Watchers:
    """The resources watched, by URI, and the space notices that feed them."""

    def __init__(self, link: MemoryLink) -> None:
        self.link = link
        self.bus = InMemorySubscriptionBus()
        """Where ``subscriptions/listen`` streams hear of updates."""
        self.sessions: dict[str, dict[object, Notify]] = {}
        """URI -> the MCP sessions subscribed to it (``resources/subscribe``)."""
        self.listening: Counter[str] = Counter()
        """URI -> the ``subscriptions/listen`` streams asking for it."""
        self.followers: dict[str, Follower] = {}
        """Shared space -> the task following its change notices."""

    async def subscribe(self, uri: str, session: object, notify: Notify) -> None:
        """``session`` watches ``uri`` (again: nothing changes); returns once the changes
        of its space are followed (see ``_follow``)."""
        self.sessions.setdefault(uri, {})[session] = notify
        await self._follow(uri)

    def unsubscribe(self, uri: str, session: object) -> None:
        """``session`` stops watching ``uri``."""
        self.sessions.get(uri, {}).pop(session, None)
        self._unfollow(uri)

    def forget(self, session: object) -> None:
        """A closed session watches nothing any more."""
        for uri in [uri for uri, watching in self.sessions.items() if session in watching]:
            self.unsubscribe(uri, session)

    async def listen(self, uris: list[str]) -> None:
        """A ``subscriptions/listen`` stream asks for ``uris``; returns once their spaces'
        changes are followed."""
        self.listening.update(uris)
        for uri in uris:
            await self._follow(uri)

    def unlisten(self, uris: list[str]) -> None:
        """That stream ended."""
        self.listening.subtract(uris)
        for uri in uris:
            self._unfollow(uri)

    def watched(self, uri: str) -> bool:
        return bool(self.sessions.get(uri)) or self.listening[uri] > 0

    async def changed(self, resources: list[Resource]) -> None:
        """Tell every watcher of ``resources`` that they changed."""
        for resource in resources:
            uri = resource.uri
            for notify in list(self.sessions.get(uri, {}).values()):
                await notify(uri)
            await self.bus.publish(ResourceUpdated(uri=uri))

    async def _follow(self, uri: str) -> None:
        """Follow the changes of the shared space of ``uri`` (if it names one): returns
        once the base memory agent acknowledged the subscription, so a change committed
        after it is heard (or, if it could not be made, after ``FOLLOW_WAIT`` seconds:
        the follower goes on trying)."""
        resource = parse(uri)
        space = None if resource is None else resource.shared_space
        if space is None:
            return
        follower = self.followers.get(space)
        if follower is None:
            follower = self.followers[space] = Follower(space, self.changed)
            follower.task = asyncio.create_task(self._follow_space(follower))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(follower.started.wait(), FOLLOW_WAIT)

    def _unfollow(self, uri: str) -> None:
        """Stop following the space of ``uri`` once no resource of it is watched."""
        resource = parse(uri)
        space = None if resource is None else resource.shared_space
        if space is None or space not in self.followers:
            return
        watched = [*self.sessions, *self.listening]
        if not any(self._space_of(other) == space and self.watched(other) for other in watched):
            self.followers.pop(space).cancel()

    @staticmethod
    def _space_of(uri: str) -> str | None:
        resource = parse(uri)
        return None if resource is None else resource.shared_space

    async def _follow_space(self, follower: Follower) -> None:
        """Every change notice of the space tells the watchers of its recent memories,
        every session notice those of the session; a failed subscription (no login yet,
        not a member) is tried again while the space is watched."""
        space = follower.space
        while True:
            try:
                client = await self.link.client()
                stop = client.on_session_change(space, follower.session_changed)
                try:
                    async with client.changes(space) as changes:
                        follower.started.set()
                        async for _change in changes:
                            await self.changed([Resource(space)])
                finally:
                    stop()
            except MemoryServiceError as error:
                logger.warning("cannot follow the changes of space %s: %s", space, error)
            await asyncio.sleep(RETRY_SECONDS)

    async def close(self) -> None:
        """Stop following every space (each stream unsubscribes)."""
        followers, self.followers = list(self.followers.values()), {}
        for follower in followers:
            follower.cancel()
        for follower in followers:
            if follower.task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await follower.task


class Follower:
    """The task following one shared space's notices."""

    def __init__(self, space: str, changed: Callable[[list[Resource]], Awaitable[None]]) -> None:
        self.space = space
        self.changed = changed
        self.started = asyncio.Event()
        """Set once the subscription was acknowledged."""
        self.task: asyncio.Task[None] | None = None
        self.telling: set[asyncio.Task[None]] = set()
        """Watchers being told of a session's change."""

    def session_changed(self, change: SessionChanged) -> None:
        """A session notice of the space: tell the watchers of that session."""
        told = asyncio.ensure_future(self.changed([Resource(self.space, change.session_id)]))
        self.telling.add(told)
        told.add_done_callback(self.telling.discard)

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

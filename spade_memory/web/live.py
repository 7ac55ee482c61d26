"""A space's page, updated as the space changes: server-sent events fed by the space's
change notices.

One subscription per viewer and space (the base memory agent's, ``on_change``) is
shared by every page of that space the viewer has open, and ends with the last one. An
event says what changed, not the memory: the page then reads its list again through
the same op as a reload would, so no content reaches the page but through the template.

A session keeps ``streams_per_session`` streams at most (each is a connection and a
file); a stream closes when its session ends (logout, expiry), when its subscription
ends, and when the space is no longer the viewer's to read (asked at each keepalive).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from spade_memory.protocol.errors import ItemNotFound, NotAuthorized
from spade_memory.protocol.memories import Change
from spade_memory.protocol.ops import PERSONAL
from spade_memory.web.guard import VIEWERS, viewer_of
from spade_memory.web.viewers import Viewer

routes = web.RouteTableDef()
QUIET = object()
"""What ``_next`` gives when the keepalive time passed with no change."""


@dataclass
class _Feed:
    task: asyncio.Task[None] | None = None
    pages: set[asyncio.Queue[Change]] = field(default_factory=set)
    starting: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while the subscription is made: two pages opened at once make one."""


@contextlib.asynccontextmanager
async def watching(viewer: Viewer, space: str) -> AsyncIterator[asyncio.Queue[Change]]:
    """The changes of ``space`` for one page; raises the subscription's typed failure
    (``ItemNotFound`` for a space the viewer does not read)."""
    feed = viewer.feeds.setdefault(space, _Feed())
    if viewer.ended.is_set():
        raise web.HTTPUnauthorized(text="Log in first.")
    page: asyncio.Queue[Change] = asyncio.Queue(maxsize=256)
    feed.pages.add(page)
    try:
        async with feed.starting:
            if feed.task is None:

                async def tell(change: Change) -> None:
                    for listening in list(feed.pages):
                        with contextlib.suppress(asyncio.QueueFull):
                            listening.put_nowait(change)

                feed.task = await viewer.memory.on_change(space, tell)
        yield page
    finally:
        feed.pages.discard(page)
        if not feed.pages:
            viewer.feeds.pop(space, None)
            if feed.task is not None:  # it unsubscribes as it ends: awaited, not left
                feed.task.cancel()
                await asyncio.gather(feed.task, return_exceptions=True)


def streams_of(viewer: Viewer) -> int:
    """The live streams the viewer has open."""
    return sum(len(feed.pages) for feed in viewer.feeds.values())


@routes.get("/spaces/{space}/events")
async def space_events(request: web.Request) -> web.StreamResponse:
    """The space's changes as server-sent events (``change``: kind, memory id, by whom),
    until the session ends or the space is no longer the viewer's to read."""
    space, viewer = request.match_info["space"], viewer_of(request)
    deployment = request.app[VIEWERS].deployment
    if streams_of(viewer) >= deployment.streams_per_session:
        raise web.HTTPTooManyRequests(
            text=f"This session has {deployment.streams_per_session} live pages open, the"
            " most it may: close one first."
        )
    async with watching(viewer, space) as changes:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-store"})  # fmt: skip
        await response.prepare(request)
        await response.write(b": listening\n\n")
        feed = viewer.feeds[space]
        while True:
            change = await _next(changes, viewer, feed.task, deployment.keepalive)
            if change is None:
                break
            if change is QUIET:
                if not await _still_readable(viewer, space):
                    break
                await response.write(b": still here\n\n")
                continue
            assert isinstance(change, Change)
            data = json.dumps({"kind": change.kind, "id": change.memory_id, "by": change.owner})
            await response.write(f"event: change\ndata: {data}\n\n".encode())
        await response.write(b"event: end\ndata: {}\n\n")
        return response


async def _next(
    changes: asyncio.Queue[Change], viewer: Viewer, task: asyncio.Task[None] | None,
    keepalive: float,
) -> Change | object | None:  # fmt: skip
    """The next change, ``QUIET`` after ``keepalive`` seconds without one, or None once
    the session or the subscription has ended."""
    getting = asyncio.ensure_future(changes.get())
    ending = asyncio.ensure_future(viewer.ended.wait())
    waited: set[asyncio.Future[Any]] = {getting, ending}
    if task is not None:
        waited.add(task)
    try:
        done, _ = await asyncio.wait(waited, timeout=keepalive, return_when="FIRST_COMPLETED")
    finally:
        getting.cancel()
        ending.cancel()
    if getting in done and not getting.cancelled():
        return getting.result()
    return QUIET if not done else None


async def _still_readable(viewer: Viewer, space: str) -> bool:
    """Whether the viewer may still read ``space`` (a revoked grant ends its stream)."""
    if space == PERSONAL:
        return True
    try:
        await viewer.memory.space_info(space)
    except (ItemNotFound, NotAuthorized):
        return False
    return True

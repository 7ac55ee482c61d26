"""A space's page, updated as the space changes: server-sent events fed by the space's
change notices.

One subscription per viewer and space (the base memory agent's, ``on_change``) is
shared by every page of that space the viewer has open, and ends with the last one. An
event says what changed, not the memory: the page then reads its list again through
the same op as a reload would, so no content reaches the page but through the template.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from aiohttp import web

from spade_memory.protocol.memories import Change
from spade_memory.web.guard import viewer_of
from spade_memory.web.viewers import Viewer

KEEPALIVE = 20.0
"""Seconds between comments on a quiet stream, so that proxies keep it open."""
routes = web.RouteTableDef()


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


@routes.get("/spaces/{space}/events")
async def space_events(request: web.Request) -> web.StreamResponse:
    """The space's changes as server-sent events (``change``: kind, memory id, by whom)."""
    space = request.match_info["space"]
    async with watching(viewer_of(request), space) as changes:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-store"})  # fmt: skip
        await response.prepare(request)
        await response.write(b": listening\n\n")
        while True:
            try:
                change = await asyncio.wait_for(changes.get(), KEEPALIVE)
            except TimeoutError:
                await response.write(b": still here\n\n")
                continue
            data = json.dumps({"kind": change.kind, "id": change.memory_id, "by": change.owner})
            await response.write(f"event: change\ndata: {data}\n\n".encode())

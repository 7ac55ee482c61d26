"""A memory agent that can no longer hear itself reconnects.

A connection can die without TCP saying so: a server task that routes what
one client sends can stop (pyjabber's did, on one bad address), or a middle
box can stall. The agent then hears nothing and answers nothing, and SPADE's
keepalive (a ping every 55 s, 30 s to answer) is slow to notice and says
nothing. So every ``INTERVAL`` seconds a memory agent pings its own full JID
through the server (XEP-0199): the ping goes out and comes back the way a
request and its reply do. One unanswered for ``TIMEOUT`` seconds is logged and
the connection is dropped, so the ``Reconnector`` connects again: a dead path
is found and left within ``INTERVAL + TIMEOUT`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from slixmpp import ClientXMPP
from slixmpp.exceptions import IqError, IqTimeout

logger = logging.getLogger("spade_memory.xmpp.reconnect")

INTERVAL = 10.0
"""Seconds between two pings."""
TIMEOUT = 10.0
"""Seconds a ping may take to come back."""


class Liveness:
    """Pings ``client``'s own full JID while ``wanted()``; drops the connection when a
    ping does not come back."""

    def __init__(self, client: ClientXMPP, wanted: Callable[[], bool]) -> None:
        self.client = client
        self.wanted = wanted
        self.dropped = 0
        """Connections dropped because a ping did not come back."""
        self._task: asyncio.Task[None] | None = asyncio.create_task(
            self._run(), name=f"liveness {client.boundjid.bare}"
        )

    async def _run(self) -> None:
        while self.wanted():
            await asyncio.sleep(INTERVAL)
            client = self.client
            if (
                not self.wanted()
                or not client.is_connected()
                or not client.session_bind_event.is_set()
            ):
                continue  # the reconnector is on it, or the agent is stopping
            try:
                await client["xep_0199"].ping(client.boundjid, timeout=TIMEOUT)
            except IqError:
                pass  # an answer came back: the path works
            except IqTimeout:
                self.dropped += 1
                logger.warning(
                    "%s did not hear its own ping back in %.0f s; reconnecting",
                    client.boundjid.bare, TIMEOUT,
                )  # fmt: skip
                client.abort()

    def stop(self) -> None:
        """Stop pinging."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def stopped(self) -> None:
        """Stop pinging and wait for the task to end."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

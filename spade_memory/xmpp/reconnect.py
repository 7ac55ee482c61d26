"""Reconnect a SPADE agent to its XMPP server after the connection drops.

SPADE 4 does not: after a server restart an agent stays alive, disconnected
and silent forever. slixmpp's own retry waits 1, 3, 9, 21 … up to 300 s
between attempts, far too slow for memory that other agents wait on. So one
``Reconnector`` per connection listens for ``disconnected`` and, while any
behaviour it serves is still running (SPADE kills an agent's behaviours
before it disconnects on purpose), connects again with capped exponential
backoff, logging each step. Callbacks then run on the new session: the
memory agents announce presence again, clients resend requests in flight.

The same object keeps one bad stanza from dropping the connection
(``stanza_guard``) and, for a memory agent, notices a connection that went
silent without dropping (``liveness``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from spade.agent import Agent
from spade.behaviour import CyclicBehaviour

from spade_memory.xmpp import stanza_guard
from spade_memory.xmpp.liveness import Liveness

logger = logging.getLogger("spade_memory.xmpp.reconnect")

OnReconnected = Callable[[], Awaitable[None] | None]

_reconnectors: weakref.WeakKeyDictionary[Any, Reconnector] = weakref.WeakKeyDictionary()


class Reconnector:
    """Keeps one agent's current XMPP client connected while its behaviours run."""

    first_delay = 0.25
    """Seconds before the first attempt; doubled after each failure."""
    max_delay = 2.0
    """Longest wait between two attempts, so a restarted server is found quickly."""
    attempt_timeout = 5.0
    """Seconds one attempt may take to reach a bound session."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.client = agent.client
        self.behaviours: list[CyclicBehaviour] = []
        self.callbacks: list[OnReconnected] = []
        self.reconnections = 0
        self.liveness: Liveness | None = None
        """Set by ``probe``: pings of the agent's own JID."""
        self._task: asyncio.Task[None] | None = None
        self.client.add_event_handler("disconnected", self._on_disconnected)
        stanza_guard.install(self.client)

    def probe(self) -> None:
        """Ping the agent's own JID on a timer, and reconnect when a ping does not come
        back (see ``liveness``)."""
        if self.liveness is None:
            self.liveness = Liveness(self.client, self.wanted)

    def wanted(self) -> bool:
        """Reconnect only while some behaviour it serves is still running."""
        return any(not behaviour.is_killed() for behaviour in self.behaviours)

    def _on_disconnected(self, reason: object) -> None:
        if not self.wanted() and self.liveness is not None:
            self.liveness.stop()  # the agent is stopping
        if self._task is not None or not self.wanted():
            return
        logger.warning("%s lost its XMPP connection (%s); reconnecting", self.agent.jid, reason)
        self._task = asyncio.create_task(self._reconnect(), name=f"reconnect {self.agent.jid}")

    async def _reconnect(self) -> None:
        lost_at, delay, attempts = time.monotonic(), self.first_delay, 0
        try:
            while self.wanted():
                await asyncio.sleep(delay * random.uniform(0.8, 1.2))
                if not self.wanted():
                    return
                attempts += 1
                if await self._attempt():
                    break
                delay = min(delay * 2, self.max_delay)
                logger.info("%s: attempt %d failed; next in %.1fs", self.agent.jid, attempts, delay)
            else:
                return
            self.reconnections += 1
            logger.warning(
                "%s reconnected after %.1fs (%d attempts)",
                self.agent.jid, time.monotonic() - lost_at, attempts,
            )  # fmt: skip
        finally:
            self._task = None
        for callback in list(self.callbacks):
            try:
                result = callback()
                if result is not None:
                    await result
            except Exception:
                logger.exception("%s: a reconnection callback failed", self.agent.jid)

    async def _attempt(self) -> bool:
        """One connection attempt: True once a session is bound."""
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[bool] = loop.create_future()

        def settle(value: bool) -> Callable[[object], None]:
            def handler(_event: object) -> None:
                if not outcome.done():
                    outcome.set_result(value)

            return handler

        handlers = {
            "session_start": settle(True),
            "connection_failed": settle(False),
            "disconnected": settle(False),
            "failed_all_auth": settle(False),
        }
        for event, handler in handlers.items():
            self.client.add_event_handler(event, handler)
        try:
            self.client.connect(host=self.agent.jid.host, port=self.agent.xmpp_port)
            ok = await asyncio.wait_for(outcome, self.attempt_timeout)
        except asyncio.TimeoutError:
            ok = False
        finally:
            for event, handler in handlers.items():
                self.client.del_event_handler(event, handler)
        if not ok:
            # Stop slixmpp's own rescheduled attempts; the next one is ours.
            self.client.cancel_connection_attempt()
            with contextlib.suppress(Exception):
                self.client.abort()
        return ok


def keep_connected(
    agent: Agent,
    behaviour: CyclicBehaviour,
    on_reconnected: OnReconnected | None = None,
    probe: bool = False,
) -> Reconnector:
    """Reconnect ``agent`` while ``behaviour`` runs; one reconnector per connection.
    ``probe``: also ping the agent's own JID on a timer (see ``liveness``).

    Returns the connection's ``Reconnector``."""
    reconnector = _reconnectors.get(agent.client)
    if reconnector is None:
        reconnector = _reconnectors[agent.client] = Reconnector(agent)
    if behaviour not in reconnector.behaviours:
        reconnector.behaviours.append(behaviour)
    if on_reconnected is not None:
        reconnector.callbacks.append(on_reconnected)
    if probe:
        reconnector.probe()
    return reconnector


def reconnector_of(agent: Agent) -> Reconnector | None:
    """The reconnector of ``agent``'s current connection, if one was installed."""
    return _reconnectors.get(agent.client)

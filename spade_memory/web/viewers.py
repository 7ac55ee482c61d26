"""Who is looking: one logged-in XMPP account per browser session.

A login is a real XMPP login as that account (``client.login.log_in`` without
registering), so the XMPP server checks the password and nothing here stores one. The
browser holds only a random session key in a cookie; the session expires after
``idle`` without a page and after ``lifetime`` in all, and its account then logs out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from slixmpp.jid import JID, InvalidJID

from spade_memory.client.login import LoginAgent, log_in
from spade_memory.client.memory_client import MemoryClient
from spade_memory.metrics.figures import WEB_LOGINS
from spade_memory.web.throttle import LoginThrottle
from spade_memory.xmpp.connect_errors import AgentStartError, WrongPassword
from spade_memory.xmpp.lifecycle import stop_agent

logger = logging.getLogger("spade_memory.web")
MAX_JID = 3071
"""The longest JID there is (RFC 7622: three parts of 1023 bytes)."""


class LoginRefused(Exception):
    """A login that did not happen; its text is what the login page shows
    (``retry_after``: seconds to wait before the next attempt, when it was slowed)."""

    def __init__(self, text: str, retry_after: float | None = None) -> None:
        super().__init__(text)
        self.retry_after = retry_after


@dataclass
class Viewer:
    """A browser session: its account, its client and its CSRF token."""

    jid: str
    agent: LoginAgent
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    started: float = field(default_factory=time.monotonic)
    seen: float = field(default_factory=time.monotonic)
    feeds: dict[str, Any] = field(default_factory=dict)
    """The change feeds of the spaces it has open (``live``), by space."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the session has ended: its live streams close."""

    @property
    def memory(self) -> MemoryClient:
        """The account's client: every page is made through it."""
        return self.agent.memory


@dataclass(frozen=True)
class Deployment:
    """Where viewers log in: the deployment's XMPP domain and client port."""

    domain: str = "localhost"
    port: int = 5222
    timeout: float = 5.0
    idle: float = 30 * 60.0
    """Seconds a session lives without a page."""
    lifetime: float = 12 * 3600.0
    """Seconds a session lives in all."""
    sessions_per_account: int = 8
    """Sessions one account keeps; a new login ends its oldest."""
    max_sessions: int = 256
    """Sessions of every account together; a login beyond is refused until one ends."""
    streams_per_session: int = 8
    """Live streams (space pages open) of one session; one more is answered 429."""
    free_failures: int = 5
    """Failed logins of an account, or from an address, before the next must wait."""
    first_wait: float = 1.0
    """Seconds the first slowed login waits; each failure more doubles it (to 15 min)."""
    keepalive: float = 20.0
    """Seconds between a quiet stream's comments; each also checks the space is still
    the viewer's to read."""


class Viewers:
    """The logged-in sessions, by their key (the cookie's value)."""

    def __init__(self, deployment: Deployment, throttle: LoginThrottle | None = None) -> None:
        self.deployment = deployment
        self.throttle = throttle or LoginThrottle(deployment.free_failures, deployment.first_wait)
        self._sessions: dict[str, Viewer] = {}

    async def log_in(self, jid: str, password: str, address: str = "") -> tuple[str, Viewer]:
        """Log ``jid`` in to the deployment, for a browser at ``address``.

        Returns the new session's key and its viewer; raises ``LoginRefused`` saying why
        (another domain, a refused password, no XMPP server, too many failed attempts or
        sessions).
        """
        jid = self._account(jid)
        if not password:
            raise LoginRefused("give the account's password")
        where = self.deployment
        if len(self._sessions) >= where.max_sessions and not await self.sweep():
            raise LoginRefused(
                f"the web view serves {where.max_sessions} sessions at most; try again later"
            )
        wait = self.throttle.begin(jid, address)
        if wait > 0:
            WEB_LOGINS.labels("slowed").inc()
            raise LoginRefused(
                f"too many failed logins of this account or from this address: try again in"
                f" {wait:.0f} s", retry_after=wait,
            )  # fmt: skip
        try:
            agent = await log_in(
                jid, password, port=where.port, timeout=where.timeout, register=False
            )
        except WrongPassword:
            WEB_LOGINS.labels("refused").inc()
            raise LoginRefused("the XMPP server refused this account and password") from None
        except AgentStartError:
            logger.warning("a login of %s found no XMPP server at port %d", jid, where.port)
            raise LoginRefused("the deployment's XMPP server does not answer; try again") from None
        self.throttle.succeeded(jid, address)
        WEB_LOGINS.labels("ok").inc()
        key = secrets.token_urlsafe(32)
        viewer = Viewer(str(agent.jid.bare), agent)
        await self._make_room_for(viewer.jid)
        self._sessions[key] = viewer
        logger.info("%s logged in to the web view", jid)
        return key, viewer

    async def _make_room_for(self, jid: str) -> None:
        """End the oldest sessions of ``jid`` until a new one is within its bound."""
        mine = sorted(
            (viewer.started, key) for key, viewer in self._sessions.items() if viewer.jid == jid
        )
        for _started, key in mine[: max(0, len(mine) - self.deployment.sessions_per_account + 1)]:
            await self.log_out(key)

    def _account(self, given: str) -> str:
        """The bare JID of ``given`` (a name alone is of the deployment's domain); raises
        ``LoginRefused`` for another domain: the view logs in to this deployment only."""
        given = given.strip()
        if not given or len(given) > MAX_JID or any(c in given for c in "/ \t\r\n\0"):
            example = f"alice@{self.deployment.domain}"
            raise LoginRefused(f"give an account of the deployment, such as {example}")
        local, at, domain = given.rpartition("@")
        if not at:
            local, domain = given, self.deployment.domain
        if not local or domain.lower() != self.deployment.domain.lower():
            raise LoginRefused(f"only accounts of {self.deployment.domain} log in here")
        try:
            return str(JID(f"{local}@{self.deployment.domain}").bare)
        except InvalidJID:
            example = f"alice@{self.deployment.domain}"
            raise LoginRefused(f"give an account of the deployment, such as {example}") from None

    def find(self, key: str | None) -> Viewer | None:
        """The session of ``key`` if it exists and has not expired (its use renews its
        idle time); None otherwise."""
        viewer = self._sessions.get(key or "")
        if viewer is None:
            return None
        now = time.monotonic()
        if self._expired(viewer, now):
            return None
        viewer.seen = now
        return viewer

    def _expired(self, viewer: Viewer, now: float) -> bool:
        return (now - viewer.seen > self.deployment.idle
                or now - viewer.started > self.deployment.lifetime)  # fmt: skip

    async def log_out(self, key: str | None) -> None:
        """End the session of ``key`` (its account logs out); nothing if there is none."""
        viewer = self._sessions.pop(key or "", None)
        if viewer is not None:
            await _stop(viewer)

    async def sweep(self) -> int:
        """Log out every expired session; returns how many."""
        now = time.monotonic()
        expired = [key for key, viewer in self._sessions.items() if self._expired(viewer, now)]
        for key in expired:
            await self.log_out(key)
        return len(expired)

    async def close(self) -> None:
        """Log every session out (bounded: a stop never hangs)."""
        viewers, self._sessions = list(self._sessions.values()), {}
        await asyncio.gather(*(_stop(viewer) for viewer in viewers))


async def _stop(viewer: Viewer) -> None:
    """End the viewer's live feeds (each unsubscribes while its account is still logged
    in), then log it out: each bounded, so a stop never hangs."""
    viewer.ended.set()
    feeds = [feed.task for feed in viewer.feeds.values() if feed.task is not None]
    viewer.feeds.clear()
    for task in feeds:
        task.cancel()
    with contextlib.suppress(Exception, asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.gather(*feeds, return_exceptions=True), 5.0)
    with contextlib.suppress(Exception, asyncio.TimeoutError):
        await asyncio.wait_for(stop_agent(viewer.agent), 5.0)

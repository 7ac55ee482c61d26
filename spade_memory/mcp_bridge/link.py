"""The MCP server's one XMPP account in the deployment, logged in like any agent.

Every tool call and resource read goes through this account's ``MemoryClient``, so the
memory agents see one authenticated sender: its personal memories, the spaces it was
granted, its quotas. The login is made when first needed and made again after a
failure (the memory service not running yet, a password mended meanwhile); once
logged in, the client's own reconnection keeps it (``xmpp.reconnect``). A call that
finds no login says why in one sentence (``MemoryUnreachable``), and the MCP server
keeps serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from spade_memory.client.login import LoginAgent, log_in
from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.errors import ServiceUnavailable
from spade_memory.tools import Defaults
from spade_memory.xmpp.connect_errors import (
    ConnectionRefused,
    HostUnreachable,
    TlsFailure,
    UnknownHost,
    WrongDomain,
)
from spade_memory.xmpp.lifecycle import AgentStartError, WrongPassword, stop_agent

logger = logging.getLogger("spade_memory.mcp")
NAMED_FAILURES = (ConnectionRefused, HostUnreachable, TlsFailure, UnknownHost, WrongDomain)
"""Login failures whose sentence already says what to do."""


class MemoryUnreachable(ServiceUnavailable):
    """The MCP server is not logged in to the deployment (its text says why and what to
    do); tool calls answer it as a ``service-unavailable`` failure."""


@dataclass(frozen=True)
class Account:
    """Who the MCP server is in the deployment, and where that is."""

    jid: str
    password: str
    port: int = 5222
    timeout: float = 5.0
    """Seconds to wait for a login, and for a memory agent's reply (a request is sent
    twice, under one request id, before it times out)."""
    spaces: tuple[str, ...] = ()
    """Shared spaces a search or a list draws on beside the account's own."""
    default_space: str | None = None
    """Where a store goes when the model names no space (None: the account's own)."""


class MemoryLink:
    """The logged-in account (``client()``), made when first needed."""

    def __init__(self, account: Account) -> None:
        self.account = account
        self._agent: LoginAgent | None = None
        self._lock = asyncio.Lock()

    def defaults(self, conversation_id: str | None = None) -> Defaults:
        """What each tool call is given besides the model's arguments."""
        return Defaults(self.account.spaces, self.account.default_space, conversation_id)

    async def client(self) -> MemoryClient:
        """The account's client, logging in first if it is not yet.

        Returns the client; raises ``MemoryUnreachable`` naming why the login failed
        (nothing listens, a refused password, …) and the next step.
        """
        async with self._lock:
            if self._agent is None:
                self._agent = await self._log_in()
            return self._agent.memory

    async def _log_in(self) -> LoginAgent:
        account = self.account
        try:
            agent = await log_in(
                account.jid, account.password, port=account.port, timeout=account.timeout
            )
        except WrongPassword as error:
            raise MemoryUnreachable(
                f"{error}; or give its password (SPADE_MEMORY_AGENT_PASSWORD or --password-file)"
            ) from None
        except NAMED_FAILURES as error:  # each names its cause and the next step
            raise MemoryUnreachable(f"cannot reach the memory service: {error}") from None
        except AgentStartError as error:
            raise MemoryUnreachable(
                f"cannot reach the memory service: {error}; is `spade-memory run` running"
                f" (port {account.port})?"
            ) from None
        logger.info("logged in to the deployment as %s", account.jid)
        return agent

    async def close(self) -> None:
        """Log out (bounded: a stop never hangs)."""
        agent, self._agent = self._agent, None
        if agent is not None:
            with contextlib.suppress(Exception, asyncio.TimeoutError):
                await asyncio.wait_for(stop_agent(agent), 5.0)

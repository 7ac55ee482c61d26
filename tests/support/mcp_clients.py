"""The MCP SDK's own client, against ``spade-memory mcp`` run in its own process.

``over_stdio`` starts the server as a desktop client would (a child speaking on its
stdin and stdout); ``over_http`` connects to one serving streamable HTTP. ``mode``
chooses the protocol era: ``legacy`` (the handshake, up to 2025-11-25, which desktop
clients speak: ``resources/subscribe``) or ``auto`` (2026-07-28 with a 2.x server:
``subscriptions/listen``). ``Updates`` hears the server's resource-updated notices.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Literal

import anyio
import httpx2
from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client

from spade_memory.testing import ChildProcess, free_port

Mode = Literal["legacy", "auto"]
CLIENT = types.Implementation(name="test-assistant", version="1.0")
WAIT = 60.0
"""Seconds a test waits for what it expects: a loaded machine is slow, not wrong."""


class Updates:
    """The message handler of a client: every ``notifications/resources/updated``."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        message = getattr(message, "root", message)
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self._arrived.set()

    async def wait_for(self, uri: str, timeout: float = WAIT) -> None:
        """Return once ``uri`` was updated; raises ``TimeoutError`` after ``timeout``."""
        with anyio.fail_after(timeout):
            while uri not in self.uris:
                self._arrived = anyio.Event()
                await self._arrived.wait()


PASSWORD = "mcp-http-secret"
TOKEN = "a-long-random-token"


def server_command(port: int, jid: str, *options: str) -> list[str]:
    return [sys.executable, "-m", "spade_memory", "mcp", "--jid", jid, "--port", str(port),
            *options]  # fmt: skip


@asynccontextmanager
async def over_stdio(
    port: int, jid: str, password: str, *options: str, mode: Mode = "legacy",
    updates: Updates | None = None,
) -> AsyncIterator[Client]:  # fmt: skip
    """A client of ``spade-memory mcp`` (its own process, on stdio) logged in as ``jid``."""
    command = server_command(port, jid, *options)
    params = StdioServerParameters(
        command=command[0], args=command[1:],
        env={**os.environ, "SPADE_MEMORY_AGENT_PASSWORD": password},
    )  # fmt: skip
    client = Client(
        params, mode=mode, client_info=CLIENT, message_handler=updates, cache=None,
        read_timeout_seconds=WAIT * 2,
    )  # fmt: skip
    with _default_loop_policy():  # while the child is spawned
        await client.__aenter__()
    try:
        yield client
    finally:
        await client.__aexit__(*sys.exc_info())


@contextmanager
def _default_loop_policy() -> Iterator[None]:
    """asyncio's default loop policy, for a while: SPADE sets uvloop's under the running
    asyncio loop, and asyncio's subprocesses (the SDK's stdio client) then ask that
    policy for a child watcher, which it does not have."""
    policy = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
    try:
        yield
    finally:
        asyncio.set_event_loop_policy(policy)


@asynccontextmanager
async def over_http(
    url: str, token: str | None, mode: Mode = "legacy", updates: Updates | None = None
) -> AsyncIterator[Client]:
    """A client of a ``spade-memory mcp --http`` at ``url``, sending ``token``."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx2.Timeout(30, read=300)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        Client(
            streamable_http_client(url, http_client=http), mode=mode, client_info=CLIENT,
            message_handler=updates, cache=None, read_timeout_seconds=WAIT * 2,
        ) as client,
    ):  # fmt: skip
        yield client


async def subscribe(client: Client, uri: str) -> None:
    """``resources/subscribe`` (the SDK's own call for it warns: it is gone in 2026-07-28)."""
    request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
    await client.session.send_request(request, types.EmptyResult)


def said(result: types.CallToolResult) -> str:
    """The text a tool call answered."""
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


async def call(client: Client, name: str, **arguments: Any) -> types.CallToolResult:
    return await client.call_tool(name, arguments)


class McpHttpProcess(ChildProcess):
    """``spade-memory mcp --http HOST:PORT`` as ``jid``, with a bearer token."""

    def __init__(
        self, service_port: int, jid: str, *options: str, token: str | None = TOKEN,
        host: str = "127.0.0.1",
    ) -> None:  # fmt: skip
        self.jid = jid
        self.host = host
        self.http_port = free_port()
        env = {"SPADE_MEMORY_AGENT_PASSWORD": PASSWORD}
        if token is not None:
            env["SPADE_MEMORY_MCP_TOKEN"] = token
        command = server_command(service_port, jid, "--http", f"{host}:{self.http_port}",
                                 *options)  # fmt: skip
        super().__init__(command, "spade-memory mcp: serving", env)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.http_port}/mcp"

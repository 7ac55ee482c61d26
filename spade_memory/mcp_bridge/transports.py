"""Running the MCP server: over stdio (a desktop client or a coding agent starts it), or
over streamable HTTP (one server for many clients), behind a bearer token.

Neither the SDK's stdio server nor uvicorn stops well on a signal by itself: the stdio
server's reader thread stays blocked until its input closes, and uvicorn raises the
signal again once it has stopped. So SIGINT and SIGTERM are taken here: the account
logs out, and the caller is told to end the process (``stop_now``).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import signal
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import uvicorn
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

from spade_memory.http.address import HttpAddress, allowed_hosts, bound_socket
from spade_memory.mcp_bridge.server import MemoryBridge

logger = logging.getLogger("spade_memory.mcp")
MCP_PATH = "/mcp"
"""Where the streamable HTTP endpoint answers."""

ASGIApp = Callable[[Any, Any, Any], Any]

MAX_SESSIONS = 32
"""Open HTTP sessions at most (the SDK's own default is 10,000); a client asking for
one more is answered 503 until one ends or has been idle for ``SESSION_IDLE_SECONDS``."""
SESSION_IDLE_SECONDS = 30 * 60


async def _until_signal(on_signal: Callable[[], Any]) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for received in signals:
            logger.info("%s: stopping", signal.Signals(received).name)
            await on_signal()
            return


async def serve_stdio(bridge: MemoryBridge, stop_now: Callable[[], None]) -> None:
    """Serve on stdin and stdout until the client closes stdin (then return) or a signal
    comes (then log out and call ``stop_now``, which must end the process: the reader
    thread of stdin cannot be interrupted)."""

    async def signalled() -> None:
        await bridge.close()
        stop_now()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_until_signal, signalled)
        async with stdio_server() as (read, write):
            await bridge.server.run(read, write, bridge.server.create_initialization_options())
        tasks.cancel_scope.cancel()
    await bridge.close()


class BearerToken:
    """An ASGI wrapper refusing every HTTP request without ``Authorization: Bearer
    <token>``: 401 with a JSON-RPC error that MCP clients show."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            body = json.dumps({
                "jsonrpc": "2.0", "id": None,
                "error": {"code": -32600, "message": "Unauthorized: a bearer token is required"},
            }).encode()  # fmt: skip
            await send({
                "type": "http.response.start", "status": 401,
                "headers": [(b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="spade-memory"')],
            })  # fmt: skip
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Any) -> bool:
        given = dict(scope.get("headers", ())).get(b"authorization", b"")
        scheme, _, credentials = given.strip().partition(b" ")
        # the scheme is case-insensitive (RFC 9110, section 11.1); the token is not
        return scheme.lower() == b"bearer" and hmac.compare_digest(
            credentials.strip(), self.expected
        )


def transport_security(
    address: HttpAddress, names: tuple[str, ...] = ()
) -> TransportSecuritySettings:
    """The SDK's check of Host and Origin, on for every address (the SDK turns it on for
    127.0.0.1, localhost and ::1 only): a page in a browser that made its DNS name point
    here is refused (421 for its Host, 403 for its Origin)."""
    hosts = allowed_hosts(address, names)
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling (it raises the signal again once stopped,
    which ended the process with a traceback): ``serve_http`` stops it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_http(
    bridge: MemoryBridge,
    address: HttpAddress,
    token: str | None,
    ready: Callable[[], None] = lambda: None,
    *,
    hosts: tuple[str, ...] = (),
    max_sessions: int = MAX_SESSIONS,
) -> None:
    """Serve streamable HTTP at ``address`` until SIGINT or SIGTERM, then log out.

    ``token``: the bearer token every request must carry (None: none asked, which only
    127.0.0.1 and ::1 may do; the caller checks). ``hosts``: the names clients reach it
    by besides the address (``allowed_hosts``); ``max_sessions``: open sessions at most.
    ``ready`` is called once it listens. Raises ``OSError`` when the address cannot be
    bound (before anything is served).
    """
    listening = bound_socket(address)
    app: ASGIApp = bridge.server.streamable_http_app(
        streamable_http_path=MCP_PATH, host=address.host,
        transport_security=transport_security(address, hosts),
        max_sessions=max_sessions, session_idle_timeout=SESSION_IDLE_SECONDS,
    )  # fmt: skip
    if token is not None:
        app = BearerToken(app, token)
    config = uvicorn.Config(
        app, host=address.host, port=address.port, log_level="warning", lifespan="on"
    )
    server = _QuietServer(config)

    async def stop() -> None:
        server.should_exit = True

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_until_signal, stop)
        serving = anyio.Event()

        async def serve() -> None:
            try:
                await server.serve(sockets=[listening])
            finally:
                serving.set()
                tasks.cancel_scope.cancel()

        tasks.start_soon(serve)
        while not server.started and not serving.is_set():
            await anyio.sleep(0.05)
        if server.started:
            ready()
    listening.close()
    await bridge.close()

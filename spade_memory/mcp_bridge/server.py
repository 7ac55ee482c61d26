"""The MCP server: the memory tools, the resources and their updates, on one account.

Built on the MCP SDK's low-level ``Server``, which takes each tool's JSON Schema as
given, so the schemas are exactly the tool specs' (``spade_memory.tools``). Handlers
only translate: a tool call or a resource read becomes an op sent over XMPP by the
account's client (``link``), whose reply or typed failure is translated back.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError

from spade_memory.mcp_bridge import resources
from spade_memory.mcp_bridge.link import MemoryLink
from spade_memory.mcp_bridge.tools import TOOLS, Done, call_tool, input_schema
from spade_memory.mcp_bridge.watch import Watchers, touched
from spade_memory.protocol.errors import Condition, MemoryServiceError
from spade_memory.protocol.version import package_version

logger = logging.getLogger("spade_memory.mcp")

Context = ServerRequestContext[Any, Any]
INSTRUCTIONS = (
    "Long-term memory shared with a team of agents (SPADE's memory agents, over XMPP). "
    "Search it before answering from what you think you know; store what will matter "
    "later (facts, preferences, patterns, capabilities); correct or forget what turned "
    "out wrong. A memory in a shared space is seen by its members."
)


class MemoryBridge:
    """The MCP server of one account: ``server`` to run on a transport, ``close`` after."""

    def __init__(self, link: MemoryLink, conversation_id: str | None = None) -> None:
        self.link = link
        self.conversation_id = conversation_id
        """The conversation ``remember_interaction_info`` notes go to (None: one per MCP
        client, named after it)."""
        self.watchers = Watchers(link)
        self.listen = ListenHandler(self.watchers.bus)
        self.server: Server[Any] = Server(
            "spade-memory",
            version=package_version(),
            instructions=INSTRUCTIONS,
            lifespan=self._lifespan,
            get_tool_input_schema=input_schema,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_templates,
            on_read_resource=self.read_resource,
            on_subscribe_resource=self.subscribe,
            on_unsubscribe_resource=self.unsubscribe,
            on_subscriptions_listen=self.listen_to,
        )

    @asynccontextmanager
    async def _lifespan(self, _server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            self.listen.close()
            await self.watchers.close()

    async def close(self) -> None:
        """Stop following spaces and log out (bounded)."""
        await self.watchers.close()
        await self.link.close()

    # -- tools ----------------------------------------------------------------------

    async def list_tools(
        self, _ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        _first_page_only(params)
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(
        self, ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        finished: list[Done] = []
        result = await call_tool(
            self.link, params.name, dict(params.arguments or {}), self._conversation(ctx),
            finished.append,
        )  # fmt: skip
        for done in finished:
            await self.watchers.changed(touched(done))
        return result

    def _conversation(self, ctx: Context) -> str:
        if self.conversation_id is not None:
            return self.conversation_id
        client = ctx.session.client_params
        name = client.client_info.name if client is not None else None
        return f"mcp-{name}" if name else "mcp"

    # -- resources ------------------------------------------------------------------

    async def list_resources(
        self, _ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        _first_page_only(params)
        with _as_mcp_error():
            found = await resources.listed(await self.link.client())
        return types.ListResourcesResult(resources=found)

    async def list_templates(
        self, _ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        _first_page_only(params)
        return types.ListResourceTemplatesResult(resource_templates=resources.TEMPLATES)

    async def read_resource(
        self, _ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        text = await self._read(uri)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=resources.JSON, text=text)]
        )

    async def _read(self, uri: str) -> str:
        """The resource's text; raises ``MCPError`` for a URI of no resource, and with
        the memory service's failure (an unreadable space: item-not-found)."""
        resource = resources.parse(uri)
        if resource is None:
            detail = _detail(Condition.ITEM_NOT_FOUND, "not a resource of this server")
            raise MCPError(RESOURCE_NOT_FOUND, f"no such resource: {uri}", detail)
        with _as_mcp_error(not_found=RESOURCE_NOT_FOUND):
            return await resources.read(await self.link.client(), resource)

    async def subscribe(
        self, ctx: Context, params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """Watch a resource the account may read (read once first: the same check)."""
        uri = str(params.uri)
        await self._read(uri)
        connection = _connection(ctx)
        first = not any(connection in watching for watching in self.watchers.sessions.values())
        await self.watchers.subscribe(uri, connection, ctx.session.send_resource_updated)
        if first:  # a closed connection watches nothing any more
            connection.exit_stack.callback(self.watchers.forget, connection)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: Context, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.watchers.unsubscribe(str(params.uri), _connection(ctx))
        return types.EmptyResult()

    async def listen_to(
        self, ctx: Context, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """A ``subscriptions/listen`` stream (protocol 2026-07-28): served by the SDK's
        handler, while the spaces of the resources it asks for are followed."""
        uris = [str(uri) for uri in params.notifications.resource_subscriptions or ()]
        await self.watchers.listen(uris)
        try:
            return await self.listen(ctx, params)
        finally:
            self.watchers.unlisten(uris)


RESOURCE_NOT_FOUND = -32002
"""The JSON-RPC code the MCP specification names for a resource that is not there (the
SDK defines none)."""


def _first_page_only(params: types.PaginatedRequestParams | None) -> None:
    """Every list fits one page and no answer gives a cursor, so any cursor is one this
    server never gave: invalid params (-32602), as the specification says, rather than
    the first page again. Raises ``MCPError``."""
    if params is not None and params.cursor is not None:
        raise MCPError(
            types.INVALID_PARAMS, f"unknown cursor {params.cursor!r}: lists have one page"
        )


def _connection(ctx: Context) -> Any:
    """The MCP connection a request came on (a session of ``resources/subscribe``). The
    SDK's request context offers no public way to it; its ``Connection`` is public."""
    return ctx.session._connection


def _detail(condition: Condition, text: str) -> dict[str, Any]:
    return {"condition": condition.value, "text": text}


@contextmanager
def _as_mcp_error(not_found: int = types.INVALID_PARAMS) -> Iterator[None]:
    """A typed failure of the memory service as a JSON-RPC error carrying it
    (``not_found``: the code of item-not-found)."""
    try:
        yield
    except MemoryServiceError as error:
        if error.condition is Condition.ITEM_NOT_FOUND:
            code = not_found
        elif error.condition is Condition.BAD_REQUEST:
            code = types.INVALID_PARAMS
        else:
            code = types.INTERNAL_ERROR
        raise MCPError(code, str(error), _detail(error.condition, error.text)) from None

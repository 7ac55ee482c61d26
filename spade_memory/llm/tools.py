"""spade_llm tools whose calls travel to the memory agents over XMPP.

The tools are built from the specs of ``spade_memory.tools`` (names, descriptions and
JSON Schemas derived from the protocol's op models; the MCP server reads the same
specs). A tool always answers the model with a short sentence: the result, or why it
could not be done. Tools bind to their agent through spade_llm's ``set_agent`` hook,
so a plain ``LLMAgent(tools=memory_tools())`` works too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from spade.agent import Agent
from spade_llm.tools import LLMTool

from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.protocol.ops import Op
from spade_memory.protocol.services import BASE_MEMORY, INTERACTION_MEMORY
from spade_memory.tools import (
    MORE_TOOL_SPECS,
    TOOL_SPECS,
    Defaults,
    ToolArgumentError,
    ToolSpec,
    op_for,
)
from spade_memory.tools.sentences import said_failure

log = logging.getLogger("spade_memory.tools")

__all__ = ["TOOL_SPECS", "MemoryConnection", "MemoryTool", "ToolSpec", "memory_tools"]


class MemoryConnection:
    """The memory agents a set of tools talks to, and the client once bound to an agent."""

    def __init__(
        self,
        base_memory_jid: str | Sequence[str] | None = None,
        interaction_memory_jid: str | Sequence[str] | None = None,
        timeout: float = 5.0,
        *,
        spaces: Sequence[str] = (),
        default_space: str | None = None,
    ) -> None:
        self.base_memory_jid = base_memory_jid
        self.interaction_memory_jid = interaction_memory_jid
        self.timeout = timeout
        self.spaces = tuple(spaces)
        """Shared spaces that recall, search and list draw on beside the agent's own."""
        self.default_space = default_space
        """Where ``store_memory`` stores when the model names no space (None: personal)."""
        self.client: MemoryClient | None = None
        self._bound_to: Agent | None = None

    @classmethod
    def from_flags(
        cls,
        agent_base_memory: bool | str,
        interaction_memory: bool | str,
        timeout: float,
        *,
        spaces: Sequence[str] = (),
        default_space: str | None = None,
    ) -> MemoryConnection:
        """spade_llm-style flags: a JID string names a memory agent, ``True`` the default."""
        return cls(
            agent_base_memory if isinstance(agent_base_memory, str) else None,
            interaction_memory if isinstance(interaction_memory, str) else None,
            timeout,
            spaces=spaces,
            default_space=default_space,
        )

    @property
    def readable(self) -> list[str] | None:
        """Where a read looks when the model names no space (None: the agent's own)."""
        return self.defaults().readable

    def defaults(self, conversation_id: str | None = None) -> Defaults:
        """What a tool call of this connection is given besides the model's arguments."""
        return Defaults(self.spaces, self.default_space, conversation_id)

    def bind(self, agent: Agent) -> MemoryClient:
        """The agent's client, created on first use (one reply router per agent)."""
        if self.client is None or self._bound_to is not agent:
            self._bound_to = agent
            self.client = MemoryClient(
                agent,
                self.base_memory_jid,
                interaction_memory_jid=self.interaction_memory_jid,
                timeout=self.timeout,
            )
        return self.client


class MemoryTool(LLMTool):  # type: ignore[misc]
    """A spade_llm tool that sends its spec's op to a memory agent and says what happened."""

    def __init__(self, spec: ToolSpec, connection: MemoryConnection) -> None:
        super().__init__(
            name=spec.name, description=spec.description, parameters=spec.schema(), func=self.call
        )
        self.spec = spec
        self.connection = connection
        self.conversation_id: str | None = None

    def set_agent(self, agent: Agent) -> None:
        """spade_llm calls this when the tool is registered with an agent."""
        self.connection.bind(agent)

    def set_conversation_id(self, conversation_id: str) -> None:
        """spade_llm calls this before each turn with the conversation it is in."""
        self.conversation_id = conversation_id

    async def call(self, **arguments: Any) -> str:
        """Run the tool: a sentence for the model, never an exception."""
        name = self.spec.name
        try:
            op = self._op(arguments)
        except ToolArgumentError as problem:
            return f"{name} was not done: {problem}. Call it again with valid arguments."
        client = self.connection.client
        if client is None:
            return f"{name} was not done: memory is not connected to this agent yet."
        to = client.jids[self.spec.service]
        try:
            result = await client.request(to, op)
        except MemoryServiceError as error:
            return said_failure(name, error, to, self.connection.timeout)
        except Exception:
            log.exception("%s failed", name)
            return f"{name} was not done: an internal error occurred in the memory client."
        assert result is not None  # the client is not in degraded mode
        return self.spec.say(op, result)

    def _op(self, arguments: dict[str, Any]) -> Op[Any]:
        """The op for the model's arguments; raises ``ToolArgumentError`` (a ValueError)
        with a readable reason."""
        return op_for(self.spec, arguments, self.connection.defaults(self.conversation_id))


def memory_tools(
    *,
    agent_base_memory: bool | str = True,
    interaction_memory: bool | str = True,
    timeout: float = 5.0,
    connection: MemoryConnection | None = None,
    extended: bool = False,
) -> list[MemoryTool]:
    """The memory tools to give an ``LLMAgent``: ``True`` for the default memory agent
    of the agent's domain, a JID string for another one, ``False`` to leave a set out.

    Returns spade_llm's four tools (of the services wanted); with ``extended``, also the
    tools that read, correct, forget and trace one memory, the spaces' and a working
    session's (``spade_memory.tools.MORE_TOOL_SPECS``).
    """
    if connection is None:
        connection = MemoryConnection.from_flags(agent_base_memory, interaction_memory, timeout)
    wanted = {BASE_MEMORY: bool(agent_base_memory), INTERACTION_MEMORY: bool(interaction_memory)}
    specs = TOOL_SPECS + MORE_TOOL_SPECS if extended else TOOL_SPECS
    return [MemoryTool(spec, connection) for spec in specs if wanted[spec.service]]

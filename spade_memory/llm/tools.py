"""spade_llm tools whose calls travel to the memory agents over XMPP.

Names, parameter names, types, enums and required lists are those of
spade_llm's own memory tools, so prompts written for spade_llm keep working;
the JSON schemas are derived from the protocol's op models (as pydantic-ai
derives tools from typed functions), never written twice. A tool always
answers the model with a short sentence: the result, or why it could not be
done. Tools bind to their agent through spade_llm's ``set_agent`` hook, so a
plain ``LLMAgent(tools=memory_tools())`` works too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from spade.agent import Agent
from spade_llm.tools import LLMTool

from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.errors import MemoryServiceError, MemoryTimeout
from spade_memory.protocol.memories import (
    ListMemories,
    MemoryList,
    SearchMemories,
    Stored,
    StoreMemory,
)
from spade_memory.protocol.notes import AddInformation, Confirmation
from spade_memory.protocol.ops import PERSONAL, Op, describe
from spade_memory.protocol.services import BASE_MEMORY, INTERACTION_MEMORY

log = logging.getLogger("spade_memory.tools")


@dataclass(frozen=True)
class ToolSpec:
    """One tool: which op it sends, which of the op's fields the model sees."""

    name: str
    description: str
    op: type[Op[Any]]
    """The op it sends (which names the reply it gets)."""
    parameters: tuple[str, ...]
    service: str
    """The registered service whose agent serves the op."""
    say: Callable[[Any, Any], str]
    """The sentence the model gets back for a successful call."""
    bounds: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Tool-level schema additions (spade_llm's limits on ``limit``)."""
    replaced: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Parameters the model sees in a simpler form than the op takes (``space``: one
    name, where the wire also takes a list)."""
    required: tuple[str, ...] | None = None
    """The parameters the model must give, when not the op's required fields (spade_llm's
    list, kept where the op became more lenient)."""

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the parameters, derived from the op model."""
        source = self.op.model_json_schema()["properties"]
        properties = {
            name: dict(self.replaced[name])
            if name in self.replaced
            else _tool_property(source[name])
            for name in self.parameters
        }
        for name, extra in self.bounds.items():
            properties[name].update(extra)
        required = list(self.required or ()) or [
            name for name in self.parameters if self.op.model_fields[name].is_required()
        ]
        return {"type": "object", "properties": properties, "required": required}


def _tool_property(prop: dict[str, Any]) -> dict[str, Any]:
    """A model field's schema as a tool parameter: optional means absent, not null."""
    prop = {key: value for key, value in prop.items() if key != "title"}
    variants = prop.pop("anyOf", None)
    if variants is not None:
        (present,) = [v for v in variants if v.get("type") != "null"]
        prop = {**present, **prop}
        if prop.get("default", ...) is None:
            del prop["default"]
    return prop


def _said_stored(op: StoreMemory, result: Stored) -> str:
    where = "" if op.space in (None, PERSONAL) else f" in space {op.space}"
    return f"Stored {result.category or op.category} memory{where}: {op.content}"


def _memory_lines(result: MemoryList, *, with_category: bool) -> list[str]:
    lines = []
    for memory in result.memories:
        shared = "" if memory.space == PERSONAL else f" (space {memory.space}, by {memory.author})"
        lines.append(
            f"- [{memory.category}] {memory.content}{shared}"
            if with_category
            else f"- {memory.content}{shared}"
        )
        if memory.context:
            lines.append(f"  Context: {memory.context}")
    return lines


def _said_found(op: SearchMemories, result: MemoryList) -> str:
    if not result.memories:
        return f"No memories found for query: {op.query}"
    head = f"Found {len(result.memories)} memories for '{op.query}':"
    return "\n".join([head, *_memory_lines(result, with_category=True)])


def _said_listed(op: ListMemories, result: MemoryList) -> str:
    if not result.memories:
        return f"No {op.category} memories found."
    head = f"My {op.category} memories ({len(result.memories)} total):"
    return "\n".join([head, *_memory_lines(result, with_category=False)])


def _said_remembered(_op: AddInformation, result: Confirmation) -> str:
    return result.text


_READ_SPACE = {
    "type": "string",
    "description": "Optional: one space to look in: 'personal' (my own), a shared space's "
    "name, or '*' for all I can read (default: my own and the agent's shared spaces)",
}

REMEMBER_INTERACTION_INFO = ToolSpec(
    name="remember_interaction_info",
    description=(
        "Remember specific, useful information about THIS interaction with another agent: "
        "APIs, authentication methods, data formats, preferences, capabilities or technical "
        "specifications that will help in future interactions with the same agent. Be "
        "selective; do not store general conversation content or pleasantries."
    ),
    op=AddInformation,
    parameters=("information",),
    service=INTERACTION_MEMORY,
    say=_said_remembered,
)
STORE_MEMORY = ToolSpec(
    name="store_memory",
    description=(
        "Store important information in my long-term memory for future use: facts (APIs, "
        "data formats, configurations), patterns I have observed, preferences I have learned, "
        "and my own capabilities or limitations. It persists across conversations."
    ),
    op=StoreMemory,
    parameters=("category", "content", "context", "confidence", "space", "tags"),
    service=BASE_MEMORY,
    say=_said_stored,
    required=("category", "content"),  # spade_llm's; the wire also takes none (classified)
    replaced={
        "space": {
            "type": "string",
            "description": "Optional: a shared space's name to "
            "store into (default: the agent's default space, else its own)",
        }
    },
)
SEARCH_MEMORIES = ToolSpec(
    name="search_memories",
    description=(
        "Search my long-term memory for information relevant to the current conversation: "
        "facts I learned, patterns I observed, preferences I discovered, my capabilities. "
        "Results are ranked by relevance."
    ),
    op=SearchMemories,
    parameters=("query", "limit", "category", "space", "tags_any"),
    service=BASE_MEMORY,
    say=_said_found,
    bounds={"limit": {"minimum": 1, "maximum": 20, "default": 10}},
    replaced={"space": _READ_SPACE},
)
LIST_MEMORIES = ToolSpec(
    name="list_memories",
    description=(
        "List my memories of one category (fact, pattern, preference, capability), most "
        "recently used first, to see what I know in that area."
    ),
    op=ListMemories,
    parameters=("category", "limit", "space", "tags_any"),
    service=BASE_MEMORY,
    say=_said_listed,
    bounds={"limit": {"minimum": 1, "maximum": 50, "default": 20}},
    replaced={"space": _READ_SPACE},
)

TOOL_SPECS: tuple[ToolSpec, ...] = (
    REMEMBER_INTERACTION_INFO,
    STORE_MEMORY,
    SEARCH_MEMORIES,
    LIST_MEMORIES,
)


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
        return [PERSONAL, *self.spaces] if self.spaces else None

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
        except ValueError as problem:
            return f"{name} was not done: {problem}. Call it again with valid arguments."
        client = self.connection.client
        if client is None:
            return f"{name} was not done: memory is not connected to this agent yet."
        to = self._recipient(client)
        try:
            result = await client.request(to, op)
        except MemoryTimeout:
            return (
                f"{name} was not done: memory is unavailable right now ({to} did not answer "
                f"within {self.connection.timeout:g} s). Continue without it."
            )
        except MemoryServiceError as error:
            return f"{name} was not done: {error.text} ({error.condition.value})."
        except Exception:
            log.exception("%s failed", name)
            return f"{name} was not done: an internal error occurred in the memory client."
        assert result is not None  # the client is not in degraded mode
        return self.spec.say(op, result)

    def _op(self, arguments: dict[str, Any]) -> Op[Any]:
        """The op for the model's arguments, or ValueError with a readable reason."""
        unexpected = sorted(set(arguments) - set(self.spec.parameters))
        if unexpected:
            allowed = ", ".join(self.spec.parameters)
            raise ValueError(f"unexpected argument {', '.join(unexpected)} (it takes {allowed})")
        values = dict(arguments)
        for parameter, bounds in self.spec.bounds.items():
            if parameter not in values and "default" in bounds:
                values[parameter] = bounds["default"]
        if "space" in self.spec.parameters and "space" not in values:
            values["space"] = (
                self.connection.default_space
                if self.spec.op is StoreMemory
                else self.connection.readable
            )
        if self.spec.op is AddInformation:
            if self.conversation_id is None:
                raise ValueError("no conversation is active")
            values["conversation_id"] = self.conversation_id
        try:
            # Models send "5" for 5: coerce here; the wire itself stays strict.
            op = self.spec.op.model_validate(values, strict=False)
        except ValidationError as error:
            raise ValueError(describe(error)) from None
        lowered = {
            parameter: bounds["maximum"]
            for parameter, bounds in self.spec.bounds.items()
            if "maximum" in bounds and getattr(op, parameter) > bounds["maximum"]
        }
        return op.model_copy(update=lowered) if lowered else op

    def _recipient(self, client: MemoryClient) -> str:
        return client.jids[self.spec.service]


def memory_tools(
    *,
    agent_base_memory: bool | str = True,
    interaction_memory: bool | str = True,
    timeout: float = 5.0,
    connection: MemoryConnection | None = None,
) -> list[MemoryTool]:
    """The memory tools to give an ``LLMAgent``: ``True`` for the default memory agent
    of the agent's domain, a JID string for another one, ``False`` to leave a set out."""
    if connection is None:
        connection = MemoryConnection.from_flags(agent_base_memory, interaction_memory, timeout)
    wanted = {BASE_MEMORY: bool(agent_base_memory), INTERACTION_MEMORY: bool(interaction_memory)}
    return [MemoryTool(spec, connection) for spec in TOOL_SPECS if wanted[spec.service]]

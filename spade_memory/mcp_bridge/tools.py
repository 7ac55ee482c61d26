"""The MCP tools: every memory tool spec (``spade_memory.tools``), called over XMPP.

A tool's name, description and input schema are its spec's, as the spade_llm tools'
are; its output schema admits the JSON Schema of the op's reply or a failure. A call
whose arguments break the input schema (a ``limit`` past its maximum, a wrong type) is
refused as the schema states, where a spade_llm tool lowers a limit for the model. A
call answers with the sentence a spade_llm tool gives the model and the reply itself as
structured content; a call that fails answers an MCP tool error carrying the memory
service's typed failure (``condition``, ``text``, ``retry_after`` when it says when to
try again) as structured content that the output schema admits (the TypeScript SDK
checks an error's structured content too), never a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from mcp import types

from spade_memory.mcp_bridge.link import MemoryLink
from spade_memory.protocol.errors import Busy, Condition, MemoryServiceError
from spade_memory.protocol.ops import Op, Record
from spade_memory.tools import EVERY_TOOL_SPEC, ToolArgumentError, ToolSpec, op_for
from spade_memory.tools.sentences import said_failure

logger = logging.getLogger("spade_memory.mcp")

SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in EVERY_TOOL_SPEC}


FAILURE_SCHEMA: dict[str, Any] = {
    "title": "Failure",
    "description": "The memory service's typed failure (a tool error's structured content).",
    "type": "object",
    "properties": {
        "condition": {"type": "string"},
        "text": {"type": "string"},
        "retry_after": {"type": "number"},
    },
    "required": ["condition", "text"],
    "additionalProperties": False,
}


def output_schema(spec: ToolSpec) -> dict[str, Any]:
    """The output schema of ``spec``'s tool: its op's reply, or a failure."""
    reply = spec.op.result.model_json_schema(mode="serialization")
    definitions = reply.pop("$defs", None)  # at the top, where the reply's $refs point
    schema: dict[str, Any] = {"type": "object", "anyOf": [reply, FAILURE_SCHEMA]}
    if definitions:
        schema["$defs"] = definitions
    return schema


def mcp_tool(spec: ToolSpec) -> types.Tool:
    """The MCP tool of ``spec``: its name, description and input schema, and
    ``output_schema``."""
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.schema(),
        output_schema=output_schema(spec),
    )


TOOLS: list[types.Tool] = [mcp_tool(spec) for spec in EVERY_TOOL_SPEC]
_CHECKS = {spec.name: Draft202012Validator(spec.schema()) for spec in EVERY_TOOL_SPEC}


def schema_refusal(name: str, arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` break the input schema of the tool ``name`` (the first reason
    found), or None."""
    for error in _CHECKS[name].iter_errors(arguments):
        where = ".".join(str(part) for part in error.absolute_path)
        return f"{where}: {error.message}" if where else error.message
    return None


def input_schema(name: str) -> dict[str, Any] | None:
    """The input schema of the tool ``name`` (None: no such tool)."""
    spec = SPECS.get(name)
    return None if spec is None else spec.schema()


@dataclass(frozen=True)
class Done:
    """A call that succeeded: the op that was sent and what it gave."""

    op: Op[Any]
    result: Record


def failure(
    condition: Condition, sentence: str, text: str | None = None, retry_after: float | None = None
) -> types.CallToolResult:
    """An MCP tool error: ``sentence`` for the model, and as structured content the typed
    failure ``{"condition", "text"}`` (``text``: the service's own, else the sentence),
    with ``retry_after`` (seconds) when the service said when to try again."""
    detail: dict[str, Any] = {"condition": condition.value, "text": text or sentence}
    if retry_after is not None:
        detail["retry_after"] = retry_after
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=sentence)],
        structured_content=detail,
        is_error=True,
    )


async def call_tool(
    link: MemoryLink,
    name: str,
    arguments: dict[str, Any],
    conversation_id: str,
    done: Callable[[Done], None] = lambda _: None,
) -> types.CallToolResult:
    """Send the op of the tool ``name`` made of ``arguments`` as the link's account.

    Returns the sentence and the reply as structured content, or a tool error (an
    unknown tool, invalid arguments, the service's failure, no login); raises nothing.
    ``done`` hears each call that succeeded (what the resources' notices start from).
    """
    spec = SPECS.get(name)
    if spec is None:
        every = ", ".join(SPECS)
        return failure(Condition.BAD_REQUEST, f"unknown tool {name!r} (the tools are {every})")
    if (refused := schema_refusal(name, arguments)) is not None:
        sentence = f"{name} was not done: {refused}. Call it again with valid arguments."
        return failure(Condition.BAD_REQUEST, sentence, refused)
    try:
        op = op_for(spec, arguments, link.defaults(conversation_id))
    except ToolArgumentError as problem:
        sentence = f"{name} was not done: {problem}. Call it again with valid arguments."
        return failure(Condition.BAD_REQUEST, sentence, str(problem))
    to = spec.service
    try:
        client = await link.client()
        to = client.jids[spec.service]
        result = await client.request(to, op)
    except MemoryServiceError as error:
        sentence = said_failure(name, error, to, link.account.timeout)
        retry = error.retry_after if isinstance(error, Busy) else None
        return failure(error.condition, sentence, error.text, retry)
    except Exception:
        logger.exception("%s failed", name)
        text = f"{name} was not done: an internal error occurred in the MCP server (see its log)."
        return failure(Condition.INTERNAL_SERVER_ERROR, text)
    assert result is not None  # the client is not degraded
    done(Done(op, result))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=spec.say(op, result))],
        structured_content=result.model_dump(mode="json"),
    )

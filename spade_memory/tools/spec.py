"""One memory tool: which op it sends, what the model sees of it, what it reads back.

A tool's JSON Schema is derived from its op model (as pydantic-ai derives tools from
typed functions), never written twice: the spade_llm tools and the MCP server's tools
both read ``ToolSpec.schema()``, so what a model is told is the same wherever it calls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from spade_memory.protocol.ops import Op

SpaceDefault = Literal["store", "read"]
"""Where an op goes when the model names no space: the caller's default space for a
store, the spaces it reads for a search or a list."""


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
    hidden: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Fields of a nested object that the service fills in (when a focus was set, a
    finding's id), left out of what the model sees."""
    space_default: SpaceDefault | None = None
    """What ``space`` is when the model names none (None: the op's own default)."""
    filled: tuple[str, ...] = ()
    """Op fields the caller fills in, never the model (the conversation a note is for)."""

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the parameters, derived from the op model.

        Returns an object schema with no ``$ref``: nested models are written in place.
        """
        whole = self.op.model_json_schema()
        source, definitions = whole["properties"], whole.get("$defs", {})
        properties = {
            name: dict(self.replaced[name])
            if name in self.replaced
            else _tool_property(source[name], definitions, self.hidden.get(name, ()))
            for name in self.parameters
        }
        for name, extra in self.bounds.items():
            properties[name].update(extra)
        required = list(self.required or ()) or [
            name for name in self.parameters if self.op.model_fields[name].is_required()
        ]
        return {"type": "object", "properties": properties, "required": required}


def _tool_property(
    prop: dict[str, Any], definitions: Mapping[str, Any], hidden: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A model field's schema as a tool parameter: optional means absent, not null; a
    nested model is written in place, without the fields in ``hidden``."""
    prop = {key: value for key, value in prop.items() if key != "title"}
    reference = prop.pop("$ref", None)
    if reference is not None:
        prop = {**definitions[reference.rsplit("/", 1)[-1]], **prop}
        prop.pop("title", None)
    variants = prop.pop("anyOf", None)
    if variants is not None:
        (present,) = [v for v in variants if v.get("type") != "null"]
        prop = {**_tool_property(present, definitions), **prop}
        if prop.get("default", ...) is None:
            del prop["default"]
    if "properties" in prop:
        prop["properties"] = {
            name: _tool_property(inner, definitions)
            for name, inner in prop["properties"].items()
            if name not in hidden
        }
        prop["required"] = [name for name in prop.get("required", ()) if name not in hidden]
    if isinstance(prop.get("items"), dict):
        prop["items"] = _tool_property(prop["items"], definitions)
    return prop

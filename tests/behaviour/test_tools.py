"""The memory tools' schemas: derived from the op models, pinned by a snapshot, and
compatible with spade_llm's own memory tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from spade_llm.memory import AgentMemoryTool
from spade_llm.memory.agent_base_memory_tools import create_base_memory_tools

from spade_memory import TOOL_SPECS, MemoryConnection, MemoryLLMAgent, ScriptedProvider
from spade_memory.llm.tools import MemoryTool, memory_tools
from spade_memory.tools import EVERY_TOOL_SPEC, Defaults, ToolArgumentError, op_for
from tests.support.paths import SNAPSHOTS

SNAPSHOT = SNAPSHOTS / "memory_tools.json"


def current() -> list[dict[str, Any]]:
    return [tool.to_openai_tool() for tool in memory_tools()]


def test_schemas_match_the_snapshot() -> None:
    """Any change to what the model sees must be deliberate:
    regenerate with SPADE_MEMORY_UPDATE_SNAPSHOTS=1 and review the diff."""
    if os.environ.get("SPADE_MEMORY_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(current(), indent=2) + "\n")
    assert current() == json.loads(SNAPSHOT.read_text())


def spade_llm_tools() -> dict[str, Any]:
    published = [AgentMemoryTool(interaction_memory=None), *create_base_memory_tools(None)]
    return {tool.name: tool.parameters for tool in published}


def shape(parameters: dict[str, Any]) -> dict[str, Any]:
    """What a prompt depends on: names, types, enums, required."""
    return {
        "required": sorted(parameters["required"]),
        "properties": {
            name: (prop["type"], prop.get("enum"))
            for name, prop in parameters["properties"].items()
        },
    }


ADDED = {
    "remember_interaction_info": {},
    "store_memory": {
        "space": ("string", None),
        "tags": ("array", None),
        "supersedes": ("string", None),
    },
    "list_memories": {
        "space": ("string", None),
        "tags_any": ("array", None),
        "as_of": ("string", None),
        "known_at": ("string", None),
    },
    "search_memories": {
        "category": ("string", ["fact", "pattern", "preference", "capability"]),
        "space": ("string", None),
        "tags_any": ("array", None),
        "as_of": ("string", None),
        "known_at": ("string", None),
    },
}
"""Optional parameters beyond spade_llm's: the shared space, search's category, tags, the
memory a store replaces, and the moment a read looks at."""


@pytest.mark.parametrize("name", sorted(ADDED))
def test_tools_take_spade_llms_parameters_and_only_optional_additions(name: str) -> None:
    ours = shape(next(spec.schema() for spec in TOOL_SPECS if spec.name == name))
    theirs = shape(spade_llm_tools()[name])
    assert ours["required"] == theirs["required"]
    added = {key: ours["properties"].pop(key) for key in ADDED[name]}
    assert added == ADDED[name]
    assert ours["properties"] == theirs["properties"]


def test_limits_are_spade_llms() -> None:
    theirs = spade_llm_tools()
    for spec in TOOL_SPECS:
        if "limit" in spec.parameters:
            ours = spec.schema()["properties"]["limit"]
            published = theirs[spec.name]["properties"]["limit"]
            assert {k: ours[k] for k in ("minimum", "maximum", "default")} == {
                k: published[k] for k in ("minimum", "maximum", "default")
            }


def test_the_flags_choose_the_tools() -> None:
    names = [tool.name for tool in memory_tools(agent_base_memory=False)]
    assert names == ["remember_interaction_info"]
    assert memory_tools(agent_base_memory=False, interaction_memory=False) == []


async def test_add_tool_registers_a_tool_once() -> None:
    agent = MemoryLLMAgent("once@localhost", "secret", ScriptedProvider(), agent_base_memory=True)
    extra = MemoryTool(TOOL_SPECS[0], MemoryConnection())
    agent.add_tool(extra)
    assert [tool.name for tool in agent.llm_behaviour.tools].count(extra.name) == 1
    assert agent.llm_behaviour.tools is agent.tools


def test_a_tuple_flag_is_refused() -> None:
    with pytest.raises(TypeError, match="bool or a memory agent's JID"):
        MemoryLLMAgent("x@localhost", "secret", ScriptedProvider(), agent_base_memory=(True, "p"))  # type: ignore[arg-type]


def test_arguments_are_coerced_bounded_and_defaulted_like_spade_llms() -> None:
    search, listing = (
        MemoryTool(spec, MemoryConnection())
        for spec in TOOL_SPECS
        if spec.name in ("search_memories", "list_memories")
    )
    assert search._op({"query": "tea", "limit": "5"}).model_dump()["limit"] == 5
    assert search._op({"query": "tea", "limit": 500}).model_dump()["limit"] == 20
    assert listing._op({"category": "fact"}).model_dump()["limit"] == 20  # the op's own is 50


def test_spaces_default_where_the_tools_read_and_store() -> None:
    connection = MemoryConnection(spaces=["team", "lab"], default_space="team")
    store, search, listing = (
        MemoryTool(spec, connection)
        for spec in TOOL_SPECS
        if spec.name in ("store_memory", "search_memories", "list_memories")
    )
    assert store._op({"category": "fact", "content": "x"}).model_dump()["space"] == "team"
    assert (
        store._op({"category": "fact", "content": "x", "space": "personal"}).model_dump()["space"]
        == "personal"
    )
    assert search._op({"query": "tea"}).model_dump()["space"] == ["personal", "team", "lab"]
    assert search._op({"query": "tea", "space": "lab"}).model_dump()["space"] == "lab"
    assert listing._op({"category": "fact"}).model_dump()["space"] == ["personal", "team", "lab"]
    alone = MemoryTool(store.spec, MemoryConnection())
    assert alone._op({"category": "fact", "content": "x"}).model_dump()["space"] is None
    with pytest.raises(ValueError, match="space"):
        store._op({"category": "fact", "content": "x", "space": "../etc"})


def test_importing_spade_memory_leaves_spade_llm_unloaded() -> None:
    """The memory agents never pay for litellm; the LLM names load on first use (here
    spade_llm is held back once the memory agents' modules are in: the first use must
    reach for it, and four seconds of litellm are spared)."""
    check = (
        "import sys, spade_memory, spade_memory.server.runtime, spade_memory.server.registry\n"
        "assert 'spade_llm' not in sys.modules, 'loaded early'\n"
        "sys.modules['spade_llm'] = None\n"
        "try:\n"
        "    spade_memory.MemoryLLMAgent\n"
        "except ImportError as held_back:\n"
        "    assert (held_back.name or '').split('.')[0] == 'spade_llm', held_back\n"
        "else:\n"
        "    raise AssertionError('not loaded on use')\n"
    )
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_extended_tools_reach_the_rest_of_a_memory() -> None:
    """``extended`` adds the tools that read, correct, forget and trace one memory, the
    spaces' and a working session's; the services' flags still choose."""
    names = [tool.name for tool in memory_tools(extended=True)]
    assert names == [spec.name for spec in EVERY_TOOL_SPEC]
    assert names[4:] == [
        "get_memory", "update_memory", "supersede_memory", "restore_memory", "delete_memory",
        "memory_history", "memories_about", "related_memories", "list_spaces", "space_info",
        "get_working_memory", "set_focus", "add_finding",
    ]  # fmt: skip
    base_only = [tool.name for tool in memory_tools(interaction_memory=False, extended=True)]
    assert "set_focus" not in base_only and "update_memory" in base_only


def test_nested_objects_are_written_in_place_without_what_the_service_fills() -> None:
    focus = next(spec for spec in EVERY_TOOL_SPEC if spec.name == "set_focus").schema()
    assert "$ref" not in json.dumps(focus) and "$defs" not in focus
    shown = focus["properties"]["focus"]
    assert set(shown["properties"]) == {"type", "id", "name", "context"}  # no set_at
    assert shown["required"] == ["type", "id", "name"]
    finding = next(spec for spec in EVERY_TOOL_SPEC if spec.name == "add_finding").schema()
    assert set(finding["properties"]["finding"]["properties"]) == {
        "type", "title", "description", "location", "severity", "evidence",
    }  # fmt: skip


def test_a_nested_argument_is_coerced_and_checked() -> None:
    add_finding = next(spec for spec in EVERY_TOOL_SPEC if spec.name == "add_finding")
    op = op_for(
        add_finding, {"session_id": "s", "finding": {"type": "bug", "title": "t"}}, Defaults()
    )
    assert op.model_dump()["finding"]["severity"] == "info"
    dire = {"type": "bug", "title": "t", "severity": "dire"}
    with pytest.raises(ToolArgumentError, match=r"finding\.severity"):
        op_for(add_finding, {"session_id": "s", "finding": dire}, Defaults())


def test_a_note_needs_a_conversation() -> None:
    remember = TOOL_SPECS[0]
    with pytest.raises(ToolArgumentError, match="no conversation"):
        op_for(remember, {"information": "x"}, Defaults())
    op = op_for(remember, {"information": "x"}, Defaults(conversation_id="c-1"))
    assert op.model_dump()["conversation_id"] == "c-1"

"""``spade-memory mcp`` end to end: the MCP SDK's own client (this process) talks to the
MCP server (its own process, over stdio), which talks over XMPP to ``spade-memory run``
(a third process), beside a SPADE agent of this process. Both protocol eras: the
handshake one desktop clients speak (``legacy``) and 2026-07-28 (``auto``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from jsonschema import Draft202012Validator
from mcp import Client, MCPError, types

from spade_memory.llm.tools import memory_tools
from spade_memory.mcp_bridge.tools import FAILURE_SCHEMA
from spade_memory.protocol.working_memory import Finding
from spade_memory.testing import MemoryServiceProcess, free_port
from tests.support.harness import ClientAgent, unique_jid
from tests.support.mcp_clients import Mode, Updates, call, over_stdio, said, subscribe

PASSWORD = "mcp-secret"
MODES: list[Mode] = ["legacy", "auto"]


@pytest.mark.parametrize("mode", MODES)
async def test_the_tools_are_the_spade_tools(
    memory_service: MemoryServiceProcess, mode: Mode
) -> None:
    """One source of truth: names, descriptions and input schemas equal the spade_llm
    tools'; each result's schema admits its op's reply's, or the typed failure."""
    async with over_stdio(memory_service.port, unique_jid("mcp"), PASSWORD, mode=mode) as mcp:
        listed = (await mcp.list_tools()).tools
    spade = memory_tools(extended=True)
    assert [tool.name for tool in listed] == [tool.name for tool in spade]
    for tool, theirs in zip(listed, spade, strict=True):
        assert tool.description == theirs.description
        assert tool.input_schema == theirs.parameters
        reply = theirs.spec.op.result.model_json_schema(mode="serialization")
        definitions = reply.pop("$defs", None)
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert tool.output_schema["anyOf"] == [reply, FAILURE_SCHEMA]
        assert tool.output_schema.get("$defs") == definitions


@pytest.mark.parametrize("mode", MODES)
async def test_a_space_shared_between_an_mcp_identity_and_a_spade_agent(
    memory_service: MemoryServiceProcess, alice: ClientAgent, mode: Mode
) -> None:
    jid, space = unique_jid("mcp"), f"team-{mode}"
    await alice.memory.create_space(space)
    await alice.memory.grant(space, jid, "writer")
    async with over_stdio(memory_service.port, jid, PASSWORD, mode=mode) as mcp:
        deploy = "The deploy window is Tuesday 10:00 UTC"
        stored = await call(mcp, "store_memory", category="fact", content=deploy, space=space)
        assert not stored.is_error, said(stored)
        assert stored.structured_content is not None
        memory_id = stored.structured_content["id"]
        assert said(stored) == f"Stored fact memory in space {space}: {deploy} (id {memory_id})"

        found = await alice.memory.search_memories("deploy window", space=space)
        assert [(m.id, m.author) for m in found] == [(memory_id, jid)]

        mine = await alice.memory.store_memory(
            "preference", "The team prefers squash merges", space=space
        )
        searched = await call(mcp, "search_memories", query="squash merges", space=space)
        assert f'squash merges" (space {space}, by {alice.jid.bare}; id {mine})' in said(searched)
        assert searched.structured_content is not None
        assert [m["id"] for m in searched.structured_content["memories"]] == [mine]

        personal = await call(mcp, "store_memory", category="fact", content="My own secret")
        assert not personal.is_error
        assert await alice.memory.search_memories("own secret", space="*") == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_resource_is_updated_after_an_agents_store(
    memory_service: MemoryServiceProcess, alice: ClientAgent, mode: Mode
) -> None:
    jid, space = unique_jid("mcp"), f"watched-{mode}"
    await alice.memory.create_space(space)
    await alice.memory.grant(space, jid, "reader")
    uri = f"memory://spaces/{space}/recent"
    updates = Updates()
    async with over_stdio(memory_service.port, jid, PASSWORD, mode=mode, updates=updates) as mcp:
        listed = [str(resource.uri) for resource in (await mcp.list_resources()).resources]
        assert listed == ["memory://spaces/personal/recent", uri]
        if mode == "legacy":
            await subscribe(mcp, uri)
            memory_id = await alice.memory.store_memory("fact", "Staging moved to port 8443",
                                                        space=space)  # fmt: skip
            await updates.wait_for(uri)
        else:
            async with mcp.listen(resource_subscriptions=[uri]) as events:
                memory_id = await alice.memory.store_memory(
                    "fact", "Staging moved to port 8443", space=space
                )
                async for event in events:
                    assert str(event.uri) == uri
                    break
        read = await mcp.read_resource(uri)
    (content,) = read.contents
    shown = json.loads(content.text)  # type: ignore[union-attr]
    assert [memory["id"] for memory in shown["memories"]] == [memory_id]


async def test_a_working_session_through_mcp_is_the_agents(
    memory_service: MemoryServiceProcess, alice: ClientAgent
) -> None:
    """Focus and findings set through MCP are the session a SPADE agent reads, in a
    shared space; a finding the agent adds updates the session's resource."""
    jid, space = unique_jid("mcp"), "review"
    await alice.memory.create_space(space)
    await alice.memory.grant(space, jid, "writer")
    uri = f"memory://spaces/{space}/sessions/pr%2F42"
    updates = Updates()
    async with over_stdio(memory_service.port, jid, PASSWORD, updates=updates) as mcp:
        focus = {"type": "file", "id": "app/db.py", "name": "db.py"}
        set_focus = await call(mcp, "set_focus", session_id="pr/42", focus=focus, space=space)
        assert "Focus: file db.py (app/db.py)" in said(set_focus)
        finding = {"type": "bug", "title": "N+1 query", "severity": "warning",
                   "location": "app/db.py:88"}  # fmt: skip
        added = await call(mcp, "add_finding", session_id="pr/42", finding=finding, space=space)
        assert not added.is_error, said(added)
        state = await alice.memory.space(space).session("pr/42").get()
        assert state.working_memory.current_focus is not None
        assert state.working_memory.current_focus.id == "app/db.py"
        assert [(f.title, f.severity) for f in state.working_memory.findings] == [
            ("N+1 query", "warning")
        ]
        await subscribe(mcp, uri)
        await (
            alice.memory.space(space)
            .session("pr/42")
            .add_finding(Finding(type="risk", title="No index on orders.user_id"))
        )
        await updates.wait_for(uri)
        read = await mcp.read_resource(uri)
    (content,) = read.contents
    shown = json.loads(content.text)  # type: ignore[union-attr]
    titles = [f["title"] for f in shown["working_memory"]["findings"]]
    assert titles == ["N+1 query", "No index on orders.user_id"]


async def test_forbidden_ops_are_tool_errors_with_the_services_condition(
    memory_service: MemoryServiceProcess, alice: ClientAgent
) -> None:
    jid, space = unique_jid("mcp"), "read-only"
    await alice.memory.create_space(space)
    await alice.memory.grant(space, jid, "reader")
    theirs = await alice.memory.store_memory("fact", "Only alice changes this", space=space)
    private = await alice.memory.store_memory("fact", "Alice's own note")
    async with over_stdio(memory_service.port, jid, PASSWORD) as mcp:
        refused = {
            "store": await call(mcp, "store_memory", category="fact", content="x", space=space),
            "delete": await call(mcp, "delete_memory", id=theirs, space=space),
            "update": await call(mcp, "update_memory", id=theirs, content="y", space=space),
            "someone's": await call(mcp, "get_memory", id=private),
            "stranger": await call(mcp, "space_info", space="no-such-space"),
        }
        with pytest.raises(MCPError, match="item-not-found") as unreadable:
            await mcp.read_resource("memory://spaces/no-such-space/recent")
        with pytest.raises(MCPError, match="no such resource") as unknown:
            await mcp.read_resource("memory://nothing/here")
        # the specification's code for a resource that is not there, for either
        assert (unreadable.value.code, unknown.value.code) == (-32002, -32002)
        conditions = {}
        for what, result in refused.items():
            assert result.is_error, what
            assert result.structured_content is not None
            conditions[what] = result.structured_content["condition"]
        still = await call(mcp, "get_memory", id=theirs, space=space)
    assert refused["store"].structured_content == {
        "condition": "not-authorized", "text": f"a reader of '{space}' may only read it",
    }  # fmt: skip
    assert conditions == {
        "store": "not-authorized", "delete": "not-authorized", "update": "not-authorized",
        "someone's": "item-not-found", "stranger": "item-not-found",
    }  # fmt: skip
    assert "Only alice changes this" in said(still)


async def test_bad_input_is_a_tool_error_and_nothing_changes(
    memory_service: MemoryServiceProcess,
) -> None:
    async with over_stdio(memory_service.port, unique_jid("mcp"), PASSWORD) as mcp:
        stored = await call(mcp, "store_memory", category="fact", content="kept as it was")
        assert not stored.is_error
        bad = [
            await mcp.call_tool("no_such_tool", {}),
            await call(mcp, "store_memory", category="facts", content="x"),
            await call(mcp, "store_memory", category="fact", content=42),
            await call(mcp, "store_memory", category="fact", content="x", owner="boss@localhost"),
            await call(mcp, "store_memory", category="fact", content="x" * 200_000),
            await call(mcp, "search_memories", query="kept", limit="many"),
            await call(mcp, "search_memories", query="kept", limit=500),  # the schema: 20
            await call(mcp, "get_memory", id=""),
            await call(mcp, "set_focus", session_id="s", focus={"type": "planet", "id": "x"}),
        ]
        conditions = [result.structured_content["condition"] for result in bad
                      if result.is_error and result.structured_content]  # fmt: skip
        # FTS syntax and injection strings are words like any other
        odd = [
            await call(mcp, "search_memories", query='kept" OR content MATCH "*'),
            await call(mcp, "search_memories", query="'; DROP TABLE memories; --"),
        ]
        for listing in (mcp.list_tools, mcp.list_resources, mcp.list_resource_templates):
            with pytest.raises(MCPError, match="unknown cursor") as unknown:
                await listing(cursor="made-up")  # no answer gives one: -32602, not page one
            assert unknown.value.code == -32602
        listed = await call(mcp, "list_memories", category="fact")
        schemas = {tool.name: tool.output_schema for tool in (await mcp.list_tools()).tools}
    assert conditions == ["bad-request"] * 4 + ["resource-constraint"] + ["bad-request"] * 4
    assert "500 is greater than the maximum of 20" in said(bad[6])
    for name, result in zip(TOOL_NAMES, [stored, *bad[1:], *odd, listed], strict=True):
        Draft202012Validator(schemas[name]).validate(result.structured_content)
    assert all(not result.is_error for result in odd)
    assert listed.structured_content is not None
    assert [m["content"] for m in listed.structured_content["memories"]] == ["kept as it was"]


TOOL_NAMES = [
    "store_memory",
    *["store_memory"] * 4,
    "search_memories",
    "search_memories",
    "get_memory",
    "set_focus",
    "search_memories",
    "search_memories",
    "list_memories",
]
"""The tool of each result the test above checks against its output schema."""


def check(port: int, jid: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spade_memory", "mcp", "--check", "--jid", jid,
         "--port", str(port)],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "SPADE_MEMORY_AGENT_PASSWORD": PASSWORD},
    )  # fmt: skip


def test_check_says_ready_or_what_is_wrong(memory_service: MemoryServiceProcess) -> None:
    jid = unique_jid("mcp")
    ready = check(memory_service.port, jid)
    assert ready.returncode == 0, ready.stderr
    assert ready.stdout == (
        f"ready: logged in as {jid}; base-memory@localhost and interaction-memory@localhost"
        " answer; 17 tools\n"
    )
    closed = check(free_port(), jid)
    assert closed.returncode == 1
    (line,) = closed.stderr.splitlines()
    assert line.startswith("spade-memory mcp: not ready: cannot reach the memory service:")
    assert "spade-memory run" in line


async def test_a_missing_password_is_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spade_memory", "mcp", "--jid", "a@localhost"],
        capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if k != "SPADE_MEMORY_AGENT_PASSWORD"},
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        "spade-memory mcp: set SPADE_MEMORY_AGENT_PASSWORD (or --password-file) to the"
        " password of a@localhost\n"
    )


async def test_the_mcp_server_outlives_a_restart_of_the_memory_service(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The memory service (and its embedded XMPP server) stops under a connected MCP
    client: calls answer a clear error meanwhile, and work again once it is back."""
    service = MemoryServiceProcess(tmp_path_factory.mktemp("restarted"))
    service.start(timeout=120)
    try:
        async with over_stdio(service.port, unique_jid("mcp"), PASSWORD, "--timeout", "2") as mcp:
            before = await call(mcp, "store_memory", category="fact", content="before the stop")
            assert not before.is_error, said(before)
            service.stop()
            down = await call(mcp, "search_memories", query="before")
            assert down.is_error and down.structured_content is not None
            assert down.structured_content["condition"] == "remote-server-timeout"
            assert "memory is unavailable right now" in said(down)
            service.start(timeout=120)
            after = await _until_answered(mcp, "store_memory", category="fact",
                                          content="after the restart")  # fmt: skip
            assert not after.is_error, said(after)
            found = await call(mcp, "list_memories", category="fact")
    finally:
        service.stop()
    assert found.structured_content is not None
    contents = {memory["content"] for memory in found.structured_content["memories"]}
    assert contents == {"before the stop", "after the restart"}


async def _until_answered(mcp: Client, name: str, **arguments: object) -> types.CallToolResult:
    """The first answer of ``name`` that is not a timeout (the reconnection takes a few
    seconds after the service is back); at most 40 tries of 4 s."""
    result = None
    for _ in range(40):
        result = await call(mcp, name, **arguments)
        if not result.is_error or result.structured_content is None:
            return result
        if result.structured_content["condition"] not in ("remote-server-timeout",):
            return result
    raise AssertionError(f"{name} still times out: {result}")


async def test_no_memory_service_is_a_clear_tool_error() -> None:
    """Started before the memory service (or on the wrong port), the MCP server serves:
    each call says what is wrong and what to do."""
    port = free_port()
    async with over_stdio(port, unique_jid("mcp"), PASSWORD) as mcp:
        assert len((await mcp.list_tools()).tools) == 17
        result = await call(mcp, "search_memories", query="anything")
    assert result.is_error and result.structured_content is not None
    assert result.structured_content["condition"] == "service-unavailable"
    assert said(result) == (
        f"search_memories was not done: cannot reach the memory service: nothing listens on"
        f" localhost:{port}: start the service with `spade-memory run` (or give the port it"
        " listens on) (service-unavailable)."
    )

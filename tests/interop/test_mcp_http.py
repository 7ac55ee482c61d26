"""``spade-memory mcp --http``: the MCP SDK's client over streamable HTTP (this process),
the MCP server (its own process), ``spade-memory run`` (a third), a SPADE agent here."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import MCPError

from spade_memory.llm.tools import memory_tools
from spade_memory.testing import MemoryServiceProcess, free_port
from tests.support.command_line import hidden as hidden_modules
from tests.support.harness import ClientAgent, unique_jid
from tests.support.mcp_clients import (
    PASSWORD,
    TOKEN,
    McpHttpProcess,
    Mode,
    Updates,
    call,
    over_http,
    said,
    server_command,
    subscribe,
)

MODES: list[Mode] = ["legacy", "auto"]


@pytest.fixture(scope="module")
def mcp_http(memory_service: MemoryServiceProcess) -> Iterator[McpHttpProcess]:
    server = McpHttpProcess(memory_service.port, unique_jid("mcp-http"))
    server.start(timeout=120)
    yield server
    server.stop()


@pytest.mark.parametrize("mode", MODES)
async def test_store_through_mcp_and_find_it_from_a_spade_agent(
    mcp_http: McpHttpProcess, alice: ClientAgent, mode: Mode
) -> None:
    space = f"http-team-{mode}"
    await alice.memory.create_space(space)
    await alice.memory.grant(space, mcp_http.jid, "writer")
    async with over_http(mcp_http.url, TOKEN, mode) as mcp:
        listed = (await mcp.list_tools()).tools
        assert [(tool.name, tool.input_schema) for tool in listed] == [
            (tool.name, tool.parameters) for tool in memory_tools(extended=True)
        ]
        stored = await call(mcp, "store_memory", category="fact", content="Builds run on the"
                            " arm64 runners since March", space=space)  # fmt: skip
        assert not stored.is_error, said(stored)
        found = await alice.memory.search_memories("arm64 runners", space=space)
        assert [m.author for m in found] == [mcp_http.jid]
        theirs = await alice.memory.store_memory("fact", "Releases are tagged vX.Y.Z",
                                                 space=space)  # fmt: skip
        got = await call(mcp, "get_memory", id=theirs, space=space)
        assert "Releases are tagged vX.Y.Z" in said(got)


async def test_two_sessions_hear_an_agents_store(
    mcp_http: McpHttpProcess, alice: ClientAgent
) -> None:
    """Each HTTP session subscribed to a space's resource hears a SPADE agent's store."""
    space = "http-watched"
    await alice.memory.create_space(space)
    await alice.memory.grant(space, mcp_http.jid, "reader")
    uri = f"memory://spaces/{space}/recent"
    first, second = Updates(), Updates()
    async with (
        over_http(mcp_http.url, TOKEN, "legacy", first) as one,
        over_http(mcp_http.url, TOKEN, "legacy", second) as two,
    ):
        await subscribe(one, uri)
        await subscribe(two, uri)
        await alice.memory.store_memory("fact", "The on-call rota changes on Mondays", space=space)
        await first.wait_for(uri)
        await second.wait_for(uri)


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", f"Basic {TOKEN}"])
async def test_http_without_the_token_is_refused(
    mcp_http: McpHttpProcess, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    async with httpx2.AsyncClient(headers=headers) as http:
        raw = await http.post(mcp_http.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert raw.status_code == 401
    assert raw.json()["error"]["message"] == "Unauthorized: a bearer token is required"
    token = authorization.split()[-1] if authorization else None
    if authorization and authorization.startswith("Basic"):
        return  # the SDK's client sends its token as Bearer
    with pytest.raises(BaseException) as refused:
        async with over_http(mcp_http.url, token) as mcp:
            await mcp.list_tools()
    assert any(
        isinstance(leaf, MCPError) and "Unauthorized" in leaf.message
        for leaf in _leaves(refused.value)
    ), refused.value


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    inner = getattr(error, "exceptions", None)
    return [error] if inner is None else [leaf for each in inner for leaf in _leaves(each)]


async def test_the_bearer_scheme_is_case_insensitive(mcp_http: McpHttpProcess) -> None:
    headers = {"Authorization": f"bearer {TOKEN}", **ACCEPT}
    async with httpx2.AsyncClient(headers=headers) as http:
        opened = await http.post(mcp_http.url, json=INITIALIZE)
    assert opened.status_code == 200 and opened.headers["mcp-session-id"]


def refused_start(*options: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    """``spade-memory mcp`` with ``options`` (and ``token``), expected to refuse to start."""
    environment = {k: v for k, v in os.environ.items() if k != "SPADE_MEMORY_MCP_TOKEN"}
    if token is not None:
        environment["SPADE_MEMORY_MCP_TOKEN"] = token
    return subprocess.run(
        [*server_command(free_port(), "a@localhost", *options)],
        capture_output=True, text=True, timeout=60,
        env={**environment, "SPADE_MEMORY_AGENT_PASSWORD": PASSWORD},
    )  # fmt: skip


def test_another_address_without_a_token_does_not_start() -> None:
    done = refused_start("--http", "0.0.0.0:8765")
    assert (done.returncode, done.stderr) == (2, (
        "spade-memory mcp: --http 0.0.0.0:8765 is reachable from other machines: set"
        " SPADE_MEMORY_MCP_TOKEN (or --token-file) to the bearer token its clients must send\n"
    ))  # fmt: skip
    done = refused_start("--http", "127.0.0.2:8765")  # on this machine, beyond the SDK's check
    assert (done.returncode, done.stderr) == (2, (
        "spade-memory mcp: --http 127.0.0.2:8765 is not 127.0.0.1 or ::1, the addresses served"
        " without a token: set SPADE_MEMORY_MCP_TOKEN (or --token-file) to the bearer token"
        " its clients must send\n"
    ))  # fmt: skip


def test_every_address_needs_the_names_clients_use() -> None:
    done = refused_start("--http", "0.0.0.0:8765", token=TOKEN)
    assert (done.returncode, done.stderr) == (2, (
        "spade-memory mcp: --http 0.0.0.0:8765 listens on every address: name the host its"
        " clients reach it by with --allowed-host NAME[:PORT] (requests for any other Host are"
        " refused)\n"
    ))  # fmt: skip


@pytest.fixture(scope="module")
def guarded_http(memory_service: MemoryServiceProcess) -> Iterator[McpHttpProcess]:
    """On 127.0.0.2, which the SDK's own Host check leaves out, with two sessions at most
    and one more name clients may use."""
    server = McpHttpProcess(
        memory_service.port, unique_jid("mcp-guarded"), "--max-sessions", "2",
        "--allowed-host", "memory.example.org", host="127.0.0.2",
    )  # fmt: skip
    server.start(timeout=120)
    yield server
    server.stop()


ACCEPT = {"Accept": "application/json, text/event-stream"}


async def end_session(http: httpx2.AsyncClient, url: str, opened: httpx2.Response) -> int:
    """End the session ``opened`` opened; returns the answer's status."""
    ended = await http.delete(url, headers={"mcp-session-id": opened.headers["mcp-session-id"]})
    return ended.status_code


async def test_a_foreign_host_or_origin_is_refused_on_any_address(
    guarded_http: McpHttpProcess,
) -> None:
    """A page whose DNS name was pointed here (DNS rebinding) sends its own Host and
    Origin: refused, token or not; the address itself and the names given are served."""
    own = f"127.0.0.2:{guarded_http.http_port}"
    headers = {"Authorization": f"Bearer {TOKEN}", **ACCEPT}
    async with httpx2.AsyncClient(headers=headers) as http:
        foreign_host = await http.post(
            guarded_http.url, json=INITIALIZE, headers={"Host": "attacker.example"}
        )
        foreign_origin = await http.post(
            guarded_http.url, json=INITIALIZE,
            headers={"Host": own, "Origin": "http://attacker.example"},
        )  # fmt: skip
        named = await http.post(
            guarded_http.url, json=INITIALIZE,
            headers={"Host": "memory.example.org", "Origin": "https://memory.example.org"},
        )  # fmt: skip
        await end_session(http, guarded_http.url, named)
    assert (foreign_host.status_code, foreign_host.text) == (421, "Invalid Host header")
    assert (foreign_origin.status_code, foreign_origin.text) == (403, "Invalid Origin header")
    assert named.status_code == 200


async def test_open_sessions_are_bounded(guarded_http: McpHttpProcess) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", **ACCEPT}
    async with httpx2.AsyncClient(headers=headers) as http:
        opened = [await http.post(guarded_http.url, json=INITIALIZE) for _ in range(3)]
        assert [answer.status_code for answer in opened] == [200, 200, 503]
        assert await end_session(http, guarded_http.url, opened[0]) == 200
        again = await http.post(guarded_http.url, json=INITIALIZE)  # room again
        assert again.status_code == 200
        for answer in (opened[1], again):
            await end_session(http, guarded_http.url, answer)


def test_a_busy_port_is_one_line(mcp_http: McpHttpProcess) -> None:
    done = subprocess.run(
        server_command(free_port(), "a@localhost", "--http", f"127.0.0.1:{mcp_http.http_port}"),
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "SPADE_MEMORY_AGENT_PASSWORD": PASSWORD},
    )  # fmt: skip
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"spade-memory mcp: cannot listen at 127.0.0.1:{mcp_http.http_port}")


async def test_sigint_logs_out_and_exits_0(memory_service: MemoryServiceProcess) -> None:
    server = McpHttpProcess(memory_service.port, unique_jid("mcp-stop"))
    server.start(timeout=120)
    async with over_http(server.url, TOKEN) as mcp:  # logged in: it has something to stop
        assert not (await call(mcp, "list_spaces")).is_error
    process = server.process
    assert process is not None
    server.stop(timeout=30)
    assert process.returncode == 0, "".join(server.output)
    assert "Traceback" not in "".join(server.output)


def test_the_stdio_server_ends_with_its_input() -> None:
    """A client closing stdin ends the server at once with status 0 (nothing to log out)."""
    done = subprocess.run(
        [sys.executable, "-m", "spade_memory", "mcp", "--jid", "a@localhost",
         "--port", str(free_port())],
        input="", capture_output=True, text=True, timeout=60,
        env={**os.environ, "SPADE_MEMORY_AGENT_PASSWORD": PASSWORD},
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_without_the_mcp_extra_it_says_what_to_install(tmp_path: Path) -> None:
    environment = {**os.environ, **hidden_modules(tmp_path, ("mcp", "uvicorn"))}
    done = subprocess.run(
        server_command(free_port(), "a@localhost"), capture_output=True, text=True, timeout=60,
        env={**environment, "SPADE_MEMORY_AGENT_PASSWORD": PASSWORD},
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (
        2, "spade-memory mcp needs the MCP SDK: pip install 'spade-memory[mcp]'\n",
    )  # fmt: skip


def test_sigint_stops_the_stdio_server(memory_service: MemoryServiceProcess) -> None:
    """A desktop client's Ctrl-C (or its SIGINT to the child) ends a serving stdio server
    with status 0, logged out: the reader of stdin would otherwise wait for its end."""
    server = subprocess.Popen(
        server_command(memory_service.port, unique_jid("mcp-stdio")),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "SPADE_MEMORY_AGENT_PASSWORD": PASSWORD},
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    try:
        for message in INITIALIZE, INITIALIZED, CALL_LIST_SPACES:  # serving, logged in
            server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()
            if "id" in message:
                ready, _, _ = select.select([server.stdout], [], [], 120)
                assert ready, "no answer within 120 s"
                assert json.loads(server.stdout.readline())["id"] == message["id"]
        server.send_signal(signal.SIGINT)
        status = server.wait(timeout=30)
    finally:
        server.kill()
        errors = server.communicate()[1]
    assert (status, errors) == (0, "")


INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "test", "version": "1"}},
}  # fmt: skip
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CALL_LIST_SPACES = {
    "jsonrpc": "2.0", "id": 2, "method": "tools/call",
    "params": {"name": "list_spaces", "arguments": {}},
}  # fmt: skip

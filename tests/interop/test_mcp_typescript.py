"""The MCP TypeScript SDK's client (``@modelcontextprotocol/sdk`` from npm: the MCP
Inspector's and most desktop assistants') against ``spade-memory mcp`` over stdio and
streamable HTTP (``js/mcp_client.mjs``). That SDK checks a result's structured content
against the tool's output schema, errors included, and threw on every tool error before
the output schemas admitted the typed failure; a ``limit`` past the schema's maximum was
served (issue 77)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from spade_memory.testing import MemoryServiceProcess
from tests.support.harness import unique_jid
from tests.support.mcp_clients import PASSWORD, TOKEN, McpHttpProcess
from tests.support.paths import ROOT

CLIENT = ROOT / "tests" / "interop" / "js"
INSTALL = "`npm ci --prefix tests/interop/js`"


def run_client(*arguments: str) -> dict[str, Any]:
    """What ``mcp_client.mjs`` reports; skips without Node.js and the SDK."""
    if (
        shutil.which("node") is None
        or not (CLIENT / "node_modules" / "@modelcontextprotocol").is_dir()
    ):
        pytest.skip(f"the MCP TypeScript SDK is not installed: {INSTALL} (with Node.js; CI does)")
    done = subprocess.run(
        ["node", str(CLIENT / "mcp_client.mjs"), *arguments], capture_output=True, text=True,
        env={**os.environ, "SPADE_MEMORY_AGENT_PASSWORD": PASSWORD}, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return report


def check(report: dict[str, Any]) -> None:
    """Every call answered (none threw in the SDK), the errors typed, the bound kept."""
    assert {"store_memory", "search_memories", "list_memories"} <= set(report["tools"])
    assert [call.get("threw") for call in report["calls"]] == [None] * len(report["calls"])
    stored, found, too_many, wrong_category, missing, listed = report["calls"]
    assert not stored["isError"] and stored["structured"]["id"]
    assert [m["id"] for m in found["structured"]["memories"]] == [stored["structured"]["id"]]
    for error, condition in ((too_many, "bad-request"), (wrong_category, "bad-request"),
                             (missing, "item-not-found")):  # fmt: skip
        assert error["isError"] and error["structured"]["condition"] == condition, error
    assert "greater than the maximum of 20" in too_many["text"]
    assert [m["content"] for m in listed["structured"]["memories"]] == [
        "typescript clients are served"
    ]


def test_the_typescript_sdk_over_stdio(memory_service: MemoryServiceProcess) -> None:
    check(run_client("stdio", sys.executable, str(memory_service.port), unique_jid("mcp-ts")))


@pytest.fixture
def mcp_http(memory_service: MemoryServiceProcess) -> Iterator[McpHttpProcess]:
    server = McpHttpProcess(memory_service.port, unique_jid("mcp-ts-http"))
    server.start(timeout=120)
    yield server
    server.stop()


def test_the_typescript_sdk_over_http(mcp_http: McpHttpProcess) -> None:
    check(run_client("http", mcp_http.url, TOKEN))

"""`spade-memory memories …` and `spade-memory forget`, run as a user would against
`spade-memory run` (each command its own process, logged in as the agent it acts for)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spade_memory.lifecycle import stop_agent
from spade_memory.testing import MemoryServiceProcess

from .harness import ClientAgent, start, unique_jid

PASSWORD = "shell-secret"


@pytest.fixture
def me(memory_service: MemoryServiceProcess) -> Iterator[str]:
    """A new agent's JID (its account is made at its first login, on the embedded server)."""
    yield unique_jid("shell")


def shell(
    service: MemoryServiceProcess, jid: str, *args: str, stdin: str | None = None,
    password: str = PASSWORD,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = {**os.environ, "SPADE_MEMORY_AGENT_PASSWORD": password, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "spade_memory", *args, "--jid", jid,
         "--port", str(service.port)],
        input=stdin, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def answer(service: MemoryServiceProcess, jid: str, *args: str, stdin: str | None = None) -> Any:
    """The JSON a command prints with --json."""
    return json.loads(ok(shell(service, jid, *args, "--json", stdin=stdin)))


def jsonl(*memories: dict[str, object]) -> str:
    return "".join(json.dumps(memory) + "\n" for memory in memories)


MEMORIES = [
    {"category": "fact", "content": "The staging API is at /api/v2", "context": "ops"},
    {"category": "preference", "content": "Prefers short answers", "confidence": 0.6},
    {"category": "pattern", "content": "Deploys happen on Tuesdays", "tags": ["ops"],
     "metadata": {"team": "core"}, "source": "see OPS-12"},
]  # fmt: skip


def test_import_list_search_show_update_delete_stats(
    memory_service: MemoryServiceProcess, me: str
) -> None:
    imported = answer(memory_service, me, "memories", "import", "-", stdin=jsonl(*MEMORIES))
    assert imported == {"imported": 3, "already_there": 0}
    again = answer(memory_service, me, "memories", "import", "-", stdin=jsonl(*MEMORIES))
    assert again == {"imported": 0, "already_there": 3}

    table = ok(shell(memory_service, me, "memories", "list"))
    assert "The staging API is at /api/v2" in table and "Deploys happen on Tuesdays" in table
    first = answer(memory_service, me, "memories", "list", "--limit", "2")
    assert len(first["memories"]) == 2 and first["next_offset"] == 2
    rest = answer(memory_service, me, "memories", "list", "--limit", "2", "--offset", "2")
    assert len(rest["memories"]) == 1 and rest["next_offset"] is None
    ids = {m["id"] for m in first["memories"] + rest["memories"]}
    assert len(ids) == 3

    found = answer(memory_service, me, "memories", "search", "staging API")
    staging = found["memories"][0]
    assert staging["content"] == "The staging API is at /api/v2"
    assert staging["owner"] == me  # who logged in, as XMPP authenticated it

    shown = ok(shell(memory_service, me, "memories", "show", staging["id"]))
    assert staging["id"] in shown and "ops" in shown
    new = "The staging API is at /api/v3"
    updated = answer(memory_service, me, "memories", "update", staging["id"], "--content", new)
    assert updated["content"] == "The staging API is at /api/v3"

    assert ok(shell(memory_service, me, "memories", "delete", staging["id"])).strip() == (
        f"deleted {staging['id']}"
    )
    missing = shell(memory_service, me, "memories", "show", staging["id"])
    assert missing.returncode == 1
    assert missing.stderr == f"spade-memory: item-not-found: no memory '{staging['id']}'\n"

    stats = answer(memory_service, me, "memories", "stats")
    assert stats["total_memories"] == 2
    assert stats["category_counts"] == {"pattern": 1, "preference": 1}


async def test_export_forget_import_gives_back_the_same_memories(
    memory_service: MemoryServiceProcess, me: str, tmp_path: Path
) -> None:
    ok(shell(memory_service, me, "memories", "import", "-", stdin=jsonl(*MEMORIES)))
    agent = ClientAgent(me, PASSWORD, port=memory_service.port)  # notes, a session, a file
    await start(agent)
    try:
        await agent.memory.add_information("c1", "asked about the staging API")
        await agent.memory.session("s1").create()
        await agent.memory.save_preferences("user-1", {"tone": "short"})
    finally:
        await stop_agent(agent)
    export = tmp_path / "memories.jsonl"
    ok(shell(memory_service, me, "memories", "export", str(export)))
    exported = [json.loads(line) for line in export.read_text().splitlines()]
    assert len(exported) == 3
    assert [m["work_items"] for m in exported if m.get("tags")] == [["OPS-12"]]

    refused = shell(memory_service, me, "forget")  # no terminal: nothing without --yes
    assert refused.returncode == 1
    assert refused.stderr == (
        "spade-memory: forget would delete 3 memories, 1 notes of 1 conversations,"
        f" 1 working-memory sessions and 1 context files of {me}; add --yes to do it\n"
    )
    forgotten = answer(memory_service, me, "forget", "--yes")
    assert forgotten == {"memories": 3, "notes": 1, "conversations": 1, "sessions": 1, "files": 1}
    assert (
        json.loads(ok(shell(memory_service, me, "memories", "stats", "--json")))["total_memories"]
        == 0
    )
    assert json.loads(ok(shell(memory_service, me, "forget", "--yes", "--json")))["notes"] == 0

    ok(shell(memory_service, me, "memories", "import", str(export)))
    again = tmp_path / "again.jsonl"
    ok(shell(memory_service, me, "memories", "export", str(again)))
    kept = ("category", "content", "context", "confidence", "owner", "tags", "metadata",
            "source", "work_items")  # fmt: skip

    def same(lines: list[dict[str, object]]) -> list[tuple[object, ...]]:
        return sorted(tuple(json.dumps(memory.get(key)) for key in kept) for memory in lines)

    restored = [json.loads(line) for line in again.read_text().splitlines()]
    assert same(restored) == same(exported)


def test_mistakes_are_one_sentence(memory_service: MemoryServiceProcess, me: str) -> None:
    ok(shell(memory_service, me, "memories", "stats"))  # makes the account
    cases = [
        (shell(memory_service, me, "memories", "stats", password="wrong"),
         f"refused the password of {me}; set SPADE_MEMORY_AGENT_PASSWORD to its password"),
        (shell(memory_service, me, "memories", "import", "-", stdin="not json\n"),
         "-, line 1: not a memory"),
        (shell(memory_service, me, "memories", "import", "/nonexistent/file.jsonl"),
         "cannot open /nonexistent/file.jsonl: No such file or directory"),
        (shell(memory_service, me, "memories", "update", "some-id"),
         "say what to change: --content, --category, --context or --confidence"),
    ]  # fmt: skip
    for result, sentence in cases:
        assert result.returncode == 1
        assert sentence in result.stderr
        assert len(result.stderr.splitlines()) == 1, result.stderr
    no_jid = subprocess.run(
        [sys.executable, "-m", "spade_memory", "memories", "stats"], capture_output=True,
        text=True, timeout=60, env={k: v for k, v in os.environ.items() if k != "SPADE_MEMORY_JID"},
    )  # fmt: skip
    assert no_jid.returncode == 1
    assert "say which agent to act as: --jid name@domain, or set SPADE_MEMORY_JID" in no_jid.stderr

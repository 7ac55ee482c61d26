"""`spade-memory memories …` and `spade-memory forget`, run as a user would against
`spade-memory run`, logged in as the agent each acts for: through the command's entry
point in this process (``support.command_line``), and in processes of their own."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.command_line import SHELL_PASSWORD as PASSWORD
from tests.support.command_line import answer, loaded_by, ok, shell
from tests.support.harness import ClientAgent, send_raw, start


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
    imported = answer(memory_service.port, me, "memories", "import", "-", stdin=jsonl(*MEMORIES))
    assert imported == {"imported": 3, "already_there": 0}
    again = answer(memory_service.port, me, "memories", "import", "-", stdin=jsonl(*MEMORIES))
    assert again == {"imported": 0, "already_there": 3}

    table = ok(shell(memory_service.port, me, "memories", "list"))
    assert "The staging API is at /api/v2" in table and "Deploys happen on Tuesdays" in table
    first = answer(memory_service.port, me, "memories", "list", "--limit", "2")
    assert len(first["memories"]) == 2 and first["next_offset"] == 2
    rest = answer(memory_service.port, me, "memories", "list", "--limit", "2", "--offset", "2")
    assert len(rest["memories"]) == 1 and rest["next_offset"] is None
    ids = {m["id"] for m in first["memories"] + rest["memories"]}
    assert len(ids) == 3

    found = answer(memory_service.port, me, "memories", "search", "staging API")
    staging = found["memories"][0]
    assert staging["content"] == "The staging API is at /api/v2"
    assert staging["owner"] == me  # who logged in, as XMPP authenticated it

    shown = ok(shell(memory_service.port, me, "memories", "show", staging["id"]))
    assert staging["id"] in shown and "ops" in shown
    new = "The staging API is at /api/v3"
    updated = answer(memory_service.port, me, "memories", "update", staging["id"], "--content", new)
    assert updated["content"] == "The staging API is at /api/v3"

    assert ok(shell(memory_service.port, me, "memories", "delete", staging["id"])).strip() == (
        f"deleted {staging['id']}"
    )
    missing = shell(memory_service.port, me, "memories", "show", staging["id"])
    assert missing.returncode == 1
    assert missing.stderr == f"spade-memory: item-not-found: no memory '{staging['id']}'\n"

    stats = answer(memory_service.port, me, "memories", "stats")
    assert stats["total_memories"] == 2
    assert stats["category_counts"] == {"pattern": 1, "preference": 1}


async def test_export_forget_import_gives_back_the_same_memories(
    memory_service: MemoryServiceProcess, me: str, tmp_path: Path
) -> None:
    ok(shell(memory_service.port, me, "memories", "import", "-", stdin=jsonl(*MEMORIES)))
    agent = ClientAgent(me, PASSWORD, port=memory_service.port)  # notes, a session, a file
    await start(agent)
    try:
        await agent.memory.add_information("c1", "asked about the staging API")
        await agent.memory.session("s1").create()
        await agent.memory.save_preferences("user-1", {"tone": "short"})
    finally:
        await stop_agent(agent)
    export = tmp_path / "memories.jsonl"
    ok(shell(memory_service.port, me, "memories", "export", str(export)))
    exported = [json.loads(line) for line in export.read_text().splitlines()]
    assert len(exported) == 3
    assert [m["work_items"] for m in exported if m.get("tags")] == [["OPS-12"]]

    refused = shell(memory_service.port, me, "forget")  # no terminal: nothing without --yes
    assert refused.returncode == 1
    assert re.fullmatch(
        "spade-memory: forget would delete 3 memories, 1 notes of 1 conversations,"
        " 1 working-memory sessions, 1 context files, [0-3] beads issues and [0-9]+ replies"
        f" kept for retries of {re.escape(me)}; add --yes to do it\n",
        refused.stderr,
    ), refused.stderr  # the beads issues: those the mirror wrote by now
    forgotten = answer(memory_service.port, me, "forget", "--yes")
    kept = {"memories": 3, "notes": 1, "conversations": 1, "sessions": 1, "files": 1}
    assert {key: forgotten[key] for key in kept} == kept
    assert (
        json.loads(ok(shell(memory_service.port, me, "memories", "stats", "--json")))[
            "total_memories"
        ]
        == 0
    )
    assert json.loads(ok(shell(memory_service.port, me, "forget", "--yes", "--json")))["notes"] == 0

    ok(shell(memory_service.port, me, "memories", "import", str(export)))
    again = tmp_path / "again.jsonl"
    ok(shell(memory_service.port, me, "memories", "export", str(again)))
    kept = ("category", "content", "context", "confidence", "owner", "tags", "metadata",
            "source", "work_items")  # fmt: skip

    def same(lines: list[dict[str, object]]) -> list[tuple[object, ...]]:
        return sorted(tuple(json.dumps(memory.get(key)) for key in kept) for memory in lines)

    restored = [json.loads(line) for line in again.read_text().splitlines()]
    assert same(restored) == same(exported)


async def until(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Return once ``check()`` holds (the mirror writes after its debounce)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, f"{what} did not happen"
        await asyncio.sleep(0.2)


def ledger_rows(path: Path, table: str, owner: str) -> list[str]:
    """The results a store's ledger of applied request ids keeps for ``owner``."""
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute(f"SELECT result FROM {table} WHERE owner = ?", (owner,)).fetchall()
    return [str(row[0]) for row in rows]


async def test_forget_leaves_no_text_in_beads_ledgers_or_retries(
    memory_service: MemoryServiceProcess, me: str
) -> None:
    """After ``forget`` nothing of the agent's text is left at the service: its beads
    memories (mirrored and its own) are redacted in the beads file, the stores' ledgers
    keep no answer for it, and a retried request id is served again, not answered from
    what the agent kept in memory."""
    data = memory_service.data_dir
    beads_file = data / "beads" / ".beads" / "issues.jsonl"
    memories = [{**memory, "content": f"{memory['content']} ({me})"} for memory in MEMORIES]
    contents = [str(memory["content"]) for memory in memories]  # this test's own texts
    ok(shell(memory_service.port, me, "memories", "import", "-", stdin=jsonl(*memories)))
    agent = ClientAgent(me, PASSWORD, port=memory_service.port)
    await start(agent)
    try:
        memory = agent.memory
        (first,) = [m for m in await memory.get_recent_memories() if m.content == contents[0]]
        revised = f"The staging API moved to /api/v3 ({me})"
        assert await memory.update_memory(first.id, content=revised)
        contents[0] = revised
        await memory.add_information("c1", f"the staging password of {me} is hunter2")
        bead = await memory.beads.store_memory(f"Bead of my own: {me}'s deploy key is in vault")
        assert bead is not None
        retried = json.dumps({"op": "get_memory", "id": first.id})
        before = await send_raw(memory, memory.base_memory_jid, retried, thread="retry-me")
        assert revised in (before.body or "")
        await until(lambda: all(text in beads_file.read_text() for text in contents), "mirror")
        assert any(revised in row for row in ledger_rows(data / "base-memory.db",
                                                         "applied_requests", me))  # fmt: skip
        assert ledger_rows(data / "interaction-memory.db", "interaction_requests", me)
    finally:
        await stop_agent(agent)

    forgotten = answer(memory_service.port, me, "forget", "--yes")
    assert forgotten["memories"] == 3 and forgotten["notes"] == 1
    assert forgotten["beads_issues"] == 4  # three mirrored, one its own
    assert forgotten["replies"] >= 3  # the import's stores, the update, the note, the reads

    text = beads_file.read_text()
    for secret in (*contents, f"{me}'s deploy key", f"{me} is hunter2"):
        assert secret not in text, secret
    issues = [json.loads(line) for line in text.splitlines()]
    mine = [issue for issue in issues if f"agent:{me}" in issue.get("labels", [])]
    assert len(mine) == 4 and bead.id in {issue["id"] for issue in mine}  # ids kept
    assert {(issue["status"], issue["title"], issue["close_reason"]) for issue in mine} == {
        ("closed", "forgotten memory", "forgotten")
    }
    assert ledger_rows(data / "base-memory.db", "applied_requests", me) == []
    assert ledger_rows(data / "interaction-memory.db", "interaction_requests", me) == []
    agent = ClientAgent(me, PASSWORD, port=memory_service.port)
    await start(agent)
    try:
        memory = agent.memory
        again = await send_raw(memory, memory.base_memory_jid, retried, thread="retry-me")
        assert revised not in (again.body or "")
        assert json.loads(again.body or "{}").get("condition") == "item-not-found"
    finally:
        await stop_agent(agent)
    twice = answer(memory_service.port, me, "forget", "--yes")
    assert (twice["memories"], twice["beads_issues"], twice["notes"]) == (0, 0, 0)


def test_mistakes_are_one_sentence(memory_service: MemoryServiceProcess, me: str) -> None:
    ok(shell(memory_service.port, me, "memories", "stats"))  # makes the account
    cases = [
        (shell(memory_service.port, me, "memories", "stats", password="wrong"),
         f"refused the password of {me}"),
        (shell(memory_service.port, me, "memories", "import", "-", stdin="not json\n"),
         "-, line 1: not JSON"),
        (shell(memory_service.port, me, "memories", "import", "/nonexistent/file.jsonl"),
         "cannot open /nonexistent/file.jsonl: No such file or directory"),
        (shell(memory_service.port, me, "memories", "update", "some-id"),
         "say what to change: --content, --category, --context or --confidence"),
    ]  # fmt: skip
    assert cases[0][0].stderr.endswith("; set SPADE_MEMORY_AGENT_PASSWORD to its password\n")
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


def test_a_verb_logs_in_without_spade(memory_service: MemoryServiceProcess, me: str) -> None:
    """A verb in a fresh interpreter answers, having loaded neither SPADE nor its server's
    libraries (a second of imports before anything happens): its login is slixmpp's."""
    ok(shell(memory_service.port, me, "memories", "stats"))  # makes the account
    argv = ["memories", "stats", "--json", "--jid", me, "--port", str(memory_service.port)]
    loaded = loaded_by(
        "import contextlib, io, json, os\n"
        f"os.environ['SPADE_MEMORY_AGENT_PASSWORD'] = {PASSWORD!r}\n"
        "from spade_memory.server.entry import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    status = main({argv!r})\n"
        "assert status == 0, status\n"
        "assert json.loads(out.getvalue())['total_memories'] >= 0, out.getvalue()"
    )
    assert "slixmpp" in loaded
    assert [m for m in loaded if m.split(".")[0] in ("spade", "pyjabber", "aiohttp")] == []

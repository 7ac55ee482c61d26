"""The data shell as an operator's tool, run as a user would against `spade-memory run`
(through the command's entry point, logged in as the agent it acts for; the progress
bar in a terminal, by a process of its own): its reads do not count as the agent's use,
its tables fit 80 columns with short ids that the other verbs take, and it adds
memories, forgets, and manages spaces."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.command_line import Ran, ok
from tests.support.command_line import shell as shell_as
from tests.support.harness import ClientAgent, start, unique_jid

PASSWORD = "operator-secret"
STAGING = "The staging API is at /api/v2 and answers within two hundred milliseconds"
MEMORIES = [
    {"category": "fact", "content": STAGING, "context": "ops"},
    {"category": "preference", "content": "Prefers short answers", "confidence": 0.6},
    {"category": "pattern", "content": "Deploys happen on Tuesdays after the standup"},
]


@pytest.fixture
def me(memory_service: MemoryServiceProcess) -> Iterator[str]:
    """A new agent's JID, with the three memories imported (its account is made at its
    first login, on the embedded server)."""
    jid = unique_jid("operator")
    stdin = "".join(json.dumps(memory) + "\n" for memory in MEMORIES)
    ok(shell(memory_service, jid, "memories", "import", "-", stdin=stdin))
    yield jid


def shell(service: MemoryServiceProcess, jid: str, *args: str, stdin: str | None = None) -> Ran:
    """``spade-memory ARGS`` as ``jid`` in this process, its tables 80 columns wide."""
    return shell_as(service.port, jid, *args, stdin=stdin, password=PASSWORD, columns=80)


def one_line_failure(result: Ran) -> str:
    assert result.returncode == 1, result.stdout
    assert len(result.stderr.splitlines()) == 1, result.stderr
    return result.stderr


def answer(service: MemoryServiceProcess, jid: str, *args: str) -> Any:
    return json.loads(ok(shell(service, jid, *args, "--json")))


def counts(service: MemoryServiceProcess, jid: str) -> dict[str, int]:
    """Each memory's access count, as the shell reads it (which does not count)."""
    listed = answer(service, jid, "memories", "list")["memories"]
    return {memory["content"]: memory["access_count"] for memory in listed}


async def test_the_shells_reads_leave_access_counts_as_they_were(
    memory_service: MemoryServiceProcess, me: str
) -> None:
    before = counts(memory_service, me)
    assert set(before) == {memory["content"] for memory in MEMORIES}
    staging = answer(memory_service, me, "memories", "search", "staging API")["memories"][0]
    ok(shell(memory_service, me, "memories", "list"))
    ok(shell(memory_service, me, "memories", "list", "--category", "fact"))
    ok(shell(memory_service, me, "memories", "search", "staging"))
    ok(shell(memory_service, me, "memories", "show", staging["id"][-8:]))
    shown = answer(memory_service, me, "memories", "show", staging["id"])
    assert shown["access_count"] == before[STAGING]
    assert counts(memory_service, me) == before  # an operator's look is not a use

    agent = ClientAgent(me, PASSWORD, port=memory_service.port)  # an agent's read counts
    await start(agent)
    try:
        read = await agent.memory.get_recent_memories(10)
        assert {m.content: m.access_count for m in read} == {k: v + 1 for k, v in before.items()}
        found = await agent.memory.search_memories("staging API")
        assert found[0].access_count == before[STAGING] + 2
    finally:
        await stop_agent(agent)
    after = counts(memory_service, me)
    assert after == {k: v + (2 if k == STAGING else 1) for k, v in before.items()}


def test_tables_fit_80_columns_with_short_ids_that_show_takes(
    memory_service: MemoryServiceProcess, me: str
) -> None:
    ids = {
        m["content"]: m["id"] for m in answer(memory_service, me, "memories", "list")["memories"]
    }
    table = ok(shell(memory_service, me, "memories", "list"))
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= 80, table
    assert not any(ids[STAGING] in line for line in lines)  # short ids, not 36 characters
    (row,) = [line for line in lines if ids[STAGING][-8:] in line]
    assert "The staging API is at /api/v2" in row, table  # content wins the width
    assert len([line for line in lines if line.strip()]) <= 3 + 2 * len(MEMORIES), table

    shown = ok(shell(memory_service, me, "memories", "show", ids[STAGING][-8:]))
    assert ids[STAGING] in shown and "ops" in shown
    found = ok(shell(memory_service, me, "memories", "search", "staging API"))
    assert "score" in found.splitlines()[0] and ids[STAGING][-8:] in found
    everywhere = ok(shell(memory_service, me, "memories", "list", "--space", "*"))
    assert "space" in everywhere.splitlines()[0] and "personal" in everywhere
    start_of_id = ok(
        shell(memory_service, me, "memories", "show", ids[STAGING][:30], "--space", "*")
    )
    assert ids[STAGING] in start_of_id


def test_a_short_id_names_one_memory_or_says_which(
    memory_service: MemoryServiceProcess, me: str
) -> None:
    ids = [m["id"] for m in answer(memory_service, me, "memories", "list")["memories"]]
    shared = next(i for i, chars in enumerate(zip(*ids, strict=False)) if len(set(chars)) > 1)
    common = ids[0][:shared]  # UUIDv7s made together share their start
    assert common
    ambiguous = one_line_failure(shell(memory_service, me, "memories", "show", common))
    assert f"{common!r} names 3 memories (" in ambiguous and "give more of the id" in ambiguous
    assert all(full in ambiguous for full in ids)
    missing = one_line_failure(shell(memory_service, me, "memories", "delete", "zzzzzzzz"))
    assert "no memory of your memories has an id starting or ending with 'zzzzzzzz'" in missing

    updated = answer(memory_service, me, "memories", "update", ids[0][-8:], "--confidence", "0.5")
    assert (updated["id"], updated["confidence"]) == (ids[0], 0.5)
    deleted = ok(shell(memory_service, me, "memories", "delete", ids[0][:30]))
    assert deleted.strip() == f"deleted {ids[0]}"
    assert len(answer(memory_service, me, "memories", "list")["memories"]) == 2


def test_memories_add_and_forget(memory_service: MemoryServiceProcess, me: str) -> None:
    added = ok(shell(memory_service, me, "memories", "add", "Backups run at 02:00", "--category",
                     "fact", "--tag", "ops"))  # fmt: skip
    assert added.startswith("stored: ") and added.strip().endswith(" fact"), added
    again = answer(memory_service, me, "memories", "add", "Backups run at 02:00", "--category",
                   "fact")  # fmt: skip
    assert again["deduplicated"] is True
    guessed = answer(memory_service, me, "memories", "add", "I can read PDF files")
    assert guessed["classified"] is True and guessed["category"] in (
        "fact", "pattern", "preference", "capability"
    )  # fmt: skip
    shown = answer(memory_service, me, "memories", "show", again["id"])
    assert shown["tags"] == ["ops"]
    wrong = one_line_failure(shell(memory_service, me, "memories", "add", "x", "--confidence", "2"))
    assert "confidence: input should be less than or equal to 1 (given 2.0)" in wrong

    refused = one_line_failure(shell(memory_service, me, "memories", "forget"))
    assert "forget would delete 5 memories" in refused and "add --yes to do it" in refused
    forgotten = answer(memory_service, me, "memories", "forget", "--yes")
    assert forgotten["memories"] == 5
    assert answer(memory_service, me, "memories", "stats")["total_memories"] == 0


def test_an_import_line_names_its_field_and_what_it_may_be(
    memory_service: MemoryServiceProcess,
) -> None:
    jid = unique_jid("importer")
    lines = [json.dumps(memory) for memory in MEMORIES[:2]]
    lines.append(json.dumps({"category": "fcat", "content": "a bad line"}))
    failed = one_line_failure(
        shell(memory_service, jid, "memories", "import", "-", stdin="\n".join(lines) + "\n")
    )
    assert failed == (
        "spade-memory: -, line 3: category: 'fcat' is not one of fact, pattern, preference,"
        " capability\n"
    )
    assert answer(memory_service, jid, "memories", "stats")["total_memories"] == 0  # none stored


def test_spaces_create_grant_list_info_revoke(memory_service: MemoryServiceProcess) -> None:
    owner, member = unique_jid("space-owner"), unique_jid("space-member")
    ok(shell(memory_service, member, "spaces", "list"))  # makes the member's account
    name = f"t-{uuid.uuid4().hex[:8]}"  # fits the space column
    created = answer(memory_service, owner, "spaces", "create", name, "--description", "ours")
    assert (created["name"], created["role"], created["description"]) == (name, "owner", "ours")
    ok(shell(memory_service, owner, "spaces", "grant", name, member, "writer"))
    info = ok(shell(memory_service, owner, "spaces", "info", name))
    assert member in info and "writer" in info
    listed = answer(memory_service, member, "spaces", "list")["spaces"]
    assert [(space["name"], space["role"]) for space in listed] == [(name, "writer")]
    ok(shell(memory_service, member, "memories", "add", "Shared fact", "--category", "fact",
             "--space", name))  # fmt: skip
    seen = ok(shell(memory_service, owner, "memories", "list", "--space", "*"))
    assert name in seen and "Shared fact" in seen
    revoked = answer(memory_service, owner, "spaces", "revoke", name, member)
    assert member not in {m["member"] for m in revoked["members"]}
    assert answer(memory_service, member, "spaces", "list")["spaces"] == []
    mistyped = shell(memory_service, owner, "spaces", "grant", name, member, "wrtier")
    assert mistyped.returncode == 2 and len(mistyped.stderr.splitlines()) == 1
    assert "unknown 'wrtier'; did you mean 'writer'?" in mistyped.stderr


def test_an_import_of_thousands_shows_its_progress_on_a_terminal(
    memory_service: MemoryServiceProcess, tmp_path: Path
) -> None:
    """2,500 lines, stderr a terminal (a pseudo-terminal here): a bar counts them; the
    result line on stdout is unchanged."""
    lines = tmp_path / "many.jsonl"
    lines.write_text(
        "".join(
            json.dumps({"category": "fact", "content": f"imported finding number {n}"}) + "\n"
            for n in range(2500)
        )
    )
    screen, terminal = pty.openpty()
    env = {**os.environ, "SPADE_MEMORY_AGENT_PASSWORD": PASSWORD, "COLUMNS": "80"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "spade_memory", "memories", "import", str(lines), "--json",
             "--jid", unique_jid("importer"), "--port", str(memory_service.port)],
            stdout=subprocess.PIPE, stderr=terminal, text=True, timeout=300, env=env,
        )  # fmt: skip
        os.close(terminal)
        drawn = b""
        while chunk := _read_some(screen):
            drawn += chunk
    finally:
        os.close(screen)
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"imported": 2500, "already_there": 0}
    assert b"importing" in drawn and b"2500/2500" in drawn


def _read_some(fd: int) -> bytes:
    """What a pseudo-terminal holds (b"" once its other end is closed and read out)."""
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the other end is closed
        return b""


def test_a_governed_spaces_proposals_from_the_shell(memory_service: MemoryServiceProcess) -> None:
    owner, member = unique_jid("rules-owner"), unique_jid("rules-member")
    ok(shell(memory_service, member, "spaces", "list"))  # makes the member's account
    name = f"g-{uuid.uuid4().hex[:8]}"
    created = answer(memory_service, owner, "spaces", "create", name, "--governed")
    assert created["governed"]
    ok(shell(memory_service, owner, "spaces", "grant", name, member, "writer"))
    listed = answer(memory_service, member, "spaces", "list")["spaces"]
    assert [(space["name"], space["governed"]) for space in listed] == [(name, True)]
    waiting = ok(shell(memory_service, member, "memories", "add", "Releases need two reviews",
                       "--category", "fact", "--space", name))  # fmt: skip
    assert "waits for an admin" in waiting  # filed as designed: status 0 (issue 79)
    said = answer(memory_service, member, "memories", "add", "Releases need no review",
                  "--category", "fact", "--space", name)  # fmt: skip
    assert said["state"] == "pending"
    proposals = answer(memory_service, owner, "spaces", "proposals", name)["proposals"]
    assert [p["id"] for p in proposals][1] == said["proposal"]
    assert proposals[0]["id"] in waiting
    assert [p["op"]["content"] for p in proposals] == [
        "Releases need two reviews", "Releases need no review"
    ]  # fmt: skip
    table = ok(shell(memory_service, owner, "spaces", "proposals", name))
    assert proposals[0]["id"] in table and proposals[1]["id"] in table  # whole, to copy
    approved = ok(shell(memory_service, owner, "spaces", "approve", name, proposals[0]["id"]))
    assert "approved (memory " in approved
    rejected = ok(shell(memory_service, owner, "spaces", "reject", name, proposals[1]["id"],
                        "--reason", "reviews stay"))  # fmt: skip
    assert "rejected: reviews stay" in rejected
    again = shell(memory_service, owner, "spaces", "approve", name, proposals[1]["id"])
    assert "conflict" in one_line_failure(again)
    seen = ok(shell(memory_service, owner, "memories", "list", "--space", name))
    assert "Releases need two reviews" in seen and "no review" not in seen
    assert "no, " not in ok(shell(memory_service, owner, "spaces", "info", name))
    stopped = answer(memory_service, owner, "spaces", "govern", name, "--off")
    assert not stopped["governed"]

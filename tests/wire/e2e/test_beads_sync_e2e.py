"""The beads sync agent end to end: agents in this process, memory agents in another.

Everything crosses the embedded XMPP server of a real `spade-memory run`.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from spade_memory.protocol.errors import ItemNotFound
from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import condition_of, send_raw, start_client, unique_jid

from .conftest import NewService

PASSWORD = {PASSWORD_ENV: "beads-e2e-secret"}
FAST = ("--beads-debounce", "0.2")


def issues(data_dir: Path) -> list[dict[str, object]]:
    path = data_dir / "beads" / ".beads" / "issues.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


async def eventually(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the condition did not hold in time")
        await asyncio.sleep(0.1)


@pytest.fixture
def service(tmp_path: Path, new_service: NewService) -> Iterator[MemoryServiceProcess]:
    process = new_service(tmp_path / "data", *FAST, "--session", "s-1", env=PASSWORD)
    process.start()
    yield process
    process.stop()


async def test_two_agents_in_one_session_keep_their_own_linked_deleted_restored(
    service: MemoryServiceProcess, tmp_path: Path
) -> None:
    alice_jid, bob_jid = unique_jid("alice"), unique_jid("bob")
    alice = await start_client(alice_jid, service.port)
    bob = await start_client(bob_jid, service.port)
    try:
        decision = await alice.memory.beads.store_memory(
            "Use SQLite with WAL for the store", "decision", importance=9, tags=["storage"]
        )
        assert decision is not None and decision.session == "s-1"  # the current session
        draft = await alice.memory.beads.store_memory("First draft of the schema", "artifact")
        finding = await alice.memory.beads.store_memory(
            "WAL needs busy_timeout under load", "learning", metadata={"bench": "load-16"}
        )
        bobs_note = await bob.memory.beads.store_memory("Bob keeps his own notes", "context")
        assert draft is not None and finding is not None and bobs_note is not None
        assert bobs_note.session == "s-1"  # the same session as alice's
        with pytest.raises(ItemNotFound):  # alice's decision is not bob's to link to
            await bob.memory.beads.link_memories(bobs_note.id, decision.id, "blocks")
        assert await alice.memory.beads.link_memories(finding.id, decision.id, "blocks")
        assert await alice.memory.beads.delete_memory(draft.id, "superseded")
        base_id = await alice.memory.store_memory("fact", "The team prefers tabs", "style talk")
        await eventually(
            lambda: any(
                i.get("external_ref") == f"spade-memory:{base_id}" for i in issues(service.data_dir)
            )
        )
    finally:
        await stop_agent(alice)
        await stop_agent(bob)

    closed = [i for i in issues(service.data_dir) if i["id"] == draft.id]
    assert closed[0]["status"] == "closed" and "closed_at" in closed[0]  # audit trail kept
    service.stop()
    service.start()  # the sync agent and the base memory agent restarted

    alice = await start_client(alice_jid, service.port)
    try:
        restored = await alice.memory.beads.restore_session("s-1")
        assert [m.id for m in restored] == [decision.id, draft.id, finding.id]  # oldest first
        by_id = {m.id: m for m in restored}
        assert by_id[finding.id].parent == decision.id
        assert [(link.memory_id, link.relationship) for link in by_id[finding.id].links] == [
            (decision.id, "blocks")
        ]
        assert by_id[finding.id].agent == alice_jid and by_id[finding.id].metadata == {
            "bench": "load-16"
        }
        assert by_id[decision.id].importance == 9 and by_id[decision.id].tags == ["storage"]
        assert by_id[draft.id].status == "closed"
        with pytest.raises(ItemNotFound):  # the same session, but bob's memories stay his
            await alice.memory.beads.retrieve_memories(session="s-1", agent=bob_jid)
        assert (
            await alice.memory.beads.retrieve_memories(session="s-1", memory_type="artifact") == []
        )
        mine = await alice.memory.beads.retrieve_memories(tags=["storage"])  # the current session
        assert [m.id for m in mine] == [decision.id]
        context = await alice.memory.beads.get_session_context("s-1")
        assert context is not None
        assert context.active_agents == sorted([alice_jid, bob_jid])
        assert {i.id for i in context.open_issues} == {decision.id, finding.id}
        assert decision.id in {i.id for i in context.ready_work}
        assert finding.id not in {i.id for i in context.ready_work}  # blocked by the decision
        mirrored = [
            i
            for i in issues(service.data_dir)
            if i.get("external_ref") == f"spade-memory:{base_id}"
        ]
        assert len(mirrored) == 1 and "category:fact" in mirrored[0]["labels"]  # type: ignore[operator]
    finally:
        await stop_agent(alice)


async def test_each_change_through_any_agent_is_mirrored_once(
    service: MemoryServiceProcess,
) -> None:
    """Writes spread over the base memory agents (two on PostgreSQL) reach the one
    mirror once each: one issue per memory, with its last text, closed when deleted."""

    def mirrored() -> dict[str, list[dict[str, object]]]:
        found: dict[str, list[dict[str, object]]] = {}
        for issue in issues(service.data_dir):
            found.setdefault(str(issue.get("external_ref")), []).append(issue)
        return found

    writer = await start_client(unique_jid("writer"), service.port)
    try:
        ids = [await writer.memory.store_memory("fact", f"mirrored fact {n}") for n in range(6)]
        refs = [f"spade-memory:{memory_id}" for memory_id in ids]
        await eventually(lambda: all(ref in mirrored() for ref in refs))
        assert await writer.memory.update_memory(ids[0], content="mirrored fact 0, revised")
        assert await writer.memory.delete_memory(ids[1])
    finally:
        await stop_agent(writer)

    def caught_up() -> bool:
        now = mirrored()
        return (
            now[refs[0]][-1]["description"] == "mirrored fact 0, revised"
            and now[refs[1]][-1]["status"] == "closed"
        )

    await eventually(caught_up)
    await asyncio.sleep(1.0)  # a second copy would be written by now (debounce 0.2 s)
    now = mirrored()
    assert [len(now[ref]) for ref in refs] == [1] * len(refs)


async def test_other_agents_cannot_touch_what_is_not_theirs(
    service: MemoryServiceProcess,
) -> None:
    alice = await start_client(unique_jid("alice"), service.port)
    mallory = await start_client(unique_jid("mallory"), service.port)
    beads_jid = "beads-sync@localhost"
    try:
        secret = await alice.memory.beads.store_memory("the launch code", session="private-s")
        assert secret is not None
        with pytest.raises(ItemNotFound):  # "not yours" is "no such memory": no oracle
            await mallory.memory.beads.delete_memory(secret.id)
        with pytest.raises(ItemNotFound):
            await mallory.memory.beads.mark_memory_accessed(secret.id)
        with pytest.raises(ItemNotFound):  # a session not shared with it: not there
            await mallory.memory.beads.restore_session("private-s")
        assert await mallory.memory.beads.search_memories("launch code") == []
        with pytest.raises(ItemNotFound):  # nor are alice's memories, in any session
            await mallory.memory.beads.retrieve_memories(
                agent=str(alice.jid.bare), all_sessions=True
            )
        own = await mallory.memory.beads.store_memory("mine", session="other-s")
        assert own is not None
        with pytest.raises(ItemNotFound):
            await mallory.memory.beads.link_memories(own.id, secret.id)
        spoof = json.dumps({"op": "store_memory", "content": "x", "agent": str(alice.jid)})
        assert await condition_of(mallory.memory, beads_jid, spoof) == "not-authorized"
        reserved = json.dumps({"op": "store_memory", "content": "x", "tags": ["agent:someone"]})
        assert await condition_of(mallory.memory, beads_jid, reserved) == "bad-request"
        forged = json.dumps(
            {"op": "store_memory", "content": "x", "metadata": {"spade_memory": {}}}
        )
        assert await condition_of(mallory.memory, beads_jid, forged) == "bad-request"
        assert await condition_of(mallory.memory, beads_jid, "{not json") == "bad-request"
        assert (
            await condition_of(mallory.memory, "base-memory@localhost", '{"op":"changes_since"}')
            == "not-authorized"
        )
        found = await alice.memory.beads.search_memories("launch code")
        assert [m.id for m in found] == [secret.id]
        accessed = await alice.memory.beads.mark_memory_accessed(secret.id)
        assert accessed is not None and accessed.access_count == 1
    finally:
        await stop_agent(alice)
        await stop_agent(mallory)


async def test_into_a_given_project_committed_to_git(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "--quiet"], cwd=project, check=True)
    (project / ".beads").mkdir()
    (project / ".beads" / "config.yaml").write_text("issue-prefix: proj\n")
    process = MemoryServiceProcess(
        tmp_path / "data", *FAST, "--beads-project", str(project), "--beads-git-commit",
        env=PASSWORD,
    )  # fmt: skip
    process.start()
    alice = await start_client(unique_jid("alice"), process.port)
    try:
        stored = await alice.memory.beads.store_memory("Ship on Fridays? Never.", "decision")
        assert stored is not None and stored.id.startswith("proj-")

        def committed() -> str:
            return subprocess.run(
                ["git", "log", "--format=%s", "--", ".beads/issues.jsonl"],
                cwd=project, capture_output=True, text=True,
            ).stdout  # fmt: skip

        await eventually(lambda: "spade-memory" in committed())
        shown = subprocess.run(
            ["git", "show", "HEAD:.beads/issues.jsonl"], cwd=project, capture_output=True, text=True
        )
        assert stored.id in shown.stdout
        assert not (tmp_path / "data" / "beads").exists()
    finally:
        await stop_agent(alice)
        process.stop()


async def test_a_store_retried_after_a_restart_of_the_agent_is_applied_once(
    service: MemoryServiceProcess,
) -> None:
    """The request id is recorded in the issue itself, not only in the agent's memory."""
    jid = unique_jid("retrier")
    body = json.dumps({"op": "store_memory", "content": "Retried across a restart"})
    request_id = uuid.uuid4().hex
    replies = []
    for restart in (False, True):
        if restart:
            service.stop()
            service.start()
        agent = await start_client(jid, service.port)
        try:
            reply = await send_raw(agent.memory, "beads-sync@localhost", body, thread=request_id)
            replies.append(json.loads(reply.body))
        finally:
            await stop_agent(agent)
    assert replies[0] == replies[1] and replies[0]["session"] == "s-1"
    stored = [
        i for i in issues(service.data_dir) if i.get("description") == "Retried across a restart"
    ]
    assert [i["id"] for i in stored] == [replies[0]["id"]]

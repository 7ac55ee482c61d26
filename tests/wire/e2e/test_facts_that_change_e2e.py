"""Facts that change end to end: agents in this process, a real ``spade-memory run``
(embedded XMPP server, the beads mirror on a local JSONL file) in another. Two agents
share a space, one fact replaces another, a writer's conflicting store is reported and an
admin resolves it; an LLM agent's tool calls do the same through its tools."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from spade_memory import ChatUser, MemoryLLMAgent, Reply, ScriptedProvider, ToolCall
from spade_memory.llm.providers import Prompt, last_tool_result
from spade_memory.protocol.errors import ItemNotFound, NotAuthorized
from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import start, start_client, unique_jid

from .conftest import NewService
from .test_memory_details_e2e import eventually, mirrored


@pytest.fixture
def service(tmp_path: Path, new_service: NewService) -> Iterator[MemoryServiceProcess]:
    process = new_service(
        tmp_path / "data", "--beads-debounce", "0.2", "--no-dense-search",
        env={PASSWORD_ENV: "facts-e2e-secret"},
    )  # fmt: skip
    process.start()
    yield process
    process.stop()


async def test_two_agents_share_a_fact_that_changes(service: MemoryServiceProcess) -> None:
    alice = await start_client(unique_jid("alice"), service.port)
    bob = await start_client(unique_jid("bob"), service.port)
    team = f"team-{uuid.uuid4().hex[:8]}"
    try:
        await alice.memory.create_space(team)
        await alice.memory.grant(team, str(bob.jid.bare), "writer")
        tea = await alice.memory.store("preference", "The user prefers tea.", space=team)
        before = datetime.now(timezone.utc)
        coffee = await alice.memory.store("preference", "The user now prefers coffee.", space=team)
        assert tea is not None and coffee is not None and coffee.supersedes == tea.id
        now = await bob.memory.search_memories("user prefers", space=team)
        assert [m.content for m in now] == ["The user now prefers coffee."]
        then = await bob.memory.search_memories("user prefers", space=team, as_of=before)
        assert [m.id for m in then] == [tea.id]
        with pytest.raises(ItemNotFound, match=f"superseded by '{coffee.id}'"):
            await bob.memory.get_memory(tea.id, space=team)

        port = await alice.memory.store("fact", "The staging API lives on port 8443.", space=team)
        moved = await bob.memory.store("fact", "The staging API lives on port 9443.", space=team)
        assert port is not None and moved is not None
        assert moved.supersedes is None and [c.id for c in moved.conflicts] == [port.id]
        with pytest.raises(NotAuthorized):
            await bob.memory.supersede_memory(port.id, "on 9443", space=team)
        done = await alice.memory.supersede_memory(port.id, space=team, by=moved.id)
        assert done is not None and done.supersedes == port.id
        history = await bob.memory.memory_history(port.id, space=team)
        assert history is not None and history.superseded_by == [moved.id]

        def closed() -> bool:
            issue = mirrored(service.data_dir, tea.id)
            return issue is not None and issue["status"] == "closed"

        await eventually(closed)
        issue, successor = mirrored(service.data_dir, tea.id), mirrored(service.data_dir, coffee.id)
        assert issue is not None and successor is not None
        assert issue["close_reason"] == f"superseded by {successor['id']}"
        assert {(d["depends_on_id"], d["type"]) for d in issue["dependencies"]} == {
            (successor["id"], "supersedes")
        }
    finally:
        await stop_agent(bob)
        await stop_agent(alice)


def _resolve_the_conflict(prompt: Prompt) -> dict[str, str]:
    """What a model would call after a reported conflict: the older memory superseded by
    the one just stored."""
    said = last_tool_result(prompt)
    stored = re.search(r"\(id ([0-9a-f-]{36})\)", said)
    older = re.search(r"Possible conflict: memory ([0-9a-f-]{36})", said)
    assert stored is not None and older is not None, said
    return {"id": older.group(1), "by": stored.group(1)}


def _undo_the_supersede(prompt: Prompt) -> dict[str, str]:
    """What a model would call once told the supersede was wrong: the older memory
    restored, by the id the (last) supersede's sentence named."""
    said = "\n".join(str(m["content"]) for m in prompt if m["role"] == "tool")
    return {"id": re.findall(r"now replaces memory (\S+),", said)[-1]}


async def test_an_llm_agent_supersedes_through_its_tools(service: MemoryServiceProcess) -> None:
    provider = ScriptedProvider(
        [
            ToolCall("store_memory", {"category": "fact", "content": "Staging is on port 8443"}),
            ToolCall("store_memory", {"category": "fact", "content": "Staging is on port 9443"}),
            ToolCall("search_memories", {"query": "staging port"}),
            ToolCall("search_memories", {"query": "staging port", "as_of": "2000-01-01T00:00Z"}),
            ToolCall("store_memory", {"category": "fact", "content": "They live in Paris."}),
            ToolCall("store_memory", {"category": "fact", "content": "They live in Rome."}),
            ToolCall("supersede_memory", _resolve_the_conflict),
            ToolCall("search_memories", {"query": "live"}),
            ToolCall("restore_memory", _undo_the_supersede),
            ToolCall("search_memories", {"query": "live"}),
            Reply("Done."),
        ]
    )
    assistant = MemoryLLMAgent(
        unique_jid("assistant"), "assistant-secret", provider, port=service.port,
        agent_base_memory=True, interaction_memory=False, extended_tools=True,
    )  # fmt: skip
    await start(assistant)
    user = ChatUser(unique_jid("user"), "user-secret", port=service.port)
    await start(user)
    try:
        said = await user.ask(str(assistant.jid.bare), "Remember where things are.", "c-1")
        assert said == "Done."
        results = [str(m["content"]) for m in provider.prompts[-1] if m["role"] == "tool"]
        first, second, now, then, _paris, rome, replaced, live, restored, both = results
        old_id = re.search(r"id ([0-9a-f-]{36})", first).group(1)  # type: ignore[union-attr]
        assert f"It replaces memory {old_id}, which is no longer current." in second
        assert "port 9443" in now and "port 8443" not in now
        assert "port 8443" in then and "port 9443" not in then
        assert "Possible conflict" in rome and "supersede_memory" in rome
        assert re.fullmatch(r"Memory \S+ now replaces memory \S+, which is no longer current\.",
                            replaced)  # fmt: skip
        assert "Rome" in live and "Paris" not in live
        assert re.match(r"Memory \S+ is current again \(", restored) and "Paris" in restored
        assert "Rome" in both and "Paris" in both  # the wrong supersede undone
    finally:
        await stop_agent(user)
        await stop_agent(assistant)

"""The entity graph end to end: agents in this process, a real ``spade-memory run``
(embedded XMPP server) in another. A space's reader reads its entities, the memories
about one and those related to one; a search that needs two memories follows the graph;
a stranger learns no entity of the space; an LLM agent reads the graph through its tools;
an agent run with ``--no-entity-graph`` says over the wire that it keeps none.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from spade_memory import ChatUser, MemoryLLMAgent, Reply, ScriptedProvider, ToolCall
from spade_memory.protocol.errors import FeatureNotImplemented, ItemNotFound
from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import start, start_client, unique_jid

from .conftest import NewService

TEAM_NOTES = (
    "Melanie signed up for a pottery class yesterday.",
    "The pottery studio sells clay bowls.",
    "Caroline painted a sunset at the beach.",
    "The weekend at the beach was quiet.",
)


@pytest.fixture
def service(tmp_path: Path, new_service: NewService) -> Iterator[MemoryServiceProcess]:
    process = new_service(
        tmp_path / "data", "--no-dense-search", env={PASSWORD_ENV: "graph-e2e-secret"}
    )
    process.start()
    yield process
    process.stop()


async def test_a_reader_follows_a_space_s_graph_and_a_stranger_learns_nothing(
    service: MemoryServiceProcess,
) -> None:
    alice = await start_client(unique_jid("alice"), service.port)
    bob = await start_client(unique_jid("bob"), service.port)
    mallory = await start_client(unique_jid("mallory"), service.port)
    team = f"team-{uuid.uuid4().hex[:8]}"
    try:
        await alice.memory.create_space(team)
        await alice.memory.grant(team, str(bob.jid.bare), "reader")
        ids = []
        for note in TEAM_NOTES:
            stored = await alice.memory.store("fact", note, space=team)
            assert stored is not None
            ids.append(stored.id)

        entities = await bob.memory.entities(space=team)
        assert entities is not None
        named = {entity.key: entity for entity in entities}
        assert named["pottery"].memories == 2 and named["beach"].memories == 2
        assert {"melanie", "caroline"} <= set(named)
        assert [e.key for e in await bob.memory.entities("POT", space=team) or []] == ["pottery"]
        about = await bob.memory.memories_about("pottery", space=team)
        assert {memory.id for memory in about} == {ids[0], ids[1]}
        related = await bob.memory.related_memories(ids[2], space=team)
        assert [memory.id for memory in related] == [ids[3]]

        found = await bob.memory.search_memories(
            "What activities has Melanie signed up for?", space=team
        )
        assert found.reasoning is not None and "pottery" in found.reasoning.expanded
        assert ids[1] in [memory.id for memory in found]  # no word of the question in it

        for attempt in (
            mallory.memory.entities(space=team),
            mallory.memory.memories_about("pottery", space=team),
            mallory.memory.related_memories(ids[0], space=team),
        ):
            with pytest.raises(ItemNotFound, match="no space"):  # as if there were none
                await attempt
        own = await mallory.memory.entities(space="*")  # every space mallory reads: its own
        assert own == []
    finally:
        for agent in (mallory, bob, alice):
            await stop_agent(agent)


async def test_an_llm_agent_reads_the_graph_through_its_tools(
    service: MemoryServiceProcess,
) -> None:
    provider = ScriptedProvider(
        [
            *(ToolCall("store_memory", {"category": "fact", "content": n}) for n in TEAM_NOTES),
            ToolCall("memories_about", {"entity": "Pottery"}),
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
        said = await user.ask(str(assistant.jid.bare), "What do you know about pottery?", "c-1")
        assert said == "Done."
        about = [str(m["content"]) for m in provider.prompts[-1] if m["role"] == "tool"][-1]
        assert about.startswith("What I remember about Pottery (2; information from the memory")
        assert re.search(r"pottery class", about) and "clay bowls" in about
        assert "sunset" not in about
    finally:
        await stop_agent(user)
        await stop_agent(assistant)


async def test_an_agent_without_the_graph_says_so_over_the_wire(
    tmp_path: Path, new_service: NewService
) -> None:
    plain = new_service(
        tmp_path / "plain", "--no-dense-search", "--no-entity-graph",
        env={PASSWORD_ENV: "graph-e2e-secret"},
    )  # fmt: skip
    plain.start()
    alice = await start_client(unique_jid("alice"), plain.port)
    try:
        for note in TEAM_NOTES:
            assert await alice.memory.store("fact", note) is not None
        with pytest.raises(FeatureNotImplemented, match="without the entity graph"):
            await alice.memory.entities()
        found = await alice.memory.search_memories("What activities has Melanie signed up for?")
        assert found.reasoning is not None and found.reasoning.expansion is None
        assert len(found) > 0  # search itself serves as before
    finally:
        await stop_agent(alice)
        plain.stop()

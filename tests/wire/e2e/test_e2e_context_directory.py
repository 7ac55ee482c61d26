"""The context directory through the interaction memory agent, in its own process, over XMPP."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_memory import ItemNotFound
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import ClientAgent, condition_of, start_client, unique_jid

from .conftest import NewService


async def test_an_ended_conversation_is_found_after_a_restart(
    tmp_path: Path, new_service: NewService
) -> None:
    service = new_service(tmp_path)
    service.start()
    jid = unique_jid("archivist")
    try:
        agent = await start_client(jid, service.port)
        await agent.memory.add_information("support-42", "customer wants invoices as PDF")
        await agent.memory.add_information("support-42", "customer is based in Valencia")
        entry = await agent.memory.end_conversation("support-42", tags=["billing"], clear=True)
        assert entry is not None and entry.path.startswith("conversations/")
        assert await agent.memory.get_information("support-42") == []
        await stop_agent(agent)
        service.kill()

        service.start()
        agent = await start_client(jid, service.port)
        found = await agent.memory.search_context("invoice PDF")
        assert [e.title for e in found] == ["support-42"]
        assert "Previous interactions:\n- customer wants invoices as PDF" in found[0].text
        assert await agent.memory.search_context("Valencia", type="knowledge") == []
        await stop_agent(agent)
    finally:
        service.stop()


async def test_a_hostile_id_stays_inside_the_directory(
    alice: ClientAgent, memory_service: MemoryServiceProcess
) -> None:
    await alice.memory.add_information("../../etc/passwd", "not a password file")
    entry = await alice.memory.end_conversation("../../etc/passwd")
    assert entry is not None
    context = (memory_service.data_dir / "context").resolve()
    written = [p for p in context.rglob("*") if p.is_file() and "passwd" in p.name]
    assert len(written) == 1 and context in written[0].parents
    folder, _, name = entry.path.partition("/")
    assert folder == "conversations" and "/" not in name and not name.startswith(".")
    assert [e.title for e in await alice.memory.search_context("password file")] == [
        "../../etc/passwd"
    ]


async def test_preferences_knowledge_and_archive_on_clear(alice: ClientAgent) -> None:
    memory = alice.memory
    assert await memory.save_preferences("ana", {"language": "es"}) == {"language": "es"}
    assert await memory.save_preferences("ana", {"tone": "brief"}) == {
        "language": "es", "tone": "brief"}  # fmt: skip
    assert await memory.get_preferences("ana") == {"language": "es", "tone": "brief"}
    await memory.save_knowledge("refunds", "Refunds are accepted within 30 days", ["policy"])
    assert [e.type for e in await memory.search_context("refunds accepted")] == ["knowledge"]

    await memory.add_information("to-archive", "archived on clear")
    assert await memory.clear_conversation("to-archive", archive=True) is True
    assert [e.title for e in await memory.search_context("archived clear")] == ["to-archive"]


async def test_bad_context_input(alice: ClientAgent) -> None:
    with pytest.raises(ItemNotFound):
        await alice.memory.end_conversation("never-talked")
    memory = alice.memory
    for body in (
        '{"op": "search_context", "query": "x", "type": "secrets"}',
        '{"op": "save_knowledge", "name": "n", "content": ""}',
        '{"op": "save_preferences", "user": "ana", "preferences": ["not", "a", "map"]}',
        '{"op": "end_conversation", "conversation_id": "c", "tags": "billing"}',
    ):
        condition = await condition_of(memory, memory.interaction_memory_jid, body)
        assert condition == "bad-request", body

"""The base memory agent and its clients in separate OS processes, over real XMPP."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from spade_memory import (
    BadRequest,
    ItemNotFound,
    Memory,
    MemoryClient,
    MemoryTimeout,
    NotAuthorized,
    ResourceConstraint,
    StoreMemory,
)
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from spade_memory.xmpp.wire import ONTOLOGY, request_message
from tests.support.harness import ClientAgent, send_raw, start_client, unique_jid

from .conftest import NewService


async def snapshot(client: MemoryClient) -> list[Memory]:
    """Everything the client owns, without counting it as an access."""
    return sorted(
        (m.model_copy(update={"last_accessed": None, "access_count": 0})
         for m in await client.get_recent_memories(limit=1000)),
        key=lambda m: m.id,
    )  # fmt: skip


async def test_store_search_list_update_delete_stats(alice: ClientAgent) -> None:
    memory = alice.memory
    api = await memory.store_memory("fact", "API endpoint requires authentication header")
    tea = await memory.store_memory("preference", "likes green tea", context="kitchen chat")
    assert api and tea

    found = await memory.search_memories("API authentication")
    assert [m.id for m in found] == [api]
    assert found.degraded is False

    prefs = await memory.get_memories_by_category("preference")
    assert [m.content for m in prefs] == ["likes green tea"]

    updated = await memory.update_memory(tea, content="likes oolong tea", confidence=0.6)
    assert updated is not None
    assert (updated.content, updated.confidence, updated.context) == (
        "likes oolong tea", 0.6, "kitchen chat")  # fmt: skip
    assert [m.id for m in await memory.search_memories("oolong")] == [tea]

    assert await memory.delete_memory(api) is True
    assert await memory.delete_memory(api) is False
    assert await memory.search_memories("authentication") == []

    stats = await memory.get_memory_stats()
    assert stats is not None
    assert (stats.total_memories, stats.category_counts) == (1, {"preference": 1})
    assert stats.avg_confidence == pytest.approx(0.6)


BAD_REQUESTS = [
    ("malformed JSON", '{"op": "store_memory", "category": ', BadRequest),
    ("not an object", "[1, 2, 3]", BadRequest),
    ("unknown op", '{"op": "drop_everything"}', BadRequest),
    ("wrong type", '{"op": "store_memory", "category": "fact", "content": 42}', BadRequest),
    ("bad category", '{"op": "store_memory", "category": "gossip", "content": "x"}', BadRequest),
    ("missing field", '{"op": "store_memory", "category": "fact"}', BadRequest),
    ("unknown field", '{"op": "memory_stats", "sudo": true}', BadRequest),
    ("confidence > 1", '{"op": "store_memory", "category": "fact", "content": "x",'
     ' "confidence": 7}', BadRequest),
    ("oversized content", json.dumps(
        {"op": "store_memory", "category": "fact", "content": "x" * 20_000}), ResourceConstraint),
    ("oversized body", json.dumps(
        {"op": "store_memory", "category": "fact", "content": "y" * 300_000}), ResourceConstraint),
    ("limit too large", '{"op": "search_memories", "query": "x", "limit": 100000}',
     ResourceConstraint),
    ("unknown id", '{"op": "get_memory", "id": "no-such-id"}', ItemNotFound),
    ("another owner", '{"op": "recent_memories", "owner": "victim@localhost"}', NotAuthorized),
    ("another agent_id", '{"op": "store_memory", "category": "fact", "content": "x",'
     ' "agent_id": "victim@localhost"}', NotAuthorized),
    ("malformed owner", '{"op": "memory_stats", "owner": "@@@"}', NotAuthorized),
]  # fmt: skip


async def test_bad_input_gets_typed_failures_and_changes_nothing(alice: ClientAgent) -> None:
    memory = alice.memory
    await memory.store_memory("fact", "the original memory")
    before = await snapshot(memory)
    for label, body, expected in BAD_REQUESTS:
        reply = await send_raw(memory, memory.base_memory_jid, body)
        expected_performative = "refuse" if expected is NotAuthorized else "failure"
        assert reply.get_metadata("performative") == expected_performative, label
        assert json.loads(reply.body)["condition"] == expected.condition.value, label
        assert reply.get_metadata("ontology") == ONTOLOGY
    assert await snapshot(memory) == before
    assert [m.content for m in await memory.search_memories("original")] == ["the original memory"]


async def test_failures_reach_the_caller_as_typed_exceptions(alice: ClientAgent) -> None:
    with pytest.raises(ItemNotFound):
        await alice.memory.get_memory("no-such-id")
    with pytest.raises(ResourceConstraint):
        await alice.memory.search_memories("x", limit=10**6)
    with pytest.raises(NotAuthorized):
        await alice.memory.request(
            alice.memory.base_memory_jid,
            StoreMemory(category="fact", content="x", owner="someone@localhost"),
        )


async def test_hostile_search_queries_are_plain_text(alice: ClientAgent) -> None:
    await alice.memory.store_memory("fact", "unbalanced ledger found")
    for query in ['"unbalanced', "AND OR NOT", "*", "'; DROP TABLE memories; --", "NEAR("]:
        assert isinstance(await alice.memory.search_memories(query), list)
    assert len(await alice.memory.search_memories("ledger")) == 1


async def test_one_client_cannot_see_or_touch_anothers_memories(
    alice: ClientAgent, bob: ClientAgent
) -> None:
    secret = await alice.memory.store_memory("fact", "alice keeps the key under the mat")
    assert secret is not None
    assert await bob.memory.search_memories("key mat") == []
    assert await bob.memory.get_recent_memories() == []
    with pytest.raises(ItemNotFound):
        await bob.memory.get_memory(secret)
    with pytest.raises(ItemNotFound):
        await bob.memory.update_memory(secret, content="bob was here")
    assert await bob.memory.delete_memory(secret) is False
    bob_stats = await bob.memory.get_memory_stats()
    assert bob_stats is not None and bob_stats.total_memories == 0
    mine = await alice.memory.get_memory(secret)
    assert mine is not None and mine.content == "alice keeps the key under the mat"


async def test_a_retried_request_id_does_not_store_twice(alice: ClientAgent) -> None:
    memory = alice.memory
    request = request_message(
        memory.base_memory_jid, StoreMemory(category="fact", content="stored once"), "retry-1"
    )
    first = await memory.transport.round_trip(request)
    second = await memory.transport.round_trip(request)
    assert first is not None and second is not None
    assert first.body == second.body
    assert [m.content for m in await memory.search_memories("stored once")] == ["stored once"]


async def test_acknowledged_memories_and_notes_survive_a_killed_agent(
    tmp_path: Path, new_service: NewService
) -> None:
    process = new_service(tmp_path)
    process.start()
    jid = unique_jid("durable")
    try:
        agent = await start_client(jid, process.port)
        ids = [await agent.memory.store_memory("fact", f"durable fact {n}") for n in range(50)]
        notes = [f"durable note {n}" for n in range(20)]
        for note in notes:
            await agent.memory.add_information("kept", note)
        await stop_agent(agent)
        process.kill()  # SIGKILL: no clean shutdown

        process.start()
        agent = await start_client(jid, process.port)
        after = await agent.memory.get_recent_memories(limit=100)
        assert sorted(m.id for m in after) == sorted(i for i in ids if i)
        assert len(after) == 50
        assert await agent.memory.get_information("kept") == notes
        await stop_agent(agent)
    finally:
        process.stop()


async def test_many_requests_in_flight_from_one_agent(alice: ClientAgent) -> None:
    contents = [f"parallel thought {n}" for n in range(40)]
    ids = await asyncio.gather(*(alice.memory.store_memory("fact", c) for c in contents))
    assert len(set(ids)) == 40
    found = await asyncio.gather(*(alice.memory.search_memories(c, limit=1) for c in contents))
    assert [hits[0].content for hits in found] == contents


async def test_unanswered_calls_time_out_after_one_retry_or_degrade(
    memory_service: MemoryServiceProcess,
) -> None:
    agent = await start_client(
        unique_jid("lonely"), memory_service.port, memory_jid="nobody@localhost", memory_timeout=0.4
    )
    try:
        started = time.monotonic()
        with pytest.raises(MemoryTimeout):
            await agent.memory.search_memories("anything")
        assert 0.8 <= time.monotonic() - started < 5  # two waits of 0.4 s: sent twice

        degraded = MemoryClient(agent, "nobody@localhost", timeout=0.2, degraded=True)
        found = await degraded.search_memories("anything")
        assert found == [] and found.degraded is True
        assert await degraded.store_memory("fact", "lost in the void") is None
        assert await degraded.get_memory_stats() is None
    finally:
        await stop_agent(agent)

"""Configurable limits (answered ``resource-constraint``) and batch requests,
against a memory service started with small limits in its own process."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from spade_memory import (
    ItemNotFound,
    MemoryClient,
    MemoryList,
    ResourceConstraint,
    SearchMemories,
    Stored,
    StoreMemory,
)
from spade_memory.protocol.memories import GetMemory
from spade_memory.protocol.notes import AddInformation, GetInformation, Notes
from spade_memory.protocol.working_memory import Finding
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import ClientAgent, condition_of, send_raw, start_client, unique_jid

LIMITS = ("--max-in-flight", "2", "--max-batch-ops", "5", "--max-content-chars", "200",
          "--max-results", "20", "--max-body-bytes", "20000",
          "--max-answer-bytes", "4000")  # fmt: skip


@pytest.fixture(scope="module")
def small_limits(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServiceProcess]:
    service = MemoryServiceProcess(
        tmp_path_factory.mktemp("small-limits"), "--services", "base-memory,interaction-memory",
        *LIMITS,
    )  # fmt: skip
    service.start()
    yield service
    service.stop()


@pytest.fixture
async def carol(small_limits: MemoryServiceProcess) -> AsyncIterator[ClientAgent]:
    agent = await start_client(unique_jid("carol"), small_limits.port)
    yield agent
    await stop_agent(agent)


async def test_each_limit_is_configurable_and_answered_resource_constraint(
    carol: ClientAgent,
) -> None:
    base = carol.memory.base_memory_jid
    long = json.dumps({"op": "store_memory", "category": "fact", "content": "x" * 201})
    assert await condition_of(carol.memory, base, long) == "resource-constraint"
    many = json.dumps({"op": "recent_memories", "limit": 21})
    assert await condition_of(carol.memory, base, many) == "resource-constraint"
    huge = json.dumps({"op": "recent_memories", "pad": "y" * 20001})
    assert await condition_of(carol.memory, base, huge) == "resource-constraint"
    stores = [{"op": "store_memory", "category": "fact", "content": f"n{i}"} for i in range(6)]
    too_big = json.dumps({"op": "batch", "ops": stores})
    assert await condition_of(carol.memory, base, too_big) == "resource-constraint"
    stats = await carol.memory.get_memory_stats()
    assert stats is not None and stats.total_memories == 0  # nothing of the refused batch


async def test_a_batch_applies_its_ops_in_order_each_failing_alone(carol: ClientAgent) -> None:
    base = carol.memory.base_memory_jid
    outcomes = await carol.memory.batch(
        base,
        [
            StoreMemory(category="fact", content="The deploy key rotates monthly"),
            StoreMemory(category="fact", content="x" * 201),
            GetMemory(id="no-such-memory"),
            StoreMemory(category="preference", content="Reports as PDF"),
            SearchMemories(query="deploy key"),
        ],
    )
    first, too_long, missing, second, found = outcomes
    assert isinstance(first, Stored) and isinstance(second, Stored)
    assert isinstance(too_long, ResourceConstraint)
    assert isinstance(missing, ItemNotFound)
    assert isinstance(found, MemoryList)
    assert [m.id for m in found.memories] == [first.id]  # the store before it is visible

    notes = await carol.memory.batch(
        carol.memory.interaction_memory_jid,
        [
            AddInformation(conversation_id="c1", information="first"),
            AddInformation(conversation_id="c1", information="second"),
            GetInformation(conversation_id="c1"),
        ],
    )
    assert isinstance(notes[2], Notes) and notes[2].notes == ["first", "second"]


async def test_a_batch_sent_twice_with_one_request_id_is_applied_once(carol: ClientAgent) -> None:
    base = carol.memory.base_memory_jid
    ops = [{"op": "store_memory", "category": "fact", "content": f"batched fact {i}"}
           for i in range(5)]  # fmt: skip
    body = json.dumps({"op": "batch", "ops": [*ops[:2], {"op": "nope"}, *ops[2:4]]})
    request_id = uuid.uuid4().hex
    replies = []
    for _ in range(2):
        reply = await send_raw(carol.memory, base, body, thread=request_id)
        replies.append(json.loads(reply.body))
    assert replies[0] == replies[1]
    conditions = [item.get("condition") for item in replies[0]["results"]]
    assert conditions == [None, None, "bad-request", None, None]
    stats = await carol.memory.get_memory_stats()
    assert stats is not None and stats.total_memories == 4


async def test_requests_in_flight_over_the_limit_are_refused_and_the_rest_served(
    carol: ClientAgent,
) -> None:
    base = carol.memory.base_memory_jid

    async def raw_store(n: int) -> dict[str, str]:
        body = json.dumps({"op": "store_memory", "category": "fact", "content": f"burst {n}"})
        reply = await send_raw(carol.memory, base, body)  # past the client's own limiter
        return dict(json.loads(reply.body))

    replies = await asyncio.gather(*(raw_store(n) for n in range(30)))
    refused = [r for r in replies if r.get("condition") == "resource-constraint"]
    stored = [r for r in replies if "id" in r]
    assert refused and stored and len(refused) + len(stored) == 30
    assert "in flight" in refused[0]["text"]
    stats = await carol.memory.get_memory_stats()
    assert stats is not None and stats.total_memories == len(stored)
    # A client limited like the agent waits instead of being refused.
    polite = MemoryClient(carol, max_in_flight=2)
    calls = [polite.store_memory("fact", f"polite {n}") for n in range(30)]
    assert len(set(await asyncio.gather(*calls))) == 30


async def test_a_batch_claiming_another_owner_is_refused(carol: ClientAgent) -> None:
    body = json.dumps(
        {"op": "batch", "owner": "victim@localhost", "ops": [{"op": "recent_memories"}]}
    )
    assert await condition_of(carol.memory, carol.memory.base_memory_jid, body) == "not-authorized"
    inner = json.dumps({"op": "batch", "ops": [{"op": "recent_memories", "owner": "v@localhost"}]})
    reply = await send_raw(carol.memory, carol.memory.base_memory_jid, inner)
    assert json.loads(reply.body)["results"][0]["condition"] == "not-authorized"


async def test_a_long_conversation_comes_in_pages_and_a_session_stops_at_one_answer(
    carol: ClientAgent,
) -> None:
    """``--max-answer-bytes 4000``: a conversation of 30 notes of 190 characters comes in
    pages the client follows, and a working session stops growing at what one answer
    carries (each change answers its whole state), readable as it was."""
    notes = [f"{n:02} " + "n" * 187 for n in range(30)]
    for note in notes:
        await carol.memory.add_information("long", note)
    first = await carol.memory.request(
        carol.memory.interaction_memory_jid, GetInformation(conversation_id="long")
    )
    assert isinstance(first, Notes) and 0 < len(first.notes) < 30 and first.next_offset
    assert await carol.memory.get_information("long") == notes  # every page, in order

    session = carol.memory.session("grown")
    added = 0
    with pytest.raises(ResourceConstraint, match="--max-answer-bytes"):
        for added in range(1, 20):
            finding = Finding(type="note", title=f"{added}", description="d" * 900)
            await session.add_finding(finding)
    assert 1 < added < 19
    state = await session.get()  # the refused change left nothing behind
    assert [f.title for f in state.working_memory.findings] == [str(n) for n in range(1, added)]

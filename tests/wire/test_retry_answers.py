"""The answers kept for retries are the writes' alone, within a byte budget (issue 47,
item 6: one owner's reads with fresh request ids grew the service from 240 to 896 MB)."""

from __future__ import annotations

import json
import uuid

from spade_memory.protocol.memories import Stored
from spade_memory.storage.answers import RecentAnswers
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import send_raw, start_client, unique_jid


def _stored(n: int) -> Stored:
    return Stored(id=f"{n:08d}", category="fact")


def test_the_budget_forgets_the_oldest_and_never_holds_more() -> None:
    size = len(_stored(0).model_dump_json())
    answers = RecentAnswers(capacity=1000, max_bytes=size * 3)
    for n in range(5):
        answers.keep("alice@localhost", f"r{n}", _stored(n))
        assert answers.bytes <= size * 3
    assert [answers.get("alice@localhost", f"r{n}") for n in range(5)] == [
        None, None, _stored(2), _stored(3), _stored(4)
    ]  # fmt: skip
    answers.keep("alice@localhost", "r4", _stored(4))  # kept again: counted once
    assert answers.bytes == size * 3 and len(answers) == 3
    answers.keep("alice@localhost", "huge", _stored(9), size=size * 4)  # over the budget
    assert answers.get("alice@localhost", "huge") is None and len(answers) == 3


def test_the_count_bound_holds_too() -> None:
    answers = RecentAnswers(capacity=2)
    for n in range(3):
        answers.keep("bob@localhost", f"r{n}", _stored(n))
    assert len(answers) == 2 and answers.get("bob@localhost", "r0") is None


async def test_a_retried_read_is_served_again_and_a_retried_write_is_not(
    memory_service: MemoryServiceProcess,
) -> None:
    client = await start_client(unique_jid("retrier"), memory_service.port)
    base = client.memory.base_memory_jid
    try:
        await client.memory.store_memory("fact", "the first marmot")
        read = json.dumps({"op": "search_memories", "query": "marmot"})
        read_id = uuid.uuid4().hex
        first = json.loads((await send_raw(client.memory, base, read, thread=read_id)).body)
        await client.memory.store_memory("fact", "the second marmot")
        again = json.loads((await send_raw(client.memory, base, read, thread=read_id)).body)
        assert len(first["memories"]) == 1 and len(again["memories"]) == 2  # not the old answer

        write = json.dumps({"op": "store_memory", "category": "fact", "content": "a third marmot"})
        write_id = uuid.uuid4().hex
        stored = json.loads((await send_raw(client.memory, base, write, thread=write_id)).body)
        retried = json.loads((await send_raw(client.memory, base, write, thread=write_id)).body)
        assert retried["id"] == stored["id"]
        assert len(await client.memory.search_memories("marmot")) == 3  # applied once
    finally:
        await stop_agent(client)

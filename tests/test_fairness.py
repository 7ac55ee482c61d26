"""One sender cannot starve the others: at most ``--max-in-progress`` requests are
served at once, the rest wait with senders taken in turn, and the waiting room is
bounded (``--max-waiting``). Against a memory service in its own process."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from spade_memory.fairness import FairQueue
from spade_memory.lifecycle import stop_agent
from spade_memory.testing import MemoryServiceProcess

from .harness import send_raw, start_client, unique_jid


def test_senders_are_taken_in_turn_each_in_its_own_order() -> None:
    waiting: FairQueue[str] = FairQueue()
    for n in range(4):
        waiting.put("flood", f"f{n}")
    waiting.put("bystander", "b0")
    waiting.put("other", "o0")
    waiting.put("bystander", "b1")
    taken = [waiting.take() for _ in range(len(waiting))]
    assert taken == ["f0", "b0", "o0", "f1", "b1", "f2", "f3"]
    assert waiting.take() is None and len(waiting) == 0


@pytest.fixture(scope="module")
def one_at_a_time(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServiceProcess]:
    service = MemoryServiceProcess(
        tmp_path_factory.mktemp("one-at-a-time"), "--services", "base-memory",
        "--max-in-progress", "1", "--max-waiting", "8",
    )  # fmt: skip
    service.start()
    yield service
    service.stop()


def slow_batch(label: str, stores: int = 100) -> str:
    """A batch of stores: long enough to serve that the next requests arrive meanwhile."""
    ops = [{"op": "store_memory", "category": "fact", "content": f"{label} fact {n}"}
           for n in range(stores)]  # fmt: skip
    return json.dumps({"op": "batch", "ops": ops})


async def test_a_bystander_is_served_before_a_flooders_backlog(
    one_at_a_time: MemoryServiceProcess,
) -> None:
    flooder = await start_client(unique_jid("flooder"), one_at_a_time.port)
    bystander = await start_client(unique_jid("bystander"), one_at_a_time.port)
    base = flooder.memory.base_memory_jid
    finished: list[str] = []
    one_served = asyncio.Event()

    async def request(who: str, client_body: tuple[object, str]) -> None:
        client, body = client_body
        await send_raw(client.memory, base, body)  # type: ignore[attr-defined]
        finished.append(who)
        one_served.set()

    try:
        flood = [
            asyncio.create_task(request(f"flood {n}", (flooder, slow_batch(f"flood {n}"))))
            for n in range(8)
        ]
        # The rest of the flood is waiting once one batch is answered, whatever the
        # machine's speed (a fixed pause let a fast agent serve most of it first).
        await one_served.wait()
        search = json.dumps({"op": "search_memories", "query": "anything"})
        await request("bystander", (bystander, search))
        await asyncio.gather(*flood)
    finally:
        await stop_agent(flooder)
        await stop_agent(bystander)
    # In arrival order the bystander would come last; taken in turn, it waits for the
    # batch being served and at most one more of the flood, whatever the backlog.
    assert len(finished) - 1 - finished.index("bystander") >= 3, finished


async def test_the_waiting_room_is_bounded_and_nothing_refused_is_stored(
    one_at_a_time: MemoryServiceProcess,
) -> None:
    client = await start_client(unique_jid("crowd"), one_at_a_time.port)
    base = client.memory.base_memory_jid
    try:
        replies = await asyncio.gather(
            *(send_raw(client.memory, base, slow_batch(f"crowd {n}", 30)) for n in range(14))
        )
        bodies = [json.loads(reply.body) for reply in replies]
        refused = [body for body in bodies if "condition" in body]
        assert refused and all(body["condition"] == "resource-constraint" for body in refused)
        assert all("waiting" in body["text"] and body["retry_after"] > 0 for body in refused)
        served = len(bodies) - len(refused)
        assert served >= 8  # eight wait their turn (and more may be served meanwhile)
        stats = await client.memory.get_memory_stats()
        assert stats is not None and stats.total_memories == 30 * served
    finally:
        await stop_agent(client)

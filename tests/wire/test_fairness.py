"""One sender cannot starve the others: at most ``--max-in-progress`` requests are
served at once, the rest wait with senders taken in turn, and the waiting room is
bounded (``--max-waiting``). Against a memory service in its own process."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import send_raw, start_client, unique_jid


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


async def test_a_flood_from_many_accounts_never_turns_a_bystander_away(
    one_at_a_time: MemoryServiceProcess,
) -> None:
    """Six accounts keep five batches each in flight (the room takes 8); the bystander's
    searches, sent one at a time and never retried, are all served."""
    flooders = [await start_client(unique_jid(f"account{n}"), one_at_a_time.port) for n in range(6)]
    bystander = await start_client(unique_jid("bystander"), one_at_a_time.port)
    base = bystander.memory.base_memory_jid
    flooding = True
    refused = 0

    async def keep_sending(client: object, label: str) -> None:
        nonlocal refused
        while flooding:
            reply = await send_raw(client.memory, base, slow_batch(label, 20))  # type: ignore[attr-defined]
            refused += "retry_after" in reply.body

    tasks = [
        asyncio.create_task(keep_sending(client, f"{n}-{k}"))
        for n, client in enumerate(flooders)
        for k in range(5)
    ]
    try:
        while refused < 10:  # the room has been full, and stays so
            await asyncio.sleep(0.05)
        search = json.dumps({"op": "search_memories", "query": "anything"})
        answers = [
            json.loads((await send_raw(bystander.memory, base, search)).body) for _ in range(10)
        ]
        assert [("memories" in answer) for answer in answers] == [True] * 10, answers
    finally:
        flooding = False
        await asyncio.gather(*tasks)
        for client in (*flooders, bystander):
            await stop_agent(client)


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

"""What the end-to-end suite runs against: on PostgreSQL, two agents of each service,
each answering part of every client's calls, and no SQLite store beside them."""

from __future__ import annotations

from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp import wire
from tests.support.harness import ClientAgent, send_raw

CALLS = {
    "base-memory": '{"op": "memory_stats"}',
    "interaction-memory": '{"op": "get_all_conversations"}',
}


async def test_each_service_answers_through_every_agent_of_the_run(
    alice: ClientAgent, memory_service: MemoryServiceProcess, engine: str
) -> None:
    for service, body in CALLS.items():
        to = alice.memory.jids[service]
        answered = [wire.bare((await send_raw(alice.memory, to, body)).sender) for _ in range(4)]
        expected = 2 if engine == "postgresql" else 1
        assert len(set(answered)) == expected, (service, answered)
        assert set(answered) == set(alice.memory.transport.agents(to))
    databases = {path.name for path in memory_service.data_dir.glob("*.db")}
    if engine == "postgresql":
        assert databases.isdisjoint({"base-memory.db", "interaction-memory.db"})
    else:
        assert {"base-memory.db", "interaction-memory.db"} <= databases

"""After the XMPP server restarts, the memory agents (another process) and the
client reconnect by themselves; a call made while the server was down is sent
again on the new connection and applied once. On Prosody, restarted by the test."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from spade_memory.xmpp.reconnect import reconnector_of
from tests.support import prosody
from tests.support.harness import start_client, unique_jid

AGENTS = ("base-memory@localhost", "interaction-memory@localhost", "beads-sync@localhost")


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[tuple[prosody.ProsodyProcess, MemoryServiceProcess]]:
    """A Prosody of its own (other tests share theirs) and the memory agents on it."""
    if not prosody.installed():
        pytest.skip(prosody.MISSING)
    with prosody.serving(tmp_path) as started:
        yield started


def reconnected(service: MemoryServiceProcess, after: int) -> set[str]:
    """The memory agents that logged a reconnection since output line ``after``."""
    lines = service.output[after:]
    return {jid for jid in AGENTS if any(f"{jid} reconnected" in line for line in lines)}


async def test_agents_reconnect_and_a_call_made_during_the_outage_lands_once(
    restartable: tuple[prosody.ProsodyProcess, MemoryServiceProcess],
) -> None:
    server, service = restartable
    alice = await start_client(unique_jid("alice"), server.port, memory_timeout=3.0)
    try:
        before = await alice.memory.store_memory("fact", "stored before the restart")
        mark = len(service.output)

        server.stop()
        during = asyncio.create_task(alice.memory.store_memory("fact", "asked while down"))
        await asyncio.sleep(1.0)
        server.start()
        restarted = time.monotonic()

        stored_during = await during  # resent after the reconnection, same request id
        deadline = restarted + 60  # about 3 s on a quiet machine
        while reconnected(service, mark) != set(AGENTS) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert reconnected(service, mark) == set(AGENTS), "".join(service.output[mark:])
        assert any("lost its XMPP connection" in line for line in service.output[mark:])
        client_reconnector = reconnector_of(alice)
        assert client_reconnector is not None and client_reconnector.reconnections == 1

        after = await alice.memory.store_memory("fact", "stored after the restart")
        assert stored_during is not None and len({before, stored_during, after}) == 3
        stats = await alice.memory.get_memory_stats()
        assert stats is not None and stats.total_memories == 3  # the resent call was applied once
        recent = await alice.memory.get_recent_memories(limit=10)
        assert sorted(m.content for m in recent) == sorted(
            ["stored before the restart", "asked while down", "stored after the restart"]
        )
    finally:
        await stop_agent(alice)


async def test_a_stopped_agent_does_not_reconnect(
    restartable: tuple[prosody.ProsodyProcess, MemoryServiceProcess],
) -> None:
    server, _service = restartable
    agent = await start_client(unique_jid("leaving"), server.port)
    reconnector = reconnector_of(agent)
    assert reconnector is not None
    await stop_agent(agent)
    await asyncio.sleep(1.0)
    assert reconnector.reconnections == 0 and not agent.client.is_connected()
